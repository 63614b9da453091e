#!/usr/bin/env bash
# launchbench compare on the GPU machine: the three trust targets of issue 3.
#
#   bash gpu/compare.sh "$RESULTS"
#
# 1. default three-way run (baseline 0.29.0 / contextvar on it / v2 0.30.4):
#    target: every delta's 95% CI half-width <= 1% of the baseline.
# 2. A/A: numba-cuda 0.29.0 under two names: every CI contains 0.
# 3. sensitivity: delay:0.5us vs passthrough, both on 0.29.0 (delay = passthrough
#    + busy-wait, so this isolates the 0.5 us): reported within +/-0.2 us.
# Measurement (launchbench defaults): workers pinned to the highest CPU, 4 ms samples
# interleaved A B C A B C, deltas = per-round median of paired differences, t over rounds.
# Expected wall time once the envs exist: default 16 rounds ~3 min, A/A and
# sensitivity 6 rounds x 40 repeats ~40 s each: ~4.3 min in all.
# Envs are built once, offline, from /tmp/wheels into /tmp/lbenvs (they see the
# host python3's site-packages for cuda-bindings/NVVM); if that fails the
# prepared /tmp/env029 and /tmp/env030 are used instead (env:PATH variants).
# Writes <name>.json/.md/.png, <name>.log and command.txt into $RESULTS and
# prints a summary (also summary.txt). Never exits non-zero on a failed run.
set -u
export PYTHONUNBUFFERED=1 NUMBA_CUDA_LOW_OCCUPANCY_WARNINGS=0
unset NUMBA_ENABLE_CUDASIM
RESULTS=${1:-results/gpu/compare}
mkdir -p "$RESULTS"
RESULTS=$(cd "$RESULTS" && pwd)
PY=${LB_PY:-/tmp/env030/bin/python}      # runs launchbench (3.12, numba-cuda importable)
HOST_PY=${LB_HOST_PY:-python3}           # base of the variant envs (has cuda-bindings)
ENVS="--wheels ${LB_WHEELS:-/tmp/wheels} --system-site-packages --env-dir ${LB_ENV_DIR:-/tmp/lbenvs} --python $HOST_PY"
: > "$RESULTS/command.txt"

# launchbench's C extensions (_tls: delay/tls mechanisms, _floor) for this Python, in place.
"$PY" setup.py build_ext --inplace -q > "$RESULTS/build_ext.log" 2>&1 || echo "WARNING: build_ext failed (see build_ext.log)"

run() {  # run NAME ARGS... : one compare, logged; falls back to the prepared envs if building fails
    local name=$1; shift
    local cmd=("$PY" -m launchbench compare "$@" $ENVS -o "$RESULTS/$name.json")
    echo "${cmd[*]}" >> "$RESULTS/command.txt"
    echo "=== $name: ${cmd[*]}"
    local start=$(date +%s)
    "${cmd[@]}" > "$RESULTS/$name.log" 2> "$RESULTS/$name.err"
    local rc=$?
    if [ $rc -eq 2 ] && grep -qE "building variant|creating a virtualenv" "$RESULTS/$name.err"; then
        echo "env build failed ($(tail -n1 "$RESULTS/$name.err")); using /tmp/env029 and /tmp/env030"
        local fb=()
        local a
        for a in "$@"; do
            a=${a//numba-cuda==0.29.0/env:\/tmp\/env029}
            a=${a//numba-cuda==0.30.4/env:\/tmp\/env030}
            fb+=("$a")
        done
        cmd=("$PY" -m launchbench compare "${fb[@]}" -o "$RESULTS/$name.json")
        echo "${cmd[*]}" >> "$RESULTS/command.txt"
        "${cmd[@]}" > "$RESULTS/$name.log" 2>> "$RESULTS/$name.err"
        rc=$?
    fi
    echo "rc=$rc wall=$(( $(date +%s) - start ))s" | tee -a "$RESULTS/$name.log"
    cat "$RESULTS/$name.log"
    tail -n 3 "$RESULTS/$name.err"
}

V_BASE="--variant baseline=numba-cuda==0.29.0"
# 1. precision: the embedded default, spelled out so the fallback can rewrite it.
run default $V_BASE --variant contextvar=contextvar@numba-cuda==0.29.0 --variant v2=numba-cuda==0.30.4
# 2. A/A
run aa --variant a=numba-cuda==0.29.0 --variant b=numba-cuda==0.29.0 --rounds 6 --repeats 40
# 3. sensitivity
run sensitivity --variant pass=passthrough@numba-cuda==0.29.0 --variant cal=delay:0.5us@numba-cuda==0.29.0 \
    --rounds 6 --repeats 40

"$PY" - "$RESULTS" <<'PY' | tee "$RESULTS/summary.txt"
import json, os, sys
res = sys.argv[1]
def load(name):
    try:
        return json.load(open(os.path.join(res, name + ".json")))
    except Exception as exc:  # noqa: BLE001
        print(f"{name}: no results ({exc})")
        return None
def rows(doc):
    return [(d["variant"], d["nargs"], d) for d in doc["deltas"]]
print("== launchbench compare trust targets ==")
doc = load("default")
if doc:
    print(f"settings: pinned to CPUs {doc['settings']['affinity']}; {doc['settings']['repeats']} repeats x "
          f"loops {doc['settings']['loops']} per sample; method: median of paired repeat-slot differences, t over rounds")
    worst = max((d["ci_pct"][1] - d["ci_pct"][0]) / 2 for _, _, d in rows(doc))
    print(f"precision: {doc['rounds_completed']} rounds; worst CI half-width {worst:.2f}% of baseline "
          f"(target <= 1%): {'MET' if worst <= 1.0 else 'NOT MET'}")
    for v, n, d in rows(doc):
        print(f"  {n} args  {d['summary']}   ({d['delta_us']:+.2f} us)")
doc = load("aa")
if doc:
    ok = all(d["ci_us"][0] <= 0 <= d["ci_us"][1] for _, _, d in rows(doc))
    print(f"A/A: CI contains 0 at all arg counts: {'MET' if ok else 'NOT MET'}")
    for v, n, d in rows(doc):
        print(f"  {n} args  {d['summary']}   ({d['delta_us']:+.3f} us [{d['ci_us'][0]:+.3f}, {d['ci_us'][1]:+.3f}])")
doc = load("sensitivity")
if doc:
    ok = all(abs(d["delta_us"] - 0.5) <= 0.2 for _, _, d in rows(doc))
    print(f"sensitivity: delay 0.5 us reported within +/-0.2 us at all arg counts: {'MET' if ok else 'NOT MET'}")
    for v, n, d in rows(doc):
        print(f"  {n} args  {d['delta_us']:+.3f} us [{d['ci_us'][0]:+.3f}, {d['ci_us'][1]:+.3f}]")
PY
exit 0
