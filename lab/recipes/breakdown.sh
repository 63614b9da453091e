#!/usr/bin/env bash
# launchbench breakdown over variants on the GPU machine (issue 13: where the microseconds go).
#
#   bash gpu/breakdown.sh "$RESULTS"
#
# Two paired runs, each stage of the launch a sample key of the engine (interleaved rounds of
# fresh processes, 95% t intervals over rounds), 4 minutes of measurement in all:
#   array:  v029 = numba-cuda 0.29.0 (reference), v030 = 0.30.4, lctls = the lctls what-if on
#           0.30.4 (0.30's launch path with launchbench's tls capture); float32[1] device arrays,
#           0..4 args, BD_ARRAY_S seconds (default 170)
#   scalar: v029, v030 with Python-float arguments, BD_SCALAR_S seconds (default 70)
# Envs are built once, offline, from /tmp/wheels into /tmp/lbenvs (they see the host python3's
# site-packages); if that fails the prepared /tmp/env029 and /tmp/env030 are used instead
# (env:PATH variants), as gpu/compare.sh does. BD_ARGS adds options to both runs; BD_BASE replaces
# the reference (e.g. BD_BASE=twin=numba-cuda==0.30.4: an A/A check of the method on one release).
# Writes <run>.json.gz, <run>.log, <run>.err and command.txt into $RESULTS and prints a short
# table (also summary.txt). Never exits non-zero on a failed run.
set -u
export PYTHONUNBUFFERED=1 NUMBA_CUDA_LOW_OCCUPANCY_WARNINGS=0
unset NUMBA_ENABLE_CUDASIM
RESULTS=${1:-results/gpu/breakdown}
mkdir -p "$RESULTS"
RESULTS=$(cd "$RESULTS" && pwd)
PY=${LB_PY:-/tmp/env030/bin/python}      # runs launchbench (3.12, numba-cuda importable)
HOST_PY=${LB_HOST_PY:-python3}           # base of the variant envs (has cuda-bindings)
ENVS="--wheels ${LB_WHEELS:-/tmp/wheels} --system-site-packages --env-dir ${LB_ENV_DIR:-/tmp/lbenvs} --python $HOST_PY"
touch "$RESULTS/command.txt"

# launchbench's C extensions (_tls: the tls capture of lctls and the delay mechanism) for this Python.
"$PY" setup.py build_ext --inplace -q > "$RESULTS/build_ext.log" 2>&1 || echo "WARNING: build_ext failed (see build_ext.log)"

