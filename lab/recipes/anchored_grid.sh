#!/usr/bin/env bash
# The full default asv grid for 0.30.4, anchored (format-3 A0 tables), plus a short compare smoke, in two calls
# of a one-GPU machine (issue 35 item 2, issue 36's GPU smoke):
#   bash gpu/anchored_grid.sh start     set up the envs, start the grid in the background, wait up to 520 s
#   bash gpu/anchored_grid.sh finish    wait for the grid, summarize, run compare for 20 s, pack /tmp/ga -> $OUT
set -u
export LAUNCHBENCH_ASV_ANCHOR=/tmp/env029/bin/python GRID_ANCHOR_DIR=/tmp/lb-anchor-grid GRID_VERBOSE=1
case ${1:-} in
  start)
    (bash gpu/setup_env.sh stage && bash gpu/setup_env.sh envs && bash gpu/setup_env.sh base) > /tmp/setup.log 2>&1
    grep -c "env ok" /tmp/setup.log
    ASV_NATIVE_PARTS="grid-start" bash gpu/asv_native.sh /tmp/ga 2>&1 | tail -2
    GRID_WAIT=520 ASV_NATIVE_PARTS="grid-wait" bash gpu/asv_native.sh /tmp/ga 2>&1 | tail -2 ;;
  finish)
    GRID_WAIT=300 ASV_NATIVE_PARTS="grid-wait summary" bash gpu/asv_native.sh /tmp/ga > /tmp/ga/summary.txt 2>&1
    grep -E "grid rc|args: |agree within|a row's own" /tmp/ga/summary.txt | head -40
    echo "/tmp/env030/bin/python -m launchbench compare --variant baseline=env:/tmp/env029 --variant v2=env:/tmp/env030 --max-time 20 --no-report -o compare-smoke.json" > /tmp/ga/compare-command.txt
    /tmp/env030/bin/python -m launchbench compare --variant baseline=env:/tmp/env029 --variant v2=env:/tmp/env030 \
        --max-time 20 --no-report -o /tmp/ga/compare-smoke.json > /tmp/ga/compare-smoke.log 2>&1
    echo "compare rc=$?" | tee -a /tmp/ga/compare-smoke.log
    tail -8 /tmp/ga/compare-smoke.log
    rm -rf /tmp/ga/grid-results /tmp/ga/*.logs; gzip -f /tmp/ga/compare-smoke.json
    tar -czf "$OUT/ga.tar.gz" -C /tmp ga; ls -la "$OUT" ;;
  *) echo "usage: bash gpu/anchored_grid.sh start|finish"; exit 2 ;;
esac
