"""Tests of bench/infer and of the ONNX Runtime proofs' tools, without a GPU, PyTorch or
onnxruntime: safetensors_file.py and compare_onnx.py (against a fake onnxruntime whose answers
the tests know), baselines.py (against the fake torch and the fake onnxruntime), the driver
run.py against stand-ins of cudagap-infer and baselines.py that answer as the contract (notes of
issue 13: INFER_CLI) says, gpu-check's arguments for it, and tests/examples' onnxruntime_env.py
and test_onnx_export.py (the fixture's skip, the reference forward pass, the proof's failures).
The real proofs run in ctest (tests/examples/onnxruntime_tests.cmake) and on a GPU host.

ctest runs one class per test (tests/bench/CMakeLists.txt).
"""

import importlib.util
import json
import os
import shutil
import stat
import struct
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

SOURCE = Path(os.environ.get("CUDAGAP_SOURCE_DIR", Path(__file__).resolve().parents[2]))
INFER = SOURCE / "bench" / "infer"
DRIVER, BASELINES, COMPARE = INFER / "run.py", INFER / "baselines.py", INFER / "compare_onnx.py"
RESULTS = SOURCE / "bench" / "harness" / "results.py"
EXAMPLES = SOURCE / "tests" / "examples"
HERE = Path(__file__).resolve().parent
FAKE_TORCH, FAKE_ORT = HERE / "fake_torch", HERE / "fake_onnxruntime"
sys.path.insert(0, str(INFER))
sys.path.insert(0, str(HERE))
import safetensors_file  # noqa: E402 (bench/infer's)
from test_train import SHAPES, run, write_dataset  # noqa: E402 (the model's shapes, the runner, tiny IDX sets)

try:
    import numpy
except ImportError:
    numpy = None


def needs_numpy(test):
    return unittest.skipIf(numpy is None, "numpy is not importable here: pip install numpy")(test)


def load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def write_checkpoint(path, shapes=SHAPES, value=0.01):
    safetensors_file.write(path, {n: (s, [value] * _count(s)) for n, s in shapes.items()}, {"format": "pt"})


def _count(shape):
    total = 1
    for n in shape:
        total *= n
    return total


def _header(header):
    text = json.dumps(header).encode()
    return struct.pack("<Q", len(text)) + text


def write_outputs(path, images, logits):
    safetensors_file.write(path, {"input": (list(images.shape), images.astype("<f4").tobytes()),
                                  "output": (list(logits.shape), logits.astype("<f4").tobytes())})


