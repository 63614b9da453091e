#!/usr/bin/env bash
# Lanes (issue 25) on a 2-GPU machine: rounds spread over the GPUs of one host.
#
#   bash lab/recipes/run_steps.sh lanes:480          (or: LANES_RUNS="default trust" bash lab/recipes/lanes.sh DIR)
#
# default: the three-way compare (baseline 0.29.0 / contextvar on it / v2 0.30.4) with --gpus 0,1
#    at the default stopping rule (0.5 % or the 120 s cap). Target: worst 95 % half-width <= 0.5 %.
#    One GPU reached 0.57-0.75 % at the cap (docs/methodology.md).
# trust: A/A (ref and twin: passthrough on 0.29.0 under two names) and sensitivity (cal: a 0.5 us
#    delay on 0.29.0) with --gpus 0,1 and a short cap: every lane's own intervals (A/A contains 0,
#    cal - ref within 0.5 +/- 0.2 us) and the check that the lanes agree.
# hist1, hist2: launchbench history v0.29.0..v0.30.4 (8 builds from $LB_WCACHE, envs from
#    $LB_ENV_BASE) with the same fixed number of rounds on 1 lane (--gpus 0) and on 2 lanes
#    (--gpus 0,1): the measurement's wall time (timing.wall_s) of each.
# Needs `bash lab/recipes/setup_env.sh stage envs base` ($LB_ENV029, $LB_ENV030, $LB_ENV_BASE, $LB_WHEELS,
# $LB_WCACHE, $LB_CLONE). The compare runs use the prepared envs directly (env:PATH variants), so
# nothing is built for them. hist1 builds the per-commit envs (from the cached wheels) before it
# measures; hist2 reuses them. Limits 160 + 80 + 150 + 80 s (<= 8 min with set-up; typically about
# 5.5 min); every run has its own time limit
# (SIGINT first: the finished rounds are written). Writes <run>.json(.gz), .log, .err, command.txt,
# status.txt and summary.txt into DIR; prints the summary. Never exits non-zero on a failed run.
. "$(dirname "${BASH_SOURCE[0]}")/settings.sh"
set -u
export PYTHONUNBUFFERED=1 NUMBA_CUDA_LOW_OCCUPANCY_WARNINGS=0
unset NUMBA_ENABLE_CUDASIM
RESULTS=${1:-$LB_STEPS_DIR/lanes}
mkdir -p "$RESULTS"
RESULTS=$(cd "$RESULTS" && pwd)
PY=${LB_PY:-$LB_ENV030/bin/python}          # runs launchbench compare (3.12, numba-cuda importable)
HPY=${LB_HIST_PY:-$LB_ENV_BASE/bin/python}  # runs launchbench history (base of the per-commit envs)
E29=$LB_ENV029
E30=$LB_ENV030
GPUS=${LANES_GPUS:-0,1}
X=${LANES_EXTRA:-}  # e.g. "--simulator --args 0,1" for a dry run on a CPU machine
HIST_ROUNDS=${LANES_HIST_ROUNDS:-10}
touch "$RESULTS/command.txt"
nvidia-smi -L > "$RESULTS/gpus.txt" 2>&1; cat "$RESULTS/gpus.txt"
nproc > "$RESULTS/nproc.txt"

# launchbench's C extensions (_tls: the delay mechanism) for this Python, in place.
"$PY" setup.py build_ext --inplace -q > "$RESULTS/build_ext.log" 2>&1 || echo "WARNING: build_ext failed (see build_ext.log)"

HIST_ENVS="--python $HPY --system-site-packages --wheels $LB_WHEELS --wheel-cache $LB_WCACHE --env-dir $LB_ENV_DIR"
for what in ${LANES_RUNS:-default trust hist1 hist2}; do
    start=$(date +%s)
    case $what in
        default) run 160 "$RESULTS/default.log" "$PY" -m launchbench compare --gpus "$GPUS" $X \
                     --variant baseline=env:$E29 --variant contextvar=contextvar@baseline \
                     --variant v2=env:$E30 --no-report -o "$RESULTS/default.json" ;;
        trust) run 80 "$RESULTS/trust.log" "$PY" -m launchbench compare --gpus "$GPUS" $X --max-time 45 \
                   --target-ci 0 --variant ref=passthrough@env:$E29 \
                   --variant twin=passthrough@env:$E29 --variant cal=delay:0.5us@env:$E29 \
                   --no-report -o "$RESULTS/trust.json" ;;
        hist1) run 150 "$RESULTS/hist1.log" "$HPY" -m launchbench history $LB_CLONE v0.29.0..v0.30.4 $HIST_ENVS \
                   --gpus 0 --rounds "$HIST_ROUNDS" --warmup 300 --max-time 60 --no-report -o "$RESULTS/hist1.json" ;;
        hist2) run 80 "$RESULTS/hist2.log" "$HPY" -m launchbench history $LB_CLONE v0.29.0..v0.30.4 $HIST_ENVS \
                   --gpus "$GPUS" --rounds "$HIST_ROUNDS" --warmup 300 --max-time 60 --no-report -o "$RESULTS/hist2.json" ;;
        *) echo "unknown run $what (default, trust, hist1, hist2)"; continue ;;
    esac
    echo "$what: process wall $(( $(date +%s) - start )) s" | tee -a "$RESULTS/status.txt"
    grep -v "round .* done" "$RESULTS/$what.log" | tail -n 8
done

"$PY" "$LAB_RECIPES/steps.py" lanes_summary "$RESULTS" | tee "$RESULTS/summary.txt"
gzip -kf "$RESULTS"/*.json 2>/dev/null
rm -f "$RESULTS"/*.json  # the .gz copies come back; logs stay
rm -rf "$RESULTS"/*.logs/overlay "$RESULTS"/*.logs/*/overlay  # copies of launchbench itself
exit 0
