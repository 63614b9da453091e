# The lab's one preamble: every path and environment set-up of the recipes, each overridable from the
# environment (LB_TMP=/scratch bash lab/recipes/compare.sh DIR moves them all). Every recipe sources it:
#   . "$(dirname "${BASH_SOURCE[0]}")/settings.sh"
# Python recipes read the same names through settings.py. No other recipe names a /tmp path.
LAB_RECIPES=${LAB_RECIPES:-$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)}
LB_TMP=${LB_TMP:-/tmp}                          # the GPU machine's scratch: everything below lives here
LB_ENV029=${LB_ENV029:-$LB_TMP/env029}          # venv with numba-cuda 0.29.0 (setup_env.sh envs)
LB_ENV030=${LB_ENV030:-$LB_TMP/env030}          # venv with numba-cuda 0.30.4 (setup_env.sh envs)
LB_ENV_BASE=${LB_ENV_BASE:-$LB_TMP/env-base}    # the pins without numba-cuda (setup_env.sh base; history, pr, bisect)
LB_ENV_MLIR=${LB_ENV_MLIR:-$LB_TMP/envmlir}     # numba-cuda-mlir 0.6.0 (mlir.sh)
LB_WHEELS=${LB_WHEELS:-$LB_TMP/wheels}          # the offline wheelhouse (setup_env.sh stage)
LB_WCACHE=${LB_WCACHE:-$LB_TMP/wcache}          # per-commit numba-cuda wheels built on a CPU machine
LB_CLONE=${LB_CLONE:-$LB_TMP/nc}                # a numba-cuda clone (history, bisect, pr)
LB_ENV_DIR=${LB_ENV_DIR:-$LB_TMP/lbenvs}        # where launchbench builds variant environments
LB_HOST_PY=${LB_HOST_PY:-python3}               # the machine's Python (cuda-bindings, NVVM, CuPy)
LB_PY=${LB_PY:-$LB_ENV030/bin/python}           # the Python that runs launchbench
LB_STEPS_DIR=${LB_STEPS_DIR:-results/gpu}       # run_steps.sh writes each step here; commit a run by moving
                                                # its folder to lab/results/<device>/<date>-<what>/
export LAB_RECIPES LB_TMP LB_ENV029 LB_ENV030 LB_ENV_BASE LB_ENV_MLIR LB_WHEELS LB_WCACHE LB_CLONE LB_ENV_DIR \
    LB_HOST_PY LB_PY LB_STEPS_DIR

# run LIMIT LOG CMD...: record CMD in $RESULTS/command.txt, run it with a time limit (SIGINT first, so partial
# results get written), log its output, and append (and print) "rc=N LOG" to $RESULTS/status.txt.
run() {
    local limit=$1 log=$2
    shift 2
    echo "$*" >> "$RESULTS/command.txt"
    timeout --signal=INT --kill-after=15 "$limit" "$@" > "$log" 2>&1
    local rc=$?
    echo "rc=$rc $(basename "$log")" | tee -a "$RESULTS/status.txt"
    return $rc
}
