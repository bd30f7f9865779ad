#!/usr/bin/env python3
"""Plots the speedups of cudagap in its benchmark reports: one panel per benchmark, one bar per
ratio, each turned into "time of the other variant / time of cudagap's" (above 1: cudagap is
faster; below 1: cudagap is slower), drawn from 1 and on a log scale when the values span more
than a factor of 20. A ratio that does not involve a cudagap variant is drawn as it is, grey.

usage: plot_results.py REPORT.json [REPORT.json...] --out speedups.png|.svg

REPORT is a merged results.json (from bench/harness/results.py merge, as scripts/gpu-check
writes it) or a single benchmark's --json report. Ratios without a value (a row was missing)
are left out and listed on stderr.

Exit code: 0 when the plot was written; 3 when matplotlib is not importable (nothing else is
wrong: install it with `pip install matplotlib`); 4 when the reports hold no ratio with a value
(the GPU parts did not run); 1 when the reports cannot be read; 2 for a bad command line.
"""

import argparse
import json
import math
import sys


def reports_in(document):
    """The benchmark reports of a merged results file or of a single report."""
    if isinstance(document, dict) and isinstance(document.get("reports"), list):
        return document["reports"]
    if isinstance(document, dict) and "benchmark" in document:
        return [document]
    raise ValueError("neither a merged results.json nor a benchmark report")


def is_cudagap(variant):
    return "cudagap" in str(variant)


def as_speedup(ratio):
    """(label, speedup of cudagap, whether cudagap is in it) for a ratio with a value."""
    numerator, denominator, value = ratio["numerator"], ratio["denominator"], ratio["value"]
    case = ratio.get("case")
    if is_cudagap(denominator) and not is_cudagap(numerator):
        return f"{case}: vs {numerator}", value, True
    if is_cudagap(numerator) and not is_cudagap(denominator):
        return f"{case}: vs {denominator}", 1.0 / value, True
    return f"{case}: {numerator} / {denominator}", value, False


def collect(paths):
    """[(benchmark, [(label, value, involves cudagap)])] for every ratio with a value, and the
    ratios left out."""
    panels, skipped = [], []
    for path in paths:
        with open(path, encoding="utf-8") as handle:
            document = json.load(handle)
        for report in reports_in(document):
            bars = []
            for ratio in report.get("ratios", []):
                value = ratio.get("value")
                if isinstance(value, (int, float)) and value > 0 and math.isfinite(value):
                    bars.append(as_speedup(ratio))
                else:
                    label = f"{ratio.get('case')}: {ratio.get('numerator')} / {ratio.get('denominator')}"
                    skipped.append(f"{report.get('benchmark')}: {label} ({ratio.get('note', 'no value')})")
            if bars:
                panels.append((report.get("benchmark", "?"), bars))
    return panels, skipped


def plot(panels, out, title):
    import matplotlib  # noqa: PLC0415 (only needed here; its absence is reported by main)

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415

    heights = [max(1.5, 0.35 * len(bars) + 0.9) for _, bars in panels]
    figure, axes = plt.subplots(len(panels), 1, figsize=(10, sum(heights)),
                                gridspec_kw={"height_ratios": heights}, squeeze=False)
    for axis, (name, bars) in zip(axes[:, 0], panels):
        labels = [label for label, _, _ in bars]
        values = [value for _, value, _ in bars]
        colours = [("tab:green" if v >= 1.0 else "tab:orange") if ours else "tab:gray"
                   for _, v, ours in bars]
        positions = list(range(len(values)))
        # Bars grow from 1 (as fast as the other) to the value, left when cudagap is slower.
        axis.barh(positions, [v - 1.0 for v in values], left=1.0, color=colours)
        axis.set_yticks(positions, labels, fontsize=8)
        axis.invert_yaxis()
        axis.axvline(1.0, color="black", linewidth=0.8)
        low, high = min(values + [1.0]), max(values + [1.0])
        if high / low > 20:
            axis.set_xscale("log")
            axis.set_xlim(low / 1.5, high * 1.5)
        else:
            margin = (high - low) * 0.15 or 0.05
            axis.set_xlim(low - margin, high + margin)
        for position, value in zip(positions, values):
            axis.annotate(f"{value:.3g}x", (value, position), xytext=(3 if value >= 1 else -3, 0),
                          textcoords="offset points", va="center",
                          ha="left" if value >= 1 else "right", fontsize=7)
        axis.set_title(name, fontsize=10, loc="left")
    axes[-1, 0].set_xlabel("speedup of cudagap: time of the other / time of cudagap "
                           "(above 1: cudagap is faster)")
    figure.suptitle(title, fontsize=11)
    figure.tight_layout()
    figure.savefig(out, dpi=120)
    plt.close(figure)


def main(argv=None):
    parser = argparse.ArgumentParser(description="Plot cudagap's speedups from its benchmark reports.")
    parser.add_argument("reports", nargs="+", help="results.json or benchmark --json reports")
    parser.add_argument("--out", required=True, help="the image to write (.png or .svg)")
    parser.add_argument("--title", default="cudagap benchmarks: speedups")
    args = parser.parse_args(argv)
    try:
        panels, skipped = collect(args.reports)
    except (OSError, ValueError) as error:
        print(f"plot_results: cannot read the reports: {error}", file=sys.stderr)
        return 1
    for item in skipped:
        print(f"plot_results: left out {item}", file=sys.stderr)
    if not panels:
        print("plot_results: no ratio with a value to plot (did the GPU part run?)", file=sys.stderr)
        return 4
    try:
        import matplotlib  # noqa: F401,PLC0415
    except ImportError as error:
        print(f"plot_results: matplotlib is not importable ({error}); no plot written. "
              "Install it (pip install matplotlib) to get one; the tables are in results.md.",
              file=sys.stderr)
        return 3
    plot(panels, args.out, args.title)
    print(f"plot_results: wrote {args.out} ({sum(len(b) for _, b in panels)} ratios)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
