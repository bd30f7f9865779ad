# shellcheck shell=bash
# scripts/gpu-check's steps after the preflight: configure, build, tests, benchmarks,
# compute-sanitizer, results. Each records itself (scripts/lib/gpu-check-record.sh).

# ---- configure and build ------------------------------------------------------------------

# The targets the selected steps need, one a line: "all" for the tests on a GPU (every suite);
# "programs" for the tests without a GPU: every program (the examples, the benchmarks), the
# probe, the README's example and the Catch2 runner (no [gpu] suite could run here, and the
# runner alone proves that Catch2 from .deps/ compiles); else the names.
build_targets() {
  local name spec
  if selected tests && ((!skip_tests)); then
    ((have_gpu)) && echo all || echo programs
    return 0
  fi
  for name in "${bench_order[@]}"; do
    selected "bench-$name" && echo "cudagap-bench-$name"
  done
  if ((have_gpu)) && sanitizer_selected; then
    echo cudagap_gpu_probe
    for spec in "${memcheck_specs[@]}" "${racecheck_specs[@]}" "${initcheck_specs[@]}"; do
      echo "cudagap_${spec%%:*}_tests"
    done | sort -u
  fi
}

# The targets of the configured build, one a line.
build_target_names() {
  if [[ "$generator" == Ninja ]]; then
    ninja -C "$build" -t targets all 2>/dev/null | sed -n 's/^\([A-Za-z0-9_.+-]*\): phony$/\1/p'
  else
    make -C "$build" help 2>/dev/null | sed -n 's/^\.\.\. \([A-Za-z0-9_.+-]*\).*/\1/p'
  fi
}

# build_targets with "programs" spelled out: the tree's programs (cudagap-<name>: the examples
# and the benchmarks), the probe, the Catch2 runner, and every target whose program a ctest entry
# of the labels gpu and examples (or a fixture it requires) names on its command line: the
# README's examples, cudagap-train's and cudagap-infer's helpers, the ONNX exporter's probe
# (gpu_check_tools.py ctest-programs). An entry whose program was not built fails as "Not Run".
expand_targets() {
  local target known
  while read -r target; do
    if [[ "$target" == programs ]]; then
      known="$(build_target_names)"
      {
        grep -E '^(cudagap-[a-z0-9-]+|cudagap_gpu_probe|cudagap_test_main)$' <<< "$known"
        "$python" "$tools" ctest-programs "$build" '^(gpu|examples)$' | grep -Fx -f <(printf '%s\n' "$known")
      } | LC_ALL=C sort -u
    else
      echo "$target"
    fi
  done < <(build_targets)
}

# Where the configured build found what it uses, in one line for the summary.
configure_note() {
  local cache="$build/CMakeCache.txt" log="$work/logs/configure.log" package dir line parts=()
  for package in Catch2 nlohmann_json; do
    dir="$(sed -n "s/^${package}_DIR:[A-Z]*=//p" "$cache")"
    case "$dir" in
      "$deps"/*) parts+=("$package from .deps") ;;
      "" | *NOTFOUND) parts+=("$package NOT FOUND") ;;
      *) parts+=("$package from $dir") ;;
    esac
  done
  line="$(sed -n 's/^-- cudagap: CPU BLAS for cudagap::host_blas: //p' "$log" | head -1)"
  case "$line" in
    "") parts+=("no CPU BLAS (naive loop)") ;;
    "$deps"/*) parts+=("OpenBLAS from .deps") ;;
    *) parts+=("BLAS $line") ;;
  esac
  line="$(sed -n 's/^-- cudagap: cuDNN \([^ ]*\) at /\1 /p' "$log" | head -1)"
  if [[ -n "$line" ]]; then parts+=("cuDNN ${line%% *} at ${line#* }"); else parts+=("NO cuDNN: the dnn wrapper is not built"); fi
  line="$(sed -n 's/^-- cudagap: NCCL \([^ ]*\) at /\1 /p' "$log" | head -1)"
  if [[ -n "$line" ]]; then parts+=("NCCL ${line%% *} at ${line#* }"); else parts+=("NO NCCL: the nccl wrapper is not built"); fi
  printf '%s; ' "${parts[@]}" | sed 's/; $//'
}

configure_step() {
  local cached source_cached status note cudnn_library
  if [[ -f "$build/CMakeCache.txt" ]] && ((!clean)); then
    cached="$(sed -n 's/^CMAKE_CUDA_ARCHITECTURES:[A-Z]*=//p' "$build/CMakeCache.txt")"
    source_cached="$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$build/CMakeCache.txt")"
    if [[ "$cached" != "$archs" || "$source_cached" != "$root" ]]; then
      say "the existing $build was made for '$cached' from '$source_cached': starting afresh"
      clean=1
    fi
  fi
  ((clean)) && rm -rf "$build"
  data_step
  run_logged configure "$(min 240 "$(required_left 150 60)")" cmake "${configure_args[@]}"
  if ((last_rc != 0)); then
    record configure FAIL "$last_seconds" "$(grep -m1 -A2 'CMake Error' "$work/logs/configure.log" | tail -1 | sed 's/^ *//' | cut -c1-160)"
    return 1
  fi
  cp "$build/CMakeCache.txt" "$work/CMakeCache.txt" 2>/dev/null
  note="$(configure_note)"
  status=PASS
  # On a GPU host a missing cuDNN loses every convolution test and benchmark: a failure to fix.
  ((have_gpu)) && [[ "$note" == *"NO cuDNN"* ]] && status=FAIL
  # ... and a missing NCCL the nccl wrapper's [gpu] tests and bench/allreduce.
  ((have_gpu)) && [[ "$note" == *"NO NCCL"* ]] && status=FAIL
  record configure "$status" "$last_seconds" "$note"
  libraries_first
  return 0
}

