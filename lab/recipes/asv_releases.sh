#!/usr/bin/env bash
# GPU step: the asv launch suite on released numba-cuda 0.29.0 (baseline) and
# 0.30.4 (v2), in the ready venvs $LB_ENV029 and $LB_ENV030 (no network,
# no clone: launchbench asv-releases keys each release to a commit of a tiny
# release ledger), then `asv compare baseline v2`.
#
#   bash lab/recipes/asv_releases.sh "$RESULTS"
#
# Writes into $RESULTS: asv-results/ (commit it as results/asv/), compare.txt,
# summary.txt, device.json, pip-freeze-*.txt, command.txt, asv_releases.log
# (timestamped, asv --verbose), preflight.log + preflight/ (one parameter set
# through asv run first, 90 s limit). About 2-3 minutes. CPU rehearsal:
# ASV_RELEASES_CPU_SMOKE=1 ENV029=/work/venv ENV030=/work/venv bash lab/recipes/asv_releases.sh $LB_TMP/x
# Never exits non-zero (the lead runs steps one after another).
. "$(dirname "${BASH_SOURCE[0]}")/settings.sh"
set -u
RESULTS=${1:?usage: bash lab/recipes/asv_releases.sh RESULTS_DIR}
mkdir -p "$RESULTS"
RESULTS=$(cd "$RESULTS" && pwd)
export PYTHONUNBUFFERED=1
unset NUMBA_ENABLE_CUDASIM LAUNCHBENCH_SMOKE
EXTRA=()
if [ "${ASV_RELEASES_CPU_SMOKE:-0}" = 1 ]; then  # rehearse this script on a CPU (simulator, labelled smoke)
  export NUMBA_ENABLE_CUDASIM=1 LAUNCHBENCH_SMOKE=1 LAUNCHBENCH_MACHINE=SIMULATOR-SMOKE
  EXTRA=(--allow-version-mismatch)
fi
ENV029=${ENV029:-$LB_ENV029}
ENV030=${ENV030:-$LB_ENV030}
PY=$ENV030/bin/python
MACHINE=${LAUNCHBENCH_MACHINE:-h200}
LEDGER=$LB_TMP/launchbench-release-ledger
PRE_LEDGER=$LB_TMP/launchbench-preflight-ledger
PREFLIGHT_LIMIT=${ASV_PREFLIGHT_TIME_LIMIT:-90}
TIME_LIMIT=${ASV_RELEASES_TIME_LIMIT:-190}
rm -rf "$LEDGER" "$LEDGER".* "$PRE_LEDGER" "$PRE_LEDGER".* "$RESULTS/asv-results" "$RESULTS/preflight"
T0=$(date +%s)

# asv runs each parameter set in its own process (numba-cuda import, CUDA
# init, one kernel compile: a few seconds each), so the GPU grid is trimmed
# to fit ~3 minutes for two releases: preconfigured at [1, 1] and [128, 128]
# for 0..4 args, configure-per-launch at [1, 1] for 0..4 args, the v2
# callback benchmark at 0 args (skips on 0.29.0), and the run-kind flag.
# The full grid stays the default for users (no -b).
BENCH=(-b "TimeLaunchPreconfigured.time_launch\(\d, '\[(1, 1|128, 128)\]'[,)]"
       -b "TimeLaunchConfigurePerLaunch.time_launch\(\d, '\[1, 1\]'[,)]"
       -b "TimeLaunchWithCallback.time_launch\(0\)"
       -b "TrackRunKind")
COMMON=(--config "$PWD/asv.conf.json" --machine "$MACHINE" --asv-verbose -a rounds=1 ${EXTRA[@]+"${EXTRA[@]}"})
# Preflight: ONE parameter set through the same `asv run` path, 0.30.4 only,
# separate ledger and results: proves asv finishes a benchmark here.
PRE=("$PY" -m launchbench asv-releases --env "0.30.4=$ENV030/bin/python" "${COMMON[@]}"
     --ledger "$PRE_LEDGER" --results-dir "$RESULTS/preflight/asv-results" --html-dir "$RESULTS/preflight/html"
     -b "TimeLaunchPreconfigured.time_launch\(0, '\[1, 1\]'[,)]")
