#!/usr/bin/env bash
# Prepare the GPU machine (no network) for the lab/recipes/*.sh steps.
#
#   bash lab/recipes/setup_env.sh stage     copy carried wheels (.whl*/) to $LB_WHEELS; join split
#                                   files (NAME.partNN + NAME.name + NAME.sha256) once all parts are there;
#                                   re-zip packed wheels (NAME.whl.txz: the wheel's files as tar.xz, about
#                                   a third smaller than the wheel, see lab/recipes/pack_wheel.sh);
#                                   .whl3/wcache/ or .whl3/wcache.tar.xz -> $LB_WCACHE (per-commit wheels, launchbench history's cache
#                                   layout); .whl3/nc-shallow.tar.gz -> $LB_CLONE (the numba-cuda clone)
#   bash lab/recipes/setup_env.sh envs      build $LB_ENV029 and $LB_ENV030 from $LB_WHEELS
#   bash lab/recipes/setup_env.sh aa        build $LB_TMP/env030b: a second env of 0.30.4 (A/A pairs)
#   bash lab/recipes/setup_env.sh mlir      build $LB_ENV_MLIR: numba-cuda-mlir (no numba pins) + numpy 2.3.5 +
#                                   cuda-core 0.7.0 + launchbench, the host's site-packages appended
#   bash lab/recipes/setup_env.sh base      build $LB_ENV_BASE: the pins + asv + launchbench, seeing the host's
#                                   site-packages; per-commit envs of history/bisect are made from it
#
# The machine's python3 is itself a virtualenv (with cupy, cuda-bindings,
# NVVM) whose numpy 2.5 breaks numba-cuda. Each env gets its own pinned
# numpy/numba/llvmlite/cuda-core/numba-cuda in its site-packages, then a .pth
# that appends the host venv's site-packages, so pinned packages win and the
# heavy CUDA packages are shared. launchbench itself is installed last.
. "$(dirname "${BASH_SOURCE[0]}")/settings.sh"
set -uo pipefail
HOST_PY=${HOST_PY:-python3}
WHEELS=${WHEELS:-$LB_WHEELS}
# PINS: the pinned stack (default); PINS="numpy==2.3.5" keeps the host's numba, llvmlite and cuda-core
PINS=${PINS:-"numpy==2.3.5 numba==0.65.1 llvmlite==0.47.0 cuda-core==0.7.0"}
# asv and what it needs at run time (virtualenv for the envs it builds itself)
TOOLS="setuptools wheel asv asv-runner json5 pympler importlib-metadata lazy-importer pyyaml zipp tabulate build pyproject-hooks packaging
       virtualenv distlib platformdirs filelock python-discovery"

