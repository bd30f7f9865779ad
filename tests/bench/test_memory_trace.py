"""Tests of bench/plot_memory_trace.py, the stacked-area picture of a memory trace.

ctest runs one class per test (tests/bench/CMakeLists.txt). MemoryTracePictureTests draws the
trace that the ledger's demo (tests/core/memory_ledger_demo.cpp) wrote on this host, named by
CUDAGAP_MEMORY_TRACE, into CUDAGAP_MEMORY_PNG; without matplotlib it is skipped, with the reason,
and ctest reports it Skipped. MemoryTraceScriptTests checks the script's reading and its errors,
which need no matplotlib.
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

SOURCE = Path(os.environ.get("CUDAGAP_SOURCE_DIR", Path(__file__).resolve().parents[2]))
PLOT = SOURCE / "bench" / "plot_memory_trace.py"
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"

sys.path.insert(0, str(SOURCE / "bench"))
import plot_memory_trace  # noqa: E402


def run(command):
    return subprocess.run([str(c) for c in command], capture_output=True, text=True, timeout=300,
                          check=False)


def has_matplotlib():
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


def trace(*events):
    """A trace as gpu::memory_trace writes one (test data): device 0 is process 2."""
    meta = {"name": "process_name", "ph": "M", "pid": 2, "tid": 0,
            "args": {"name": "device 0 memory"}}
    return {"traceEvents": [*events, meta], "displayTimeUnit": "ms",
            "otherData": {"writer": "cudagap memory trace"}}


def counter(tag, ts_us, bytes_held, pid=2):
    return {"name": tag, "cat": "memory", "ph": "C", "ts": ts_us, "pid": pid,
            "args": {"bytes": bytes_held}}


class MemoryTraceScriptTests(unittest.TestCase):
    """Reading the counters, stacking them, and the exit codes that need no matplotlib."""

    def setUp(self):
        self.dir = Path(tempfile.mkdtemp(prefix="cudagap-memplot-"))

    def tearDown(self):
        shutil.rmtree(self.dir)

    def test_levels_are_steps_and_what_stays_is_at_the_bottom(self):
        document = trace(counter("scratch", 1000, 10), counter("activations", 2000, 300),
                         counter("scratch", 3000, 0), counter("activations", 4000, 100),
                         counter("parameters", 1500, 50),
                         {"name": "allocate scratch", "ph": "i", "ts": 1000, "pid": 2})
        tracks = plot_memory_trace.tracks_in(document)
        self.assertEqual(list(tracks), [2])
        name, tags = tracks[2]
        self.assertEqual(name, "device 0 memory")
        times, series = plot_memory_trace.stacked(tags)
        self.assertEqual(times, [1.0, 1.5, 2.0, 3.0, 4.0])
        # Activations never drop to 0 once made (lowest 100), parameters stay at 50, scratch
        # comes and goes.
        self.assertEqual(series[0], ("activations", [0, 0, 300, 300, 100]))
        self.assertEqual(series[1], ("parameters", [0, 50, 50, 50, 50]))
        self.assertEqual(series[2], ("scratch", [10, 10, 10, 0, 0]))

    def test_a_trace_without_counters_is_exit_4(self):
        source = self.dir / "empty.json"
        source.write_text(json.dumps(trace()))
        result = run([sys.executable, PLOT, source, "--out", self.dir / "x.png"])
        self.assertEqual(result.returncode, 4, result.stderr)
        self.assertIn("holds no memory counter", result.stderr)
        self.assertFalse((self.dir / "x.png").exists())

    def test_a_file_that_is_not_a_trace_is_exit_1(self):
        source = self.dir / "report.json"
        source.write_text(json.dumps({"benchmark": "alloc"}))
        result = run([sys.executable, PLOT, source, "--out", self.dir / "x.png"])
        self.assertEqual(result.returncode, 1)
        self.assertIn("no traceEvents array", result.stderr)
        result = run([sys.executable, PLOT, self.dir / "missing.json", "--out", self.dir / "x.png"])
        self.assertEqual(result.returncode, 1)

    def test_without_matplotlib_it_says_how_to_get_it(self):
        if has_matplotlib():
            self.skipTest("matplotlib is importable here: the picture tests cover this host")
        source = self.dir / "t.json"
        source.write_text(json.dumps(trace(counter("user", 0, 1))))
        result = run([sys.executable, PLOT, source, "--out", self.dir / "x.png"])
        self.assertEqual(result.returncode, 3)
        self.assertIn("pip install matplotlib", result.stderr)


class MemoryTracePictureTests(unittest.TestCase):
    """The demo's trace drawn as a PNG (needs matplotlib)."""

    def test_the_demo_trace_becomes_a_picture(self):
        if not has_matplotlib():
            self.skipTest("matplotlib is not importable: pip install matplotlib to draw traces")
        source = Path(os.environ["CUDAGAP_MEMORY_TRACE"])
        out = Path(os.environ["CUDAGAP_MEMORY_PNG"])
        if out.exists():
            out.unlink()
        result = run([sys.executable, PLOT, source, "--out", out,
                      "--title", "cudagap memory ledger demo (host)"])
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(out.read_bytes()[:8], PNG_MAGIC)
        self.assertIn("1 device(s)", result.stdout)
        # The demo's tags are all drawn.
        _, tags = plot_memory_trace.tracks_in(json.loads(source.read_text()))[2]
        for tag in ("parameters", "activations", "cuDNN plan workspace", "communicator"):
            self.assertIn(tag, tags)
        leftovers = [p for p in out.parent.iterdir() if p.name.startswith(".plot-")]
        self.assertEqual(leftovers, [])


if __name__ == "__main__":
    unittest.main()
