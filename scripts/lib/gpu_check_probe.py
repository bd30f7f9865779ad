"""scripts/gpu-check's probe of the host, the Python part: where the CUDA libraries that cudagap
links are (the toolkit, NVIDIA's Python wheels, the system, LD_LIBRARY_PATH), and the versions
of the Python packages the benchmarks compare against. It imports nothing heavy: package
versions come from their metadata, folders from a listing, so that it ends in well under a
second even on a cold disk.

usage: gpu_check_probe.py host [--toolkit DIR]    where the libraries are, the Python packages
                                                 (Markdown list items, one a line)
       gpu_check_probe.py folders BUILD          the folders of the copies the build linked
       gpu_check_probe.py loader BUILD           which copy of each CUDA library the build's
                                                 programs load now (ldd), against the copy the
                                                 build was configured with; exit 1 when one
                                                 loads another copy
"""

import argparse
import glob
import os
import platform
import re
import subprocess
import sys
from importlib import metadata

# name shown, header, library stem, the wheel folders below <site-packages>/nvidia/ (CUDA 13's
# shared one first, then CUDA 12's own).
LIBRARIES = (
    ("CUDA runtime", "cuda_runtime.h", "libcudart", ("cu13", "cuda_runtime")),
    ("cuBLAS", "cublas_v2.h", "libcublas", ("cu13", "cublas")),
    ("cuBLASLt", "cublasLt.h", "libcublasLt", ("cu13", "cublas")),
    ("cuRAND", "curand.h", "libcurand", ("cu13", "curand")),
    ("cuDNN", "cudnn.h", "libcudnn", ("cudnn",)),
    ("NCCL", "nccl.h", "libnccl", ("nccl",)),
    ("zlib", "zlib.h", "libz", ()),
)
SYSTEM_INCLUDES = ("/usr/include", "/usr/local/include", "/usr/include/x86_64-linux-gnu")
SYSTEM_LIBRARIES = ("/usr/lib/x86_64-linux-gnu", "/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/lib",
                    "/usr/local/lib")
PACKAGES = ("torch", "onnxruntime", "onnxruntime-gpu", "numpy", "onnx", "matplotlib")


def wheel_roots():
    """The <site-packages>/nvidia folders of this python3, in sys.path order."""
    roots = []
    for entry in sys.path:
        folder = os.path.join(os.path.abspath(entry), "nvidia") if entry else ""
        if folder and os.path.isdir(folder) and folder not in roots:
            roots.append(folder)
    return roots


def places(toolkit, subfolders):
    """(label, include folders, library folders) where a library may be, in the loader's spirit:
    LD_LIBRARY_PATH first, then the toolkit, the wheels and the system."""
    found = []
    loader = [p for p in os.environ.get("LD_LIBRARY_PATH", "").split(":") if p]
    if loader:
        found.append(("LD_LIBRARY_PATH", [], loader))
    if toolkit:
        found.append(("toolkit", [os.path.join(toolkit, "include")] + glob.glob(os.path.join(toolkit, "targets/*/include")),
                      [os.path.join(toolkit, d) for d in ("lib64", "lib")] + glob.glob(os.path.join(toolkit, "targets/*/lib"))))
    for root in wheel_roots():
        for sub in subfolders:
            base = os.path.join(root, sub)
            if os.path.isdir(base):
                found.append(("wheel", [os.path.join(base, "include")], [os.path.join(base, "lib")]))
    found.append(("system", list(SYSTEM_INCLUDES), list(SYSTEM_LIBRARIES)))
    return found


def library_files(folder, stem):
    """The SONAME-like names of <stem> in @folder (lib.so.13, not lib.so.13.1.0.3), else lib.so."""
    try:
        names = os.listdir(folder)
    except OSError:
        return []
    exact = sorted(n for n in names if re.fullmatch(re.escape(stem) + r"\.so\.[0-9]+", n))
    return exact or sorted(n for n in names if n == stem + ".so")


def describe(name, header, stem, subfolders, toolkit):
    """One line: where @name's header and libraries are, each labelled with its place (a file
    reached through links is shown once, by its first name)."""
    headers, libraries, seen = [], [], set()

    def add(found, label, path):  # the first name of each real file (links are not copies)
        real = os.path.realpath(path)
        if real not in seen:
            seen.add(real)
            found.append((label, path))

    for label, includes, folders in places(toolkit, subfolders):
        for folder in includes:
            if os.path.isfile(os.path.join(folder, header)):
                add(headers, label, os.path.join(folder, header))
        for folder in folders:
            for file in library_files(folder, stem):
                add(libraries, label, os.path.join(folder, file))
    shown_headers = ", ".join(f"{label} {path}" for label, path in headers) or "NONE"
    shown_libraries = ", ".join(f"{label} {path}" for label, path in libraries) or "NONE"
    return f"- {name}: header {shown_headers}; library {shown_libraries}"


