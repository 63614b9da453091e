#!/usr/bin/env bash
# bisect over ranges made by lab/recipes/plant_range.py, each scored against its manifest (issue 34).
#
#   PLANTED="planted-e planted-e:nohints planted-c" bash lab/recipes/bisect_planted.sh DIR
#
# Each item is a branch of $LB_CLONE whose manifest is .whl3/range-<branch>.json; GOOD is the
# manifest's base, BAD the branch. "<branch>:nohints" bisects with --no-hints (counts, then timing
# alone: no commit is timed first for its compiled sources). BISECT_GPUS="0,1" bisects on two lanes;
# BISECT_EXTRA adds options to every bisect (e.g. "--max-time 240"). Needs
# `bash lab/recipes/setup_env.sh stage envs base` with .whl3 carried ($LB_WCACHE, $LB_CLONE).
# Writes <name>.json.gz, .log, score-<name>.txt (lab/recipes/score_bisect.py), the manifests, command.txt and
# status.txt.
. "$(dirname "${BASH_SOURCE[0]}")/settings.sh"
set -u
export PYTHONUNBUFFERED=1 NUMBA_CUDA_LOW_OCCUPANCY_WARNINGS=0
unset NUMBA_ENABLE_CUDASIM
RESULTS=${1:-$LB_STEPS_DIR/bisect-planted}
mkdir -p "$RESULTS"
RESULTS=$(cd "$RESULTS" && pwd)
PY=${LB_PY:-$LB_ENV030/bin/python}
COMMON="--python $LB_ENV_BASE/bin/python --system-site-packages --wheels $LB_WHEELS --wheel-cache $LB_WCACHE
        --env-dir $LB_ENV_DIR"
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
    run "${BISECT_LIMIT:-560}" "$RESULTS/$name.log" "$PY" -m launchbench bisect $LB_CLONE "$good" "$branch" $COMMON \
        $extra ${BISECT_EXTRA:-} -o "$RESULTS/$name.json"
    echo "$name: process wall $(( $(date +%s) - start )) s" | tee -a "$RESULTS/status.txt"
    "$PY" lab/recipes/score_bisect.py "$RESULTS/$name.json" "$manifest" | tee "$RESULTS/score-$name.txt"
    cp "$manifest" "$RESULTS/"
    grep -v "round .* done" "$RESULTS/$name.log" | tail -n 12
done
gzip -f "$RESULTS"/*.json 2>/dev/null
gunzip -f "$RESULTS"/range-*.json.gz 2>/dev/null
rm -rf "$RESULTS"/*.logs/overlay "$RESULTS"/*.logs/*/overlay  # copies of launchbench itself
exit 0
