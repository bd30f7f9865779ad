#!/usr/bin/env python3
"""The PyTorch side of cudagap's benchmarks.

The C++ benchmarks (bench/*/) run this script through the harness
(gpu::bench::report::compare_torch) to put PyTorch beside cudagap in the same run, on the same
sizes and settings, timed the same way and stopped by the same rule: warm-up calls first, then
samples of back-to-back calls timed with CUDA events (host clock for allocation, which is host
work) until their relative standard deviation is at most --max-noise after --min-samples, or
--time-limit passes (nvbench's rule, as bench/harness/sampling.hpp applies it); the median per
call is reported with the noise reached and why sampling stopped. Where asked, a case also gets
single calls on an idle stream ("single_call"), the batch's calls captured once into a
torch.cuda.CUDAGraph and replayed ("graph"), and single calls with the L2 flushed before each
by a write of twice its size ("cold").

Subcommands (see --help of each):

  gemm   torch.mm on square matrices (out= a preallocated result, like cudagap's GEMM)
           --sizes 1000,2000,4096 --precisions fp32,tf32,fp16,bf16
           [--single-call-sizes 1000 --graph-sizes 1000 --cold-sizes 1000]
           fp32: torch.backends.cuda.matmul.allow_tf32 = False; tf32: True.
           case name: "<n> <precision>", e.g. "4096 fp16"
  conv   torch.nn.functional.conv2d, cudnn.benchmark = True, allow_tf32 off for fp32
           --batch 32 --in-channels 3 --height 224 --width 224 --out-channels 64 --kernel 3
           --padding 1 [--stride 1] --dtype fp32[,fp16] --layout nchw[,nhwc]
           [--single-call] [--graph] [--cold]
           case name: "N<batch> C<in> <h>x<w> K<out> <k>x<k> pad<p> stride<s> <dtype> <layout>"
  alloc  torch.empty(bytes, dtype=uint8) then dropped, caching allocator warm
           --sizes 4096,1048576,67108864,430964736
           case name: the size as "4 KiB", "1 MiB", "411 MiB" (exact binary units, else "<n> B")
  allreduce  torch.distributed.all_reduce (in place, SUM, FP32) in a process group of one rank,
           backend nccl (init through a file in a temporary folder)
           --sizes 1048576,67108864 (bytes)
           case name: "<size> in-place", e.g. "64 MiB in-place"

Common flags: --warmup N, --max-noise PCT (0.5), --min-samples N (10), --time-limit SECONDS
(0.5) or --repetitions N (a fixed count instead), --calls N|auto (auto: enough calls for about
--target-ms per sample, at most 10000).

Output: one JSON object on stdout (everything else goes to stderr):
  {"ok": true, "torch": "<version>", "device": "<name>", "results": [
     {"case": "4096 fp16", "median_ms": x, "min_ms": x, "max_ms": x, "repetitions": n,
      "calls_per_repetition": n, "timing": "CUDA events", "noise": x|null,
      "stopped": "noise target"|"time limit"|"sample cap"|"fixed count", "max_noise": x|null,
      "min_samples": n, "host_ms": x, "single_call"|"graph"|"cold": {the same timing fields},
      ...fields of the case}, ...],
   "errors": [{"case": "...", "error": "..."}]}
or {"ok": false, "reason": "<why>"} when torch cannot be imported or sees no CUDA device.
Exit code 0 in both cases (a missing torch is a skip, not a failure); 2 for a bad command line.
"""

import argparse
import json
import math
import statistics
import sys
import time

PRECISIONS = ("fp32", "tf32", "fp16", "bf16")
CONV_DTYPES = ("fp32", "fp16", "bf16")
LAYOUTS = ("nchw", "nhwc")


def progress(message):
    print(f"[compare_torch] {message}", file=sys.stderr, flush=True)


def positive_int_list(text):
    try:
        values = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a comma-separated list of integers")
    if not values or any(v <= 0 for v in values):
        raise argparse.ArgumentTypeError(f"'{text}' must list positive integers")
    return values


def choice_list(choices):
    def parse(text):
        values = [part.strip() for part in text.split(",") if part.strip()]
        bad = [v for v in values if v not in choices]
        if not values or bad:
            raise argparse.ArgumentTypeError(
                f"'{text}': each entry must be one of {', '.join(choices)}")
        return values
    return parse


