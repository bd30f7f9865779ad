# shellcheck shell=bash
# scripts/gpu-check's compute-sanitizer steps: a probe first (on some virtual machines the tool
# refuses the device: "Device not supported", then error 999 at the first allocation; that is
# the host's limit, not a defect of cudagap, and every sanitizer step is then SKIP with the
# reason), then memcheck, racecheck and initcheck, each on the tests where cudagap's own kernels
# (src/core/numerics.cu, src/blas/*.cu, src/nn/*.cu), its memory handling and its cuDNN
# convolution trials run, each within its slot of the time plan (gpu-check-plan.sh).
#
# A spec is "<suite>:<Catch2 test spec>", with test files as tags ([#test_numerics]: Catch2's -#).

sanitizer_specs() { # sets memcheck_specs, racecheck_specs, initcheck_specs
  # racecheck sees shared-memory hazards only, so it runs where cudagap's own kernels run: inside
  # cuDNN's kernels it would report cuDNN, not cudagap. initcheck also runs the convolution
  # tests: their trials hand cuDNN cudagap's planning scratch, which must be written first. The
  # suites of cudagap's own kernels (core, blas, nn) run before the cuDNN convolution trials,
  # whose memcheck run is the slowest and the one the budget cuts first. The
  # stream-gate tests ([gate]) hold a stream in a host function until the test thread opens it,
  # which a sanitizer that serialises work could turn into a wait until the time limit.
  local gate='~[gate]'
  # The training step's kernels: AdamW, the grad scaler (check, unscale, update), cross-entropy
  # (labels out of range included: never an index), and a whole step captured and replayed.
  local nn_step="[#test_adamw][gpu]$gate,[#test_grad_scaler][gpu]$gate,[#test_cross_entropy][gpu]$gate,[#test_captured_step][gpu]$gate"
  if ((quick)); then
    memcheck_specs=("core:[memory][gpu]$gate,[#test_numerics][gpu]$gate"
      "blas:[#test_numerics][gpu]$gate,[#test_convert][gpu]$gate")
    racecheck_specs=("blas:[#test_numerics][gpu]$gate,[#test_convert][gpu]$gate")
    initcheck_specs=("blas:[#test_numerics][gpu]$gate,[#test_convert][gpu]$gate" "dnn:[#test_convolution][gpu]")
  else
    memcheck_specs=("core:[memory][gpu]$gate,[#test_numerics][gpu]$gate"
      "blas:[#test_numerics][gpu]$gate,[#test_convert][gpu]$gate,[#test_gemm][gpu]$gate"
      "nn:[#test_accumulate][gpu]$gate,[#test_parameters][gpu]$gate,[#test_linear][gpu]$gate,$nn_step"
      "dnn:[#test_convolution][gpu]")
    racecheck_specs=("core:[#test_numerics][gpu]$gate"
      "blas:[#test_numerics][gpu]$gate,[#test_convert][gpu]$gate"
      "nn:[#test_accumulate][gpu]$gate,[#test_cross_entropy][gpu]$gate")
    initcheck_specs=("core:[memory][gpu]$gate,[#test_numerics][gpu]$gate"
      "blas:[#test_numerics][gpu]$gate,[#test_convert][gpu]$gate,[#test_gemm][gpu]$gate"
      "nn:[#test_accumulate][gpu]$gate,[#test_parameters][gpu]$gate,[#test_cross_entropy][gpu]$gate,[#test_captured_step][gpu]$gate"
      "dnn:[#test_convolution][gpu]")
  fi
}

sanitizer_selected() {
  ((skip_sanitizer)) && return 1
  selected sanitizer-memcheck || selected sanitizer-racecheck || selected sanitizer-initcheck
}

# The line of a probe's log that says best why it failed: the tool's refusal first, then any error.
probe_failure() {
  local pattern lines
  lines="$(grep -v -e '^\$ ' -e '^(' "$1")"
  for pattern in 'not supported' '999|unknown error' 'error'; do
    grep -m1 -iE "$pattern" <<< "$lines" && break
  done | sed 's/^=* *//' | cut -c1-140
}

