#!/usr/bin/env python3
"""bench/infer: cudagap-infer (eager and CUDA graph replay) against the same model served by
PyTorch eager, torch.compile(mode="reduce-overhead") and ONNX Runtime, in one run.

Every part loads the same checkpoint (--checkpoint, e.g. cudagap-train --save's; without one, a
file of random weights this script writes): cudagap-infer reads it and exports it to ONNX
(--export-onnx), PyTorch loads it with load_state_dict(strict=True) (baselines.py), ONNX
Runtime runs cudagap's export. A cudagap-infer built without the ONNX C++ library (its --version
says "ONNX export: no", as on a GPU host without libonnx-dev) exports nothing: the model is then
made from the same checkpoint by onnx_twin.py, the Python twin of its exporter (the same graph,
proven against it in CI), and the report says so (a note, the ONNX target's note, and
infer.onnx_model in the JSON). Each reports, for each batch size (1, 32, 256), the latency of a
request (host clock from the input on the host to the logits back on the host: what a server
sees) at p50/p90/p99 and images/s. cudagap-infer also writes its logits for the first test
images (--outputs) and the ONNX Runtime part checks them against its own (compare_onnx.py).

Targets, reported, not asserted: batch-1 p50 of cudagap graph <= 0.5x torch.compile
reduce-overhead's; batch-256 images/s of cudagap graph >= torch.compile's; p99/p50 of cudagap
graph <= 1.5 at every batch size; cudagap's logits within the precision's tolerance of ONNX
Runtime's. A part that cannot run (no cudagap-infer, no GPU, no torch or no CUDA in it, no
onnxruntime, the budget spent) is a line "not measured: <reason>". Exit code: 0 when it ran;
77 when cudagap-infer found no GPU (the GPU part skipped; ONNX Runtime may still have run on the
CPU); 1 when a part failed (the others still ran); 2 for a bad command line.
"""

import argparse
import importlib.util
import math
import os
import random
import shutil
import socket
import subprocess
import sys
import tempfile
from datetime import datetime, timezone

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "train"))
import safetensors_file  # noqa: E402 (this folder's)
import torch_train  # noqa: E402 (the model's names and shapes, the data check; no torch imported)

# bench/train's driver, for its helpers (the data check, reading a part's JSON).
_spec = importlib.util.spec_from_file_location("train_run", os.path.join(HERE, "..", "train", "run.py"))
train_run = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(train_run)

SKIP_EXIT_CODE = 77
MATH = {"fp16": "FP16", "bf16": "BF16", "fp32": "TF32"}
GRAPH, EAGER, TORCH, COMPILE, ORT = ("cudagap graph", "cudagap eager", "torch eager",
                                     "torch.compile (reduce-overhead)", "onnxruntime")
TARGETS = {
    "latency": ("batch-1 p50 latency of cudagap graph <= 0.5x torch.compile reduce-overhead",
                "p50 latency ratio cudagap graph / torch.compile (reduce-overhead) at batch 1 <= 0.5"),
    "throughput": ("batch-256 images/s of cudagap graph >= torch.compile",
                   "images/s ratio cudagap graph / torch.compile (reduce-overhead) at batch 256 >= 1"),
    "tail": ("p99/p50 <= 1.5", "cudagap graph's p99 latency / p50 latency <= 1.5 at every batch size"),
    "onnx": ("cudagap's logits match ONNX Runtime's",
             "every logit within the precision's tolerance x the largest (FP16 1e-2, BF16 5e-2, TF32 1e-2), "
             "and the same predictions (compare_onnx.py)"),
}


def positive(text):
    return torch_train.positive(text)


def batch_sizes(text):
    try:
        sizes = [int(part) for part in text.split(",")]
    except ValueError:
        sizes = []
    if not sizes or any(size < 1 or size > 65536 for size in sizes) or len(set(sizes)) != len(sizes):
        raise argparse.ArgumentTypeError(f"expected distinct batch sizes from 1 to 65536 separated by commas, got {text}")
    return sizes


