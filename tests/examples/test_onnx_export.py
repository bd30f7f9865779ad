#!/usr/bin/env python3
"""The proofs of cudagap-infer's ONNX export (issue 13), as ctest runs them
(onnxruntime_tests.cmake).

  test_onnx_export.py cpu --infer PROGRAM --env RECORD --work DIR [--data DIR] [--exporter E]
      CI's proof: a checkpoint of random FP32 weights (this script writes it), exported with
      `cudagap-infer --checkpoint CK --export-onnx m.onnx` (no GPU needed; --exporter twin:
      by bench/infer/onnx_twin.py, the Python twin of that exporter), runs in ONNX Runtime on
      the CPU and matches this script's own forward pass (numpy, float64: convolution by im2col,
      ReLU, 2x2 max pooling, linear) within FP32 tolerance, for batch sizes 1 and 7 (the dynamic
      batch axis); the batch-7 run's rows equal the single image's.

  test_onnx_export.py twin --infer PROGRAM --env RECORD --work DIR [--data DIR]
      The twin against cudagap's exporter: both export the same checkpoint, and the two models
      are the same field by field (IR and opset, graph name, inputs, outputs, the 10 nodes with
      their attributes, the 8 initializers byte for byte, the 9 inferred intermediate shapes),
      but for their producer and doc string; ONNX Runtime's logits of the two are equal bit for
      bit. A copy with one weight changed must differ (so the comparison is seen to work).

  test_onnx_export.py gpu --infer PROGRAM --env RECORD --work DIR --data DIR
                          [--precision fp16|bf16|fp32] [--profile NAME] [--exporter E]
      The GPU proof: `cudagap-infer --outputs o.safetensors --export-onnx m.onnx` with the same
      checkpoint (--exporter twin: cudagap-infer --outputs, the model by onnx_twin.py; the
      output says so), then bench/infer/compare_onnx.py: cudagap's logits within the precision's
      tolerance of ONNX Runtime's on the same inputs, and the same predictions.

--exporter cudagap (the default) or twin: ctest takes twin where cudagap-infer was built without
the ONNX C++ library (libonnx-dev), as on a lent GPU host. RECORD is what onnxruntime_env.py (the
ctest fixture) wrote: the Python that imports onnxruntime, numpy and onnx, or why there is none.
Exit code: 0 passed; 1 failed; 77 skipped, with the reason (no such Python, no GPU for the GPU
proof).
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
import onnx_twin  # noqa: E402 (bench/infer's Python twin of the exporter; imports onnx when it runs)
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
    if str(command[0]).endswith(".py"):  # a stand-in of cudagap-infer (infer_stand_in.py): this Python runs it
        command = [sys.executable, *command]
    print("running: " + " ".join(str(c) for c in command))
    done = subprocess.run([str(c) for c in command], capture_output=True, text=True, cwd=work,
                          timeout=600, check=False)
    sys.stdout.write(done.stdout[-3000:])
    sys.stdout.write(done.stderr[-3000:])
    return done


def check_left(work, expected):
    """Fails unless @work holds exactly @expected (no half-written file left)."""
    found = sorted(p.name for p in work.iterdir())
    if found != sorted(expected):
        fail(f"after the export {work} holds {found}: expected {sorted(expected)}")


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
    check_left(work, [model.name, checkpoint.name])
    return model


def twin_export(work, checkpoint, name="m.onnx"):
    """@name from the checkpoint by onnx_twin.py, in this (the fixture's) Python, said so."""
    model = work / name
    before = [p.name for p in work.iterdir()]
    done = run_infer([sys.executable, SOURCE / "bench" / "infer" / "onnx_twin.py", "--checkpoint", checkpoint,
                      "--out", model], work)
    if done.returncode != 0:
        fail(f"onnx_twin.py exited {done.returncode}")
    check_left(work, [*before, name])
    print(f"ONNX model: made by {onnx_twin.ORIGIN}, not by cudagap-infer's exporter (cudagap's own exporter is "
          "proven on the CPU where the ONNX C++ library is: the CPU proof and the twin's comparison with it)")
    return model


def make_model(args, work, checkpoint):
    """m.onnx by the exporter --exporter names."""
    return twin_export(work, checkpoint) if args.exporter == "twin" else export(args, work, checkpoint)


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
    model = make_model(args, work, checkpoint)
    session = onnxruntime.InferenceSession(str(model), providers=["CPUExecutionProvider"])
    check_interface(session)
    images = numpy.random.default_rng(7).standard_normal((7, 1, 28, 28)).astype(numpy.float32)
    one, seven = check_batch(numpy, session, weights, images[:1]), check_batch(numpy, session, weights, images)
    if float(numpy.abs(seven[0] - one[0]).max()) > RTOL * float(numpy.abs(one).max()):
        fail("the first image's logits differ between batch 1 and batch 7")
    print(f"PASSED: the model exported by {'onnx_twin.py' if args.exporter == 'twin' else 'cudagap-infer'} matches "
          f"the reference forward pass (onnxruntime {onnxruntime.__version__}, CPU)")


def gpu_proof(args):
    import numpy  # noqa: PLC0415 (in the Python the fixture found)

    work, checkpoint, _ = prepare(args, numpy)
    report = work / "infer.json"
    twin = args.exporter == "twin"
    done = run_infer([args.infer, "--checkpoint", checkpoint, "--data", args.data, "--test-limit", "32",
                      "--precision", args.precision, "--profile", args.profile, "--buckets", "1,8,32",
                      "--batch-sizes", "1,32", "--requests", "5", "--warmup", "2", "--quiet",
                      "--outputs", work / "outputs.safetensors", *([] if twin else ["--export-onnx", work / "m.onnx"]),
                      "--json", report], work)
    if done.returncode != 0:
        fail(f"cudagap-infer exited {done.returncode}")
    found = json.loads(report.read_text(encoding="utf-8"))
    if not found.get("gpu_available"):
        skip(f"no GPU: {found.get('reason', 'cudagap-infer found none')}")
    if twin:
        twin_export(work, checkpoint)
    tf32 = ["--tf32"] if args.precision == "fp32" and args.profile == "production" else []
    compare = [sys.executable, SOURCE / "bench" / "infer" / "compare_onnx.py", "--outputs",
               work / "outputs.safetensors", "--model", work / "m.onnx", "--precision", args.precision, *tf32]
    done = run_infer(compare, work)
    if done.returncode == SKIP:
        skip(done.stdout.strip())
    if done.returncode != 0:
        fail(f"cudagap's outputs do not match ONNX Runtime's (compare_onnx.py exited {done.returncode})")
    print("PASSED: cudagap's GPU outputs match ONNX Runtime's" + (" on the Python twin's model" if twin else ""))


# ---- the twin against cudagap's exporter ------------------------------------------------------

def differences(first, second):
    """How two ModelProtos differ, but for their producer and doc string: one line per field."""
    found = [f"{field}: {getattr(first, field)} vs {getattr(second, field)}" for field in ("ir_version",)
             if getattr(first, field) != getattr(second, field)]
    if list(first.opset_import) != list(second.opset_import):
        found.append(f"opset_import: {list(first.opset_import)} vs {list(second.opset_import)}")
    if first.graph.name != second.graph.name:
        found.append(f"graph name: {first.graph.name} vs {second.graph.name}")
    for field in ("input", "output", "node", "value_info", "initializer"):
        ours, theirs = list(getattr(first.graph, field)), list(getattr(second.graph, field))
        if len(ours) != len(theirs):
            found.append(f"{field}: {len(ours)} vs {len(theirs)} entries")
            continue
        found += [f"{field} '{a.name}' differs from '{b.name}'" for a, b in zip(ours, theirs) if a != b]
    return found


def twin_proof(args):
    import numpy  # noqa: PLC0415 (in the Python the fixture found)
    import onnx  # noqa: PLC0415
    import onnxruntime  # noqa: PLC0415

    work, checkpoint, _ = prepare(args, numpy)
    (work / "cudagap.onnx").write_bytes(export(args, work, checkpoint).read_bytes())
    (work / "m.onnx").unlink()
    twin = twin_export(work, checkpoint, "twin.onnx")
    models = {"cudagap": onnx.load(str(work / "cudagap.onnx")), "twin": onnx.load(str(twin))}
    found = differences(models["cudagap"], models["twin"])
    if found:
        fail("the twin's model differs from cudagap-infer's: " + "; ".join(found[:10]))
    producers = (models["cudagap"].producer_name, models["twin"].producer_name)
    if producers != ("cudagap-infer", onnx_twin.PRODUCER):
        fail(f"the producers are {producers}: each model must say which exporter made it")
    graph = models["twin"].graph
    print(f"same model: IR {models['twin'].ir_version}, opset {models['twin'].opset_import[0].version}, "
          f"{len(graph.node)} nodes, {len(graph.initializer)} initializers, {len(graph.value_info)} intermediate "
          f"shapes; producers {producers[0]!r} and {producers[1]!r}")
    tampered = onnx.ModelProto()
    tampered.CopyFrom(models["twin"])
    raw = bytearray(tampered.graph.initializer[4].raw_data)
    raw[0] ^= 1
    tampered.graph.initializer[4].raw_data = bytes(raw)
    if differences(models["cudagap"], tampered) != ["initializer 'fc1.weight' differs from 'fc1.weight'"]:
        fail(f"a changed weight of fc1 is not seen: {differences(models['cudagap'], tampered)}")
    images = numpy.random.default_rng(7).standard_normal((7, 1, 28, 28)).astype(numpy.float32)
    logits = [onnxruntime.InferenceSession(str(work / name), providers=["CPUExecutionProvider"]).run(
        ["output"], {"input": images})[0] for name in ("cudagap.onnx", "twin.onnx")]
    if not numpy.array_equal(logits[0], logits[1]):
        fail(f"ONNX Runtime's logits of the two differ by up to {float(numpy.abs(logits[0] - logits[1]).max()):.3g}")
    print("PASSED: the Python twin writes cudagap-infer's model, and ONNX Runtime's logits of both are equal "
          "bit for bit")


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("proof", choices=("cpu", "gpu", "twin"))
    parser.add_argument("--infer", required=True, help="the cudagap-infer program")
    parser.add_argument("--env", required=True, help="the record onnxruntime_env.py wrote")
    parser.add_argument("--work", required=True, help="a folder of its own (emptied first)")
    parser.add_argument("--data", help="Fashion-MNIST IDX files (the GPU proof's inputs)")
    parser.add_argument("--precision", choices=("fp16", "bf16", "fp32"), default="fp16")
    parser.add_argument("--profile", default="production")
    parser.add_argument("--exporter", choices=("cudagap", "twin"), default="cudagap",
                        help="who makes the ONNX model: cudagap-infer --export-onnx, or bench/infer/onnx_twin.py")
    args = parser.parse_args(argv)
    if args.proof == "gpu" and not args.data:
        parser.error("the GPU proof needs --data")
    in_onnx_python(args, argv)
    {"cpu": cpu_proof, "gpu": gpu_proof, "twin": twin_proof}[args.proof](args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
