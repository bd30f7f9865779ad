#!/usr/bin/env python3
"""The other side of bench/infer: cudagap-infer's model served by PyTorch or ONNX Runtime, timed
per request as cudagap-infer times it (host clock from the input on the host to the logits back
on the host), one JSON object on stdout.

  baselines.py --engine torch-eager|torch-compile|onnxruntime --checkpoint CK.safetensors
               [--model M.onnx] [--precision fp16|bf16|fp32] [--batch-sizes 1,32,256]
               [--requests N] [--warmup N] [--max-seconds S] [--seed S]
               [--compare-outputs OUT.safetensors]

- torch-eager: the InferenceWrapper: the model (bench/train/torch_train.py's, the
  names of cudagap's checkpoint) loaded from CK with load_state_dict(strict=True), eval(),
  `torch.inference_mode()` and `torch.autocast` in the precision (FP32: none, TF32 allowed, as
  cudagap's production profile), cudnn.benchmark on; the input in pinned host memory, copied
  with non_blocking=True, the logits copied back with .cpu().
- torch-compile: the same under torch.compile(mode="reduce-overhead", dynamic=False): CUDA graph
  capture and replay, one graph per batch size; its compilation is in "setup_seconds".
- onnxruntime: M (cudagap-infer --export-onnx, FP32) in an InferenceSession on the CUDA provider
  when onnxruntime has one (TF32 allowed, its default), else the CPU; with --compare-outputs,
  also compare_onnx.py's check of cudagap's logits (TF32 off there).

Each batch size: --warmup untimed requests, then --requests timed ones, stopped after
--max-seconds (at least 5 requests). Output: {"ok": true, "engine", "device", "provider",
"version", "math", "setup_seconds", "results": [{"batch_size", "requests", "latency_ms": {"p50",
"p90", "p99", "mean", "min", "max"}, "images_per_second"}], "comparison"?}. Exit code 0, also
with {"ok": false, "reason"} when torch, CUDA or onnxruntime is missing (not measured); 1 with
{"ok": false, "error"} when it failed; 2 a bad command line. Only the JSON goes to stdout.
"""

import argparse
import contextlib
import json
import math
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "train"))
import compare_onnx  # noqa: E402 (this folder's)
import torch_train  # noqa: E402 (bench/train's model, checkpoint reader, autocast; torch is imported later)

MIN_REQUESTS = 5
MATH = {"fp16": "FP16", "bf16": "BF16", "fp32": "TF32"}


class Skip(Exception):
    """What this engine needs is not here: not measured."""


def percentile(sorted_values, fraction):
    """The @fraction quantile of @sorted_values, interpolated between ranks (numpy's default)."""
    position = fraction * (len(sorted_values) - 1)
    low = math.floor(position)
    high = min(low + 1, len(sorted_values) - 1)
    return sorted_values[low] + (sorted_values[high] - sorted_values[low]) * (position - low)


def measure(call, batch, requests, warmup, max_seconds):
    """Times @call once per request; the result entry of one batch size."""
    for _ in range(warmup):
        call()
    times = []
    start = time.perf_counter()
    for _ in range(requests):
        begin = time.perf_counter()
        call()
        times.append(time.perf_counter() - begin)
        if len(times) >= MIN_REQUESTS and time.perf_counter() - start > max_seconds:
            break
    total = time.perf_counter() - start
    ordered = sorted(1000 * t for t in times)
    latency = {"p50": percentile(ordered, 0.5), "p90": percentile(ordered, 0.9),
               "p99": percentile(ordered, 0.99), "mean": sum(ordered) / len(ordered),
               "min": ordered[0], "max": ordered[-1]}
    return {"batch_size": batch, "requests": len(times), "latency_ms": latency,
            "images_per_second": batch * len(times) / total}


def torch_engine(args):
    """PyTorch eager or torch.compile(mode="reduce-overhead"): the report's fields."""
    try:
        torch = torch_train.import_torch()
    except torch_train.Skip as why:
        raise Skip(str(why)) from None
    state, loader = torch_train.load_state(torch, args.checkpoint)
    model = torch_train.build_model(torch, 0.0)
    model.load_state_dict(state, strict=True)
    model = model.to("cuda").eval()
    torch.backends.cudnn.benchmark = True
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.allow_tf32 = True
    compiled = args.engine == "torch-compile"
    runner = torch.compile(model, mode="reduce-overhead", dynamic=False) if compiled else model
    generator = torch.Generator(device="cuda").manual_seed(args.seed)
    results, setup = [], 0.0
    for batch in args.batch_sizes:
        host = torch.randn(batch, 1, 28, 28, device="cuda", generator=generator).cpu().pin_memory()

        def call():
            with torch.inference_mode(), torch_train.autocast_of(torch, args.precision):
                return runner(host.to("cuda", non_blocking=True)).float().cpu()

        begin = time.perf_counter()
        call()  # torch.compile compiles here; reduce-overhead records its graph over the next calls
        setup += time.perf_counter() - begin
        results.append(measure(call, batch, args.requests, max(args.warmup, 3 if compiled else 0), args.max_seconds))
    return {"device": torch.cuda.get_device_name(0), "provider": "cuda", "version": f"torch {torch.__version__}",
            "math": MATH[args.precision], "loader": loader, "setup_seconds": setup, "results": results}


