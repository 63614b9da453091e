#!/usr/bin/env bash
# Kernel arguments as users pass them (issue 22): numba-cuda 0.29.0 vs 0.30.4 with float32[1]
# device arrays, CuPy arrays and torch CUDA tensors, lazily dispatched (cuda.jit(k)) and eagerly
# (cuda.jit("void(float32[::1], ...)")(k)), at 0,1,2,4,8,16,26 arguments; then a paired
# breakdown per kind (lazy) for which stage of the launch makes the difference.
#
#   bash lab/recipes/argkinds.sh "$RESULTS"          # about 6 min wall in all (AK_TOTAL_S, default 345)
#
# Six compares of AK_COMPARE_S seconds of measurement each (default 22) and three breakdowns of
# AK_BREAKDOWN_S (default 25) at 0,8,26 args over a dozen stages; each run's cap shrinks to what
# is left of AK_TOTAL_S, and a run that cannot get AK_MIN_S (12) is skipped and says so.
# Variants are the prepared envs (AK_V029=$LB_ENV029, AK_V030=$LB_ENV030): their .pth appends
# the host's site-packages after their own pins, which is how they see the host's CuPy and torch
# (lab/recipes/setup_env.sh). A kind whose package is missing fails its runs with a one-line error.
# Writes <run>.json.gz, <run>.log/.err, command.txt, summary.txt, argkinds-summary.json and
# results-section.md into $RESULTS; prints per kind/dispatch the slope in µs per argument with
# its 95% interval per release and for 0.30.4 - 0.29.0, and the stages that differ most.
# Never exits non-zero on a failed run.
. "$(dirname "${BASH_SOURCE[0]}")/settings.sh"
set -u
export PYTHONUNBUFFERED=1 NUMBA_CUDA_LOW_OCCUPANCY_WARNINGS=0
unset NUMBA_ENABLE_CUDASIM
# AK_EXTRA adds options to every run; AK_EXTRA=--simulator (with AK_PY/AK_V029/AK_V030 set to a local venv)
# is the CPU dry run of the script's plumbing, not a measurement
EXTRA=${AK_EXTRA:-}
case " $EXTRA " in *" --simulator "*) export NUMBA_ENABLE_CUDASIM=1 ;; esac
RESULTS=${1:-$LB_STEPS_DIR/argkinds}
mkdir -p "$RESULTS"
RESULTS=$(cd "$RESULTS" && pwd)
PY=${AK_PY:-${LB_PY:-$LB_ENV030/bin/python}}
V029=${AK_V029:-$LB_ENV029}
V030=${AK_V030:-$LB_ENV030}
ARGS=${AK_ARGS:-0,1,2,4,8,16,26}
BD_ARGS=${AK_BD_ARGS:-0,8,26}
BD_STAGES=${AK_BD_STAGES:-full,configured_call,type_dispatch,typeof,cufunc_lookup,marshal_args,marshal_wrap,marshal_view,marshal_to_device,marshal_pack,launch_config,driver_launch,param_pack}
KINDS=${AK_KINDS:-array cupy torch}
TOTAL=${AK_TOTAL_S:-345}
MIN_S=${AK_MIN_S:-12}
START=$(date +%s)
: > "$RESULTS/command.txt"

# which kinds can run here at all (one line each; the runs of a missing kind still say why)
for k in $KINDS; do
    "$V030/bin/python" -c "from launchbench.workloads import argkinds as a
try:
    a.require('$k'); print('$k: available')
except a.ArgKindUnavailable as e:
    print('$k: UNAVAILABLE:', e)" 2>&1 | tail -n1
done

cap() {  # cap WANTED: seconds of measurement for the next run, within what is left of TOTAL
    local left=$(( TOTAL - ($(date +%s) - START) - 15 ))
    [ "$left" -lt "$1" ] && echo "$left" || echo "$1"
}

run() {  # run NAME COMMAND SECONDS ARGS...
    local name=$1 command=$2 want=$3; shift 3
    local seconds; seconds=$(cap "$want")
    if [ "$seconds" -lt "$MIN_S" ]; then
        echo "=== $name: skipped (only ${seconds}s of AK_TOTAL_S=${TOTAL} left)"
        echo "# $name skipped: out of time" >> "$RESULTS/command.txt"
        return
    fi
    local cmd=("$PY" -m launchbench "$command" --variant "v029=env:$V029" --variant "v030=env:$V030"
               --max-time "$seconds" --quiet $EXTRA "$@" -o "$RESULTS/$name.json")
    [ "$command" = compare ] && cmd+=(--no-report)
    echo "${cmd[*]}" >> "$RESULTS/command.txt"
    echo "=== $name (${seconds}s)"
    local t0=$(date +%s)
    # the hard stop: measurement cap + set-up of the first round and the write-out
    timeout --signal=INT --kill-after=10 $(( seconds + 45 )) "${cmd[@]}" > "$RESULTS/$name.log" 2> "$RESULTS/$name.err"
    echo "rc=$? wall=$(( $(date +%s) - t0 ))s" | tee -a "$RESULTS/$name.log"
    grep -h "error" "$RESULTS/$name.err" | tail -n 2
}

for k in $KINDS; do
    for d in lazy eager; do
        run "compare-$k-$d" compare "${AK_COMPARE_S:-22}" --args "$ARGS" --arg-kind "$k" --dispatch "$d"
    done
done
for k in $KINDS; do
    run "breakdown-$k" breakdown "${AK_BREAKDOWN_S:-25}" --args "$BD_ARGS" --arg-kind "$k" --stages "$BD_STAGES"
done

"$PY" -m launchbench.output.argkinds "$RESULTS" | tee "$RESULTS/summary.txt"
for f in "$RESULTS"/*.json; do  # the samples make them large
    case $f in *argkinds-summary.json) ;; *) [ -f "$f" ] && gzip -f "$f" ;; esac
done
echo "argkinds: total wall $(( $(date +%s) - START ))s"
exit 0
