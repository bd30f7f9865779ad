"""Tests of the benchmark and GPU-check scripts: bench/compare_torch.py (with a fake torch, so
its measuring path runs without PyTorch or a GPU), bench/harness/results.py (check, run-check,
merge), bench/compare_results.py (on the two files in fixtures/), bench/plot_results.py,
scripts/bundle-deps, scripts/quickstart (offline, with stand-ins for apt-get and CMake), scripts/gpu-check (its command line, its plan, its output's layout, and
real runs in no-GPU mode against an existing build) and its helpers in
scripts/lib/gpu_check_tools.py.

ctest runs one class per test (tests/bench/CMakeLists.txt) with these in the environment:
CUDAGAP_SOURCE_DIR, CUDAGAP_BUILD_DIR (a configured and built tree), CATCH2_CMAKE_DIR and
NLOHMANN_JSON_CMAKE_DIR (where that build found the packages).
"""

import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import unittest
from pathlib import Path

SOURCE = Path(os.environ.get("CUDAGAP_SOURCE_DIR", Path(__file__).resolve().parents[2]))
BUILD = Path(os.environ["CUDAGAP_BUILD_DIR"]) if os.environ.get("CUDAGAP_BUILD_DIR") else None
COMPARE_TORCH = SOURCE / "bench" / "compare_torch.py"
RESULTS = SOURCE / "bench" / "harness" / "results.py"
PLOT = SOURCE / "bench" / "plot_results.py"
COMPARE_RESULTS = SOURCE / "bench" / "compare_results.py"
FIXTURES = Path(__file__).resolve().parent / "fixtures"
BUNDLE_DEPS = SOURCE / "scripts" / "bundle-deps"
GPU_CHECK = SOURCE / "scripts" / "gpu-check"
TOOLS = SOURCE / "scripts" / "lib" / "gpu_check_tools.py"
FAKE_TORCH = Path(__file__).resolve().parent / "fake_torch"


def run(command, env=None, cwd=None, timeout=600):
    full_env = dict(os.environ)
    full_env.update(env or {})
    return subprocess.run([str(c) for c in command], capture_output=True, text=True, env=full_env,
                          cwd=cwd, timeout=timeout, check=False)


def v2_row(**fields):
    """A row of a version-2 report (made-up numbers: test data)."""
    base = {"case": "1 MiB", "variant": "cudagap device_buffer", "math": "-", "cache": None,
            "median_ms": 0.001, "min_ms": 0.0009, "max_ms": 0.002, "spread": 1.1,
            "noise": 0.003, "max_noise": 0.005, "min_samples": 10, "stopped": "noise target",
            "repetitions": 12, "calls_per_repetition": 100, "timing": "host clock",
            "host_ms": None, "single_call": None, "graph": None, "clocks": None,
            "tflops": None, "gbps": None, "peak_fraction": None, "note": ""}
    base.update(fields)
    return base


def report(**overrides):
    """A well-formed benchmark report, as the harness writes it (made-up numbers: test data)."""
    base = {
        "schema": "cudagap-bench/2", "benchmark": "alloc", "description": "test report",
        "quick": True,
        "environment": {"date_utc": "2025-01-01T00:00:00Z", "host": "h", "cudagap": "0.1.0",
                        "cuda_runtime": "13.0", "driver_cuda": "13.0", "driver_version": "580.1",
                        "gpu_available": True, "device": "Test GPU", "capability": "9.0",
                        "memory_bytes": 1 << 30, "max_sm_clock_mhz": 1980, "sm_clock_mhz": None,
                        "peak_memory_bandwidth_gbps": 4800.0, "l2_cache_bytes": 50 << 20,
                        "clocks_checked": True, "clocks_note": ""},
        "sampling": {"max_noise": 0.005, "min_samples": 10, "time_limit_s": 0.2,
                     "flush_bytes": 100 << 20},
        "gpu_skipped": False, "skip_reason": "",
        "rows": [v2_row(cache="cold", graph={"median_ms": 0.0008, "min_ms": 0.0007, "max_ms": 0.001,
                               "noise": 0.04, "stopped": "time limit", "samples": 30,
                               "calls_per_sample": 100, "host_ms": None},
                        clocks={"flagged": False, "summary": "1980 MHz"}),
                 v2_row(variant="cudaMalloc/cudaFree", median_ms=0.05, min_ms=0.04, max_ms=0.06,
                        spread=0.4, noise=0.031, stopped="time limit", repetitions=40,
                        clocks={"flagged": True, "summary": "FLAGGED: SW power cap"})],
        "ratios": [{"case": "1 MiB", "numerator": "cudaMalloc/cudaFree",
                    "denominator": "cudagap device_buffer", "value": 50.0, "note": ""},
                   {"case": "1 MiB", "numerator": "torch", "denominator": "cudagap device_buffer",
                    "value": None, "note": "not measured: no row for 'torch'"}],
        "targets": [{"name": "pooled pair <= 2 us @ 1 MiB", "requirement": "at most 2 us",
                     "status": "met", "measured": "1.000 us", "note": ""},
                    {"name": "pooled >= 10x cudaMalloc @ 1 MiB", "requirement": "at least 10x",
                     "status": "met", "measured": "50.0x", "note": ""}],
        "notes": ["a note"], "errors": [], "exit_code": 0,
    }
    base.update(overrides)
    return base


def v1_report(**overrides):
    """The same report in version 1 (what bench/train and bench/infer write): no sampling, noise,
    cache, side timings or clocks."""
    old = report(schema="cudagap-bench/1", **overrides)
    del old["sampling"]
    old["rows"] = [{k: v for k, v in row.items()
                    if k not in ("cache", "noise", "max_noise", "min_samples", "stopped",
                                 "host_ms", "single_call", "graph", "clocks")}
                   for row in old["rows"]]
    return old


class CompareTorchTests(unittest.TestCase):
    """bench/compare_torch.py: its JSON, its case names, its failures."""

    def compare(self, *args, fake=True, env=None):
        extra = {"PYTHONPATH": str(FAKE_TORCH)} if fake else {}
        extra.update(env or {})
        result = run([sys.executable, COMPARE_TORCH, *args], env=extra)
        return result

    def parse(self, result):
        self.assertEqual(result.returncode, 0, result.stderr)
        return json.loads(result.stdout)  # stdout holds the JSON and nothing else

    def test_real_environment_answers_with_json(self):
        output = self.parse(self.compare("alloc", "--sizes", "4096", "--repetitions", "2", fake=False))
        if output["ok"]:  # a GPU host with PyTorch
            self.assertEqual(output["results"][0]["case"], "4 KiB")
        else:
            self.assertIn("torch", output["reason"])

    def test_gemm_cases_fields_and_a_failing_precision(self):
        output = self.parse(self.compare(
            "gemm", "--sizes", "64,128", "--precisions", "fp32,tf32,bf16", "--repetitions", "3",
            "--warmup", "1", env={"FAKE_TORCH_FAIL": "bfloat16"}))
        self.assertTrue(output["ok"])
        self.assertEqual(output["torch"], "0.0+fake")
        self.assertEqual(output["device"], "Fake GPU")
        cases = {r["case"]: r for r in output["results"]}
        self.assertEqual(sorted(cases), ["128 fp32", "128 tf32", "64 fp32", "64 tf32"])
        self.assertFalse(cases["64 fp32"]["allow_tf32"])
        self.assertTrue(cases["64 tf32"]["allow_tf32"])
        self.assertEqual(cases["128 fp32"]["flops"], 2.0 * 128 ** 3)
        for r in output["results"]:
            self.assertEqual(r["repetitions"], 3)
            self.assertGreaterEqual(r["calls_per_repetition"], 1)
            self.assertLessEqual(r["min_ms"], r["median_ms"])
            self.assertLessEqual(r["median_ms"], r["max_ms"])
            self.assertEqual(r["timing"], "CUDA events")
        # The failing precision is reported per case, and the others still ran.
        self.assertEqual([e["case"] for e in output["errors"]], ["64 bf16", "128 bf16"])
        self.assertIn("bfloat16 is not supported", output["errors"][0]["error"])

    def test_the_stopping_rule_and_the_series_beside_a_case(self):
        result = self.compare(
            "gemm", "--sizes", "64,128", "--precisions", "fp32", "--warmup", "1",
            "--single-call-sizes", "64", "--graph-sizes", "64", "--cold-sizes", "64",
            "--max-noise", "0.5", "--min-samples", "5", "--time-limit", "0.05", "--calls", "7",
            env={"FAKE_TORCH_LOG": "1"})
        output = self.parse(result)
        cases = {r["case"]: r for r in output["results"]}
        small, large = cases["64 fp32"], cases["128 fp32"]
        for series in (small, small["single_call"], small["graph"], small["cold"], large):
            self.assertIn(series["stopped"], ("noise target", "time limit", "sample cap"))
            self.assertLessEqual(series["min_ms"], series["median_ms"])
            if series["stopped"] == "noise target":
                self.assertGreaterEqual(series["repetitions"], 5)
                self.assertLessEqual(series["noise"], 0.005)
        self.assertEqual((small["max_noise"], small["min_samples"]), (0.005, 5))
        self.assertEqual(small["calls_per_repetition"], 7)
        self.assertEqual(small["graph"]["calls_per_repetition"], 7)  # the batch's calls, replayed
        self.assertEqual(small["single_call"]["calls_per_repetition"], 1)
        self.assertIn("host_ms", small["single_call"])
        for key in ("single_call", "graph", "cold"):
            self.assertNotIn(key, large)
        # The flush: one buffer of twice the L2 (50 MiB here), written before each cold sample.
        log = result.stderr
        self.assertEqual(log.count("fake torch: empty (104857600,) uint8"), 1)
        self.assertEqual(log.count("fake torch: fill_ (104857600,)"), small["cold"]["repetitions"])
        self.assertEqual(log.count("fake torch: graph capture begins"), 1)
        self.assertEqual(log.count("fake torch: graph replay"), small["graph"]["repetitions"] + 1)

    def test_a_fixed_count_and_a_torch_without_the_l2_size(self):
        output = self.parse(self.compare(
            "conv", "--batch", "1", "--in-channels", "1", "--height", "4", "--width", "4",
            "--out-channels", "1", "--kernel", "1", "--repetitions", "3", "--single-call",
            "--graph", "--cold", env={"FAKE_TORCH_NO_L2": "1"}))
        # The cold series cannot be sized: the case is an error, said so; nothing is guessed.
        self.assertEqual(output["results"], [])
        self.assertIn("L2_cache_size", output["errors"][0]["error"])
        output = self.parse(self.compare(
            "conv", "--batch", "1", "--in-channels", "1", "--height", "4", "--width", "4",
            "--out-channels", "1", "--kernel", "1", "--repetitions", "3", "--single-call",
            "--graph"))
        first = output["results"][0]
        self.assertEqual((first["repetitions"], first["stopped"]), (3, "fixed count"))
        self.assertIsNone(first["max_noise"])
        self.assertEqual(first["graph"]["repetitions"], 3)

    def test_conv_case_names_and_shapes(self):
        output = self.parse(self.compare(
            "conv", "--batch", "2", "--in-channels", "3", "--height", "8", "--width", "8",
            "--out-channels", "4", "--kernel", "3", "--padding", "1", "--dtype", "fp32,fp16",
            "--layout", "nchw,nhwc", "--repetitions", "2", "--calls", "5"))
        names = [r["case"] for r in output["results"]]
        self.assertEqual(names, ["N2 C3 8x8 K4 3x3 pad1 stride1 fp32 nchw",
                                 "N2 C3 8x8 K4 3x3 pad1 stride1 fp32 nhwc",
                                 "N2 C3 8x8 K4 3x3 pad1 stride1 fp16 nchw",
                                 "N2 C3 8x8 K4 3x3 pad1 stride1 fp16 nhwc"])
        first = output["results"][0]
        self.assertEqual((first["output_height"], first["output_width"]), (8, 8))
        self.assertEqual(first["flops"], 2.0 * 2 * 4 * 8 * 8 * 3 * 3 * 3)
        self.assertEqual(first["calls_per_repetition"], 5)
        self.assertTrue(first["cudnn_benchmark"])

    def test_alloc_names_sizes_as_the_cpp_side_does(self):
        output = self.parse(self.compare("alloc", "--sizes", "4096,1048576,67108864,430964736",
                                         "--repetitions", "2", "--target-ms", "0.5"))
        self.assertEqual([r["case"] for r in output["results"]], ["4 KiB", "1 MiB", "64 MiB", "411 MiB"])
        self.assertEqual(output["results"][3]["bytes"], 430964736)
        self.assertEqual(output["results"][0]["timing"], "host clock")

    def test_allreduce_names_sizes_in_place_and_closes_its_group(self):
        result = self.compare("allreduce", "--sizes", "1048576,67108864", "--repetitions", "2",
                              "--target-ms", "0.5")
        output = self.parse(result)
        self.assertTrue(output["ok"], output)
        self.assertEqual([r["case"] for r in output["results"]], ["1 MiB in-place", "64 MiB in-place"])
        last = output["results"][1]
        self.assertEqual((last["bytes"], last["ranks"], last["backend"], last["nccl"]),
                         (67108864, 1, "nccl", "2.28.9"))
        self.assertEqual(last["timing"], "CUDA events")
        self.assertIn("fake torch: process group destroyed", result.stderr)

    def test_allreduce_without_distributed_is_a_reason(self):
        output = self.parse(self.compare("allreduce", "--sizes", "4096",
                                         env={"FAKE_TORCH_NO_DISTRIBUTED": "1"}))
        self.assertFalse(output["ok"])
        self.assertIn("no torch.distributed with the NCCL backend", output["reason"])

    def test_no_cuda_device_is_a_reason_not_a_failure(self):
        output = self.parse(self.compare("alloc", "--sizes", "4096", env={"FAKE_TORCH_NO_CUDA": "1"}))
        self.assertFalse(output["ok"])
        self.assertIn("sees no CUDA device", output["reason"])

    def test_bad_command_lines_exit_2(self):
        for args in (["gemm"], ["gemm", "--sizes", "0"], ["gemm", "--sizes", "64", "--precisions", "fp64"],
                     ["conv", "--batch", "1"], ["alloc", "--sizes", "x"], ["bogus"], ["allreduce"],
                     ["alloc", "--sizes", "64", "--repetitions", "0"],
                     ["alloc", "--sizes", "64", "--max-noise", "0"],
                     ["alloc", "--sizes", "64", "--max-noise", "nan"],
                     ["alloc", "--sizes", "64", "--min-samples", "0"],
                     ["alloc", "--sizes", "64", "--min-samples", "100001"],
                     ["alloc", "--sizes", "64", "--time-limit", "-1"],
                     ["gemm", "--sizes", "64", "--cold-sizes", "x"]):
            with self.subTest(args=args):
                result = self.compare(*args)
                self.assertEqual(result.returncode, 2, result.stdout)
                self.assertEqual(result.stdout, "")