# Runs cudagap_gpu_probe --exercise (allocate, fill, free, synchronise) under memcheck, within
# <seconds> (at most 30: it takes a few). Returns 0 when the sanitizer can work here; otherwise
# records why not and returns 1.
sanitizer_probe() {
  local probe="$build/tests/examples/cudagap_gpu_probe" reason log="$work/logs/sanitizer-probe.log"
  if [[ ! -x "$probe" ]]; then
    sanitizer_refused="the probe program $probe was not built"
    record sanitizer-probe FAIL 0 "$sanitizer_refused"
    return 1
  fi
  run_logged sanitizer-probe "$(min 30 "$1")" "$sanitizer" --tool memcheck --error-exitcode 99 "$probe" --exercise
  if ((last_rc == 0)) && grep -q 'ERROR SUMMARY: 0 errors' "$log"; then
    record sanitizer-probe PASS "$last_seconds" "compute-sanitizer works on this GPU"
    return 0
  fi
  reason="$(probe_failure "$log")"
  if ! "$probe" --exercise >> "$log" 2>&1; then
    sanitizer_refused="the probe fails without the sanitizer too: the GPU is not usable (${reason:-exit $last_rc})"
  else
    sanitizer_refused="compute-sanitizer cannot work on this host (the probe runs without it): ${reason:-exit $last_rc}"
  fi
  record sanitizer-probe SKIP "$last_seconds" "$sanitizer_refused"
  return 1
}

# The outcome of one sanitizer run of a suite, from its exit code and log; adds to the caller's
# notes, failed, out_of_time, total_errors.
sanitizer_outcome() { # suite log limit cap
  local suite="$1" log="$2" limit="$3" cap="$4" errors reports
  # memcheck and initcheck end with "ERROR SUMMARY: N errors", racecheck with "RACECHECK
  # SUMMARY: H hazards displayed (N errors, W warnings)".
  errors="$(sed -n -e 's/^========= ERROR SUMMARY: \([0-9]*\) error.*/\1/p' \
    -e 's/^========= RACECHECK SUMMARY: .*(\([0-9]*\) error.*/\1/p' "$log" | tail -1)"
  total_errors=$((total_errors + ${errors:-0}))
  case "$last_rc" in
    0) notes+=("$suite: clean") ;;
    99) notes+=("$suite: ${errors:-some} errors"); failed=1 ;;
    124 | 137)
      # Cut off by its time limit: a failure only when it had found something by then; a
      # slow sanitizer run (cuDNN under memcheck is) is unfinished, not a defect of cudagap.
      reports="$(grep -cE '^========= +(Invalid |Uninitialized |Race reported|Barrier error|Leaked |Program hit)' "$log" || true)"
      if ((reports > 0)); then
        notes+=("$suite: $reports error reports, then cut off after ${limit}s"); failed=1
      else
        notes+=("$suite: not finished in its ${limit}s ($( ((limit < cap)) && echo 'time budget' || echo 'time limit')), no error reported until then")
        out_of_time=1
      fi ;;
    77) notes+=("$suite: no usable GPU"); failed=1 ;;
    *) notes+=("$suite: tests failed (exit $last_rc)"); failed=1 ;;
  esac
}

