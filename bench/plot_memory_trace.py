#!/usr/bin/env python3
"""Draws a cudagap memory trace (the Chrome trace JSON that gpu::memory_trace writes) as a
stacked-area picture: one panel per device, one band per tag, its height the bytes the tag holds
over time: what stays (parameters, optimizer state) at the bottom, what comes and goes
(activations, scratch) on top, so that a step's rise and fall reads as one band. For people who would rather look than read; the
same file opens in Perfetto (ui.perfetto.dev) and chrome://tracing.

usage: plot_memory_trace.py TRACE.json --out memory.png|.svg [--title TEXT]

Reads the counter events (ph "C", cat "memory": one track per tag and device, args.bytes) and
the process names (ph "M", process_name). The picture is written to a temporary file beside
--out and renamed over it.

Exit code: 0 when the picture was written; 3 when matplotlib is not importable (install it with
`pip install matplotlib`); 4 when the trace holds no memory counter; 1 when the trace cannot be
read; 2 for a bad command line.
"""

import argparse
import json
import os
import sys
import tempfile


def tracks_in(document):
    """{pid: (process name, {tag: [(time in ms, bytes)]})} from a trace's counter events."""
    if not isinstance(document, dict) or not isinstance(document.get("traceEvents"), list):
        raise ValueError("not a Chrome trace: no traceEvents array")
    names, tracks = {}, {}
    for event in document["traceEvents"]:
        phase = event.get("ph")
        if phase == "M" and event.get("name") == "process_name":
            names[event["pid"]] = event.get("args", {}).get("name", f"process {event['pid']}")
        elif phase == "C" and event.get("cat") == "memory":
            samples = tracks.setdefault(event["pid"], {}).setdefault(event["name"], [])
            samples.append((float(event["ts"]) / 1000.0, int(event["args"]["bytes"])))
    return {pid: (names.get(pid, f"process {pid}"), tags) for pid, tags in sorted(tracks.items())}


def stacked(tags):
    """(times, [(tag, values)]) with every tag's level at every time (a step function: a tag
    keeps its last sample until the next). Tags that stay come first, the one holding the most
    at its lowest (after its first allocation) first; then those that come and go, by peak."""
    times = sorted({t for samples in tags.values() for t, _ in samples})
    series = []
    for tag, samples in tags.items():
        samples = sorted(samples, key=lambda sample: sample[0])
        values, level, i = [], 0, 0
        for t in times:
            while i < len(samples) and samples[i][0] <= t:
                level = samples[i][1]
                i += 1
            values.append(level)
        series.append((tag, values))
    def order(item):
        values = item[1]
        first = next((i for i, v in enumerate(values) if v > 0), len(values))
        kept = min(values[first:], default=0)
        return (kept, max(values, default=0))

    series.sort(key=order, reverse=True)
    return times, series


def unit_for(most):
    for name, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if most >= size:
            return name, size
    return "B", 1


def draw(tracks, out, title):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(len(tracks), 1, figsize=(11, 3.4 * len(tracks)), squeeze=False)
    for axis, (name, tags) in zip(axes[:, 0], tracks.values()):
        times, series = stacked(tags)
        # One more point after the last change, so that the final levels have a width.
        span = times[-1] - times[0] if len(times) > 1 else 1.0
        times = times + [times[-1] + 0.02 * span]
        series = [(tag, values + values[-1:]) for tag, values in series]
        most = max((sum(values) for values in zip(*(v for _, v in series))), default=0)
        unit, size = unit_for(most)
        axis.stackplot(times, *[[v / size for v in values] for _, values in series],
                       labels=[tag for tag, _ in series], step="post", alpha=0.85)
        axis.set_title(name)
        axis.set_xlabel("time since the recording started (ms)")
        axis.set_ylabel(f"held ({unit})")
        handles, labels = axis.get_legend_handles_labels()
        axis.legend(handles[::-1], labels[::-1], loc="upper left", bbox_to_anchor=(1.01, 1.0),
                    fontsize="small")  # top band first, as drawn
        axis.margins(x=0)
    if title:
        figure.suptitle(title)
    figure.tight_layout()
    folder = os.path.dirname(os.path.abspath(out))
    suffix = os.path.splitext(out)[1] or ".png"
    handle, temporary = tempfile.mkstemp(prefix=".plot-", suffix=suffix, dir=folder)
    os.close(handle)
    try:
        figure.savefig(temporary, dpi=120)
        os.replace(temporary, out)
    finally:
        if os.path.exists(temporary):
            os.unlink(temporary)
    return sum(len(tags) for _, tags in tracks.values())


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("trace")
    parser.add_argument("--out", required=True)
    parser.add_argument("--title", default="")
    args = parser.parse_args(argv)
    try:
        with open(args.trace, encoding="utf-8") as handle:
            tracks = tracks_in(json.load(handle))
    except (OSError, ValueError, KeyError, TypeError) as failure:
        print(f"plot_memory_trace.py: cannot read {args.trace}: {failure}", file=sys.stderr)
        return 1
    if not tracks:
        print(f"plot_memory_trace.py: {args.trace} holds no memory counter (was anything "
              "allocated while it recorded?)", file=sys.stderr)
        return 4
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        print("plot_memory_trace.py: matplotlib is not importable: pip install matplotlib",
              file=sys.stderr)
        return 3
    count = draw(tracks, args.out, args.title)
    print(f"wrote {args.out} ({len(tracks)} device(s), {count} tag track(s))")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
