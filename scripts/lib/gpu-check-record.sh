# shellcheck shell=bash
# scripts/gpu-check's bookkeeping: the steps so far, their logs, and what goes back to the person
# who ran it. After every step the summary is rewritten and the archive re-packed, so that a run
# cut off by the host's time limit still returns what it did.
#
# Needs (set by scripts/gpu-check): out, work, archive_name, tools, python, start_time, budget,
# hard_end, quick, have_gpu, gpu_names, no_gpu_reason, only, commit.

step_names=()
step_status=()
step_seconds=()
step_notes=()
cut_note=""   # which files the last pack cut, said in the summary

elapsed() { echo $(($(date +%s) - start_time)); }

# The seconds an optional step may still take (the --budget), or 0 when it is spent.
remaining() { local left=$((budget - $(elapsed))); ((left > 0)) && echo "$left" || echo 0; }

# The seconds a required step (configure, build, tests) may still take: up to the hard end, less
# <reserve> for what must follow it, and at least <minimum>.
required_left() { # reserve minimum
  local left=$((hard_end - $(elapsed) - $1))
  ((left > $2)) && echo "$left" || echo "$2"
}

record() { # name status seconds note (one line: newlines and tabs become spaces)
  local note="${4//[$'\n\t']/ }"
  step_names+=("$1"); step_status+=("$2"); step_seconds+=("$3"); step_notes+=("$note")
  say "$(printf '%-24s %-6s %4ss  %s' "$1" "$2" "$3" "$note")"
  pack_files
  write_summary "" "INCOMPLETE: gpu-check had not finished when this was written (last step: $1)"
}

# run_logged <name> <timeout seconds> <command...>: runs the command with its output in
# <work>/logs/<name>.log; sets last_rc (124 on timeout) and last_seconds.
last_rc=0
last_seconds=0
run_logged() {
  local name="$1" limit="$2"; shift 2
  local log="$work/logs/$name.log" begin
  begin="$(date +%s)"
  say "running $name: $*"
  {
    printf '$ %s\n' "$*"
    printf '(started %s, time limit %ss)\n\n' "$(date -u +%H:%M:%SZ)" "$limit"
  } > "$log"
  timeout --kill-after=10 "$limit" "$@" >> "$log" 2>&1
  last_rc=$?
  last_seconds=$(($(date +%s) - begin))
  printf '\n(exit code %s after %ss)\n' "$last_rc" "$last_seconds" >> "$log"
}

# Packs <work> into <out>/<archive_name> (a temporary name first, then renamed). Files too big
# for what comes back are cut, keeping their start and end, and the summary says so.
pack_files() {
  local archive="$out/$archive_name" partial="$out/.$archive_name.partial" cut
  if [[ -n "$python" ]]; then
    cut="$("$python" "$tools" pack "$work" "$archive" 2>&1)" || say "packing failed: $cut"
    cut_note="$(printf '%s' "$cut" | grep '^cut ' | sed 's/^cut //' | paste -sd',' - | sed 's/,/, /g')"
  else  # no python3 (the preflight fails then): the logs are small, a plain tar does
    tar -C "$(dirname "$work")" -czf "$partial" "$(basename "$work")" && mv -f "$partial" "$archive"
  fi
}

