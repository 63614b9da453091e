# Shared by the lab/recipes/*.sh steps (source it after setting RESULTS).
#
# run LIMIT LOG CMD...: record CMD in $RESULTS/command.txt, run it with a time
# limit (SIGINT first, so partial results get written), log its output, and
# append (and print) "rc=N LOG" to $RESULTS/status.txt.
. "$(dirname "${BASH_SOURCE[0]}")/settings.sh"
run() {
    local limit=$1 log=$2
    shift 2
    echo "$*" >> "$RESULTS/command.txt"
    timeout --signal=INT --kill-after=15 "$limit" "$@" > "$log" 2>&1
    local rc=$?
    echo "rc=$rc $(basename "$log")" | tee -a "$RESULTS/status.txt"
    return $rc
}
