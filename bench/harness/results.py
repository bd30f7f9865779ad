#!/usr/bin/env python3
"""Checks and merges the JSON reports of cudagap's benchmarks (schema cudagap-bench/2, written
by the harness in bench/harness with --json FILE; cudagap-bench/1, without the noise, cache,
single-call, graph and clock fields, is still read: bench/train and bench/infer write it).

  results.py check FILE.json
      validates one report; exit 0 when it is well-formed, 1 with the problems otherwise.

  results.py run-check --json FILE -- PROGRAM [ARGS...]
      runs a benchmark with ARGS plus --json FILE and checks it as ctest's "bench: <name>" tests
      do: the exit code is 0, or 77 with "GPU part skipped: <reason>" printed; the printed table
      names the benchmark; the JSON report is well-formed and agrees with the exit code and the
      printed output. Exit 0 when all holds, 1 otherwise.

  results.py merge --out results.md [--json merged.json] FILE.json...
      merges reports into one Markdown page (environment, every target, then each benchmark's
      rows, ratios, notes and errors); unreadable reports are listed, not fatal. Exit 0, or 1
      when no report could be read.

  results.py brief FILE.json
      one line about a report: its rows and how its targets came out (for gpu-check's table).

  results.py targets MERGED.json
      one line per target of a merged results file: status, benchmark, name, measured value.
"""

import argparse
import json
import math
import os
import subprocess
import sys

SCHEMA = "cudagap-bench/2"
SCHEMAS = ("cudagap-bench/1", SCHEMA)
SKIP_EXIT_CODE = 77
STATUSES = ("met", "not met", "not measured")
MATHS = ("-", "FP32", "TF32", "FP16", "BF16")
STOPS = ("noise target", "time limit", "sample cap", "fixed count")
CACHES = (None, "warm", "cold")
NUMBER = (int, float)
MERGED_SCHEMA = "cudagap-bench-merged/1"


class _Checker:
    """Collects the problems of one report; `need` checks a field's presence and type."""

    def __init__(self):
        self.found = []

    def need(self, obj, key, kinds, where):
        if not isinstance(obj, dict) or key not in obj:
            self.found.append(f"{where} has no '{key}'")
            return None
        value = obj[key]
        if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in _tuple(kinds)):
            self.found.append(f"{where}'s '{key}' is {type(value).__name__}, not {_names(kinds)}")
            return None
        return value

    def optional_number(self, obj, key, where):
        if isinstance(obj, dict) and obj.get(key) is not None and (
                not isinstance(obj[key], NUMBER) or isinstance(obj[key], bool)):
            self.found.append(f"{where}'s {key} is not a number or null")

    def times(self, obj, where):
        times = [self.need(obj, key, NUMBER, where) for key in ("min_ms", "median_ms", "max_ms")]
        if None not in times:
            if any(not math.isfinite(t) or t < 0 for t in times):
                self.found.append(f"{where} has a negative or non-finite time: {times}")
            elif not times[0] <= times[1] <= times[2]:
                self.found.append(f"{where}'s min <= median <= max does not hold: {times}")

    def counts(self, obj, keys, where):
        for key in keys:
            count = self.need(obj, key, int, where)
            if count is not None and count < 1:
                self.found.append(f"{where}'s {key} is {count}")

    def row_v2(self, row, where):
        """The fields version 2 adds to a row: noise, stop, cache, side timings, clocks."""
        self.optional_number(row, "noise", where)
        self.optional_number(row, "max_noise", where)
        self.optional_number(row, "host_ms", where)
        self.need(row, "min_samples", int, where)
        stopped = self.need(row, "stopped", str, where)
        if stopped is not None and stopped not in STOPS:
            self.found.append(f"{where}'s stopped is {stopped!r}, not one of {', '.join(STOPS)}")
        if isinstance(row, dict) and row.get("cache", "?") not in CACHES:
            self.found.append(f"{where}'s cache is {row.get('cache', 'missing')!r}, "
                              "not null, 'warm' or 'cold'")
        for key in ("single_call", "graph"):
            side = row.get(key, "?") if isinstance(row, dict) else None
            if side is None:
                continue
            if not isinstance(side, dict):
                self.found.append(f"{where}'s {key} is not an object or null")
                continue
            self.times(side, f"{where}'s {key}")
            self.counts(side, ("samples", "calls_per_sample"), f"{where}'s {key}")
            self.optional_number(side, "noise", f"{where}'s {key}")
            self.need(side, "stopped", str, f"{where}'s {key}")
        clocks = row.get("clocks", "?") if isinstance(row, dict) else None
        if clocks is not None:
            if not isinstance(clocks, dict):
                self.found.append(f"{where}'s clocks is not an object or null")
            else:
                self.need(clocks, "flagged", bool, f"{where}'s clocks")
                self.need(clocks, "summary", str, f"{where}'s clocks")

    def row(self, row, where, v2):
        for key in ("case", "variant", "timing", "note"):
            self.need(row, key, str, where)
        math_mode = self.need(row, "math", str, where)
        if math_mode is not None and math_mode not in MATHS:
            self.found.append(f"{where}'s math is {math_mode!r}, not one of {', '.join(MATHS)}")
        self.times(row, where)
        self.counts(row, ("repetitions", "calls_per_repetition"), where)
        for key in ("tflops", "gbps", "peak_fraction"):
            self.optional_number(row, key, where)
        if v2:
            self.row_v2(row, where)


