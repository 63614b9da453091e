#!/usr/bin/env bash
# GPU step: the asv launch suite on released numba-cuda 0.29.0 (baseline) and
# 0.30.4 (v2), in the ready venvs /tmp/env029 and /tmp/env030 (no network,
# no clone: launchbench asv-releases keys each release to a commit of a tiny
# release ledger), then `asv compare baseline v2`.
#
#   bash gpu/asv_releases.sh "$RESULTS"
#
# Writes into $RESULTS: asv-results/ (commit it as results/asv/), compare.txt,
# summary.txt, device.json, pip-freeze-*.txt, command.txt, asv_releases.log.
# Never exits non-zero (the lead runs steps one after another).
set -u
RESULTS=${1:?usage: bash gpu/asv_releases.sh RESULTS_DIR}
mkdir -p "$RESULTS"
RESULTS=$(cd "$RESULTS" && pwd)
export PYTHONUNBUFFERED=1
unset NUMBA_ENABLE_CUDASIM LAUNCHBENCH_SMOKE
ENV029=${ENV029:-/tmp/env029}
ENV030=${ENV030:-/tmp/env030}
PY=$ENV030/bin/python
MACHINE=${LAUNCHBENCH_MACHINE:-h200}
LEDGER=/tmp/launchbench-release-ledger
TIME_LIMIT=${ASV_RELEASES_TIME_LIMIT:-420}
rm -rf "$LEDGER" "$LEDGER.python" "$LEDGER.asv.json" "$RESULTS/asv-results"

# One round per benchmark and the launch grid trimmed to fit ~6 minutes for
# two releases: every (args, config) preconfigured, configure-per-launch at
# [1, 1], the v2 callback benchmark (skips on 0.29.0), and the run-kind flag.
CMD=("$PY" -m launchbench asv-releases
     --env "0.29.0=$ENV029/bin/python" --env "0.30.4=$ENV030/bin/python"
     --config "$PWD/asv.conf.json" --machine "$MACHINE" --ledger "$LEDGER" --results-dir "$RESULTS/asv-results"
     --html-dir "$RESULTS/html" --compare-output "$RESULTS/compare.txt" --log "$RESULTS/asv-commands.txt"
     -b 'TimeLaunchPreconfigured'
     -b "TimeLaunchConfigurePerLaunch.time_launch\(\d, '\[1, 1\]'\)"
     -b 'TimeLaunchWithCallback'
     -b 'TrackRunKind'
     -a rounds=1)

{
  echo "# $(date -u +%FT%TZ) on $(hostname)"
  printf '%q ' timeout "$TIME_LIMIT" "${CMD[@]}"; echo
} > "$RESULTS/command.txt"

"$PY" -m launchbench info --json > "$RESULTS/device.json" 2>&1 || echo "launchbench info failed (see device.json)"
"$ENV029/bin/python" -m pip freeze > "$RESULTS/pip-freeze-env029.txt" 2>&1
"$ENV030/bin/python" -m pip freeze > "$RESULTS/pip-freeze-env030.txt" 2>&1

start=$(date +%s)
timeout "$TIME_LIMIT" "${CMD[@]}" > "$RESULTS/asv_releases.log" 2>&1
rc=$?
echo "asv-releases exit code $rc after $(( $(date +%s) - start )) s (124 = hit the ${TIME_LIMIT}s limit)" | tee -a "$RESULTS/command.txt"
[ -f "$RESULTS/asv-commands.txt" ] && { echo "# asv commands run:"; cat "$RESULTS/asv-commands.txt"; } >> "$RESULTS/command.txt"

# Compact summary: µs per launch, preconfigured [1, 1], by argument count.
"$PY" - "$RESULTS/asv-results" "$MACHINE" "$LEDGER" > "$RESULTS/summary.txt" 2>&1 <<'EOF'
import glob, itertools, json, os, subprocess, sys
root, machine, ledger = sys.argv[1:4]
rows = {}


def version(sha):
    out = subprocess.run(["git", "-C", ledger, "show", f"{sha}:VERSION"], capture_output=True, text=True)
    return out.stdout.strip() or sha[:8]


for path in glob.glob(os.path.join(root, machine, "*.json")):
    if path.endswith("machine.json"):
        continue
    data = json.load(open(path))
    res = data["results"].get("bench_launch.TimeLaunchPreconfigured.time_launch")
    if not res:
        continue
    values, params = res[0], res[1]
    label = version(data["commit_hash"])
    for (a, c), v in zip(itertools.product(*params), values):
        rows.setdefault((a, c), {})[label] = v
hashes = sorted({h for r in rows.values() for h in r}, key=lambda v: [int(x) if x.isdigit() else x for x in v.split(".")])
print("preconfigured launch cfg(*args), median us/launch by numba-cuda release")
print("args  config                     " + "  ".join(f"{h:>10}" for h in hashes))
for (a, c), r in sorted(rows.items()):
    cells = ["%10.2f" % (r[h] * 1e6) if r.get(h) is not None and r[h] == r[h] else "%10s" % "n/a" for h in hashes]
    print(f"{a:<5} {c:<26} " + "  ".join(cells))
EOF

echo "== asv compare baseline (0.29.0) v2 (0.30.4), machine $MACHINE"
cat "$RESULTS/compare.txt" 2>/dev/null || { echo "(no compare output; tail of the log:)"; tail -20 "$RESULTS/asv_releases.log"; }
echo "== summary"
cat "$RESULTS/summary.txt"
exit 0