def package_versions():
    parts = []
    for name in PACKAGES:
        try:
            parts.append(f"{name} {metadata.version(name)}")
        except metadata.PackageNotFoundError:
            if not name.endswith("-gpu"):
                parts.append(f"{name} not installed")
    return ", ".join(parts)


def command_host(args):
    for name, header, stem, subfolders in LIBRARIES:
        print(describe(name, header, stem, subfolders, args.toolkit))
    print(f"- NVIDIA wheel folders: {', '.join(wheel_roots()) or 'none'}")
    print(f"- python3 {platform.python_version()} ({sys.executable}): {package_versions()}")
    return 0


def cache_entries(build):
    entries = {}
    with open(os.path.join(build, "CMakeCache.txt"), encoding="utf-8", errors="replace") as cache:
        for line in cache:
            match = re.match(r"^([A-Za-z0-9_.-]+):[A-Z]+=(.*)$", line.rstrip("\n"))
            if match:
                entries[match.group(1)] = match.group(2)
    return entries


def configured_copies(build):
    """{library stem: the folder of the file the build linked}: FindCUDAToolkit's (the toolkit),
    else the wheel's (CudagapCudaLibraries.cmake), and cuDNN's and NCCL's own."""
    cache = cache_entries(build)
    copies = {}
    for stem, variables in (("libcudart", ("CUDA_cudart_LIBRARY",)),
                            ("libcublas", ("CUDAGAP_WHEEL_CUBLAS_LIBRARY", "CUDA_cublas_LIBRARY")),
                            ("libcublasLt", ("CUDAGAP_WHEEL_CUBLASLT_LIBRARY", "CUDA_cublasLt_LIBRARY")),
                            ("libcurand", ("CUDAGAP_WHEEL_CURAND_LIBRARY", "CUDA_curand_LIBRARY")),
                            ("libcudnn", ("CUDNN_LIBRARY",)), ("libnccl", ("NCCL_LIBRARY",))):
        for variable in variables:
            value = cache.get(variable, "")
            if value and not value.endswith("NOTFOUND"):
                copies[stem] = os.path.dirname(value)
                break
    return copies


def programs_of(build):
    """The build's programs: cudagap-* (examples, benchmarks) and the test suites."""
    found = []
    for pattern in ("examples/*/cudagap-*", "bench/*/cudagap-bench-*", "tests/*/cudagap_*_tests"):
        found += [p for p in sorted(glob.glob(os.path.join(build, pattern)))
                  if os.path.isfile(p) and os.access(p, os.X_OK) and not p.endswith((".py", ".sh"))]
    return found


def resolved(program):
    """{soname: the file ldd resolves it to} for the CUDA libraries @program loads."""
    done = subprocess.run(["ldd", program], capture_output=True, text=True, timeout=20, check=False)
    found = {}
    for line in done.stdout.splitlines():
        match = re.match(r"^\s*(lib(?:cudart|cublasLt|cublas|curand|cudnn|nccl)\.so\.[0-9]+) => (\S+)", line)
        if match:
            found[match.group(1)] = match.group(2)
    return found


def command_loader(args):
    copies = configured_copies(args.build)
    programs = programs_of(args.build)
    seen, wrong = {}, []
    for program in programs:
        for soname, path in resolved(program).items():
            stem = soname.split(".so")[0]
            folder = copies.get(stem)
            expected = os.path.join(folder, soname) if folder else ""
            ok = path != "not" and (not expected or os.path.realpath(path) == os.path.realpath(expected))
            seen.setdefault((soname, path, ok), []).append(os.path.basename(program))
            if not ok:
                wrong.append(f"{os.path.basename(program)} loads {soname} from {path}, not {expected}")
    for (soname, path, ok), names in sorted(seen.items()):
        print(f"{soname} => {path} ({len(names)} programs{'' if ok else ', NOT the copy the build linked'})")
    print(f"LD_LIBRARY_PATH: {os.environ.get('LD_LIBRARY_PATH', '')}")
    for line in wrong:
        print(f"wrong: {line}")
    brief = sorted({f"{soname} from {os.path.dirname(path)}" for soname, path, _ in seen})
    print(f"summary: {len(programs)} programs; " + "; ".join(brief))
    return 1 if wrong else 0


def command_folders(args):
    """The folders of the copies the build linked, joined by ':' (LD_LIBRARY_PATH's order)."""
    folders = []
    for folder in configured_copies(args.build).values():
        if folder not in folders:
            folders.append(folder)
    print(":".join(folders))
    return 0


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    host = sub.add_parser("host", help="where the libraries are, the Python packages")
    host.add_argument("--toolkit", default="")
    loader = sub.add_parser("loader", help="which copies the build's programs load")
    loader.add_argument("build")
    folders = sub.add_parser("folders", help="the folders of the copies the build linked")
    folders.add_argument("build")
    args = parser.parse_args(argv)
    return {"host": command_host, "loader": command_loader, "folders": command_folders}[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
