#!/usr/bin/env bash
# The counts channel on the GPU machine (issue 33): exact Python bytecodes, calls and function
# entries per launch, beside the µs, for the releases, a mechanism and a what-if.
#
#   COUNTS_PARTS="three aa" bash lab/recipes/counts.sh RESULTS
#
# Needs `bash lab/recipes/setup_env.sh stage envs aa` ($LB_ENV029, $LB_ENV030, and $LB_TMP/env030b: a
# second env of 0.30.4 for the A/A pair). Parts:
#   three   the default three-way compare (0.29.0 / contextvar on it / 0.30.4), counts in 2 processes per variant
#   aa      two envs of 0.30.4 under two names, counts in 3 processes each: every count delta must be 0
#   asv     the asv track rows (benchmarks/bench_counts.py) on 0.29.0 and 0.30.4 through asv-releases, every
#           parameter; asv compare at --factor 1 (asv's default 1.02 files small exact steps as unchanged)
#   breakdown  launchbench breakdown --variant 0.29.0 / 0.30.4 (paired stages) with its counts
#   pr      launchbench pr on the v2 merge (05922fc4 vs its parent de4642c2), cost and counts only
#   bisect-real, history-real   bisect and history over v0.29.0..v0.30.4 (needs `setup_env.sh base` and the
#           per-commit wheels in $LB_WCACHE, the clone in $LB_CLONE)
#   bisect-planted  bisect from its manifest's base over each range in $LB_CLONE made by lab/recipes/plant_range.py
#           (PLANTED="planted-a ..."),
#           scored against its manifest (.whl3/range-*.json) by lab/recipes/score_bisect.py
#   hand    FACTS.md's by-hand count (sys.monitoring around 50 launches of k[1, 1](a, a), harness included) in
#           each env, to show where its fractional residue came from
#   across  the same variant's counts in different runs (three, aa, whatif) compared: identical?
#   whatif  0.30.4 vs hoist-imports@0.30.4 (to_device's per-call imports hoisted), paired µs and counts
#   cmd     launchbench counts: 0.29.0, contextvar on it, 0.30.4, hoist-imports on it and numba-cuda-mlir
#           (needs `setup_env.sh mlir`), device arrays at 0..4 args; then CuPy, torch, scalar and eager
#           device-array arguments for 0.29.0 and 0.30.4 at 1 and 4 args
# Each part writes <part>.json/.md/.log and appends its command to command.txt.
. "$(dirname "${BASH_SOURCE[0]}")/settings.sh"
set -u
export PYTHONUNBUFFERED=1 NUMBA_CUDA_LOW_OCCUPANCY_WARNINGS=0
unset NUMBA_ENABLE_CUDASIM
RESULTS=${1:?usage: bash lab/recipes/counts.sh RESULTS}
mkdir -p "$RESULTS"
RESULTS=$(cd "$RESULTS" && pwd)
PY=${LB_PY:-$LB_ENV030/bin/python}
PARTS=${COUNTS_PARTS:-three aa hand across}
# per-commit envs (history, bisect, pr): from $LB_ENV_BASE, seeing the pins and the host's CUDA packages
HIST_ENVS="--python $LB_ENV_BASE/bin/python --system-site-packages --wheels $LB_WHEELS --wheel-cache $LB_WCACHE --env-dir $LB_ENV_DIR"
touch "$RESULTS/command.txt"
"$PY" setup.py build_ext --inplace -q > "$RESULTS/build_ext.log" 2>&1 || echo "WARNING: build_ext failed"

lb() {  # lb NAME ARGS...: one launchbench command, logged
    local name=$1; shift
    echo "$PY -m launchbench $*" >> "$RESULTS/command.txt"
    echo "=== $name: launchbench $*"
    local start; start=$(date +%s)
    "$PY" -m launchbench "$@" > "$RESULTS/$name.log" 2> "$RESULTS/$name.err"
    local rc=$?
    echo "rc=$rc wall=$(( $(date +%s) - start ))s" | tee -a "$RESULTS/$name.log"
    cat "$RESULTS/$name.log"; tail -n 3 "$RESULTS/$name.err"
}

