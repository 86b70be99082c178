#!/usr/bin/env bash
# The project's one test command: installs the pinned interop peers, then runs the whole
# workspace's tests with WSBENCH_REQUIRE_PEERS=1 so a missing peer fails instead of skipping.
# Every test binary runs even when one fails (--no-fail-fast); at the end this script repeats
# the failed tests and the failed test binaries (from cargo's output, kept in a log) and exits
# non-zero.
# Extra arguments go to `cargo test`, e.g. `scripts/test.sh --test interop --test serve_cli`.
set -euo pipefail

cd "$(dirname "$0")/.."
scripts/install-test-peers.sh

# The kernel's receive backlog (net.core.netdev_max_backlog, 1,000 by default) overflows under
# the bursts of connections the tests make on loopback, and every packet it drops costs a TCP
# retransmission timeout (200 ms and up), during which a test's measured window can pass with
# nothing measured. Raise it where we may (root); say so either way.
wanted_backlog=16384
backlog=$(sysctl -n net.core.netdev_max_backlog 2>/dev/null || echo unknown)
if [ "$backlog" = unknown ]; then
    echo "test.sh: cannot read net.core.netdev_max_backlog; tests may stall on dropped packets"
elif [ "$backlog" -lt "$wanted_backlog" ]; then
    if [ "$(id -u)" -eq 0 ] && sysctl -qw net.core.netdev_max_backlog="$wanted_backlog" 2>/dev/null; then
        echo "test.sh: raised net.core.netdev_max_backlog from $backlog to $wanted_backlog (sysctl -w; it stays until reboot)"
    else
        echo "test.sh: net.core.netdev_max_backlog is $backlog and could not be raised (not root?): tests may stall on dropped packets"
    fi
fi
log="$(mktemp -t wsbench-test.XXXXXX.log)"
echo "test.sh: WSBENCH_REQUIRE_PEERS=1 cargo test --workspace --no-fail-fast $* (log: $log)"
status=0
WSBENCH_REQUIRE_PEERS=1 cargo test --workspace --no-fail-fast "$@" 2>&1 | tee "$log" || status=$?
if [ "$status" -ne 0 ]; then
    echo
    echo "test.sh: FAILED (cargo test exited $status; the whole output is in $log)"
    echo "test.sh: failed tests:"
    grep -E '^test .* \.\.\. FAILED$' "$log" | sed 's/^/    /' || echo "    (none reported: a build or a binary failed)"
    echo "test.sh: failed test binaries:"
    sed -n '/targets\{0,1\} failed:$/,$p' "$log" | sed 1d | grep -E '^\s+`' || grep -E '^error: test failed' "$log" || true
    exit "$status"
fi
rm -f "$log"
echo "test.sh: every test passed"
