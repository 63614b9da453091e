#!/usr/bin/env bash
# launchbench history / bisect over the real upstream range on the GPU machine.
#
#   HIST_RUNS="bisect history" bash lab/recipes/history.sh "$RESULTS"
#
# Needs `bash lab/recipes/setup_env.sh stage` (wheels in $LB_WHEELS, per-commit wheels in
# $LB_WCACHE, the numba-cuda clone in $LB_CLONE) and `bash lab/recipes/setup_env.sh base`
# ($LB_ENV_BASE). Per-commit envs are made from $LB_ENV_BASE by launchbench itself
# (--python $LB_ENV_BASE/bin/python --system-site-packages): each holds only its
# commit's numba-cuda wheel and sees the pins and the host's CUDA packages behind it.
# The wheels were built on the CPU machine (Python 3.12) by launchbench's WheelCache;
# nothing is built here.
. "$(dirname "${BASH_SOURCE[0]}")/settings.sh"
set -u
export PYTHONUNBUFFERED=1 NUMBA_CUDA_LOW_OCCUPANCY_WARNINGS=0
unset NUMBA_ENABLE_CUDASIM
RESULTS=${1:-$LB_STEPS_DIR/history}
mkdir -p "$RESULTS"
RESULTS=$(cd "$RESULTS" && pwd)
PY=${LB_PY:-$LB_ENV_BASE/bin/python}
RANGE_A=${HIST_A:-v0.29.0}
RANGE_B=${HIST_B:-v0.30.4}
ENVS="--python $PY --system-site-packages --wheels $LB_WHEELS --wheel-cache $LB_WCACHE --env-dir $LB_ENV_DIR"
touch "$RESULTS/command.txt"

run() {  # run NAME ARGS...
    local name=$1; shift
    local cmd=("$PY" -m launchbench "$@" $ENVS -o "$RESULTS/$name.json")
    echo "${cmd[*]}" >> "$RESULTS/command.txt"
    echo "=== $name: ${cmd[*]}"
    local start=$(date +%s)
    "${cmd[@]}" > "$RESULTS/$name.log" 2> "$RESULTS/$name.err"
    local rc=$?
    echo "rc=$rc wall=$(( $(date +%s) - start ))s" | tee -a "$RESULTS/$name.log"
    cat "$RESULTS/$name.log"
    grep -v "^launchbench: round" "$RESULTS/$name.err" | tail -n 12
}

for what in ${HIST_RUNS:-bisect history}; do
    case $what in
        bisect) run bisect bisect $LB_CLONE "$RANGE_A" "$RANGE_B" ${BISECT_ARGS:-} ;;
        history) run history history $LB_CLONE "$RANGE_A..$RANGE_B" --asv-results "$RESULTS/asv-results" \
                     ${HIST_ARGS:---rounds 40 --warmup 300 --max-time 330} ;;
        *) echo "unknown run $what (bisect, history)" ;;
    esac
done
gzip -kf "$RESULTS"/*.json 2>/dev/null
rm -f "$RESULTS"/history.json "$RESULTS"/bisect.json  # the .gz copies come back; logs stay