class ResultsTests(unittest.TestCase):
    """bench/harness/results.py: check, run-check and merge."""

    def setUp(self):
        self.dir = Path(tempfile.mkdtemp(prefix="cudagap-results-"))

    def tearDown(self):
        shutil.rmtree(self.dir)

    def write(self, name, content):
        path = self.dir / name
        path.write_text(content if isinstance(content, str) else json.dumps(content))
        return path

    def results(self, *args):
        return run([sys.executable, RESULTS, *args])

    def test_check_accepts_a_good_report(self):
        result = self.results("check", self.write("good.json", report()))
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("well-formed report of 'alloc' (2 rows, 2 targets)", result.stdout)
        # Version 1 is still read (bench/train and bench/infer write it).
        result = self.results("check", self.write("old.json", v1_report()))
        self.assertEqual(result.returncode, 0, result.stderr)

    def test_check_requires_version_2s_fields(self):
        bad = report()
        del bad["sampling"]
        del bad["rows"][0]["stopped"]
        bad["rows"][0]["cache"] = "lukewarm"
        bad["rows"][0]["noise"] = "low"
        bad["rows"][1]["graph"] = {"median_ms": 1.0, "min_ms": 2.0, "max_ms": 3.0, "samples": 0,
                                   "calls_per_sample": 1, "stopped": "time limit"}
        bad["rows"][1]["clocks"] = {"summary": "1980 MHz"}
        result = self.results("check", self.write("bad2.json", bad))
        self.assertEqual(result.returncode, 1)
        for expected in ("the report has no 'sampling'", "row 0 has no 'stopped'",
                         "row 0's cache is 'lukewarm'", "row 0's noise is not a number",
                         "row 1's graph's min <= median <= max", "row 1's graph's samples is 0",
                         "row 1's clocks has no 'flagged'"):
            self.assertIn(expected, result.stderr)
        stopped = report()
        stopped["rows"][0]["stopped"] = "bored"
        result = self.results("check", self.write("stop.json", stopped))
        self.assertIn("row 0's stopped is 'bored'", result.stderr)

    def test_check_names_each_problem(self):
        bad = report()
        bad["rows"][0]["min_ms"] = 5.0
        bad["targets"][0]["status"] = "passed"
        bad["exit_code"] = 77
        bad["schema"] = "other"
        del bad["notes"]
        result = self.results("check", self.write("bad.json", bad))
        self.assertEqual(result.returncode, 1)
        for expected in ("min <= median <= max", "'passed'", "exit_code is 77",
                         "schema is 'other'", "no 'notes'"):
            self.assertIn(expected, result.stderr)
        skipped = report(gpu_skipped=True, skip_reason="", exit_code=77)
        result = self.results("check", self.write("skip.json", skipped))
        self.assertIn("skip_reason is empty", result.stderr)
        self.assertEqual(self.results("check", self.write("x.json", "{not json")).returncode, 1)

    def fake_benchmark(self, exit_code, printed, written):
        """A program that behaves like a benchmark: prints, writes --json, exits."""
        body = (
            "import json, sys\n"
            f"print({printed!r})\n"
            "path = sys.argv[sys.argv.index('--json') + 1]\n"
            f"json.dump({written!r}, open(path, 'w'))\n"
            f"sys.exit({exit_code})\n")
        return self.write("fake_bench.py", body)

    def run_check(self, program):
        return self.results("run-check", "--json", self.dir / "out.json", "--",
                            sys.executable, program, "--quick")

    def test_run_check_passes_a_run_and_a_skip(self):
        good = report()
        printed = ("== cudagap benchmark: alloc ==\n1 MiB cudagap device_buffer\n"
                   "pooled pair <= 2 us @ 1 MiB\npooled >= 10x cudaMalloc @ 1 MiB")
        self.assertEqual(self.run_check(self.fake_benchmark(0, printed, good)).returncode, 0)
        skipped = report(gpu_skipped=True, skip_reason="no driver", exit_code=77, rows=[], ratios=[])
        skipped["targets"] = [dict(t, status="not measured", measured="", note="GPU part skipped")
                              for t in skipped["targets"]]
        printed_skip = printed + "\nGPU part skipped: no driver"
        result = self.run_check(self.fake_benchmark(77, printed_skip, skipped))
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)

    def test_run_check_fails_what_is_wrong(self):
        printed = "== cudagap benchmark: alloc ==\n1 MiB\npooled pair <= 2 us @ 1 MiB\npooled >= 10x cudaMalloc @ 1 MiB"
        cases = {
            "exit code 3": (3, printed, report(exit_code=3)),
            "does not say 'GPU part skipped": (77, printed, report(gpu_skipped=True, skip_reason="x", exit_code=77)),
            "the JSON says exit code 0": (1, printed, report()),
            "does not start with": (0, "something else", report()),
            "not printed": (0, "== cudagap benchmark: alloc ==", report()),
        }
        for expected, (code, text, written) in cases.items():
            with self.subTest(expected=expected):
                result = self.run_check(self.fake_benchmark(code, text, written))
                self.assertEqual(result.returncode, 1)
                self.assertIn(expected, result.stderr)

    def test_merge_makes_one_page_and_lists_unreadable_reports(self):
        skipped = report(benchmark="overhead", gpu_skipped=True, skip_reason="no driver here",
                         exit_code=77, rows=[], ratios=[])
        skipped["targets"] = [{"name": "event record within 2%", "requirement": "r",
                               "status": "not measured", "measured": "", "note": "GPU part skipped"}]
        files = [self.write("alloc.json", report()), self.write("overhead.json", skipped),
                 self.write("broken.json", "{")]
        out = self.dir / "results.md"
        merged_json = self.dir / "results.json"
        result = self.results("merge", "--out", out, "--json", merged_json, *files)
        self.assertEqual(result.returncode, 0, result.stderr)
        text = out.read_text()
        self.assertIn("# cudagap benchmark results", text)
        self.assertIn("device Test GPU (compute capability 9.0", text)
        self.assertIn("| alloc | pooled pair <= 2 us @ 1 MiB | **met** | 1.000 us |", text)
        self.assertIn("| overhead | event record within 2% | **not measured** | - |", text)
        self.assertIn("GPU part skipped: no driver here", text)
        self.assertIn("| 1 MiB | cudaMalloc/cudaFree / cudagap device_buffer | 50.0 |", text)
        self.assertIn("| 1 MiB | cudagap device_buffer | - | cold | 1.000 µs |", text)
        # Version 2's columns: the noise (noisy when the limit came first), the graph beside the
        # row, the clocks (a flagged row in bold) and the sampling line.
        self.assertIn("| 0.30% | 12 × 100 |  | 800 ns (noisy: 4.00%) |", text)
        self.assertIn("| noisy: 3.10% | 40 × 100 |", text)
        self.assertIn("| **FLAGGED: SW power cap** |", text)
        self.assertIn("Sampling: until the noise (relative standard deviation) is at most 0.5% "
                      "after 10 samples, within 0.2 s per measurement; cold samples first write "
                      "100 MiB (2x the L2); clocks read by NVML around each case (never changed). "
                      "**1 row(s) flagged by their clocks**", text)
        self.assertIn("**unreadable report** `" + str(files[2]), text)
        merged = json.loads(merged_json.read_text())
        self.assertEqual([r["benchmark"] for r in merged["reports"]], ["alloc", "overhead"])
        self.assertEqual(len(merged["unreadable"]), 1)
        nothing = self.results("merge", "--out", self.dir / "none.md", files[2])
        self.assertEqual(nothing.returncode, 1)


class CompareResultsTests(unittest.TestCase):
    """bench/compare_results.py on two fixture files (made-up numbers: test data): the ratio of
    each row both runs have, each side's noise, the verdict, the caveats, what only one has."""

    def setUp(self):
        self.dir = Path(tempfile.mkdtemp(prefix="cudagap-compare-"))

    def tearDown(self):
        shutil.rmtree(self.dir)

    def compare(self, *args):
        return run([sys.executable, COMPARE_RESULTS, *args])

    def row(self, text, *cells):
        """The table line that starts with @cells, split into its cells."""
        prefix = "| " + " | ".join(cells) + " |"
        lines = [line for line in text.splitlines() if line.startswith(prefix)]
        self.assertEqual(len(lines), 1, f"{prefix!r} in:\n{text}")
        return [c.strip() for c in lines[0].strip("|").split("|")]

    def test_the_fixture_files(self):
        markdown = self.dir / "comparison.md"
        result = self.compare(FIXTURES / "compare_before.json", FIXTURES / "compare_after.json",
                              "--markdown", markdown)
        self.assertEqual(result.returncode, 0, result.stderr)
        text = result.stdout
        self.assertEqual(markdown.read_text(), text)
        self.assertIn("6 compared: 2 within noise, 1 slower, 1 faster, 2 noise unknown.", text)
        # 0.3% apart with 0.4% noise on each side: within noise.
        self.assertEqual(self.row(text, "gemm", "1000 fp16", "cudagap", "median")[4:],
                         ["10.000 µs", "10.030 µs", "1.003", "0.40%", "0.40%", "within noise"])
        # 20% apart with 0.3% noise: slower.
        self.assertEqual(self.row(text, "gemm", "1000 fp16", "raw cuBLAS", "median")[6:],
                         ["1.200", "0.30%", "0.30%", "slower"])
        # 1.2% apart on graphs of 1% and 2% noise: within the combined 2.2%.
        self.assertEqual(self.row(text, "gemm", "1000 fp16", "cudagap", "graph")[9],
                         "within noise")
        # Faster, but the later run throttled: said beside the verdict.
        self.assertEqual(self.row(text, "gemm", "4096 fp32", "cudagap", "median")[9],
                         "faster (clocks flagged after)")
        # A version-1 report has no noise: no claim either way.
        self.assertEqual(self.row(text, "alloc", "1 MiB", "cudagap device_buffer", "median")[7:],
                         ["-", "0.30%", "noise unknown"])
        self.assertIn("noisy after", self.row(text, "alloc", "1 MiB", "cudaMalloc/cudaFree",
                                              "median")[9])
        self.assertIn("- only in before: gemm / 8192 fp32 / cudagap / median", text)
        self.assertIn("- only in after: gemm / 1000 fp16 / cudagap / 1 call", text)
        self.assertIn("- before: Test H200, driver 580.65.06", text)

    def test_fail_on_slower_and_two_single_reports(self):
        result = self.compare(FIXTURES / "compare_before.json", FIXTURES / "compare_after.json",
                              "--fail-on-slower")
        self.assertEqual(result.returncode, 1)
        same = self.dir / "alloc.json"
        same.write_text(json.dumps(report()))
        result = self.compare(same, same, "--fail-on-slower")
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("3 compared: 3 within noise, 0 slower, 0 faster, 0 noise unknown.",
                      result.stdout)

    def test_unreadable_files_exit_2(self):
        broken = self.dir / "broken.json"
        broken.write_text("{")
        bad = self.dir / "bad.json"
        bad.write_text(json.dumps(report(schema="other")))
        for path, expected in ((broken, "cannot read it"), (bad, "not a benchmark report"),
                               (self.dir / "missing.json", "cannot read it")):
            with self.subTest(path=path):
                result = self.compare(path, FIXTURES / "compare_after.json")
                self.assertEqual(result.returncode, 2)
                self.assertIn(expected, result.stderr)
                self.assertEqual(result.stdout, "")