# sanitize <tool> <extra options> <spec...>: one run per "<suite>:<spec>", all within the
# tool's slot in the time plan (scripts/lib/gpu-check-plan.sh).
sanitize() {
  local tool="$1" extra="$2"; shift 2
  local name="sanitizer-$tool" total_errors=0 ran=0 failed=0 out_of_time=0 seconds=0 notes=()
  local spec suite binary limit cap deadline joined
  plan_take "$name"
  if [[ "$slot_mode" == skip ]]; then
    record "$name" SKIP 0 "$slot_note"
    return
  fi
  cap="$(plan_full "$name")"
  deadline=$(($(elapsed) + slot_seconds))
  for spec in "$@"; do
    suite="${spec%%:*}"
    binary="$build/tests/$suite/cudagap_${suite}_tests"
    [[ -x "$binary" ]] || { notes+=("$suite: not built"); continue; }
    limit=$((deadline - $(elapsed)))
    if ((limit < 20)); then
      notes+=("$suite: not run (time budget spent)"); out_of_time=1; continue
    fi
    # --report-api-errors no: a failing CUDA API call counts as a sanitizer error otherwise, and
    # the [gpu] tests provoke some on purpose (an impossible allocation must throw
    # out_of_memory), as cuBLAS and cuDNN do when they probe; the tests check every status
    # themselves, so the sanitizer is left to what only it sees (memory, races, leaks, uninit).
    # --warn NoTests: a spec that matches no test fails instead of passing with nothing run.
    # shellcheck disable=SC2086 # $extra is a list of options
    run_logged "$name-$suite" "$limit" "$sanitizer" --tool "$tool" $extra --report-api-errors no \
      --error-exitcode 99 --print-limit 20 "$binary" --require-gpu -# --warn NoTests "${spec#*:}"
    seconds=$((seconds + last_seconds)); ran=$((ran + 1))
    sanitizer_outcome "$suite" "$work/logs/$name-$suite.log" "$limit" "$cap"
  done
  joined="$(printf '%s; ' "${notes[@]}")"; joined="${joined%; }"
  if ((failed)); then
    record "$name" FAIL "$seconds" "$joined"
  elif ((out_of_time)); then
    record "$name" SKIP "$seconds" "$joined"
  elif ((ran == 0)); then
    record "$name" SKIP 0 "no test binaries: $joined"
  else
    record "$name" PASS "$seconds" "$total_errors errors; $joined"
  fi
}

# sanitizer_steps <tool...>: the selected ones of these tools, after one probe per run (its
# verdict is kept: a later call with other tools does not probe again).
sanitizer_probed=""
sanitizer_steps() {
  local tool chosen=()  # (not "tools": that is gpu_check_tools.py, which record packs with)
  # --skip-sanitizer: none of them, whatever --only selects.
  ((skip_sanitizer)) || for tool in "$@"; do selected "sanitizer-$tool" && chosen+=("$tool"); done
  if ((${#chosen[@]} == 0)); then
    if ((skip_sanitizer)) && [[ -z "$sanitizer_probed" ]]; then
      record sanitizer SKIP 0 "--skip-sanitizer"; sanitizer_probed=skipped
    fi
    return 0
  fi
  if ((!have_gpu)); then
    [[ -z "$sanitizer_probed" ]] && record sanitizer SKIP 0 "no GPU"; sanitizer_probed=no; return 0
  elif [[ -z "$sanitizer" ]]; then
    [[ -z "$sanitizer_probed" ]] && record sanitizer SKIP 0 "compute-sanitizer is not installed"; sanitizer_probed=no; return 0
  elif ((!built)); then
    [[ -z "$sanitizer_probed" ]] && record sanitizer SKIP 0 "nothing built"; sanitizer_probed=no; return 0
  fi
  if [[ -z "$sanitizer_probed" ]]; then
    # The probe takes its few seconds from the slot of the first tool that has one.
    while ((${#chosen[@]})); do
      plan_take "sanitizer-${chosen[0]}"
      [[ "$slot_mode" != skip ]] && break
      record "sanitizer-${chosen[0]}" SKIP 0 "$slot_note"
      chosen=("${chosen[@]:1}")
    done
    ((${#chosen[@]})) || { sanitizer_probed=no; return 0; }
    if sanitizer_probe "$slot_seconds"; then sanitizer_probed=yes; else sanitizer_probed=refused; fi
  fi
  for tool in "${chosen[@]}"; do
    case "$sanitizer_probed" in
      yes) sanitize_tool "$tool" ;;
      refused) record "sanitizer-$tool" SKIP 0 "$sanitizer_refused" ;;
    esac
  done
  return 0
}

sanitize_tool() {
  case "$1" in
    memcheck) sanitize memcheck "--leak-check full" "${memcheck_specs[@]}" ;;
    racecheck) sanitize racecheck "" "${racecheck_specs[@]}" ;;
    initcheck) sanitize initcheck "" "${initcheck_specs[@]}" ;;
  esac
}
