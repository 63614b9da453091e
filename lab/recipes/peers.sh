#!/usr/bin/env bash
# GPU step (issue 6): peers and floors, and the stage breakdown, on numba-cuda 0.30.4 and 0.29.0.
#
#   bash lab/recipes/peers.sh "$RESULTS"
#
# For each of $LB_ENV030 and $LB_ENV029 (built by lab/recipes/setup_env.sh envs):
#   launchbench peers      numba-cuda k[1,1], CuPy RawKernel, cuda.core launch and the C
#                          cuLaunchKernel floor, 0..4 args, interleaved -> peers-<env>.json
#   launchbench breakdown  numba-cuda's launch stage by stage        -> breakdown-<env>.json
# then the GPU-marked tests of this area (env030), and a summary. About 4 minutes;
# every command has its own timeout and a failure does not stop the rest. Python runs
# with -P so the installed launchbench (with its built _floor) is used, not the checkout.
. "$(dirname "${BASH_SOURCE[0]}")/settings.sh"
set -u
export PYTHONUNBUFFERED=1 NUMBA_CUDA_LOW_OCCUPANCY_WARNINGS=0
RESULTS=${1:?usage: bash lab/recipes/peers.sh RESULTS_DIR}
mkdir -p "$RESULTS"
: > "$RESULTS/command.txt"

step() {  # step NAME SECONDS CMD...
    local name=$1 limit=$2
    shift 2
    echo "timeout $limit $*" >> "$RESULTS/command.txt"
    echo "=== $name $(date -u +%H:%M:%S)"
    timeout --signal=INT --kill-after=10 "$limit" "$@" > "$RESULTS/$name.log" 2>&1
    local rc=$?
    echo "rc=$rc" >> "$RESULTS/$name.log"
    tail -n 30 "$RESULTS/$name.log"
}

for env in env030 env029; do
    py=$LB_TMP/$env/bin/python
    if [ ! -x "$py" ]; then
        echo "SKIP $env: $py missing (run lab/recipes/setup_env.sh envs first)" | tee -a "$RESULTS/command.txt"
        continue
    fi
    step "peers-$env" 110 "$py" -P -m launchbench peers --loops 10000 --repeats 5 --rounds 3 \
        --output "$RESULTS/peers-$env.json"
done
for env in env030 env029; do
    py=$LB_TMP/$env/bin/python
    [ -x "$py" ] || continue
    step "breakdown-$env" 80 "$py" -P -m launchbench breakdown --loops 5000 --repeats 3 --rounds 3 \
        --output "$RESULTS/breakdown-$env.json"
done
if [ -x $LB_ENV030/bin/python ]; then
    step "pytest-gpu-env030" 90 $LB_ENV030/bin/python -P -m pytest -q -m gpu -p no:cacheprovider \
        tests/test_floor.py tests/test_peers.py tests/test_breakdown.py
fi

echo "=== summary"
for env in env030 env029; do
    py=$LB_TMP/$env/bin/python
    [ -x "$py" ] || continue
    "$py" -P "$LAB_RECIPES/steps.py" peers_summary "$RESULTS" "$env" 2>&1 | tee -a "$RESULTS/summary.txt"
done
