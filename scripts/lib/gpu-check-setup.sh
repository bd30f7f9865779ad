# shellcheck shell=bash
# scripts/gpu-check's look at the host: the tools, the GPU, the dependency bundle in .deps/, and
# the preflight that stops a run in its first seconds when something it needs is missing.

# The CUDA toolkit: CUDAToolkit_ROOT when set (and then only it), else nvcc on PATH, else
# /usr/local/cuda. Sets nvcc, toolkit, sanitizer.
find_toolkit() {
  nvcc=""
  if [[ -n "${CUDAToolkit_ROOT:-}" ]]; then
    [[ -x "${CUDAToolkit_ROOT}/bin/nvcc" ]] && nvcc="${CUDAToolkit_ROOT}/bin/nvcc"
  elif command -v nvcc >/dev/null 2>&1; then
    nvcc="$(command -v nvcc)"
  elif [[ -x /usr/local/cuda/bin/nvcc ]]; then
    nvcc=/usr/local/cuda/bin/nvcc
  fi
  toolkit=""
  if [[ -n "${CUDAToolkit_ROOT:-}" && -n "$nvcc" ]]; then
    toolkit="$(cd "$CUDAToolkit_ROOT" && pwd)"
  elif [[ -n "$nvcc" ]]; then
    toolkit="$(toolkit_root_of_nvcc "$nvcc")"
  fi
  sanitizer=""
  if command -v compute-sanitizer >/dev/null 2>&1; then
    sanitizer="$(command -v compute-sanitizer)"
  elif [[ -n "$toolkit" && -x "$toolkit/bin/compute-sanitizer" ]]; then
    sanitizer="$toolkit/bin/compute-sanitizer"
  fi
}

# python3: $PYTHON when set; else the first python3 that can import torch (the PyTorch side of
# the benchmarks, and usually NVIDIA's cuDNN wheel with it), looking on PATH and in /opt's
# virtual environments; else the first python3 at all. Its folder goes first on PATH, so that
# CMake (FindPython3, FindCUDNN's wheel lookup) and the benchmarks use the same one.
# Whether <python> has torch, without importing it (an import takes seconds on a cold disk).
has_torch() { "$1" -c 'import importlib.util, sys; sys.exit(importlib.util.find_spec("torch") is None)' >/dev/null 2>&1; }

# Sets python and python_torch (1 when it has torch).
find_python() {
  local candidate first="" candidates=()
  python=""
  python_torch=0
  if [[ -n "${PYTHON:-}" ]]; then
    python="$(command -v "$PYTHON" || true)"
    [[ -n "$python" ]] && has_torch "$python" && python_torch=1
  else
    mapfile -t candidates < <(type -ap python3)
    candidates+=(/opt/*/.venv/bin/python3 /opt/*/venv/bin/python3)
    for candidate in "${candidates[@]}"; do
      [[ -x "$candidate" ]] || continue
      [[ -z "$first" ]] && first="$candidate"
      if has_torch "$candidate"; then python="$candidate"; python_torch=1; break; fi
    done
    [[ -n "$python" ]] || python="$first"
  fi
  [[ -n "$python" ]] && PATH="$(dirname "$python"):$PATH"
  return 0
}

# A usable GPU: nvidia-smi lists one (the tests then say whether CUDA can use it). Sets
# have_gpu, gpu_count, gpu_names, no_gpu_reason, archs, arch_note.
find_gpu() {
  gpu_count=0; gpu_names=""; no_gpu_reason=""
  if ((force_no_gpu)); then
    no_gpu_reason="--no-gpu was given"
  elif ! command -v nvidia-smi >/dev/null 2>&1; then
    no_gpu_reason="nvidia-smi is not installed (no NVIDIA driver)"
  else
    # (Under a timeout: a driver in a bad state can hang nvidia-smi, and the run with it.)
    gpu_names="$(timeout --kill-after=1 10 nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null || true)"
    gpu_count="$(printf '%s' "$gpu_names" | grep -c . || true)"
    ((gpu_count > 0)) || no_gpu_reason="nvidia-smi lists no GPU ($(timeout --kill-after=1 10 nvidia-smi -L 2>&1 | head -1))"
  fi
  have_gpu=0
  [[ -z "$no_gpu_reason" ]] && have_gpu=1
  # The architecture to build for: the local GPUs', else sm_90 (the H200 these runs are for).
  archs="${CMAKE_CUDA_ARCHITECTURES:-}"
  arch_note="from CMAKE_CUDA_ARCHITECTURES"
  if [[ -z "$archs" ]] && ((have_gpu)); then
    archs="$(timeout --kill-after=1 10 nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | tr -d ' .' |
      grep -E '^[0-9]+$' | sort -u | paste -sd';' - || true)"
    arch_note="the local GPU's"
  fi
  if [[ -z "$archs" ]]; then
    archs=90
    arch_note="could not tell the local GPU's, so sm_90"
  fi
}

