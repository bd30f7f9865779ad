# shellcheck shell=bash
# scripts/gpu-check's time plan: how the optional steps (the benchmarks, then compute-sanitizer's
# memcheck, racecheck and initcheck) share what is left of --budget once the tests have ended.
#
# Each optional step has two slots, in seconds: its quick slot (a benchmark's --quick run, or the
# least a sanitizer tool starts with) and its full slot (a full benchmark run, or the most a
# sanitizer tool may take). A benchmark's slot is its time limit; a sanitizer tool stops at its
# deadline (the suites it did not reach are named).
#
# When the tests end, the steps that run are planned in order: the first ones whose quick slots
# fit in the time left are GUARANTEED that slot (their sum is kept for them). Then, at each
# step's turn:
#   - full run  when the time left still holds the quick slots of all the steps after it and
#               the full slots of the later ones that come before it in plan_upgrade_order (the
#               newest benchmarks get spare time first; no full run takes a later step's quick
#               slot, the sanitizer's included);
#   - quick run when it still holds the guaranteed quick slots after it;
#   - otherwise SKIP, saying how much was left and how much was kept for the steps after it.
# A step that ends early leaves its time to the steps after it (a sanitizer tool takes all it can).
#
# THE ARITHMETIC of one default run on a lent H200 host (16 cores; these are estimates, no run
# has been recorded yet; gpu-check --dry-run prints the plan with the budget it was given):
#   required steps, from the start:
#     preflight + environment     ~10 s  (a CMake probe; the environment log imports torch)
#     configure                   ~20 s  (CUDA compiler checks, cuDNN, NCCL, Python)
#     build                       ~45 s  290 translation units for sm_90: 86 header checks at
#                                        ~0.45 CPU-s, 204 others at ~2.1 CPU-s (8 .cu among them,
#                                        ~1.5 s each), measured one by one without a cache on an
#                                        EPYC core: ~475 CPU-s + ~60 links ~ 520 CPU-s / 16 cores
#                                        = 33 s, x1.3 for the waits on libraries
#     tests                       ~60 s  216 [gpu] Catch2 entries (~1.5 s each with CUDA, cuBLAS
#                                        and cuDNN set-up: ~325 process-s / 16) and 95 example
#                                        entries; the longest alone: the copied example's install,
#                                        configure and build (~40 s)
#     the tests end at           ~135-140 s (pessimistic: 260 s, with build 90 s and tests 120 s)
#   optional steps, until the budget (400 s):  400 - 140 = ~260 s
#     step          quick  full   a quick run is expected to take (limits are twice that or so)
#     gemm           30     90    ~15 s: 2 sizes x 4 precisions, torch.mm, OpenBLAS at 1000
#     conv           45     90    ~25 s: cuDNN's timed searches, torch with cudnn.benchmark
#     train          45    100    ~30 s: 2 epochs on 2,000 images, cudagap twice, torch eager
#     infer          45     90    ~30 s: 100 requests x 3 batch sizes, 4 parts (--budget 40 s)
#     allreduce      30     60    ~15 s: 3 sizes, one rank, torch.distributed's set-up
#     alloc          20     45    ~10 s        overhead   20   45   ~5 s
#     memcheck       45    150    (the probe, then core, blas, nn, dnn: as far as it gets)
#     racecheck      20     90    initcheck  20   90
#     the benchmarks' quick slots: 235 s <= 260 s, so all seven are guaranteed; with the
#       sanitizer's 85 s (320 s) not all: the sanitizer runs on what the benchmarks leave
#     expected run (each quick run takes half its slot): all seven --quick (gemm and conv would
#       need 60 s and 45 s more for full runs, train 55 s), then memcheck ~104 s, racecheck and
#       initcheck 20 s each
#     pessimistic (140 s left): gemm, conv and train are guaranteed (120 s); infer, allreduce
#       and alloc run --quick on what those leave, overhead and the sanitizer do not (SKIP with
#       the seconds that were left)
#     plenty (400 s left): train, infer and allreduce full, memcheck to its 150 s where they
#       leave it
#   the end: budget 400 s + at most 10 s for a step's kill + results and plot (~10 s, at most
#     40 s) ~ 420 s; the hard end (budget + 120 = 520 s) bounds configure, build and tests (they
#     stop by 430 and 475 s) and so the whole run, inside the 540 s the lending call allows.

