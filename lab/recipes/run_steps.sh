#!/usr/bin/env bash
# Run lab/recipes/<step>.sh for each STEP on the GPU machine and pack what they wrote.
#
#   bash lab/recipes/run_steps.sh STEP[:SECONDS] ...
#
# Each step writes into $LB_STEPS_DIR/<step>/ (JSON, logs, command.txt); a step
# that fails or runs out of time does not stop the next. Everything under
# $LB_STEPS_DIR/ is packed into $OUT/gpu-results-<steps>.tar.gz so it comes back.
. "$(dirname "${BASH_SOURCE[0]}")/settings.sh"
set -u
export PYTHONUNBUFFERED=1
root=$LB_STEPS_DIR
mkdir -p "$root"
names=()
for item in "$@"; do
    step=${item%%:*}
    limit=${item#*:}
    [ "$limit" = "$item" ] && limit=480
    dir="$root/$step"
    mkdir -p "$dir"
    echo "=== $step (limit ${limit}s) $(date -u +%H:%M:%S)"
    start=$(date +%s)
    timeout --signal=INT --kill-after=20 "$limit" bash "$LAB_RECIPES/$step.sh" "$dir" > "$dir/stdout.log" 2>&1
    rc=$?
    echo "rc=$rc wall=$(( $(date +%s) - start ))s" | tee "$dir/exit.txt"
    tail -n 40 "$dir/stdout.log"
    names+=("$step")
done
if [ -n "${OUT:-}" ]; then
    tag=$(IFS=-; echo "${names[*]}")
    tar -czf "$OUT/gpu-results-$tag.tar.gz" "$root"
    ls -la "$OUT"
fi
