#!/usr/bin/env python3
"""The proofs of cudagap-infer's ONNX export (issue 13), as ctest runs them (onnx_tests.cmake).

  test_onnx_export.py cpu --infer PROGRAM --env RECORD --work DIR [--data DIR]
      CI's proof: a checkpoint of random FP32 weights (this script writes it), exported with
      `cudagap-infer --checkpoint CK --export-onnx m.onnx` (no GPU needed), runs in ONNX
      Runtime on the CPU and matches this script's own forward pass (numpy, float64: convolution
      by im2col, ReLU, 2x2 max pooling, linear) within FP32 tolerance, for batch sizes 1 and 7
      (the dynamic batch axis); the batch-7 run's rows equal the single image's.

  test_onnx_export.py gpu --infer PROGRAM --env RECORD --work DIR --data DIR
                          [--precision fp16|bf16|fp32] [--profile NAME]
      The GPU proof: `cudagap-infer --outputs o.safetensors --export-onnx m.onnx` with the same
      checkpoint, then bench/infer/compare_onnx.py: cudagap's logits within the precision's
      tolerance of ONNX Runtime's on the same inputs, and the same predictions.

RECORD is what onnxruntime_env.py (the ctest fixture) wrote: the Python that imports
onnxruntime and numpy, or why there is none. Exit code: 0 passed; 1 failed; 77 skipped, with
the reason (no such Python, no GPU for the GPU proof).
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

SKIP = 77
SOURCE = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(SOURCE / "bench" / "infer"))
sys.path.insert(0, str(SOURCE / "bench" / "train"))
import safetensors_file  # noqa: E402 (bench/infer's)
from torch_train import STATE_SHAPES  # noqa: E402 (the checkpoint's names and shapes; no torch)

ENV_MARK = "CUDAGAP_ONNX_TEST_PYTHON"
RTOL = 1e-4


def skip(reason):
    print(f"SKIPPED: {reason}")
    sys.exit(SKIP)


def fail(reason):
    print(f"FAILED: {reason}")
    sys.exit(1)


def onnx_python(record):
    """The Python onnxruntime_env.py found, or skip with the reason it gave."""
    try:
        found = json.loads(Path(record).read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        skip(f"no usable record of the ONNX Runtime set-up at {record} ({error}): its fixture test did not run")
    if not found.get("python"):
        skip(found.get("reason") or "the ONNX Runtime set-up found no Python with onnxruntime")
    return found["python"]


def in_onnx_python(args, argv):
    """Runs the rest of this script under the Python that has onnxruntime and numpy."""
    python = onnx_python(args.env)
    if os.environ.get(ENV_MARK) == python:
        return
    os.environ[ENV_MARK] = python
    os.execv(python, [python, __file__, *argv])


# ---- the checkpoint and the reference forward pass --------------------------------------------

def random_weights(numpy, seed):
    """PyTorch's default initialisation of each tensor (uniform in +-1/sqrt(fan in)), FP32."""
    rng = numpy.random.default_rng(seed)
    weights = {}
    for name, shape in STATE_SHAPES.items():
        fan_in = int(numpy.prod(STATE_SHAPES[name.replace(".bias", ".weight")][1:]))
        bound = 1.0 / numpy.sqrt(fan_in)
        weights[name] = rng.uniform(-bound, bound, size=shape).astype(numpy.float32)
    return weights


def write_checkpoint(path, weights):
    safetensors_file.write(path, {name: (list(value.shape), value.astype("<f4").tobytes())
                                  for name, value in weights.items()}, {"format": "pt"})


def conv2d(numpy, x, weight, bias, padding):
    """Convolution by im2col: every 5x5 window of every channel as a row, times the filters."""
    n, c, h, w = x.shape
    k, _, r, s = weight.shape
    padded = numpy.pad(x, ((0, 0), (0, 0), (padding, padding), (padding, padding)))
    windows = numpy.lib.stride_tricks.sliding_window_view(padded, (r, s), axis=(2, 3))
    out_h, out_w = windows.shape[2], windows.shape[3]
    columns = windows.transpose(0, 2, 3, 1, 4, 5).reshape(n * out_h * out_w, c * r * s)
    out = columns @ weight.reshape(k, c * r * s).T + bias
    return out.reshape(n, out_h, out_w, k).transpose(0, 3, 1, 2)


