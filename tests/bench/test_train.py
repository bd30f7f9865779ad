"""Tests of bench/train: torch_train.py (its command line, its IDX reader on tiny sets these
tests write, its not-measured paths, the checkpoint's check with real safetensors files) and
the driver run.py against stand-ins of cudagap-train and torch_train.py that answer as the
contract (notes of issue 12: TRAIN_CLI) says, so that its table, targets, skips and failures are
tested without a GPU or PyTorch. The training itself in PyTorch needs a GPU: scripts/gpu-check
runs it.

ctest runs one class per test (tests/bench/CMakeLists.txt).
"""

import gzip
import importlib.util
import json
import os
import shutil
import stat
import struct
import subprocess
import sys
import tempfile
import textwrap
import unittest
from pathlib import Path

SOURCE = Path(os.environ.get("CUDAGAP_SOURCE_DIR", Path(__file__).resolve().parents[2]))
TRAIN = SOURCE / "bench" / "train"
TORCH_TRAIN = TRAIN / "torch_train.py"
DRIVER = TRAIN / "run.py"
RESULTS = SOURCE / "bench" / "harness" / "results.py"
TOOLS = SOURCE / "scripts" / "lib" / "gpu_check_tools.py"
FAKE_TORCH = Path(__file__).resolve().parent / "fake_torch"
FAKE_SAFETENSORS = Path(__file__).resolve().parent / "fake_safetensors"
SHAPES = {"conv1.weight": [32, 1, 5, 5], "conv1.bias": [32], "conv2.weight": [64, 32, 5, 5],
          "conv2.bias": [64], "fc1.weight": [1024, 3136], "fc1.bias": [1024],
          "fc2.weight": [10, 1024], "fc2.bias": [10]}


def run(command, env=None, timeout=300):
    full_env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "CUDAGAP_TRAIN")}
    full_env.update(env or {})
    return subprocess.run([str(c) for c in command], capture_output=True, text=True, env=full_env,
                          timeout=timeout, check=False)


def torch_importable():
    return importlib.util.find_spec("torch") is not None


def write_idx(path, dims, payload, gz=True, magic=None):
    """An IDX file of unsigned bytes (or with @magic's first four bytes instead)."""
    header = magic or bytes([0, 0, 0x08, len(dims)])
    data = header + struct.pack(f">{len(dims)}I", *dims) + bytes(payload)
    opener = gzip.open if gz else open
    with opener(path, "wb") as stream:
        stream.write(data)


def write_dataset(folder, train=12, test=6, gz=True):
    """A tiny Fashion-MNIST-shaped set: image i is all (i % 256), label i % 10."""
    folder.mkdir(parents=True, exist_ok=True)
    suffix = ".gz" if gz else ""
    for stem, count in (("train", train), ("t10k", test)):
        images = b"".join(bytes([i % 256]) * 784 for i in range(count))
        write_idx(folder / f"{stem}-images-idx3-ubyte{suffix}", [count, 28, 28], images, gz)
        write_idx(folder / f"{stem}-labels-idx1-ubyte{suffix}", [count], [i % 10 for i in range(count)], gz)
    return folder


