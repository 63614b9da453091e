#!/usr/bin/env bash
# launchbench breakdown over variants on the GPU machine (issue 13: where the microseconds go).
#
#   bash lab/recipes/breakdown.sh "$RESULTS"
#
# Two paired runs, each stage of the launch a sample key of the engine (interleaved rounds of
# fresh processes, 95% t intervals over rounds), 4 minutes of measurement in all:
#   array:  v029 = numba-cuda 0.29.0 (reference), v030 = 0.30.4, lctls = the lctls what-if on
#           0.30.4 (0.30's launch path with launchbench's tls capture); float32[1] device arrays,
#           0..4 args, BD_ARRAY_S seconds (default 170)
#   scalar: v029, v030 with Python-float arguments, BD_SCALAR_S seconds (default 70)
# Envs are built once, offline, from $LB_WHEELS into $LB_ENV_DIR (they see the host python3's
# site-packages); if that fails the prepared $LB_ENV029 and $LB_ENV030 are used instead
# (env:PATH variants), as lab/recipes/compare.sh does. BD_ARGS adds options to both runs; BD_BASE replaces
# the reference (e.g. BD_BASE=twin=numba-cuda==0.30.4: an A/A check of the method on one release).
# Writes <run>.json.gz, <run>.log, <run>.err and command.txt into $RESULTS and prints a short
# table (also summary.txt). Never exits non-zero on a failed run.
. "$(dirname "${BASH_SOURCE[0]}")/settings.sh"
set -u
export PYTHONUNBUFFERED=1 NUMBA_CUDA_LOW_OCCUPANCY_WARNINGS=0
unset NUMBA_ENABLE_CUDASIM
RESULTS=${1:-$LB_STEPS_DIR/breakdown}
mkdir -p "$RESULTS"
RESULTS=$(cd "$RESULTS" && pwd)
PY=${LB_PY:-$LB_ENV030/bin/python}      # runs launchbench (3.12, numba-cuda importable)
HOST_PY=${LB_HOST_PY:-python3}           # base of the variant envs (has cuda-bindings)
ENVS="--wheels $LB_WHEELS --system-site-packages --env-dir $LB_ENV_DIR --python $HOST_PY"
touch "$RESULTS/command.txt"

# launchbench's C extensions (_tls: the tls capture of lctls and the delay mechanism) for this Python.
"$PY" setup.py build_ext --inplace -q > "$RESULTS/build_ext.log" 2>&1 || echo "WARNING: build_ext failed (see build_ext.log)"

run() {  # run NAME SECONDS ARGS... : one paired breakdown; falls back to the prepared envs if building fails
    local name=$1 seconds=$2; shift 2
    local common=(--max-time "$seconds" --quiet ${BD_ARGS:-} -o "$RESULTS/$name.json")
    local cmd=("$PY" -m launchbench breakdown "$@" $ENVS "${common[@]}")
    echo "${cmd[*]}" >> "$RESULTS/command.txt"
    echo "=== $name: ${cmd[*]}"
    local start=$(date +%s)
    "${cmd[@]}" > "$RESULTS/$name.log" 2> "$RESULTS/$name.err"
    local rc=$?
    if [ $rc -eq 2 ] && grep -qE "building variant|creating a virtualenv|no environment for variant|--wheels" "$RESULTS/$name.err"; then
        echo "env build failed ($(tail -n1 "$RESULTS/$name.err")); using $LB_ENV029 and $LB_ENV030"
        local fb=() a
        for a in "$@"; do
            a=${a//numba-cuda==0.29.0/env:$LB_ENV029}
            a=${a//numba-cuda==0.30.4/env:$LB_ENV030}
            fb+=("$a")
        done
        cmd=("$PY" -m launchbench breakdown "${fb[@]}" "${common[@]}")
        echo "${cmd[*]}" >> "$RESULTS/command.txt"
        "${cmd[@]}" > "$RESULTS/$name.log" 2>> "$RESULTS/$name.err"
        rc=$?
    fi
    echo "rc=$rc wall=$(( $(date +%s) - start ))s" | tee -a "$RESULTS/$name.log"
    tail -n 3 "$RESULTS/$name.err"
}

BASE=${BD_BASE:-v029=numba-cuda==0.29.0}  # the reference; BD_BASE=twin=numba-cuda==0.30.4 makes it an A/A check
run array "${BD_ARRAY_S:-170}" --arg-kind array --variant "$BASE" \
    --variant v030=numba-cuda==0.30.4 --variant lctls=lctls@numba-cuda==0.30.4
run scalar "${BD_SCALAR_S:-70}" --arg-kind scalar --variant "$BASE" --variant v030=numba-cuda==0.30.4

"$PY" "$LAB_RECIPES/steps.py" breakdown_summary "$RESULTS" | tee "$RESULTS/summary.txt"
exit 0