class InferFilesTests(unittest.TestCase):
    """safetensors_file.py and compare_onnx.py (against the fake onnxruntime)."""

    def setUp(self):
        self.dir = Path(tempfile.mkdtemp(prefix="cudagap-infer-files-"))

    def tearDown(self):
        shutil.rmtree(self.dir)

    def test_safetensors_round_trip_and_layout(self):
        path = self.dir / "t.safetensors"
        safetensors_file.write(path, {"a": ([2, 3], [1, 2, 3, 4, 5, 6.5]), "b": ([1], struct.pack("<f", -2.0))},
                               {"format": "pt"})
        size = struct.unpack("<Q", path.read_bytes()[:8])[0]
        self.assertEqual(size % 8, 0)  # the data is 8-byte aligned
        header = json.loads(path.read_bytes()[8:8 + size])
        self.assertEqual(header["__metadata__"], {"format": "pt"})
        self.assertEqual(header["b"], {"dtype": "F32", "shape": [1], "data_offsets": [24, 28]})
        found = safetensors_file.read(path)
        self.assertEqual(list(safetensors_file.floats(found["a"][1])), [1, 2, 3, 4, 5, 6.5])
        self.assertEqual((found["b"][0], list(safetensors_file.floats(found["b"][1]))), ([1], [-2.0]))
        self.assertFalse((self.dir / "t.safetensors.partial").exists())
        with self.assertRaisesRegex(ValueError, "'a': 5 values for shape \\[2, 3\\]"):
            safetensors_file.write(path, {"a": ([2, 3], [1, 2, 3, 4, 5])})

    def test_safetensors_reader_names_what_is_wrong(self):
        path = self.dir / "bad.safetensors"
        cases = [(b"\x05\0\0", "3 bytes"), (b"\xff" * 8 + b"{}", "header length"),
                 (b"\x02\0\0\0\0\0\0\0[]", "no JSON object"), (b"\x03\0\0\0\0\0\0\0{{{", "header"),
                 (_header({"x": {"dtype": "F16", "shape": [1], "data_offsets": [0, 2]}}) + b"\0\0", "F16, expected F32")]
        for blob, words in cases:
            path.write_bytes(blob)
            with self.assertRaises(safetensors_file.FormatError, msg=words) as caught:
                safetensors_file.read(path)
            self.assertIn(words, str(caught.exception))
            self.assertIn(str(path), str(caught.exception))
        safetensors_file.write(path, {"x": ([4], [1, 2, 3, 4])})
        path.write_bytes(path.read_bytes()[:-4])  # truncated
        with self.assertRaisesRegex(safetensors_file.FormatError, "do not hold F32 \\[4\\]"):
            safetensors_file.read(path)

    def compare(self, *args, env=None):
        paths = os.pathsep.join([str(FAKE_ORT)])
        return run([sys.executable, COMPARE, "--outputs", self.dir / "out.safetensors", "--model",
                    self.dir / "m.onnx", "--json", self.dir / "c.json", *args],
                   env={"PYTHONPATH": paths, **(env or {})})

    def scenario(self, scale=1.0, change=None):
        """Inputs whose first 10 values decide the fake's logits (scale x them); @change(logits)
        perturbs cudagap's side."""
        rng = numpy.random.default_rng(3)
        images = rng.standard_normal((6, 1, 28, 28)).astype(numpy.float32)
        images[:, 0, 0, :10] = numpy.linspace(-1, 1, 10)[::-1] + numpy.arange(6)[:, None] * 0.0
        images[5, 0, 0, :2] = [1.0, 0.999]  # image 5: a close call between classes 0 and 1
        logits = scale * images.reshape(6, -1)[:, :10]
        if change:
            change(logits)
        write_outputs(self.dir / "out.safetensors", images, logits)
        (self.dir / "m.onnx").write_text(json.dumps({"scale": scale}))

    @needs_numpy
    def test_match_mismatch_and_close_calls(self):
        self.scenario(change=lambda l: l.__iadd__(0.004))
        result = self.compare("--precision", "fp16")
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
        self.assertIn("MATCH: 6 images, cudagap (fp16) against ONNX Runtime 0.0+fake on CPUExecutionProvider", result.stdout)
        figures = json.loads((self.dir / "c.json").read_text())
        self.assertAlmostEqual(figures["max_abs_error"], 0.004, places=5)
        self.assertEqual((figures["argmax_compared"], figures["close_calls"]), (5, 1))
        # The same difference is too much for FP32, and 3% too much for FP16 but not for BF16.
        result = self.compare("--precision", "fp32")
        self.assertEqual(result.returncode, 1)
        self.assertIn("MISMATCH", result.stdout)
        self.scenario(change=lambda l: l.__setitem__((2, 7), l[2, 7] + 0.03))
        result = self.compare("--precision", "fp16")
        self.assertEqual(result.returncode, 1)
        self.assertIn("worst: image 2 class 7", result.stdout)
        self.assertEqual(self.compare("--precision", "bf16").returncode, 0)
        # FP32 under TF32 (cudagap's production profile) is held to 1e-2.
        self.scenario(change=lambda l: l.__iadd__(0.004))
        self.assertEqual(self.compare("--precision", "fp32", "--tf32").returncode, 0)

    @needs_numpy
    def test_predictions_must_agree_where_the_call_is_clear(self):
        def swap_close(l):
            l[5, 0], l[5, 1] = l[5, 1] - 1e-4, l[5, 0] + 1e-4
        self.scenario(change=swap_close)
        result = self.compare()
        self.assertEqual(result.returncode, 0, result.stdout)
        self.assertIn("1 close calls (1 swapped)", result.stdout)

        def swap_clear(l):
            l[1, 0], l[1, 9] = l[1, 9], l[1, 0]
        self.scenario(scale=100.0, change=swap_clear)
        result = self.compare("--precision", "bf16")
        self.assertEqual(result.returncode, 1)
        self.assertIn("predictions differ on images [1]", result.stdout)

    @needs_numpy
    def test_provider_choice_and_fallback(self):
        self.scenario()
        result = self.compare(env={"FAKE_ORT_PROVIDERS": "CUDAExecutionProvider,CPUExecutionProvider"})
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(json.loads((self.dir / "c.json").read_text())["provider"], "CUDAExecutionProvider")
        result = self.compare(env={"FAKE_ORT_PROVIDERS": "CUDAExecutionProvider,CPUExecutionProvider",
                                   "FAKE_ORT_CUDA_FAILS": "1"})
        self.assertEqual(json.loads((self.dir / "c.json").read_text())["provider"], "CPUExecutionProvider")
        result = self.compare("--provider", "cuda")
        self.assertEqual(result.returncode, 77)
        self.assertIn("has no CUDA provider", result.stdout)

    @needs_numpy
    def test_bad_files_fail_and_a_missing_runtime_skips(self):
        self.scenario()
        (self.dir / "m.onnx").write_text("not a model")
        result = self.compare()
        self.assertEqual(result.returncode, 1)
        self.assertIn("ONNX Runtime could not run", result.stderr)
        (self.dir / "m.onnx").write_text(json.dumps({"scale": 1.0}))
        safetensors_file.write(self.dir / "out.safetensors", {"input": ([1, 1, 28, 28], [0.0] * 784)})
        result = self.compare()
        self.assertEqual(result.returncode, 1)
        self.assertIn("no tensor 'output' (found: input)", result.stderr)
        safetensors_file.write(self.dir / "out.safetensors", {"input": ([1, 1, 28, 28], [0.0] * 784),
                                                              "output": ([2, 10], [0.0] * 20)})
        self.assertIn("1 inputs but 2 outputs", self.compare().stderr)
        if importlib.util.find_spec("onnxruntime") is None:
            result = run([sys.executable, COMPARE, "--outputs", self.dir / "out.safetensors", "--model", self.dir / "m.onnx"])
            self.assertEqual(result.returncode, 77)
            self.assertIn("onnxruntime is not importable", result.stdout)
        self.assertEqual(run([sys.executable, COMPARE, "--outputs", "x", "--model", "y", "--precision", "fp8"]).returncode, 2)