# "<quick> <full>" of each optional step.
declare -A plan_slots=(
  [bench-gemm]="30 90" [bench-conv]="45 90" [bench-train]="45 100" [bench-infer]="45 90"
  [bench-allreduce]="30 60" [bench-alloc]="20 45" [bench-overhead]="20 45"
  [sanitizer-memcheck]="45 150" [sanitizer-racecheck]="20 90" [sanitizer-initcheck]="20 90"
)
# A benchmark this plan does not name yet.
plan_default_slots="30 45"
# Who gets spare time for a full run first: the newest benchmarks, then memcheck's longer run (its
# slowest suite, the cuDNN convolution trials, comes last), then gemm and conv, whose quick runs
# already give their headline numbers, then the host-side two.
plan_upgrade_order=(bench-train bench-infer bench-allreduce sanitizer-memcheck bench-conv bench-gemm bench-alloc
  bench-overhead)

plan_order=()
declare -A plan_guaranteed=()

plan_quick() { local slots="${plan_slots[$1]:-$plan_default_slots}"; echo "${slots% *}"; }
plan_full() { local slots="${plan_slots[$1]:-$plan_default_slots}"; echo "${slots#* }"; }

# The place of <step> in plan_upgrade_order (a step not in it comes after all of them).
plan_upgrade_rank() {
  local i
  for i in "${!plan_upgrade_order[@]}"; do [[ "${plan_upgrade_order[$i]}" == "$1" ]] && { echo "$i"; return; }; done
  echo 99
}

# plan_set_steps <step...>: the optional steps this run will take, in order; none guaranteed yet.
plan_set_steps() {
  plan_order=("$@")
  declare -gA plan_guaranteed=()
}

# plan_optional <seconds left>: guarantees the first steps whose quick slots fit; sets
# plan_kept (their sum) and writes the plan, one step a line, to stdout.
plan_optional() {
  local left="$1" step quick sum=0 stop=0
  plan_kept=0
  for step in "${plan_order[@]}"; do
    quick="$(plan_quick "$step")"
    if ((!stop && sum + quick <= left)); then
      plan_guaranteed[$step]=1; sum=$((sum + quick))
    else
      stop=1
    fi
  done
  # shellcheck disable=SC2034 # read by scripts/gpu-check's plan step
  plan_kept="$sum"
  printf '%ss of the budget left when the optional steps start; quick slots guaranteed: %ss\n' "$left" "$sum"
  printf '%-20s %6s %6s  %s\n' step quick full planned
  for step in "${plan_order[@]}"; do
    printf '%-20s %5ss %5ss  %s\n' "$step" "$(plan_quick "$step")" "$(plan_full "$step")" \
      "$([[ -n "${plan_guaranteed[$step]:-}" ]] && echo "guaranteed its quick slot" ||
        echo "only if the steps before it leave the time")"
  done
}

# plan_kept_after <step> <rank>: the seconds kept for the steps after <step>. With <rank> -1:
# the quick slots of the guaranteed ones. Otherwise (for a full run of <step>, whose upgrade rank
# is <rank>): the quick slots of all of them, and the extra for a full run of those whose upgrade
# rank is below <rank>.
plan_kept_after() {
  local step="$1" rank="$2" seen=0 other kept=0
  for other in "${plan_order[@]}"; do
    if ((seen)) && { ((rank >= 0)) || [[ -n "${plan_guaranteed[$other]:-}" ]]; }; then
      kept=$((kept + $(plan_quick "$other")))
      (($(plan_upgrade_rank "$other") < rank)) && kept=$((kept + $(plan_full "$other") - $(plan_quick "$other")))
    fi
    [[ "$other" == "$step" ]] && seen=1
  done
  echo "$kept"
}