# The build's programs and tests run with the libraries it was configured with: their folders go
# first on LD_LIBRARY_PATH, ahead of whatever the host had there (a PyTorch host's LD_LIBRARY_PATH
# may name its wheels' other cudart, cuBLAS and cuDNN, which would win over the programs'
# RUNPATH). cuDNN from a wheel also loads its engine libraries by name at run time, from there.
libraries_first() {
  local folders
  folders="$("$python" "$lib/gpu_check_probe.py" folders "$build" 2>/dev/null)"
  [[ -n "$folders" ]] || return 0
  LD_LIBRARY_PATH="$folders${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  export LD_LIBRARY_PATH
  say "the build's libraries first on LD_LIBRARY_PATH: $folders"
}

# Which cudart, cuBLAS, cuRAND, cuDNN and NCCL each built program loads (ldd), against the copies
# the build linked: a program that would load another copy is a FAIL, with the host's
# LD_LIBRARY_PATH (the probe and logs/environment.log have it too).
loader_step() {
  local summary
  run_logged loader 60 "$python" "$lib/gpu_check_probe.py" loader "$build"
  summary="$(sed -n 's/^summary: //p' "$work/logs/loader.log" | cut -c1-400)"
  if ((last_rc == 0)); then
    record loader PASS "$last_seconds" "${summary:-no program}; LD_LIBRARY_PATH was '${host_library_path}' on arrival, the build's folders are first now"
  else
    record loader FAIL "$last_seconds" "$(grep -m1 '^wrong: ' "$work/logs/loader.log" | sed 's/^wrong: //' | cut -c1-200); see logs/loader.log"
  fi
}

# The Fashion-MNIST files the tests and bench/train and bench/infer read, uncompressed: a host
# without zlib's headers builds a cudagap::nn that reads no .gz, and python3 unpacks the subset
# in a second. Into the build folder (the bundle in .deps/ stays as it travelled); the configure
# is told where (CUDAGAP_FASHION_MNIST_DIR), and so are the benchmarks (data_dir).
data_step() {
  data_dir=""
  if [[ -z "$data_source" ]]; then
    say "no Fashion-MNIST subset (.deps/fashion-mnist-subset, /usr/share/datasets/fashion-mnist or CUDAGAP_FASHION_MNIST_DIR)"
    return 0
  fi
  if "$python" "$tools" unpack-data "$data_source" "$build/fashion-mnist" > "$work/logs/data.log" 2>&1; then
    data_dir="$build/fashion-mnist"
    configure_args+=("-DCUDAGAP_FASHION_MNIST_DIR=$data_dir")
  else
    say "could not unpack $data_source (logs/data.log)"
  fi
}

