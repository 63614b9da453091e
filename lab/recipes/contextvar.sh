#!/usr/bin/env bash
# The real contextvar branch (upstream PR #288, based on v0.14.0) against its merge base,
# with launchbench's Python replay of the mechanism on the base as a third variant.
#
#   bash lab/recipes/contextvar.sh "$RESULTS"
#
# numba-cuda 0.14 cannot use today's cuda-bindings 13 (it imports the legacy `cuda.cuda`
# module) nor find libNVVM in the CUDA 13 wheel layout, so both envs use its ctypes driver
# binding (NUMBA_CUDA_USE_NVIDIA_BINDING=0) with NVVM and the runtime from the CUDA 12.9
# wheels (nvidia-cuda-nvcc-cu12, nvidia-cuda-runtime-cu12), and today's numba 0.65.1 /
# llvmlite 0.47.0 / numpy 2.3.5. No host site-packages: nothing of 0.30 leaks in.
# The wheels (pure Python: 0.14 has no C extensions) were built on the CPU machine.
. "$(dirname "${BASH_SOURCE[0]}")/settings.sh"
set -u
export PYTHONUNBUFFERED=1 NUMBA_CUDA_LOW_OCCUPANCY_WARNINGS=0 NUMBA_CUDA_USE_NVIDIA_BINDING=0
unset NUMBA_ENABLE_CUDASIM
RESULTS=${1:-$LB_STEPS_DIR/contextvar}
mkdir -p "$RESULTS"
WHEELS=${WHEELS:-$LB_WHEELS}
BASE=5625de86
PR=019d60d4
for sha in $BASE $PR; do
    d=$LB_TMP/envcv-$sha
    rm -rf "$d"
    python3 -m venv "$d" || exit 1
    "$d/bin/python" -m pip install -q --no-index --no-deps --find-links "$WHEELS" numba==0.65.1 llvmlite==0.47.0 \
        numpy==2.3.5 nvidia-cuda-nvcc-cu12 nvidia-cuda-runtime-cu12 "$WHEELS/numba_cuda-0.14.0+g$sha-py3-none-any.whl" \
        > "$RESULTS/install-$sha.log" 2>&1 || { echo "install failed for $sha"; tail -3 "$RESULTS/install-$sha.log"; }
    "$d/bin/python" "$LAB_RECIPES/steps.py" contextvar_check 2>&1 | tee -a "$RESULTS/check.txt"
done
PY=$LB_TMP/envcv-$BASE/bin/python
"$PY" setup.py -q build_ext --inplace > "$RESULTS/build_ext.log" 2>&1 || echo "WARNING: build_ext failed"
cmd=("$PY" -m launchbench compare --variant base=env:$LB_TMP/envcv-$BASE --variant pr288=env:$LB_TMP/envcv-$PR
     --variant replay=contextvar@base ${CV_ARGS:---rounds 40 --repeats 10} --quiet -o "$RESULTS/contextvar.json")
echo "NUMBA_CUDA_USE_NVIDIA_BINDING=0 ${cmd[*]}" > "$RESULTS/command.txt"
start=$(date +%s)
timeout --signal=INT --kill-after=15 ${CV_LIMIT:-300} "${cmd[@]}" > "$RESULTS/contextvar.log" 2> "$RESULTS/contextvar.err"
echo "rc=$? wall=$(( $(date +%s) - start ))s" | tee -a "$RESULTS/contextvar.log"
cat "$RESULTS/contextvar.log"; tail -n 5 "$RESULTS/contextvar.err"
rm -rf "$RESULTS"/*.logs; gzip -f "$RESULTS"/*.json 2>/dev/null; true