run() {  # run NAME SECONDS ARGS... : one paired breakdown; falls back to the prepared envs if building fails
    local name=$1 seconds=$2; shift 2
    local common=(--max-time "$seconds" --quiet ${BD_ARGS:-} -o "$RESULTS/$name.json")
    local cmd=("$PY" -m launchbench breakdown "$@" $ENVS "${common[@]}")
    echo "${cmd[*]}" >> "$RESULTS/command.txt"
    echo "=== $name: ${cmd[*]}"
    local start=$(date +%s)
    "${cmd[@]}" > "$RESULTS/$name.log" 2> "$RESULTS/$name.err"
    local rc=$?
    if [ $rc -eq 2 ] && grep -qE "building variant|creating a virtualenv|no environment for variant|--wheels" "$RESULTS/$name.err"; then
        echo "env build failed ($(tail -n1 "$RESULTS/$name.err")); using /tmp/env029 and /tmp/env030"
        local fb=() a
        for a in "$@"; do
            a=${a//numba-cuda==0.29.0/env:\/tmp\/env029}
            a=${a//numba-cuda==0.30.4/env:\/tmp\/env030}
            fb+=("$a")
        done
        cmd=("$PY" -m launchbench breakdown "${fb[@]}" "${common[@]}")
        echo "${cmd[*]}" >> "$RESULTS/command.txt"
        "${cmd[@]}" > "$RESULTS/$name.log" 2>> "$RESULTS/$name.err"
        rc=$?
    fi
    echo "rc=$rc wall=$(( $(date +%s) - start ))s" | tee -a "$RESULTS/$name.log"
    tail -n 3 "$RESULTS/$name.err"
}

BASE=${BD_BASE:-v029=numba-cuda==0.29.0}  # the reference; BD_BASE=twin=numba-cuda==0.30.4 makes it an A/A check
run array "${BD_ARRAY_S:-170}" --arg-kind array --variant "$BASE" \
    --variant v030=numba-cuda==0.30.4 --variant lctls=lctls@numba-cuda==0.30.4
run scalar "${BD_SCALAR_S:-70}" --arg-kind scalar --variant "$BASE" --variant v030=numba-cuda==0.30.4

"$PY" - "$RESULTS" <<'PY' | tee "$RESULTS/summary.txt"
import gzip, json, os, shutil, sys
res = sys.argv[1]
ROWS = ["full", "configured_call", "type_dispatch", "typeof", "lc_bookkeeping", "dispatcher_frame", "cufunc_lookup", "marshal_args",
        "launch_config", "driver_launch", "param_pack", "launch_frame", "rest:full", "rest:dispatcher_call", "rest:kernel_launch",
        "remainder", "rest:insitu"]
PER_ARG = ["type_dispatch", "typeof", "marshal_args", "marshal_extensions", "marshal_branch", "marshal_wrap",
           "marshal_imports", "marshal_view", "marshal_to_device", "marshal_fields", "marshal_convert", "marshal_pack",
           "rest:marshal_args", "param_pack", "driver_launch", "full"]
def cell(r):
    return "-".rjust(16) if not r else f"{r['us']:+8.3f}±{(r['ci'][1] - r['ci'][0]) / 2:.3f}".rjust(16)
for name in ("array", "scalar"):
    path = os.path.join(res, name + ".json")
    try:
        doc = json.load(open(path))
    except Exception as exc:  # noqa: BLE001
        print(f"== {name}: no results ({exc})")
        continue
    a = doc["analysis"]
    print(f"== {name} arguments: {doc['rounds_completed']} rounds ({doc.get('stopped') or 'all planned'}), "
          f"measurement {doc['timing'].get('measure_s')} s, reference {doc['reference']}")
    counts = [str(n) for n in doc["settings"]["arg_counts"]]
    show = [counts[0], counts[-1]]
    for v in doc["variants"]:
        lv = a["levels"][v["name"]]
        print(f"  {v['name']:6} numba-cuda {v.get('numba_cuda_version')}{' + ' + v['mechanism'] if v.get('mechanism') else ''}: "
              f"full {lv[show[0]]['full']['us']:.2f} / {lv[show[1]]['full']['us']:.2f} us at {show[0]} / {show[1]} args")
    for var, by_n in a["stage_deltas"].items():
        print(f"  {var} - {doc['reference']} (us, ± 95% half-width):" + "".join(f"{n + ' args':>16}" for n in show))
        for row in ROWS:
            if any(by_n[n].get(row) for n in show):
                print(f"    {row:26}" + "".join(cell(by_n[n].get(row)) for n in show))
        for n, rec in a["additivity"][var].items():
            g = rec["gap"]
            print(f"    {n} args: stages {rec['sum_of_stages']['us']:+.3f}, full {rec['full']['us']:+.3f}: "
                  + ("adds up" if rec["adds_up"] else f"DOES NOT add up, gap {g['us']:+.3f} [{g['ci'][0]:+.3f}, {g['ci'][1]:+.3f}]"
                     + (f" in {', '.join(rec.get('moved', []))}" if rec.get("moved") else "")))
    print("  unexplained parts (max over arg counts; limit 0.5 us):")
    for var, parts in a["unexplained"].items():
        print("    " + f"{var:6} " + "  ".join(f"{p} {r['max_us']:+.2f}@{r['at_nargs']}{'!' if r['over_limit'] else ''}"
                                              for p, r in parts.items()))
    cols = list(a["per_arg"])
    print("  per added argument (us):" + "".join(f"{c[:15]:>16}" for c in cols))
    for row in PER_ARG:
        if any(a["per_arg"][c].get(row) for c in cols):
            print(f"    {row:22}" + "".join(cell(a["per_arg"][c].get(row)) for c in cols))
    with open(path, "rb") as src, gzip.open(path + ".gz", "wb") as dst:  # the samples make it large
        shutil.copyfileobj(src, dst)
    os.unlink(path)
PY
exit 0
