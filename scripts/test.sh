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
