# shellcheck shell=bash
# scripts/gpu-check's first step: a look at the host in at most 15 s, written into summary.md
# before anything is built, so that a run cut off later still says what the host has. Its parts
# run side by side, each under its own timeout:
#   nvidia-smi      the GPU, the driver, the clocks (5 s)
#   libraries       where the CUDA runtime, cuBLAS, cuBLASLt, cuRAND, cuDNN, NCCL and zlib headers
#                   and libraries are (LD_LIBRARY_PATH, toolkit, wheels, system), the NVIDIA wheel
#                   folders, python3 and the versions of torch, onnxruntime, numpy (8 s)
#   sanitizer       whether compute-sanitizer accepts the device: memcheck over one cudaMalloc
#                   and cudaFree made through the toolkit's libcudart (12 s)
#   the rest        LD_LIBRARY_PATH, free disk and memory (instant)
#
# Needs (set by scripts/gpu-check): work, lib, python, toolkit, sanitizer, have_gpu, root,
# skip_sanitizer, host_library_path.

probe_limit=15

# The GPU line: name, driver, compute capability, memory, SM and memory clocks (now and max).
probe_gpu() {
  command -v nvidia-smi >/dev/null 2>&1 || { echo "- GPU: nvidia-smi is not installed (no NVIDIA driver)"; return; }
  local fields="name,driver_version,compute_cap,memory.total,clocks.sm,clocks.max.sm,clocks.mem,clocks.max.mem"
  local answer rc
  answer="$(timeout --kill-after=1 5 nvidia-smi --query-gpu="$fields" --format=csv,noheader 2>&1)"
  rc=$?
  if ((rc == 124 || rc == 137)); then
    echo "- GPU: nvidia-smi gave no answer within 5 s"
  elif ((rc != 0)); then
    echo "- GPU: nvidia-smi failed (exit $rc): $(head -1 <<< "$answer")"
  else
    sed 's/^/- GPU (name, driver, compute capability, memory, SM clock, max SM clock, memory clock, max memory clock): /' <<< "$answer"
  fi
}

probe_libraries() {
  if [[ -z "$python" ]]; then
    echo "- libraries: not probed (no python3)"
    return
  fi
  timeout --kill-after=1 8 "$python" "$lib/gpu_check_probe.py" host --toolkit "$toolkit" 2>&1 ||
    echo "- libraries: the probe did not finish (exit $?) within 8 s"
}

# Whether compute-sanitizer runs CUDA on this device: on gVisor it says "Device not supported".
probe_sanitizer() {
  local cudart answer rc
  if [[ -z "$sanitizer" ]]; then echo "- compute-sanitizer: not installed"; return; fi
  if ((!have_gpu)); then echo "- compute-sanitizer: $sanitizer (not tried: no GPU)"; return; fi
  if ((skip_sanitizer)); then echo "- compute-sanitizer: $sanitizer (not tried: --skip-sanitizer)"; return; fi
  cudart="$(ls "$toolkit"/lib64/libcudart.so.[0-9]* "$toolkit"/lib/libcudart.so.[0-9]* 2>/dev/null | head -1)"
  if [[ -z "$python" || -z "$cudart" ]]; then
    echo "- compute-sanitizer: $sanitizer (not tried: $([[ -z "$python" ]] && echo "no python3" || echo "no libcudart in $toolkit"))"
    return
  fi
  # (One line of Python: the sanitizer's own log then shows the whole command.)
  local code='import ctypes, sys; c = ctypes.CDLL(sys.argv[1]); p = ctypes.c_void_p()'
  code+='; s = c.cudaMalloc(ctypes.byref(p), ctypes.c_size_t(256)); print("cudaMalloc:", s)'
  code+='; sys.exit(s or c.cudaFree(p))'
  answer="$(timeout --kill-after=1 12 "$sanitizer" --tool memcheck --error-exitcode 99 "$python" -c "$code" \
    "$cudart" 2>&1)"
  rc=$?
  if grep -q "Device not supported" <<< "$answer"; then
    echo "- compute-sanitizer: $sanitizer REFUSES the device: $(grep -m1 'Device not supported' <<< "$answer" | sed 's/^=* *//')"
  elif ((rc == 0)); then
    echo "- compute-sanitizer: $sanitizer accepts the device (memcheck over cudaMalloc and cudaFree: clean)"
  elif ((rc == 124 || rc == 137)); then
    echo "- compute-sanitizer: $sanitizer gave no answer within 12 s"
  else
    echo "- compute-sanitizer: $sanitizer exit $rc: $(grep -v '^=* *$' <<< "$answer" | tail -1 | cut -c1-160)"
  fi
}

probe_resources() {
  # As the host gave it (gpu-check adds .deps/lib for OpenBLAS, and later the build's folders).
  echo "- LD_LIBRARY_PATH: ${host_library_path:-(not set)}"
  echo "- free disk: $(df -Pk "$root" 2>/dev/null | awk 'NR == 2 { printf "%.1f GiB on %s", $4 / 1048576, $6 }')"
  echo "- memory: $(awk '/^MemAvailable:/ { a = $2 } /^MemTotal:/ { t = $2 } END { printf "%.1f GiB available of %.1f GiB", a / 1048576, t / 1048576 }' /proc/meminfo 2>/dev/null)"
  echo "- CPU cores: $(nproc 2>/dev/null)"
}

# The probe: its parts side by side, then probe.md (summary.md shows it) and logs/probe.log.
probe_step() {
  local dir="$work/probe" begin seconds part note
  begin="$(date +%s)"
  mkdir -p "$dir"
  probe_gpu > "$dir/1-gpu" 2>&1 &
  probe_libraries > "$dir/2-libraries" 2>&1 &
  probe_sanitizer > "$dir/3-sanitizer" 2>&1 &
  probe_resources > "$dir/4-resources" 2>&1
  wait
  seconds=$(($(date +%s) - begin))
  {
    echo "## The host, as the probe found it"
    echo
    echo "In ${seconds}s (at most ${probe_limit}s), before anything was built; \"toolkit\", \"wheel\" and \"system\" say where each copy is."
    echo
    for part in "$dir"/*; do cat "$part"; done
  } > "$work/.probe.md.partial" && mv -f "$work/.probe.md.partial" "$work/probe.md"
  cp "$work/probe.md" "$work/logs/probe.log"
  rm -rf "$dir"
  note="$(probe_brief "$work/probe.md")"
  record probe PASS "$seconds" "$note"
}

# The probe in one line for the step table: the GPU, then where each library was found first.
probe_brief() {
  local line gpu parts=() name
  gpu="$(sed -n 's/^- GPU[^:]*: //p' "$1" | head -1 | cut -d, -f1-2)"
  parts+=("${gpu:-no GPU}")
  for name in cuBLAS cuRAND cuDNN NCCL zlib; do
    line="$(grep -m1 "^- $name: " "$1")"
    if [[ "$line" == *"library NONE"* ]]; then
      parts+=("$name: none")
    else
      parts+=("$name: $(sed -E 's/.*; library ([A-Za-z_]+) .*/\1/' <<< "$line")")
    fi
  done
  line="$(grep -m1 '^- compute-sanitizer: ' "$1")"
  [[ "$line" == *REFUSES* ]] && parts+=("compute-sanitizer refuses the device")
  printf '%s; ' "${parts[@]}" | sed 's/; $//'
}
