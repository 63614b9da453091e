#!/usr/bin/env bash
# The C functions numba-cuda's launch calls from Python, named, on the GPU machine (Python 3.12:
# sys.monitoring names every C callable, cuda-bindings' Cython functions included).
#
#   bash lab/recipes/counts_callees.sh RESULTS
#
# Needs /tmp/env029 and /tmp/env030 (setup_env.sh's "stage envs": numba-cuda 0.29.0 and 0.30.4).
# launchbench counts of both at 0 and 2 device-array arguments (2 processes each, nothing timed),
# then callees.txt: per variant and arg count every C callee with its calls per launch and its
# callers, and the C callees that changed from 0.29.0 to 0.30.4. Writes counts-callees.json/.md,
# counts-callees.log/.err, callees.txt and command.txt under RESULTS.
set -u
export PYTHONUNBUFFERED=1 NUMBA_CUDA_LOW_OCCUPANCY_WARNINGS=0
unset NUMBA_ENABLE_CUDASIM
RESULTS=${1:?usage: bash lab/recipes/counts_callees.sh RESULTS}
mkdir -p "$RESULTS"
RESULTS=$(cd "$RESULTS" && pwd)
PY=${LB_PY:-/tmp/env030/bin/python}
"$PY" setup.py build_ext --inplace -q > "$RESULTS/build_ext.log" 2>&1 || echo "WARNING: build_ext failed"
cmd=("$PY" -m launchbench counts --variant v029=env:/tmp/env029 --variant v030=env:/tmp/env030 --args 0,2
     -o "$RESULTS/counts-callees.json" --markdown "$RESULTS/counts-callees.md")
echo "${cmd[*]}" >> "$RESULTS/command.txt"
timeout --signal=INT 480 "${cmd[@]}" > "$RESULTS/counts-callees.log" 2> "$RESULTS/counts-callees.err"
echo "rc=$?" | tee -a "$RESULTS/counts-callees.log"
tail -n 3 "$RESULTS/counts-callees.err"
echo "$PY - $RESULTS/counts-callees.json  # the summary below, into callees.txt" >> "$RESULTS/command.txt"
"$PY" - "$RESULTS/counts-callees.json" > "$RESULTS/callees.txt" <<'PYEOF'
import json
import sys

doc = json.load(open(sys.argv[1]))
section = doc["counts"]
for name, per in section["variants"].items():
    for nargs, rec in per.items():
        print(f"{name}, {nargs} args ({rec['counter']}, Python {rec['python']}; reproducible: {rec['reproducible']})")
        by = {}
        for f in rec["functions"]:
            for callee, calls in (f.get("c_callees") or {}).items():
                acc = by.setdefault(callee, [0, []])
                acc[0] += calls
                acc[1].append(f"{f['module']}:{f['function']}")
        for callee, (calls, callers) in sorted(by.items(), key=lambda kv: (-kv[1][0], kv[0])):
            print(f"  {calls:>6} {callee}  <- {', '.join(callers)}")
        print(f"  C calls per launch {rec['per_launch'].get('c_calls')}, named {sum(v[0] for v in by.values())}")
for name, per in section["diffs"].items():
    for nargs, d in per.items():
        if "error" in d:
            print(f"{name} vs {section['reference']}, {nargs} args: {d['error']}")
            continue
        print(f"{name} vs {section['reference']}, {nargs} args: C callees that changed (launch):")
        for c in d["c_callees"]:
            print(f"  {c['delta']:+} {c['name']} ({c['ref']} -> {c['other']}, {c['status']})")
PYEOF
cat "$RESULTS/callees.txt"