stage() {
    mkdir -p "$WHEELS" $LB_TMP/wheel-parts $LB_WCACHE
    local d f name
    for d in .whl*/ .whl3/wheels; do
        d=${d%/}
        [ -d "$d" ] || continue
        cp -n "$d"/*.whl "$WHEELS"/ 2>/dev/null
        cp -n "$d"/*.part[0-9][0-9] "$d"/*.name "$d"/*.sha256 $LB_TMP/wheel-parts/ 2>/dev/null
    done
    for f in .whl*/*.whl.txz; do  # a packed wheel: its files as tar.xz; zip them back into the wheel
        [ -e "$f" ] || continue
        name=$(basename "$f" .txz)
        [ -e "$WHEELS/$name" ] && continue
        local tmp; tmp=$(mktemp -d)
        tar -xJf "$f" -C "$tmp" && "$HOST_PY" "$LAB_RECIPES/steps.py" unpack_wheel "$tmp" "$WHEELS/$name" && echo "unpacked $name"
        rm -rf "$tmp"
    done
    for f in $LB_TMP/wheel-parts/*.name; do  # join a split wheel once every part has arrived
        [ -e "$f" ] || continue
        name=$(cat "$f"); local stem=${f%.name}
        [ -e "$WHEELS/$name" ] && continue
        cat "$stem".part[0-9][0-9] > "$LB_TMP/wheel-parts/$name"
        if [ "$(sha256sum "$LB_TMP/wheel-parts/$name" | cut -d' ' -f1)" = "$(cat "$stem.sha256")" ]; then
            mv "$LB_TMP/wheel-parts/$name" "$WHEELS/$name"; echo "joined $name"
        else
            rm -f "$LB_TMP/wheel-parts/$name"; echo "waiting for more parts of $name"
        fi
    done
    [ -d .whl3/wcache ] && cp -rn .whl3/wcache/. $LB_WCACHE/
    # per-commit wheels of neighbouring commits share most bytes: one solid tar.xz is ~10x smaller
    [ -e .whl3/wcache.tar.xz ] && tar -xJf .whl3/wcache.tar.xz -C $LB_WCACHE
    if [ -e .whl3/nc-shallow.tar.gz ] && [ ! -d $LB_CLONE/.git ]; then
        mkdir -p $LB_CLONE && tar -xzf .whl3/nc-shallow.tar.gz -C $LB_CLONE && echo "clone: $LB_CLONE"
    fi
    ls "$WHEELS"; ls $LB_WCACHE | wc -l
}

base() {  # $LB_ENV_BASE: pins + tools + launchbench in its own site, then the host's site-packages
    local dir=$LB_ENV_BASE
    rm -rf "$dir"
    "$HOST_PY" -m venv "$dir" || return 1
    local site host_site
    site=$("$dir/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
    host_site=$("$HOST_PY" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
    "$HOST_PY" -m pip install -q --no-index --no-deps --no-compile --find-links "$WHEELS" \
        --target "$site" $PINS $TOOLS || return 1
    echo "$host_site" > "$site/zz_launchbench_host_site.pth"
    "$HOST_PY" -m pip install -q --no-deps --no-build-isolation --no-compile --target "$site" . \
        || echo "WARNING: launchbench did not install into $dir"
    "$dir/bin/python" setup.py -q build_ext --inplace || echo "WARNING: in-place build failed"
    "$dir/bin/python" -c 'import numpy, numba, llvmlite; print("env-base ok: numba", numba.__version__, "numpy", numpy.__version__)'
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
    "$dir/bin/python" "$LAB_RECIPES/steps.py" env_check
}

mlir_env() {  # mlir_env DIR VERSION: numba-cuda-mlir has no numba dependency, so no numba pins
    local dir=$1 version=$2
    rm -rf "$dir"
    "$HOST_PY" -m venv --without-pip "$dir" || return 1
    local site host_site
    site=$("$dir/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
    host_site=$("$HOST_PY" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
    "$HOST_PY" -m pip install -q --no-index --no-deps --no-compile --find-links "$WHEELS" \
        --target "$site" "numba-cuda-mlir==$version" numpy==2.3.5 cuda-core==0.7.0 $TOOLS || return 1
    echo "$host_site" > "$site/zz_launchbench_host_site.pth"
    "$HOST_PY" -m pip install -q --no-deps --no-build-isolation --no-compile --target "$site" . \
        || echo "WARNING: launchbench did not install into $dir"
    "$dir/bin/python" -c 'import numpy, numba_cuda_mlir, importlib.metadata as md; print("env ok: numba-cuda-mlir", numba_cuda_mlir.__version__, "numpy", numpy.__version__, "cuda-core", md.version("cuda-core"))'
}

case "${1:-}" in
    stage) stage ;;
    envs)
        # In-place build too: steps run from the repo root, where the checkout's
        # launchbench package shadows the installed one.
        "$HOST_PY" setup.py -q build_ext --inplace || echo "WARNING: in-place build failed"
        make_env $LB_ENV029 0.29.0; make_env $LB_ENV030 0.30.4 ;;
    aa) make_env $LB_TMP/env030b 0.30.4 ;;  # a second env of 0.30.4: the counts' A/A pair (lab/recipes/counts.sh)
    mlir) mlir_env "${MLIR_DIR:-$LB_ENV_MLIR}" "${MLIR_VERSION:-0.6.0}" ;;
    base) base ;;
    *) echo "usage: $0 stage|envs|mlir|base" >&2; exit 2 ;;
esac
