#!/usr/bin/env bash
# Native asv on the GPU machine (issue 20): is asv's own path truthful and fast?
#
#   ASV_NATIVE_PARTS="cost verdict lbcompare" bash lab/recipes/asv_native.sh DIR
#
# Parts (each writes into DIR; run them in calls of <= 10 min):
#   cost       per-process cost: asv run of one row at rounds=2 and rounds=12, forkserver vs spawn
#   verdict    asv-releases 0.29.0 vs 0.30.4: the five [1, 1] rows (+ raw, + reference), ASV_PASSES passes
#              of ASV_ROUNDS processes, asv compare --factor ASV_FACTOR
#   lbcompare  launchbench compare 0.29.0 vs 0.30.4 the same hour (args 0..4, LB_MAX_TIME s)
#   aa         A/A (0.30.4 vs 0.30.4+twin) and calibration (0.30.4+delay0.5us) through asv-releases
#   grid-start the full default grid for 0.30.4, started in the background (setsid: outlives the call)
#   grid-wait  wait for it (up to GRID_WAIT s), then copy its results and wall time (GRID_VERBOSE=1: asv --verbose,
#              every benchmark's start and end timestamped in grid.log); GRID_BENCH=REGEX limits the grid to
#              matching benchmarks (dry runs only: the full grid is the default)
#   builds     asv's own per-commit builds of v0.29.0 and v0.30.4 from $LB_CLONE, offline ($LB_WHEELS),
#              then asv continuous-style compare: the path the design card names (BUILD_ROUNDS processes
#              per row and commit; BUILD_ARGS_RE="0|4" picks the argument counts of the [1, 1] rows)
#   buildcheck why asv's build of v0.30.4 read 16-28 % slow (2026-11-25): the compiler flags in each
#              _dispatcher.so, asv's wheels swapped into copies of the release envs, and one launchbench
#              compare of release / asv-built / CPU-built / asv-built with BUILD_CFLAGS wheels and asv's env
#   aabuilds   A/A through asv's builds: asv continuous 10eac70a v0.30.4 (code-identical: VERSION only)
#   calbuilds  the same pair with LAUNCHBENCH_ASV_DELAY_US=0.5 on v0.30.4's processes only
# LAUNCHBENCH_ASV_PIN / LAUNCHBENCH_ASV_SPIN (auto, none, CPUs) pass through asv to every benchmark process
# (launchbench/workloads/asvnative/normalize.py: pin_cpu, spin_cpus); LAUNCHBENCH_MACHINE names the asv machine of the run.
# LAUNCHBENCH_ASV_ANCHOR=$LB_ENV029/bin/python divides every sample by the anchor (launchbench/workloads/anchor.py); the
# builds/aabuilds/calbuilds/grid-wait/mechanisms/argkinds parts then copy its A0 tables (*.table: one A0 per
# argument count with its precision, a rho per kind), run.json and log into DIR/anchor-PART; REF_ARGS_RE="0|2|4" adds
# the anchor's raw rows at those argument counts to aabuilds/calbuilds (the calibration's expected value).
#   mechanisms the mechanism rows (TimeMechanismLaunch) on 0.30.4 once per reference in MECH_REFS (default
#              "none bindings anchor": raw µs as before, divided by the bindings reference, divided by the
#              0.29.0 anchor), each in asv-results-mech-REF, then launchbench mechanisms on 0.30.4 the same
#              hour (lab/recipes/mechanisms.sh, MECH_SECONDS=60, MECH_PROCESSES=10) into DIR/lbmechanisms
#   argkinds   the argument-kind rows (TimeArgKindLaunch) on 0.30.4 once per reference in AK_REFS (the same
#              three), each in asv-results-ak-REF
#   publish    asv publish of the native results (+ builds) into DIR/html
#   summary    python lab/recipes/analyze_asv_native.py DIR > DIR/summary.txt
# Needs: bash lab/recipes/setup_env.sh stage envs base (env029, env030, env-base, $LB_WHEELS, $LB_CLONE).
# Expected walls (about 2 s per forked process, design probes): verdict 8 parameter sets x 12 processes
# x 2 releases ~ 6-7 min; lbcompare ~2 min; aa 3 labels x 8 x 6 ~ 5 min; cost ~3 min; builds ~6-8 min
# (two C-extension builds, then 10 rounds of 6 parameter sets per commit); grid 7-9 min in the background
# (2 processes per launch, mechanism and argument-kind parameter set, 1 per other benchmark:
# benchmarks/common.SURVEY_ROUNDS).
# Calls for run_steps.sh (each <= 9 min, ~25 min in all): "cost lbcompare", "verdict summary",
#   "grid-start aa" (the grid overlaps the A/A: 16 cores, one launch thread each), "builds grid-wait publish summary".
. "$(dirname "${BASH_SOURCE[0]}")/settings.sh"
set -u
D=${1:?usage: bash lab/recipes/asv_native.sh DIR}
mkdir -p "$D"; D=$(cd "$D" && pwd)
export PYTHONUNBUFFERED=1
unset NUMBA_ENABLE_CUDASIM LAUNCHBENCH_SMOKE LAUNCHBENCH_ASV_DELAY_US
PARTS=${ASV_NATIVE_PARTS:-"cost verdict lbcompare aa summary"}
ROUNDS=${ASV_ROUNDS:-6}   # x PASSES processes per parameter set and release (12 with the default 2 passes)
PASSES=${ASV_PASSES:-2}
FACTOR=${ASV_FACTOR:-1.02}
MACHINE=${LAUNCHBENCH_MACHINE:-h200-native}
PY=$LB_ENV030/bin/python
E029=$LB_ENV029/bin/python
E030=$LB_ENV030/bin/python
LEDGER=$LB_TMP/lb-native-ledger
ROWS=(-b "TimeLaunchPreconfigured.time_launch\(\d, '\[1, 1\]'[,)]" -b "TimeLaunchRaw.time_launch\((0|4)," -b "TimeReferenceLaunch.time_launch\((0|4)[,)]")
HOST_SITE=$(python3 -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
"$PY" setup.py -q build_ext --inplace > /dev/null 2>&1 || true
echo "# $(date -u +%FT%TZ) parts: $PARTS rounds=$ROUNDS passes=$PASSES build_rounds=${BUILD_ROUNDS:-10} aa_rounds=${AA_ROUNDS:-12} factor=$FACTOR machine=$MACHINE LAUNCHBENCH_ASV_PIN=${LAUNCHBENCH_ASV_PIN:-} LAUNCHBENCH_ASV_SPIN=${LAUNCHBENCH_ASV_SPIN:-} LAUNCHBENCH_ASV_ANCHOR=${LAUNCHBENCH_ASV_ANCHOR:-}" >> "$D/command.txt"

log() { echo "$*" >> "$D/command.txt"; echo "+ $*"; }
anchor_files() {  # anchor_files PART [RESULTS]: the anchor server's run record, log and A0 tables (anchor runs)
    # A0 tables: LAUNCHBENCH_ASV_A0_DIR, else RESULTS/anchor-a0 (launchbench asv-releases puts them beside its
    # --results-dir), else .asv/results/anchor-a0 (plain asv from the repo root: asv.conf.json's results_dir)
    [ -n "${LAUNCHBENCH_ASV_ANCHOR:-}" ] || return 0
    local dir=${LAUNCHBENCH_ASV_ANCHOR_DIR:-$(python3 -c "import sys; sys.path.insert(0, '.'); from launchbench.workloads import anchor; print(anchor.default_dir(sys.argv[1]))" "$LAUNCHBENCH_ASV_ANCHOR")}
    local tables=${LAUNCHBENCH_ASV_A0_DIR:-${2:-.asv/results}/anchor-a0}
    mkdir -p "$D/anchor-$1"; cp "$dir"/run.json "$dir"/anchor.log "$D/anchor-$1/" 2>/dev/null || true
    cp "$tables"/*.table "$D/anchor-$1/" 2>/dev/null || echo "anchor-$1: no A0 table in $tables" | tee -a "$D/command.txt"
}
timed() {  # timed NAME CMD...: run, log, record wall seconds in DIR/walls.txt
    local name=$1; shift
    log "$@"
    local t0; t0=$(date +%s.%N)
    "$@" > "$D/$name.log" 2>&1
    local rc=$?
    local wall; wall=$(python3 -c "import sys; print(round($(date +%s.%N) - $t0, 1))")
    echo "$name rc=$rc wall=${wall}s" | tee -a "$D/walls.txt"
    return $rc
}

releases() {  # releases NAME ARGS...: launchbench asv-releases into the shared native results
    local name=$1; shift
    timed "$name" "$PY" -m launchbench asv-releases --machine "$MACHINE" --ledger "$LEDGER" \
        --results-dir "$D/asv-results" --html-dir "$D/html" --log "$D/$name-asv-commands.txt" \
        --compare-output "$D/$name-compare.txt" --factor "$FACTOR" "$@"
    tail -n 30 "$D/$name.log"
}

BPY=$LB_ENV_BASE/bin/python
BUILD_ROWS=(-b "TimeLaunchPreconfigured.time_launch\((0|2|4), '\[1, 1\]'[,)]" -b "TimeReferenceLaunch.time_launch\((${REF_ARGS_RE:-0})[,)]")
builds_config() {  # builds_config CONFIG RESULTS ENV_DIR: asv builds each commit from $LB_CLONE, offline
    log "$BPY -m launchbench asv-config --repo $LB_CLONE --offline $LB_WHEELS --host-site $HOST_SITE --results-dir $2 --env-dir $3 -o $1"
    "$BPY" -m launchbench asv-config --repo $LB_CLONE --offline $LB_WHEELS --host-site "$HOST_SITE" \
        --launch-method forkserver --results-dir "$2" --env-dir "$3" \
        --html-dir "$D/html" -o "$1" > "$D/builds-config.log" 2>&1 || cat "$D/builds-config.log"
    # asv's own requirement installs do not see matrix.env: the pip switches must be in asv's environment
    export PIP_NO_INDEX=1 PIP_FIND_LINKS=$LB_WHEELS PIP_DISABLE_PIP_VERSION_CHECK=1
    "$BPY" -m asv --config "$1" machine --yes --machine "$MACHINE" > /dev/null 2>&1
}
so_flags() {  # so_flags NAME WHEEL: the compiler and flags recorded in the wheel's _dispatcher.so
    local so; so=$(mktemp)
    python3 "$LAB_RECIPES/steps.py" wheel_so "$2" "$so"
    echo "$1: $(basename "$2") _dispatcher.so $(stat -c %s "$so") bytes; $(strings -a "$so" | grep -m1 'GNU C' || echo 'no producer string')"
    rm -f "$so"
}
swap_env() {  # swap_env DST WHEEL: a copy of $LB_ENV030 whose numba-cuda is WHEEL's (nothing else differs)
    rm -rf "$1"; cp -a $LB_ENV030 "$1"
    local site; site=$("$1/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
    rm -rf "$site"/numba_cuda "$site"/numba_cuda-*.dist-info "$site"/_numba_cuda_redirector.*
    python3 -c "import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])" "$2" "$site"
    "$1/bin/python" -c "import importlib.metadata as m, numba.cuda; print('$1:', m.version('numba-cuda'), numba.cuda.__file__)"
}
asv_wheel() {  # asv_wheel ENV_DIR SHA: the wheel asv built for SHA (its build cache)
    find "$1" -path "*asv-build-cache/$2*" -name 'numba_cuda-*.whl' | head -1
}

per_reference() {  # per_reference TAG BENCHMARK REF...: asv-releases of one benchmark on 0.30.4 once per reference
  local tag=$1 bench=$2 ref; shift 2
  for ref in "$@"; do
    if [ "$ref" = anchor ]; then
      export LAUNCHBENCH_ASV_ANCHOR=$E029 LAUNCHBENCH_ASV_ANCHOR_DIR=$LB_TMP/lb-anchor-$tag
    else
      unset LAUNCHBENCH_ASV_ANCHOR LAUNCHBENCH_ASV_ANCHOR_DIR
    fi
    log "$tag-$ref: LAUNCHBENCH_ASV_REFERENCE=$ref LAUNCHBENCH_ASV_ANCHOR=${LAUNCHBENCH_ASV_ANCHOR:-}"
    LAUNCHBENCH_ASV_REFERENCE=$ref timed "$tag-$ref" "$PY" -m launchbench asv-releases --env "0.30.4=$E030" \
        --machine "$MACHINE-$tag-$ref" --ledger "$LEDGER" --results-dir "$D/asv-results-$tag-$ref" \
        --html-dir "$LB_TMP/lb-$tag-html" -b "$bench"
    tail -n 32 "$D/$tag-$ref.log"
    # one file per reference: a device's trip back may leave deep or many files behind
    (cd "$D" && tar -czf "asv-results-$tag-$ref.tar.gz" "asv-results-$tag-$ref")
    [ "$ref" = anchor ] && anchor_files "$tag" "$D/asv-results-$tag-$ref"
  done
  unset LAUNCHBENCH_ASV_ANCHOR LAUNCHBENCH_ASV_ANCHOR_DIR
}

for part in $PARTS; do
  echo "=== $part $(date -u +%T)"
  case $part in
    cost)
      for method in forkserver spawn; do
        for r in 2 12; do
          timed "cost-$method-r$r" "$PY" -m launchbench asv-releases --env "0.30.4=$E030" --machine "$MACHINE-cost" \
              --ledger $LB_TMP/lb-cost-ledger --results-dir $LB_TMP/lb-cost-results --html-dir $LB_TMP/lb-cost-html \
              --launch-method "$method" -a rounds=$r -b "TimeLaunchPreconfigured.time_launch\(0, '\[1, 1\]'[,)]"
        done
      done ;;
    verdict)
      releases verdict --env "0.29.0=$E029" --env "0.30.4=$E030" --passes "$PASSES" -a rounds="$ROUNDS" \
          --compare baseline:v2 "${ROWS[@]}" ;;
    lbcompare)
      timed lbcompare "$PY" -m launchbench compare --variant baseline=env:$LB_ENV029 --variant v2=env:$LB_ENV030 \
          --max-time "${LB_MAX_TIME:-90}" -o "$D/lbcompare.json" --markdown "$D/lbcompare.md" --plot "$D/lbcompare.png"
      tail -n 15 "$D/lbcompare.log" ;;
    aa)
      releases aa --env "0.30.4=$E030" --env "0.30.4+twin=$E030" --env "0.30.4+delay0.5us=$E030" \
          --passes "${ASV_AA_PASSES:-1}" -a rounds="$ROUNDS" \
          --compare 0.30.4:0.30.4+twin --compare 0.30.4:0.30.4+delay0.5us "${ROWS[@]}" ;;
    grid-start)
      # a fresh results folder: a second grid on this machine (e.g. anchored after unanchored) must not add
      # its rows to the first one's result file, and an anchored grid measures its A0 table anew
      rm -f $LB_TMP/lb-grid.done; rm -rf $LB_TMP/lb-grid-results
      log "(background) $PY -m launchbench asv-releases --env 0.30.4=$E030 (full default grid)"
      # GRID_CPUS (e.g. 0-11) keeps the grid off the CPU another part measures on; GRID_ANCHOR_DIR gives
      # it an anchor server of its own (one server serves one benchmark process at a time)
      [ -n "${GRID_ANCHOR_DIR:-}" ] && export LAUNCHBENCH_ASV_ANCHOR_DIR=$GRID_ANCHOR_DIR
      log "grid: GRID_VERBOSE=${GRID_VERBOSE:-} GRID_CPUS=${GRID_CPUS:-all} LAUNCHBENCH_ASV_ANCHOR=${LAUNCHBENCH_ASV_ANCHOR:-} LAUNCHBENCH_ASV_ANCHOR_DIR=${LAUNCHBENCH_ASV_ANCHOR_DIR:-}"
      setsid ${GRID_CPUS:+taskset -c "$GRID_CPUS"} bash -c "t0=\$(date +%s.%N); '$PY' -m launchbench asv-releases --env '0.30.4=$E030' \
          --machine '$MACHINE-grid' --ledger $LB_TMP/lb-grid-ledger --results-dir $LB_TMP/lb-grid-results \
          --html-dir $LB_TMP/lb-grid-html ${GRID_VERBOSE:+--asv-verbose} ${GRID_BENCH:+-b \"$GRID_BENCH\"} > $LB_TMP/lb-grid.log 2>&1; rc=\$?; \
          echo \"grid rc=\$rc wall=\$(python3 -c \"print(round(\$(date +%s.%N) - \$t0, 1))\")s\" > $LB_TMP/lb-grid.done" \
          < /dev/null > /dev/null 2>&1 &
      sleep 2; echo "grid started"; unset LAUNCHBENCH_ASV_ANCHOR_DIR ;;
    grid-wait)
      waited=0
      while [ ! -e $LB_TMP/lb-grid.done ] && [ $waited -lt "${GRID_WAIT:-540}" ]; do sleep 10; waited=$((waited + 10)); done
      if [ -e $LB_TMP/lb-grid.done ]; then
        cat $LB_TMP/lb-grid.done | tee -a "$D/walls.txt"
        else
        echo "grid still running after ${waited}s more (partial results copied)" | tee -a "$D/walls.txt"
      fi
      cp $LB_TMP/lb-grid.log "$D/grid.log"; rm -rf "$D/grid-results"; cp -r $LB_TMP/lb-grid-results "$D/grid-results"
      [ -n "${GRID_ANCHOR_DIR:-}" ] && export LAUNCHBENCH_ASV_ANCHOR_DIR=$GRID_ANCHOR_DIR
      anchor_files grid $LB_TMP/lb-grid-results; unset LAUNCHBENCH_ASV_ANCHOR_DIR
      (cd "$D" && tar -czf grid-results.tar.gz grid-results) ;;  # one file: what a device's trip back keeps
    mechanisms)
      per_reference mech TimeMechanismLaunch ${MECH_REFS:-none bindings anchor}
      log "MECH_VERSIONS=030 MECH_SECONDS=${MECH_SECONDS:-60} MECH_PROCESSES=${MECH_PROCESSES:-10} bash lab/recipes/mechanisms.sh DIR/lbmechanisms"
      MECH_VERSIONS=030 MECH_SECONDS=${MECH_SECONDS:-60} MECH_PROCESSES=${MECH_PROCESSES:-10} \
          bash lab/recipes/mechanisms.sh "$D/lbmechanisms" > "$D/lbmechanisms.log" 2>&1
      tail -n 20 "$D/lbmechanisms.log" ;;
    argkinds)
      per_reference ak TimeArgKindLaunch ${AK_REFS:-none bindings anchor} ;;
    builds)
      builds_config $LB_TMP/lb-builds.asv.json "$D/asv-builds" $LB_TMP/lb-asv-env
      timed builds "$BPY" -m asv --config $LB_TMP/lb-builds.asv.json continuous v0.29.0 v0.30.4 \
          --machine "$MACHINE" --factor "$FACTOR" --record-samples --show-stderr -a rounds="${BUILD_ROUNDS:-10}" \
          -b "TimeLaunchPreconfigured.time_launch\((${BUILD_ARGS_RE:-\d}), '\[1, 1\]'[,)]" -b "TimeReferenceLaunch.time_launch\(0[,)]"
      tail -n 40 "$D/builds.log"
      "$BPY" -m asv --config $LB_TMP/lb-builds.asv.json compare --machine "$MACHINE" --split --factor "$FACTOR" \
          v0.29.0 v0.30.4 > "$D/builds-compare.txt" 2>&1; cat "$D/builds-compare.txt"; anchor_files builds ;;
    buildcheck)
      {
        for py in python3 "$BPY"; do
          "$py" -c 'import os, sys, sysconfig as c; print(sys.executable, "->", os.path.realpath(sys.executable), sys.version.split()[0]); [print("  ", k, "=", c.get_config_var(k)) for k in ("CC", "CXX", "OPT", "CFLAGS", "CONFIG_ARGS")]'
        done
        gcc --version | head -1; g++ --version | head -1; echo "CFLAGS=${CFLAGS-} CXXFLAGS=${CXXFLAGS-}"
      } > "$D/buildcheck-flags.txt" 2>&1
      builds_config $LB_TMP/lb-check.asv.json $LB_TMP/lb-check-results $LB_TMP/lb-asv-env
      for c in v0.29.0 v0.30.4; do  # asv builds and installs the commit (one quick sample, not kept)
        timed "check-build-$c" "$BPY" -m asv --config $LB_TMP/lb-check.asv.json run "$c^!" --machine "$MACHINE" \
            --quick --show-stderr -b "TimeReferenceLaunch.time_launch\(0[,)]"
      done
      AENV=$(dirname "$(dirname "$(find $LB_TMP/lb-asv-env -maxdepth 3 -path '*/bin/python' | head -1)")")
      # the same, built with explicit optimisation flags into a second env dir
      builds_config $LB_TMP/lb-check-o3.asv.json $LB_TMP/lb-check-o3-results $LB_TMP/lb-asv-env-o3
      timed check-build-o3 env CFLAGS="${BUILD_CFLAGS:--O3}" CXXFLAGS="${BUILD_CFLAGS:--O3}" "$BPY" -m asv \
          --config $LB_TMP/lb-check-o3.asv.json run "v0.30.4^!" --machine "$MACHINE" --quick --show-stderr \
          -b "TimeReferenceLaunch.time_launch\(0[,)]"
      W029=$(asv_wheel $LB_TMP/lb-asv-env a8221c7b); W030=$(asv_wheel $LB_TMP/lb-asv-env 15286822)
      WO3=$(asv_wheel $LB_TMP/lb-asv-env-o3 15286822); WCPU=$(ls $LB_WCACHE/15286822*/numba_cuda-*.whl | head -1)
      {
        so_flags release-0.29.0 $LB_WHEELS/numba_cuda-0.29.0-*.whl
        so_flags release-0.30.4 $LB_WHEELS/numba_cuda-0.30.4-*.whl
        so_flags asv-0.29.0 "$W029"; so_flags asv-0.30.4 "$W030"; so_flags asv-O3-0.30.4 "$WO3"
        so_flags cpu-built-0.30.4 "$WCPU"
        echo "asv env: $AENV"; "$AENV/bin/python" -c 'import os, sys; print(os.path.realpath(sys.executable), sys.version.split()[0])'
        "$AENV/bin/python" -m pip list 2>/dev/null; echo "--- env030"; $LB_ENV030/bin/python -m pip list --path "$($LB_ENV030/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')" 2>/dev/null
      } >> "$D/buildcheck-flags.txt" 2>&1
      swap_env $LB_TMP/envasv029 "$W029"; swap_env $LB_TMP/envasv030 "$W030"; swap_env $LB_TMP/envo3030 "$WO3"
      swap_env $LB_TMP/envcpu030 "$WCPU"
      cat "$D/buildcheck-flags.txt"
      timed buildcheck "$PY" -m launchbench compare --variant rel029=env:$LB_ENV029 --variant rel030=env:$LB_ENV030 \
          --variant asv029=env:$LB_TMP/envasv029 --variant asv030=env:$LB_TMP/envasv030 \
          --variant asvO3030=env:$LB_TMP/envo3030 --variant cpu030=env:$LB_TMP/envcpu030 --variant asvenv030=env:"$AENV" \
          --max-time "${CHECK_MAX_TIME:-120}" -o "$D/buildcheck.json" --markdown "$D/buildcheck.md"
      tail -n 30 "$D/buildcheck.log" ;;
    aabuilds|calbuilds)
      builds_config $LB_TMP/lb-builds.asv.json "$D/asv-builds" $LB_TMP/lb-asv-env
      if [ "$part" = calbuilds ]; then
        export LAUNCHBENCH_ASV_DELAY_US=0.5 LAUNCHBENCH_ASV_DELAY_COMMIT=15286822
        MACH="$MACHINE-cal"
      else
        MACH="$MACHINE-aa"
      fi
      "$BPY" -m asv --config $LB_TMP/lb-builds.asv.json machine --yes --machine "$MACH" > /dev/null 2>&1
      timed "$part" "$BPY" -m asv --config $LB_TMP/lb-builds.asv.json continuous 10eac70a v0.30.4 \
          --machine "$MACH" --factor "$FACTOR" --record-samples --show-stderr -a rounds="${AA_ROUNDS:-12}" \
          "${BUILD_ROWS[@]}"
      unset LAUNCHBENCH_ASV_DELAY_US LAUNCHBENCH_ASV_DELAY_COMMIT
      tail -n 25 "$D/$part.log"
      "$BPY" -m asv --config $LB_TMP/lb-builds.asv.json compare --machine "$MACH" --split --factor "$FACTOR" \
          10eac70a v0.30.4 > "$D/$part-compare.txt" 2>&1; cat "$D/$part-compare.txt"; anchor_files "$part" ;;
    publish)
      [ -e "$LEDGER.asv.json" ] && { "$PY" -m asv --config "$LEDGER.asv.json" publish > "$D/publish.log" 2>&1; tail -n 3 "$D/publish.log"; }
      [ -e $LB_TMP/lb-builds.asv.json ] && $LB_ENV_BASE/bin/python -m asv --config $LB_TMP/lb-builds.asv.json publish \
          > "$D/publish-builds.log" 2>&1
      (cd "$D" && tar -czf html.tar.gz html 2>/dev/null && rm -rf html) ;;
    summary)
      "$PY" lab/recipes/analyze_asv_native.py "$D" | tee "$D/summary.txt" ;;
    *) echo "unknown part $part" ;;
  esac
done