def problems_of(report):
    """Every way @report departs from the schema, as sentences (empty when it is well-formed)."""
    if not isinstance(report, dict):
        return ["the report is not a JSON object"]
    check = _Checker()
    need = check.need
    found = check.found
    if report.get("schema") not in SCHEMAS:
        found.append(f"schema is {report.get('schema')!r}, not {SCHEMA!r}")
    v2 = report.get("schema") == SCHEMA
    need(report, "benchmark", str, "the report")
    need(report, "description", str, "the report")
    need(report, "quick", bool, "the report")
    skipped = need(report, "gpu_skipped", bool, "the report")
    reason = need(report, "skip_reason", str, "the report")
    exit_code = need(report, "exit_code", int, "the report")
    env = need(report, "environment", dict, "the report")
    if env is not None:
        for key in ("date_utc", "host", "cudagap", "cuda_runtime", "driver_cuda", "device"):
            need(env, key, str, "the environment")
        need(env, "gpu_available", bool, "the environment")
    if v2:
        sampling = need(report, "sampling", dict, "the report")
        if sampling is not None:
            need(sampling, "max_noise", NUMBER, "the sampling")
            need(sampling, "min_samples", int, "the sampling")
            need(sampling, "time_limit_s", NUMBER, "the sampling")
            check.optional_number(sampling, "flush_bytes", "the sampling")
    for i, row in enumerate(need(report, "rows", list, "the report") or []):
        check.row(row, f"row {i}", v2)
    for i, ratio in enumerate(need(report, "ratios", list, "the report") or []):
        for key in ("case", "numerator", "denominator", "note"):
            need(ratio, key, str, f"ratio {i}")
        check.optional_number(ratio, "value", f"ratio {i}")
    for i, target in enumerate(need(report, "targets", list, "the report") or []):
        for key in ("name", "requirement", "measured", "note"):
            need(target, key, str, f"target {i}")
        status = need(target, "status", str, f"target {i}")
        if status is not None and status not in STATUSES:
            found.append(f"target {i}'s status is {status!r}, not one of {', '.join(STATUSES)}")
    notes = need(report, "notes", list, "the report")
    errors = need(report, "errors", list, "the report")
    for key, items in (("notes", notes), ("errors", errors)):
        if items is not None and not all(isinstance(item, str) for item in items):
            found.append(f"the report's {key} are not all strings")
    # The parts must agree with one another.
    if skipped is not None and reason is not None and skipped and not reason.strip():
        found.append("the GPU part was skipped but skip_reason is empty")
    if exit_code is not None and errors is not None and skipped is not None:
        expected = 1 if errors else (SKIP_EXIT_CODE if skipped else 0)
        if exit_code != expected:
            found.append(f"exit_code is {exit_code} but the errors and the skip say {expected}")
    return found


def _tuple(kinds):
    return kinds if isinstance(kinds, tuple) else (kinds,)


def _names(kinds):
    return " or ".join(k.__name__ for k in _tuple(kinds))


def load(path):
    with open(path, encoding="utf-8") as handle:
        return json.load(handle)


def command_check(args):
    try:
        report = load(args.file)
    except (OSError, ValueError) as error:
        print(f"{args.file}: cannot read the report: {error}", file=sys.stderr)
        return 1
    found = problems_of(report)
    for problem in found:
        print(f"{args.file}: {problem}", file=sys.stderr)
    if not found:
        print(f"{args.file}: a well-formed report of '{report['benchmark']}' "
              f"({len(report['rows'])} rows, {len(report['targets'])} targets)")
    return 1 if found else 0