def load_module():
    spec = importlib.util.spec_from_file_location("torch_train", TORCH_TRAIN)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class TrainScriptTests(unittest.TestCase):
    """bench/train/torch_train.py without PyTorch: command line, data, skips, checkpoints."""

    def setUp(self):
        self.dir = Path(tempfile.mkdtemp(prefix="cudagap-torch-train-"))
        self.module = load_module()

    def tearDown(self):
        shutil.rmtree(self.dir)

    def script(self, *args, env=None):
        return run([sys.executable, TORCH_TRAIN, *args], env=env)

    def test_bad_arguments_exit_2_naming_the_value(self):
        for args, word in ((["--precision", "fp8"], "fp8"), (["--epochs", "0"], "0"),
                           (["--dropout", "1.0"], "1.0"), (["--lr", "-1"], "-1"),
                           (["--train-limit", "-3"], "-3"), (["--mode", "jit"], "jit"),
                           (["--batch-size", "x"], "x")):
            result = self.script(*args)
            self.assertEqual(result.returncode, 2, args)
            self.assertIn(word, result.stderr)
            self.assertEqual(result.stdout, "")

    def test_idx_reader_gzip_and_raw_with_limits(self):
        for gz in (True, False):
            folder = write_dataset(self.dir / f"set-{gz}", gz=gz)
            data = self.module.load_data(str(folder), 5, 0)
            images, labels, count = data["train"]
            self.assertEqual(count, 5)
            self.assertEqual(len(images), 5 * 784)
            self.assertEqual(images[784 * 3], 3)
            self.assertEqual(list(labels), [0, 1, 2, 3, 4])
            self.assertEqual(data["test"][2], 6)  # 0: all
            self.assertEqual(self.module.load_data(str(folder), 50, 2)["train"][2], 12)  # over: all

    def test_idx_reader_names_what_is_wrong(self):
        folder = write_dataset(self.dir / "set")
        cases = [
            ("train-images-idx3-ubyte.gz", lambda p: write_idx(p, [12, 28, 28], b"\0" * 100), "bytes of data"),
            ("train-images-idx3-ubyte.gz", lambda p: write_idx(p, [12, 28, 28], b"", magic=b"\x12\x34\x08\x03"), "magic"),
            ("train-images-idx3-ubyte.gz", lambda p: write_idx(p, [12, 28], b"\0" * 12 * 28, magic=b"\0\0\x0d\x02"), "0x0d"),
            ("train-images-idx3-ubyte.gz", lambda p: write_idx(p, [12, 14, 56], b"\0" * 12 * 784), "28 x 28"),
            ("train-labels-idx1-ubyte.gz", lambda p: write_idx(p, [11], [0] * 11), "12 images"),
            ("train-labels-idx1-ubyte.gz", lambda p: write_idx(p, [12], [3] * 11 + [10]), "label 10"),
            ("train-images-idx3-ubyte.gz", lambda p: p.write_bytes(b"not gzip at all"), "cannot be read"),
            ("train-images-idx3-ubyte.gz", lambda p: p.unlink(), "dataset-fashion-mnist"),
        ]
        for name, damage, words in cases:
            shutil.rmtree(folder)
            write_dataset(folder)
            damage(folder / name)
            with self.assertRaises(self.module.DataError, msg=words) as caught:
                self.module.load_data(str(folder), 0, 0)
            self.assertIn(words, str(caught.exception))
            # The command line says it too: exit 1, the error as JSON on stdout.
            result = self.script("--data", folder)
            self.assertEqual(result.returncode, 1, result.stderr)
            self.assertIn(words, json.loads(result.stdout)["error"])

    def test_without_torch_or_cuda_nothing_is_measured_exit_0(self):
        folder = write_dataset(self.dir / "set")
        if not torch_importable():
            result = self.script("--data", folder)
            self.assertEqual(result.returncode, 0, result.stderr)
            output = json.loads(result.stdout)
            self.assertFalse(output["ok"])
            self.assertIn("torch is not importable", output["reason"])
        # A torch without CUDA (the fake one, which also prints on import: stdout stays JSON).
        result = self.script("--data", folder, "--mode", "compile",
                             env={"PYTHONPATH": str(FAKE_TORCH), "FAKE_TORCH_NO_CUDA": "1"})
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(json.loads(result.stdout),
                         {"ok": False, "reason": "torch 0.0+fake sees no CUDA device"})

    def fake(self, *args, env=None):
        """torch_train.py against the fake torch (shapes only) and a fake safetensors.torch."""
        paths = os.pathsep.join([str(FAKE_TORCH), str(FAKE_SAFETENSORS)])
        result = self.script(*args, env={"PYTHONPATH": paths, **(env or {})})
        self.assertEqual(result.returncode, 0, result.stderr)
        return json.loads(result.stdout)

    def test_training_loop_and_report_against_the_fake_torch(self):
        folder = write_dataset(self.dir / "set", train=130, test=6)
        output = self.fake("--data", folder, "--epochs", "3", "--batch-size", "64",
                           env={"FAKE_TORCH_SCALE_BACKOFF": "3"})
        self.assertTrue(output["ok"])
        self.assertEqual((output["mode"], output["precision"], output["train_images"], output["test_images"]),
                         ("eager", "fp16", 130, 6))
        self.assertEqual([e["epoch"] for e in output["epochs"]], [1, 2, 3])
        first = output["epochs"][0]
        # Three steps (64 + 64 + 2 images), each backing the scale off once.
        self.assertEqual((first["loss_scale"], first["skipped_steps"]), (8192.0, 3))
        self.assertEqual(output["epochs"][1]["skipped_steps"], 0)
        self.assertEqual(first["mean_loss"], 2.0)
        self.assertEqual(output["final_test_accuracy"], 0.5)  # the fake calls half of them right
        self.assertEqual(output["measured_epoch"], 2)
        self.assertEqual(output["images_per_second"], output["epochs"][1]["images_per_second"])
        compiled = self.fake("--data", folder, "--epochs", "1", "--mode", "compile",
                             "--compile-mode", "reduce-overhead", "--precision", "bf16")
        self.assertEqual((compiled["compile_mode"], compiled["warmed_up"]), ("reduce-overhead", False))
        self.assertEqual(compiled["epochs"][0]["loss_scale"], 1.0)  # BF16: no scaler

    def test_checkpoint_evaluation_against_the_fake_torch(self):
        folder = write_dataset(self.dir / "set")
        path = self.dir / "model.safetensors"
        self.write_checkpoint(path, SHAPES)
        output = self.fake("--evaluate-checkpoint", path, "--data", folder)
        self.assertEqual((output["ok"], output["precision"], output["test_images"]), (True, "fp32", 6))
        self.assertEqual(output["test_accuracy"], 0.5)
        self.assertEqual(output["loader"], "safetensors.torch.load_file")
        # Without a usable safetensors.torch (the real one cannot load against the fake torch),
        # the script's own reader of the format gives the same tensors.
        result = self.script("--evaluate-checkpoint", path, "--data", folder, env={"PYTHONPATH": str(FAKE_TORCH)})
        self.assertEqual(result.returncode, 0, result.stderr)
        output = json.loads(result.stdout)
        self.assertEqual(output["test_accuracy"], 0.5)
        self.assertIn("torch_train.py's safetensors reader", output["loader"])

    def write_checkpoint(self, path, shapes):
        try:
            import numpy
            from safetensors.numpy import save_file
        except ImportError:
            self.skipTest("safetensors and numpy are not importable: pip install safetensors numpy")
        save_file({name: numpy.zeros(shape, dtype=numpy.float32) for name, shape in shapes.items()},
                  str(path), metadata={"format": "pt"})

    def test_checkpoint_of_another_model_is_refused_by_name(self):
        folder = write_dataset(self.dir / "set")
        wrong = dict(SHAPES)
        wrong["fc1.weight"] = [512, 3136]
        del wrong["conv2.bias"]
        wrong["head.weight"] = [10, 10]
        path = self.dir / "other.safetensors"
        self.write_checkpoint(path, wrong)
        result = self.script("--evaluate-checkpoint", path, "--data", folder)
        self.assertEqual(result.returncode, 1, result.stderr)
        error = json.loads(result.stdout)["error"]
        for words in ("missing 'conv2.bias'", "unexpected 'head.weight'",
                      "'fc1.weight' is [512, 3136], expected [1024, 3136]"):
            self.assertIn(words, error)
        path.write_bytes(b"\x05\0\0\0\0\0\0\0{{{{{")
        result = self.script("--evaluate-checkpoint", path, "--data", folder)
        self.assertEqual(result.returncode, 1)
        self.assertIn("not a safetensors file", json.loads(result.stdout)["error"])
        result = self.script("--evaluate-checkpoint", self.dir / "absent.safetensors", "--data", folder)
        self.assertEqual(result.returncode, 1)
        self.assertIn("no such file", json.loads(result.stdout)["error"])

    def test_checkpoint_of_this_model_reaches_pytorch_or_says_why_not(self):
        folder = write_dataset(self.dir / "set")
        path = self.dir / "model.safetensors"
        self.write_checkpoint(path, SHAPES)
        self.assertEqual(self.module.checkpoint_problems(str(path)), [])
        result = self.script("--evaluate-checkpoint", path, "--data", folder)
        self.assertEqual(result.returncode, 0, result.stderr)
        output = json.loads(result.stdout)
        if not torch_importable():
            self.assertEqual(output["ok"], False)
            self.assertIn("torch is not importable", output["reason"])
            self.skipTest("torch is not importable here: the evaluation in PyTorch runs on the GPU host")
        if not output["ok"]:
            self.skipTest(f"PyTorch cannot evaluate here: {output['reason']}")
        # All-zero weights: every logit is 0, argmax is class 0, which 1 in 10 labels is.
        self.assertAlmostEqual(output["test_accuracy"], 1 / 6)


