#!/usr/bin/env bash
# launchbench pr on the real upstream clone: is the pull request right (LC-S
# conformance under its head and its base), and what does it cost (compare's
# method and gate)?
#
#   PR_CASES="pr897 v2" bash lab/recipes/pr.sh "$RESULTS"
#
#   pr897: launchbench pr $LB_CLONE pull-request/897      (base = merge base with main, 5013eaf5)
#   v2:    launchbench pr $LB_CLONE 05922fc4 --base de4642c2
#
# Needs `bash lab/recipes/setup_env.sh stage base` ($LB_WHEELS, $LB_WCACHE, $LB_CLONE, $LB_ENV_BASE).
# The four commits' wheels must already be in $LB_WCACHE (history's cache layout:
# $LB_WCACHE/<full sha>/<wheel> + launchbench-wheel.json), built on the CPU machine with
#   launchbench pr CLONE REF [--base B] --build-only --python python3.12 --wheel-cache DIR
# so nothing is built here. Each case is capped at PR_CASE_S seconds (default 240).
. "$(dirname "${BASH_SOURCE[0]}")/settings.sh"
set -u
export PYTHONUNBUFFERED=1 NUMBA_CUDA_LOW_OCCUPANCY_WARNINGS=0
unset NUMBA_ENABLE_CUDASIM
RESULTS=${1:-$LB_STEPS_DIR/pr}
mkdir -p "$RESULTS"
RESULTS=$(cd "$RESULTS" && pwd)
PY=${LB_PY:-$LB_ENV_BASE/bin/python}
CLONE=${PR_CLONE:-$LB_CLONE}
ENVS=(--python "$PY" --system-site-packages --wheels $LB_WHEELS --wheel-cache $LB_WCACHE --env-dir $LB_ENV_DIR)
# the gate at 5 %, at most 80 s of rounds; each conformance run at most 90 s (env set-up on top)
read -r -a MEAS <<< "${PR_ARGS:---fail-if-slower 5 --rounds 60 --max-time 80 --conformance-timeout 90}"
touch "$RESULTS/command.txt"

case_run() {  # case_run NAME ARGS...
    local name=$1; shift
    local out="$RESULTS/$name"
    local cmd=("$PY" -m launchbench pr "$@" "${ENVS[@]}" "${MEAS[@]}" --out "$out")
    echo "${cmd[*]}" >> "$RESULTS/command.txt"
    echo "=== $name: ${cmd[*]}"
    local start=$(date +%s)
    timeout --signal=INT --kill-after=15 "${PR_CASE_S:-240}" "${cmd[@]}" > "$RESULTS/$name.log" 2> "$RESULTS/$name.err"
    local rc=$?
    echo "rc=$rc wall=$(( $(date +%s) - start ))s" | tee -a "$RESULTS/$name.log" "$RESULTS/status.txt"
    # the verdict lines come first in the report's stdout
    sed -n '1,/^$/p' "$RESULTS/$name.log" | head -n 20
    grep -v "^launchbench: round" "$RESULTS/$name.err" | tail -n 8
}

for what in ${PR_CASES:-pr897 v2}; do
    case $what in
        pr897) case_run pr897 "$CLONE" pull-request/897 ;;
        v2) case_run v2 "$CLONE" 05922fc4 --base de4642c2 ;;
        *) echo "unknown case $what (pr897, v2)" ;;
    esac
done
gzip -kf "$RESULTS"/*/pr.json 2>/dev/null
rm -f "$RESULTS"/*/pr.json  # the .gz copies come back; the reports and logs stay
