#!/usr/bin/env python3
"""cudagap-infer's GPU outputs against ONNX Runtime's, on the same inputs.

  compare_onnx.py --outputs OUT.safetensors --model MODEL.onnx [--precision fp16|bf16|fp32]
                  [--tf32] [--provider auto|cuda|cpu] [--json FILE|-]

OUT.safetensors is what `cudagap-infer --outputs` writes ("input" F32 [K,1,28,28], the
normalised images; "output" F32 [K,10], cudagap's logits in its precision) and MODEL.onnx what
`cudagap-infer --export-onnx` writes from the same weights (FP32). ONNX Runtime runs the model
on "input" in FP32 (its CUDA provider when present, TF32 off; else the CPU) and cudagap's logits
must be within the precision's tolerance of its logits: |cudagap - onnxruntime| <= tolerance x
the largest |logit| of ONNX Runtime's, for every logit (FP32 1e-4; FP32 with --tf32, which is
cudagap's production profile, FP16 and TF32 1e-2, BF16 5e-2: FP16 and TF32 keep 10 bits of
mantissa, BF16 7). The predictions (argmax) must agree wherever ONNX Runtime's two best logits
are further apart than twice that tolerance; a closer pair may swap under rounding and is
counted, not failed.

Prints one line per check and, with --json, the figures. Exit code: 0 they match; 1 they do
not, or a file is wrong; 77 numpy or onnxruntime is not importable here (a skip: the reason is
printed); 2 a bad command line.
"""

import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import safetensors_file  # noqa: E402 (this folder's module)

SKIP_EXIT_CODE = 77
TOLERANCE = {"fp32": 1e-4, "tf32": 1e-2, "fp16": 1e-2, "bf16": 5e-2}


class Skip(Exception):
    """numpy or onnxruntime is missing: nothing can be compared here."""


def import_runtime():
    """(numpy, onnxruntime), or Skip naming what is missing and how to get it."""
    try:
        import numpy  # noqa: PLC0415 (optional: its absence is a skip)
        import onnxruntime  # noqa: PLC0415
    except ImportError as error:
        raise Skip(f"{error.name or error} is not importable by {sys.executable} "
                   "(pip install onnxruntime numpy)") from None
    return numpy, onnxruntime


def load_outputs(numpy, path):
    """(input [K,1,28,28], cudagap's logits [K,10]) of a --outputs file, as FP32 arrays."""
    tensors = safetensors_file.read(path)
    found = {}
    for name, shape in (("input", [None, 1, 28, 28]), ("output", [None, 10])):
        if name not in tensors:
            raise safetensors_file.FormatError(f"{path}: no tensor '{name}' (found: {', '.join(tensors) or 'none'})")
        dims, data = tensors[name]
        if len(dims) != len(shape) or dims[1:] != shape[1:]:
            raise safetensors_file.FormatError(f"{path}: '{name}' is {dims}, expected {shape} (None: any)")
        found[name] = numpy.frombuffer(data, dtype="<f4").reshape(dims).astype(numpy.float32)
    if found["input"].shape[0] != found["output"].shape[0] or found["input"].shape[0] == 0:
        raise safetensors_file.FormatError(f"{path}: {found['input'].shape[0]} inputs but "
                                           f"{found['output'].shape[0]} outputs")
    return found["input"], found["output"]


def make_session(onnxruntime, model, provider="auto", tf32=False):
    """(an InferenceSession of @model, the provider it runs on): CUDA when @provider allows it
    and onnxruntime has it (TF32 off unless @tf32: a reference is FP32), else the CPU. ONNX
    Runtime falls back to the CPU by itself when its CUDA provider cannot load; the provider
    returned is the one the session reports."""
    available = onnxruntime.get_available_providers()
    providers = ["CPUExecutionProvider"]
    if provider in ("auto", "cuda") and "CUDAExecutionProvider" in available:
        providers.insert(0, "CUDAExecutionProvider" if tf32 else ("CUDAExecutionProvider", {"use_tf32": "0"}))
    elif provider == "cuda":
        raise Skip(f"onnxruntime {onnxruntime.__version__} has no CUDA provider (it has {', '.join(available)}; "
                   "pip install onnxruntime-gpu)")
    options = onnxruntime.SessionOptions()
    options.log_severity_level = 3  # its warnings (e.g. a CUDA provider that cannot load) go nowhere
    session = onnxruntime.InferenceSession(model, sess_options=options, providers=providers)
    return session, session.get_providers()[0]


