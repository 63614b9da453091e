#!/usr/bin/env bash
# bisect over ranges made by gpu/plant_range.py, each scored against its manifest (issue 34).
#
#   PLANTED="planted-e planted-e:nohints planted-c" bash gpu/bisect_planted.sh DIR
#
# Each item is a branch of /tmp/nc whose manifest is .whl3/range-<branch>.json; GOOD is the
# manifest's base, BAD the branch. "<branch>:nohints" bisects with --no-hints (counts, then timing
# alone: no commit is timed first for its compiled sources). BISECT_GPUS="0,1" bisects on two lanes;
# BISECT_EXTRA adds options to every bisect (e.g. "--max-time 240"). Needs
# `bash gpu/setup_env.sh stage envs base` with .whl3 carried (/tmp/wcache, /tmp/nc).
# Writes <name>.json.gz, .log, score-<name>.txt (gpu/score_bisect.py), the manifests, command.txt and
# status.txt.
set -u
export PYTHONUNBUFFERED=1 NUMBA_CUDA_LOW_OCCUPANCY_WARNINGS=0
unset NUMBA_ENABLE_CUDASIM
RESULTS=${1:-results/gpu/bisect-planted}
mkdir -p "$RESULTS"
RESULTS=$(cd "$RESULTS" && pwd)
. "$(dirname "$0")/lib.sh"
PY=${LB_PY:-/tmp/env030/bin/python}
COMMON="--python /tmp/env-base/bin/python --system-site-packages --wheels /tmp/wheels --wheel-cache /tmp/wcache
        --env-dir /tmp/lbenvs"
touch "$RESULTS/command.txt"
nvidia-smi -L > "$RESULTS/gpus.txt" 2>&1
nproc > "$RESULTS/nproc.txt"
for item in ${PLANTED:-planted-e planted-e:nohints planted-c planted-d}; do
    branch=${item%%:*}
    mode=${item#"$branch"}; mode=${mode#:}
    manifest=".whl3/range-$branch.json"
    name="bisect-$branch${mode:+-$mode}${BISECT_GPUS:+-gpus${BISECT_GPUS//,/}}"
    extra=""
    [ "$mode" = nohints ] && extra="--no-hints"
    [ -n "${BISECT_GPUS:-}" ] && extra="$extra --gpus $BISECT_GPUS"
    good=$("$PY" -c 'import json, sys; print(json.load(open(sys.argv[1]))["base"])' "$manifest") || continue
    start=$(date +%s)
    # shellcheck disable=SC2086
    run "${BISECT_LIMIT:-560}" "$RESULTS/$name.log" "$PY" -m launchbench bisect /tmp/nc "$good" "$branch" $COMMON \
        $extra ${BISECT_EXTRA:-} -o "$RESULTS/$name.json"
    echo "$name: process wall $(( $(date +%s) - start )) s" | tee -a "$RESULTS/status.txt"
    "$PY" gpu/score_bisect.py "$RESULTS/$name.json" "$manifest" | tee "$RESULTS/score-$name.txt"
    cp "$manifest" "$RESULTS/"
    grep -v "round .* done" "$RESULTS/$name.log" | tail -n 12
done
gzip -f "$RESULTS"/*.json 2>/dev/null
gunzip -f "$RESULTS"/range-*.json.gz 2>/dev/null
rm -rf "$RESULTS"/*.logs/overlay "$RESULTS"/*.logs/*/overlay  # copies of launchbench itself
exit 0