STUB_TRAIN = r'''#!/usr/bin/env python3
# A stand-in of cudagap-train that answers as its contract says (STUB_MODE: gpu, nogpu, fail).
import json, os, sys
args = sys.argv[1:]
def value(flag, default=None):
    return args[args.index(flag) + 1] if flag in args else default
with open(os.environ["STUB_LOG"], "a") as log:
    log.write(" ".join(args) + "\n")
mode = os.environ.get("STUB_MODE", "gpu")
if mode == "fail":
    print("cudagap-train: out of memory: 80 GiB asked, reduce --batch-size", file=sys.stderr)
    sys.exit(1)
graph = "--graph" in args
epochs = int(value("--epochs"))
speed = float(os.environ.get("STUB_GRAPH_S" if graph else "STUB_EAGER_S", "0.1"))
report = {"program": "cudagap-train", "version": "0.9.0", "graph": graph,
          "precision": value("--precision"), "seed": int(value("--seed")),
          "batch_size": int(value("--batch-size")), "lr": float(value("--lr")),
          "train_images": int(value("--train-limit")) or 60000, "test_images": 10000,
          "checkpoint": value("--save")}
if mode == "nogpu":
    report.update(device=None, gpu_available=False, reason="no CUDA device (stub)", epochs=[],
                  final_test_accuracy=None)
else:
    accuracy = float(os.environ.get("STUB_ACCURACY", "0.915"))
    report.update(device="Stub GPU", gpu_available=True, final_test_accuracy=accuracy,
                  epochs=[{"epoch": e, "mean_loss": 0.5, "test_accuracy": accuracy,
                           "images_per_second": report["train_images"] / speed,
                           "seconds": speed * (3 if e == 1 else 1), "loss_scale": 65536.0,
                           "skipped_steps": 1 if e == 1 else 0} for e in range(1, epochs + 1)])
    if value("--save"):
        open(value("--save"), "wb").write(b"stub checkpoint")
with open(value("--json"), "w") as out:
    json.dump(report, out)
'''