def command_run_check(args):
    program = args.program
    if program and program[0] == "--":
        program = program[1:]
    if not program:
        print("run-check: no program to run (put it after --)", file=sys.stderr)
        return 1
    if os.path.exists(args.json):
        os.remove(args.json)
    command = program + ["--json", args.json]
    print("running: " + " ".join(command))
    completed = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               check=False)
    stdout = completed.stdout
    sys.stdout.write(stdout)
    sys.stdout.write(completed.stderr)
    found = []
    if completed.returncode not in (0, SKIP_EXIT_CODE):
        found.append(f"exit code {completed.returncode}, expected 0 (ran) or 77 (GPU part skipped)")
    report = None
    try:
        report = load(args.json)
    except (OSError, ValueError) as error:
        found.append(f"no readable JSON report at {args.json}: {error}")
    if report is not None:
        found += problems_of(report)
        name = report.get("benchmark", "?")
        if f"== cudagap benchmark: {name} ==" not in stdout:
            found.append(f"the printed report does not start with '== cudagap benchmark: {name} =='")
        if report.get("exit_code") != completed.returncode:
            found.append(f"the JSON says exit code {report.get('exit_code')}, "
                         f"the program exited with {completed.returncode}")
        if completed.returncode == SKIP_EXIT_CODE:
            reason = report.get("skip_reason", "")
            if not report.get("gpu_skipped") or f"GPU part skipped: {reason}" not in stdout:
                found.append("exit code 77 but the output does not say 'GPU part skipped: <reason>'")
            measured_gpu = [t["name"] for t in report.get("targets", [])
                            if isinstance(t, dict) and t.get("status") != "not measured"
                            and t.get("note") == "GPU part skipped"]
            if measured_gpu:
                found.append(f"targets marked both measured and skipped: {measured_gpu}")
        for target in report.get("targets", []):
            if isinstance(target, dict) and target.get("name") and target["name"] not in stdout:
                found.append(f"target '{target['name']}' is in the JSON but not printed")
        for row in report.get("rows", []):
            if isinstance(row, dict) and str(row.get("case")) not in stdout:
                found.append(f"row '{row.get('case')}' is in the JSON but not printed")
    for problem in found:
        print(f"run-check: {problem}", file=sys.stderr)
    print("run-check: " + ("FAILED" if found else "passed"))
    return 1 if found else 0


def fmt_time(ms):
    if ms is None:
        return "-"
    if ms < 1e-3:
        return f"{ms * 1e6:.0f} ns"
    if ms < 1.0:
        return f"{ms * 1e3:.3f} µs"
    if ms < 1000.0:
        return f"{ms:.3f} ms"
    return f"{ms / 1e3:.3f} s"


def fmt_throughput(row):
    if row.get("tflops") is not None:
        value = row["tflops"]
        return f"{value:.3f} TFLOP/s" if value < 1 else f"{value:.1f} TFLOP/s"
    if row.get("gbps") is not None:
        value = row["gbps"]
        return f"{value:.2f} GB/s" if value < 10 else f"{value:.0f} GB/s"
    return ""


def percent(fraction):
    return f"{100 * fraction:.2f}%" if fraction < 0.1 else f"{100 * fraction:.1f}%"


def noise_label(noise, stopped, samples, min_samples):
    """The noise as the harness prints it: "0.31%", "noisy: 3.10%" when the time limit (or the
    sample cap) came first, with "(4 of 10 samples)" below the minimum; "-" without a figure."""
    text = "-" if noise is None else percent(noise)
    if stopped in ("time limit", "sample cap"):
        text = f"noisy: {text}"
        if isinstance(samples, int) and isinstance(min_samples, int) and samples < min_samples:
            text += f" ({samples} of {min_samples} samples)"
    return text


def row_noise(row):
    if "stopped" not in row:  # a version-1 row: no noise was recorded
        return "-"
    return noise_label(row.get("noise"), row.get("stopped"), row.get("repetitions"),
                       row.get("min_samples"))


def side_label(side, min_samples=None):
    """A timing beside a row's own (its single calls, its graph): the median, and the noise when
    it stopped noisy; empty without one."""
    if not side:
        return ""
    text = fmt_time(side.get("median_ms"))
    if side.get("stopped") in ("time limit", "sample cap"):
        text += f" ({noise_label(side.get('noise'), side.get('stopped'), side.get('samples'), min_samples)})"
    return text