# The Markdown summary of the steps so far, with the verdict.
summary_markdown() { # exit code, verdict
  local i mode="full"
  ((quick)) && mode="quick"
  echo "# gpu-check summary"
  echo
  printf '%s, %s, %s, commit %s, %s mode%s, %ss in all.\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)" \
    "$(uname -n)" "$( ((have_gpu)) && printf '%s' "$gpu_names" | head -1 || echo "no GPU: $no_gpu_reason")" \
    "$commit" "$mode" "${only:+, --only $only}" "$(elapsed)"
  echo
  echo "| step | status | duration | note |"
  echo "|---|---|---|---|"
  for i in "${!step_names[@]}"; do
    printf '| %s | %s | %ss | %s |\n' "${step_names[$i]}" "${step_status[$i]}" "${step_seconds[$i]}" \
      "$(printf '%s' "${step_notes[$i]}" | sed 's/|/\\|/g')"
  done
  echo
  echo "**Verdict** (exit code ${1:-not known yet}): $2"
  [[ -f "$out/results.md" ]] && { echo; echo "Benchmark tables and targets: [results.md](results.md)."; }
  echo
  echo "Everything else (each step's full log, the benchmarks' JSON reports, ctest's JUnit XML"
  echo "tests.xml and multi-gpu.xml, CMakeCache.txt) is in \`$archive_name\`: \`tar -xzf $archive_name\` unpacks"
  echo "it into \`${archive_name%%.*}/\` (\`logs/<step>.log\`, \`bench/<name>.json\`, ...)."
  if [[ -n "$cut_note" ]]; then
    echo "Cut to their first and last parts to fit what comes back: $cut_note."
  fi
  # What the probe found (scripts/lib/gpu-check-probe.sh), from the first summary on.
  if [[ -f "$work/probe.md" ]]; then
    echo
    cat "$work/probe.md"
  fi
}

# write_summary <exit code> <verdict>: summary.md and summary.json, each written under a
# temporary name and then renamed. Exit code empty: not finished.
write_summary() {
  local code="$1" verdict="$2" i
  summary_markdown "$code" "$verdict" > "$out/.summary.md.partial" && mv -f "$out/.summary.md.partial" "$out/summary.md"
  [[ -n "$python" ]] || return 0
  for i in "${!step_names[@]}"; do
    printf '%s\t%s\t%s\t%s\n' "${step_names[$i]}" "${step_status[$i]}" "${step_seconds[$i]}" "${step_notes[$i]}"
  done | "$python" "$tools" summary-json "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$(uname -n)" \
    "$( ((have_gpu)) && printf '%s' "$gpu_names" | head -1 || echo "")" "$quick" "$(elapsed)" \
    "$code" "$verdict" "archive=$archive_name" "commit=$commit" "only=$only" \
    > "$out/.summary.json.partial" && mv -f "$out/.summary.json.partial" "$out/summary.json"
}

# The verdict and the exit code from the steps' statuses.
verdict_of() { # sets code and verdict
  local status i late=()
  code=0
  for status in "${step_status[@]}"; do [[ "$status" == FAIL ]] && code=1; done
  if ((code)); then
    verdict="FAILED: see the steps marked FAIL, and their logs in $archive_name"
  elif ((!have_gpu)); then
    code=3
    verdict="NO GPU here ($no_gpu_reason): the build, the examples and the benchmarks' CPU parts ran and passed; the [gpu] tests, the sanitizer and the GPU benchmarks did not run"
  else
    verdict="PASSED: everything that ran on $(printf '%s' "$gpu_names" | head -1) passed"
    for i in "${!step_names[@]}"; do
      [[ "${step_status[$i]}" == SKIP && "${step_notes[$i]}" == *"time budget"* ]] && late+=("${step_names[$i]}")
    done
    ((${#late[@]})) && verdict+="; not run or cut short for lack of time (--budget ${budget}s): ${late[*]}"
  fi
  return 0
}

# finish <exit code> <verdict>: the last summary and archive, the short table, then exit.
finish() {
  local code="$1" verdict="$2" i
  pack_files
  write_summary "$code" "$verdict"
  echo
  echo "gpu-check: $out"
  printf '  %-24s %-6s %6s  %s\n' step status time note
  for i in "${!step_names[@]}"; do
    printf '  %-24s %-6s %5ss  %s\n' "${step_names[$i]}" "${step_status[$i]}" "${step_seconds[$i]}" \
      "$(printf '%s' "${step_notes[$i]}" | cut -c1-150)"
  done
  if [[ -f "$out/results.json" && -n "$python" ]]; then
    echo
    echo "  targets (details in results.md):"
    "$python" "$root/bench/harness/results.py" targets "$out/results.json" 2>&1 | sed 's/^/    /'
  fi
  echo
  echo "gpu-check: files: $(find "$out" -maxdepth 1 -type f ! -name ".*" -printf "%f\n" | sort | paste -sd" " -) (logs: tar -xzf $archive_name)"
  echo "gpu-check: $verdict ($(elapsed)s)"
  exit "$code"
}