def compare_arrays(numpy, cudagap, reference, precision):
    """The figures of @cudagap against @reference (both [K,10]) under @precision's tolerance;
    "ok" says whether they match."""
    tolerance = TOLERANCE[precision]
    scale = max(float(numpy.abs(reference).max()), 1e-3)
    error = numpy.abs(cudagap.astype(numpy.float64) - reference.astype(numpy.float64))
    worst = numpy.unravel_index(int(error.argmax()), error.shape)
    ordered = numpy.sort(reference, axis=1)
    decided = (ordered[:, -1] - ordered[:, -2]) > 2 * tolerance * scale
    agree = cudagap.argmax(axis=1) == reference.argmax(axis=1)
    disagreements = [int(i) for i in numpy.flatnonzero(decided & ~agree)]
    within = float(error.max()) <= tolerance * scale
    return {"ok": within and not disagreements, "precision": precision, "tolerance": tolerance,
            "images": int(reference.shape[0]), "scale": scale, "max_abs_error": float(error.max()),
            "max_error_over_scale": float(error.max()) / scale,
            "worst": {"image": int(worst[0]), "class": int(worst[1]), "cudagap": float(cudagap[worst]),
                      "onnxruntime": float(reference[worst])},
            "argmax_compared": int(decided.sum()), "argmax_agree": int((decided & agree).sum()),
            "close_calls": int((~decided).sum()), "close_calls_swapped": int((~decided & ~agree).sum()),
            "disagreements": disagreements[:20]}


def compare(outputs, model, precision, provider="auto"):
    """Runs ONNX Runtime on the inputs of @outputs and compares; the figures with "provider"."""
    numpy, onnxruntime = import_runtime()
    inputs, cudagap = load_outputs(numpy, outputs)
    session, used = make_session(onnxruntime, model, provider)
    reference = session.run(["output"], {"input": inputs})[0]
    if reference.shape != cudagap.shape:
        raise safetensors_file.FormatError(f"{model}: ONNX Runtime's output is {list(reference.shape)}, "
                                           f"cudagap's {list(cudagap.shape)}")
    result = compare_arrays(numpy, cudagap, reference, precision)
    result.update(provider=used, onnxruntime=onnxruntime.__version__)
    return result


def summary(result):
    """The lines compare_onnx.py prints about @result."""
    verdict = "MATCH" if result["ok"] else "MISMATCH"
    lines = [f"{verdict}: {result['images']} images, cudagap ({result['precision']}) against ONNX Runtime "
             f"{result.get('onnxruntime', '')} on {result.get('provider', '?')}",
             f"  largest difference {result['max_abs_error']:.3g} = {result['max_error_over_scale']:.3g} x the "
             f"largest logit {result['scale']:.3g} (tolerance {result['tolerance']:g}); worst: image "
             f"{result['worst']['image']} class {result['worst']['class']}, cudagap {result['worst']['cudagap']:.6g}, "
             f"ONNX Runtime {result['worst']['onnxruntime']:.6g}",
             f"  predictions agree on {result['argmax_agree']} of {result['argmax_compared']} clear calls; "
             f"{result['close_calls']} close calls ({result['close_calls_swapped']} swapped)"]
    if result["disagreements"]:
        lines.append(f"  predictions differ on images {result['disagreements']}")
    return lines


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--outputs", required=True, help="cudagap-infer --outputs FILE")
    parser.add_argument("--model", required=True, help="cudagap-infer --export-onnx FILE")
    parser.add_argument("--precision", choices=("fp16", "bf16", "fp32"), default="fp16")
    parser.add_argument("--tf32", action="store_true", help="cudagap ran FP32 with TF32 (its production profile)")
    parser.add_argument("--provider", choices=("auto", "cuda", "cpu"), default="auto")
    parser.add_argument("--json", metavar="FILE|-")
    args = parser.parse_args(argv)
    precision = "tf32" if args.tf32 and args.precision == "fp32" else args.precision
    try:
        result = compare(args.outputs, args.model, precision, args.provider)
    except Skip as why:
        print(f"compare_onnx.py: skipped: {why}")
        return SKIP_EXIT_CODE
    except (safetensors_file.FormatError, OSError) as error:
        print(f"compare_onnx.py: {error}", file=sys.stderr)
        return 1
    except Exception as error:  # noqa: BLE001 (onnxruntime's errors: a model it refuses)
        print(f"compare_onnx.py: ONNX Runtime could not run {args.model}: {error}", file=sys.stderr)
        return 1
    print("\n".join(summary(result)))
    if args.json:
        text = json.dumps(result, indent=2)
        if args.json == "-":
            print(text)
        else:
            with open(args.json, "w", encoding="utf-8") as stream:
                stream.write(text + "\n")
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
