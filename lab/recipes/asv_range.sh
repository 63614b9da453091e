#!/usr/bin/env bash
# asv over a planted range, asv's own workflow made practical (docs/asv.md, "A range"):
# plan -> asv run (count rows on every commit, timing rows on the plan) -> asv compare / publish,
# with asv's own per-commit cost before and after asv-config --plan, as JSON.
#
#   ASV_RANGE_PARTS="plant before plan components config" bash lab/recipes/asv_range.sh DIR  # call 1 (< 10 min)
#   ASV_RANGE_PARTS="run-start" bash lab/recipes/asv_range.sh DIR                    # starts the asv runs (setsid)
#   ASV_RANGE_PARTS="run-wait" bash lab/recipes/asv_range.sh DIR                     # calls 2.. until DIR/run.done
#   ASV_RANGE_PARTS="summary" bash lab/recipes/asv_range.sh DIR
#
# Parts (each writes into DIR):
#   plant     plant_range.py (lab/recipes/ or gpu/; needs --c-decoys): RANGE_COMMITS (84) commits on RANGE_BASE
#             (v0.30.4) in CLONE ($LB_CLONE), branch RANGE_BRANCH (asvrange): RANGE_PY (6) Python steps, 1 C step,
#             RANGE_DECOYS (3) compiled-source decoys; the manifest is DIR/range.json
#   before    the cost before the cuts: asv's own build (asv-config --offline, no --plan) of the range's last
#             BEFORE_COMMITS (3) commits with the count rows; asv's per-commit durations in DIR/costs-before.json
#   components what each cut saves, in asv's env of `before` (COMPONENT_REPS (3) times each, seconds in
#             DIR/components.txt): asv's build (pip wheel --no-build-isolation of the tip's tree), pip uninstall,
#             pip install of the plan's wheel with and without byte-compiling (run after plan)
#   plan      launchbench asv-plan CLONE BASE..BRANCH -o DIR/plan.txt --every DIR/every.txt (wheels and counts of
#             every commit; DIR/plan.txt.reasons, DIR/plan.txt.json)
#   config    launchbench asv-config --plan DIR/plan.txt --offline $LB_WHEELS --host-site ... -o DIR/asv.range.json
#   run-start in the background (outlives the call): asv run HASHFILE:every.txt -b bench_counts (count rows, every commit),
#             then (unless RUN_TIMING=0) asv run HASHFILE:plan.txt with TIMING_ROWS and TIMING_EXTRA (e.g. "-a rounds=4") (timing rows,
#             the plan), asv compare of each planted
#             step and decoy beside its predecessor, asv publish into DIR/html; wall of each in DIR/walls.txt,
#             DIR/run.done at the end
#   run       the same in the foreground
#   alone     count rows of ALONE_COMMITS (6) commits spread over the range in one asv process, alone: the
#             per-commit wall (DIR/walls.txt) and asv's durations (DIR/costs-alone.json)
#   probe     the count rows' setup_cache by phase (lab/recipes/count_cost.py) in asv's env: DIR/count-cost.json
#   cpair     the C step and its predecessor, TimeLaunchPreconfigured [1, 1] at CPAIR_ARGS (0|4) with CPAIR_ROUNDS (10)
#             processes each (asv's own Mann-Whitney needs more than its default 2), asv compare into
#             DIR/compare-cpair.txt
#   run-wait  wait for DIR/run.done (up to RUN_WAIT s, default 540), then print the tail of the logs
#   summary   DIR/summary.json: walls, per-commit costs before/after (asv's own durations:
#             launchbench.output.asvplan.asv_costs), the plan scored against the manifest (every Python step and
#             the C step timed beside its predecessor?), asv's regressions list checked for every Python step
# Needs: bash lab/recipes/setup_env.sh stage envs base (or gpu/setup_env.sh: $LB_ENV_BASE, $LB_WHEELS, $LB_CLONE).
# Costs: to be measured here (the issue's bound: the whole range in at most 30 minutes, builds included; count rows
# at most 15 s a commit).
. "$(dirname "${BASH_SOURCE[0]}")/settings.sh"
set -u
D=${1:?usage: bash lab/recipes/asv_range.sh DIR}
mkdir -p "$D"; D=$(cd "$D" && pwd)
export PYTHONUNBUFFERED=1 NUMBA_CUDA_LOW_OCCUPANCY_WARNINGS=0
unset NUMBA_ENABLE_CUDASIM LAUNCHBENCH_SMOKE LAUNCHBENCH_ASV_DELAY_US
PARTS=${ASV_RANGE_PARTS:-"plant before plan components config"}
CLONE=${CLONE:-$LB_CLONE}
BASE=${RANGE_BASE:-v0.30.4}
BRANCH=${RANGE_BRANCH:-asvrange}
BPY=${LB_PY:-$LB_ENV_BASE/bin/python}
MACHINE=${LAUNCHBENCH_MACHINE:-gpu-asvrange}
HOST_SITE=$(python3 -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
TIMING_ROWS=${TIMING_ROWS:-"TimeLaunchPreconfigured.time_launch\(\d, '\[1, 1\]'[,)]"}
LB_COMMON=(--python "$BPY" --system-site-packages --wheels $LB_WHEELS --wheel-cache $LB_WCACHE --env-dir $LB_ENV_DIR)
export PIP_NO_INDEX=1 PIP_FIND_LINKS=$LB_WHEELS PIP_DISABLE_PIP_VERSION_CHECK=1  # asv's own installs
echo "# $(date -u +%FT%TZ) parts: $PARTS clone=$CLONE base=$BASE branch=$BRANCH machine=$MACHINE" >> "$D/command.txt"

log() { echo "$*" >> "$D/command.txt"; echo "+ $*"; }
timed() {  # timed NAME CMD...: run, log to DIR/NAME.log, record wall seconds in DIR/walls.txt
    local name=$1; shift
    log "$@"
    local t0; t0=$(date +%s.%N)
    "$@" > "$D/$name.log" 2>&1
    local rc=$?
    echo "$name $(python3 -c "print(round($(date +%s.%N) - $t0, 1))") rc=$rc" | tee -a "$D/walls.txt"
    return $rc
}
costs() {  # costs RESULTS OUT [ONLY]: asv's own per-commit durations as JSON (ONLY: benchmarks named so)
    "$BPY" -c 'import json, sys; from launchbench.output.asvplan import asv_costs
json.dump(asv_costs(sys.argv[1], only=sys.argv[3] or None), open(sys.argv[2], "w"), indent=1)' "$1" "$2" "${3:-}"
}
planter() {
    for p in lab/recipes/plant_range.py gpu/plant_range.py; do [ -f "$p" ] && { echo "$p"; return; }; done
}
asv_range() { "$BPY" -m asv --config "$D/asv.range.json" "$@"; }

count_chunks() {  # count_chunks K: asv run -b bench_counts over every.txt in K concurrent asv processes
    local k=$1 i pids=()
    "$BPY" - "$D" "$k" <<'PY'
import json, os, sys
d, k = sys.argv[1], int(sys.argv[2])
shas = open(os.path.join(d, "every.txt")).read().split()
conf = json.load(open(os.path.join(d, "asv.range.json")))
for i in range(k):
    open(os.path.join(d, f"every-{i}.txt"), "w").write("".join(s + "\n" for s in shas[i::k]))
    json.dump(dict(conf, env_dir=conf["env_dir"].rstrip("/") + f"-chunk{i}"), open(os.path.join(d, f"asv.chunk{i}.json"), "w"))
PY
    for i in $(seq 0 $((k - 1))); do
        [ -s "$D/every-$i.txt" ] || continue
        # a HOME each: asv processes started together raced over ~/.asv-machine.json (one read it half written)
        mkdir -p "$D/home-$i"; cp -f "$HOME/.asv-machine.json" "$D/home-$i/" 2>/dev/null
        HOME="$D/home-$i" "$BPY" -m asv --config "$D/asv.chunk$i.json" run "HASHFILE:$D/every-$i.txt" -b bench_counts \
            --machine "$MACHINE" --launch-method forkserver --show-stderr > "$D/counts-chunk$i.log" 2>&1 &
        pids+=($!)
    done
    local rc=0
    for p in "${pids[@]}"; do wait "$p" || rc=$?; done
    return $rc
}

run_all() {  # the background part: count rows, timing rows, compare, publish
    # count rows are exact counts, not timings: COUNT_CHUNKS asv processes at once, each over its share of
    # the commits with an env folder of its own (one results folder); asv's per-commit durations stay per commit
    timed counts count_chunks "${COUNT_CHUNKS:-4}"
    costs "$D/asv-results" "$D/costs-counts.json" bench_counts
    if [ "${RUN_TIMING:-1}" != 0 ]; then
        # shellcheck disable=SC2086
        timed timing "$BPY" -m asv --config "$D/asv.range.json" run "HASHFILE:$D/plan.txt" -b "$TIMING_ROWS" \
            --machine "$MACHINE" --launch-method forkserver --show-stderr ${TIMING_EXTRA:-}
    fi
    costs "$D/asv-results" "$D/costs-all.json"
    # each planted step and decoy beside its predecessor (asv compare --factor 1: every count that moved)
    "$BPY" - "$D/range.json" <<'PY' > "$D/pairs.txt"
import json, sys
m = json.load(open(sys.argv[1]))
shas = [m["base"]] + [c["sha"] for c in m["commits"]]
for i, c in enumerate(m["commits"], start=1):
    if c["kind"] in ("python", "c", "decoy-c", "decoy-py"):
        print(c["kind"], shas[i - 1], c["sha"])
PY
    while read -r kind prev sha; do
        asv_range compare --machine "$MACHINE" --split --factor 1 "$prev" "$sha" > "$D/compare-$kind-${sha:0:8}.txt" 2>&1
    done < "$D/pairs.txt"
    timed publish "$BPY" -m asv --config "$D/asv.range.json" publish
    date -u +%FT%TZ > "$D/run.done"
}

for part in $PARTS; do
  case $part in
    plant)
      p=$(planter)
      [ -n "$p" ] || { echo "no plant_range.py in lab/recipes/ or gpu/"; exit 2; }
      python3 "$p" --help | grep -q -- --c-decoys || { echo "$p has no --c-decoys (compiled-source decoys)"; exit 2; }
      timed plant python3 "$p" "$CLONE" "$BASE" "$BRANCH" --commits "${RANGE_COMMITS:-84}" \
          --python-steps "${RANGE_PY:-6}" --c-steps 1 --c-decoys "${RANGE_DECOYS:-3}" --seed "${RANGE_SEED:-45}" \
          --manifest "$D/range.json"
      cat "$D/plant.log" ;;
    before)
      "$BPY" -m launchbench asv-config --repo "$CLONE" --offline $LB_WHEELS --host-site "$HOST_SITE" \
          --launch-method forkserver --results-dir "$D/asv-before" --env-dir $LB_TMP/lb-asv-before-env \
          --html-dir "$D/html-before" -o "$D/asv.before.json" > "$D/before-config.log" 2>&1 || cat "$D/before-config.log"
      "$BPY" -m asv --config "$D/asv.before.json" machine --yes --machine "$MACHINE" > /dev/null 2>&1
      timed before-setup "$BPY" -m asv --config "$D/asv.before.json" setup
      timed before "$BPY" -m asv --config "$D/asv.before.json" run "$BRANCH~${BEFORE_COMMITS:-3}..$BRANCH" -b bench_counts \
          --machine "$MACHINE" --launch-method forkserver --show-stderr
      costs "$D/asv-before" "$D/costs-before.json" bench_counts; cat "$D/costs-before.json" ;;
    components)
      epy=$(ls -d $LB_TMP/lb-asv-before-env/*/bin/python | head -1)
      # the host site's .pth out first: pip must never see (or uninstall) the host's own numba-cuda
      pth=$("$BPY" -c 'from launchbench.environments.envs import HOST_SITE_PTH; print(HOST_SITE_PTH)')
      rm -f "$("$epy" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/$pth"
      src=$(mktemp -d); git -C "$CLONE" archive "$BRANCH" | tar -x -C "$src"; out=$(mktemp -d)
      wheel=$("$BPY" -c 'import json, sys; d = json.load(open(sys.argv[1])); print(d["commits"][-1]["wheel"])' "$D/plan.txt.json")
      sec() { local s; s=$(date +%s.%N); "$@" > /dev/null 2>&1; python3 -c "print(round($(date +%s.%N) - $s, 2))"; }
      for rep in $(seq "${COMPONENT_REPS:-3}"); do
        echo "build $(sec "$epy" -m pip wheel --no-deps --no-build-isolation --no-index -w "$out" "$src")"; rm -f "$out"/*.whl
        echo "uninstall $(sec "$epy" -m pip uninstall -y numba-cuda)"
        echo "install-compile $(sec "$epy" -m pip install --no-deps "$wheel")"
        "$epy" -m pip uninstall -y numba-cuda > /dev/null 2>&1
        echo "install-no-compile $(sec "$epy" -m pip install --no-deps --no-compile "$wheel")"
        echo "replace-no-compile $(sec "$epy" -m pip install --no-deps --no-compile --force-reinstall "$wheel")"
      done | tee "$D/components.txt"
      rm -rf "$src" "$out" ;;
    plan)
      timed plan "$BPY" -m launchbench asv-plan "$CLONE" "$BASE..$BRANCH" -o "$D/plan.txt" --every "$D/every.txt" \
          "${LB_COMMON[@]}"
      tail -n 40 "$D/plan.log" ;;
    config)
      timed config "$BPY" -m launchbench asv-config --repo "$CLONE" --plan "$D/plan.txt" --offline $LB_WHEELS \
          --host-site "$HOST_SITE" --launch-method forkserver --results-dir "$D/asv-results" --env-dir $LB_TMP/lb-asv-env \
          --html-dir "$D/html" -o "$D/asv.range.json"
      "$BPY" -m asv --config "$D/asv.range.json" machine --yes --machine "$MACHINE" > /dev/null 2>&1
      timed setup "$BPY" -m asv --config "$D/asv.range.json" setup ;;
    alone)  # count rows of ALONE_COMMITS (6) commits spread over the range, one asv process, nothing beside it
      python3 "$LAB_RECIPES/steps.py" alone_commits "$D" "${ALONE_COMMITS:-6}"
      timed alone "$BPY" -m asv --config "$D/asv.range.json" run "HASHFILE:$D/alone.txt" -b bench_counts \
          --machine "$MACHINE" --launch-method forkserver --show-stderr
      costs "$D/asv-results" "$D/costs-alone.json" bench_counts
      echo "alone: $(wc -l < "$D/alone.txt") commits, $(grep '^alone ' "$D/walls.txt" | tail -n 1)"; cat "$D/costs-alone.json" ;;
    probe)  # the count rows' setup_cache by phase (lab/recipes/count_cost.py), in asv's env as the last run left it
      epy=$(ls -d $LB_TMP/lb-asv-env/*/bin/python | head -1)
      log "$epy" "$LAB_RECIPES/count_cost.py" "$D/count-cost.json" --profile "$D/count-cost-profile.txt"
      "$epy" "$LAB_RECIPES/count_cost.py" "$D/count-cost.json" --profile "$D/count-cost-profile.txt" > "$D/probe.log" 2>&1
      cat "$D/probe.log" | tail -n 40 ;;
    cpair)  # the C step beside its predecessor, the [1, 1] timing rows at CPAIR_ARGS with CPAIR_ROUNDS processes each
      python3 "$LAB_RECIPES/steps.py" c_step_pair "$D/range.json" > "$D/cpair.txt"
      timed cpair "$BPY" -m asv --config "$D/asv.range.json" run "HASHFILE:$D/cpair.txt" \
          -b "TimeLaunchPreconfigured.time_launch\((${CPAIR_ARGS:-0|4}), '\[1, 1\]'[,)]" -a rounds="${CPAIR_ROUNDS:-10}" \
          --machine "$MACHINE" --launch-method forkserver --show-stderr
      asv_range compare --machine "$MACHINE" --split --factor 1 $(cat "$D/cpair.txt") > "$D/compare-cpair.txt" 2>&1
      cat "$D/compare-cpair.txt" ;;
    run)  # run-start's work in the foreground (a job that outlives the call already: parallel.sh)
      rm -f "$D/run.done"; run_all ;;
    run-start)
      rm -f "$D/run.done"
      export -f run_all count_chunks timed log costs asv_range
      export D BPY MACHINE TIMING_ROWS TIMING_EXTRA COUNT_CHUNKS
      setsid nohup bash -c run_all > "$D/run.log" 2>&1 < /dev/null &
      echo "started: $D/run.log" ;;
    run-wait)
      end=$(( $(date +%s) + ${RUN_WAIT:-540} ))
      while [ ! -f "$D/run.done" ] && [ "$(date +%s)" -lt "$end" ]; do sleep 10; done
      cat "$D/walls.txt"; [ -f "$D/run.done" ] && echo "done" || echo "still running"
      tail -n 5 "$D"/counts.log "$D"/timing.log 2>/dev/null ;;
    summary)
      "$BPY" - "$D" <<'PY' | tee "$D/summary.txt"