def max_pool2(x):
    n, c, h, w = x.shape
    return x.reshape(n, c, h // 2, 2, w // 2, 2).max(axis=(3, 5))


def reference_forward(numpy, weights, x):
    """The model of the contract (INFER_CLI: conv1, ReLU, pool, conv2, ReLU, pool, flatten, fc1,
    ReLU, fc2), in float64."""
    p = {name: value.astype(numpy.float64) for name, value in weights.items()}
    relu = lambda v: numpy.maximum(v, 0.0)  # noqa: E731
    x = max_pool2(relu(conv2d(numpy, x.astype(numpy.float64), p["conv1.weight"], p["conv1.bias"], 2)))
    x = max_pool2(relu(conv2d(numpy, x, p["conv2.weight"], p["conv2.bias"], 2)))
    x = relu(x.reshape(x.shape[0], -1) @ p["fc1.weight"].T + p["fc1.bias"])
    return x @ p["fc2.weight"].T + p["fc2.bias"]


# ---- the proofs -------------------------------------------------------------------------------

def run_infer(command, work):
    print("running: " + " ".join(str(c) for c in command))
    done = subprocess.run([str(c) for c in command], capture_output=True, text=True, cwd=work,
                          timeout=600, check=False)
    sys.stdout.write(done.stdout[-3000:])
    sys.stdout.write(done.stderr[-3000:])
    return done


def export(args, work, checkpoint):
    """m.onnx from cudagap-infer, with nothing else left in @work (no half-written file)."""
    model = work / "m.onnx"
    command = [args.infer, "--checkpoint", checkpoint, "--export-onnx", model, "--quiet",
               "--mode", "eager", "--batch-sizes", "1", "--buckets", "1", "--requests", "1", "--warmup", "1"]
    if args.data:
        command += ["--data", args.data, "--test-limit", "1"]
    done = run_infer(command, work)
    if done.returncode != 0:
        fail(f"cudagap-infer --export-onnx exited {done.returncode}")
    left = sorted(p.name for p in work.iterdir() if p.name not in ("m.onnx", "checkpoint.safetensors"))
    if not model.is_file() or left:
        fail(f"after the export {work} holds {sorted(p.name for p in work.iterdir())}: expected m.onnx and the checkpoint")
    return model


def check_interface(session):
    """Input 'input' [batch, 1, 28, 28] with a symbolic batch axis, output 'output' [batch, 10]."""
    inputs, outputs = session.get_inputs(), session.get_outputs()
    if [i.name for i in inputs] != ["input"] or [o.name for o in outputs] != ["output"]:
        fail(f"inputs {[i.name for i in inputs]}, outputs {[o.name for o in outputs]}: expected ['input'], ['output']")
    shape, out_shape = inputs[0].shape, outputs[0].shape
    if isinstance(shape[0], int) or list(shape[1:]) != [1, 28, 28] or list(out_shape[1:]) != [10]:
        fail(f"input shape {shape}, output shape {out_shape}: expected [batch, 1, 28, 28] and [batch, 10]")
    if inputs[0].type != "tensor(float)":
        fail(f"the input is {inputs[0].type}, expected tensor(float)")
    print(f"interface: input {shape} {inputs[0].type}, output {out_shape}")


def prepare(args, numpy):
    """(the emptied work folder, the checkpoint written there, its weights)."""
    work = Path(args.work)
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    checkpoint = work / "checkpoint.safetensors"
    weights = random_weights(numpy, 13)
    write_checkpoint(checkpoint, weights)
    return work, checkpoint, weights


def check_batch(numpy, session, weights, images):
    """ONNX Runtime's logits for @images, checked against the reference forward pass."""
    batch = images.shape[0]
    got = session.run(["output"], {"input": images})[0]
    want = reference_forward(numpy, weights, images)
    if got.shape != (batch, 10) or got.dtype != numpy.float32:
        fail(f"batch {batch}: ONNX Runtime gave {got.dtype} {list(got.shape)}, expected float32 [{batch}, 10]")
    scale = float(numpy.abs(want).max())
    error = float(numpy.abs(got - want).max())
    print(f"batch {batch}: largest difference from the reference {error:.3g} (largest logit {scale:.3g}, "
          f"tolerance {RTOL:g} x it); predictions {got.argmax(1).tolist()} vs {want.argmax(1).tolist()}")
    if not numpy.isfinite(got).all() or error > RTOL * scale or scale < 1e-3:
        fail(f"batch {batch}: ONNX Runtime's logits differ from the reference by {error:.3g} (> {RTOL:g} x {scale:.3g})")
    return got


def cpu_proof(args):
    import numpy  # noqa: PLC0415 (in the Python the fixture found)
    import onnxruntime  # noqa: PLC0415

    work, checkpoint, weights = prepare(args, numpy)
    model = export(args, work, checkpoint)
    session = onnxruntime.InferenceSession(str(model), providers=["CPUExecutionProvider"])
    check_interface(session)
    images = numpy.random.default_rng(7).standard_normal((7, 1, 28, 28)).astype(numpy.float32)
    one, seven = check_batch(numpy, session, weights, images[:1]), check_batch(numpy, session, weights, images)
    if float(numpy.abs(seven[0] - one[0]).max()) > RTOL * float(numpy.abs(one).max()):
        fail("the first image's logits differ between batch 1 and batch 7")
    print(f"PASSED: the exported model matches the reference forward pass (onnxruntime {onnxruntime.__version__}, CPU)")


def gpu_proof(args):
    import numpy  # noqa: PLC0415 (in the Python the fixture found)

    work, checkpoint, _ = prepare(args, numpy)
    report = work / "infer.json"
    done = run_infer([args.infer, "--checkpoint", checkpoint, "--data", args.data, "--test-limit", "32",
                      "--precision", args.precision, "--profile", args.profile, "--buckets", "1,8,32",
                      "--batch-sizes", "1,32", "--requests", "5", "--warmup", "2", "--quiet",
                      "--outputs", work / "outputs.safetensors", "--export-onnx", work / "m.onnx",
                      "--json", report], work)
    if done.returncode != 0:
        fail(f"cudagap-infer exited {done.returncode}")
    found = json.loads(report.read_text(encoding="utf-8"))
    if not found.get("gpu_available"):
        skip(f"no GPU: {found.get('reason', 'cudagap-infer found none')}")
    tf32 = ["--tf32"] if args.precision == "fp32" and args.profile == "production" else []
    compare = [sys.executable, SOURCE / "bench" / "infer" / "compare_onnx.py", "--outputs",
               work / "outputs.safetensors", "--model", work / "m.onnx", "--precision", args.precision, *tf32]
    done = run_infer(compare, work)
    if done.returncode == SKIP:
        skip(done.stdout.strip())
    if done.returncode != 0:
        fail(f"cudagap's outputs do not match ONNX Runtime's (compare_onnx.py exited {done.returncode})")
    print("PASSED: cudagap's GPU outputs match ONNX Runtime's")


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("proof", choices=("cpu", "gpu"))
    parser.add_argument("--infer", required=True, help="the cudagap-infer program")
    parser.add_argument("--env", required=True, help="the record onnxruntime_env.py wrote")
    parser.add_argument("--work", required=True, help="a folder of its own (emptied first)")
    parser.add_argument("--data", help="Fashion-MNIST IDX files (the GPU proof's inputs)")
    parser.add_argument("--precision", choices=("fp16", "bf16", "fp32"), default="fp16")
    parser.add_argument("--profile", default="production")
    args = parser.parse_args(argv)
    if args.proof == "gpu" and not args.data:
        parser.error("the GPU proof needs --data")
    in_onnx_python(args, argv)
    (cpu_proof if args.proof == "cpu" else gpu_proof)(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