def int_at_least(minimum, words):
    """An argparse type: an integer of at least @minimum, described as @words when it is not."""
    def parse(text):
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"'{text}' is not an integer")
        if value < minimum:
            raise argparse.ArgumentTypeError(f"'{text}' must be {words}")
        return value
    return parse


positive_int = int_at_least(1, "at least 1")
non_negative_int = int_at_least(0, "0 or more")


def sample_count(text):
    value = positive_int(text)
    if value > MAX_SAMPLES:
        raise argparse.ArgumentTypeError(f"'{text}' must be at most {MAX_SAMPLES}")
    return value


def positive_float(text):
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a number")
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"'{text}' must be a positive number")
    return value


def size_list(text):
    """A comma-separated list of positive integers, or nothing ("")."""
    return positive_int_list(text) if text.strip() else []


def calls_value(text):
    return "auto" if text == "auto" else positive_int(text)


def size_name(size):
    """The case name of an allocation size: exact binary units, as the C++ side names them."""
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size >= scale and size % scale == 0:
            return f"{size // scale} {unit}"
    return f"{size} B"


def conv_case_name(args, dtype, layout):
    return (f"N{args.batch} C{args.in_channels} {args.height}x{args.width} K{args.out_channels} "
            f"{args.kernel}x{args.kernel} pad{args.padding} stride{args.stride} {dtype} {layout}")


def build_parser():
    parser = argparse.ArgumentParser(
        description="The PyTorch side of cudagap's benchmarks (see the module docstring).")
    sub = parser.add_subparsers(dest="command", required=True)

    def common(p):
        p.add_argument("--warmup", type=non_negative_int, default=3, help="untimed calls first")
        p.add_argument("--repetitions", type=positive_int, default=None,
                       help="a fixed number of samples (default: stop by the noise rule)")
        p.add_argument("--max-noise", type=positive_float, default=0.5,
                       help="stop at this relative standard deviation, in percent (0.5)")
        p.add_argument("--min-samples", type=sample_count, default=10,
                       help="... after at least this many samples (10)")
        p.add_argument("--time-limit", type=positive_float, default=0.5,
                       help="... or after this many seconds per measurement (0.5)")
        p.add_argument("--calls", type=calls_value, default="auto",
                       help="back-to-back calls per sample, or 'auto' (default)")
        p.add_argument("--target-ms", type=float, default=20.0,
                       help="with --calls auto: about this long per sample")
        p.set_defaults(flush=None)

    gemm = sub.add_parser("gemm", help="torch.mm on square matrices")
    gemm.add_argument("--sizes", type=positive_int_list, required=True)
    gemm.add_argument("--precisions", type=choice_list(PRECISIONS), default=["fp32"])
    gemm.add_argument("--single-call-sizes", type=size_list, default=[],
                      help="sizes that also get single calls (a 'single_call' series)")
    gemm.add_argument("--graph-sizes", type=size_list, default=[],
                      help="sizes that also get a torch.cuda.CUDAGraph replay ('graph')")
    gemm.add_argument("--cold-sizes", type=size_list, default=[],
                      help="sizes that also get cold single calls, the L2 flushed ('cold')")
    common(gemm)

    conv = sub.add_parser("conv", help="torch.nn.functional.conv2d, cudnn.benchmark on")
    conv.add_argument("--batch", type=positive_int, required=True)
    conv.add_argument("--in-channels", type=positive_int, required=True)
    conv.add_argument("--height", type=positive_int, required=True)
    conv.add_argument("--width", type=positive_int, required=True)
    conv.add_argument("--out-channels", type=positive_int, required=True)
    conv.add_argument("--kernel", type=positive_int, required=True)
    conv.add_argument("--padding", type=non_negative_int, default=0)
    conv.add_argument("--stride", type=positive_int, default=1)
    conv.add_argument("--dtype", type=choice_list(CONV_DTYPES), default=["fp32"])
    conv.add_argument("--layout", type=choice_list(LAYOUTS), default=["nchw"])
    conv.add_argument("--single-call", action="store_true", help="also single calls")
    conv.add_argument("--graph", action="store_true", help="also a torch.cuda.CUDAGraph replay")
    conv.add_argument("--cold", action="store_true", help="also cold single calls")
    common(conv)

    alloc = sub.add_parser("alloc", help="torch.empty + del with the caching allocator warm")
    alloc.add_argument("--sizes", type=positive_int_list, required=True)
    common(alloc)

    allreduce = sub.add_parser("allreduce", help="torch.distributed.all_reduce, one rank, nccl")
    allreduce.add_argument("--sizes", type=positive_int_list, required=True)
    common(allreduce)
    return parser


