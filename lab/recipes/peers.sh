#!/usr/bin/env bash
# GPU step (issue 6): peers and floors, and the stage breakdown, on numba-cuda 0.30.4 and 0.29.0.
#
#   bash gpu/peers.sh "$RESULTS"
#
# For each of /tmp/env030 and /tmp/env029 (built by gpu/setup_env.sh envs):
#   launchbench peers      numba-cuda k[1,1], CuPy RawKernel, cuda.core launch and the C
#                          cuLaunchKernel floor, 0..4 args, interleaved -> peers-<env>.json
#   launchbench breakdown  numba-cuda's launch stage by stage        -> breakdown-<env>.json
# then the GPU-marked tests of this area (env030), and a summary. About 4 minutes;
# every command has its own timeout and a failure does not stop the rest. Python runs
# with -P so the installed launchbench (with its built _floor) is used, not the checkout.
set -u
export PYTHONUNBUFFERED=1 NUMBA_CUDA_LOW_OCCUPANCY_WARNINGS=0
RESULTS=${1:?usage: bash gpu/peers.sh RESULTS_DIR}
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
    py=/tmp/$env/bin/python
    if [ ! -x "$py" ]; then
        echo "SKIP $env: $py missing (run gpu/setup_env.sh envs first)" | tee -a "$RESULTS/command.txt"
        continue
    fi
    step "peers-$env" 110 "$py" -P -m launchbench peers --loops 10000 --repeats 5 --rounds 3 \
        --output "$RESULTS/peers-$env.json"
done
for env in env030 env029; do
    py=/tmp/$env/bin/python
    [ -x "$py" ] || continue
    step "breakdown-$env" 80 "$py" -P -m launchbench breakdown --loops 5000 --repeats 3 --rounds 3 \
        --output "$RESULTS/breakdown-$env.json"
done
if [ -x /tmp/env030/bin/python ]; then
    step "pytest-gpu-env030" 90 /tmp/env030/bin/python -P -m pytest -q -m gpu -p no:cacheprovider \
        tests/test_floor.py tests/test_peers.py tests/test_breakdown.py
fi

echo "=== summary"
for env in env030 env029; do
    py=/tmp/$env/bin/python
    [ -x "$py" ] || continue
    "$py" -P - "$RESULTS" "$env" <<'PY' 2>&1 | tee -a "$RESULTS/summary.txt"
import json, os, sys
from launchbench.commands.peers import format_table
from launchbench.output.breakdown import format_breakdown
results, env = sys.argv[1], sys.argv[2]
for kind, fmt in (("peers", format_table), ("breakdown", format_breakdown)):
    path = os.path.join(results, f"{kind}-{env}.json")
    if not os.path.exists(path):
        print(f"[{env}] {kind}: no JSON (see {kind}-{env}.log)")
        continue
    with open(path) as fh:
        doc = json.load(fh)
    version = doc.get("versions", {}).get("numba-cuda") or doc.get("numba_cuda")
    print(f"[{env}] numba-cuda {version}")
    print(fmt(doc))
    print()
PY
done
