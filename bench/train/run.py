#!/usr/bin/env python3
"""bench/train: cudagap-train against the same training in PyTorch, in one run.

Runs, on the same data, seed and hyperparameters: cudagap-train --graph (saving its
checkpoint), cudagap-train eager, torch_train.py eager (autocast + GradScaler, PyTorch's AMP
recipe), the checkpoint's test accuracy measured in PyTorch, then torch_train.py under
torch.compile (each mode of --compile-modes while the budget allows: its first compilation takes
tens of seconds). Prints the side-by-side table (images/s of the epochs after the warm-up epoch,
test accuracy after the last one) and the targets, reported, not asserted; --json writes the
report in the benchmarks' schema (cudagap-bench/1, bench/README.md) with the details under
"train"; --markdown writes the table alone.

A part that cannot run is a line "not measured: <reason>" (no data set, no cudagap-train, no torch,
no CUDA in torch, the budget spent). Exit code: 0 when it ran; 77 when cudagap-train found no
GPU (the GPU part skipped, as the C++ benchmarks do); 1 when a part failed (the others still
ran); 2 for a bad command line.
"""

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone

HERE = os.path.dirname(os.path.abspath(__file__))
SKIP_EXIT_CODE = 77
MATH = {"fp16": "FP16", "bf16": "BF16", "fp32": "TF32"}
GRAPH, EAGER, TORCH = "cudagap --graph", "cudagap eager", "torch eager AMP"
TARGETS = {
    "accuracy": ("test accuracy after 10 epochs >= 91%",
                 "cudagap --graph's final test accuracy >= 0.91 after 10 epochs on the full set"),
    "agree": ("test accuracy within 0.5 points of PyTorch's",
              "distance between cudagap --graph's and torch eager AMP's accuracy <= 0.005 (same epochs, data, seed)"),
    "eager": ("cudagap --graph images/s >= 2x PyTorch eager AMP",
              "epoch time ratio cudagap --graph / torch eager AMP <= 0.5"),
    "compile": ("cudagap --graph images/s >= torch.compile",
                "epoch time ratio cudagap --graph / the fastest torch.compile <= 1"),
    "checkpoint": ("checkpoint accuracy in PyTorch equals cudagap's to 0.1 points",
                   "distance between PyTorch's FP32 accuracy with cudagap's checkpoint and cudagap's <= 0.001"),
}


def default_program():
    """cudagap-train from $CUDAGAP_TRAIN, else on PATH (the wrapper in the build passes it)."""
    return os.environ.get("CUDAGAP_TRAIN") or shutil.which("cudagap-train")


