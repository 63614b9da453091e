#!/usr/bin/env bash
# launchbench compare on the GPU machine: the three trust targets of issue 3.
#
#   COMPARE_RUNS="default trust" bash lab/recipes/compare.sh "$RESULTS"
#
# default: the embedded three-way run (baseline 0.29.0 / contextvar on it / v2 0.30.4)
#    target: every delta's 95% CI half-width <= 1% of the baseline, in <= 5 min.
# trust: A/A and sensitivity in one run at the default settings: ref and twin are
#    the same variant (passthrough on 0.29.0) under two names (A/A: every CI contains
#    0); cal = delay:0.5us on 0.29.0 (delay = passthrough + busy-wait, so cal - ref is
#    the 0.5 us alone; target: reported within +/-0.2 us).
# Measurement: launchbench defaults (100 rounds x 20 repeats, 4 ms samples, rounds set up
# ahead on the other CPUs, workers pinned to the highest CPU, per-round median of paired
# differences, t over rounds). About 4.5 min per run once the envs exist.
# Envs are built once, offline, from $LB_WHEELS into $LB_ENV_DIR (they see the
# host python3's site-packages for cuda-bindings/NVVM); if that fails the
# prepared $LB_ENV029 and $LB_ENV030 are used instead (env:PATH variants).
# Writes <name>.json/.md/.png, <name>.log and command.txt into $RESULTS and
# prints a summary (also summary.txt). Never exits non-zero on a failed run.
. "$(dirname "${BASH_SOURCE[0]}")/settings.sh"
set -u
export PYTHONUNBUFFERED=1 NUMBA_CUDA_LOW_OCCUPANCY_WARNINGS=0
unset NUMBA_ENABLE_CUDASIM
RESULTS=${1:-$LB_STEPS_DIR/compare}
mkdir -p "$RESULTS"
RESULTS=$(cd "$RESULTS" && pwd)
PY=${LB_PY:-$LB_ENV030/bin/python}      # runs launchbench (3.12, numba-cuda importable)
HOST_PY=${LB_HOST_PY:-python3}           # base of the variant envs (has cuda-bindings)
ENVS="--wheels $LB_WHEELS --system-site-packages --env-dir $LB_ENV_DIR --python $HOST_PY"
RUNS=${COMPARE_RUNS:-default trust}
touch "$RESULTS/command.txt"

# launchbench's C extensions (_tls: delay/tls mechanisms, _floor) for this Python, in place.
"$PY" setup.py build_ext --inplace -q > "$RESULTS/build_ext.log" 2>&1 || echo "WARNING: build_ext failed (see build_ext.log)"

run() {  # run NAME ARGS... : one compare, logged; falls back to the prepared envs if building fails
    local name=$1; shift
    local cmd=("$PY" -m launchbench compare "$@" $ENVS -o "$RESULTS/$name.json")
    echo "${cmd[*]}" >> "$RESULTS/command.txt"
    echo "=== $name: ${cmd[*]}"
    local start=$(date +%s)
    "${cmd[@]}" > "$RESULTS/$name.log" 2> "$RESULTS/$name.err"
    local rc=$?
    if [ $rc -eq 2 ] && grep -qE "building variant|creating a virtualenv" "$RESULTS/$name.err"; then
        echo "env build failed ($(tail -n1 "$RESULTS/$name.err")); using $LB_ENV029 and $LB_ENV030"
        local fb=()
        local a
        for a in "$@"; do
            a=${a//numba-cuda==0.29.0/env:$LB_ENV029}
            a=${a//numba-cuda==0.30.4/env:$LB_ENV030}
            fb+=("$a")
        done
        cmd=("$PY" -m launchbench compare "${fb[@]}" -o "$RESULTS/$name.json")
        echo "${cmd[*]}" >> "$RESULTS/command.txt"
        "${cmd[@]}" > "$RESULTS/$name.log" 2>> "$RESULTS/$name.err"
        rc=$?
    fi
    echo "rc=$rc wall=$(( $(date +%s) - start ))s" | tee -a "$RESULTS/$name.log"
    cat "$RESULTS/$name.log"
    tail -n 3 "$RESULTS/$name.err"
}

for what in $RUNS; do
    case $what in
        default) run default --variant baseline=numba-cuda==0.29.0 \
                     --variant contextvar=contextvar@numba-cuda==0.29.0 --variant v2=numba-cuda==0.30.4 ;;
        trust) run trust --variant ref=passthrough@numba-cuda==0.29.0 \
                   --variant twin=passthrough@numba-cuda==0.29.0 --variant cal=delay:0.5us@numba-cuda==0.29.0 ;;
        *) echo "unknown run $what (default, trust)" ;;
    esac
done

"$PY" "$LAB_RECIPES/steps.py" compare_summary "$RESULTS" | tee "$RESULTS/summary.txt"
exit 0