CMD=("$PY" -m launchbench asv-releases
     --env "0.29.0=$ENV029/bin/python" --env "0.30.4=$ENV030/bin/python" "${COMMON[@]}"
     --ledger "$LEDGER" --results-dir "$RESULTS/asv-results"
     --html-dir "$RESULTS/html" --compare-output "$RESULTS/compare.txt" --log "$RESULTS/asv-commands.txt"
     "${BENCH[@]}")

{
  echo "# $(date -u +%FT%TZ) on $(hostname)"
  printf '%q ' timeout "$PREFLIGHT_LIMIT" "${PRE[@]}"; echo
  printf '%q ' timeout "$TIME_LIMIT" "${CMD[@]}"; echo
} > "$RESULTS/command.txt"

"$PY" -m launchbench info --json > "$RESULTS/device.json" 2>&1 || echo "launchbench info failed (see device.json)"
"$ENV029/bin/python" -m pip freeze > "$RESULTS/pip-freeze-env029.txt" 2>&1
"$ENV030/bin/python" -m pip freeze > "$RESULTS/pip-freeze-env030.txt" 2>&1
"$PY" -c 'import asv_runner, importlib.metadata as m; print("asv_runner", m.version("asv_runner"))' >> "$RESULTS/command.txt" 2>&1

# timeout signals its whole process group, so asv's benchmark processes go too.
start=$(date +%s)
timeout -k 10 "$PREFLIGHT_LIMIT" "${PRE[@]}" > "$RESULTS/preflight.log" 2>&1
prc=$?
pre_s=$(( $(date +%s) - start ))
if [ $prc -eq 124 ] || [ $prc -eq 137 ]; then
  PREFLIGHT="HUNG: one benchmark parameter through asv run did not finish in ${PREFLIGHT_LIMIT}s (see preflight.log: the last [+s] line is where it stopped)"
elif [ $prc -ne 0 ]; then
  PREFLIGHT="FAILED: exit $prc after ${pre_s}s (see preflight.log)"
elif "$PY" "$LAB_RECIPES/steps.py" preflight_measured "$RESULTS/preflight/asv-results"
then
  PREFLIGHT="ok: one parameter measured in ${pre_s}s"
else
  PREFLIGHT="FAILED: finished in ${pre_s}s but no timing in preflight.log (skipped or failed benchmark)"
fi
echo "preflight: $PREFLIGHT" | tee -a "$RESULTS/command.txt"

case $PREFLIGHT in
  ok*)
    start=$(date +%s)
    timeout -k 10 "$TIME_LIMIT" "${CMD[@]}" > "$RESULTS/asv_releases.log" 2>&1
    rc=$?
    echo "asv-releases exit code $rc after $(( $(date +%s) - start )) s (124 = hit the ${TIME_LIMIT}s limit)" | tee -a "$RESULTS/command.txt"
    ;;
  *)
    echo "full run skipped: the preflight did not measure a benchmark" | tee -a "$RESULTS/command.txt"
    ;;
esac
[ -f "$RESULTS/asv-commands.txt" ] && { echo "# asv commands run:"; cat "$RESULTS/asv-commands.txt"; } >> "$RESULTS/command.txt"

# Compact summary: µs per launch, preconfigured [1, 1], by argument count.
"$PY" "$LAB_RECIPES/steps.py" asv_releases_summary "$RESULTS/asv-results" "$MACHINE" "$LEDGER" > "$RESULTS/summary.txt" 2>&1

echo "== preflight: $PREFLIGHT"
echo "== asv compare baseline (0.29.0) v2 (0.30.4), machine $MACHINE"
cat "$RESULTS/compare.txt" 2>/dev/null || { echo "(no compare output; tail of the logs:)"; tail -15 "$RESULTS/preflight.log"; tail -25 "$RESULTS/asv_releases.log" 2>/dev/null; }
echo "== summary"
cat "$RESULTS/summary.txt"
echo "== total wall time $(( $(date +%s) - T0 )) s"
exit 0
