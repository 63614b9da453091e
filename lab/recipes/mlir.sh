#!/usr/bin/env bash
# numba-cuda-mlir on the GPU machine (issue 21): the four-way compare, peers, LC-S conformance, mlir's
# launch by stage; then lab/recipes/mlir_summary.py prints the table (with each argument's cost) and writes
# DIR/results-section.md.
#
#   bash lab/recipes/mlir.sh DIR
#
# Needs: bash lab/recipes/setup_env.sh stage envs mlir (and MLIR_VERSION=0.5.4 MLIR_DIR=$LB_TMP/envmlir054 ... mlir for
# the earlier release; skipped when absent). Knobs: MLIR_MAX_TIME (compare cap, s, default 120), MLIR_PARTS,
# MLIR_CONF_TIMEOUT (per conformance run, default 100 s), MLIR_BD_LOOPS, MLIR_BD_REPEATS. Fits in 360 s.
. "$(dirname "${BASH_SOURCE[0]}")/settings.sh"
set -u
D=${1:?usage: bash lab/recipes/mlir.sh DIR}
mkdir -p "$D"; D=$(cd "$D" && pwd)
export PYTHONUNBUFFERED=1
unset NUMBA_ENABLE_CUDASIM LAUNCHBENCH_CUDA_MODULE
PY=$LB_ENV030/bin/python
MPY=$LB_ENV_MLIR/bin/python
PARTS=${MLIR_PARTS:-"compare peers conformance breakdown"}
"$PY" setup.py -q build_ext --inplace > /dev/null 2>&1 || true
echo "# $(date -u +%FT%TZ) parts: $PARTS" >> "$D/command.txt"
for part in $PARTS; do
  echo "=== $part $(date -u +%T)"
  case $part in
    compare)
      V=(--variant baseline=env:$LB_ENV029 --variant v2=env:$LB_ENV030 --variant mlir=mlir-env:$LB_ENV_MLIR)
      [ -x $LB_TMP/envmlir054/bin/python ] && V+=(--variant mlir054=mlir-env:$LB_TMP/envmlir054)
      cmd=("$PY" -m launchbench compare "${V[@]}" --max-time "${MLIR_MAX_TIME:-120}"
           -o "$D/compare.json" --markdown "$D/compare.md" --plot "$D/compare.png")
      echo "${cmd[*]}" >> "$D/command.txt"
      "${cmd[@]}" > "$D/compare.log" 2> "$D/compare.err"; echo "rc=$?"; cat "$D/compare.log"; tail -n 3 "$D/compare.err" ;;
    peers)
      cmd=("$MPY" -m launchbench peers --rounds "${MLIR_PEER_ROUNDS:-3}" -o "$D/peers.json")
      echo "${cmd[*]}" >> "$D/command.txt"
      "${cmd[@]}" > "$D/peers.log" 2>&1; echo "rc=$?"; tail -n 25 "$D/peers.log" ;;
    conformance)
      for py in "$MPY" $LB_TMP/envmlir054/bin/python; do
        [ -x "$py" ] || continue
        tag=$(basename "$(dirname "$(dirname "$py")")")
        cmd=("$py" -m pytest -p no:cacheprovider -v -rA tests/test_lcs_conformance_mlir.py
             --junitxml "$D/conformance-$tag.xml")
        echo "${cmd[*]}" >> "$D/command.txt"
        timeout "${MLIR_CONF_TIMEOUT:-100}" "${cmd[@]}" > "$D/conformance-$tag.log" 2>&1; echo "$tag rc=$?"
        grep -E "PASSED|FAILED|ERROR|SKIPPED|passed|failed" "$D/conformance-$tag.log" | tail -n 16
      done ;;
    breakdown)
      cmd=(env LAUNCHBENCH_CUDA_MODULE=numba-cuda-mlir "$MPY" -m launchbench.workloads.stages_mlir
           --loops "${MLIR_BD_LOOPS:-3000}" --repeats "${MLIR_BD_REPEATS:-5}" -o "$D/breakdown.json")
      echo "${cmd[*]}" >> "$D/command.txt"
      timeout 90 "${cmd[@]}" > "$D/breakdown.log" 2>&1; echo "rc=$?"; tail -n 16 "$D/breakdown.log" ;;
  esac
done
"$PY" lab/recipes/mlir_summary.py "$D"