for part in $PARTS; do
    case $part in
    three)
        lb three compare --variant baseline=env:$LB_ENV029 --variant contextvar=contextvar@baseline \
            --variant v2=env:$LB_ENV030 --counts 2 -o "$RESULTS/three.json" ;;
    aa)
        lb aa compare --variant a=env:$LB_ENV030 --variant b=env:$LB_TMP/env030b --counts 3 --max-time 30 \
            -o "$RESULTS/aa.json" ;;
    whatif)
        lb whatif compare --variant v2=env:$LB_ENV030 --variant hoist=hoist-imports@v2 --counts 2 \
            -o "$RESULTS/whatif.json" ;;
    cmd)
        mlir=(); [ -x $LB_ENV_MLIR/bin/python ] && mlir=(--variant mlir=mlir-env:$LB_ENV_MLIR)
        lb counts-releases counts --variant baseline=env:$LB_ENV029 --variant contextvar=contextvar@baseline \
            --variant v2=env:$LB_ENV030 --variant hoist=hoist-imports@v2 "${mlir[@]}" --args 0-4 \
            -o "$RESULTS/counts-releases.json"
        for kind in cupy torch scalar; do
            lb "counts-$kind" counts --variant baseline=env:$LB_ENV029 --variant v2=env:$LB_ENV030 \
                --arg-kind "$kind" --args 1,4 -o "$RESULTS/counts-$kind.json"
        done
        lb counts-eager counts --variant baseline=env:$LB_ENV029 --variant v2=env:$LB_ENV030 \
            --dispatch eager --args 1,4 -o "$RESULTS/counts-eager.json" ;;
    asv)
        rm -rf $LB_TMP/lb-counts-ledger $LB_TMP/lb-counts-ledger.* "$RESULTS/asv-results"
        start=$(date +%s)
        cmd=("$PY" -m launchbench asv-releases --env "0.29.0=$LB_ENV029/bin/python" --env "0.30.4=$LB_ENV030/bin/python"
             --machine h200 --ledger $LB_TMP/lb-counts-ledger --results-dir "$RESULTS/asv-results" --html-dir $LB_TMP/lb-counts-html
             --compare-output "$RESULTS/asv-compare.txt" -b 'bench_counts\.')
        echo "${cmd[*]}" >> "$RESULTS/command.txt"
        timeout --signal=INT 420 "${cmd[@]}" > "$RESULTS/asv.log" 2>&1
        echo "rc=$? wall=$(( $(date +%s) - start ))s" | tee -a "$RESULTS/asv.log"
        tail -n 5 "$RESULTS/asv.log"
        cmd=("$PY" -m asv compare --config $LB_TMP/lb-counts-ledger.asv.json --machine h200 --factor 1 v0.29.0 v0.30.4)
        echo "(cd $LB_TMP/lb-counts-ledger && ${cmd[*]})" >> "$RESULTS/command.txt"
        (cd $LB_TMP/lb-counts-ledger && "${cmd[@]}") > "$RESULTS/asv-compare-factor1.txt" 2>&1
        head -n 60 "$RESULTS/asv-compare-factor1.txt"
        tar -czf "$RESULTS/asv-results.tar.gz" -C "$RESULTS" asv-results && rm -rf "$RESULTS/asv-results" ;;
    breakdown)
        lb breakdown breakdown --variant v029=env:$LB_ENV029 --variant v030=env:$LB_ENV030 --max-time 90 \
            --markdown "$RESULTS/breakdown.md" -o "$RESULTS/breakdown.json" ;;
    pr)
        lb pr pr $LB_CLONE 05922fc4 --base de4642c2 --no-conformance $HIST_ENVS --out "$RESULTS/pr" ;;
    bisect-real)
        lb bisect-real bisect $LB_CLONE v0.29.0 v0.30.4 $HIST_ENVS -o "$RESULTS/bisect-real.json" ;;
    history-real)
        lb history-real history $LB_CLONE v0.29.0..v0.30.4 $HIST_ENVS --rounds 12 --max-time 150 \
            -o "$RESULTS/history-real.json" ;;
    bisect-planted)
        for branch in ${PLANTED:-planted-a}; do
            good=$("$PY" -c 'import json, sys; print(json.load(open(sys.argv[1]))["base"])' ".whl3/range-$branch.json")
            lb "bisect-$branch" bisect $LB_CLONE "$good" "$branch" $HIST_ENVS -o "$RESULTS/bisect-$branch.json"
            "$PY" lab/recipes/score_bisect.py "$RESULTS/bisect-$branch.json" ".whl3/range-$branch.json" \
                | tee "$RESULTS/score-$branch.txt"
            cp ".whl3/range-$branch.json" "$RESULTS/" 2>/dev/null
        done ;;
    hand)
        for env in $LB_ENV029 $LB_ENV030; do
            echo "$env/bin/python lab/recipes/counts_by_hand.py" >> "$RESULTS/command.txt"
            "$env/bin/python" lab/recipes/counts_by_hand.py 2>&1 | tee -a "$RESULTS/hand.log"
        done ;;
    across)
        echo "$PY lab/recipes/counts_across.py $RESULTS/*.json" >> "$RESULTS/command.txt"
        "$PY" lab/recipes/counts_across.py "$RESULTS"/*.json 2>&1 | tee "$RESULTS/across.log" ;;
    *) echo "unknown part $part" ;;
    esac
done
