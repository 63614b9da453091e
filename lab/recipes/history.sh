#!/usr/bin/env bash
# launchbench history / bisect over the real upstream range on the GPU machine.
#
#   HIST_RUNS="bisect history" bash gpu/history.sh "$RESULTS"
#
# Needs `bash gpu/setup_env.sh stage` (wheels in /tmp/wheels, per-commit wheels in
# /tmp/wcache, the numba-cuda clone in /tmp/nc) and `bash gpu/setup_env.sh base`
# (/tmp/env-base). Per-commit envs are made from /tmp/env-base by launchbench itself
# (--python /tmp/env-base/bin/python --system-site-packages): each holds only its
# commit's numba-cuda wheel and sees the pins and the host's CUDA packages behind it.
# The wheels were built on the CPU machine (Python 3.12) by launchbench's WheelCache;
# nothing is built here.
set -u
export PYTHONUNBUFFERED=1 NUMBA_CUDA_LOW_OCCUPANCY_WARNINGS=0
unset NUMBA_ENABLE_CUDASIM
RESULTS=${1:-results/gpu/history}
mkdir -p "$RESULTS"
RESULTS=$(cd "$RESULTS" && pwd)
PY=${LB_PY:-/tmp/env-base/bin/python}
RANGE_A=${HIST_A:-v0.29.0}
RANGE_B=${HIST_B:-v0.30.4}
ENVS="--python $PY --system-site-packages --wheels /tmp/wheels --wheel-cache /tmp/wcache --env-dir /tmp/lbenvs"
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
        bisect) run bisect bisect /tmp/nc "$RANGE_A" "$RANGE_B" ${BISECT_ARGS:-} ;;
        history) run history history /tmp/nc "$RANGE_A..$RANGE_B" --asv-results "$RESULTS/asv-results" \
                     ${HIST_ARGS:---rounds 40 --warmup 300 --max-time 330} ;;
        *) echo "unknown run $what (bisect, history)" ;;
    esac
done
gzip -kf "$RESULTS"/*.json 2>/dev/null
rm -f "$RESULTS"/history.json "$RESULTS"/bisect.json  # the .gz copies come back; logs stay