class PlotTests(unittest.TestCase):
    """bench/plot_results.py: a plot with matplotlib, a clear message without it."""

    def setUp(self):
        self.dir = Path(tempfile.mkdtemp(prefix="cudagap-plot-"))

    def tearDown(self):
        shutil.rmtree(self.dir)

    def test_plot_or_say_why_not(self):
        source = self.dir / "alloc.json"
        source.write_text(json.dumps(report()))
        out = self.dir / "speedups.png"
        result = run([sys.executable, PLOT, source, "--out", out])
        try:
            import matplotlib  # noqa: F401
            has_matplotlib = True
        except ImportError:
            has_matplotlib = False
        if has_matplotlib:
            self.assertEqual(result.returncode, 0, result.stderr)
            self.assertEqual(out.read_bytes()[:8], b"\x89PNG\r\n\x1a\n")
            self.assertIn("(1 ratios)", result.stdout)
        else:
            self.assertEqual(result.returncode, 3)
            self.assertIn("matplotlib is not importable", result.stderr)
            self.assertFalse(out.exists())
        # The ratio without a value is left out, and said so.
        self.assertIn("left out alloc: 1 MiB: torch / cudagap device_buffer", result.stderr)

    def test_nothing_to_plot(self):
        source = self.dir / "empty.json"
        source.write_text(json.dumps(report(ratios=[])))
        result = run([sys.executable, PLOT, source, "--out", self.dir / "x.png"])
        self.assertEqual(result.returncode, 4)
        self.assertIn("no ratio with a value", result.stderr)


class BundleDepsTests(unittest.TestCase):
    """scripts/bundle-deps: a bundle that CMake finds Catch2 and nlohmann-json in."""

    def setUp(self):
        self.dir = Path(tempfile.mkdtemp(prefix="cudagap-bundle-"))

    def tearDown(self):
        shutil.rmtree(self.dir)

    def test_bundle_is_found_by_cmake(self):
        env = {k: os.environ[k] for k in ("CATCH2_CMAKE_DIR", "NLOHMANN_JSON_CMAKE_DIR") if k in os.environ}
        bundle = self.dir / "deps"
        result = run([BUNDLE_DEPS, "--out", bundle], env=env)
        self.assertEqual(result.returncode, 0, result.stderr)
        manifest = (bundle / "MANIFEST.txt").read_text()
        # Catch2 v2 or v3, whichever the build uses (CATCH2_CMAKE_DIR) or is installed.
        bundled = re.search(r"^Catch2 ([23])\.", manifest, re.MULTILINE)
        self.assertIsNotNone(bundled, manifest)
        major = bundled.group(1)
        if "CATCH2_CMAKE_DIR" in env:
            installed = (Path(env["CATCH2_CMAKE_DIR"]) / "Catch2ConfigVersion.cmake").read_text()
            self.assertIn(f'PACKAGE_VERSION "{major}.', installed)
        self.assertIn("nlohmann-json 3.", manifest)
        header = "catch.hpp" if major == "2" else "catch_test_macros.hpp"
        self.assertTrue((bundle / "include" / "catch2" / header).is_file())
        if major == "3":  # v3 is a compiled library: its archives travel too
            self.assertTrue(list(bundle.rglob("libCatch2.a")), list(bundle.rglob("*")))
            self.assertTrue(list(bundle.rglob("libCatch2Main.a")))
        self.assertTrue((bundle / "include" / "nlohmann" / "json.hpp").is_file())
        project = self.dir / "consumer"
        project.mkdir()
        (project / "CMakeLists.txt").write_text(
            "cmake_minimum_required(VERSION 3.24)\nproject(consumer CXX)\n"
            f"find_package(Catch2 {major} REQUIRED)\nfind_package(nlohmann_json 3 REQUIRED)\ninclude(Catch)\n"
            "get_target_property(c Catch2::Catch2 INTERFACE_INCLUDE_DIRECTORIES)\n"
            "get_target_property(j nlohmann_json::nlohmann_json INTERFACE_INCLUDE_DIRECTORIES)\n"
            'message(STATUS "CATCH2=${Catch2_DIR}|${c}")\nmessage(STATUS "JSON=${nlohmann_json_DIR}|${j}")\n')
        # Ninja where it is (a host with the quick start's packages may have no make).
        generator = ["-G", "Ninja"] if shutil.which("ninja") else []
        configured = run(["cmake", "-S", project, "-B", project / "build", *generator,
                          f"-DCMAKE_PREFIX_PATH={bundle}"])
        self.assertEqual(configured.returncode, 0, configured.stdout + configured.stderr)
        prefix = re.escape(str(bundle))  # lib/cmake/Catch2, or a multiarch lib/<triplet>/cmake/Catch2
        self.assertRegex(configured.stdout, f"CATCH2={prefix}/lib/([^/]+/)?cmake/Catch2\\|{prefix}/include")
        self.assertIn(f"JSON={bundle}/share/cmake/nlohmann_json|{bundle}/include", configured.stdout)

    def test_missing_packages_and_bad_arguments(self):
        result = run([BUNDLE_DEPS, "--out", self.dir / "deps"],
                     env={"CATCH2_CMAKE_DIR": str(self.dir / "nowhere")})
        if result.returncode == 1:  # no system Catch2 to fall back on
            self.assertIn("not found: Catch2", result.stderr)
        else:
            self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(run([BUNDLE_DEPS, "--bogus"]).returncode, 2)
        self.assertEqual(run([BUNDLE_DEPS, "--out"]).returncode, 2)
        self.assertEqual(run([BUNDLE_DEPS, "--help"]).returncode, 0)

QUICKSTART = SOURCE / "scripts" / "quickstart"

# Stand-in for CMake in QuickstartTests: records each call (one line, arguments separated by
# '|') in $FAKE_CMAKE_LOG. A configure writes the -D values into CMakeCache.txt (as CMake does,
# even when it fails) and, unless FAKE_CMAKE_FAILS is set, build.ninja; --fresh starts a new
# cache. A build writes a cudagap-demo that prints its arguments.
FAKE_CMAKE = r'''#!/usr/bin/env python3
import os, re, sys
from pathlib import Path
args = sys.argv[1:]
with open(os.environ["FAKE_CMAKE_LOG"], "a") as log:
    log.write("|".join(args) + "\n")
if args[:1] == ["--version"]:
    print("cmake version " + os.environ.get("FAKE_CMAKE_VERSION", "3.31.6"))
    sys.exit(0)
if args[:1] == ["--build"]:
    demo = Path(args[1]) / "examples" / "ecosystem_demo" / "cudagap-demo"
    demo.parent.mkdir(parents=True, exist_ok=True)
    demo.write_text('#!/bin/sh\necho "cudagap-demo ran with: $*"\n')
    demo.chmod(0o755)
    sys.exit(0)
build = Path(args[args.index("-B") + 1])
build.mkdir(parents=True, exist_ok=True)
cache = build / "CMakeCache.txt"
entries = {}
if cache.exists() and "--fresh" not in args:
    for line in cache.read_text().splitlines():
        name, _, value = line.partition("=")
        entries[name.split(":")[0]] = value
entries.setdefault("nlohmann_json_DIR", "nlohmann_json_DIR-NOTFOUND")
for arg in args:
    match = re.fullmatch(r"-D([^=:]+)(?::[A-Z]+)?=(.*)", arg)
    if match:
        entries[match.group(1)] = match.group(2)
cache.write_text("".join(f"{name}:STRING={value}\n" for name, value in entries.items()))
if os.environ.get("FAKE_CMAKE_FAILS"):
    print("CMake Error: fake failure", file=sys.stderr)
    sys.exit(1)
(build / "build.ninja").write_text("")
'''


