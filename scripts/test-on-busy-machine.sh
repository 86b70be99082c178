#!/usr/bin/env bash
# scripts/test.sh with a busy loop pinned to each of the first two CPUs (`taskset -c N yes`), as
# on a shared CI machine or a newcomer's laptop with other work running: the test suite must
# pass there too. The loops are killed by their PIDs when test.sh ends, however it ends.
# Run it on a fresh clone to include the cold build. Arguments go to scripts/test.sh.
set -uo pipefail
cd "$(dirname "$0")/.."
taskset -c 0 yes > /dev/null & busy0=$!
taskset -c 1 yes > /dev/null & busy1=$!
trap 'kill "$busy0" "$busy1" 2>/dev/null' EXIT
start=$(date +%s)
scripts/test.sh "$@"
status=$?
echo "test-on-busy-machine: exit $status after $(( $(date +%s) - start )) s at $(git rev-parse --short HEAD)"
exit "$status"