def load_torch():
    """torch when it is importable and sees a CUDA device, else (None, reason)."""
    try:
        import torch  # noqa: PLC0415 (imported late: a missing torch is a result, not a crash)
    except Exception as error:  # ImportError, or a broken install raising something else
        return None, f"torch is not importable: {type(error).__name__}: {error}"
    if not torch.cuda.is_available():
        build = torch.version.cuda
        why = ("this torch build has no CUDA support" if build is None
               else f"torch {torch.__version__} (CUDA {build}) sees no CUDA device")
        return None, why
    return torch, None


STOPS = ("noise target", "time limit", "sample cap", "fixed count")
MAX_SAMPLES = 100000  # the harness's sample cap (bench/harness/sampling.hpp)


def relative_stddev(samples):
    """Sample standard deviation over the mean; None for fewer than two samples or mean <= 0."""
    if len(samples) < 2:
        return None
    mean = statistics.fmean(samples)
    return statistics.stdev(samples) / mean if mean > 0 else None


def sample(take, args):
    """Samples from take() (milliseconds per call) as the harness stops them: --repetitions N is
    a fixed count; otherwise until the relative standard deviation is at most --max-noise after
    --min-samples, or --time-limit seconds have passed (nvbench's rule). (samples, why stopped)."""
    if args.repetitions is not None:
        return [take() for _ in range(args.repetitions)], "fixed count"
    samples = []
    start = time.perf_counter()
    while True:
        samples.append(take())
        noise = relative_stddev(samples)
        if (len(samples) >= max(args.min_samples, 2) and noise is not None
                and noise <= args.max_noise / 100):
            return samples, "noise target"
        if time.perf_counter() - start >= args.time_limit:
            return samples, "time limit"
        if len(samples) >= MAX_SAMPLES:
            return samples, "sample cap"


def summary(samples, calls, timing, stopped, args, host=None):
    fixed = stopped == "fixed count"
    out = {
        "median_ms": statistics.median(samples),
        "min_ms": min(samples),
        "max_ms": max(samples),
        "repetitions": len(samples),
        "calls_per_repetition": calls,
        "timing": timing,
        "noise": relative_stddev(samples),
        "stopped": stopped,
        "max_noise": None if fixed else args.max_noise / 100,
        "min_samples": 0 if fixed else args.min_samples,
    }
    if host:
        out["host_ms"] = statistics.median(host)
    return out


def resolve_calls(args, one_call_ms):
    if args.calls != "auto":
        return args.calls
    if one_call_ms <= 0:
        return 10000
    return max(1, min(10000, int(args.target_ms / one_call_ms)))


class Timer:
    """CUDA events around work on the current stream, and the host clock around its issue."""

    def __init__(self, torch):
        self.torch = torch
        self.start = torch.cuda.Event(enable_timing=True)
        self.stop = torch.cuda.Event(enable_timing=True)
        self.host = []

    def time(self, issue, calls):
        """Runs issue() between the events: device ms per call; the host ms go to self.host."""
        self.start.record()
        begin = time.perf_counter()
        issue()
        self.host.append((time.perf_counter() - begin) * 1e3 / calls)
        self.stop.record()
        self.stop.synchronize()
        return self.start.elapsed_time(self.stop) / calls


def time_with_events(torch, fn, args):
    """Warm-up, then CUDA events around batches of back-to-back calls; per-call samples in ms.
    Returns the summary and the calls per batch."""
    for _ in range(args.warmup):
        fn()
    torch.cuda.synchronize()
    timer = Timer(torch)
    calls = resolve_calls(args, timer.time(fn, 1))
    timer.host.clear()

    def batch():
        for _ in range(calls):
            fn()

    samples, stopped = sample(lambda: timer.time(batch, calls), args)
    return summary(samples, calls, "CUDA events", stopped, args, timer.host), calls


class L2Flush:
    """A buffer of twice the device's L2, allocated once and written whole before each cold
    sample (a different byte each time), as the harness's flush does."""

    def __init__(self, torch):
        l2 = getattr(torch.cuda.get_device_properties(torch.cuda.current_device()),
                     "L2_cache_size", 0)
        if not l2 or l2 <= 0:
            raise RuntimeError("this torch does not report the device's L2 size "
                               "(torch.cuda.get_device_properties().L2_cache_size), so a flush "
                               "cannot be sized")
        self.buffer = torch.empty(2 * l2, dtype=torch.uint8, device="cuda")
        self.flushes = 0

    def flush(self):
        self.buffer.fill_(self.flushes % 255 + 1)
        self.flushes += 1


