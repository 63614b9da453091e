#!/usr/bin/env bash
# The C functions numba-cuda's launch calls from Python, named, on the GPU machine (Python 3.12:
# sys.monitoring names every C callable, cuda-bindings' Cython functions included).
#
#   bash lab/recipes/counts_callees.sh RESULTS
#
# Needs $LB_ENV029 and $LB_ENV030 (setup_env.sh's "stage envs": numba-cuda 0.29.0 and 0.30.4).
# launchbench counts of both at 0 and 2 device-array arguments (2 processes each, nothing timed),
# then callees.txt: per variant and arg count every C callee with its calls per launch and its
# callers, and the C callees that changed from 0.29.0 to 0.30.4. Writes counts-callees.json/.md,
# counts-callees.log/.err, callees.txt and command.txt under RESULTS.
. "$(dirname "${BASH_SOURCE[0]}")/settings.sh"
set -u
export PYTHONUNBUFFERED=1 NUMBA_CUDA_LOW_OCCUPANCY_WARNINGS=0
unset NUMBA_ENABLE_CUDASIM
RESULTS=${1:?usage: bash lab/recipes/counts_callees.sh RESULTS}
mkdir -p "$RESULTS"
RESULTS=$(cd "$RESULTS" && pwd)
PY=$LB_PY
"$PY" setup.py build_ext --inplace -q > "$RESULTS/build_ext.log" 2>&1 || echo "WARNING: build_ext failed"
cmd=("$PY" -m launchbench counts --variant v029=env:$LB_ENV029 --variant v030=env:$LB_ENV030 --args 0,2
     -o "$RESULTS/counts-callees.json" --markdown "$RESULTS/counts-callees.md")
echo "${cmd[*]}" >> "$RESULTS/command.txt"
timeout --signal=INT 480 "${cmd[@]}" > "$RESULTS/counts-callees.log" 2> "$RESULTS/counts-callees.err"
echo "rc=$?" | tee -a "$RESULTS/counts-callees.log"
tail -n 3 "$RESULTS/counts-callees.err"
echo "$PY $LAB_RECIPES/steps.py callees_summary $RESULTS/counts-callees.json > $RESULTS/callees.txt" >> "$RESULTS/command.txt"
"$PY" "$LAB_RECIPES/steps.py" callees_summary "$RESULTS/counts-callees.json" > "$RESULTS/callees.txt"
cat "$RESULTS/callees.txt"
