#!/usr/bin/env python3
"""The ctest fixture of the ONNX proofs (onnxruntime_tests.cmake): finds or makes a Python that
imports onnxruntime, numpy and onnx (the Python twin of cudagap-infer's exporter,
bench/infer/onnx_twin.py, builds its model with onnx), and records it for test_onnx_export.py.

  onnxruntime_env.py --venv DIR --wheels DIR --record FILE [--python CANDIDATE...]

In order: a CANDIDATE that already imports all three (a GPU host's PyTorch environment has them
and no network); the virtual environment DIR made by an earlier run; else DIR made afresh
(`python3 -m venv`, Debian's package python3-venv) with the three installed by pip
from the wheels in the folder WHEELS, which pip fills from PyPI the first time (both folders are
in the build tree, so a second run needs no network). RECORD gets {"python": PATH} or
{"python": null, "reason": WHY}.

Exit code: 0 a Python is recorded; 77 none could be had (no python3-venv, no network to PyPI:
the reason is printed and recorded, and the tests that need it are reported as Skipped).
"""

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

SKIP = 77
PACKAGES = ["onnxruntime", "numpy", "onnx"]
PROBE = "import numpy, onnx, onnxruntime; print(onnxruntime.__version__, numpy.__version__, onnx.__version__)"


def versions(python):
    """'onnxruntime X, numpy Y, onnx Z' when @python imports the three, else None."""
    try:
        done = subprocess.run([python, "-c", PROBE], capture_output=True, text=True, timeout=120, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    last = (done.stdout.strip().splitlines() or [""])[-1].split()  # a package may print on import
    if done.returncode != 0 or len(last) != 3:
        return None
    return f"onnxruntime {last[0]}, numpy {last[1]}, onnx {last[2]}"


def record(path, python, reason=""):
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(path.name + ".partial")
    temporary.write_text(json.dumps({"python": python, "reason": reason}) + "\n", encoding="utf-8")
    temporary.replace(path)


def last_line(done):
    lines = (done.stderr.strip() or done.stdout.strip()).splitlines()
    return lines[-1][:300] if lines else f"exit code {done.returncode}"


def pip(python, *args, timeout=600):
    env = dict(os.environ, PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_NO_INPUT="1")
    env.pop("PIP_REQUIRE_VIRTUALENV", None)
    try:
        return subprocess.run([python, "-m", "pip", *args], capture_output=True, text=True, timeout=timeout,
                              env=env, check=False)
    except subprocess.TimeoutExpired:
        return subprocess.CompletedProcess(args, 124, "", f"pip {args[0]} took more than {timeout} s")


def make_venv(venv, wheels):
    """The Python of a fresh @venv with the packages installed, or (None, why)."""
    done = subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], capture_output=True, text=True,
                          timeout=300, check=False)
    python = venv / "bin" / "python"
    if done.returncode != 0 or not python.exists():
        return None, (f"{sys.executable} -m venv failed ({last_line(done)}); on Debian or Ubuntu: "
                      "apt-get install python3-venv")
    wheels.mkdir(parents=True, exist_ok=True)
    offline = ["install", "--no-index", "--find-links", str(wheels), *PACKAGES]
    if any(wheels.glob("*.whl")) and pip(python, *offline).returncode == 0:
        return python, ""
    print(f"onnxruntime_env: downloading {', '.join(PACKAGES)} wheels into {wheels}")
    done = pip(python, "download", "--dest", str(wheels), "--only-binary=:all:", "--timeout", "20",
               "--retries", "1", *PACKAGES)
    if done.returncode != 0:
        return None, f"pip could not download {', '.join(PACKAGES)} from PyPI (no network?): {last_line(done)}"
    done = pip(python, *offline)
    if done.returncode != 0:
        return None, f"pip could not install the downloaded wheels: {last_line(done)}"
    return python, ""


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--venv", required=True, type=Path)
    parser.add_argument("--wheels", required=True, type=Path)
    parser.add_argument("--record", required=True)
    parser.add_argument("--python", nargs="*", default=[], help="interpreters to try first")
    args = parser.parse_args(argv)
    venv_python = args.venv / "bin" / "python"
    for python in [*args.python, str(venv_python)]:
        found = python and os.path.exists(python) and versions(python)
        if found:
            print(f"onnxruntime_env: {python} has {found}")
            record(args.record, python)
            return 0
    python, reason = make_venv(args.venv, args.wheels)
    found = python and versions(str(python))
    if python and not found:
        reason = f"{python} still cannot import {', '.join(PACKAGES)} after pip installed them"
    if not found:
        print(f"onnxruntime_env: SKIPPED: {reason}")
        record(args.record, None, reason)
        return SKIP
    print(f"onnxruntime_env: made {args.venv} with {found}")
    record(args.record, str(python))
    return 0


if __name__ == "__main__":
    sys.exit(main())
