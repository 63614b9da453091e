#!/usr/bin/env bash
# The full default asv grid for 0.30.4, anchored (format-3 A0 tables), plus a short compare smoke, in two calls
# of a one-GPU machine (issue 35 item 2, issue 36's GPU smoke):
#   bash lab/recipes/anchored_grid.sh start     set up the envs, start the grid in the background, wait up to 520 s
#   bash lab/recipes/anchored_grid.sh finish    wait for the grid, summarize, run compare for 20 s, pack $LB_TMP/ga -> $OUT
. "$(dirname "${BASH_SOURCE[0]}")/settings.sh"
set -u
export LAUNCHBENCH_ASV_ANCHOR=$LB_ENV029/bin/python GRID_ANCHOR_DIR=$LB_TMP/lb-anchor-grid GRID_VERBOSE=1
case ${1:-} in
  start)
    (bash lab/recipes/setup_env.sh stage && bash lab/recipes/setup_env.sh envs && bash lab/recipes/setup_env.sh base) > $LB_TMP/setup.log 2>&1
    grep -c "env ok" $LB_TMP/setup.log
    ASV_NATIVE_PARTS="grid-start" bash lab/recipes/asv_native.sh $LB_TMP/ga 2>&1 | tail -2
    GRID_WAIT=520 ASV_NATIVE_PARTS="grid-wait" bash lab/recipes/asv_native.sh $LB_TMP/ga 2>&1 | tail -2 ;;
  finish)
    GRID_WAIT=300 ASV_NATIVE_PARTS="grid-wait summary" bash lab/recipes/asv_native.sh $LB_TMP/ga > $LB_TMP/ga/summary.txt 2>&1
    grep -E "grid rc|args: |agree within|a row's own" $LB_TMP/ga/summary.txt | head -40
    echo "$LB_ENV030/bin/python -m launchbench compare --variant baseline=env:$LB_ENV029 --variant v2=env:$LB_ENV030 --max-time 20 --no-report -o compare-smoke.json" > $LB_TMP/ga/compare-command.txt
    $LB_ENV030/bin/python -m launchbench compare --variant baseline=env:$LB_ENV029 --variant v2=env:$LB_ENV030 \
        --max-time 20 --no-report -o $LB_TMP/ga/compare-smoke.json > $LB_TMP/ga/compare-smoke.log 2>&1
    echo "compare rc=$?" | tee -a $LB_TMP/ga/compare-smoke.log
    tail -8 $LB_TMP/ga/compare-smoke.log
    rm -rf $LB_TMP/ga/grid-results $LB_TMP/ga/*.logs; gzip -f $LB_TMP/ga/compare-smoke.json
    tar -czf "$OUT/ga.tar.gz" -C "$LB_TMP" ga; ls -la "$OUT" ;;
  *) echo "usage: bash lab/recipes/anchored_grid.sh start|finish"; exit 2 ;;
esac