STUB_TORCH = r'''#!/usr/bin/env python3
# A stand-in of torch_train.py (STUB_TORCH: ok, notorch).
import json, os, sys
args = sys.argv[1:]
def value(flag, default=None):
    return args[args.index(flag) + 1] if flag in args else default
with open(os.environ["STUB_LOG"], "a") as log:
    log.write("torch " + " ".join(args) + "\n")
if os.environ.get("STUB_TORCH") == "notorch":
    print(json.dumps({"ok": False, "reason": "torch is not importable (stub)"}))
    sys.exit(0)
if "--evaluate-checkpoint" in args:
    assert open(value("--evaluate-checkpoint"), "rb").read() == b"stub checkpoint"
    print(json.dumps({"ok": True, "test_accuracy": float(os.environ.get("STUB_CKPT_ACCURACY", "0.9155")),
                      "device": "Stub GPU", "checkpoint": value("--evaluate-checkpoint")}))
    sys.exit(0)
mode = value("--mode")
speed = float(os.environ.get("STUB_COMPILE_S" if mode == "compile" else "STUB_TORCH_S", "0.3"))
images = int(value("--train-limit")) or 60000
accuracy = float(os.environ.get("STUB_TORCH_ACCURACY", "0.913"))
epochs = [{"epoch": e, "mean_loss": 0.5, "test_accuracy": accuracy, "images_per_second": images / speed,
           "seconds": speed * (20 if e == 1 and mode == "compile" else 1), "loss_scale": 65536.0,
           "skipped_steps": 0} for e in range(1, int(value("--epochs")) + 1)]
print(json.dumps({"ok": True, "program": "torch_train.py", "device": "Stub GPU", "cuda": "13.0",
                  "mode": mode, "train_images": images, "epochs": epochs,
                  "final_test_accuracy": accuracy, "first_epoch_seconds": epochs[0]["seconds"]}))
'''