def clocks_label(row):
    clocks = row.get("clocks")
    if not clocks:
        return "-"
    summary = clocks.get("summary", "?")
    return f"**{summary}**" if clocks.get("flagged") else summary


def rows_table(rows):
    """The Markdown table of a report's rows, with version 2's columns ("-" for a version-1 row)."""
    return table(["case", "variant", "math", "cache", "median", "min", "max", "noise",
                  "samples × calls", "1 call", "graph", "throughput", "of peak", "clocks",
                  "timing", "note"],
                 [[r.get("case"), r.get("variant"), r.get("math"), r.get("cache") or "-",
                   fmt_time(r.get("median_ms")), fmt_time(r.get("min_ms")),
                   fmt_time(r.get("max_ms")), row_noise(r),
                   f"{r.get('repetitions')} × {r.get('calls_per_repetition')}",
                   side_label(r.get("single_call"), r.get("min_samples")),
                   side_label(r.get("graph"), r.get("min_samples")), fmt_throughput(r),
                   "" if r.get("peak_fraction") is None else f"{100 * r['peak_fraction']:.0f}%",
                   clocks_label(r), r.get("timing", ""), r.get("note", "")] for r in rows])


def sampling_line(report):
    """How a version-2 report sampled, in one sentence; empty for version 1."""
    sampling = report.get("sampling")
    if not isinstance(sampling, dict):
        return ""
    line = (f"Sampling: until the noise (relative standard deviation) is at most "
            f"{100 * sampling.get('max_noise', 0):g}% after {sampling.get('min_samples')} samples, "
            f"within {sampling.get('time_limit_s')} s per measurement")
    if sampling.get("flush_bytes") and any(r.get("cache") == "cold" for r in report.get("rows", [])):
        line += f"; cold samples first write {sampling['flush_bytes'] / 2**20:.0f} MiB (2x the L2)"
    env = report.get("environment", {})
    if env.get("clocks_checked"):
        line += "; clocks read by NVML around each case (never changed)"
    elif "clocks_checked" in env:
        line += "; clocks not checked" + (f": {env['clocks_note']}" if env.get("clocks_note") else "")
    flagged = [r for r in report.get("rows", []) if (r.get("clocks") or {}).get("flagged")]
    if flagged:
        line += f". **{len(flagged)} row(s) flagged by their clocks** (fell or throttled)"
    return line + "."


def cell(text):
    return str(text).replace("|", "\\|").replace("\n", " ")


def table(header, rows):
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell(c) for c in row) + " |" for row in rows]
    return lines


def environment_line(env):
    parts = [f"date {env.get('date_utc', '?')}", f"host {env.get('host', '?')}"]
    if env.get("device"):
        device = f"device {env['device']} (compute capability {env.get('capability', '?')}"
        if env.get("memory_bytes"):
            device += f", {env['memory_bytes'] / 2**30:.1f} GiB"
        if env.get("max_sm_clock_mhz"):
            device += f", SM clock max {env['max_sm_clock_mhz']} MHz"
            if env.get("sm_clock_mhz") is not None:
                device += f" ({env['sm_clock_mhz']} MHz at start)"
        if env.get("peak_memory_bandwidth_gbps"):
            device += f", peak memory bandwidth {env['peak_memory_bandwidth_gbps']:.0f} GB/s"
        parts.append(device + ")")
    else:
        parts.append("no usable GPU")
    driver = env.get("driver_version") or "version unknown"
    parts.append(f"driver {driver} (CUDA {env.get('driver_cuda', '?')})")
    parts.append(f"CUDA runtime {env.get('cuda_runtime', '?')}")
    parts.append(f"cudagap {env.get('cudagap', '?')}")
    return ", ".join(parts)