class QuickstartTests(unittest.TestCase):
    """scripts/quickstart as on a GPU host without network: apt-get fails as it does offline
    (or is missing, or the user is not root), and the quick start names what it could not
    install and goes on; it stops only without CMake, a compiler, a build tool or the CUDA
    Toolkit. CMake, the compiler and the toolkit are stand-ins (the build itself is checked by
    the demo's own tests): what is checked is what quickstart asks of apt and CMake, and that it
    runs the demo it built."""

    def setUp(self):
        self.dir = Path(tempfile.mkdtemp(prefix="cudagap-quickstart-"))
        self.source = self.dir / "source"
        (self.source / "scripts").mkdir(parents=True)
        shutil.copy(QUICKSTART, self.source / "scripts" / "quickstart")
        (self.source / "scripts" / "lib").mkdir()
        shutil.copy(SOURCE / "scripts" / "lib" / "cuda-toolkit.sh", self.source / "scripts" / "lib")
        (self.source / ".deps").mkdir()
        self.build = self.dir / "build"
        self.bin = self.dir / "bin"
        self.bin.mkdir()
        # Only these system tools are on PATH, so that the real CMake and compiler are not.
        for tool in ("bash", "awk", "sed", "grep", "sort", "head", "tail", "tr", "paste", "mktemp",
                     "rm", "mkdir", "touch", "dirname", "cat", "nproc", "tee"):
            os.symlink(shutil.which(tool), self.bin / tool)
        os.symlink(sys.executable, self.bin / "python3")
        self.fake("apt-get", 'echo "E: Failed to fetch http://deb.debian.org/debian/dists/trixie/InRelease'
                             '  Temporary failure resolving \'deb.debian.org\'" >&2; exit 100')
        self.fake("dpkg-query", "exit 1")  # nothing is installed
        self.fake("id", 'echo "${FAKE_UID:-0}"')
        self.fake("ninja", "exit 0")
        self.fake("c++", "exit 0")
        self.fake("ctest", 'echo "100% tests passed, 0 tests failed out of 1"')
        (self.bin / "cmake").write_text(FAKE_CMAKE)
        (self.bin / "cmake").chmod(0o755)
        self.toolkit = self.dir / "cuda"
        (self.toolkit / "bin").mkdir(parents=True)
        (self.toolkit / "bin" / "nvcc").write_text("#!/bin/sh\n")
        (self.toolkit / "bin" / "nvcc").chmod(0o755)
        self.log = self.dir / "cmake-calls.txt"

    def tearDown(self):
        shutil.rmtree(self.dir)

    def fake(self, name, body):
        (self.bin / name).write_text(f"#!/bin/sh\n{body}\n")
        (self.bin / name).chmod(0o755)

    def quickstart(self, *args, **env):
        self.log.write_text("")
        full_env = {"PATH": str(self.bin), "CUDAGAP_BUILD_DIR": str(self.build),
                    "CUDAToolkit_ROOT": str(self.toolkit), "FAKE_CMAKE_LOG": str(self.log),
                    "HOME": str(self.dir), **env}
        return subprocess.run([str(self.bin / "bash"), str(self.source / "scripts" / "quickstart"), *args],
                              capture_output=True, text=True, env=full_env, timeout=60, check=False)

    def configures(self):
        """The configure calls of the last run, each as its list of arguments."""
        calls = [line.split("|") for line in self.log.read_text().splitlines()]
        return [c for c in calls if "-S" in c]

    def test_the_toolkit_is_where_nvcc_on_path_says_it_is(self):
        # As on images where /usr/local/bin/nvcc is a wrapper that runs the toolkit's nvcc: the
        # folder above the wrapper holds a libcudart and no cuBLAS, so it is not the toolkit.
        prefix = self.dir / "usr-local"
        (prefix / "bin").mkdir(parents=True)
        (prefix / "lib").mkdir()
        (prefix / "bin" / "nvcc").write_text(
            f'#!/bin/sh\ncase "$*" in *-dryrun*) echo "#$ _HERE_={self.toolkit}/bin" >&2;'
            f' echo "#$ TOP={self.toolkit}/bin/.." >&2 ;; esac\n')
        (prefix / "bin" / "nvcc").chmod(0o755)
        env = {"PATH": f"{prefix / 'bin'}:{self.bin}", "CUDAToolkit_ROOT": ""}
        self.assertEqual(self.quickstart("demo", **env).returncode, 0)
        [configure] = self.configures()
        self.assertIn(f"-DCUDAToolkit_ROOT={self.toolkit}", configure)
        # An nvcc that reports no TOP (an old or odd one): the folder above it is the toolkit.
        (prefix / "bin" / "nvcc").write_text("#!/bin/sh\nexit 1\n")
        shutil.rmtree(self.build)
        self.assertEqual(self.quickstart("demo", **env).returncode, 0)
        [configure] = self.configures()
        self.assertIn(f"-DCUDAToolkit_ROOT={prefix}", configure)

    def test_offline_as_root_the_demo_builds_and_runs(self):
        result = self.quickstart("demo", "--sizes", "64", "-DCUDAGAP_ENABLE_NCCL=OFF")
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("apt-get update failed (no network?)", result.stderr)
        self.assertIn("Temporary failure resolving", result.stderr)
        # The demo asks only for what it needs, and says it goes on without it.
        self.assertIn("could not install cmake ninja-build g++ libopenblas-dev nlohmann-json3-dev: "
                      "going on with what is here", result.stderr)
        self.assertNotIn("catch2", result.stderr)
        self.assertIn("cudagap-demo ran with: --sizes 64\n", result.stdout)
        [configure] = self.configures()
        for expected in ("-DCUDAGAP_BUILD_TESTS=OFF", "-DCUDAGAP_BUILD_BENCH=OFF", "-DCUDAGAP_BUILD_DOCS=OFF",
                         f"-DCMAKE_PREFIX_PATH={self.source}/.deps", f"-DCUDAToolkit_ROOT={self.toolkit}",
                         "-DCUDAGAP_ENABLE_NCCL=OFF"):
            self.assertIn(expected, configure)
        self.assertEqual(configure[configure.index("-G") + 1], "Ninja")
        # The -D argument went to CMake, not to the demo; the -D given comes last, so it wins.
        self.assertEqual(configure[-1], "-DCUDAGAP_ENABLE_NCCL=OFF")
        self.assertIn(f"--build|{self.build}|--target|cudagap-demo", self.log.read_text())
        # A second run uses the build as it is.
        again = self.quickstart("demo")
        self.assertEqual(again.returncode, 0, again.stderr)
        self.assertEqual(self.configures(), [])

    def test_without_apt_or_root_it_says_what_is_missing_and_goes_on(self):
        (self.bin / "apt-get").unlink()
        result = self.quickstart("demo")
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("there is no apt-get here", result.stderr)
        self.assertIn("cudagap-demo ran with:", result.stdout)
        result = self.quickstart("demo", FAKE_UID="1000")
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("not installed: cmake ninja-build g++ libopenblas-dev nlohmann-json3-dev", result.stderr)
        self.assertIn("sudo apt-get update && sudo apt-get install -y --no-install-recommends cmake", result.stderr)

    def test_a_failed_configure_is_redone_afresh(self):
        failed = self.quickstart("demo", FAKE_CMAKE_FAILS="1")
        self.assertEqual(failed.returncode, 1)
        self.assertIn("configuring failed: CMake says why above; the next run configures afresh", failed.stderr)
        self.assertTrue((self.build / "CMakeCache.txt").exists())
        result = self.quickstart("demo")
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("the last configure in", result.stderr)
        [configure] = self.configures()
        self.assertIn("--fresh", configure)
        self.assertIn("-DCUDAGAP_BUILD_TESTS=OFF", configure)
        # The cache without build.ninja (a configure that failed outside the quick start) too.
        (self.build / "build.ninja").unlink()
        result = self.quickstart("demo")
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("--fresh", self.configures()[0])

    def test_the_tests_reconfigure_a_demo_build_and_ask_for_their_packages(self):
        self.assertEqual(self.quickstart("demo").returncode, 0)
        result = self.quickstart("test", "-R", "core/")
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("configured for the demo: configuring again with the tests", result.stderr)
        self.assertIn("could not install cmake ninja-build g++ libopenblas-dev nlohmann-json3-dev "
                      "catch2 doxygen zlib1g-dev python3", result.stderr)
        [configure] = self.configures()
        self.assertNotIn("--fresh", configure)
        for expected in ("-DCUDAGAP_BUILD_TESTS=ON", "-DCUDAGAP_BUILD_BENCH=ON", "-DCUDAGAP_BUILD_DOCS=ON"):
            self.assertIn(expected, configure)
        self.assertIn("all tests passed", result.stderr)
        self.assertRegex(result.stderr, r"quickstart: took \d+ s \(set-up \d+ s, configure \d+ s, "
                                        r"build \d+ s, tests \d+ s\)\n")
        self.assertEqual(self.quickstart("test").returncode, 0)
        self.assertEqual(self.configures(), [])

    def test_json_looks_again_for_nlohmann_json(self):
        self.assertEqual(self.quickstart("demo").returncode, 0)
        result = self.quickstart("demo", "--json")
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("found no nlohmann-json, which --json needs: configuring again", result.stderr)
        self.assertEqual(len(self.configures()), 1)
        self.assertIn("cudagap-demo ran with: --json", result.stdout)
        # Not when it was found, nor when the configure was told not to look.
        for given in ("-Dnlohmann_json_DIR=/usr/share/cmake/nlohmann_json",
                      "-DCMAKE_DISABLE_FIND_PACKAGE_nlohmann_json=ON"):
            shutil.rmtree(self.build)
            self.assertEqual(self.quickstart("demo", given).returncode, 0)
            result = self.quickstart("demo", "--json")
            self.assertEqual(result.returncode, 0, result.stderr)
            self.assertEqual(self.configures(), [], given)

    def test_it_stops_only_for_what_is_required_with_the_fix(self):
        (self.bin / "ninja").unlink()
        self.fake("make", "exit 0")
        result = self.quickstart("demo")
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("no ninja here: building with make", result.stderr)
        configure = self.configures()[0]
        self.assertEqual(configure[configure.index("-G") + 1], "Unix Makefiles")
        (self.bin / "make").unlink()
        shutil.rmtree(self.build)
        cases = [({}, "neither ninja nor make was found on PATH", "apt-get install ninja-build"),
                 ({"FAKE_CMAKE_VERSION": "3.22.1"}, "CMake 3.22.1 is on PATH", "pip install cmake"),
                 ({"CUDAToolkit_ROOT": str(self.dir / "nowhere")}, "the CUDA Toolkit was not found",
                  "https://developer.nvidia.com/cuda-downloads")]
        self.fake("ninja", "exit 0")
        for env, message, fix in cases:
            if not env:
                (self.bin / "ninja").unlink()
            result = self.quickstart("demo", **env)
            self.assertEqual(result.returncode, 3, (env, result.stderr))
            self.assertIn(message, result.stderr)
            self.assertIn(fix, result.stderr)
            self.assertEqual(self.configures(), [])
            self.fake("ninja", "exit 0")
        (self.bin / "c++").unlink()
        result = self.quickstart("demo")
        self.assertEqual(result.returncode, 3, result.stderr)
        self.assertIn("no C++ compiler was found", result.stderr)
        self.assertIn("apt-get install g++", result.stderr)
        (self.bin / "cmake").unlink()
        result = self.quickstart("demo")
        self.assertEqual(result.returncode, 3, result.stderr)
        self.assertIn("CMake was not found on PATH", result.stderr)
        self.assertIn("pip install cmake", result.stderr)


def list_tests(binary, spec, *flags):
    """The names of the test cases of a Catch2 binary that @spec selects."""
    listed = run([binary, *flags, "--list-test-names-only", spec])
    return [line for line in listed.stdout.splitlines() if line.strip()]


def fake_gpu_tools(folder, calls=None, gpus=1):
    """A folder with stand-ins for nvidia-smi (@gpus H200s) and compute-sanitizer (records its
    command line in @calls; memcheck of the core suite finds 3 errors, the rest none; with
    FAKE_SANITIZER_REFUSES=1 in the environment it refuses the device as it does on gVisor)."""
    tools = folder / "bin"
    tools.mkdir()
    calls = calls or folder / "sanitizer-calls.txt"
    (tools / "nvidia-smi").write_text(
        "#!/bin/sh\n"
        'case "$*" in\n'
        f'  *compute_cap*) for i in $(seq {gpus}); do echo "9.0"; done ;;\n'
        f'  *query-gpu=name*) for i in $(seq {gpus}); do echo "NVIDIA H200"; done ;;\n'
        '  *) echo "GPU 0: NVIDIA H200 (UUID: GPU-fake)" ;;\n'
        "esac\n")
    (tools / "compute-sanitizer").write_text(
        "#!/bin/sh\n"
        f'echo "$*" >> "{calls}"\n'
        'case "$*" in\n'
        '  *--version*) echo "fake compute-sanitizer"; exit 0 ;;\n'
        "esac\n"
        'if [ -n "$FAKE_SANITIZER_REFUSES" ]; then\n'
        '  echo "========= Error: Device not supported"\n'
        '  echo "error: cudaMalloc: unknown error (999)"\n'
        '  echo "========= ERROR SUMMARY: 1 error"; exit 1\n'
        "fi\n"
        'case "$*" in\n'
        '  *cudagap_core_tests*) echo "========= ERROR SUMMARY: 3 errors"; exit 99 ;;\n'
        "esac\n"
        'echo "========= ERROR SUMMARY: 0 errors"\n')
    for tool in tools.iterdir():
        tool.chmod(0o755)
    return tools


def steps_of(out):
    """The steps of a gpu-check summary.json, by name."""
    return {s["step"]: s for s in json.loads((out / "summary.json").read_text())["steps"]}


def archive_members(out):
    with tarfile.open(out / "gpu-check-files.tar.gz") as archive:
        return archive.getnames()


