#!/usr/bin/env bash
# GPU step: first looks that decide designs (2026-11-24), not results to quote as measurements.
#
#   bash lab/recipes/probes.sh RESULTS_DIR
#
# 1. probe_smoke.py mlir ($LB_ENV_MLIR), args ($LB_ENV029, $LB_ENV030: CuPy/torch arguments), both.
# 2. asv_reference_probe.py spawn: 0.29.0 and 0.30.4 in alternating fresh processes, each sampling
#    numba-cuda k[1, 1] at 0 and 4 args interleaved with four references (issue 20's normalization).
# 3. asv_reference_probe.py fork: per-process cost with numba-cuda imported before fork.
# About 5 minutes (PROBE_PROCESSES=16 per release, ~5 s each).
. "$(dirname "${BASH_SOURCE[0]}")/settings.sh"
set -u
export PYTHONUNBUFFERED=1 NUMBA_CUDA_LOW_OCCUPANCY_WARNINGS=0
unset NUMBA_ENABLE_CUDASIM
RESULTS=${1:?usage: bash lab/recipes/probes.sh RESULTS_DIR}
mkdir -p "$RESULTS"; RESULTS=$(cd "$RESULTS" && pwd)
: > "$RESULTS/command.txt"; : > "$RESULTS/status.txt"
. "$(dirname "$0")/lib.sh"
N=${PROBE_PROCESSES:-16}
{ nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv; nproc; lscpu | grep -E 'Model name|^CPU\(s\)'; } > "$RESULTS/machine.txt" 2>&1
run 90 "$RESULTS/smoke-mlir.log" $LB_ENV_MLIR/bin/python lab/recipes/probe_smoke.py mlir
run 90 "$RESULTS/smoke-args-030.log" $LB_ENV030/bin/python lab/recipes/probe_smoke.py args
run 90 "$RESULTS/smoke-args-029.log" $LB_ENV029/bin/python lab/recipes/probe_smoke.py args
run 90 "$RESULTS/smoke-both.log" $LB_ENV030/bin/python lab/recipes/probe_smoke.py both
rm -rf $LB_TMP/lb-probe-cache
run 300 "$RESULTS/spawn.log" $LB_ENV030/bin/python lab/recipes/asv_reference_probe.py spawn \
    --env v029=$LB_ENV029/bin/python --env v030=$LB_ENV030/bin/python --processes "$N" --out "$RESULTS"
run 90 "$RESULTS/fork-030.log" $LB_ENV030/bin/python lab/recipes/asv_reference_probe.py fork --children 8 --tag v030 --out "$RESULTS"
run 90 "$RESULTS/fork-029.log" $LB_ENV029/bin/python lab/recipes/asv_reference_probe.py fork --children 8 --tag v029 --out "$RESULTS"
for f in "$RESULTS"/smoke-*.log; do echo "== $f"; tail -c 1500 "$f"; echo; done