# plan_slot <step> <seconds left>: sets slot_mode (full, quick, skip), slot_seconds and slot_note
# for <step> now (see the top of this file). With quick=1 (--quick) no benchmark runs full.
plan_slot() {
  local step="$1" left="$2" quick_slot full_slot kept kept_full room
  quick_slot="$(plan_quick "$step")"; full_slot="$(plan_full "$step")"
  kept="$(plan_kept_after "$step" -1)"
  kept_full="$(plan_kept_after "$step" "$(plan_upgrade_rank "$step")")"
  room=$((left - kept))
  slot_note="${left}s of the ${budget}s time budget left, ${kept}s kept for the steps after it"
  if [[ "$step" == sanitizer-* ]]; then
    # As long as it may, and no longer than leaves every later tool its quick slot; when that
    # is too short, the earlier tool (memcheck first) goes before the later ones.
    kept_full="$(plan_kept_after "$step" 0)"
    slot_mode=full; slot_seconds="$(min "$full_slot" $((left - kept_full)))"
    slot_note="${left}s of the ${budget}s time budget left, ${kept_full}s kept for the steps after it"
    ((slot_seconds >= quick_slot)) && return 0
    slot_seconds="$(min "$full_slot" "$room")"
    if ((slot_seconds >= quick_slot)) || { [[ -n "${plan_guaranteed[$step]:-}" ]] && ((slot_seconds >= 20)); }; then
      slot_note="${left}s of the ${budget}s time budget left, too few to keep the later tools' quick slots: it goes first"
      return 0
    fi
    slot_note="${left}s of the ${budget}s time budget left, ${kept}s kept for the steps after it"
  elif ((!quick && left - kept_full >= full_slot)); then
    slot_mode=full; slot_seconds="$full_slot"
    slot_note="${left}s of the ${budget}s time budget left, ${kept_full}s kept for the steps after it"
    return 0
  elif ((room >= quick_slot)); then
    slot_mode=quick; slot_seconds="$quick_slot"
    slot_note="--quick in its ${quick_slot}s slot: ${left}s left, and a full run (${full_slot}s) would cut"
    slot_note+=" into the ${kept_full}s kept for the steps after it"
    return 0
  elif [[ -n "${plan_guaranteed[$step]:-}" ]] && ((room >= 10)); then
    slot_mode=quick; slot_seconds="$room"; return 0  # its slot, less what the steps before it overran
  fi
  slot_mode=skip; slot_seconds=0
  slot_note="not run: $slot_note, and it needs ${quick_slot}s"
}

# plan_take <step>: plan_slot with the seconds left of the budget now, the decision added to
# logs/plan.log.
plan_take() {
  plan_slot "$1" "$(remaining)"
  printf '%s at %ss: %s %ss (%s)\n' "$1" "$(elapsed)" "$slot_mode" "$slot_seconds" "$slot_note" >> "$work/logs/plan.log"
}

# The plan in a few lines, for --dry-run: each step's slots, and when the tests must end for the
# quick slots to be guaranteed.
plan_describe() {
  local step benches=0 all=0 line=""
  for step in "${plan_order[@]}"; do
    all=$((all + $(plan_quick "$step")))
    [[ "$step" == bench-* ]] && benches=$((benches + $(plan_quick "$step")))
    line+=" ${step#*-} $(plan_quick "$step")/$(plan_full "$step")"
  done
  ((${#plan_order[@]})) || { echo "  time plan          no optional step"; return 0; }
  echo "  time plan          the optional steps share what is left of the ${budget}s budget after the tests;"
  echo "                     slots quick/full in s:$line"
  if ((benches > budget)); then  # a small --limit: not even the quick runs all fit
    echo "                     the benchmarks' quick slots (${benches}s) are more than the ${budget}s budget: the first"
    echo "                     that fit in what the tests leave run, the others are SKIP; spare time goes to full runs in"
  else
    echo "                     the benchmarks' quick slots (${benches}s) are all kept when the tests end by $((budget - benches))s,"
    echo "                     with the sanitizer's ($((all - benches))s) by $((budget - all))s; spare time goes to full runs in"
  fi
  echo "                     this order: ${plan_upgrade_order[*]}"
}