class GpuCheckTests(unittest.TestCase):
    """scripts/gpu-check: command line, plan, and real no-GPU runs on an existing build."""

    def setUp(self):
        self.dir = Path(tempfile.mkdtemp(prefix="cudagap-gpu-check-"))

    def tearDown(self):
        shutil.rmtree(self.dir)

    def test_the_summary_quotes_the_all_reduce_numbers(self):
        rows = [{"case": case, "variant": variant, "gbps": gbps, "median_ms": ms}
                for case, variant, gbps, ms in (
                    ("1 MiB out-of-place", "cudagap", 100.0, 0.01),
                    ("256 MiB out-of-place", "cudagap", 2000.0, 0.1342),
                    ("256 MiB out-of-place", "raw NCCL", 2010.0, 0.1336),
                    ("256 MiB in-place", "cudagap", 9e4, 0.003),
                    ("256 MiB in-place", "torch", 2e4, 0.012))]
        json_file = self.dir / "allreduce.json"
        json_file.write_text(json.dumps({"rows": rows}))
        steps = SOURCE / "scripts" / "lib" / "gpu-check-steps.sh"
        result = run(["bash", "-c", f'python="{sys.executable}"; source "{steps}"; allreduce_numbers "{json_file}"'])
        self.assertEqual(result.stdout.strip(),
                         "256 MiB out-of-place algbw: cudagap 2000 GB/s, raw NCCL 2010 GB/s, ratio 1.004; "
                         "in place: torch 12.0 us vs cudagap 3.0 us")

    def test_the_summary_says_when_the_onnx_model_came_from_the_twin(self):
        steps = SOURCE / "scripts" / "lib" / "gpu-check-steps.sh"
        origin = lambda report: run(["bash", "-c", f'python="{sys.executable}"; source "{steps}"; '  # noqa: E731
                                     f'infer_model_origin "$1"', "bash", report]).stdout.strip()
        report = self.dir / "infer.json"
        report.write_text(json.dumps({"infer": {"onnx_model": {"exporter": "bench/infer/onnx_twin.py"}}}))
        self.assertEqual(origin(report), "the ONNX model was made by the Python twin of cudagap-infer's exporter "
                                         "(this cudagap-infer has none)")
        report.write_text(json.dumps({"infer": {"onnx_model": {"exporter": "cudagap-infer --export-onnx"}}}))
        self.assertEqual(origin(report), "")

    @unittest.skipIf(BUILD is None, "CUDAGAP_BUILD_DIR is not set")
    def test_the_no_gpu_build_has_every_program_the_examples_tests_run(self):
        """Without a GPU gpu-check builds the programs, not the [gpu] suites: every program that
        a ctest entry of the labels gpu and examples runs (or a fixture it needs) must be among
        them, or that entry fails as "Not Run" (cudagap_onnx_export_probe once was not). The
        list is made from a configured tree before anything is built, as on the GPU host; what
        the entries need is read from this (built) build."""
        steps = SOURCE / "scripts" / "lib" / "gpu-check-steps.sh"
        generator = "Ninja" if "CMAKE_GENERATOR:INTERNAL=Ninja" in (BUILD / "CMakeCache.txt").read_text() else "Unix Makefiles"
        fresh = self.dir / "configured"
        packages = [f"-D{name}={os.environ[variable]}" for name, variable in
                    (("Catch2_DIR", "CATCH2_CMAKE_DIR"), ("nlohmann_json_DIR", "NLOHMANN_JSON_CMAKE_DIR"))
                    if os.environ.get(variable)]
        configured = run(["cmake", "-S", SOURCE, "-B", fresh, "-G", generator, "-DCMAKE_BUILD_TYPE=Release",
                          "-DCMAKE_CUDA_ARCHITECTURES=90", "-DCUDAGAP_BUILD_DOCS=OFF", *packages])
        self.assertEqual(configured.returncode, 0, configured.stdout[-2000:] + configured.stderr[-2000:])
        script = (f'source "{steps}"; build="{fresh}"; python="{sys.executable}"; tools="{TOOLS}"; '
                  f'generator="{generator}"; build_targets() {{ echo programs; }}; expand_targets')
        built = set(run(["bash", "-c", script]).stdout.split())
        shown = json.loads(run(["ctest", "--test-dir", BUILD, "-L", "^(gpu|examples)$", "--show-only=json-v1"]).stdout)
        needed = set()
        for test in shown["tests"]:
            for argument in test.get("command") or []:
                for path in re.findall(re.escape(str(BUILD)) + r"/[^\s=|;,]+", argument):
                    if os.path.isfile(path) and os.access(path, os.X_OK):
                        needed.add(Path(path).name)
        suites = {name for name in needed if re.fullmatch(r"cudagap_[a-z0-9_]+_tests", name)}
        self.assertTrue(needed - suites, "no program found in the ctest entries")
        self.assertEqual(needed - suites - built, set())
        for helper in ("cudagap_onnx_export_probe", "cudagap_train_driver", "cudagap_make_tiny_idx",
                       "cudagap_compare_train_runs", "cudagap_readme_example", "cudagap-infer"):
            if helper in needed:
                self.assertIn(helper, built)
        self.assertIn("cudagap_test_main", built)  # Catch2 from .deps compiles, even with no suite to run

    def test_help_and_bad_command_lines(self):
        result = run([GPU_CHECK, "--help"])
        self.assertEqual(result.returncode, 0)
        self.assertIn("Exit code: 0 everything passed", result.stdout)
        self.assertIn("--only STEPS", result.stdout)
        for args in (["--bogus"], ["--out"], ["--jobs", "0"], ["--budget", "x"],
                     ["--only", "bench-nothing"], ["--only", "tests;rm"], ["--only="],
                     ["--no-build", "--build-dir", self.dir / "empty"]):
            with self.subTest(args=args):
                bad = run([GPU_CHECK, *args])
                self.assertEqual(bad.returncode, 2, bad.stderr)
                self.assertIn("gpu-check:", bad.stderr)

    def test_dry_run_shows_the_plan(self):
        result = run([GPU_CHECK, "--dry-run", "--no-gpu", "--quick", "--out", self.dir / "out"])
        self.assertEqual(result.returncode, 0, result.stderr)
        for expected in ("GPU         none: --no-gpu was given", "configure          cmake -S",
                         "-DCUDAGAP_BUILD_DOCS=OFF", "-L '^(gpu|examples)$' --output-junit tests.xml",
                         "(no GPU: the [gpu] suites are not built, the examples run)",
                         "--target <every cudagap-* program> cudagap_gpu_probe cudagap_test_main <every program the gpu and examples tests run>",
                         "--cpu-only", "--quick",
                         "archive            everything else"):
            self.assertIn(expected, result.stdout)
        # The benchmarks in the order they run, each once: the headline two, the three newest,
        # the host-side two.
        order = [line.split()[0] for line in result.stdout.splitlines() if line.startswith("  bench-")]
        self.assertEqual(order[:7], ["bench-gemm", "bench-conv", "bench-train", "bench-infer", "bench-allreduce",
                                     "bench-alloc", "bench-overhead"])
        self.assertEqual(len(order), len(set(order)))
        self.assertIn("mode        quick, budget 400s (hard end 520s of the 540s limit)", result.stdout)
        self.assertNotIn("time plan", result.stdout)  # without a GPU the CPU parts run within the hard end
        self.assertFalse((self.dir / "out").exists())  # nothing was run or written
        env_out = run([GPU_CHECK, "--dry-run"], env={"OUT": str(self.dir / "from-env")})
        self.assertIn(f"output      {self.dir / 'from-env'}", env_out.stdout)

    def test_only_builds_and_runs_what_it_names(self):
        result = run([GPU_CHECK, "--dry-run", "--no-gpu", "--only", "bench-alloc,bench-gemm"])
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("--target cudagap-bench-gemm cudagap-bench-alloc", result.stdout)
        self.assertNotIn("  tests ", result.stdout)
        self.assertEqual([line.split()[0] for line in result.stdout.splitlines()
                          if line.startswith("  bench-")], ["bench-gemm", "bench-alloc"])

    def test_missing_tools_stop_the_run_at_once_with_the_fix(self):
        out = self.dir / "out"
        build = self.dir / "build"
        result = run([GPU_CHECK, "--out", out, "--build-dir", build],
                     env={"CUDAToolkit_ROOT": str(self.dir / "no-toolkit"), "CXX": "/nonexistent/c++"},
                     timeout=60)
        self.assertEqual(result.returncode, 4, result.stdout + result.stderr)
        self.assertFalse((build / "CMakeCache.txt").exists())  # nothing was configured
        preflight = steps_of(out)["preflight"]
        self.assertEqual(preflight["status"], "FAIL")
        self.assertIn("has no bin/nvcc", preflight["note"])
        self.assertIn("CXX=/nonexistent/c++ is not a program here", preflight["note"])
        self.assertNotIn("configure", steps_of(out))
        self.assertIn("MISSING what the run needs", (out / "summary.md").read_text())
        self.assertIn("gpu-check-files/logs/preflight.log", archive_members(out))

    def test_the_probe_comes_first_and_ends_within_15_s(self):
        """The probe is the first step, bounded even when nvidia-smi hangs, and summary.md has
        what it found although the run stops at the preflight (nothing is built)."""
        tools = self.dir / "bin"
        tools.mkdir()
        # It hangs only for the probe's question (the clocks), so that the run gets that far.
        (tools / "nvidia-smi").write_text('#!/bin/sh\ncase "$*" in *clocks.max.mem*) sleep 30 ;; '
                                          '*compute_cap*) echo 9.0 ;; *) echo "NVIDIA H200" ;; esac\n')
        (tools / "nvidia-smi").chmod(0o755)
        out = self.dir / "out"
        result = run([GPU_CHECK, "--out", out, "--build-dir", self.dir / "build"],
                     env={"PATH": f"{tools}:{os.environ['PATH']}", "CUDAToolkit_ROOT": str(self.dir / "no-toolkit"),
                          "LD_LIBRARY_PATH": str(self.dir / "elsewhere")}, timeout=120)
        self.assertEqual(result.returncode, 4, result.stdout + result.stderr)
        steps = json.loads((out / "summary.json").read_text())["steps"]
        self.assertEqual([step["step"] for step in steps[:2]], ["probe", "preflight"])
        self.assertLessEqual(steps[0]["seconds"], 15)
        summary = (out / "summary.md").read_text()
        for expected in ("## The host, as the probe found it", "- GPU: nvidia-smi gave no answer within 5 s",
                         f"- LD_LIBRARY_PATH: {self.dir / 'elsewhere'}", "- cuBLAS: header ", "- cuRAND: header ",
                         "- cuDNN: header ", "- NCCL: header ", "- zlib: header ", "- NVIDIA wheel folders: ",
                         "- compute-sanitizer: ", "- free disk: ", "- memory: ", f"- python3 ", "torch ", "numpy "):
            self.assertIn(expected, summary)
        self.assertIn("gpu-check-files/logs/probe.log", archive_members(out))

    def test_the_limit_fits_the_plan_to_the_time_there_is(self):
        for args, expected in ((["--limit", "300"], "budget 160s (hard end 280s of the 300s limit)"),
                               (["--limit", "300", "--budget", "500"], "budget 260s (hard end 280s of the 300s limit)"),
                               (["--budget", "100"], "budget 100s (hard end 220s of the 540s limit)")):
            with self.subTest(args=args):
                plan = run([GPU_CHECK, "--dry-run", "--no-gpu", *args])
                self.assertEqual(plan.returncode, 0, plan.stderr)
                self.assertIn(expected, plan.stdout)
        for bad in (["--limit", "30"], ["--limit", "x"], ["--cmake-arg", "nodash"]):
            with self.subTest(args=bad):
                self.assertEqual(run([GPU_CHECK, "--dry-run", *bad]).returncode, 2)
        extra = run([GPU_CHECK, "--dry-run", "--no-gpu", "--cmake-arg", "-DCMAKE_DISABLE_FIND_PACKAGE_ZLIB=TRUE"])
        self.assertIn("-DCMAKE_DISABLE_FIND_PACKAGE_ZLIB=TRUE", extra.stdout)

    def test_a_benchmark_that_measured_nothing_fails_on_a_gpu_host(self):
        """bench/train without its data set exits 0 with every part "not measured": a FAIL on a
        GPU host, a PASS without a GPU (where its CPU part is all there is)."""
        steps = SOURCE / "scripts" / "lib" / "gpu-check-steps.sh"
        (self.dir / "bench").mkdir()
        report = self.dir / "bench" / "train.json"

        def verdict(have_gpu):
            script = (f'source "{steps}"; python="{sys.executable}"; work="{self.dir}"; have_gpu={have_gpu}; '
                      'last_rc=0; last_seconds=3; budget=400; '
                      'record() { printf "%s|%s|%s\n" "$1" "$2" "$4"; }; bench_verdict train 100 45 "the note"')
            return run(["bash", "-c", script]).stdout.strip()

        why = "cudagap-train --graph: not measured: /x/train-images-idx3-ubyte[.gz] is missing"
        report.write_text(json.dumps({"rows": [], "notes": [why, "settings: data /x"]}))
        self.assertEqual(verdict(1), f"bench-train|FAIL|measured nothing on a GPU host: {why}")
        self.assertEqual(verdict(0), "bench-train|PASS|the note")
        report.write_text(json.dumps({"rows": [{"case": "2 epochs"}], "notes": []}))
        self.assertEqual(verdict(1), "bench-train|PASS|the note")
        report.unlink()
        self.assertEqual(verdict(1), "bench-train|FAIL|measured nothing on a GPU host: no report")

    @unittest.skipIf(BUILD is None, "CUDAGAP_BUILD_DIR is not set")
    def test_no_gpu_run_on_an_existing_build(self):
        out = self.dir / "out"
        result = run([GPU_CHECK, "--no-gpu", "--no-build", "--build-dir", BUILD, "--skip-tests",
                      "--quick", "--out", out])
        self.assertEqual(result.returncode, 3, result.stdout + result.stderr)
        last_lines = result.stdout.strip().splitlines()
        self.assertIn("gpu-check: NO GPU here (--no-gpu was given)", last_lines[-1])
        summary = json.loads((out / "summary.json").read_text())
        self.assertEqual(summary["exit_code"], 3)
        self.assertEqual(summary["archive"], "gpu-check-files.tar.gz")
        steps = steps_of(out)
        self.assertEqual(steps["tests"]["status"], "SKIP")
        self.assertEqual(steps["sanitizer"]["note"], "no GPU")
        self.assertEqual(steps["bench-alloc"]["status"], "SKIP")
        self.assertIn("CPU part only", steps["bench-alloc"]["note"])
        self.assertEqual(steps["results"]["status"], "PASS")
        self.assertIn("| bench-alloc | SKIP |", (out / "summary.md").read_text())
        results_md = (out / "results.md").read_text()
        self.assertIn("## alloc", results_md)
        self.assertIn("GPU part skipped: --cpu-only was given", results_md)
        self.assertIn("| **not measured** |", results_md)
        members = archive_members(out)
        for name in ("logs/environment.log", "logs/bench-alloc.log", "bench/alloc.json", "bench/gemm.json"):
            self.assertIn(f"gpu-check-files/{name}", members)
        # The printed table comes last, after the steps' progress.
        self.assertIn("  step", result.stdout)
        self.assertLess(result.stdout.index("  step"), result.stdout.index("gpu-check: NO GPU"))

    @unittest.skipIf(BUILD is None, "CUDAGAP_BUILD_DIR is not set")
    def test_sanitizer_specs_each_match_tests(self):
        """Every memcheck, racecheck and initcheck filter of the full and quick plans selects at
        least one test of this build (a renamed test file or tag would otherwise fail the run on
        the GPU host)."""
        tools = fake_gpu_tools(self.dir)
        specs = []
        for quick in ([], ["--quick"]):
            plan = run([GPU_CHECK, "--dry-run", "--build-dir", BUILD, *quick],
                       env={"PATH": f"{tools}:{os.environ['PATH']}", "CUDA_VISIBLE_DEVICES": ""})
            self.assertEqual(plan.returncode, 0, plan.stderr)
            for line in plan.stdout.splitlines():
                if line.strip().startswith(("sanitizer-memcheck", "sanitizer-racecheck", "sanitizer-initcheck")):
                    specs += line.split()[1:]
        self.assertGreaterEqual(len(specs), 6, specs)
        for spec in specs:
            suite, filters = spec.split(":", 1)
            binary = BUILD / "tests" / suite / f"cudagap_{suite}_tests"
            if not binary.exists():  # a wrapper this build does not have (no cuDNN, say)
                continue
            for one in filters.split(","):
                with self.subTest(suite=suite, filter=one):
                    self.assertTrue(list_tests(binary, one, "-#"), f"{one} selects no test of {binary}")

    @unittest.skipIf(BUILD is None, "CUDAGAP_BUILD_DIR is not set")
    def test_gpu_mode_logic_with_fake_tools(self):
        """The GPU-host path, with stand-ins for nvidia-smi and compute-sanitizer: the
        architecture comes from the GPU, the sanitizer is probed once, memcheck runs the subset,
        sanitizer errors and benchmarks that skip their GPU part on a GPU host are failures."""
        calls = self.dir / "sanitizer-calls.txt"
        tools = fake_gpu_tools(self.dir, calls)
        # The fakes say there is a GPU; CUDA must not find one, even on a real GPU host, so that
        # the benchmarks skip their GPU part there too (and this test stays fast).
        env = {"PATH": f"{tools}:{os.environ['PATH']}", "CUDA_VISIBLE_DEVICES": ""}
        plan = run([GPU_CHECK, "--dry-run"], env=env)
        self.assertIn("GPU         1: NVIDIA H200", plan.stdout)
        self.assertIn("arch        90 (the local GPU's)", plan.stdout)
        out = self.dir / "out"
        result = run([GPU_CHECK, "--no-build", "--build-dir", BUILD, "--skip-tests", "--quick",
                      "--out", out], env=env)
        self.assertEqual(result.returncode, 1, result.stdout + result.stderr)
        steps = steps_of(out)
        self.assertEqual(steps["environment"]["note"], "NVIDIA H200, arch 90")
        self.assertEqual(steps["sanitizer-probe"]["status"], "PASS")
        memcheck = steps["sanitizer-memcheck"]
        self.assertEqual(memcheck["status"], "FAIL")
        self.assertIn("core: 3 errors", memcheck["note"])
        self.assertIn("blas: clean", memcheck["note"])
        self.assertEqual(steps["sanitizer-racecheck"]["status"], "PASS")
        self.assertIn("blas: clean", steps["sanitizer-racecheck"]["note"])
        self.assertEqual(steps["bench-alloc"]["status"], "FAIL")
        self.assertIn("GPU part skipped on a GPU host", steps["bench-alloc"]["note"])
        recorded = calls.read_text().splitlines()
        probes = [c for c in recorded if "cudagap_gpu_probe" in c]
        self.assertEqual(len(probes), 1)
        self.assertTrue(probes[0].endswith("cudagap_gpu_probe --exercise"), probes[0])
        # The host probe's call first: memcheck over python3's cudaMalloc (no suite).
        self.assertIn("import ctypes", recorded[0], recorded)
        memchecks = [c for c in recorded if "--tool memcheck" in c and "cudagap_gpu_probe" not in c
                     and "import ctypes" not in c]
        suites = sorted(Path(c.split(" --require-gpu")[0].split()[-1]).name for c in memchecks)
        self.assertEqual(suites, sorted(f"cudagap_{s}_tests" for s in ("core", "blas")
                                        if (BUILD / "tests" / s / f"cudagap_{s}_tests").exists()))
        for call in memchecks:
            # API errors are off: the tests provoke some on purpose (an impossible allocation).
            self.assertIn("--leak-check full --report-api-errors no --error-exitcode 99", call)
            self.assertIn("--require-gpu -# --warn NoTests [", call)
        racecheck = [c for c in recorded if "--tool racecheck" in c]
        self.assertEqual(len(racecheck), 1)
        self.assertTrue(racecheck[0].endswith("cudagap_blas_tests --require-gpu -# --warn NoTests "
                                              "[#test_numerics][gpu]~[gate],[#test_convert][gpu]~[gate]"),
                        racecheck[0])
        # The time plan first, then every benchmark, then memcheck, racecheck and initcheck.
        order = [step["step"] for step in json.loads((out / "summary.json").read_text())["steps"]]
        self.assertEqual(order[order.index("plan"):order.index("plan") + 8],
                         ["plan", "bench-gemm", "bench-conv", "bench-train", "bench-infer", "bench-allreduce",
                          "bench-alloc", "bench-overhead"])
        self.assertEqual(order[order.index("bench-overhead") + 1:order.index("bench-overhead") + 5],
                         ["sanitizer-probe", "sanitizer-memcheck", "sanitizer-racecheck", "sanitizer-initcheck"])
        self.assertRegex(steps["plan"]["note"], r"^[0-9]+s of the 400s budget left for 10 optional steps; the first 10 "
                                                r"are guaranteed their quick slots \(320s\)")
        self.assertIn("gpu-check-files/logs/plan.log", archive_members(out))

        # Out of time: what is not run is reported as such, and is not a failure of cudagap.
        late = self.dir / "late"
        result = run([GPU_CHECK, "--no-build", "--build-dir", BUILD, "--skip-tests", "--quick",
                      "--budget", "1", "--out", late], env=env)
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
        steps = steps_of(late)
        for name in ("bench-gemm", "bench-alloc", "sanitizer-memcheck", "sanitizer-racecheck", "sanitizer-initcheck"):
            with self.subTest(step=name):
                self.assertEqual(steps[name]["status"], "SKIP")
                self.assertRegex(steps[name]["note"], r"^not run: [01]s of the 1s time budget left, 0s kept for the "
                                                      r"steps after it, and it needs [0-9]+s$")
        self.assertNotIn("sanitizer-probe", steps)
        self.assertIn("not run or cut short for lack of time (--budget 1s): bench-gemm", result.stdout)

    @unittest.skipIf(BUILD is None, "CUDAGAP_BUILD_DIR is not set")
    def test_a_sanitizer_that_refuses_the_device_is_skipped(self):
        """On gVisor hosts compute-sanitizer says "Device not supported": every sanitizer step
        is SKIP with that reason, and the run does not fail for it."""
        tools = fake_gpu_tools(self.dir)
        env = {"PATH": f"{tools}:{os.environ['PATH']}", "CUDA_VISIBLE_DEVICES": "",
               "FAKE_SANITIZER_REFUSES": "1"}
        out = self.dir / "out"
        result = run([GPU_CHECK, "--no-build", "--build-dir", BUILD, "--only", "sanitizer",
                      "--out", out], env=env)
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
        steps = steps_of(out)
        for name in ("sanitizer-probe", "sanitizer-memcheck", "sanitizer-racecheck", "sanitizer-initcheck"):
            with self.subTest(step=name):
                self.assertEqual(steps[name]["status"], "SKIP")
                self.assertIn("Device not supported", steps[name]["note"])
        self.assertNotIn("bench-gemm", steps)  # --only sanitizer


    @unittest.skipIf(BUILD is None, "CUDAGAP_BUILD_DIR is not set")
    def test_skip_sanitizer_runs_no_sanitizer(self):
        calls = self.dir / "sanitizer-calls.txt"
        env = {"PATH": f"{fake_gpu_tools(self.dir, calls)}:{os.environ['PATH']}", "CUDA_VISIBLE_DEVICES": ""}
        out = self.dir / "out"
        result = run([GPU_CHECK, "--no-build", "--build-dir", BUILD, "--only", "sanitizer", "--skip-sanitizer",
                      "--out", out], env=env)
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
        steps = steps_of(out)
        self.assertEqual((steps["sanitizer"]["status"], steps["sanitizer"]["note"]), ("SKIP", "--skip-sanitizer"))
        self.assertFalse([name for name in steps if name.startswith("sanitizer-")])
        self.assertEqual(calls.read_text().split("\n")[:-1], ["--version"])  # the environment's log only