class InferBaselinesTests(unittest.TestCase):
    """bench/infer/baselines.py against the fake torch and the fake onnxruntime."""

    def setUp(self):
        self.dir = Path(tempfile.mkdtemp(prefix="cudagap-infer-baselines-"))
        self.checkpoint = self.dir / "ck.safetensors"
        write_checkpoint(self.checkpoint)

    def tearDown(self):
        shutil.rmtree(self.dir)

    def baselines(self, *args, env=None, code=0):
        paths = os.pathsep.join([str(FAKE_TORCH), str(FAKE_ORT)])
        result = run([sys.executable, BASELINES, "--checkpoint", self.checkpoint, "--requests", "20",
                      "--warmup", "2", *args], env={"PYTHONPATH": paths, **(env or {})})
        self.assertEqual(result.returncode, code, result.stdout + result.stderr)
        return json.loads(result.stdout)

    def test_torch_eager_and_compile_per_batch_size(self):
        for engine in ("torch-eager", "torch-compile"):
            report = self.baselines("--engine", engine, "--precision", "bf16")
            self.assertTrue(report["ok"], report)
            self.assertEqual((report["engine"], report["math"], report["device"]), (engine, "BF16", "Fake GPU"))
            self.assertEqual([r["batch_size"] for r in report["results"]], [1, 32, 256])
            for entry in report["results"]:
                self.assertEqual(entry["requests"], 20)
                lat = entry["latency_ms"]
                self.assertLessEqual(lat["min"], lat["p50"])
                self.assertLessEqual(lat["p50"], lat["p90"])
                self.assertLessEqual(lat["p99"], lat["max"])
                self.assertGreater(entry["images_per_second"], 0)
            self.assertIn(report["loader"], ("safetensors.torch.load_file",
                                             "torch_train.py's safetensors reader (the safetensors package is not importable)"))

    def test_requests_stop_after_max_seconds(self):
        report = self.baselines("--engine", "torch-eager", "--requests", "10000000", "--max-seconds", "0.3",
                                "--batch-sizes", "1")
        self.assertLess(report["results"][0]["requests"], 10000000)
        self.assertGreaterEqual(report["results"][0]["requests"], 5)

    def test_percentiles_interpolate_between_ranks(self):
        module = load(BASELINES, "baselines")
        values = [float(v) for v in range(1, 101)]
        self.assertAlmostEqual(module.percentile(values, 0.5), 50.5)
        self.assertAlmostEqual(module.percentile(values, 0.99), 99.01)
        self.assertEqual(module.percentile([3.0], 0.9), 3.0)

    def test_without_cuda_or_torch_nothing_is_measured(self):
        report = self.baselines("--engine", "torch-compile", env={"FAKE_TORCH_NO_CUDA": "1"})
        self.assertEqual(report, {"ok": False, "engine": "torch-compile", "reason": "torch 0.0+fake sees no CUDA device"})
        if importlib.util.find_spec("torch") is None:
            result = run([sys.executable, BASELINES, "--engine", "torch-eager", "--checkpoint", self.checkpoint])
            self.assertEqual(result.returncode, 0)
            self.assertIn("torch is not importable", json.loads(result.stdout)["reason"])

    def test_checkpoint_of_another_model_is_an_error(self):
        shapes = dict(SHAPES, **{"fc1.weight": [512, 3136]})
        write_checkpoint(self.checkpoint, shapes)
        report = self.baselines("--engine", "torch-eager", code=1)
        self.assertIn("'fc1.weight' is [512, 3136], expected [1024, 3136]", report["error"])
        self.assertEqual(run([sys.executable, BASELINES, "--engine", "tvm", "--checkpoint", "x"]).returncode, 2)
        self.assertEqual(run([sys.executable, BASELINES, "--engine", "onnxruntime", "--checkpoint", "x",
                              "--batch-sizes", "0,3"]).returncode, 2)

    @needs_numpy
    def test_onnxruntime_times_and_compares(self):
        model = self.dir / "m.onnx"
        model.write_text(json.dumps({"scale": 2.0}))
        report = self.baselines("--engine", "onnxruntime", "--model", model, "--batch-sizes", "1,7")
        self.assertEqual((report["provider"], report["math"], report["device"]), ("CPUExecutionProvider", "FP32", "cpu"))
        self.assertEqual([r["batch_size"] for r in report["results"]], [1, 7])
        self.assertNotIn("comparison", report)
        images = numpy.ones((3, 1, 28, 28), dtype=numpy.float32)
        write_outputs(self.dir / "out.safetensors", images, 2.0 * images.reshape(3, -1)[:, :10])
        report = self.baselines("--engine", "onnxruntime", "--model", model, "--compare-outputs",
                                self.dir / "out.safetensors", "--batch-sizes", "1",
                                env={"FAKE_ORT_PROVIDERS": "CUDAExecutionProvider,CPUExecutionProvider"})
        self.assertEqual((report["provider"], report["math"]), ("CUDAExecutionProvider", "TF32"))
        self.assertTrue(report["comparison"]["ok"])
        self.assertEqual(report["comparison"]["images"], 3)
        # FP32 under cudagap-infer's production profile is TF32: held to 1e-2, not 1e-4.
        write_outputs(self.dir / "out.safetensors", images, 2.0 * images.reshape(3, -1)[:, :10] * 1.004)
        report = self.baselines("--engine", "onnxruntime", "--model", model, "--precision", "fp32",
                                "--compare-outputs", self.dir / "out.safetensors", "--batch-sizes", "1")
        self.assertEqual((report["comparison"]["ok"], report["comparison"]["precision"]), (True, "tf32"))
        report = self.baselines("--engine", "onnxruntime", "--model", self.dir / "absent.onnx", code=1)
        self.assertIn("no ONNX model at", report["error"])


