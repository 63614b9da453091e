#!/usr/bin/env bash
# Several recipes at once on a host of several GPUs, each on a GPU and physical cores of its own, so one
# device lease measures what would otherwise take several (docs/releases.md, "On the GPU machine").
#
#   bash lab/recipes/parallel.sh start DIR 'NAME=COMMAND' ...   job i: CUDA_VISIBLE_DEVICES=i, its own cores;
#                                                              started with setsid, so it outlives the call
#   bash lab/recipes/parallel.sh wait DIR [SECONDS]             until every job has DIR/NAME.rc (or SECONDS)
#
# The cores: the host's physical cores (SMT siblings kept together) are dealt out in order; the last
# job gets the rest (give it the building job: wheel builds take every core they are offered).
# PARALLEL_CORES (default 6) physical cores per job before the last. Each job's output is DIR/NAME.log.
# Jobs time on different GPUs and cores at once: they share the host's memory and caches, which each
# job's interleaved design (every point in every round) keeps out of its comparisons but not out of its
# absolute levels; the lab README of a run made so says so.
. "$(dirname "${BASH_SOURCE[0]}")/settings.sh"
set -u

groups() {  # groups N: N lines of CPU lists, physical cores dealt out in order, the last line the rest
    python3 - "$1" "${PARALLEL_CORES:-6}" <<'PY'
import glob, os, sys
n, per = int(sys.argv[1]), int(sys.argv[2])
cores = {}
for path in sorted(glob.glob("/sys/devices/system/cpu/cpu[0-9]*/topology/thread_siblings_list")):
    cpu = int(path.split("/")[5][3:])
    if cpu in os.sched_getaffinity(0):
        cores.setdefault(open(path).read().strip(), []).append(cpu)
phys = sorted(cores.values())
if len(phys) < n:
    sys.exit(f"parallel.sh: {len(phys)} physical cores for {n} jobs")
per = min(per, max(1, len(phys) // n))
for i in range(n):
    chunk = phys[i * per:(i + 1) * per] if i < n - 1 else phys[(n - 1) * per:]
    print(",".join(str(c) for core in chunk for c in sorted(core)))
PY
}

start() {
    local dir=${1:?usage: parallel.sh start DIR NAME=COMMAND ...}; shift
    mkdir -p "$dir"; dir=$(cd "$dir" && pwd)
    local n=$# i=0 cpus name cmd
    mapfile -t cpus < <(groups "$n") || exit 2
    [ "${#cpus[@]}" -eq "$n" ] || exit 2
    for job in "$@"; do
        name=${job%%=*}; cmd=${job#*=}
        rm -f "$dir/$name.rc"
        echo "$(date -u +%FT%TZ) $name gpu=$i cpus=${cpus[$i]}: $cmd" | tee -a "$dir/jobs.txt"
        CUDA_VISIBLE_DEVICES=$i setsid nohup taskset -c "${cpus[$i]}" \
            bash -c "$cmd; echo \$? > '$dir/$name.rc'" > "$dir/$name.log" 2>&1 < /dev/null &
        i=$((i + 1))
    done
}

wait_all() {
    local dir=${1:?usage: parallel.sh wait DIR [SECONDS]} end=$(( $(date +%s) + ${2:-540} )) name pending
    while :; do
        pending=""
        for name in $(sed -n 's/^[^ ]* \([^ ]*\) gpu=.*/\1/p' "$dir/jobs.txt"); do
            [ -f "$dir/$name.rc" ] || pending="$pending $name"
        done
        [ -z "$pending" ] || [ "$(date +%s)" -ge "$end" ] && break
        sleep 10
    done
    for name in $(sed -n 's/^[^ ]* \([^ ]*\) gpu=.*/\1/p' "$dir/jobs.txt"); do
        echo "== $name rc=$(cat "$dir/$name.rc" 2>/dev/null || echo running)"; tail -n 6 "$dir/$name.log"
    done
    [ -z "$pending" ] && echo "all done" || echo "running:$pending"
}

case ${1:-} in
    start) shift; start "$@" ;;
    wait) shift; wait_all "$@" ;;
    *) echo "usage: $0 start DIR NAME=COMMAND ... | wait DIR [SECONDS]" >&2; exit 2 ;;
esac