class GpuCheckMultiGpuTests(unittest.TestCase):
    """scripts/gpu-check's multi-gpu step: the [multi-gpu] tests (ctest label multi-gpu) run where
    nvidia-smi lists two GPUs or more, and elsewhere the step is a SKIP row in summary.md that says
    why; the plan (--dry-run) says which. The step runs here against a stand-in for ctest."""

    def setUp(self):
        self.dir = Path(tempfile.mkdtemp(prefix="cudagap-gpu-check-multi-"))

    def tearDown(self):
        shutil.rmtree(self.dir)

    def plan_line(self, gpus, *args):
        tools = fake_gpu_tools(self.dir / f"{gpus}-gpus", gpus=gpus) if gpus else None
        env = {"PATH": f"{tools}:{os.environ['PATH']}"} if tools else {}
        plan = run([GPU_CHECK, "--dry-run", *args], env={**env, "CUDA_VISIBLE_DEVICES": ""})
        self.assertEqual(plan.returncode, 0, plan.stderr)
        lines = [line for line in plan.stdout.splitlines() if line.startswith("  multi-gpu ")]
        return lines[0].split(None, 1)[1] if lines else None

    def test_the_plan_runs_the_label_only_on_two_gpus_or_more(self):
        need = "the [multi-gpu] tests (ctest label multi-gpu) need two GPUs or more"
        (self.dir / "1-gpus").mkdir()
        self.assertEqual(self.plan_line(1), f"SKIP: 1 GPU here (NVIDIA H200): {need}")
        (self.dir / "2-gpus").mkdir()
        self.assertEqual(self.plan_line(2), "ctest -L '^multi-gpu$' --output-junit multi-gpu.xml "
                                            "(on 2 GPUs, each test alone)")
        self.assertEqual(self.plan_line(0, "--no-gpu"), f"SKIP: no GPU (--no-gpu was given): {need}")
        self.assertIsNone(self.plan_line(0, "--no-gpu", "--skip-tests"))  # no tests, no multi-gpu

    def step(self, gpus, ctest_output="", ctest_exit=0):
        """multi_gpu_step on a host with @gpus H200s (0: none), ctest answering @ctest_output:
        (the summary.md it leaves, the ctest command line it ran or None)."""
        tools = self.dir / "bin"
        tools.mkdir()
        calls = self.dir / "ctest-calls.txt"
        (self.dir / "ctest-output.txt").write_text(ctest_output)
        (tools / "ctest").write_text(f'#!/bin/sh\necho "$*" >> "{calls}"\n'
                                     f'cat "{self.dir / "ctest-output.txt"}"\nexit {ctest_exit}\n')
        (tools / "ctest").chmod(0o755)
        lib = SOURCE / "scripts" / "lib"
        out, work = self.dir / "out", self.dir / "work" / "gpu-check-files"
        out.mkdir()
        (work / "logs").mkdir(parents=True)
        names = "\n".join(["NVIDIA H200"] * gpus)
        script = (f'source "{lib / "gpu-check-record.sh"}"; source "{lib / "gpu-check-steps.sh"}"; '
                  'say() { :; }; min() { (($1 < $2)) && echo "$1" || echo "$2"; }; '
                  f'python="{sys.executable}"; tools="{TOOLS}"; out="{out}"; work="{work}"; '
                  f'archive_name=gpu-check-files.tar.gz; build="{self.dir / "build"}"; quick=0; only=""; '
                  'commit=test; budget=400; hard_end=520; start_time="$(date +%s)"; '
                  f'have_gpu={int(gpus > 0)}; gpu_count={gpus}; gpu_names="{names}"; '
                  'no_gpu_reason="nvidia-smi is not installed (no NVIDIA driver)"; multi_gpu_step')
        done = run(["bash", "-c", script], env={"PATH": f"{tools}:{os.environ['PATH']}"})
        self.assertEqual(done.returncode, 0, done.stderr)
        return (out / "summary.md").read_text(), (calls.read_text().strip() if calls.exists() else None)

    def test_one_gpu_or_none_is_a_skip_row_with_the_reason(self):
        summary, ctest = self.step(1)
        self.assertIn("| multi-gpu | SKIP | 0s | 1 GPU here (NVIDIA H200): the [multi-gpu] tests (ctest label "
                      "multi-gpu) need two GPUs or more |", summary)
        self.assertIsNone(ctest)
        shutil.rmtree(self.dir)
        self.dir.mkdir()
        summary, ctest = self.step(0)
        self.assertIn("| multi-gpu | SKIP | 0s | no GPU (nvidia-smi is not installed (no NVIDIA driver)): the "
                      "[multi-gpu] tests", summary)
        self.assertIsNone(ctest)

    def test_two_gpus_run_the_label_and_report_its_counts(self):
        passed = ("1/2 Test #7: core/a stream made on device 1 while device 0 is current ....   Passed    0.4 sec\n"
                  "2/2 Test #9: nccl/all_reduce over every local GPU .....................   Passed    1.2 sec\n\n"
                  "100% tests passed, 0 tests failed out of 2\n")
        summary, ctest = self.step(2, passed)
        self.assertIn("| multi-gpu | PASS |", summary)
        self.assertIn("2 tests (label multi-gpu, on 2 GPUs): 2 passed, 0 failed, 0 skipped |", summary)
        self.assertRegex(ctest, r"--test-dir \S+/build --output-on-failure --timeout [0-9]+ -L \^multi-gpu\$ "
                                r"--output-junit \S+/multi-gpu.xml$")

    def test_two_gpus_fail_on_a_failed_or_skipped_test(self):
        failed = ("1/2 Test #7: core/a stream made on device 1 while device 0 is current ....   Passed    0.4 sec\n"
                  "2/2 Test #9: nccl/all_reduce over every local GPU .....................***Failed    1.2 sec\n\n"
                  "50% tests passed, 1 tests failed out of 2\n")
        summary, _ = self.step(2, failed, ctest_exit=8)
        self.assertIn("| multi-gpu | FAIL |", summary)
        self.assertIn("1 passed, 1 failed, 0 skipped; first: nccl/all_reduce over every local GPU |", summary)
        shutil.rmtree(self.dir)
        self.dir.mkdir()
        skipped = ("1/1 Test #7: core/a stream made on device 1 while device 0 is current ....   Skipped    0.1 sec\n"
                   "   7 - core/a stream made on device 1 while device 0 is current (Skipped)\n\n"
                   "100% tests passed, 0 tests failed out of 1\n")
        summary, _ = self.step(2, skipped)
        self.assertIn("| multi-gpu | FAIL |", summary)
        self.assertIn("0 passed, 0 failed, 1 skipped: on a host with 2 GPUs nothing may be skipped", summary)


