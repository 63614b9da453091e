#!/usr/bin/env bash
# Rounds per second with 1, 2 (and 4) lanes, fresh vs forked workers (issue 34, docs/scaling.md).
#
#   SCALING_RUNS="one-fresh one-fork two-fresh two-fork trust-fork" bash lab/recipes/scaling.sh DIR
#
# Every run is the default three-way compare (baseline 0.29.0 / contextvar on it / v2 0.30.4) at
# the default stopping rule (0.5 % or the 120 s cap), so rounds, half-widths and set-up phases
# compare across runs made on one machine:
#   one-*: --gpus 0 (one lane: the CPUs, affinity and prefetch of a run without --gpus)
#   two-*: --gpus 0,1         four-*: --gpus 0,1,2,3 (a 4-GPU host)
#   *-fresh: --spawn fresh (every worker a fresh interpreter, the default)
#   *-fork:  --spawn fork  (workers forked from per-variant zygotes, engine/zygote.py)
#   trust4-*: the trust run on --gpus 0,1,2,3
#   trust-fork: A/A (ref, twin: passthrough on 0.29.0 under two names) and a 0.5 us delay (cal) with
#      --gpus 0,1 --spawn fork, 45 s: each lane's A/A interval contains 0, cal reads 0.5 +/- 0.2 us
# Needs `bash lab/recipes/setup_env.sh stage envs`. Writes <run>.json.gz, .log, command.txt, status.txt and
# summary.txt (python lab/recipes/scaling_summary.py DIR recomputes it from the JSON).
. "$(dirname "${BASH_SOURCE[0]}")/settings.sh"
set -u
export PYTHONUNBUFFERED=1 NUMBA_CUDA_LOW_OCCUPANCY_WARNINGS=0
unset NUMBA_ENABLE_CUDASIM
RESULTS=${1:-$LB_STEPS_DIR/scaling}
mkdir -p "$RESULTS"
RESULTS=$(cd "$RESULTS" && pwd)
PY=${LB_PY:-$LB_ENV030/bin/python}
E29=$LB_ENV029
E30=$LB_ENV030
X=${SCALING_EXTRA:-}  # e.g. "--simulator --args 0,1 --max-time 10" for a dry run on a CPU machine
touch "$RESULTS/command.txt"
nvidia-smi -L > "$RESULTS/gpus.txt" 2>&1; cat "$RESULTS/gpus.txt"
nproc > "$RESULTS/nproc.txt"
"$PY" setup.py build_ext --inplace -q > "$RESULTS/build_ext.log" 2>&1 || echo "WARNING: build_ext failed (see build_ext.log)"

THREE="--variant baseline=env:$E29 --variant contextvar=contextvar@baseline --variant v2=env:$E30"
for what in ${SCALING_RUNS:-one-fresh one-fork two-fresh two-fork trust-fork}; do
    case $what in
        one-*) gpus=0 ;;
        two-*) gpus=0,1 ;;
        four-*) gpus=0,1,2,3 ;;
        trust-*) gpus=0,1 ;;
        trust4-*) gpus=0,1,2,3 ;;
        *) echo "unknown run $what"; continue ;;
    esac
    spawn=${what##*-}
    start=$(date +%s)
    case ${what%%-*} in trust|trust4) trust=1 ;; *) trust=0 ;; esac
    if [ $trust = 1 ]; then
        run 90 "$RESULTS/$what.log" "$PY" -m launchbench compare --gpus "$gpus" --spawn "$spawn" $X --max-time 45 \
            --target-ci 0 --variant ref=passthrough@env:$E29 --variant twin=passthrough@env:$E29 \
            --variant cal=delay:0.5us@env:$E29 --no-report -o "$RESULTS/$what.json"
    else
        run 170 "$RESULTS/$what.log" "$PY" -m launchbench compare --gpus "$gpus" --spawn "$spawn" $X $THREE \
            --no-report -o "$RESULTS/$what.json"
    fi
    echo "$what: process wall $(( $(date +%s) - start )) s" | tee -a "$RESULTS/status.txt"
    grep -v "round .* done" "$RESULTS/$what.log" | tail -n 6
done
"$PY" lab/recipes/scaling_summary.py "$RESULTS" | tee "$RESULTS/summary.txt"
gzip -f "$RESULTS"/*.json 2>/dev/null
rm -rf "$RESULTS"/*.logs/overlay "$RESULTS"/*.logs/*/overlay  # copies of launchbench itself
exit 0