# The offline bundle (scripts/prepare-gpu-run, scripts/bundle-deps) in .deps/: when it is there,
# CMake takes Catch2 and nlohmann-json from it even where they are installed (so that a rehearsal
# proves the bundle), and OpenBLAS when it loads here. Sets package_args and deps_note.
find_bundle() {
  local dir major
  package_args=()
  deps_note="none"
  openblas_loads=0
  [[ -d "$deps" ]] || return 0
  package_args+=("-DCMAKE_PREFIX_PATH=$deps")
  deps_note="$deps"
  dir="$(find "$deps" -name Catch2Config.cmake -print -quit 2>/dev/null)"
  if [[ -n "$dir" ]]; then
    dir="$(dirname "$dir")"
    package_args+=("-DCatch2_DIR=$dir")
    # The bundled version, even where the other one is installed (the tests take v3 first).
    major="$(sed -n 's/.*PACKAGE_VERSION "\([0-9]*\)\..*/\1/p' "$dir/Catch2ConfigVersion.cmake" 2>/dev/null | head -1)"
    [[ -n "$major" ]] && package_args+=("-DCUDAGAP_CATCH2_VERSION=$major")
  fi
  dir="$(find "$deps" -name nlohmann_jsonConfig.cmake -print -quit 2>/dev/null)"
  [[ -n "$dir" ]] && package_args+=("-Dnlohmann_json_DIR=$(dirname "$dir")")
  if [[ -f "$deps/lib/libopenblas.so.0" ]]; then
    # A bundled OpenBLAS needs its libgfortran at link and run time (RUNPATH is not transitive);
    # the symbolic link FindBLAS links against may not have survived the trip.
    [[ -e "$deps/lib/libopenblas.so" ]] || ln -sf libopenblas.so.0 "$deps/lib/libopenblas.so"
    export LD_LIBRARY_PATH="$deps/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    if [[ -n "$python" ]] && "$python" -c 'import ctypes, sys; ctypes.CDLL(sys.argv[1])' \
        "$deps/lib/libopenblas.so.0" >/dev/null 2>&1; then
      openblas_loads=1
      package_args+=("-DBLA_VENDOR=OpenBLAS")
    fi
  fi
  return 0
}

# The Fashion-MNIST files bench/train, bench/infer and the tests read: CUDAGAP_FASHION_MNIST_DIR
# when set, else the subset prepare-gpu-run carries in .deps/, else Debian's package. Sets
# data_source (empty when none has the training images).
find_data() {
  local dir
  data_source=""
  for dir in "${CUDAGAP_FASHION_MNIST_DIR:-}" "$deps/fashion-mnist-subset" /usr/share/datasets/fashion-mnist; do
    [[ -n "$dir" ]] || continue
    if [[ -f "$dir/train-images-idx3-ubyte.gz" || -f "$dir/train-images-idx3-ubyte" ]]; then
      data_source="$dir"; return 0
    fi
  done
  return 0
}

# Checks the tools a build needs; adds "what: fix" to missing, details to the preflight log.
check_tools() {
  local version cxx
  version="$(cmake --version 2>/dev/null | head -1 | grep -oE '[0-9]+\.[0-9]+(\.[0-9]+)?' || true)"
  echo "cmake: ${version:-not found}"
  if [[ -z "$version" ]]; then
    missing+=("cmake: install CMake 3.24 or newer (pip install cmake) and put it on PATH")
  elif [[ "$(printf '%s\n3.24\n' "$version" | sort -V | head -1)" != 3.24 ]]; then
    missing+=("cmake $version is too old: cudagap needs 3.24 or newer (pip install cmake)")
  fi
  echo "nvcc: ${nvcc:-not found}"
  if [[ -z "$nvcc" ]]; then
    missing+=("nvcc: ${CUDAToolkit_ROOT:+CUDAToolkit_ROOT=$CUDAToolkit_ROOT has no bin/nvcc; }install the CUDA Toolkit, put its bin/ on PATH or set CUDAToolkit_ROOT")
  fi
  if [[ -n "${CXX:-}" ]]; then
    cxx="$(command -v "$CXX" || true)"
    [[ -n "$cxx" ]] || missing+=("a C++ compiler: CXX=$CXX is not a program here: unset it or fix it")
  else
    cxx="$(command -v c++ || command -v g++ || command -v clang++ || true)"
    [[ -n "$cxx" ]] || missing+=("a C++ compiler: install g++ (or clang++), or set CXX")
  fi
  echo "C++ compiler: ${cxx:-not found}"
  if ! command -v ninja >/dev/null 2>&1; then echo "ninja: not found (Unix Makefiles instead)"; fi
}