PLAN = SOURCE / "scripts" / "lib" / "gpu-check-plan.sh"
OPTIONAL = ["bench-gemm", "bench-conv", "bench-train", "bench-infer", "bench-allreduce", "bench-alloc",
            "bench-overhead", "sanitizer-memcheck", "sanitizer-racecheck", "sanitizer-initcheck"]


def simulate_plan(left, used_percent, quick=0, budget=400, steps=OPTIONAL):
    """gpu-check-plan.sh's decisions for @steps when the optional steps start with @left seconds,
    each step using @used_percent of its slot (a sanitizer tool: all of it): [(step, mode,
    seconds, note)]."""
    script = f"""
source "{PLAN}"
min() {{ (($1 < $2)) && echo "$1" || echo "$2"; }}
budget={budget}; quick={quick}; left={left}
plan_set_steps {' '.join(steps)}
plan_optional "$left" > /dev/null
for step in "${{plan_order[@]}}"; do
  plan_slot "$step" "$left"
  printf '%s\t%s\t%s\t%s\n' "$step" "$slot_mode" "$slot_seconds" "$slot_note"
  used=$((slot_seconds * {used_percent} / 100)); [[ $step == sanitizer-* ]] && used=$slot_seconds
  left=$((left - used))
done
"""
    done = run(["bash", "-c", script])
    if done.returncode != 0:
        raise AssertionError(done.stderr)
    return [tuple(line.split("\t")) for line in done.stdout.splitlines()]


class GpuCheckPlanTests(unittest.TestCase):
    """scripts/lib/gpu-check-plan.sh: how the benchmarks and the sanitizer share what is left of
    the budget after the tests (the arithmetic at the top of that file)."""

    def modes(self, *args, **kwargs):
        return {step: (mode, int(seconds)) for step, mode, seconds, _ in simulate_plan(*args, **kwargs)}

    def test_the_default_run_on_an_h200_runs_every_benchmark(self):
        # The estimate: the tests end at about 140 s of the 400 s budget; the quick runs take
        # about half their slots. Every benchmark runs, none is starved; the newest get the spare
        # time for full runs before gemm and conv; the sanitizer has the rest.
        modes = self.modes(260, 50)
        self.assertEqual([modes[step] for step in OPTIONAL],
                         [("quick", 30), ("quick", 45), ("quick", 45), ("quick", 45), ("quick", 30), ("quick", 20),
                          ("quick", 20), ("full", 104), ("full", 20), ("full", 20)])
        # Even when every quick run takes its whole slot, each benchmark still gets its slot.
        modes = self.modes(260, 100)
        self.assertEqual([modes[step] for step in OPTIONAL[:7]],
                         [("quick", 30), ("quick", 45), ("quick", 45), ("quick", 45), ("quick", 30), ("quick", 20),
                          ("quick", 20)])
        self.assertEqual(sum(modes[step][1] for step in OPTIONAL[:7]), 235)

    def test_plenty_of_time_runs_the_newest_in_full_first(self):
        modes = self.modes(400, 60)
        self.assertEqual([modes[step][0] for step in OPTIONAL[:7]],
                         ["quick", "quick", "full", "full", "full", "quick", "quick"])
        self.assertEqual([modes[step] for step in OPTIONAL[7:]], [("full", 141), ("full", 20), ("full", 20)])
        everything = self.modes(1000, 100)
        self.assertEqual({mode for mode, _ in everything.values()}, {"full"})
        self.assertEqual({mode for mode, _ in self.modes(1000, 100, quick=1).values() if mode != "full"}, {"quick"})
        self.assertEqual([everything[step][1] for step in OPTIONAL], [90, 90, 100, 90, 60, 45, 45, 150, 90, 90])

    def test_a_short_run_keeps_the_first_steps_slots_and_says_why_the_rest_did_not_run(self):
        # Pessimistic: the tests end at 260 s, 140 s are left: gemm, conv and train are
        # guaranteed; the others run as the time the first ones leave allows.
        decided = simulate_plan(140, 60)
        modes = {step: (mode, int(seconds)) for step, mode, seconds, _ in decided}
        self.assertEqual([modes[step][0] for step in OPTIONAL[:6]], ["quick"] * 6)
        skipped = [(step, note) for step, mode, _, note in decided if mode == "skip"]
        self.assertEqual([step for step, _ in skipped], OPTIONAL[6:])
        self.assertEqual(skipped[0][1], "not run: 11s of the 400s time budget left, 0s kept for the steps after it, "
                                        "and it needs 20s")
        # Nothing guaranteed is given up for a later step, however long the early ones take.
        self.assertEqual([mode for _, mode, _, _ in simulate_plan(140, 100)][:3], ["quick"] * 3)

    def test_a_full_run_never_takes_a_later_steps_quick_slot(self):
        decided = simulate_plan(260, 100)
        quick_note = dict((step, note) for step, _, _, note in decided)["bench-gemm"]
        self.assertEqual(quick_note, "--quick in its 30s slot: 260s left, and a full run (90s) would cut into the "
                                     "570s kept for the steps after it")
        # memcheck takes what is left after the later tools' quick slots; when that is too little,
        # memcheck goes first.
        modes = self.modes(85, 100, steps=OPTIONAL[7:])
        self.assertEqual([modes[step] for step in OPTIONAL[7:]], [("full", 45), ("full", 20), ("full", 20)])
        modes = self.modes(60, 100, steps=OPTIONAL[7:])
        self.assertEqual([modes[step][0] for step in OPTIONAL[7:]], ["full", "skip", "skip"])
        self.assertEqual(modes["sanitizer-memcheck"], ("full", 60))

    def test_the_hard_end_fits_the_lending_call(self):
        """The default budget leaves the benchmarks' quick slots 165 s after the tests, and the hard
        end (budget + 120 s) is inside the 540 s a lending call gives gpu-check."""
        plan = run([GPU_CHECK, "--dry-run", "--quick"], env={"PATH": f"{fake_gpu_tools(Path(tempfile.mkdtemp()))}:"
                                                                     f"{os.environ['PATH']}"})
        self.assertEqual(plan.returncode, 0, plan.stderr)
        hard_end = int(re.search(r"hard end ([0-9]+)s", plan.stdout).group(1))
        self.assertLessEqual(hard_end, 540 - 20)
        self.assertIn("the benchmarks' quick slots (235s) are all kept when the tests end by 165s", plan.stdout)
        self.assertIn("slots quick/full in s: gemm 30/90 conv 45/90 train 45/100 infer 45/90 allreduce 30/60 "
                      "alloc 20/45 overhead 20/45 memcheck 45/150 racecheck 20/90 initcheck 20/90", plan.stdout)
        # The call prepare-gpu-run prints and the rehearsal's limit are that 540 s.
        prepared = run([SOURCE / "scripts" / "prepare-gpu-run", "--check-only"])
        self.assertIn('run(command="scripts/gpu-check --limit 540", carry=[".deps"], timeout_s=540)', prepared.stdout,
                      prepared.stdout + prepared.stderr)
        self.assertIn("\nlimit=540\n", (SOURCE / "scripts" / "rehearse-gpu-run").read_text())
        usage = run([GPU_CHECK, "--help"]).stdout
        self.assertIn("(default 400: the limit less 140 s)", usage)
        self.assertIn("--limit SECONDS   the time its caller really gives it (default 540", usage)
        self.assertIn("gemm 30/90 s, conv 45/90, train 45/100, infer 45/90, allreduce 30/60", usage)


