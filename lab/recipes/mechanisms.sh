#!/usr/bin/env bash
# GPU step (issue 4): launch-config capture mechanisms, switched inside each of many processes.
#
#   bash gpu/mechanisms.sh RESULTS_DIR
#
# For numba-cuda 0.30.4 (/tmp/env030, call(args, launch_config)) and 0.29.0
# (/tmp/env029, call(args, griddim, blockdim, stream, sharedmem)):
#   1. installs this checkout's launchbench into a private dir with the host
#      python3 (as gpu/setup_env.sh does; same 3.12 ABI), so the code
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
set -u
export PYTHONUNBUFFERED=1 NUMBA_CUDA_LOW_OCCUPANCY_WARNINGS=0
unset NUMBA_ENABLE_CUDASIM
RESULTS=${1:?usage: bash gpu/mechanisms.sh RESULTS_DIR}
mkdir -p "$RESULTS"
RESULTS=$(cd "$RESULTS" && pwd)
REPO=$(pwd)
SECONDS_PER_VERSION=${MECH_SECONDS:-120}
PROCESSES=${MECH_PROCESSES:-20}
CMDS="$RESULTS/command.txt"
: > "$CMDS"

. "$(dirname "$0")/lib.sh"  # run LIMIT LOG CMD...

for ver in ${MECH_VERSIONS:-030 029}; do
    env=/tmp/env$ver
    if [ ! -x "$env/bin/python" ]; then
        echo "SKIP numba-cuda $ver: $env/bin/python missing (run gpu/setup_env.sh envs)" | tee -a "$RESULTS/status.txt"
        continue
    fi
    lib=/tmp/launchbench-mech-$ver
    rm -rf "$lib"
    if run 45 "$RESULTS/install-$ver.log" "${HOST_PY:-python3}" -m pip install -q --no-index --no-deps \
            --no-build-isolation --no-compile --target "$lib" "$REPO"; then
        pp=$lib
    else
        echo "WARNING: private install failed; using the launchbench installed in $env"
        pp=
    fi
    # cd /tmp: the checkout's own launchbench/ (no C extension for this python) must not shadow it
    (cd /tmp && PYTHONPATH=$pp run $((SECONDS_PER_VERSION + 40 + 3 * PROCESSES)) "$RESULTS/mechanisms-$ver.log" "$env/bin/python" \
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
        (cd /tmp && PYTHONPATH=$pp run 70 "$RESULTS/pytest-$ver.log" "$env/bin/python" -m pytest -q -rs \
            -p no:cacheprovider --rootdir "$REPO" "$REPO"/tests/test_tls.py "$REPO"/tests/test_mechanisms*.py)
    fi
done

echo
echo "=== launchbench mechanisms summary (us/launch; delta = median of paired differences [95% order-statistic CI])"
for ver in ${MECH_VERSIONS:-030 029}; do
    f="$RESULTS/mechanisms-$ver.json"
    [ -f "$f" ] || { echo "numba-cuda $ver: no JSON (see mechanisms-$ver.log)"; continue; }
    python3 - "$f" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
a = doc["analysis"]
nproc = len(doc.get("processes") or []) or 1
wall = doc.get("timing", {}).get("wall_s", doc.get("elapsed_s", "?"))
print(f"numba-cuda {doc['numba_cuda']} {doc['signature']}: {nproc} process(es), {doc['rounds_complete']} pair rounds"
      + f" x {doc['params']['launches']} launches in {wall} s, CPUs {doc['params'].get('affinity')}"
      + (" (INTERRUPTED)" if doc["interrupted"] else "") + f"; {doc['device'].get('name')}; {doc['schema']}")
w = doc.get("class_writes")
if w and w["blocks"]:
    print(f"  CUDADispatcher written before {w['class_modified']}/{w['blocks']} blocks (warm-up "
          f"{doc['params'].get('warmup_class_write')} there, {doc['params']['warmup']} after in-place switches): "
          + ", ".join(f"{s} {c['class_modified']}/{c['blocks']}" for s, c in w["by_mechanism"].items()))
def d(x):
    return "-" if x is None else f"{x['delta_us']:+.3f} [{x['ci_us'][0]:+.3f},{x['ci_us'][1]:+.3f}]"
print("deltas: " + ("mean over processes [95% t CI over processes]" if nproc > 1 else
                    "median of paired differences [95% order-statistic CI], one process"))
print(f"{'args':<5}{'stock':>8} {'tls-pass':>24} {'ctxvar-stock':>24} {'ctxvar %':>9} {'delay-pass':>24}  target")
for k, e in a["per_args"].items():
    cv = e["vs_stock"].get("contextvar")
    dl = next((v for s, v in e["vs_passthrough"].items() if s.startswith("delay")), None)
    print(f"{k:<5}{e['median_us'].get('stock', float('nan')):>8.2f} {d(e['vs_passthrough'].get('tls')):>24}"
          f" {d(cv):>24} {(cv['delta_pct'] if cv else float('nan')):>+8.1f}% {d(dl):>24}  "
          f"{e.get('tls_target', {}).get('verdict', '-')}")
sds = [e["vs_passthrough"]["tls"].get("sd_between_processes_us") for e in a["per_args"].values()
       if "tls" in e["vs_passthrough"]]
if nproc > 1 and sds and None not in sds:
    print(f"  tls-pass SD between processes: " + " ".join(f"{x:.3f}" for x in sds) + " us")
v = a["tls_target"]["verdict"]
print(f"target {a['tls_target']['rule']}: {v.upper()} -> {'MET' if v == 'met' else 'NOT MET'}")
PY
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