# Asks CMake itself whether Catch2 (v3, else v2, as tests/CMakeLists.txt looks for it) and
# nlohmann-json are found with the arguments the build will get (a project without languages:
# well under a second).
check_packages() {
  local probe="$tmpdir/probe" output
  mkdir -p "$probe"
  cat > "$probe/CMakeLists.txt" <<'EOF'
cmake_minimum_required(VERSION 3.24)
project(gpu_check_probe NONE)
if(CUDAGAP_CATCH2_VERSION)
  find_package(Catch2 ${CUDAGAP_CATCH2_VERSION} QUIET)
else()
  find_package(Catch2 3 QUIET)
  if(NOT Catch2_FOUND)
    find_package(Catch2 2 QUIET)
  endif()
endif()
find_package(nlohmann_json 3.2 QUIET)
message(STATUS "probe: Catch2=${Catch2_FOUND}|${Catch2_VERSION}|${Catch2_DIR}")
message(STATUS "probe: nlohmann_json=${nlohmann_json_FOUND}|${nlohmann_json_VERSION}|${nlohmann_json_DIR}")
EOF
  # The build's generator: a host with Ninja may have no make, CMake's default.
  output="$(timeout 60 cmake -S "$probe" -B "$probe/build" -G "$generator" "${package_args[@]}" 2>&1)"
  printf '%s\n' "$output" | grep 'probe:' | sed 's/^-- probe: /found /'
  local fix="run scripts/prepare-gpu-run where they are installed and carry .deps (run(..., carry=[\".deps\"]))"
  printf '%s' "$output" | grep -q 'probe: Catch2=1|' ||
    missing+=("Catch2 v3 or v2 (the tests): neither installed nor in .deps/: $fix")
  printf '%s' "$output" | grep -q 'probe: nlohmann_json=1|' ||
    missing+=("nlohmann-json 3 (the benchmarks and examples): neither installed nor in .deps/: $fix")
}

# The preflight: what the run needs, checked before anything is built. Records the step; on a
# missing piece the run ends here (exit 4) with the fix in the summary.
preflight() {
  local log="$work/logs/preflight.log" note
  missing=()
  {
    echo "python3: ${python:-not found}"
    [[ -n "$python" ]] || missing+=("python3 (the summary, the results, the archive): install it or set PYTHON")
    if ((!no_build)); then
      check_tools
      check_packages
    fi
    echo "dependency bundle: $deps_note"
    echo "Fashion-MNIST: ${data_source:-none (bench/train and bench/infer will measure nothing)}"
    [[ -f "$deps/lib/libopenblas.so.0" ]] && echo "bundled OpenBLAS loads here: $( ((openblas_loads)) && echo yes || echo no)"
    printf 'missing: %s\n' "${missing[@]}"
  } > "$log" 2>&1
  if ((${#missing[@]})); then
    note="$(printf '%s; ' "${missing[@]}")"
    record preflight FAIL 0 "${note%; }"
    return 1
  fi
  note="python3 $("$python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
  ((python_torch)) && note+=" with torch" || note+=" (no torch)"
  note+=", .deps: $( [[ -d "$deps" ]] && echo yes || echo no)"
  note+=", Fashion-MNIST: ${data_source:-NONE}"
  if [[ -f "$deps/lib/libopenblas.so.0" ]] && ((!openblas_loads)); then
    note+="; the bundled OpenBLAS does not load here (see logs/preflight.log): the CPU baseline may be a naive loop"
  fi
  record preflight PASS 0 "$note"
}

# The versions of everything that matters, into logs/environment.log.
write_environment() {
  {
    echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "host: $(uname -n) ($(nproc 2>/dev/null) cores, $(uname -srm))"
    echo "source: $root (commit $commit)"
    echo "GPU: ${gpu_names:-none} ${no_gpu_reason:+($no_gpu_reason)}"
    echo "architectures: $archs ($arch_note)"
    echo "toolkit: ${toolkit:-not found}"
    echo "generator: $generator"
    echo "python3: ${python:-not found}"
    echo "dependency bundle: $deps_note"
    [[ -f "$deps/MANIFEST.txt" ]] && sed 's/^/  /' "$deps/MANIFEST.txt"
    echo "LD_LIBRARY_PATH: ${LD_LIBRARY_PATH:-}"
    echo
    if command -v nvidia-smi >/dev/null 2>&1; then
      timeout --kill-after=1 10 nvidia-smi --query-gpu=name,driver_version,compute_cap,memory.total,clocks.max.sm,clocks.sm,ecc.mode.current --format=csv 2>&1
      echo
    fi
    [[ -n "$nvcc" ]] && "$nvcc" --version 2>&1 | tail -2
    cmake --version 2>&1 | head -1
    [[ "$generator" == Ninja ]] && echo "ninja $(ninja --version 2>&1)"
    "${CXX:-c++}" --version 2>&1 | head -1
    [[ -n "$sanitizer" ]] && "$sanitizer" --version 2>&1 | head -2
    [[ -n "$python" ]] && python_versions
  } > "$work/logs/environment.log" 2>&1
}

python_versions() {
  "$python" --version 2>&1
  "$python" - <<'EOF' 2>&1
for name in ("torch", "nvidia.cudnn", "matplotlib"):
    try:
        module = __import__(name, fromlist=["_"])
        where = list(getattr(module, "__path__", [""]))[0]
        extra = f" (CUDA {module.version.cuda}, available: {module.cuda.is_available()})" if name == "torch" else ""
        print(f"{name} {getattr(module, '__version__', '')} {where}{extra}")
    except Exception as error:
        print(f"{name}: not importable ({type(error).__name__}: {error})")
EOF
}