class TrainDriverTests(unittest.TestCase):
    """bench/train/run.py with stand-ins: the side-by-side report, its targets, its skips."""

    def setUp(self):
        self.dir = Path(tempfile.mkdtemp(prefix="cudagap-bench-train-"))
        self.program = self.dir / "cudagap-train"
        self.program.write_text(STUB_TRAIN)
        self.program.chmod(self.program.stat().st_mode | stat.S_IXUSR)
        self.torch = self.dir / "torch_stub.py"
        self.torch.write_text(STUB_TORCH)
        self.log = self.dir / "calls.log"
        self.json = self.dir / "train.json"
        self.data = write_dataset(self.dir / "data")

    def tearDown(self):
        shutil.rmtree(self.dir)

    def driver(self, *args, env=None, program=True, torch_stub=True):
        command = [sys.executable, DRIVER, "--json", self.json, "--data", self.data, *args]
        if program:
            command += ["--cudagap-train", self.program]
        if torch_stub:
            command += ["--torch-script", self.torch]
        full_env = {"STUB_LOG": str(self.log)}
        full_env.update(env or {})
        result = run(command, env=full_env)
        report = json.loads(self.json.read_text()) if self.json.exists() else None
        return result, report

    def check(self):
        checked = run([sys.executable, RESULTS, "check", self.json])
        self.assertEqual(checked.returncode, 0, checked.stdout + checked.stderr)

    def targets(self, report):
        return {t["name"]: t for t in report["targets"]}

    def test_all_parts_side_by_side_with_targets(self):
        markdown = self.dir / "train.md"
        result, report = self.driver("--markdown", markdown, "--compile-modes", "default,reduce-overhead")
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
        self.check()
        self.assertTrue(result.stdout.startswith("== cudagap benchmark: train =="))
        variants = [r["variant"] for r in report["rows"]]
        self.assertEqual(variants, ["cudagap --graph", "cudagap eager", "torch eager AMP",
                                    "torch.compile (default)", "torch.compile (reduce-overhead)"])
        graph = report["rows"][0]
        # Epochs 2..10 are measured (the warm-up epoch took three times as long).
        self.assertEqual(graph["repetitions"], 9)
        self.assertAlmostEqual(graph["median_ms"], 100.0)
        self.assertAlmostEqual(graph["images_per_second"], 600000.0)
        self.assertIn("after a warm-up epoch", graph["timing"])
        self.assertIn("skipped steps 1", graph["note"])
        targets = self.targets(report)
        self.assertEqual(targets["test accuracy after 10 epochs >= 91%"]["status"], "met")
        self.assertEqual(targets["test accuracy within 0.5 points of PyTorch's"]["measured"], "0.20 points")
        self.assertEqual(targets["cudagap --graph images/s >= 2x PyTorch eager AMP"]["measured"], "3.00x")
        self.assertEqual(targets["cudagap --graph images/s >= torch.compile"]["status"], "met")
        self.assertEqual(targets["checkpoint accuracy in PyTorch equals cudagap's to 0.1 points"]["status"], "met")
        self.assertEqual(report["environment"]["device"], "Stub GPU")
        self.assertEqual(report["environment"]["cudagap"], "0.9.0")
        table = markdown.read_text()
        self.assertIn("| cudagap --graph | FP16 | 600,000 |", table)
        self.assertIn("| checkpoint in PyTorch | FP32 |", table)
        # The same settings went to every part; only the --graph run saved a checkpoint.
        calls = self.log.read_text().splitlines()
        self.assertEqual(len(calls), 6)
        for call in calls[:3] + calls[4:]:
            self.assertIn("--epochs 10 --batch-size 64 --lr 0.001 --weight-decay 0.01 --dropout 0.4 "
                          "--seed 42 --precision fp16 --train-limit 0 --test-limit 0", call)
        self.assertIn("--graph --save", calls[0])
        self.assertNotIn("--save", calls[1])
        self.assertIn("--evaluate-checkpoint", calls[3])

    def test_targets_not_met_are_reported_not_asserted(self):
        result, report = self.driver("--epochs", "3", env={
            "STUB_GRAPH_S": "0.2", "STUB_TORCH_S": "0.3", "STUB_COMPILE_S": "0.1",
            "STUB_TORCH_ACCURACY": "0.80", "STUB_CKPT_ACCURACY": "0.90"})
        self.assertEqual(result.returncode, 0, result.stderr)
        self.check()
        targets = self.targets(report)
        for name in ("test accuracy within 0.5 points of PyTorch's",
                     "cudagap --graph images/s >= 2x PyTorch eager AMP",
                     "cudagap --graph images/s >= torch.compile",
                     "checkpoint accuracy in PyTorch equals cudagap's to 0.1 points"):
            self.assertEqual(targets[name]["status"], "not met", name)
        accuracy = targets["test accuracy after 10 epochs >= 91%"]
        self.assertEqual(accuracy["status"], "not measured")
        self.assertIn("ran 3 epochs", accuracy["note"])
        self.assertIn("first epoch (compilation) 2.0 s", report["rows"][3]["note"])

    def test_no_gpu_is_a_skip_with_every_part_not_measured(self):
        result, report = self.driver(env={"STUB_MODE": "nogpu", "STUB_TORCH": "notorch"})
        self.assertEqual(result.returncode, 77, result.stderr)
        self.check()
        self.assertTrue(report["gpu_skipped"])
        self.assertEqual(report["skip_reason"], "no CUDA device (stub)")
        self.assertIn("GPU part skipped: no CUDA device (stub)", result.stdout)
        self.assertEqual(report["rows"], [])
        self.assertEqual({t["status"] for t in report["targets"]}, {"not measured"})
        self.assertIn("torch eager AMP: not measured: torch is not importable (stub)", report["notes"])
        self.assertIn("| cudagap --graph | - | - | - | - | not measured: no GPU: no CUDA device (stub) |",
                      result.stdout)

    def test_no_program_and_no_torch_exit_0_with_reasons(self):
        result, report = self.driver("--quick", program=False, torch_stub=False)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.check()
        self.assertIn("cudagap --graph: not measured: cudagap-train is not built here", "\n".join(report["notes"]))
        if not torch_importable():
            self.assertIn("torch is not importable", json.dumps(report["notes"]))
        self.assertEqual({t["status"] for t in report["targets"]}, {"not measured"})
        # --quick: 2 epochs on 2000 images.
        self.assertIn("2 epochs", report["notes"][-1])

    def test_a_failing_part_is_an_error_and_the_others_still_run(self):
        result, report = self.driver(env={"STUB_MODE": "fail"})
        self.assertEqual(result.returncode, 1)
        self.check()
        self.assertEqual(len(report["errors"]), 2)
        self.assertIn("cudagap --graph: cudagap-train exited 1: cudagap-train: out of memory", report["errors"][0])
        self.assertEqual([r["variant"] for r in report["rows"]], ["torch eager AMP", "torch.compile (default)"])

    def test_budget_leaves_torch_compile_out(self):
        result, report = self.driver("--budget", "30", "--compile-seconds", "60")
        self.assertEqual(result.returncode, 0, result.stderr)
        self.check()
        self.assertNotIn("torch.compile (default)", [r["variant"] for r in report["rows"]])
        self.assertRegex(json.dumps(report["notes"]), r"torch.compile \(default\): not measured: the 30 s budget is spent")
        self.assertIn("budget is spent", self.targets(report)["cudagap --graph images/s >= torch.compile"]["note"])
        result, report = self.driver("--compile-modes", "none", "--no-torch")
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual([r["variant"] for r in report["rows"]], ["cudagap --graph", "cudagap eager"])

    def test_no_data_runs_nothing_and_says_how_to_get_it(self):
        result, report = self.driver("--data", self.dir / "absent")
        self.assertEqual(result.returncode, 0, result.stderr)
        self.check()
        self.assertFalse(self.log.exists())
        self.assertIn("dataset-fashion-mnist", report["notes"][0])
        self.assertEqual({t["status"] for t in report["targets"]}, {"not measured"})

    def test_cpu_only_runs_nothing(self):
        result, report = self.driver("--cpu-only")
        self.assertEqual(result.returncode, 77)
        self.check()
        self.assertFalse(self.log.exists())

    def test_bad_arguments_exit_2(self):
        for args in (["--epochs", "0"], ["--compile-modes", "fast"], ["--dropout", "1"],
                     ["--train-limit", "-1"], ["--precision", "int8"], ["--compile-modes", "none,default"]):
            result, _ = self.driver(*args)
            self.assertEqual(result.returncode, 2, args)
            self.assertFalse(self.json.exists())