STUB_INFER = r'''#!/usr/bin/env python3
# A stand-in of cudagap-infer that answers as its contract says (STUB_MODE: gpu, nogpu, fail;
# STUB_ONNX: yes, no (built without the ONNX library), old (its --version does not say)).
import json, os, sys
args = sys.argv[1:]
def value(flag, default=None):
    return args[args.index(flag) + 1] if flag in args else default
onnx = os.environ.get("STUB_ONNX", "yes")
if args == ["--version"]:
    print("cudagap-infer 0.9.0")
    if onnx != "old":
        print("ONNX export: " + ("yes" if onnx == "yes" else "no (built without the ONNX C++ library)"))
    sys.exit(0)
with open(os.environ["STUB_LOG"], "a") as log:
    log.write("infer " + " ".join(args) + "\n")
mode = os.environ.get("STUB_MODE", "gpu")
if mode == "fail":
    print("cudagap-infer: tensor 'fc1.weight' is [512, 3136], expected [1024, 3136]", file=sys.stderr)
    sys.exit(1)
if value("--export-onnx"):
    if onnx == "no":
        print("cudagap-infer: --export-onnx: this program was built without the ONNX C++ library", file=sys.stderr)
        sys.exit(1)
    open(value("--export-onnx"), "w").write("stub onnx")
gpu = mode == "gpu"
results = []
for m in ("eager", "graph"):
    for b in map(int, value("--batch-sizes").split(",")):
        p50 = float(os.environ.get("STUB_GRAPH_MS" if m == "graph" else "STUB_EAGER_MS", "0.1")) * (1 + b / 256)
        tail = float(os.environ.get("STUB_TAIL", "1.2"))
        results.append({"mode": m, "batch_size": b, "bucket": b, "requests": int(value("--requests")),
                        "latency_ms": {"p50": p50, "p90": p50 * 1.1, "p99": p50 * tail, "mean": p50},
                        "images_per_second": 1000 * b / p50})
report = {"program": "cudagap-infer", "version": "0.9.0", "device": "Stub GPU" if gpu else None,
          "gpu_available": gpu, "precision": value("--precision"), "checkpoint": value("--checkpoint"),
          "seeded": False, "buckets": [1, 8, 32, 128, 256], "results": results if gpu else [],
          "test_accuracy": {"eager": 0.9, "graph": 0.9} if gpu else None, "test_images": 10000,
          "onnx": {"path": value("--export-onnx"), "opset": 17} if value("--export-onnx") else None}
if gpu:
    open(value("--outputs"), "w").write("stub outputs")
else:
    report["reason"] = "no CUDA device (stub)"
with open(value("--json"), "w") as out:
    json.dump(report, out)
'''

STUB_BASELINES = r'''#!/usr/bin/env python3
# A stand-in of baselines.py (STUB_TORCH: ok, notorch; STUB_ORT: ok, noort, fail; STUB_MATCH: 1, 0).
import json, os, sys
args = sys.argv[1:]
def value(flag, default=None):
    return args[args.index(flag) + 1] if flag in args else default
with open(os.environ["STUB_LOG"], "a") as log:
    log.write("baselines " + " ".join(args) + "\n")
engine = value("--engine")
assert open(value("--checkpoint"), "rb").read(8)  # the checkpoint the driver gave cudagap-infer too
if engine.startswith("torch") and os.environ.get("STUB_TORCH") == "notorch":
    print(json.dumps({"ok": False, "engine": engine, "reason": "torch is not importable (stub)"}))
    sys.exit(0)
if engine == "onnxruntime":
    assert open(value("--model")).read() == "stub onnx"
    if os.environ.get("STUB_ORT") == "noort":
        print(json.dumps({"ok": False, "engine": engine, "reason": "onnxruntime is not importable (stub)"}))
        sys.exit(0)
    if os.environ.get("STUB_ORT") == "fail":
        print(json.dumps({"ok": False, "engine": engine, "error": "RuntimeError: stub"}))
        sys.exit(1)
ms = float(os.environ.get("STUB_" + engine.replace("-", "_").upper() + "_MS", "0.4"))
results = [{"batch_size": b, "requests": int(value("--requests")),
            "latency_ms": {"p50": ms * (1 + b / 256), "p90": ms * 1.1 * (1 + b / 256), "p99": ms * 1.3 * (1 + b / 256),
                           "mean": ms * (1 + b / 256), "min": ms * 0.9 * (1 + b / 256), "max": ms * 2 * (1 + b / 256)},
            "images_per_second": 1000 * b / (ms * (1 + b / 256))} for b in map(int, value("--batch-sizes").split(","))]
report = {"ok": True, "engine": engine, "device": "Stub GPU", "provider": "CUDAExecutionProvider" if engine == "onnxruntime" else "cuda",
          "math": "TF32" if engine == "onnxruntime" else "FP16", "setup_seconds": 20.0 if engine == "torch-compile" else 1.0,
          "results": results}
if value("--compare-outputs"):
    assert open(value("--compare-outputs")).read() == "stub outputs"
    ok = os.environ.get("STUB_MATCH", "1") == "1"
    report["comparison"] = {"ok": ok, "images": 64, "provider": "CUDAExecutionProvider", "max_abs_error": 0.01,
                            "scale": 5.0, "max_error_over_scale": 0.002 if ok else 0.2, "argmax_agree": 60,
                            "argmax_compared": 60, "close_calls": 4, "close_calls_swapped": 1}
print(json.dumps(report))
'''


