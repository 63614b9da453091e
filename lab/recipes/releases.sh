#!/usr/bin/env bash
# Launch cost across releases and stacks on the GPU machine (docs/releases.md): every numba-cuda-mlir
# release, a numba-cuda series, numba-cuda 0.30.4 on the pinned and the newest stack with the
# one-pin-at-a-time stack bisect, then the claims page from the documents.
#
# The GPU machine has no network and a call carries at most 64 MiB, so the wheels travel packed:
#
#   on the CPU machine:  bash lab/recipes/releases.sh prepare /work/lbcarry
#       downloads (cp312, manylinux) the ten numba-cuda-mlir wheels, the numba-cuda releases of
#       NC_SERIES and the candidate stacks (numba, llvmlite, numpy, cuda-core, cuda-bindings), packs
#       the mlir wheels with lab/recipes/wheelpack.py (705.7 MiB of wheels -> 65.8 MiB, zstd
#       --long=28 at level 12) and lays everything out as part-N/ folders of at most 48 MiB
#       (RELEASES_PART_MB; wheelhouse's split, whose part-1/JOIN.sh rejoins them).
#   on the GPU machine, one call per part-N folder (copied into the worktree, e.g. as lab/carry):
#       bash lab/recipes/releases.sh stage lab/carry
#       copies what it carries into $LB_TMP/lbwheels (kept while the machine stays warm); once every
#       part is there it joins split files and unpacks the mlir wheels into $LB_TMP/lbwheels.
#   then:  bash lab/recipes/releases.sh run OUT_DIR [mlir|numba-cuda|stacks|stack-bisect|claims ...]
#       claims: the runs only the claims page needs (CuPy arguments for numba-cuda-mlir #90; numba-cuda
#       0.30.4 vs numba-cuda-mlir 0.6.0 with 0/1/16 arrays and 16/256 scalars for the launch ubench's
#       table; the compiler-lock probe of #243 over 0.4.2, 0.5.0, 0.6.0), then the page from every
#       document in OUT_DIR: about 6 minutes (each series capped at CLAIMS_MAX_TIME s of measuring).
#
# Knobs: RELEASES_MAX_TIME (s of measuring per series, default 420), NC_SERIES (default
# numba-cuda==0.20.0..0.30.4), RELEASES_ROUNDS (default 20), CLAIMS_MAX_TIME (default 70). Needs zstd on the GPU machine for the mlir
# pack (else prepare with WHEELPACK_CODEC=xz: larger, xz is everywhere).
. "$(dirname "${BASH_SOURCE[0]}")/settings.sh"
set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
WHEELS=${RELEASES_WHEELS:-$LB_TMP/lbwheels}
NC_SERIES=${NC_SERIES:-numba-cuda==0.18.0..0.30.4}
# numba, llvmlite and numpy as constraints.txt pins them; cuda-core as each release allows (0.18-0.20.0 need 0.3.x)
NC_STACK=${NC_STACK:-+numba==0.65.1+llvmlite==0.47.0+numpy==2.3.5}
PY=${RELEASES_PYTHON:-python3}
# a call carries the working tree too (about 12 MiB with the committed results): parts of 48 MiB fit
PART_MB=${RELEASES_PART_MB:-48}