def time_single_calls(torch, fn, args, flush=None):
    """One call per sample on an idle stream (after the flush, when cold): the GPU time plus
    what the GPU waits for the launch; device ms, with the host's issue time."""
    fn()
    timer = Timer(torch)

    def take():
        if flush is not None:
            flush.flush()
        torch.cuda.synchronize()  # the flush ends before the window opens
        return timer.time(fn, 1)

    samples, stopped = sample(take, args)
    return summary(samples, 1, "CUDA events", stopped, args, timer.host)


def time_graph(torch, fn, args, calls):
    """`calls` calls captured once into a torch.cuda.CUDAGraph, each sample one replay; per call.
    The warm-up before the capture runs on a side stream, as PyTorch asks."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(max(args.warmup, 1)):
            fn()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(calls):
            fn()
    graph.replay()  # the warm-up replay
    torch.cuda.synchronize()
    timer = Timer(torch)
    samples, stopped = sample(lambda: timer.time(graph.replay, calls), args)
    return summary(samples, calls, "CUDA events", stopped, args, timer.host)


def time_device_case(torch, fn, args, single=False, graph=False, cold=False):
    """A case's batches, and beside them what was asked for: single calls ("single_call"), a
    graph replay of the batch's calls ("graph"), cold single calls ("cold")."""
    result, calls = time_with_events(torch, fn, args)
    if single:
        result["single_call"] = time_single_calls(torch, fn, args)
    if graph:
        result["graph"] = time_graph(torch, fn, args, calls)
    if cold:
        if args.flush is None:
            args.flush = L2Flush(torch)
        result["cold"] = time_single_calls(torch, fn, args, args.flush)
    return result


def time_with_host_clock(torch, fn, args):
    """Warm-up, then the host clock around back-to-back calls and a final synchronisation
    (allocation is host work; the same method as cudagap's alloc benchmark)."""
    for _ in range(args.warmup):
        fn()
    torch.cuda.synchronize()
    begin = time.perf_counter_ns()
    fn()
    torch.cuda.synchronize()
    calls = resolve_calls(args, (time.perf_counter_ns() - begin) / 1e6)

    def take():
        begin = time.perf_counter_ns()
        for _ in range(calls):
            fn()
        torch.cuda.synchronize()
        return (time.perf_counter_ns() - begin) / 1e6 / calls

    samples, stopped = sample(take, args)
    return summary(samples, calls, "host clock", stopped, args)


def run_gemm(torch, args):
    """Yields (case name, function measuring it), so that one failing case spares the others."""
    dtypes = {"fp32": torch.float32, "tf32": torch.float32,
              "fp16": torch.float16, "bf16": torch.bfloat16}

    def measure(n, precision):
        torch.backends.cuda.matmul.allow_tf32 = precision == "tf32"
        generator = torch.Generator(device="cuda").manual_seed(n)
        a = torch.randn(n, n, device="cuda", dtype=dtypes[precision], generator=generator)
        b = torch.randn(n, n, device="cuda", dtype=dtypes[precision], generator=generator)
        c = torch.empty(n, n, device="cuda", dtype=dtypes[precision])
        result = time_device_case(torch, lambda: torch.mm(a, b, out=c), args,
                                  single=n in args.single_call_sizes, graph=n in args.graph_sizes,
                                  cold=n in args.cold_sizes)
        result.update({"n": n, "precision": precision, "flops": 2.0 * n * n * n,
                       "allow_tf32": torch.backends.cuda.matmul.allow_tf32})
        return result

    for n in args.sizes:
        for precision in args.precisions:
            yield f"{n} {precision}", lambda n=n, p=precision: measure(n, p)