def parse(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    parser.add_argument("--epochs", type=int, default=None, help="default 10 (--quick: 2)")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--weight-decay", type=float, default=0.01)
    parser.add_argument("--dropout", type=float, default=0.4)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--precision", choices=("fp16", "bf16", "fp32"), default="fp16")
    parser.add_argument("--train-limit", type=int, default=None, help="default 0: all (--quick: 2000)")
    parser.add_argument("--test-limit", type=int, default=0)
    parser.add_argument("--compile-modes", default="default",
                        help="torch.compile modes, comma-separated (default, reduce-overhead); none: skip")
    parser.add_argument("--budget", type=float, default=0,
                        help="seconds for the whole run (0: none); a part that no longer has its time is not run")
    parser.add_argument("--compile-seconds", type=float, default=90,
                        help="the time one torch.compile run needs (its compilation included) to be started")
    parser.add_argument("--cudagap-train", default=None, help="the program (default $CUDAGAP_TRAIN, else PATH)")
    parser.add_argument("--python", default=sys.executable, help="the python3 that runs torch_train.py")
    parser.add_argument("--torch-script", default=os.path.join(HERE, "torch_train.py"))
    parser.add_argument("--quick", action="store_true", help="2 epochs on 2000 images")
    parser.add_argument("--no-torch", action="store_true", help="skip the PyTorch side")
    parser.add_argument("--cpu-only", action="store_true", help="skip the GPU part (nothing runs)")
    parser.add_argument("--json", metavar="FILE")
    parser.add_argument("--markdown", metavar="FILE")
    return check(parser, parser.parse_args(argv))


def check(parser, args):
    """@args with the --quick defaults filled in, or parser.error (exit 2) naming the value."""
    if args.epochs is None:
        args.epochs = 2 if args.quick else 10
    if args.train_limit is None:
        args.train_limit = 2000 if args.quick else 0
    for name in ("epochs", "batch_size"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1, got {getattr(args, name)}")
    for name in ("train_limit", "test_limit", "seed"):
        if getattr(args, name) < 0:
            parser.error(f"--{name.replace('_', '-')} must be >= 0, got {getattr(args, name)}")
    if not 0 <= args.dropout < 1 or args.lr <= 0 or args.weight_decay < 0 or args.budget < 0:
        parser.error(f"need 0 <= --dropout < 1, --lr > 0, --weight-decay >= 0, --budget >= 0; got "
                     f"{args.dropout}, {args.lr}, {args.weight_decay}, {args.budget}")
    modes = [m for m in args.compile_modes.split(",") if m]
    bad = [m for m in modes if m not in ("default", "reduce-overhead", "max-autotune", "none")]
    if bad or ("none" in modes and len(modes) > 1):
        parser.error(f"--compile-modes takes default, reduce-overhead, max-autotune or none, got {args.compile_modes}")
    args.compile_modes = [] if modes == ["none"] else modes
    if args.cudagap_train is None:
        args.cudagap_train = default_program()
    return args


class Run:
    """The state of one benchmark run: the parts measured, the ones not, the errors."""

    label = "train"  # what the progress lines on stderr start with (bench/infer's Run says "infer")

    def __init__(self, args, tmp):
        self.args, self.tmp = args, tmp
        self.start = time.monotonic()
        self.parts = {}          # variant -> the program's JSON report
        self.missing = {}        # variant -> why it was not measured
        self.errors = []
        self.skip_reason = ""

    def left(self):
        """Seconds left of the budget (None: no budget)."""
        if not self.args.budget:
            return None
        return self.args.budget - (time.monotonic() - self.start)

    def common(self):
        a = self.args
        return ["--data", a.data, "--epochs", str(a.epochs), "--batch-size", str(a.batch_size),
                "--lr", repr(a.lr), "--weight-decay", repr(a.weight_decay), "--dropout", repr(a.dropout),
                "--seed", str(a.seed), "--precision", a.precision,
                "--train-limit", str(a.train_limit), "--test-limit", str(a.test_limit)]

    def execute(self, variant, command, minimum=10):
        """Runs @command under what is left of the budget; its JSON report (from stdout, or the
        file the command was given) or None with the reason recorded."""
        left = self.left()
        if left is not None and left < minimum:
            self.missing[variant] = f"the {self.args.budget:.0f} s budget is spent ({max(left, 0):.0f} s left)"
            return None
        print(f"{self.label}: running {variant}: {' '.join(command)}", file=sys.stderr)
        try:
            done = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                  timeout=left, check=False)
        except subprocess.TimeoutExpired:
            self.missing[variant] = f"stopped after {left:.0f} s: the budget was spent"
            return None
        except OSError as error:
            self.errors.append(f"{variant}: cannot run {command[0]}: {error}")
            return None
        sys.stderr.write(done.stderr[-4000:])
        return done


def run_cudagap(run, graph):
    """cudagap-train, eager or --graph (which saves the checkpoint)."""
    variant = GRAPH if graph else EAGER
    program = run.args.cudagap_train
    if not program or not os.access(program, os.X_OK):
        run.missing[variant] = ("cudagap-train is not built here (examples/research_training; "
                                "give --cudagap-train PATH)" if not program else f"{program} is not an executable")
        return
    report_file = os.path.join(run.tmp, f"cudagap-{'graph' if graph else 'eager'}.json")
    command = [program, *run.common(), "--json", report_file, "--quiet"]
    if graph:
        command += ["--graph", "--save", os.path.join(run.tmp, "model.safetensors")]
    done = run.execute(variant, command)
    if done is None:
        return
    report = read_json(report_file)
    if done.returncode != 0 or report is None:
        last = (done.stderr.strip().splitlines() or ["no message"])[-1]
        run.errors.append(f"{variant}: cudagap-train exited {done.returncode}: {last[:200]}")
    elif not report.get("gpu_available", False):
        run.skip_reason = report.get("reason") or "cudagap-train found no usable GPU"
        run.missing[variant] = f"no GPU: {run.skip_reason}"
    else:
        run.parts[variant] = report


def run_torch(run, variant, extra, minimum=10):
    """torch_train.py with @extra arguments; its report, or the reason it has none."""
    if run.args.no_torch:
        run.missing[variant] = "--no-torch"
        return None
    done = run.execute(variant, [run.args.python, run.args.torch_script, *extra], minimum)
    if done is None:
        return None
    lines = done.stdout.strip().splitlines()
    report = parse_json(lines[-1]) if lines else None
    if report is None or done.returncode not in (0, 1):
        run.errors.append(f"{variant}: torch_train.py exited {done.returncode} without a report: "
                          f"{(done.stderr.strip().splitlines() or [''])[-1][:200]}")
    elif not report.get("ok"):
        if done.returncode == 0:
            run.missing[variant] = report.get("reason", "torch_train.py said no")
        else:
            run.errors.append(f"{variant}: {report.get('error', 'failed')}")
    else:
        return report
    return None


def missing_data(directory):
    """Why @directory is not a Fashion-MNIST folder (a file missing), or None."""
    sys.path.insert(0, HERE)
    import torch_train  # noqa: PLC0415 (its IDX file names; no torch is imported)

    for stem in torch_train.FILES.values():
        try:
            torch_train.idx_path(directory, stem)
        except torch_train.DataError as error:
            return str(error)
    return None


def run_all(run):
    a = run.args
    why = "--cpu-only: the benchmark has no CPU part" if a.cpu_only else missing_data(a.data)
    if why:
        run.skip_reason = "--cpu-only" if a.cpu_only else ""
        for variant in (GRAPH, EAGER, TORCH, "checkpoint in PyTorch", "torch.compile"):
            run.missing[variant] = why
        return
    run_cudagap(run, graph=True)
    run_cudagap(run, graph=False)
    report = run_torch(run, TORCH, [*run.common(), "--mode", "eager"])
    if report is not None:
        run.parts[TORCH] = report
    checkpoint = os.path.join(run.tmp, "model.safetensors")
    if GRAPH not in run.parts:
        run.missing["checkpoint in PyTorch"] = f"no checkpoint: {GRAPH} did not run"
    elif not os.path.isfile(checkpoint):
        run.errors.append(f"checkpoint in PyTorch: cudagap-train --save wrote no {checkpoint}")
    else:
        report = run_torch(run, "checkpoint in PyTorch",
                           ["--evaluate-checkpoint", checkpoint, "--data", a.data,
                            "--test-limit", str(a.test_limit)])
        if report is not None:
            run.parts["checkpoint in PyTorch"] = report
    if not a.compile_modes:
        run.missing["torch.compile"] = "--compile-modes none"
    for mode in a.compile_modes:
        variant = f"torch.compile ({mode})"
        if TORCH not in run.parts and not a.no_torch:
            run.missing[variant] = f"not run: {TORCH} was not measured"
            continue
        report = run_torch(run, variant, [*run.common(), "--mode", "compile", "--compile-mode", mode],
                           minimum=a.compile_seconds)
        if report is not None:
            run.parts[variant] = report


def read_json(path):
    try:
        with open(path, encoding="utf-8") as stream:
            return json.load(stream)
    except (OSError, ValueError):
        return None


def parse_json(text):
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


# ---- the report -------------------------------------------------------------------------------

def epoch_times(report):
    """(epoch seconds after the warm-up epoch, whether a warm-up epoch was left out)."""
    epochs = report.get("epochs") or []
    times = [e["seconds"] for e in epochs[1:]] or [e["seconds"] for e in epochs[:1]]
    return times, len(epochs) > 1


def row_of(run, variant, report):
    times, warmed = epoch_times(report)
    median = statistics.median(times)
    images = report.get("train_images", 0)
    accuracy = report.get("final_test_accuracy")
    note = (f"{images / median:,.0f} images/s; test accuracy {100 * accuracy:.2f}% after "
            f"{len(report.get('epochs', []))} epochs on {images} images")
    if "loss_scale" in report["epochs"][-1] and run.args.precision == "fp16":
        note += f"; loss scale {report['epochs'][-1]['loss_scale']:g}, skipped steps " \
                f"{sum(e.get('skipped_steps', 0) for e in report['epochs'])}"
    if report.get("first_epoch_seconds") is not None and variant.startswith("torch.compile"):
        note += f"; first epoch (compilation) {report['first_epoch_seconds']:.1f} s"
    return {"case": case_name(run), "variant": variant, "math": MATH[run.args.precision],
            "median_ms": 1000 * median, "min_ms": 1000 * min(times), "max_ms": 1000 * max(times),
            "spread": (max(times) - min(times)) / median if median else 0.0,
            "repetitions": len(times), "calls_per_repetition": 1,
            "timing": "host clock per epoch" + (", after a warm-up epoch" if warmed else ", NO warm-up epoch"),
            "tflops": None, "gbps": None, "peak_fraction": None, "note": note,
            "images_per_second": images / median, "test_accuracy": accuracy}


def case_name(run):
    a = run.args
    return f"{a.precision} batch {a.batch_size} train {a.train_limit or 'all'} epochs {a.epochs}"


def fastest_compile(rows):
    compiled = [r for v, r in rows.items() if v.startswith("torch.compile")]
    return min(compiled, key=lambda r: r["median_ms"]) if compiled else None


def targets_of(run, rows):
    """The five targets, each met, not met or not measured (with why)."""
    graph, torch_eager = rows.get(GRAPH), rows.get(TORCH)
    found = {}

    def put(key, ok, measured, note=""):
        found[key] = ("met" if ok else "not met", measured, note)

    full = run.args.epochs >= 10 and run.args.train_limit in (0, 60000)
    if graph and full:
        put("accuracy", graph["test_accuracy"] >= 0.91, f"{100 * graph['test_accuracy']:.2f}%")
    elif graph:
        found["accuracy"] = ("not measured", f"{100 * graph['test_accuracy']:.2f}%",
                             f"ran {run.args.epochs} epochs on {graph['case']}, not 10 on the full set")
    if graph and torch_eager:
        gap = abs(graph["test_accuracy"] - torch_eager["test_accuracy"])
        put("agree", gap <= 0.005, f"{100 * gap:.2f} points",
            "" if full else f"after {run.args.epochs} epochs on a subset")
        ratio = graph["median_ms"] / torch_eager["median_ms"]
        put("eager", ratio <= 0.5, f"{1 / ratio:.2f}x")
    best = fastest_compile(rows)
    if graph and best:
        ratio = graph["median_ms"] / best["median_ms"]
        put("compile", ratio <= 1, f"{1 / ratio:.2f}x", f"against {best['variant']}")
    check = run.parts.get("checkpoint in PyTorch")
    if check and graph:
        cudagap = run.parts[GRAPH]["final_test_accuracy"]
        gap = abs(check["test_accuracy"] - cudagap)
        put("checkpoint", gap <= 0.001, f"{100 * gap:.2f} points",
            f"PyTorch {100 * check['test_accuracy']:.2f}%, cudagap {100 * cudagap:.2f}%")
    result = []
    for key, (name, requirement) in TARGETS.items():
        status, measured, note = found.get(key, ("not measured", "", why_not(run, key)))
        result.append({"name": name, "requirement": requirement, "status": status,
                       "measured": measured, "note": note})
    return result


def why_not(run, key):
    """Why target @key was not measured: the first missing part it needs."""
    needs = {"accuracy": [GRAPH], "agree": [GRAPH, TORCH], "eager": [GRAPH, TORCH],
             "compile": [GRAPH, "torch.compile"], "checkpoint": [GRAPH, "checkpoint in PyTorch"]}[key]
    if run.skip_reason:
        return "GPU part skipped"
    for part in needs:
        for variant, why in run.missing.items():
            if variant.startswith(part):
                return f"{variant}: {why}"
    return "a part it needs failed (see errors)"


def ratios_of(run, rows):
    graph = rows.get(GRAPH)
    out = []
    for other in [v for v in rows if v != GRAPH]:
        if graph and not other.startswith("checkpoint"):
            out.append({"case": case_name(run), "numerator": GRAPH, "denominator": other,
                        "value": graph["median_ms"] / rows[other]["median_ms"], "note": "epoch time"})
    return out


def environment(run):
    parts = list(run.parts.values())
    device = next((p.get("device") for p in parts if p.get("device")), None)
    return {"date_utc": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "host": socket.gethostname(), "cpu_threads": os.cpu_count() or 0,
            "cudagap": next((p.get("version") for p in parts if p.get("program") == "cudagap-train"), "unknown"),
            "cuda_runtime": next((p.get("cuda") for p in parts if p.get("cuda")), "unknown"),
            "driver_cuda": "unknown", "driver_version": "unknown",
            "gpu_available": device is not None, "device": device or "none"}


def build_report(run):
    rows = {v: row_of(run, v, r) for v, r in run.parts.items() if "epochs" in r and r["epochs"]}
    notes = [f"{variant}: not measured: {why}" for variant, why in run.missing.items()]
    a = run.args
    notes.append(f"settings: data {a.data}, {a.epochs} epochs, batch {a.batch_size}, AdamW lr {a.lr} "
                 f"weight decay {a.weight_decay}, dropout {a.dropout}, seed {a.seed}, {a.precision}; "
                 "PyTorch: cudnn.benchmark, TF32, loss.item() every step (research_training.py)")
    skipped = bool(run.skip_reason)
    code = 1 if run.errors else (SKIP_EXIT_CODE if skipped else 0)
    return {"schema": "cudagap-bench/1", "benchmark": "train",
            "description": "cudagap-train (eager, --graph) vs the same training in PyTorch "
                           "(eager autocast + GradScaler, torch.compile) on Fashion-MNIST",
            "quick": a.quick, "environment": environment(run), "gpu_skipped": skipped,
            "skip_reason": run.skip_reason, "rows": list(rows.values()), "ratios": ratios_of(run, rows),
            "targets": targets_of(run, rows), "notes": notes, "errors": run.errors, "exit_code": code,
            "train": {"parts": run.parts, "not_measured": run.missing}}


def markdown(report, run):
    lines = ["| variant | math | images/s | epoch (median) | test accuracy | note |",
             "|---|---|---|---|---|---|"]
    for row in report["rows"]:
        lines.append(f"| {row['variant']} | {row['math']} | {row['images_per_second']:,.0f} | "
                     f"{row['median_ms']:.1f} ms | {100 * row['test_accuracy']:.2f}% | {row['timing']} |")
    check = run.parts.get("checkpoint in PyTorch")
    if check:
        lines.append(f"| checkpoint in PyTorch | FP32 | - | - | {100 * check['test_accuracy']:.2f}% | "
                     f"cudagap --graph's checkpoint, load_state_dict(strict=True), read by "
                     f"{check.get('loader', 'safetensors.torch.load_file')} |")
    for variant, why in run.missing.items():
        lines.append(f"| {variant} | - | - | - | - | not measured: {why} |")
    return "\n".join(lines + targets_table(report)) + "\n"


def targets_table(report):
    """The lines that end a script benchmark's Markdown: the targets' table, then the errors."""
    lines = ["", "| target | status | measured | requirement | note |", "|---|---|---|---|---|"]
    for t in report["targets"]:
        lines.append(f"| {t['name']} | **{t['status']}** | {t['measured'] or '-'} | {t['requirement']} | {t['note']} |")
    for error in report["errors"]:
        lines.append(f"\n- **error**: {error}")
    return lines


def publish(report, table, args, trailer=()):
    """Prints a script benchmark's @report as the C++ ones print theirs (the header, the @table,
    the notes, then the @trailer lines) and writes args.json and args.markdown when given."""
    print(f"== cudagap benchmark: {report['benchmark']} ==")
    print(report["description"])
    if report["gpu_skipped"]:
        print(f"GPU part skipped: {report['skip_reason']}")
    print(table)
    for line in [f"- {note}" for note in report["notes"]] + list(trailer):
        print(line)
    for path, text in ((args.json, json.dumps(report, indent=2)), (args.markdown, table)):
        if path:
            with open(path, "w", encoding="utf-8") as stream:
                stream.write(text + "\n")


def main(argv=None):
    args = parse(argv)
    with tempfile.TemporaryDirectory(prefix="cudagap-bench-train.") as tmp:
        run = Run(args, tmp)
        run_all(run)
    report = build_report(run)
    publish(report, markdown(report, run), args,
            [f"{case_name(run)}: the rows above; cases: " + ", ".join(sorted({r['case'] for r in report['rows']}))])
    return report["exit_code"]


if __name__ == "__main__":
    sys.exit(main())
