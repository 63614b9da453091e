#!/usr/bin/env bash
# Prepare the GPU machine (no network) for the gpu/*.sh steps.
#
#   bash gpu/setup_env.sh stage     copy carried wheels (.whl1/, .whl2/) to /tmp/wheels
#   bash gpu/setup_env.sh envs      build /tmp/env029 and /tmp/env030 from /tmp/wheels
#
# The machine's python3 is itself a virtualenv (with cupy, cuda-bindings,
# NVVM) whose numpy 2.5 breaks numba-cuda. Each env gets its own pinned
# numpy/numba/llvmlite/cuda-core/numba-cuda in its site-packages, then a .pth
# that appends the host venv's site-packages, so pinned packages win and the
# heavy CUDA packages are shared. launchbench itself is installed last.
set -uo pipefail
HOST_PY=${HOST_PY:-python3}
WHEELS=${WHEELS:-/tmp/wheels}
PINS="numpy==2.3.5 numba==0.65.1 llvmlite==0.47.0 cuda-core==0.7.0"
TOOLS="asv asv-runner json5 pympler importlib-metadata"

stage() {
    mkdir -p "$WHEELS"
    cp -n .whl1/*.whl .whl2/*.whl "$WHEELS"/ 2>/dev/null
    ls "$WHEELS"
}

make_env() {  # make_env DIR NUMBA_CUDA_VERSION
    local dir=$1 version=$2
    rm -rf "$dir"
    "$HOST_PY" -m venv --without-pip "$dir" || return 1
    local site host_site
    site=$("$dir/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
    host_site=$("$HOST_PY" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
    "$HOST_PY" -m pip install -q --no-index --no-deps --no-compile --find-links "$WHEELS" \
        --target "$site" "numba-cuda==$version" $PINS $TOOLS || return 1
    echo "$host_site" > "$site/zz_launchbench_host_site.pth"
    # launchbench (builds its C extensions for this interpreter)
    "$HOST_PY" -m pip install -q --no-deps --no-build-isolation --no-compile --target "$site" . \
        || echo "WARNING: launchbench did not install into $dir"
    ln -sf "$site/bin/asv" "$dir/bin/asv" 2>/dev/null || true
    [ -e "$dir/bin/launchbench" ] || ln -sf "$site/bin/launchbench" "$dir/bin/launchbench" 2>/dev/null || true
    "$dir/bin/python" - <<'PY'
import numpy, numba, llvmlite, importlib.metadata as md
print("env ok:", "numba-cuda", md.version("numba-cuda"), "numba", numba.__version__,
      "numpy", numpy.__version__, "llvmlite", llvmlite.__version__, "cuda-core", md.version("cuda-core"))
PY
}

case "${1:-}" in
    stage) stage ;;
    envs)
        # In-place build too: steps run from the repo root, where the checkout's
        # launchbench package shadows the installed one.
        "$HOST_PY" setup.py -q build_ext --inplace || echo "WARNING: in-place build failed"
        make_env /tmp/env029 0.29.0; make_env /tmp/env030 0.30.4 ;;
    *) echo "usage: $0 stage|envs" >&2; exit 2 ;;
esac