STUB_TWIN = r'''#!/usr/bin/env python3
# A stand-in of bench/infer/onnx_twin.py (STUB_TWIN: ok, noonnx).
import os, sys
args = sys.argv[1:]
with open(os.environ["STUB_LOG"], "a") as log:
    log.write("twin " + " ".join(args) + "\n")
if os.environ.get("STUB_TWIN") == "noonnx":
    print("onnx_twin.py: skipped: onnx is not importable by python3 (pip install onnx)")
    sys.exit(77)
assert open(args[args.index("--checkpoint") + 1], "rb").read(8)
open(args[args.index("--out") + 1], "w").write("stub onnx")
'''


def settings(report):
    return next(note for note in report["notes"] if note.startswith("settings: "))


class InferDriverTests(unittest.TestCase):
    """bench/infer/run.py with stand-ins: the side-by-side report, its targets, its skips."""

    def setUp(self):
        self.dir = Path(tempfile.mkdtemp(prefix="cudagap-bench-infer-"))
        self.program = self.dir / "cudagap-infer"
        self.program.write_text(STUB_INFER)
        self.program.chmod(self.program.stat().st_mode | stat.S_IXUSR)
        self.stub = self.dir / "baselines_stub.py"
        self.stub.write_text(STUB_BASELINES)
        self.twin = self.dir / "twin_stub.py"
        self.twin.write_text(STUB_TWIN)
        self.log = self.dir / "calls.log"
        self.json = self.dir / "infer.json"
        self.data = write_dataset(self.dir / "data")

    def tearDown(self):
        shutil.rmtree(self.dir)

    def driver(self, *args, env=None, program=True):
        command = [sys.executable, DRIVER, "--json", self.json, "--data", self.data,
                   "--baselines-script", self.stub, "--twin-script", self.twin, *args]
        if program:
            command += ["--cudagap-infer", self.program]
        result = run(command, env={"STUB_LOG": str(self.log), **(env or {})})
        report = json.loads(self.json.read_text()) if self.json.exists() else None
        if report is not None:
            checked = run([sys.executable, RESULTS, "check", self.json])
            self.assertEqual(checked.returncode, 0, checked.stdout + checked.stderr)
        return result, report

    def targets(self, report):
        return {t["name"]: t for t in report["targets"]}

    def test_all_parts_side_by_side_with_targets(self):
        result, report = self.driver("--markdown", self.dir / "infer.md",
                                     env={"STUB_GRAPH_MS": "0.05", "STUB_TORCH_COMPILE_MS": "0.2"})
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
        self.assertTrue(result.stdout.startswith("== cudagap benchmark: infer =="))
        self.assertEqual(len(report["rows"]), 15)
        self.assertEqual([r["variant"] for r in report["rows"][:5]],
                         ["cudagap eager", "cudagap graph", "onnxruntime (CUDA)", "torch eager",
                          "torch.compile (reduce-overhead)"])
        graph = report["rows"][1]
        self.assertEqual((graph["case"], graph["math"], graph["repetitions"]), ("batch 1 fp16", "FP16", 1000))
        self.assertIn("min/max not reported: p50/p99 instead", graph["timing"])
        self.assertAlmostEqual(graph["max_ms"], graph["latency_ms"]["p99"])
        targets = self.targets(report)
        latency = targets["batch-1 p50 latency of cudagap graph <= 0.5x torch.compile reduce-overhead"]
        self.assertEqual((latency["status"], latency["measured"]), ("met", "0.25x"))
        self.assertEqual(targets["batch-256 images/s of cudagap graph >= torch.compile"]["measured"], "4.00x")
        self.assertEqual(targets["p99/p50 <= 1.5"]["status"], "met")
        self.assertEqual(targets["cudagap's logits match ONNX Runtime's"]["status"], "met")
        ratios = [r for r in report["ratios"] if r["case"] == "batch 1 fp16"]
        self.assertEqual(len(ratios), 4)
        self.assertIn("| batch 256 fp16 | cudagap graph | FP16 |", (self.dir / "infer.md").read_text())
        # Every part loaded the one checkpoint; cudagap-infer exported it and wrote its outputs.
        calls = self.log.read_text().splitlines()
        self.assertEqual([c.split()[0] + (" " + c.split()[2] if c.startswith("baselines") else "") for c in calls],
                         ["infer", "baselines torch-eager", "baselines onnxruntime", "baselines torch-compile"])
        checkpoints = {c.split("--checkpoint ")[1].split()[0] for c in calls}
        self.assertEqual(len(checkpoints), 1)
        self.assertTrue(checkpoints.pop().endswith("random.safetensors"))
        self.assertIn("--mode both", calls[0])
        self.assertIn("--batch-sizes 1,32,256 --requests 1000 --warmup 20", calls[0])
        self.assertIn("--compare-outputs", calls[2])
        self.assertIn("random weights (seed 42)", settings(report))

    def test_without_an_exporter_the_python_twin_makes_the_model_and_says_so(self):
        result, report = self.driver(env={"STUB_ONNX": "no"})
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
        calls = self.log.read_text().splitlines()
        self.assertEqual([c.split()[0] for c in calls], ["infer", "twin", "baselines", "baselines", "baselines"])
        self.assertNotIn("--export-onnx", calls[0])
        checkpoint = calls[0].split("--checkpoint ")[1].split()[0]
        self.assertEqual(calls[1].split("--checkpoint ")[1].split()[0], checkpoint)  # the same weights
        self.assertIn("--compare-outputs", calls[3])
        notes = "\n".join(report["notes"])
        self.assertIn("ONNX model made by bench/infer/onnx_twin.py, the Python twin of cudagap-infer's exporter, from "
                      "the same checkpoint: this cudagap-infer has none (ONNX export: no (built without the ONNX C++ "
                      "library))", notes)
        self.assertEqual(report["infer"]["onnx_model"]["exporter"], "bench/infer/onnx_twin.py")
        onnx = self.targets(report)["cudagap's logits match ONNX Runtime's"]
        self.assertEqual(onnx["status"], "met")
        self.assertIn("(the model from the Python twin of cudagap's exporter)", onnx["note"])
        # With its exporter, cudagap-infer's model, said so too; an older program that does not say
        # is taken to export.
        for answer in ("yes", "old"):
            self.log.unlink()
            result, report = self.driver(env={"STUB_ONNX": answer})
            self.assertEqual(report["infer"]["onnx_model"]["exporter"], "cudagap-infer --export-onnx")
            self.assertIn("--export-onnx", self.log.read_text().splitlines()[0])
            self.assertNotIn("twin", self.log.read_text())
            self.assertNotIn("Python twin", self.targets(report)["cudagap's logits match ONNX Runtime's"]["note"])

    def test_without_an_exporter_or_onnx_nothing_runs_in_onnx_runtime_and_both_reasons_are_named(self):
        result, report = self.driver(env={"STUB_ONNX": "no", "STUB_TWIN": "noonnx"})
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertNotIn("onnxruntime", {r["variant"].split()[0] for r in report["rows"]})
        self.assertIn("onnxruntime: not measured: no ONNX model: cudagap-infer has none (ONNX export: no (built "
                      "without the ONNX C++ library)) and onnx_twin.py exited 77: onnx_twin.py: skipped: onnx is not "
                      "importable by python3 (pip install onnx)", report["notes"])
        self.assertIsNone(report["infer"]["onnx_model"])

    def test_targets_not_met_are_reported_not_asserted(self):
        result, report = self.driver(env={"STUB_GRAPH_MS": "0.3", "STUB_TORCH_COMPILE_MS": "0.2",
                                          "STUB_TAIL": "2.0", "STUB_MATCH": "0"})
        self.assertEqual(result.returncode, 0, result.stderr)
        for name, target in self.targets(report).items():
            self.assertEqual(target["status"], "not met", name)
        self.assertEqual(self.targets(report)["p99/p50 <= 1.5"]["measured"], "2.00")

    def test_no_gpu_is_a_skip_and_onnxruntime_may_still_run(self):
        result, report = self.driver(env={"STUB_MODE": "nogpu", "STUB_TORCH": "notorch"})
        self.assertEqual(result.returncode, 77, result.stderr)
        self.assertIn("GPU part skipped: no CUDA device (stub)", result.stdout)
        self.assertEqual({r["variant"] for r in report["rows"]}, {"onnxruntime (CUDA)"})
        self.assertEqual({t["status"] for t in report["targets"]}, {"not measured"})
        self.assertEqual({t["note"] for t in report["targets"]}, {"GPU part skipped"})
        self.assertIn("torch.compile (reduce-overhead): not measured: torch is not importable (stub)", report["notes"])
        self.assertNotIn("--compare-outputs", self.log.read_text())  # no GPU, no outputs to compare

    def test_no_program_and_no_onnxruntime_exit_0_with_reasons(self):
        result, report = self.driver("--quick", "--no-torch", program=False, env={"STUB_ORT": "noort"})
        self.assertEqual(result.returncode, 0, result.stderr)
        notes = "\n".join(report["notes"])
        self.assertIn("cudagap graph: not measured: cudagap-infer is not built here", notes)
        self.assertIn("onnxruntime: not measured: no ONNX model", notes)
        self.assertIn("torch eager: not measured: --no-torch", notes)
        self.assertEqual(report["rows"], [])
        self.assertIn("100 requests per batch size after 5 warm-up ones", notes)

    def test_a_failing_part_is_an_error_and_the_others_still_run(self):
        result, report = self.driver(env={"STUB_MODE": "fail", "STUB_ORT": "fail"})
        self.assertEqual(result.returncode, 1)
        self.assertIn("cudagap: cudagap-infer exited 1: cudagap-infer: tensor 'fc1.weight'", report["errors"][0])
        self.assertEqual({r["variant"] for r in report["rows"]}, {"torch eager", "torch.compile (reduce-overhead)"})
        self.assertIn("onnxruntime: not measured: no ONNX model", "\n".join(report["notes"]))
        result, report = self.driver(env={"STUB_ORT": "fail"})
        self.assertEqual(report["errors"], ["onnxruntime: RuntimeError: stub"])

    def test_budget_leaves_torch_compile_out_and_a_checkpoint_is_used_as_given(self):
        checkpoint = self.dir / "trained.safetensors"
        write_checkpoint(checkpoint)
        result, report = self.driver("--budget", "30", "--compile-seconds", "60", "--checkpoint", checkpoint,
                                     "--batch-sizes", "1,8", "--buckets", "1,8")
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertNotIn("torch.compile (reduce-overhead)", {r["variant"] for r in report["rows"]})
        targets = self.targets(report)
        self.assertRegex(targets["batch-1 p50 latency of cudagap graph <= 0.5x torch.compile reduce-overhead"]["note"],
                         r"torch.compile \(reduce-overhead\): the 30 s budget is spent")
        self.assertIn(f"--checkpoint {checkpoint} ", self.log.read_text())
        self.assertIn("--buckets 1,8", self.log.read_text())
        self.assertIn(f"checkpoint {checkpoint}", settings(report))

    def test_a_missing_batch_size_is_named(self):
        result, report = self.driver("--batch-sizes", "1,32")
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(self.targets(report)["batch-256 images/s of cudagap graph >= torch.compile"]["note"],
                         "batch size 256 is not among --batch-sizes")

    def test_cpu_only_and_bad_arguments(self):
        result, report = self.driver("--cpu-only", "--no-onnxruntime")
        self.assertEqual(result.returncode, 77)
        self.assertFalse(self.log.exists())
        for args in (["--batch-sizes", "1,0"], ["--batch-sizes", "1,1"], ["--requests", "0"],
                     ["--precision", "int8"], ["--budget", "-1"]):
            self.json.unlink(missing_ok=True)
            result, _ = self.driver(*args)
            self.assertEqual(result.returncode, 2, args)
            self.assertFalse(self.json.exists())

    def test_the_random_checkpoint_is_this_model_with_pytorchs_initialisation(self):
        module = load(DRIVER, "infer_run")
        path = self.dir / "random.safetensors"
        module.write_random_checkpoint(path, 5)
        torch_train = load(SOURCE / "bench" / "train" / "torch_train.py", "torch_train_for_infer")
        self.assertEqual(torch_train.checkpoint_problems(str(path)), [])
        values = safetensors_file.floats(safetensors_file.read(path)["conv1.weight"][1])
        self.assertLessEqual(max(abs(v) for v in values), 1 / 5 + 1e-7)  # fan in 25
        self.assertGreater(max(abs(v) for v in values), 0.15)

    def test_gpu_check_runs_it_within_its_time(self):
        # data_dir is what gpu-check's data step found and unpacked (empty: none).
        data = self.dir / "build" / "fashion-mnist"
        script = f'source "{SOURCE}/scripts/lib/gpu-check-steps.sh"; data_dir="$1"; infer_flags "$2" "$3"'
        flags = lambda data_dir, seconds, quick: run(["bash", "-c", script, "bash", data_dir, str(seconds),  # noqa: E731
                                                      quick]).stdout.split("\n")[:-1]
        self.assertEqual(flags("", 90, ""), ["--budget", "85", "--test-limit", "2000", "--compile-seconds", "40",
                                             "--requests", "500", "--max-seconds", "4"])
        self.assertEqual(flags(data, 45, "--quick"), ["--data", str(data), "--budget", "40",
                                                      "--test-limit", "2000", "--compile-seconds", "40"])


