#!/usr/bin/env bash
# GPU step (issue 5): LC-S conformance, LC-S launch costs, and the skip check.
#
#   bash lab/recipes/lcs.sh RESULTS_DIR
#
# 1. $LB_ENV030 (numba-cuda 0.30.4): pytest tests/test_lcs_conformance.py -v
#    -> conformance-030.xml (junit) + conformance-030.log. One test is a strict
#    xfail: the reproducer of a first-launch race predicted from the source.
# 2. $LB_ENV030: python -m launchbench.workloads.lcs --bench -> lcs-bench.json: us/launch
#    for the LC-S kernel (default config, second already-specialized config)
#    and its non-LC-S twin, 0..4 args, plus 0/1/4 pre_launch_callbacks.
# 3. $LB_ENV030: asv-runner smoke of benchmarks/bench_lcs.py (every
#    benchmark, first params, few samples) -> asv-smoke-030.json (runs, not skips).
# 4. $LB_ENV029 (numba-cuda 0.29.0): the same asv-runner pass must skip every
#    LC-S benchmark, and the conformance tests must all skip -> *-029.*
# About 2-4 minutes; each part has its own time limit; never exits non-zero.
. "$(dirname "${BASH_SOURCE[0]}")/settings.sh"
set -u
export PYTHONUNBUFFERED=1 NUMBA_CUDA_LOW_OCCUPANCY_WARNINGS=0
unset NUMBA_ENABLE_CUDASIM
RESULTS=${1:?usage: bash lab/recipes/lcs.sh RESULTS_DIR}
mkdir -p "$RESULTS"
RESULTS=$(cd "$RESULTS" && pwd)
CMDS="$RESULTS/command.txt"
STATUS="$RESULTS/status.txt"
: > "$CMDS"
: > "$STATUS"


# asv-runner's own setup/run path over bench_lcs: what asv would skip or measure.
ASV_SMOKE='
import json, os, sys, time
sys.path.insert(0, os.getcwd())  # run from the repo root
from asv_runner.discovery import disc_benchmarks
import benchmarks.bench_lcs as bench_lcs
out = {}
try:
    bench_lcs.lcs_or_skip()
    out["lcs_or_skip"] = "runs"
except NotImplementedError as exc:
    out["lcs_or_skip"] = "skips: %s" % exc
print("lcs_or_skip:", out["lcs_or_skip"], flush=True)
for b in disc_benchmarks(os.path.join(os.getcwd(), "benchmarks"), ignore_import_errors=True):
    if not b.name.startswith("bench_lcs."):
        continue
    start = time.time()
    try:
        b.set_cache(b.do_setup_cache()) if hasattr(b, "set_cache") else b.insert_param(b.do_setup_cache())
        if b.params:
            b.set_param_idx(0)
        if b.do_setup():
            out[b.name] = {"status": "skipped", "seconds": round(time.time() - start, 1)}
            print(b.name, out[b.name], flush=True)
            continue
        b.repeat = (2, 5, 2.0)  # smoke: a few samples only
        result = b.do_run()
        b.do_teardown()
        out[b.name] = {"status": "ran", "result": result}
    except Exception as exc:  # noqa: BLE001 - reported
        out[b.name] = {"status": "error", "error": f"{type(exc).__name__}: {exc}"[:500]}
    out[b.name]["seconds"] = round(time.time() - start, 1)
    print(b.name, out[b.name], flush=True)
with open(sys.argv[1] + ".tmp", "w") as fh:
    json.dump(out, fh, indent=1, default=repr)
os.replace(sys.argv[1] + ".tmp", sys.argv[1])
'

printf '%s\n' "$ASV_SMOKE" > "$RESULTS/asv_smoke.py"

for ver in 030 029; do
    py=${LCS_ENV_PREFIX:-$LB_TMP/env}$ver/bin/python
    if [ ! -x "$py" ]; then
        echo "SKIP numba-cuda $ver: $py missing (run lab/recipes/setup_env.sh envs)" | tee -a "$STATUS"
        continue
    fi
    run 240 "$RESULTS/conformance-$ver.log" "$py" -m pytest tests/test_lcs_conformance.py -v -rsxX \
        -p no:cacheprovider --junitxml "$RESULTS/conformance-$ver.xml"
    if [ "$ver" = 030 ]; then
        run 120 "$RESULTS/lcs-bench.log" "$py" -m launchbench.workloads.lcs --bench --json "$RESULTS/lcs-bench.json"
    fi
    run 150 "$RESULTS/asv-smoke-$ver.log" "$py" "$RESULTS/asv_smoke.py" "$RESULTS/asv-smoke-$ver.json"
done

echo
echo "== LC-S step summary =="
cat "$STATUS"
for ver in 030 029; do
    log="$RESULTS/conformance-$ver.log"
    [ -f "$log" ] && echo "conformance $ver: $(tail -n 1 "$log")"
    [ -f "$log" ] && grep -E "(PASSED|FAILED|XFAIL|XPASS|ERROR|SKIPPED)" "$log" | grep "::" | sed 's/^/  /' | head -30
done
[ -f "$RESULTS/lcs-bench.log" ] && cat "$RESULTS/lcs-bench.log"
for ver in 030 029; do
    f="$RESULTS/asv-smoke-$ver.json"
    [ -f "$f" ] && python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
print("asv smoke %s (%s):" % (sys.argv[2], d.pop("lcs_or_skip", "?")),
      ", ".join("%s=%s" % (k.split(".", 1)[1], v["status"]) for k, v in sorted(d.items())))
' "$f" "$ver"
done
exit 0