def run_conv(torch, args):
    """Yields (case name, function measuring it)."""
    dtypes = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}
    torch.backends.cudnn.benchmark = True
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    conv2d = torch.nn.functional.conv2d

    def measure(dtype, layout):
        generator = torch.Generator(device="cuda").manual_seed(0)
        x = torch.randn(args.batch, args.in_channels, args.height, args.width,
                        device="cuda", dtype=dtypes[dtype], generator=generator)
        w = torch.randn(args.out_channels, args.in_channels, args.kernel, args.kernel,
                        device="cuda", dtype=dtypes[dtype], generator=generator)
        if layout == "nhwc":
            x = x.contiguous(memory_format=torch.channels_last)
            w = w.contiguous(memory_format=torch.channels_last)
        with torch.inference_mode():
            # The first call plans (cudnn.benchmark's search); it stays out of the timing.
            y = conv2d(x, w, padding=args.padding, stride=args.stride)
            result = time_device_case(
                torch, lambda: conv2d(x, w, padding=args.padding, stride=args.stride), args,
                single=args.single_call, graph=args.graph, cold=args.cold)
        out_h, out_w = y.shape[2], y.shape[3]
        flops = (2.0 * args.batch * args.out_channels * out_h * out_w *
                 args.in_channels * args.kernel * args.kernel)
        result.update({"batch": args.batch, "in_channels": args.in_channels,
                       "height": args.height, "width": args.width,
                       "out_channels": args.out_channels, "kernel": args.kernel,
                       "padding": args.padding, "stride": args.stride, "dtype": dtype,
                       "layout": layout, "output_height": out_h, "output_width": out_w,
                       "flops": flops, "cudnn_benchmark": True, "allow_tf32": False})
        return result

    for dtype in args.dtype:
        for layout in args.layout:
            yield conv_case_name(args, dtype, layout), lambda d=dtype, l=layout: measure(d, l)


def run_alloc(torch, args):
    """Yields (case name, function measuring it)."""
    empty = torch.empty
    uint8 = torch.uint8

    def measure(size):
        # The tensor is dropped at once: allocate and free through the caching allocator.
        result = time_with_host_clock(
            torch, lambda: empty(size, dtype=uint8, device="cuda"), args)
        result["bytes"] = size
        return result

    for size in args.sizes:
        yield size_name(size), lambda size=size: measure(size)


def run_allreduce(torch, args):
    """Yields (case name, function measuring it), inside a process group of one rank (backend
    nccl), which is destroyed when the cases are done."""
    import tempfile  # noqa: PLC0415
    dist = torch.distributed
    if not dist.is_available() or not dist.is_nccl_available():
        raise RuntimeError("this torch has no torch.distributed with the NCCL backend")
    torch.cuda.set_device(0)
    with tempfile.TemporaryDirectory(prefix="cudagap-allreduce-") as folder:
        dist.init_process_group("nccl", init_method=f"file://{folder}/store", rank=0, world_size=1)
        try:
            version = torch.cuda.nccl.version()  # (2, 27, 3) in recent torch, an int before
            nccl = ".".join(map(str, version)) if isinstance(version, tuple) else str(version)

            def measure(size):
                tensor = torch.zeros(size // 4, dtype=torch.float32, device="cuda")
                result, _ = time_with_events(torch, lambda: dist.all_reduce(tensor), args)
                result.update({"bytes": size, "ranks": 1, "backend": "nccl", "nccl": nccl})
                return result

            for size in args.sizes:
                yield f"{size_name(size)} in-place", lambda size=size: measure(size)
        finally:
            dist.destroy_process_group()


def main(argv=None):
    args = build_parser().parse_args(argv)  # exits 2 on a bad command line
    real_stdout = sys.stdout
    sys.stdout = sys.stderr  # only the JSON goes to stdout, whatever torch prints
    try:
        torch, reason = load_torch()
        if torch is None:
            progress(f"skipped: {reason}")
            output = {"ok": False, "reason": reason}
        else:
            runner = {"gemm": run_gemm, "conv": run_conv, "alloc": run_alloc,
                      "allreduce": run_allreduce}[args.command]
            results, errors = [], []
            for name, measure in runner(torch, args):
                try:
                    result = measure()
                except Exception as error:  # out of memory, unsupported dtype...: go on
                    errors.append({"case": name, "error": f"{type(error).__name__}: {error}"})
                    progress(f"{args.command} {name}: FAILED: {type(error).__name__}: {error}")
                    torch.cuda.empty_cache()
                    continue
                result = {"case": name, **result}
                progress(f"{args.command} {name}: {result['median_ms']:.4f} ms "
                         f"({result['repetitions']} x {result['calls_per_repetition']} calls)")
                results.append(result)
            output = {"ok": True, "torch": torch.__version__,
                      "device": torch.cuda.get_device_name(torch.cuda.current_device()),
                      "results": results, "errors": errors}
    except Exception as error:  # anything unexpected is a reason, not a traceback on stdout
        output = {"ok": False, "reason": f"compare_torch.py failed: {type(error).__name__}: {error}"}
    finally:
        sys.stdout = real_stdout
    json.dump(output, sys.stdout)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
