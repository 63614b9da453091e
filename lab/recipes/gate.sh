#!/usr/bin/env bash
# compare's stopping rules on the GPU machine: the default three-way run stopping at a
# target precision or a time cap, the --fail-if-slower gate on a known regression and
# on an A/A pair, and the trust run (A/A twin + delay:0.5us) at the same settings.
#
#   GATE_RUNS="adaptive gate-v2 gate-aa trust1 trust2 trust3" bash lab/recipes/gate.sh "$RESULTS"
#
# Uses the prepared $LB_ENV029 and $LB_ENV030 (bash lab/recipes/setup_env.sh envs).
. "$(dirname "${BASH_SOURCE[0]}")/settings.sh"
set -u
export PYTHONUNBUFFERED=1 NUMBA_CUDA_LOW_OCCUPANCY_WARNINGS=0
unset NUMBA_ENABLE_CUDASIM
RESULTS=${1:-$LB_STEPS_DIR/gate}
mkdir -p "$RESULTS"
PY=${LB_PY:-$LB_ENV030/bin/python}
B=env:$LB_ENV029
V2=env:$LB_ENV030
STOP=${GATE_STOP:-}  # compare's defaults: --target-ci 0.5 --max-time 120 (20 repeats of 2 ms samples)
touch "$RESULTS/command.txt"

run() {  # run NAME LIMIT ARGS...
    local name=$1 limit=$2; shift 2
    local cmd=("$PY" -m launchbench compare "$@" --quiet -o "$RESULTS/$name.json")
    echo "${cmd[*]}" >> "$RESULTS/command.txt"
    local start=$(date +%s)
    timeout --signal=INT --kill-after=15 "$limit" "${cmd[@]}" > "$RESULTS/$name.log" 2> "$RESULTS/$name.err"
    echo "rc=$? wall=$(( $(date +%s) - start ))s" | tee -a "$RESULTS/$name.log"
    echo "=== $name"; tail -n 14 "$RESULTS/$name.log"; grep -E "stopped|error" "$RESULTS/$name.err" | tail -2
}

for what in ${GATE_RUNS:-adaptive gate-v2 gate-aa}; do
    case $what in
        adaptive) run adaptive 200 --variant baseline=$B --variant contextvar=contextvar@baseline \
                      --variant v2=$V2 $STOP ;;
        gate-v2) run gate-v2 200 --variant baseline=$B --variant v2=$V2 --fail-if-slower 2 $STOP ;;
        gate-aa) run gate-aa 200 --variant ref=$B --variant twin=$B --fail-if-slower 2 $STOP ;;
        trust*) run "$what" 200 --variant ref=passthrough@$B --variant twin=passthrough@$B \
                    --variant cal=delay:0.5us@$B $STOP ;;
        *) echo "unknown run $what" ;;
    esac
done
rm -rf "$RESULTS"/*.logs
gzip -f "$RESULTS"/*.json 2>/dev/null
true
