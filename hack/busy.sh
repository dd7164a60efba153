#!/usr/bin/env bash
# Runs a command while stress-ng keeps one core busy, as another job on a shared CI machine
# would (make test-busy; docs/reliability.md#a-busy-machine). Prints the load average before and
# after, and the command's exit status is the script's.
#
#   BUSY_CPUS=1   how many stress-ng CPU workers (each keeps one core busy)
set -uo pipefail
cpus=${BUSY_CPUS:-1}
command -v stress-ng >/dev/null || { echo "busy.sh: stress-ng is not installed (hack/ensure-packages.sh stress-ng)" >&2; exit 2; }
stress-ng --cpu "$cpus" --cpu-method matrixprod --quiet &
stress=$!
trap 'kill "$stress" 2>/dev/null; wait "$stress" 2>/dev/null' EXIT
echo ">> busy.sh: stress-ng --cpu $cpus (pid $stress); load before: $(cut -d' ' -f1-3 /proc/loadavg); start $(date -u +%FT%TZ)"
start=$(date +%s)
"$@"
rc=$?
echo ">> busy.sh: '$*' exited $rc after $(( $(date +%s) - start )) s; load after: $(cut -d' ' -f1-3 /proc/loadavg); end $(date -u +%FT%TZ)"
exit $rc
