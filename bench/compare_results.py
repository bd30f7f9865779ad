#!/usr/bin/env python3
"""Compares two runs of cudagap's benchmarks: two results JSON files (two commits, two machines,
before and after a change), each one benchmark's report (`--json FILE`, schema cudagap-bench/1
or /2) or a merged results file (scripts/gpu-check's results.json).

  compare_results.py BEFORE.json AFTER.json [--markdown FILE] [--fail-on-slower]

For every row both runs have (benchmark, case, variant) it compares the median per call, and
the single-call and graph timings beside it where both have them: the ratio after / before,
the noise (relative standard deviation) of each side, and a verdict. A difference is "within
noise" when |ratio - 1| is at most the combined noise of the two sides, sqrt(before^2 +
after^2) (the relative noise of a ratio of two independent measurements); otherwise it is
"slower" or "faster". A side without a noise figure (a version-1 report, a single sample)
gives "noise unknown": no claim is made. A row whose clocks were flagged in either run (the SM
clock fell, or it throttled) says so beside its verdict, and so does one that stopped on its
time limit above the noise target ("noisy"). Rows that only one run has are listed.

The table goes to stdout (Markdown); --markdown FILE writes it there too. Exit code 0; 1 with
--fail-on-slower when a comparison is slower beyond noise; 2 when a file cannot be read or is
not a benchmark report.
"""

import argparse
import math
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "harness"))
import results  # noqa: E402 (bench/harness/results.py: loading, checking, formatting)

FIGURES = (("median", None), ("1 call", "single_call"), ("graph", "graph"))


class Unreadable(Exception):
    """A file that is not a benchmark report or a merged results file."""


def reports_of(path):
    """The reports in @path: one report, or the reports of a merged results file."""
    try:
        data = results.load(path)
    except (OSError, ValueError) as error:
        raise Unreadable(f"{path}: cannot read it: {error}") from error
    if isinstance(data, dict) and data.get("schema") == results.MERGED_SCHEMA:
        reports = data.get("reports", [])
    else:
        reports = [data]
    for report in reports:
        found = results.problems_of(report)
        if found:
            raise Unreadable(f"{path}: not a benchmark report: {'; '.join(found)}")
    return reports


def figures_of(reports):
    """{(benchmark, case, variant, figure): the timing} of every row of @reports."""
    out = {}
    for report in reports:
        for row in report.get("rows", []):
            base = {"noise": row.get("noise"), "stopped": row.get("stopped"),
                    "flagged": bool((row.get("clocks") or {}).get("flagged"))}
            for figure, key in FIGURES:
                timing = row if key is None else row.get(key)
                if not timing:
                    continue
                out[(report["benchmark"], row["case"], row["variant"], figure)] = dict(
                    base, median_ms=timing["median_ms"], noise=timing.get("noise"),
                    stopped=timing.get("stopped", base["stopped"]))
    return out


def verdict(before, after):
    """"within noise", "slower" or "faster" for the ratio after / before, or "noise unknown";
    then the caveats: flagged clocks, a side that stopped noisy."""
    ratio = after["median_ms"] / before["median_ms"]
    if before["noise"] is None or after["noise"] is None:
        text = "noise unknown"
    elif abs(ratio - 1.0) <= math.hypot(before["noise"], after["noise"]):
        text = "within noise"
    else:
        text = "slower" if ratio > 1.0 else "faster"
    caveats = [f"clocks flagged {side}" for side, t in (("before", before), ("after", after))
               if t["flagged"]]
    caveats += [f"noisy {side}" for side, t in (("before", before), ("after", after))
                if t["stopped"] in ("time limit", "sample cap")]
    return ratio, text, caveats


def noise_text(timing):
    return "-" if timing["noise"] is None else results.percent(timing["noise"])


def environment_line(label, reports):
    env = reports[0].get("environment", {}) if reports else {}
    return (f"- {label}: {env.get('device') or 'no GPU'}, driver "
            f"{env.get('driver_version') or '?'}, CUDA runtime {env.get('cuda_runtime', '?')}, "
            f"cudagap {env.get('cudagap', '?')}, {env.get('date_utc', '?')}, host "
            f"{env.get('host', '?')} ({len(reports)} report(s))")


def compare(before_reports, after_reports):
    """The Markdown page and the verdict counts."""
    before, after = figures_of(before_reports), figures_of(after_reports)
    rows, counts = [], {"within noise": 0, "slower": 0, "faster": 0, "noise unknown": 0}
    for key in sorted(set(before) & set(after)):
        b, a = before[key], after[key]
        if b["median_ms"] <= 0:
            continue
        ratio, text, caveats = verdict(b, a)
        counts[text] += 1
        rows.append(list(key) + [results.fmt_time(b["median_ms"]), results.fmt_time(a["median_ms"]),
                                 f"{ratio:.3f}", noise_text(b), noise_text(a),
                                 text + (f" ({', '.join(caveats)})" if caveats else "")])
    lines = ["# cudagap benchmark comparison", "", environment_line("before", before_reports),
             environment_line("after", after_reports), "",
             f"{len(rows)} compared: " + ", ".join(f"{n} {k}" for k, n in counts.items()) + ".",
             "A ratio is after / before (above 1: slower after). Within noise: |ratio - 1| <= "
             "sqrt(noise before^2 + noise after^2).", ""]
    if rows:
        lines += results.table(["benchmark", "case", "variant", "figure", "before", "after",
                                "after / before", "noise before", "noise after", "verdict"], rows)
        lines.append("")
    for label, only in (("before", set(before) - set(after)), ("after", set(after) - set(before))):
        for key in sorted(only):
            lines.append(f"- only in {label}: {' / '.join(key)}")
    return "\n".join(lines).rstrip() + "\n", counts


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("before", help="the earlier run's JSON (a report or a merged file)")
    parser.add_argument("after", help="the later run's JSON")
    parser.add_argument("--markdown", help="also write the comparison to this file")
    parser.add_argument("--fail-on-slower", action="store_true",
                        help="exit 1 when a comparison is slower beyond noise")
    args = parser.parse_args(argv)
    try:
        before, after = reports_of(args.before), reports_of(args.after)
    except Unreadable as error:
        print(f"compare_results.py: {error}", file=sys.stderr)
        return 2
    page, counts = compare(before, after)
    sys.stdout.write(page)
    if args.markdown:
        temporary = args.markdown + ".tmp"
        with open(temporary, "w", encoding="utf-8") as handle:
            handle.write(page)
        os.replace(temporary, args.markdown)
    return 1 if args.fail_on_slower and counts["slower"] else 0


if __name__ == "__main__":
    sys.exit(main())