build_step() {
  local wanted=() known targets=() absent=() target note build_command=()
  mapfile -t wanted < <(expand_targets)
  if ((${#wanted[@]} == 0)); then
    record build SKIP 0 "the selected steps need nothing built here"
    return 0
  fi
  known=" $(build_target_names | paste -sd' ' -) "
  for target in "${wanted[@]}"; do
    [[ "$target" == all ]] && continue
    if [[ "$known" == *" $target "* ]]; then targets+=("$target"); else absent+=("$target"); fi
  done
  if [[ "${wanted[0]}" != all ]] && ((!${#targets[@]})); then
    record build FAIL 0 "none of the targets these steps need is in this build: ${absent[*]}"
    return 1
  fi
  build_command=(cmake --build "$build" -j "$jobs")
  ((${#targets[@]})) && build_command+=(--target "${targets[@]}")
  run_logged build "$(min 900 "$(required_left 90 60)")" "${build_command[@]}"
  if ((last_rc == 124 || last_rc == 137)); then
    record build FAIL "$last_seconds" "timed out after ${last_seconds}s, at $(grep -E '^\[[0-9]+/[0-9]+\]' "$work/logs/build.log" | tail -1 | cut -d' ' -f1)"
    return 1
  elif ((last_rc != 0)); then
    record build FAIL "$last_seconds" "$(grep -m1 -E 'error:|FAILED:|Error ' "$work/logs/build.log" | cut -c1-160)"
    return 1
  fi
  note="$(grep -c -E '^\[[0-9]+/[0-9]+\]' "$work/logs/build.log") build steps"
  ((${#targets[@]})) && note+=" for ${#targets[@]} targets: $(printf '%s ' "${targets[@]}" | cut -c1-120)"
  ((${#absent[@]})) && note+="; not in this build: ${absent[*]}"
  record build PASS "$last_seconds" "$note"
}

# ---- tests ------------------------------------------------------------------------------------

# What the GPU adds: the [gpu] tests (ctest label gpu) and the programs as a user runs them
# (label examples). The host tests ran in CI. A hung test must not take the whole window: ctest
# gets what is left up to the hard end less 45 s (the results, the plot and the last archive,
# so that the whole run ends within about 475 s even then), and its per-test limit stays inside.
# The [multi-gpu] tests are a step of their own (multi_gpu_step).
tests_step() {
  local limit test_timeout log total failed skipped note first
  limit="$(min 900 "$(required_left 45 60)")"
  test_timeout=$((limit - 10 < 600 ? limit - 10 : 600))
  run_logged tests "$limit" ctest --test-dir "$build" --output-on-failure -j "$jobs" \
    --timeout "$test_timeout" -L '^(gpu|examples)$' --output-junit "$work/tests.xml"
  log="$work/logs/tests.log"
  ctest_counts "$log"
  note="${total:-?} tests (labels gpu, examples): $((${total:-0} - ${failed:-0} - skipped)) passed, ${failed:-?} failed, $skipped skipped"
  if ((!have_gpu)); then
    ((skipped)) && note+=" (the [gpu] ones: no GPU)" || note+=" (no GPU: the [gpu] suites are not built)"
  fi
  # Where cudagap-infer has no ONNX exporter (no libonnx-dev here), its ONNX Runtime proofs ran on
  # the model of the exporter's Python twin (tests/examples/onnxruntime_tests.cmake names them so).
  if grep -Eq "Test +#[0-9]+: [^*]*on the Python twin's ONNX model.*(Passed|Failed|Skipped|Timeout)" "$log"; then
    note+="; cudagap-infer has no ONNX exporter here: its ONNX Runtime proofs ran on the Python twin's model"
  fi
  if ((last_rc == 0 && ${total:-0} > 0)); then
    if ((have_gpu && skipped > 0)); then
      record tests FAIL "$last_seconds" "$note: on a GPU host nothing may be skipped"
    else
      record tests PASS "$last_seconds" "$note"
    fi
  else
    first="$(ctest_first_failure "$log")"
    ((last_rc == 124 || last_rc == 137)) && note+=", cut off after ${limit}s (logs/tests.log shows what still ran)"
    record tests FAIL "$last_seconds" "$note${first:+; first: $first}"
  fi
}

# ctest_counts <log>: sets total, failed and skipped (the caller's locals) from a ctest log;
# total and failed are empty when the log has no summary.
ctest_counts() {
  total="$(sed -n 's/.*tests failed out of \([0-9]*\).*/\1/p' "$1" | tail -1)"
  failed="$(sed -n 's/.*, \([0-9]*\) tests* failed out of.*/\1/p' "$1" | tail -1)"
  skipped="$(grep -c '(Skipped)' "$1" || true)"
}

# The name of the first test a ctest log reports failed or timed out.
ctest_first_failure() {
  grep -m1 -E '\*\*\*Failed|\*\*\*Timeout|\(Failed\)|\(Timeout\)' "$1" |
    sed -E 's/^.*Test +#[0-9]+: //; s/ *\.{3,}.*//; s/^[ \t]*[0-9]+ - //' | cut -c1-100
}

# Why the [multi-gpu] tests do not run here (empty when they do: two GPUs or more).
multi_gpu_skip_reason() {
  local need="the [multi-gpu] tests (ctest label multi-gpu) need two GPUs or more"
  if ((!have_gpu)); then
    echo "no GPU ($no_gpu_reason): $need"
  elif ((gpu_count < 2)); then
    echo "$gpu_count GPU here ($(printf '%s' "$gpu_names" | paste -sd, -)): $need"
  fi
}

# The [multi-gpu] tests (label multi-gpu: core's objects made on device 1 while device 0 is
# current and its peer copies, the collectives on every local GPU, two-GPU training against one),
# each alone (RUN_SERIAL), where the host has two GPUs or more (the count find_gpu took from
# nvidia-smi); elsewhere a SKIP row with the reason. They run after the other tests, in what is
# left up to the hard end less 45 s.
multi_gpu_step() {
  local reason limit log total failed skipped note first
  reason="$(multi_gpu_skip_reason)"
  [[ -n "$reason" ]] && { record multi-gpu SKIP 0 "$reason"; return 0; }
  limit="$(min 600 "$(required_left 45 30)")"
  run_logged multi-gpu "$limit" ctest --test-dir "$build" --output-on-failure \
    --timeout "$limit" -L '^multi-gpu$' --output-junit "$work/multi-gpu.xml"
  log="$work/logs/multi-gpu.log"
  ctest_counts "$log"
  note="${total:-?} tests (label multi-gpu, on $gpu_count GPUs): $((${total:-0} - ${failed:-0} - skipped)) passed, ${failed:-?} failed, $skipped skipped"
  if ((last_rc == 0 && ${total:-0} > 0 && skipped == 0)); then
    record multi-gpu PASS "$last_seconds" "$note"
    return 0
  fi
  ((last_rc == 0 && skipped > 0)) && note+=": on a host with $gpu_count GPUs nothing may be skipped"
  first="$(ctest_first_failure "$log")"
  ((last_rc == 124 || last_rc == 137)) && note+=", cut off after ${limit}s (logs/multi-gpu.log shows what still ran)"
  record multi-gpu FAIL "$last_seconds" "$note${first:+; first: $first}"
}

# ---- benchmarks (before the sanitizer: they matter more when time is short) --------------

# One benchmark, once, in the slot the time plan gives it (scripts/lib/gpu-check-plan.sh): full
# size, --quick, or not at all. Without a GPU only its CPU part runs (--quick, seconds): the
# budget, which is there for GPU time, does not stop it, the hard end does.
bench_step() {
  local name="$1" program limit cap flags=() extra=() mode_note="" json targets numbers
  program="$build/bench/$name/cudagap-bench-$name"
  if [[ ! -x "$program" ]]; then
    record "bench-$name" FAIL 0 "$program was not built (was nlohmann-json$([[ $name == allreduce ]] && echo ', NCCL') found? see logs/configure.log)"
    return
  fi
  if ((have_gpu)); then
    plan_take "bench-$name"
    [[ "$slot_mode" == skip ]] && { record "bench-$name" SKIP 0 "$slot_note"; return; }
    limit="$slot_seconds"; cap="$(plan_"$slot_mode" "bench-$name")"
    if [[ "$slot_mode" == quick ]]; then
      flags=(--quick)
      ((quick)) || mode_note="$slot_note; "
    else
      mode_note="full run in its ${limit}s slot; "
    fi
  else
    cap="$(plan_quick "bench-$name")"; flags=(--quick)
    limit="$(min "$cap" $((hard_end - $(elapsed) - 15)))"
    ((limit >= 15)) || { record "bench-$name" SKIP 0 "not run: the hard end (${hard_end}s) is near"; return; }
  fi
  ((force_no_gpu)) && flags+=(--cpu-only)
  if [[ "$name" == train || "$name" == infer ]]; then
    mapfile -t extra < <("${name}_flags" "$limit" "${flags[0]:-}")
    flags+=("${extra[@]}")
  fi
  json="$work/bench/$name.json"
  run_logged "bench-$name" "$limit" "$program" "${flags[@]}" --json "$json"
  targets=""
  [[ -f "$json" ]] && targets="$("$python" "$root/bench/harness/results.py" brief "$json" 2>&1 | head -1)"
  if [[ "$name" == allreduce && -f "$json" ]]; then
    numbers="$(allreduce_numbers "$json")"
    [[ -n "$numbers" ]] && targets+="; $numbers"
  elif [[ "$name" == infer && -f "$json" ]]; then
    numbers="$(infer_model_origin "$json")"
    [[ -n "$numbers" ]] && targets+="; $numbers"
  fi
  bench_verdict "$name" "$limit" "$cap" "$mode_note$targets"
}

# bench/train's arguments under a limit of <seconds> (and <--quick> when so): the Fashion-MNIST
# subset prepare-gpu-run carries (unpacked by data_step), 3 epochs on its 20,000 training images (cudagap twice, torch
# eager, the checkpoint's evaluation: about 30 s on an H200), then torch.compile when 60 s are
# still left (its first compilation takes 30-60 s); --budget stops it 5 s before the limit.
# --quick: 2 epochs on 2,000 images, no torch.compile.
train_flags() {
  [[ -n "${data_dir:-}" ]] && printf '%s\n' --data "$data_dir"
  printf '%s\n' --budget "$(($1 > 10 ? $1 - 5 : $1))"
  if [[ "$2" == --quick ]]; then
    printf '%s\n' --compile-modes none
  else
    printf '%s\n' --epochs 3 --train-limit 20000 --compile-modes default --compile-seconds 60
  fi
}

# bench/infer's arguments under a limit of <seconds> (and <--quick> when so): the same data as
# train_flags (cudagap-infer's accuracy and --outputs read its test images; 2,000 of them),
# --budget 5 s before the limit, torch.compile (reduce-overhead) only when 40 s are still left
# (it compiles and captures one graph per batch size); a full run times 500 requests per batch
# size and part, --quick 100. It also checks cudagap's logits against ONNX Runtime's (a target).
infer_flags() {
  [[ -n "${data_dir:-}" ]] && printf '%s\n' --data "$data_dir"
  printf '%s\n' --budget "$(($1 > 10 ? $1 - 5 : $1))" --test-limit 2000 --compile-seconds 40
  [[ "$2" == --quick ]] || printf '%s\n' --requests 500 --max-seconds 4
}

# The all-reduce's headline numbers for the summary: at the largest size, out of place, the
# algbw of cudagap and raw NCCL and their ratio, and torch's in place when it ran.
allreduce_numbers() {
  "$python" - "$1" <<'PY' 2>&1 | head -1
import json, sys
rows = json.load(open(sys.argv[1])).get("rows", [])
def row(case, variant):
    return next((r for r in rows if r["case"] == case and r["variant"] == variant), None)
sizes = sorted({r["case"].rsplit(" ", 1)[0] for r in rows},
               key=lambda s: float(s.split()[0]) * {"B": 1, "KiB": 2**10, "MiB": 2**20, "GiB": 2**30}[s.split()[1]])
if not sizes:
    sys.exit()
big = sizes[-1]
ours, raw = row(big + " out-of-place", "cudagap"), row(big + " out-of-place", "raw NCCL")
text = f"{big} out-of-place algbw: cudagap {ours['gbps']:.0f} GB/s, raw NCCL {raw['gbps']:.0f} GB/s, ratio {ours['median_ms'] / raw['median_ms']:.3f}" if ours and raw else f"{big}: a side is missing"
torch, mine = row(big + " in-place", "torch"), row(big + " in-place", "cudagap")
if torch and mine:
    text += f"; in place: torch {torch['median_ms'] * 1e3:.1f} us vs cudagap {mine['median_ms'] * 1e3:.1f} us"
print(text)
PY
}

# Where bench/infer's ONNX model came from, when not from cudagap-infer's own exporter (a GPU host
# without libonnx-dev: the Python twin, bench/infer/onnx_twin.py), for the summary.
infer_model_origin() {
  "$python" - "$1" <<'PY' 2>&1 | head -1
import json, sys
origin = (json.load(open(sys.argv[1])).get("infer") or {}).get("onnx_model") or {}
if origin.get("exporter") == "bench/infer/onnx_twin.py":
    print("the ONNX model was made by the Python twin of cudagap-infer's exporter (this cudagap-infer has none)")
PY
}

# Whether a benchmark report has a measured row (bench/train without its data set exits 0 with
# every part "not measured").
measured_rows() {
  [[ -f "$1" ]] && "$python" -c 'import json, sys; sys.exit(not json.load(open(sys.argv[1])).get("rows"))' "$1" 2>/dev/null
}

# The report's first "not measured" note, or why there is no report.
not_measured_note() {
  [[ -f "$1" ]] || { echo "no report"; return; }
  "$python" -c '
import json, sys
notes = [n for n in json.load(open(sys.argv[1])).get("notes", []) if "not measured" in n]
print((notes[0] if notes else "no rows")[:160])' "$1" 2>&1 | head -1
}

bench_verdict() { # name limit cap note
  local name="$1" limit="$2" cap="$3" note="$4" log="$work/logs/bench-$1.log"
  case "$last_rc" in
    0)
      if ((have_gpu)) && ! measured_rows "$work/bench/$name.json"; then
        record "bench-$name" FAIL "$last_seconds" "measured nothing on a GPU host: $(not_measured_note "$work/bench/$name.json")"
      else
        record "bench-$name" PASS "$last_seconds" "$note"
      fi ;;
    77)
      if ((have_gpu)); then
        record "bench-$name" FAIL "$last_seconds" "GPU part skipped on a GPU host: $(grep -m1 'GPU part skipped' "$log" | cut -c1-140)"
      else
        record "bench-$name" SKIP "$last_seconds" "CPU part only (no GPU); $note"
      fi ;;
    124 | 137)
      if ((limit < cap)); then  # cut short by the budget, not too slow by itself
        record "bench-$name" SKIP "$last_seconds" "stopped after ${limit}s: the ${budget}s time budget is spent"
      else
        record "bench-$name" FAIL "$last_seconds" "timed out after ${limit}s"
      fi ;;
    *) record "bench-$name" FAIL "$last_seconds" "exit $last_rc: $(grep -A1 -m1 '^errors' "$log" | tail -1 | sed 's/^ *//' | cut -c1-140)" ;;
  esac
}

# ---- results and plot -----------------------------------------------------------------------
results_step() {
  local reports=()
  shopt -s nullglob
  reports=("$work"/bench/*.json)
  shopt -u nullglob
  if ((${#reports[@]} == 0)); then
    record results SKIP 0 "no benchmark reports"
    return
  fi
  run_logged results 20 "$python" "$root/bench/harness/results.py" merge --out "$out/results.md" \
    --json "$out/results.json" "${reports[@]}"
  if ((last_rc == 0)); then
    record results PASS "$last_seconds" "$(grep -m1 '^merged' "$work/logs/results.log")"
  else
    record results FAIL "$last_seconds" "$(grep -m1 -v '^\$\|^(' "$work/logs/results.log" | cut -c1-140)"
  fi
  [[ -f "$out/results.json" ]] || return
  run_logged plot 20 "$python" "$root/bench/plot_results.py" "$out/results.json" --out "$out/speedups.png"
  case "$last_rc" in
    0) record plot PASS "$last_seconds" "speedups.png" ;;
    3) record plot SKIP "$last_seconds" "matplotlib is not importable: no plot (pip install matplotlib)" ;;
    4) record plot SKIP "$last_seconds" "no ratio to plot (the GPU parts did not run)" ;;
    *) record plot FAIL "$last_seconds" "see logs/plot.log" ;;
  esac
}