class GpuCheckOutputTests(unittest.TestCase):
    """What gpu-check leaves in its output folder fits what a lending tool brings back: at most 8
    plain files, no folders, plain names, each under 16 MiB; everything else in one archive."""

    def setUp(self):
        self.dir = Path(tempfile.mkdtemp(prefix="cudagap-gpu-check-out-"))

    def tearDown(self):
        shutil.rmtree(self.dir)

    @unittest.skipIf(BUILD is None, "CUDAGAP_BUILD_DIR is not set")
    def test_the_output_layout_of_a_no_gpu_run(self):
        out = self.dir / "out"
        out.mkdir()
        (out / "summary.md").write_text("from an earlier run")
        (out / "mine.txt").write_text("not gpu-check's: left alone")
        for _ in range(2):  # a second run into the same folder replaces the first one's files
            result = run([GPU_CHECK, "--no-gpu", "--no-build", "--build-dir", BUILD, "--skip-tests",
                          "--only", "tests,bench-alloc", "--out", out])
            self.assertEqual(result.returncode, 3, result.stdout + result.stderr)
        (out / "mine.txt").unlink()
        checked = run([sys.executable, TOOLS, "check-out", out, "--gpu-check"])
        self.assertEqual(checked.returncode, 0, checked.stderr)
        names = sorted(p.name for p in out.iterdir())
        self.assertEqual(names, ["gpu-check-files.tar.gz", "results.json", "results.md",
                                 "summary.json", "summary.md"])
        members = archive_members(out)
        for name in ("logs/preflight.log", "logs/environment.log", "logs/bench-alloc.log",
                     "logs/results.log", "bench/alloc.json"):
            self.assertIn(f"gpu-check-files/{name}", members)
        summary = (out / "summary.md").read_text()
        self.assertIn("`tar -xzf gpu-check-files.tar.gz`", summary)
        self.assertIn("--only tests,bench-alloc", summary)
        self.assertNotIn("from an earlier run", summary)


class CtestRegistrationTests(unittest.TestCase):
    """How the tests are registered for a GPU host: a [gpu][serial] test (it reads the device's
    free memory, which other processes change) runs alone; the README's example runs with the
    examples; the copied example's configure is told where this build found its packages; the
    rehearsal runs alone with its time limit."""

    @classmethod
    def setUpClass(cls):
        if BUILD is None:
            raise unittest.SkipTest("CUDAGAP_BUILD_DIR is not set")
        shown = run(["ctest", "--test-dir", BUILD, "--show-only=json-v1"])
        if shown.returncode != 0:
            raise AssertionError(shown.stderr)
        cls.tests = {t["name"]: t for t in json.loads(shown.stdout)["tests"]}

    def properties(self, name):
        self.assertIn(name, self.tests)
        return {p["name"]: p["value"] for p in self.tests[name].get("properties", [])}

    def test_serial_gpu_tests_run_alone_and_no_other(self):
        suites = ("core", "tools")
        serial = set()
        for suite in suites:
            binary = BUILD / "tests" / suite / f"cudagap_{suite}_tests"
            serial |= {f"{suite}/{name}" for name in list_tests(binary, "[gpu][serial]")}
        self.assertIn("tools/monitoring sees a buffer in all three views, and clearing returns the cache", serial)
        for name in serial:
            properties = self.properties(name)
            self.assertTrue(properties.get("RUN_SERIAL"), name)
            self.assertEqual(properties.get("LABELS"), ["gpu"])
        # [multi-gpu] cases (two devices, peer copies) run alone too, under their own label.
        multi_gpu = {f"core/{name}" for name in list_tests(BUILD / "tests" / "core" / "cudagap_core_tests",
                                                          "[multi-gpu]")}
        self.assertIn("core/peer access between two devices is idempotent and keeps the caller's device", multi_gpu)
        for name in multi_gpu:
            properties = self.properties(name)
            self.assertTrue(properties.get("RUN_SERIAL"), name)
            self.assertEqual(properties.get("LABELS"), ["multi-gpu"])
        running_alone = {n for n, t in self.tests.items() if self.properties(n).get("RUN_SERIAL")}
        self.assertEqual({n for n in running_alone if n.startswith(tuple(f"{s}/" for s in suites))},
                         serial | multi_gpu)

    def test_what_the_gpu_host_runs(self):
        readme = self.properties("readme: the short example builds and runs")
        self.assertIn("examples", readme["LABELS"])
        copied = [t for n, t in self.tests.items() if n.startswith("example: a copy of")]
        self.assertEqual(len(copied), 1)
        command = " ".join(copied[0]["command"])
        self.assertIn("-Dnlohmann_json_DIR=", command)
        self.assertIn("EXTRA_PREFIX_PATH=", command)
        rehearsal = self.properties("gpu-check rehearsal: a lent GPU host's run, on this machine")
        self.assertTrue(rehearsal["RUN_SERIAL"])
        self.assertEqual(rehearsal["TIMEOUT"], 600)
        self.assertEqual(rehearsal["LABELS"], ["host"])


class GpuCheckToolsTests(unittest.TestCase):
    """scripts/lib/gpu_check_tools.py: the archive, the layout check, the size of what travels."""

    def setUp(self):
        self.dir = Path(tempfile.mkdtemp(prefix="cudagap-gpu-check-tools-"))

    def tearDown(self):
        shutil.rmtree(self.dir)

    def tools(self, *args):
        return run([sys.executable, TOOLS, *args])

    def test_unpack_data_gives_the_raw_files_once(self):
        stand_in = self.dir / "stand-in"
        made = self.tools("stand-in-data", stand_in, "--train", "30", "--test", "20")
        self.assertEqual(made.returncode, 0, made.stderr)
        self.assertEqual(sorted(p.name for p in stand_in.iterdir()),
                         sorted(f"{stem}.gz" for stem in ("train-images-idx3-ubyte", "train-labels-idx1-ubyte",
                                                          "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte")))
        raw = self.dir / "raw"
        first = self.tools("unpack-data", stand_in, raw)
        self.assertEqual(first.returncode, 0, first.stderr)
        images = (raw / "train-images-idx3-ubyte").read_bytes()
        self.assertEqual(images[:8], bytes([0, 0, 8, 3, 0, 0, 0, 30]))
        self.assertEqual(len(images), 16 + 30 * 28 * 28)
        self.assertEqual(len((raw / "t10k-labels-idx1-ubyte").read_bytes()), 8 + 20)
        self.assertEqual(self.tools("unpack-data", stand_in, raw).stdout.count(": kept"), 4)
        missing = self.tools("unpack-data", self.dir / "nothing", self.dir / "out")
        self.assertEqual(missing.returncode, 1)
        self.assertIn("is missing", missing.stderr)

    @unittest.skipIf(BUILD is None, "CUDAGAP_BUILD_DIR is not set")
    def test_the_loader_step_names_a_shadowing_copy(self):
        """gpu_check_probe.py loader: every program loads the copies the build linked; a folder
        on LD_LIBRARY_PATH with another libcudart is named, unless the build's folders come first."""
        probe = SOURCE / "scripts" / "lib" / "gpu_check_probe.py"
        loader = [sys.executable, probe, "loader", BUILD]
        clean = run(loader, env={"LD_LIBRARY_PATH": ""})
        self.assertEqual(clean.returncode, 0, clean.stdout + clean.stderr)
        self.assertRegex(clean.stdout, r"libcudart\.so\.[0-9]+ => /")
        folders = run([sys.executable, probe, "folders", BUILD]).stdout.strip()
        cudart = next(Path(folder) / name for folder in folders.split(":") for name in os.listdir(folder)
                      if re.fullmatch(r"libcudart\.so\.[0-9]+", name))
        shadow = self.dir / "shadow"
        shadow.mkdir()
        shutil.copy(cudart, shadow)
        shadowed = run(loader, env={"LD_LIBRARY_PATH": str(shadow)})
        self.assertEqual(shadowed.returncode, 1, shadowed.stdout)
        self.assertIn(f"{cudart.name} => {shadow / cudart.name} (", shadowed.stdout)
        self.assertIn("NOT the copy the build linked", shadowed.stdout)
        first = run(loader, env={"LD_LIBRARY_PATH": f"{folders}:{shadow}"})
        self.assertEqual(first.returncode, 0, first.stdout)

    def test_pack_cuts_huge_files_and_says_so(self):
        work = self.dir / "gpu-check-files"
        (work / "logs").mkdir(parents=True)
        (work / "logs" / "small.log").write_text("small\n")
        (work / "logs" / "huge.log").write_bytes(b"BEGIN" + os.urandom(300_000) + b"THE END")
        archive = self.dir / "gpu-check-files.tar.gz"
        result = self.tools("pack", work, archive, "--max-file-bytes", "100000")
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("cut logs/huge.log to about 100000 bytes", result.stdout)
        self.assertEqual(sorted(p.name for p in self.dir.iterdir()), ["gpu-check-files", "gpu-check-files.tar.gz"])
        with tarfile.open(archive) as packed:
            self.assertEqual(packed.extractfile("gpu-check-files/logs/small.log").read(), b"small\n")
            huge = packed.extractfile("gpu-check-files/logs/huge.log").read()
        self.assertLess(len(huge), 101_000)
        self.assertTrue(huge.startswith(b"BEGIN") and huge.endswith(b"THE END"))
        self.assertIn(b"gpu-check cut", huge)
        # An archive that stays too big is packed again with a smaller cut.
        result = self.tools("pack", work, archive, "--max-file-bytes", "250000", "--max-archive-bytes", "150000")
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertLessEqual(archive.stat().st_size, 150_000)
        self.assertIn("cut logs/huge.log to about 62500 bytes", result.stdout)

    def test_check_out_names_each_broken_rule(self):
        out = self.dir / "out"
        (out / "a" / "b" / "c").mkdir(parents=True)
        for i in range(8):
            (out / f"f{i}.txt").write_text("x")
        (out / "bad name!.txt").write_text("x")
        (out / "a" / "b" / "c" / "deep.txt").write_text("x")
        (out / "link").symlink_to(out / "f0.txt")
        with open(out / "big.bin", "wb") as big:
            big.truncate(17 << 20)
        result = self.tools("check-out", out)
        self.assertEqual(result.returncode, 1)
        for expected in ("11 files, more than 8", "bad name!.txt has a name outside",
                         "a/b/c is a folder deeper than 2 levels", "a/b/c/deep.txt is deeper than 2 folders",
                         "link is a symbolic link", "big.bin is 17.0 MiB, over 16 MiB"):
            self.assertIn(expected, result.stderr)
        flat = self.dir / "flat"
        (flat / "sub").mkdir(parents=True)
        (flat / "sub" / "x.txt").write_text("x")
        self.assertEqual(self.tools("check-out", flat).returncode, 0)
        nested = self.tools("check-out", flat, "--max-depth", "0")
        self.assertEqual(nested.returncode, 1)
        self.assertIn("sub is a folder deeper than 0 levels", nested.stderr)

    def test_size_counts_the_tree_and_the_carried_folders(self):
        tree = self.dir / "tree"
        tree.mkdir()
        self.assertEqual(run(["git", "init", "-q", tree]).returncode, 0)
        (tree / ".gitignore").write_text("/.deps/\n/build/\n")
        (tree / "tracked.txt").write_bytes(b"x" * (1 << 20))
        (tree / "build").mkdir()
        (tree / "build" / "ignored.bin").write_bytes(b"x" * (2 << 20))
        (tree / ".deps").mkdir()
        with open(tree / ".deps" / "big.so", "wb") as big:
            big.truncate(70 << 20)
        fits = self.tools("size", tree)
        self.assertEqual(fits.returncode, 0, fits.stderr)
        self.assertIn("tree           1.0 MiB  (2 files", fits.stdout)
        over = self.tools("size", tree, "--carry", ".deps")
        self.assertEqual(over.returncode, 1)
        self.assertIn("carry         70.0 MiB  (.deps)", over.stdout)
        self.assertIn("OVER THE LIMIT", over.stdout)
        self.assertEqual(self.tools("size", self.dir).returncode, 2)  # not a git checkout


if __name__ == "__main__":
    unittest.main()