class OnnxProofToolsTests(unittest.TestCase):
    """tests/examples' onnxruntime_env.py (the fixture) and test_onnx_export.py (the proofs)."""

    def setUp(self):
        self.dir = Path(tempfile.mkdtemp(prefix="cudagap-onnx-proof-"))
        self.record = self.dir / "record.json"

    def tearDown(self):
        shutil.rmtree(self.dir)

    def env_setup(self, *candidates, env=None):
        return run([sys.executable, EXAMPLES / "onnxruntime_env.py", "--venv", self.dir / "venv", "--wheels",
                    self.dir / "wheels", "--record", self.record, "--python", *candidates], env=env)

    @needs_numpy
    def test_fixture_takes_a_python_that_has_onnxruntime(self):
        result = self.env_setup("/no/such/python", sys.executable, env={"PYTHONPATH": str(FAKE_ORT)})
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
        self.assertIn(f"{sys.executable} has onnxruntime 0.0+fake, numpy ", result.stdout)
        self.assertIn(", onnx 0.0+fake", result.stdout)
        self.assertEqual(json.loads(self.record.read_text())["python"], sys.executable)
        self.assertFalse((self.dir / "venv").exists())

    def test_fixture_without_pypi_is_a_skip_with_the_reason(self):
        # pip pointed at a closed local port: what a machine without a network sees.
        result = self.env_setup(env={"PIP_INDEX_URL": "http://127.0.0.1:9/simple", "PIP_FIND_LINKS": "",
                                     "PIP_CONFIG_FILE": os.devnull})
        self.assertEqual(result.returncode, 77, result.stdout + result.stderr)
        recorded = json.loads(self.record.read_text())
        self.assertIsNone(recorded["python"])
        self.assertRegex(recorded["reason"], "pip could not download onnxruntime, numpy, onnx from PyPI|python3-venv")
        self.assertIn("SKIPPED: " + recorded["reason"], result.stdout)

    def proof(self, *args):
        stub = self.dir / "cudagap-infer"
        return run([sys.executable, EXAMPLES / "test_onnx_export.py", *args, "--infer", stub, "--env", self.record,
                    "--work", self.dir / "work"], env={"PYTHONPATH": str(FAKE_ORT)})

    def test_proofs_skip_without_the_fixture(self):
        result = self.proof("cpu")
        self.assertEqual(result.returncode, 77)
        self.assertIn("SKIPPED: no usable record", result.stdout)
        self.record.write_text(json.dumps({"python": None, "reason": "pip could not download (test)"}))
        result = self.proof("gpu", "--data", self.dir)
        self.assertEqual(result.returncode, 77)
        self.assertIn("SKIPPED: pip could not download (test)", result.stdout)
        self.assertEqual(self.proof("gpu").returncode, 2)  # the GPU proof needs --data

    @needs_numpy
    def test_cpu_proof_fails_on_a_wrong_model_or_a_leftover_file(self):
        self.record.write_text(json.dumps({"python": sys.executable}))
        stub = self.dir / "cudagap-infer"
        leftover = "open(v('--export-onnx') + '.tmp', 'w').write('x')"
        for extra, words in (("", "differ from the reference"), (leftover, "expected ['checkpoint.safetensors', 'm.onnx']"),
                             ("sys.exit(1)", "cudagap-infer --export-onnx exited 1")):
            stub.write_text("#!/usr/bin/env python3\nimport json, sys\na = sys.argv[1:]\n"
                            "v = lambda f: a[a.index(f) + 1]\n"
                            "open(v('--export-onnx'), 'w').write(json.dumps({'scale': 1.0}))\n" + extra + "\n")
            stub.chmod(stub.stat().st_mode | stat.S_IXUSR)
            result = self.proof("cpu")
            self.assertEqual(result.returncode, 1, result.stdout + result.stderr)
            self.assertIn(words, result.stdout)

    @needs_numpy
    def test_reference_forward_pass(self):
        proof = load(EXAMPLES / "test_onnx_export.py", "test_onnx_export")
        rng = numpy.random.default_rng(1)
        x, w, b = rng.standard_normal((2, 3, 6, 5)), rng.standard_normal((4, 3, 5, 5)), rng.standard_normal(4)
        padded = numpy.pad(x, ((0, 0), (0, 0), (2, 2), (2, 2)))
        naive = numpy.zeros((2, 4, 6, 5))
        for n, k, i, j in numpy.ndindex(*naive.shape):
            naive[n, k, i, j] = (padded[n, :, i:i + 5, j:j + 5] * w[k]).sum() + b[k]
        numpy.testing.assert_allclose(proof.conv2d(numpy, x, w, b, 2), naive, rtol=1e-12, atol=1e-12)
        pooled = proof.max_pool2(numpy.arange(16.0).reshape(1, 1, 4, 4))
        self.assertEqual(pooled.tolist(), [[[[5.0, 7.0], [13.0, 15.0]]]])
        weights = proof.random_weights(numpy, 2)
        self.assertEqual({k: list(v.shape) for k, v in weights.items()}, SHAPES)
        logits = proof.reference_forward(numpy, weights, rng.standard_normal((3, 1, 28, 28)))
        self.assertEqual(logits.shape, (3, 10))
        # The checkpoint it writes is what the model's readers take.
        proof.write_checkpoint(self.dir / "ck.safetensors", weights)
        found = safetensors_file.read(self.dir / "ck.safetensors")
        self.assertEqual(numpy.frombuffer(found["fc2.bias"][1], "<f4").tolist(), weights["fc2.bias"].tolist())


if __name__ == "__main__":
    unittest.main()