import glob, json, os, sys
d = sys.argv[1]
load = lambda name: json.load(open(os.path.join(d, name))) if os.path.exists(os.path.join(d, name)) else None
manifest, plan = load("range.json"), load("plan.txt.json")
walls = {}
for line in open(os.path.join(d, "walls.txt")):
    name, wall, rc = line.split()
    walls[name] = {"wall_s": float(wall), "rc": rc}
out = {"walls": walls, "costs_before": load("costs-before.json"), "costs": load("costs-all.json")}
every = set(open(os.path.join(d, "every.txt")).read().split())
timed = open(os.path.join(d, "plan.txt")).read().split()
shas = [manifest["base"]] + [c["sha"] for c in manifest["commits"]]
steps = []
for i, c in enumerate(manifest["commits"], start=1):
    if c["kind"] in ("python", "c", "decoy-c"):
        steps.append({"kind": c["kind"], "sha": c["sha"], "index": i, "timed": c["sha"] in timed,
                      "predecessor_timed": shas[i - 1] in timed, "counted": c["sha"] in every})
out["plan"] = {"commits": len(plan["commits"]), "timed": len(timed), "steps": steps}
# asv's regressions list (asv publish): which commits it names for the count rows
reg = os.path.join(d, "html", "regressions.json")
if os.path.exists(reg):
    index = json.load(open(os.path.join(d, "html", "index.json")))
    rev_to_hash = {int(k): v for k, v in index.get("revision_to_hash", {}).items()}
    named = set()
    for entry in json.load(open(reg)).get("regressions", []):
        if "bench_counts" not in entry[0]:
            continue
        for span in entry[-1] or []:
            rev = span[1] if isinstance(span, list) and len(span) > 1 else None
            if rev is not None and rev in rev_to_hash:
                named.add(rev_to_hash[rev])
    for s in steps:
        s["in_asv_regressions"] = any(h.startswith(s["sha"][:8]) or s["sha"].startswith(h) for h in named)
    out["regressions_named"] = sorted(named)
out["costs_counts"] = load("costs-counts.json")  # after the count rows' run, before the timing run rebuilt any
out["costs_alone"] = load("costs-alone.json")  # the alone part: a few commits, one asv process, nothing beside it
counted = [c for c in out["costs_counts"] or [] if c["commit"] in every]
if counted:
    out["count_rows_per_commit_s"] = {k: round(sum((c[k] or 0) for c in counted) / len(counted), 2)
                                     for k in ("build_s", "setup_cache_s", "benchmarks_s")}
json.dump(out, open(os.path.join(d, "summary.json"), "w"), indent=1)
print(json.dumps({k: out[k] for k in out if not k.startswith("costs")}, indent=1))
PY
      ;;
    *) echo "unknown part $part"; exit 2 ;;
  esac
done
exit 0