def parse(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--checkpoint", help="a cudagap-train --save file (default: random weights)")
    parser.add_argument("--data", default=torch_train.DEFAULT_DATA)
    parser.add_argument("--precision", choices=("fp16", "bf16", "fp32"), default="fp16")
    parser.add_argument("--batch-sizes", type=batch_sizes, default=[1, 32, 256])
    parser.add_argument("--buckets", help="cudagap-infer's buckets (default: its own)")
    parser.add_argument("--requests", type=positive, default=None, help="per batch size and part (default 1000, --quick 100)")
    parser.add_argument("--warmup", type=torch_train.count, default=None, help="default 20 (--quick 5)")
    parser.add_argument("--max-seconds", type=torch_train.positive_float, default=None,
                        help="PyTorch's and ONNX Runtime's timed requests of one batch size stop after this long (default 10, --quick 2)")
    parser.add_argument("--test-limit", type=torch_train.count, default=None,
                        help="test images cudagap-infer's accuracy uses (default 0: all; --quick 1000)")
    parser.add_argument("--seed", type=torch_train.count, default=42)
    parser.add_argument("--budget", type=torch_train.non_negative_float, default=0,
                        help="seconds for the whole run (0: none); a part that no longer has its time is not run")
    parser.add_argument("--compile-seconds", type=torch_train.non_negative_float, default=60,
                        help="the time torch.compile needs (its compilation included) to be started")
    parser.add_argument("--cudagap-infer", default=None, help="the program (default $CUDAGAP_INFER, else PATH)")
    parser.add_argument("--python", default=sys.executable, help="the python3 that runs baselines.py and onnx_twin.py")
    parser.add_argument("--baselines-script", default=os.path.join(HERE, "baselines.py"))
    parser.add_argument("--twin-script", default=os.path.join(HERE, "onnx_twin.py"),
                        help="makes the ONNX model when cudagap-infer has no exporter")
    parser.add_argument("--quick", action="store_true", help="100 requests per batch size, 1000 test images")
    parser.add_argument("--no-torch", action="store_true", help="skip PyTorch")
    parser.add_argument("--no-onnxruntime", action="store_true", help="skip ONNX Runtime")
    parser.add_argument("--cpu-only", action="store_true", help="skip the GPU part (ONNX Runtime on the CPU only)")
    parser.add_argument("--json", metavar="FILE")
    parser.add_argument("--markdown", metavar="FILE")
    args = parser.parse_args(argv)
    defaults = {"requests": (1000, 100), "warmup": (20, 5), "max_seconds": (10.0, 2.0), "test_limit": (0, 1000)}
    for name, (full, quick) in defaults.items():
        if getattr(args, name) is None:
            setattr(args, name, quick if args.quick else full)
    if args.cudagap_infer is None:
        args.cudagap_infer = os.environ.get("CUDAGAP_INFER") or shutil.which("cudagap-infer")
    return args


def write_random_checkpoint(path, seed):
    """The model's tensors with PyTorch's default initialisation (uniform in +-1/sqrt(fan in)),
    from @seed: the weights every part loads when no checkpoint is given."""
    rng = random.Random(seed)
    tensors = {}
    for name, shape in torch_train.STATE_SHAPES.items():
        bound = 1.0 / math.sqrt(math.prod(torch_train.STATE_SHAPES[name.replace(".bias", ".weight")][1:]))
        tensors[name] = (shape, [rng.uniform(-bound, bound) for _ in range(math.prod(shape))])
    safetensors_file.write(path, tensors, {"format": "pt"})


class Run(train_run.Run):
    """One benchmark run: its files, and as bench/train's, the parts measured, the ones not (with
    why), the errors, and the budget (left(), execute()); where the ONNX model came from."""

    label = "infer"

    def __init__(self, args, tmp):
        super().__init__(args, tmp)
        self.checkpoint = args.checkpoint or os.path.join(tmp, "random.safetensors")
        self.model = os.path.join(tmp, "model.onnx")
        self.outputs = os.path.join(tmp, "outputs.safetensors")
        self.onnx_origin = None  # {"exporter": ..., "note": ...} once a model was made


EXPORTER, TWIN = "cudagap-infer --export-onnx", "bench/infer/onnx_twin.py"


def exports_onnx(program):
    """(whether @program's --export-onnx works, the line that says so) from its --version. A
    program whose --version does not say is taken to export (it then says why not itself)."""
    try:
        done = subprocess.run([program, "--version"], capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired) as error:
        return True, f"{program} --version failed: {error}"
    line = next((text for text in done.stdout.splitlines() if text.startswith("ONNX export:")), "")
    return not line.startswith("ONNX export: no"), line or f"{program} --version does not say"


def run_twin(run, why):
    """The ONNX model made from the checkpoint by onnx_twin.py, as cudagap-infer cannot (@why)."""
    command = [run.args.python, run.args.twin_script, "--checkpoint", run.checkpoint, "--out", run.model]
    done = run.execute(ORT, command, 5)
    if done is None:
        return
    if done.returncode != 0 or not os.path.isfile(run.model):
        last = ((done.stdout + done.stderr).strip().splitlines() or ["no message"])[-1]
        run.missing[ORT] = f"no ONNX model: cudagap-infer has none ({why}) and onnx_twin.py exited {done.returncode}: {last[:200]}"
        return
    run.onnx_origin = {"exporter": TWIN, "note": f"ONNX model made by {TWIN}, the Python twin of cudagap-infer's "
                                                 f"exporter, from the same checkpoint: this cudagap-infer has none ({why})"}


def cudagap_command(run, program, report_file, exports):
    """cudagap-infer's command line: both modes, its outputs, its report, and --export-onnx when
    it @exports."""
    a = run.args
    command = [program, "--checkpoint", run.checkpoint, "--precision", a.precision,
               "--batch-sizes", ",".join(map(str, a.batch_sizes)), "--requests", str(a.requests),
               "--warmup", str(a.warmup), "--mode", "both", "--test-limit", str(a.test_limit),
               *(["--export-onnx", run.model] if exports else []), "--outputs", run.outputs,
               "--json", report_file, "--quiet"]
    if a.buckets:
        command += ["--buckets", a.buckets]
    if not train_run.missing_data(a.data):
        command += ["--data", a.data]
    return command


def run_cudagap(run):
    """cudagap-infer, eager and graph, exporting the model and writing its outputs."""
    a = run.args
    program = a.cudagap_infer
    if not program or not os.access(program, os.X_OK):
        why = (f"{program} is not an executable" if program else
               "cudagap-infer is not built here (examples/production_inference; give --cudagap-infer PATH)")
        run.missing.update({GRAPH: why, EAGER: why})
        return
    report_file = os.path.join(run.tmp, "cudagap.json")
    exports, why = exports_onnx(program)
    done = run.execute("cudagap", cudagap_command(run, program, report_file, exports))
    if done is None:
        if "cudagap" in run.missing:
            why = run.missing.pop("cudagap")
            run.missing.update({GRAPH: why, EAGER: why})
        return
    if exports and os.path.isfile(run.model):
        run.onnx_origin = {"exporter": EXPORTER, "note": f"ONNX model exported by {EXPORTER}"}
    elif not exports:
        run_twin(run, why)
    report = train_run.read_json(report_file)
    if done.returncode != 0 or report is None:
        last = (done.stderr.strip().splitlines() or ["no message"])[-1]
        run.errors.append(f"cudagap: cudagap-infer exited {done.returncode}: {last[:200]}")
    elif not report.get("gpu_available", False):
        run.skip_reason = report.get("reason") or "cudagap-infer found no usable GPU"
        run.missing.update({GRAPH: f"no GPU: {run.skip_reason}", EAGER: f"no GPU: {run.skip_reason}"})
    else:
        run.parts["cudagap"] = report


def run_baseline(run, variant, engine, extra=(), minimum=10):
    """baselines.py --engine @engine; its report is stored under @variant, or why not."""
    a = run.args
    command = [a.python, a.baselines_script, "--engine", engine, "--checkpoint", run.checkpoint,
               "--precision", a.precision, "--batch-sizes", ",".join(map(str, a.batch_sizes)),
               "--requests", str(a.requests), "--warmup", str(a.warmup), "--max-seconds", str(a.max_seconds),
               "--seed", str(a.seed), *extra]
    done = run.execute(variant, command, minimum)
    if done is None:
        return
    lines = done.stdout.strip().splitlines()
    report = train_run.parse_json(lines[-1]) if lines else None
    if report is None or done.returncode not in (0, 1):
        last = (done.stderr.strip().splitlines() or [""])[-1]
        run.errors.append(f"{variant}: baselines.py exited {done.returncode} without a report: {last[:200]}")
    elif not report.get("ok"):
        if done.returncode == 0:
            run.missing[variant] = report.get("reason", "baselines.py said no")
        else:
            run.errors.append(f"{variant}: {report.get('error', 'failed')}")
    else:
        run.parts[variant] = report


def run_all(run):
    a = run.args
    if not a.checkpoint:
        write_random_checkpoint(run.checkpoint, a.seed)
    if a.cpu_only:
        run.skip_reason = "--cpu-only"
        run.missing.update({v: "--cpu-only" for v in (GRAPH, EAGER, TORCH, COMPILE)})
    else:
        run_cudagap(run)
        if a.no_torch:
            run.missing[TORCH] = "--no-torch"
        else:
            run_baseline(run, TORCH, "torch-eager")
    if a.no_onnxruntime:
        run.missing[ORT] = "--no-onnxruntime"
    elif ORT in run.missing:
        pass  # no model: the twin said why
    elif not os.path.isfile(run.model):
        run.missing[ORT] = "no ONNX model: cudagap-infer --export-onnx did not run or wrote none"
    else:
        compare = ["--compare-outputs", run.outputs] if os.path.isfile(run.outputs) else []
        run_baseline(run, ORT, "onnxruntime", ["--model", run.model, *compare])
    if a.cpu_only:
        return
    if a.no_torch:
        run.missing[COMPILE] = "--no-torch"
    elif TORCH not in run.parts:  # the same reason, or torch eager failed (see errors)
        run.missing[COMPILE] = run.missing.get(TORCH, f"not run: {TORCH} failed")
    else:
        run_baseline(run, COMPILE, "torch-compile", minimum=a.compile_seconds)


# ---- the report -------------------------------------------------------------------------------

def entries(run):
    """(variant, math, note, result entry) of every measured batch size of every part."""
    found = []
    cudagap = run.parts.get("cudagap")
    if cudagap:
        for entry in cudagap.get("results", []):
            variant = GRAPH if entry.get("mode") == "graph" else EAGER
            found.append((variant, MATH[run.args.precision], f"bucket {entry.get('bucket', '?')}", entry))
    for variant in (TORCH, COMPILE, ORT):
        part = run.parts.get(variant)
        if not part:
            continue
        name = variant
        if variant == ORT:
            name = f"{ORT} ({'CUDA' if part.get('provider') == 'CUDAExecutionProvider' else 'CPU'})"
        setup = f"setup {part.get('setup_seconds', 0):.1f} s" + (" (compilation, graph capture)" if variant == COMPILE else "")
        for entry in part.get("results", []):
            found.append((name, part.get("math", "-"), setup, entry))
    return found


def row_of(run, variant, math_mode, note, entry):
    latency = entry["latency_ms"]
    p50, p90, p99 = latency["p50"], latency["p90"], latency["p99"]
    low, high = latency.get("min", p50), latency.get("max", p99)
    extremes = "min/max" if "min" in latency and "max" in latency else "min/max not reported: p50/p99 instead"
    return {"case": f"batch {entry['batch_size']} {run.args.precision}", "variant": variant, "math": math_mode,
            "median_ms": p50, "min_ms": min(low, p50), "max_ms": max(high, p50),
            "spread": (max(high, p50) - min(low, p50)) / p50 if p50 else 0.0,
            "repetitions": int(entry["requests"]), "calls_per_repetition": 1,
            "timing": f"host clock per request, input on the host to logits on the host; median = p50 ({extremes})",
            "tflops": None, "gbps": None, "peak_fraction": None,
            "note": f"p90 {p90:.3f} ms, p99 {p99:.3f} ms, p99/p50 {p99 / p50:.2f}, "
                    f"{entry['images_per_second']:,.0f} images/s; {note}",
            "batch_size": entry["batch_size"], "latency_ms": latency,
            "images_per_second": entry["images_per_second"]}


def find(rows, variant, batch):
    return next((r for r in rows if r["variant"] == variant and r["batch_size"] == batch), None)


def targets_of(run, rows):
    """The four targets: met, not met, or not measured with why."""
    found = {}
    graph1, compile1 = find(rows, GRAPH, 1), find(rows, COMPILE, 1)
    if graph1 and compile1:
        ratio = graph1["median_ms"] / compile1["median_ms"]
        found["latency"] = ("met" if ratio <= 0.5 else "not met", f"{ratio:.2f}x",
                            f"p50 {graph1['median_ms']:.3f} ms vs {compile1['median_ms']:.3f} ms")
    graph256, compile256 = find(rows, GRAPH, 256), find(rows, COMPILE, 256)
    if graph256 and compile256:
        ratio = graph256["images_per_second"] / compile256["images_per_second"]
        found["throughput"] = ("met" if ratio >= 1 else "not met", f"{ratio:.2f}x",
                               f"{graph256['images_per_second']:,.0f} vs {compile256['images_per_second']:,.0f} images/s")
    graphs = [r for r in rows if r["variant"] == GRAPH]
    if graphs:
        worst = max(graphs, key=lambda r: r["latency_ms"]["p99"] / r["median_ms"])
        tail = worst["latency_ms"]["p99"] / worst["median_ms"]
        found["tail"] = ("met" if tail <= 1.5 else "not met", f"{tail:.2f}",
                         f"worst at batch {worst['batch_size']} of {len(graphs)} batch sizes")
    comparison = (run.parts.get(ORT) or {}).get("comparison")
    if comparison:
        found["onnx"] = onnx_target(run, comparison)
    result = []
    for key, (name, requirement) in TARGETS.items():
        status, measured, note = found.get(key, ("not measured", "", why_not(run, key)))
        result.append({"name": name, "requirement": requirement, "status": status, "measured": measured, "note": note})
    return result


def onnx_target(run, comparison):
    """(status, measured, note) of the ONNX target from compare_onnx.py's @comparison; the note
    names the Python twin when it made the model."""
    twin = (run.onnx_origin or {}).get("exporter") == TWIN
    return ("met" if comparison["ok"] else "not met", f"{comparison['max_error_over_scale']:.2g} x the largest logit",
            f"{comparison['images']} images on {comparison.get('provider')}; predictions agree on "
            f"{comparison['argmax_agree']} of {comparison['argmax_compared']} clear calls"
            + (" (the model from the Python twin of cudagap's exporter)" if twin else ""))


def why_not(run, key):
    """Why target @key was not measured: the first missing part it needs."""
    if run.skip_reason:
        return "GPU part skipped"
    needs = {"latency": [GRAPH, COMPILE], "throughput": [GRAPH, COMPILE], "tail": [GRAPH], "onnx": [GRAPH, ORT]}[key]
    for part in needs:
        if part in run.missing:
            return f"{part}: {run.missing[part]}"
    sizes = {"latency": 1, "throughput": 256}
    if key in sizes and sizes[key] not in run.args.batch_sizes:
        return f"batch size {sizes[key]} is not among --batch-sizes"
    return "a part it needs failed (see errors)"


def ratios_of(rows):
    out = []
    for row in rows:
        graph = find(rows, GRAPH, row["batch_size"])
        if graph and row["variant"] != GRAPH:
            out.append({"case": row["case"], "numerator": GRAPH, "denominator": row["variant"],
                        "value": graph["median_ms"] / row["median_ms"], "note": "p50 latency per request"})
    return out


def environment(run):
    parts = list(run.parts.values())
    device = next((p.get("device") for p in parts if p.get("device") not in (None, "cpu", "cuda")), None)
    cudagap = run.parts.get("cudagap") or {}
    return {"date_utc": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "host": socket.gethostname(), "cpu_threads": os.cpu_count() or 0,
            "cudagap": cudagap.get("version", "unknown"), "cuda_runtime": "unknown",
            "driver_cuda": "unknown", "driver_version": "unknown",
            "gpu_available": device is not None, "device": device or "none"}


def build_report(run):
    rows = [row_of(run, *entry) for entry in entries(run)]
    rows.sort(key=lambda r: (r["batch_size"], r["variant"]))
    a = run.args
    notes = [f"{variant}: not measured: {why}" for variant, why in run.missing.items()]
    weights = f"checkpoint {a.checkpoint}" if a.checkpoint else f"random weights (seed {a.seed}): predictions meaningless"
    notes.append(f"settings: {a.precision}, batch sizes {a.batch_sizes}, {a.requests} requests per batch size "
                 f"after {a.warmup} warm-up ones (PyTorch and ONNX Runtime: at most {a.max_seconds:g} s each); "
                 f"every part loads the same {weights}")
    cudagap = run.parts.get("cudagap")
    if cudagap and cudagap.get("test_accuracy"):
        notes.append(f"cudagap-infer's test accuracy on {cudagap.get('test_images')} images: "
                     + ", ".join(f"{mode} {100 * value:.2f}%" for mode, value in cudagap["test_accuracy"].items()))
    if run.onnx_origin:
        notes.append(run.onnx_origin["note"])
    comparison = (run.parts.get(ORT) or {}).get("comparison")
    if comparison:
        notes.append("cudagap against ONNX Runtime: largest difference "
                     f"{comparison['max_abs_error']:.3g} (largest logit {comparison['scale']:.3g}), "
                     f"close calls {comparison['close_calls']} ({comparison['close_calls_swapped']} swapped)")
    skipped = bool(run.skip_reason)
    code = 1 if run.errors else (SKIP_EXIT_CODE if skipped else 0)
    return {"schema": "cudagap-bench/1", "benchmark": "infer",
            "description": "cudagap-infer (eager, CUDA graph replay) vs PyTorch eager, torch.compile "
                           "(reduce-overhead) and ONNX Runtime serving the same checkpoint",
            "quick": a.quick, "environment": environment(run), "gpu_skipped": skipped,
            "skip_reason": run.skip_reason, "rows": rows, "ratios": ratios_of(rows),
            "targets": targets_of(run, rows), "notes": notes, "errors": run.errors, "exit_code": code,
            "infer": {"parts": run.parts, "not_measured": run.missing, "onnx_model": run.onnx_origin}}


def markdown(report, run):
    lines = ["| batch | variant | math | p50 | p90 | p99 | p99/p50 | images/s | requests |",
             "|---|---|---|---|---|---|---|---|---|"]
    for row in report["rows"]:
        lat = row["latency_ms"]
        lines.append(f"| {row['case']} | {row['variant']} | {row['math']} | {lat['p50']:.3f} ms | {lat['p90']:.3f} ms | "
                     f"{lat['p99']:.3f} ms | {lat['p99'] / lat['p50']:.2f} | {row['images_per_second']:,.0f} | "
                     f"{row['repetitions']} |")
    for variant, why in run.missing.items():
        lines.append(f"| - | {variant} | - | - | - | - | - | - | not measured: {why} |")
    return "\n".join(lines + train_run.targets_table(report)) + "\n"


def main(argv=None):
    args = parse(argv)
    with tempfile.TemporaryDirectory(prefix="cudagap-bench-infer.") as tmp:
        run = Run(args, tmp)
        run_all(run)
    report = build_report(run)
    train_run.publish(report, markdown(report, run), args)
    return report["exit_code"]


if __name__ == "__main__":
    sys.exit(main())