class TrainDataSubsetTests(unittest.TestCase):
    """gpu_check_tools.py data-subset: the Fashion-MNIST part that travels to a GPU host."""

    def setUp(self):
        self.dir = Path(tempfile.mkdtemp(prefix="cudagap-data-subset-"))

    def tearDown(self):
        shutil.rmtree(self.dir)

    def test_subset_keeps_the_first_images_and_reads_back(self):
        source = write_dataset(self.dir / "full", train=12, test=6, gz=False)
        result = run([sys.executable, TOOLS, "data-subset", source, self.dir / "subset", "--train", "5", "--test", "3"])
        self.assertEqual(result.returncode, 0, result.stderr)
        data = load_module().load_data(str(self.dir / "subset"), 0, 0)
        self.assertEqual((data["train"][2], data["test"][2]), (5, 3))
        self.assertEqual(list(data["train"][1]), [0, 1, 2, 3, 4])
        self.assertEqual(data["train"][0][784 * 4], 4)
        self.assertEqual(sorted(p.name for p in (self.dir / "subset").iterdir()),
                         ["t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz",
                          "train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz"])
        result = run([sys.executable, TOOLS, "data-subset", self.dir / "absent", self.dir / "x"])
        self.assertEqual(result.returncode, 1)
        self.assertIn("dataset-fashion-mnist", result.stderr)

    def train_flags(self, data_dir, seconds, quick):
        # data_dir is what gpu-check's data step found and unpacked (empty: none).
        script = f'source "{SOURCE}/scripts/lib/gpu-check-steps.sh"; data_dir="$1"; train_flags "$2" "$3"'
        result = run(["bash", "-c", script, "bash", data_dir, str(seconds), "--quick" if quick else ""])
        self.assertEqual(result.returncode, 0, result.stderr)
        return result.stdout.split("\n")[:-1]

    def test_gpu_check_runs_the_train_benchmark_on_the_subset_within_its_time(self):
        data = self.dir / "build with space" / "fashion-mnist"
        self.assertEqual(self.train_flags("", 100, False),
                         ["--budget", "95", "--epochs", "3", "--train-limit", "20000",
                          "--compile-modes", "default", "--compile-seconds", "60"])
        self.assertEqual(self.train_flags(data, 40, True),
                         ["--data", str(data), "--budget", "35", "--compile-modes", "none"])


if __name__ == "__main__":
    unittest.main()