def onnxruntime_engine(args):
    """ONNX Runtime on cudagap's export: the report's fields (and the comparison)."""
    try:
        numpy, onnxruntime = compare_onnx.import_runtime()
    except compare_onnx.Skip as why:
        raise Skip(str(why)) from None
    if not args.model or not os.path.isfile(args.model):
        raise torch_train.DataError(f"no ONNX model at {args.model} (cudagap-infer --export-onnx writes it)")
    begin = time.perf_counter()
    session, provider = compare_onnx.make_session(onnxruntime, args.model, "auto", tf32=True)
    setup = time.perf_counter() - begin
    rng = numpy.random.default_rng(args.seed)
    results = []
    for batch in args.batch_sizes:
        feed = {"input": rng.standard_normal((batch, 1, 28, 28)).astype(numpy.float32)}
        results.append(measure(lambda: session.run(["output"], feed), batch, args.requests, args.warmup,
                               args.max_seconds))
    cuda = provider == "CUDAExecutionProvider"
    report = {"device": "cuda" if cuda else "cpu", "provider": provider,
              "version": f"onnxruntime {onnxruntime.__version__}", "math": "TF32" if cuda else "FP32",
              "setup_seconds": setup, "results": results}
    if args.compare_outputs:  # cudagap-infer ran under its production profile: FP32 is TF32 there
        tolerance = "tf32" if args.precision == "fp32" else args.precision
        report["comparison"] = compare_onnx.compare(args.compare_outputs, args.model, tolerance)
    return report


def batch_sizes(text):
    try:
        sizes = [int(part) for part in text.split(",")]
    except ValueError:
        sizes = []
    if not sizes or any(size < 1 or size > 65536 for size in sizes):
        raise argparse.ArgumentTypeError(f"expected batch sizes from 1 to 65536 separated by commas, got {text}")
    return sizes


def parse(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--engine", choices=("torch-eager", "torch-compile", "onnxruntime"), required=True)
    parser.add_argument("--checkpoint", required=True)
    parser.add_argument("--model", help="the ONNX model (onnxruntime)")
    parser.add_argument("--precision", choices=("fp16", "bf16", "fp32"), default="fp16")
    parser.add_argument("--batch-sizes", type=batch_sizes, default=[1, 32, 256])
    parser.add_argument("--requests", type=torch_train.positive, default=1000)
    parser.add_argument("--warmup", type=torch_train.count, default=20)
    parser.add_argument("--max-seconds", type=torch_train.positive_float, default=10.0,
                        help="stop a batch size's timed requests after this long")
    parser.add_argument("--seed", type=torch_train.count, default=42)
    parser.add_argument("--compare-outputs", metavar="FILE", help="cudagap-infer --outputs FILE (onnxruntime)")
    return parser.parse_args(argv)


def main(argv=None):
    args = parse(argv)
    engine = onnxruntime_engine if args.engine == "onnxruntime" else torch_engine
    try:
        problems = torch_train.checkpoint_problems(args.checkpoint)
        if problems:
            raise torch_train.DataError(f"{args.checkpoint} is not this model's checkpoint: " + "; ".join(problems))
        with contextlib.redirect_stdout(sys.stderr):  # a library's chatter must not spoil the JSON
            report = engine(args)
    except Skip as why:
        print(json.dumps({"ok": False, "engine": args.engine, "reason": str(why)}))
        return 0
    except Exception as error:  # noqa: BLE001 (any failure of the engine is reported, not a traceback)
        print(f"baselines.py: {args.engine}: {type(error).__name__}: {error}", file=sys.stderr)
        print(json.dumps({"ok": False, "engine": args.engine, "error": f"{type(error).__name__}: {error}"}))
        return 1
    report.update(ok=True, program="baselines.py", engine=args.engine, precision=args.precision)
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