prepare() {
    local dest=${1:?usage: releases.sh prepare DEST}
    local dl="$dest/download" pip=(python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12
        --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64
        --platform manylinux2014_x86_64 --platform any -d)
    mkdir -p "$dl/mlir" "$dl/flat"
    for v in 0.3.0 0.4.0 0.4.1 0.4.2 0.5.0 0.5.1 0.5.2 0.5.3 0.5.4 0.6.0; do
        "${pip[@]}" "$dl/mlir" "numba-cuda-mlir==$v" -q || echo "no wheel: numba-cuda-mlir $v"
    done
    # the numba-cuda series: every release pip finds a cp312 (or pure) wheel for; the rest are
    # refused on the GPU machine in one line each (no wheel for this Python)
    local lo=${NC_SERIES#*==}; lo=${lo%%..*}
    for v in $(python3 - "$lo" <<'EOF'
import json, sys, urllib.request
try:
    from packaging.version import Version
except ImportError:
    from pip._vendor.packaging.version import Version
rel = json.load(urllib.request.urlopen("https://pypi.org/pypi/numba-cuda/json", timeout=60))["releases"]
print(" ".join(v for v in sorted(rel, key=Version) if rel[v] and not Version(v).is_prerelease
               and Version(v) >= Version(sys.argv[1])))
EOF
    ); do "${pip[@]}" "$dl/flat" "numba-cuda==$v" -q || echo "no wheel: numba-cuda $v"; done
    # the candidate stacks: the pinned one (constraints.txt) and the newest on the index
    for req in numba==0.65.1 llvmlite==0.47.0 numba==0.68.1 llvmlite==0.50.0 numpy==2.3.5 numpy==2.4.4 \
               numpy==2.5.5 cuda-core==0.7.0 cuda-core==1.2.2 cuda-bindings==13.5.0 cuda-pathfinder packaging; do
        "${pip[@]}" "$dl/flat" "$req" -q || echo "no wheel: $req"
    done
    python3 "$HERE/wheelpack.py" pack "$dest/mlirpack" $(ls "$dl"/mlir/*.whl | sort -V) \
        --codec "${WHEELPACK_CODEC:-zstd}" --part-mb "$PART_MB"
    # everything in one folder, cut into parts of PART_MB (wheelhouse's JOIN.sh rejoins them)
    cp "$dest"/mlirpack/* "$dl/flat/"
    (cd "$ROOT" && python3 -c 'import sys; from launchbench.environments import wheelhouse; wheelhouse.split(sys.argv[1], int(sys.argv[2]))' "$dl/flat" "$PART_MB")
    ls -d "$dl"/flat/part-* | while read -r p; do echo "carry: $p ($(du -sh "$p" | cut -f1))"; done
}

stage() {
    local from=${1:?usage: releases.sh stage DIR}
    mkdir -p "$WHEELS/in"
    cp -f "$from"/* "$WHEELS/in/" 2>/dev/null
    [ -f "$WHEELS/in/JOIN.sh" ] || { echo "staged $(ls "$WHEELS/in" | wc -l) files; part-1 (JOIN.sh) still to come"; return 0; }
    if bash "$WHEELS/in/JOIN.sh" "$WHEELS/in" > "$WHEELS/join.log" 2>&1; then
        mv -f "$WHEELS"/in/*.whl "$WHEELS/" 2>/dev/null
        if [ -f "$WHEELS/in/manifest.json" ] && ! ls "$WHEELS"/numba_cuda_mlir-*.whl > /dev/null 2>&1; then
            python3 "$HERE/wheelpack.py" unpack "$WHEELS/in" "$WHEELS" || return 1
        fi
        echo "ready: $(ls "$WHEELS"/*.whl | wc -l) wheels in $WHEELS"
    else
        echo "not complete yet: $(tail -n 1 "$WHEELS/join.log")"
    fi
}

one() {  # NAME LOG-ARGS... : one launchbench releases run into $OUT/NAME.json
    local name=$1; shift
    local cmd=("$PY" -m launchbench releases "$@" --wheels "$WHEELS" --system-site-packages
               --env-dir $LB_ENV_DIR --rounds "${RELEASES_ROUNDS:-20}" --max-time "${RELEASES_MAX_TIME:-420}"
               -o "$OUT/$name.json")
    echo "${cmd[*]}" >> "$OUT/command.txt"
    "${cmd[@]}" > "$OUT/$name.log" 2> "$OUT/$name.err"
    echo "$name rc=$?" | tee -a "$OUT/status.txt"
    cat "$OUT/$name.log"; grep -E "refused|skipped|error" "$OUT/$name.err" | tail -n 40
}

lockprobe() {  # NAME SERIES... : one launchbench lock-probe run into $OUT/NAME.json
    local name=$1; shift
    local cmd=("$PY" -m launchbench lock-probe "$@" --wheels "$WHEELS" --system-site-packages
               --env-dir $LB_ENV_DIR -o "$OUT/$name.json")
    echo "${cmd[*]}" >> "$OUT/command.txt"
    "${cmd[@]}" > "$OUT/$name.log" 2> "$OUT/$name.err"
    echo "$name rc=$?" | tee -a "$OUT/status.txt"
    cat "$OUT/$name.log"; tail -n 20 "$OUT/$name.err"
}

prebuilt() {  # PREBUILT_DIR (the asv range's folder): the wheels of the C step's neighbourhood, offline
    local d=${PREBUILT_DIR:?prebuilt needs PREBUILT_DIR, the asv range folder with range.json and plan.txt.json}
    local end=$(( $(date +%s) + ${PREBUILT_WAIT:-900} ))
    until [ -f "$d/plan.txt.json" ] || [ "$(date +%s)" -ge "$end" ]; do sleep 10; done
    [ -f "$d/plan.txt.json" ] || { echo "prebuilt: no $d/plan.txt.json after ${PREBUILT_WAIT:-900} s"; return 1; }
    mkdir -p "$OUT/prebuilt"
    # the wheels of the commits around the C step, each code-distinct build once, in commit order
    mapfile -t wheels < <(python3 "$LAB_RECIPES/steps.py" prebuilt_wheels "$d" "$OUT/prebuilt" "${PREBUILT_COUNT:-6}")
    printf '%s\n' "${wheels[@]}" > "$OUT/prebuilt-order.txt"
    RELEASES_MAX_TIME=${PREBUILT_MAX_TIME:-240} RELEASES_ROUNDS=${PREBUILT_ROUNDS:-12} one prebuilt-series "${wheels[@]}" \
        --pin numba==0.65.1 --pin llvmlite==0.47.0 --pin numpy==2.3.5 --pin cuda-core==0.7.0 --args 0,4
}

run() {
    OUT=${1:?usage: releases.sh run OUT_DIR [mlir numba-cuda stacks claims]}; shift
    mkdir -p "$OUT"; OUT=$(cd "$OUT" && pwd)
    cd "$ROOT" || exit 1
    unset NUMBA_ENABLE_CUDASIM LAUNCHBENCH_CUDA_MODULE
    export PYTHONUNBUFFERED=1
    # jobs running at once (go) share the tree: the C extensions are built once, by go
    [ -n "${RELEASES_NO_BUILD:-}" ] || "$PY" setup.py -q build_ext --inplace > /dev/null 2>&1 || true
    echo "# $(date -u +%FT%TZ) parts: ${*:-mlir numba-cuda stacks claims}" >> "$OUT/command.txt"
    for part in ${*:-mlir numba-cuda stacks claims}; do
        case $part in
            mlir) one mlir-series 'numba-cuda-mlir==0.3.0..0.6.0' --args 0,1,4 ;;
            numba-cuda) one numba-cuda-series "$NC_SERIES$NC_STACK" --args 0,1,4 ;;
            stacks)  # the stacks side by side, then the bisect between the two ends
                one stacks 'numba-cuda==0.30.4+pinned' 'numba-cuda==0.30.4' 'numba-cuda==0.30.4+cuda-core==0.7.0' \
                    'numba-cuda==0.30.4+cuda-core==1.2.2' 'numba-cuda==0.29.0+pinned' 'numba-cuda==0.30.0+pinned' \
                    'numba-cuda-mlir==0.6.0'
                one stack-bisect --stack-bisect 'numba-cuda==0.30.4+pinned' 'numba-cuda==0.30.4' ;;
            stack-bisect)  # the bisect alone (its chain holds both ends, measured in the same rounds)
                one stack-bisect --stack-bisect 'numba-cuda==0.30.4+pinned' 'numba-cuda==0.30.4' ;;
            prebuilt)  # per-commit wheels (the asv range's plan built them) as the points, in commit order
                prebuilt ;;
            claims)
                RELEASES_MAX_TIME=${CLAIMS_MAX_TIME:-70} one claims-cupy 'numba-cuda-mlir==0.3.0,0.4.0' \
                    --arg-kind cupy --args 1,2
                RELEASES_MAX_TIME=${CLAIMS_MAX_TIME:-70} one ubench-arrays 'numba-cuda==0.30.4' \
                    'numba-cuda-mlir==0.6.0' --args 0,1,16
                RELEASES_MAX_TIME=${CLAIMS_MAX_TIME:-70} one ubench-scalars 'numba-cuda==0.30.4' \
                    'numba-cuda-mlir==0.6.0' --arg-kind scalar --args 16,256
                lockprobe lock-probe 'numba-cuda-mlir==0.4.2,0.5.0,0.6.0'
                "$PY" -m launchbench claims "$OUT"/*.json -o "$OUT/upstream-claims.md"; cat "$OUT/upstream-claims.md" ;;
        esac
    done
}

go() {  # go RUN_DIR: after every part is staged: zstd, the clone, env-base, then one job per GPU (parallel.sh):
        # GO_JOBS (default "mlir numba-cuda stacks asv-range"; also claims, prebuilt), the asv range's parts GO_ASV_PARTS
    local r=${1:?usage: releases.sh go RUN_DIR}
    mkdir -p "$r"; r=$(cd "$r" && pwd)
    # the jobs outlive this call, and a later call sends the tree again: they run from a copy of it
    local src="$r/src"
    rm -rf "$src"; cp -a "$ROOT" "$src" && rm -rf "$src/.carry"
    ROOT=$src; HERE=$src/lab/recipes
    cd "$ROOT" || exit 1
    : > "$r/setup.log"
    [ -d "$LB_CLONE/.git" ] || { mkdir -p "$LB_CLONE" && tar -xzf "$WHEELS/in/nc-shallow.tar.gz" -C "$LB_CLONE"; }
    [ -x "$LB_ENV_BASE/bin/python" ] || LB_WHEELS=$WHEELS PINS="numpy==2.3.5 numba==0.65.1 llvmlite==0.47.0 cuda-core==0.7.0" \
        bash "$HERE/setup_env.sh" base >> "$r/setup.log" 2>&1
    tail -n 3 "$r/setup.log"
    "$LB_ENV_BASE/bin/python" setup.py -q build_ext --inplace > /dev/null 2>&1
    local env="RELEASES_NO_BUILD=1 RELEASES_PYTHON=$LB_ENV_BASE/bin/python LB_WHEELS=$WHEELS LB_PY=$LB_ENV_BASE/bin/python"
    local jobs=() job
    for job in ${GO_JOBS:-mlir numba-cuda stacks asv-range}; do
        case $job in
            mlir|numba-cuda|stacks|stack-bisect|claims) jobs+=("$job=$env bash $HERE/releases.sh run $r/$job $job") ;;
            prebuilt) jobs+=("prebuilt=$env PREBUILT_DIR=$r/asv-range bash $HERE/releases.sh run $r/prebuilt prebuilt") ;;
            asv-range) jobs+=("asv-range=$env ASV_RANGE_PARTS='${GO_ASV_PARTS:-plant plan config run before components summary}' BEFORE_COMMITS=2 bash $HERE/asv_range.sh $r/asv-range") ;;
            *) echo "go: unknown job $job (mlir numba-cuda stacks stack-bisect claims prebuilt asv-range)"; return 2 ;;
        esac
    done
    bash "$HERE/parallel.sh" start "$r" "${jobs[@]}"
}

collect() {  # collect RUN_DIR DEST: each job's folder as DEST/JOB.tar.gz (what a device call brings back)
    local r=${1:?usage: releases.sh collect RUN_DIR DEST} dest=${2:?}
    mkdir -p "$dest"
    for j in "$r"/*/; do [ "$(basename "$j")" = src ] && continue; tar -czf "$dest/$(basename "$j").tar.gz" -C "$r" "$(basename "$j")" 2>/dev/null; done
    tar -czf "$dest/job-logs.tar.gz" -C "$r" $(cd "$r" && ls *.log *.rc jobs.txt 2>/dev/null) 2>/dev/null
}

case ${1:-} in
    prepare) shift; prepare "$@" ;;
    go) shift; go "$@" ;;
    collect) shift; collect "$@" ;;
    stage) shift; stage "$@" ;;
    run) shift; run "$@" ;;
    *) echo "usage: $0 prepare DEST | stage DIR | go RUN_DIR | collect RUN_DIR DEST | run OUT_DIR [mlir|numba-cuda|stacks|stack-bisect|claims|prebuilt ...]" >&2; exit 2 ;;
esac
