#!/usr/bin/env bash
# bench/clients.sh: the client leaderboard. The most common complaint about published
# WebSocket benchmarks is that they measured the client, not the server; this measures the
# clients themselves, on one pinned `wsbench serve` that counts what it echoed, so each tool's
# rate, CPU per round trip and own count stand beside what the server saw.
#
#   bench/clients.sh                 # 3 repeats; closed loop at 100 and 1,000 connections,
#                                    # open loop at 10,000 msg/s over 100 connections (~12 min)
#   REPEATS=5 bench/clients.sh       # more repeats
#   TOOLS="wsbench-uring node-ws" bench/clients.sh    # a subset
#   Environment: REPEATS (3), WARMUP (2), DURATION (5), START_WAIT (30), RATE (10000),
#                SERVER_CPU (0), CLIENT_CPU (1), TOOLS, OUT (bench/.build/clients/runs/DATE).
#
# This script installs the tools into bench/.build/clients/ (once; again when a pin changes)
# and then runs bench/clients.py, which measures and prints the table. Installs: the release
# wsbench from this tree (copied, so a rebuild during the run cannot swap it); Artillery and
# node `ws` from bench/peers/clients/package-lock.json (`npm ci`); Python `websockets` in a
# venv. Not part of CI. k6 is not on the board: its licence (AGPL) is one this project does
# not take in, not even as a bench tool it builds.
set -euo pipefail
bench=$(cd "$(dirname "$0")" && pwd)
repo=$(dirname "$bench")
cache=$bench/.build/clients
mkdir -p "$cache"

# wsbench, release, from this tree.
(cd "$repo" && cargo build --release -q -p wsbench)
cp "${CARGO_TARGET_DIR:-$repo/target}/release/wsbench" "$cache/wsbench"

# Artillery and node `ws`, pinned by the lock file. Playwright (an Artillery dependency for
# browser tests) would fetch a browser at install time: not wanted, and not reachable here.
node_dir=$cache/node
if ! cmp -s "$bench/peers/clients/package-lock.json" "$node_dir/package-lock.json" \
    || [ ! -x "$node_dir/node_modules/.bin/artillery" ]; then
    rm -rf "$node_dir"
    mkdir -p "$node_dir"
    cp "$bench/peers/clients/package.json" "$bench/peers/clients/package-lock.json" "$node_dir/"
    (cd "$node_dir" && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-audit --no-fund --loglevel=error >&2)
fi

# Python `websockets`, pinned.
websockets_version=17.4
venv=$cache/venv
if ! "$venv/bin/python" -c "import websockets, sys; sys.exit(websockets.__version__ != '$websockets_version')" 2>/dev/null; then
    rm -rf "$venv"
    python3 -m venv "$venv"
    "$venv/bin/pip" install -q --disable-pip-version-check "websockets==$websockets_version" >&2
fi

export WSBENCH_BIN=$cache/wsbench NODE_DIR=$node_dir VENV_PYTHON=$venv/bin/python
exec python3 "$bench/clients.py" "$@"