def merge(reports, unreadable):
    """The Markdown page of @reports (a list of (path, report)) and the merged JSON object."""
    lines = ["# cudagap benchmark results", ""]
    if reports:
        lines += [environment_line(reports[0][1].get("environment", {})), ""]
    for path, why in unreadable:
        lines += [f"- **unreadable report** `{path}`: {why}"]
    if unreadable:
        lines.append("")
    target_rows = []
    for _, report in reports:
        for target in report.get("targets", []):
            target_rows.append([report.get("benchmark", "?"), target.get("name", "?"),
                                f"**{target.get('status', '?')}**", target.get("measured") or "-",
                                target.get("requirement", ""), target.get("note", "")])
    if target_rows:
        lines += ["## Targets", ""]
        lines += table(["benchmark", "target", "status", "measured", "requirement", "note"], target_rows)
        lines.append("")
    for _, report in reports:
        name = report.get("benchmark", "?")
        lines += [f"## {name}", "", report.get("description", ""), ""]
        if report.get("quick"):
            lines += ["Quick mode (fewer sizes and repetitions).", ""]
        if report.get("gpu_skipped"):
            lines += [f"GPU part skipped: {report.get('skip_reason', '')}", ""]
        rows = report.get("rows", [])
        if sampling_line(report):
            lines += [sampling_line(report), ""]
        if rows:
            lines += rows_table(rows)
            lines.append("")
        else:
            lines += ["No measurements.", ""]
        ratios = report.get("ratios", [])
        if ratios:
            lines += ["Ratios (time of the first over the time of the second; above 1: the second "
                      "is faster):", ""]
            lines += table(["case", "ratio", "value", "note"],
                           [[r.get("case"), f"{r.get('numerator')} / {r.get('denominator')}",
                             "-" if r.get("value") is None else
                             (f"{r['value']:.3f}" if r["value"] < 10 else f"{r['value']:.1f}"),
                             r.get("note", "")] for r in ratios])
            lines.append("")
        for note in report.get("notes", []):
            lines.append(f"- {note}")
        for error in report.get("errors", []):
            lines.append(f"- **error**: {error}")
        if report.get("notes") or report.get("errors"):
            lines.append("")
    merged = {"schema": MERGED_SCHEMA,
              "reports": [report for _, report in reports],
              "unreadable": [{"path": p, "why": w} for p, w in unreadable]}
    return "\n".join(lines).rstrip() + "\n", merged


def command_merge(args):
    reports, unreadable = [], []
    for path in args.files:
        try:
            report = load(path)
        except (OSError, ValueError) as error:
            unreadable.append((path, str(error)))
            continue
        found = problems_of(report)
        if found:
            unreadable.append((path, "; ".join(found)))
            continue
        reports.append((path, report))
    markdown, merged = merge(reports, unreadable)
    with open(args.out, "w", encoding="utf-8") as handle:
        handle.write(markdown)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump(merged, handle, indent=2)
            handle.write("\n")
    print(f"merged {len(reports)} report(s) into {args.out}"
          + (f" ({len(unreadable)} unreadable)" if unreadable else ""))
    return 0 if reports else 1


def target_counts(report):
    statuses = [t.get("status") for t in report.get("targets", []) if isinstance(t, dict)]
    return [f"{statuses.count(s)} {s}" for s in STATUSES if statuses.count(s)]


def command_brief(args):
    try:
        report = load(args.file)
    except (OSError, ValueError) as error:
        print(f"unreadable report: {error}")
        return 1
    counts = target_counts(report)
    print(f"{len(report.get('rows', []))} rows" + (", targets: " + ", ".join(counts) if counts else ""))
    return 0


def command_targets(args):
    try:
        merged = load(args.file)
    except (OSError, ValueError) as error:
        print(f"unreadable results: {error}", file=sys.stderr)
        return 1
    for report in merged.get("reports", []):
        for target in report.get("targets", []):
            print(f"{target.get('status', '?'):<13} {report.get('benchmark', '?'):<9} "
                  f"{target.get('name', '?')}: {target.get('measured') or '-'}")
    return 0


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    check = sub.add_parser("check", help="validate one JSON report")
    check.add_argument("file")
    run_check = sub.add_parser("run-check", help="run a benchmark and check its output")
    run_check.add_argument("--json", required=True, help="where the benchmark writes its report")
    run_check.add_argument("program", nargs=argparse.REMAINDER, help="-- PROGRAM [ARGS...]")
    merge_cmd = sub.add_parser("merge", help="merge JSON reports into Markdown")
    merge_cmd.add_argument("--out", required=True, help="the Markdown file to write")
    merge_cmd.add_argument("--json", help="also write the merged reports as one JSON file")
    merge_cmd.add_argument("files", nargs="+")
    brief = sub.add_parser("brief", help="one line about a report")
    brief.add_argument("file")
    targets = sub.add_parser("targets", help="the targets of a merged results file")
    targets.add_argument("file")
    args = parser.parse_args(argv)
    return {"check": command_check, "run-check": command_run_check, "merge": command_merge,
            "brief": command_brief, "targets": command_targets}[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
