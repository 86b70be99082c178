#!/usr/bin/env bash
# The project's one test command: installs the pinned interop peers, then runs the whole
# workspace's tests with WSBENCH_REQUIRE_PEERS=1 so a missing peer fails instead of skipping.
# Every test binary runs even when one fails (--no-fail-fast); cargo then lists the failed
# ones at the end and exits non-zero.
# Extra arguments go to `cargo test`, e.g. `scripts/test.sh --test interop --test serve_cli`.
set -euo pipefail

cd "$(dirname "$0")/.."
scripts/install-test-peers.sh
echo "test.sh: WSBENCH_REQUIRE_PEERS=1 cargo test --workspace --no-fail-fast $*"
WSBENCH_REQUIRE_PEERS=1 exec cargo test --workspace --no-fail-fast "$@"
