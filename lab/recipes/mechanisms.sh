#!/usr/bin/env bash
# GPU step (issue 4): launch-config capture mechanisms, switched inside each of many processes.
#
#   bash lab/recipes/mechanisms.sh RESULTS_DIR
#
# For numba-cuda 0.30.4 ($LB_ENV030, call(args, launch_config)) and 0.29.0
# ($LB_ENV029, call(args, griddim, blockdim, stream, sharedmem)):
#   1. installs this checkout's launchbench into a private dir with the host
#      python3 (as lab/recipes/setup_env.sh does; same 3.12 ABI), so the code
#      measured is this commit's, whatever the env was built from,
#   2. runs `launchbench mechanisms` (stock/passthrough/contextvar/tls/delay:0.5us
#      x 0..4 args) in MECH_PROCESSES (default 20) fresh worker processes, one after
#      another, MECH_SECONDS (default 120) of measuring shared among them; in each,
#      100-launch blocks in shuffled pair rounds, mechanisms switched in place where
#      they can be, 120 warm-up launches after a block whose switch wrote
#      CUDADispatcher, 10 otherwise; deltas are means over processes with t intervals
#      -> RESULTS/mechanisms-<ver>.json
#   (MECH_VERSIONS="029" measures only that release; MECH_SPECS overrides --mechanisms;
#   MECH_ARGS adds options, e.g. "--warmup 100")
#   with MECH_XPROC_ROUNDS=N: also `launchbench compare` of passthrough@ vs tls@ that
#   release over N rounds (one process per variant and round: the between-process
#   offsets do not cancel there, so it needs ~10x the rounds) -> RESULTS/tls-across-processes-<ver>.json
#   3. only with MECH_PYTEST=1: tests/test_tls.py, tests/test_mechanisms*.py
#      (GPU-marked ones included).
# About 2.5 minutes per release at the defaults; each part has its own time limit, and
# Ctrl-C / timeout still leaves the JSON of the processes finished so far.
. "$(dirname "${BASH_SOURCE[0]}")/settings.sh"
set -u
export PYTHONUNBUFFERED=1 NUMBA_CUDA_LOW_OCCUPANCY_WARNINGS=0
unset NUMBA_ENABLE_CUDASIM
RESULTS=${1:?usage: bash lab/recipes/mechanisms.sh RESULTS_DIR}
mkdir -p "$RESULTS"
RESULTS=$(cd "$RESULTS" && pwd)
REPO=$(pwd)
SECONDS_PER_VERSION=${MECH_SECONDS:-120}
PROCESSES=${MECH_PROCESSES:-20}
CMDS="$RESULTS/command.txt"
: > "$CMDS"


for ver in ${MECH_VERSIONS:-030 029}; do
    env=$LB_TMP/env$ver
    if [ ! -x "$env/bin/python" ]; then
        echo "SKIP numba-cuda $ver: $env/bin/python missing (run lab/recipes/setup_env.sh envs)" | tee -a "$RESULTS/status.txt"
        continue
    fi
    lib=$LB_TMP/launchbench-mech-$ver
    rm -rf "$lib"
    if run 45 "$RESULTS/install-$ver.log" "${HOST_PY:-python3}" -m pip install -q --no-index --no-deps \
            --no-build-isolation --no-compile --target "$lib" "$REPO"; then
        pp=$lib
    else
        echo "WARNING: private install failed; using the launchbench installed in $env"
        pp=
    fi
    # cd $LB_TMP: the checkout's own launchbench/ (no C extension for this python) must not shadow it
    (cd "$LB_TMP" && PYTHONPATH=$pp run $((SECONDS_PER_VERSION + 40 + 3 * PROCESSES)) "$RESULTS/mechanisms-$ver.log" "$env/bin/python" \
        -m launchbench mechanisms --processes "$PROCESSES" --max-time "$SECONDS_PER_VERSION" \
        ${MECH_SPECS:+--mechanisms "$MECH_SPECS"} ${MECH_ARGS:-} -o "$RESULTS/mechanisms-$ver.json")
    rm -rf "$RESULTS/mechanisms-$ver.logs/overlay"
    if [ "${MECH_XPROC_ROUNDS:-0}" -gt 0 ]; then
        xcmd=("$env/bin/python" -m launchbench compare --variant "pass=passthrough@env:$env"
              --variant "tls=tls@env:$env" --rounds "$MECH_XPROC_ROUNDS" --quiet
              -o "$RESULTS/tls-across-processes-$ver.json")
        run $((MECH_XPROC_ROUNDS * 3 + 60)) "$RESULTS/tls-across-processes-$ver.log" "${xcmd[@]}"
        rm -rf "$RESULTS/tls-across-processes-$ver.logs"
    fi
    if [ "${MECH_PYTEST:-0}" = 1 ]; then
        (cd "$LB_TMP" && PYTHONPATH=$pp run 70 "$RESULTS/pytest-$ver.log" "$env/bin/python" -m pytest -q -rs \
            -p no:cacheprovider --rootdir "$REPO" "$REPO"/tests/test_tls.py "$REPO"/tests/test_mechanisms*.py)
    fi
done

echo
echo "=== launchbench mechanisms summary (us/launch; delta = median of paired differences [95% order-statistic CI])"
for ver in ${MECH_VERSIONS:-030 029}; do
    f="$RESULTS/mechanisms-$ver.json"
    [ -f "$f" ] || { echo "numba-cuda $ver: no JSON (see mechanisms-$ver.log)"; continue; }
    python3 "$LAB_RECIPES/steps.py" mechanisms_summary "$f"
done
for ver in ${MECH_VERSIONS:-030 029}; do
    f="$RESULTS/tls-across-processes-$ver.log"
    [ -f "$f" ] && { echo "tls - passthrough across processes, $ver:"; grep -E "^[0-9] args|^\s+tls:" "$f"; }
done
for ver in ${MECH_VERSIONS:-030 029}; do
    [ -f "$RESULTS/pytest-$ver.log" ] && echo "pytest $ver: $(tail -n 1 "$RESULTS/pytest-$ver.log")"
done
cat "$RESULTS/status.txt"
exit 0
