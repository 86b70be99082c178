#!/usr/bin/env bash
# Installs the third-party WebSocket peers that the interop tests
# (crates/wsbench/tests/interop.rs) drive against `wsbench serve`:
#   - Python `websockets` into <repo>/.venv (pinned in tests/interop/requirements.txt)
#   - node `ws` into tests/interop/node_modules (pinned in tests/interop/package-lock.json)
# Idempotent: re-running it only re-checks what is already installed.
set -euo pipefail

cd "$(dirname "$0")/.."
repo=$(pwd)

if [ -e .venv ] && ! .venv/bin/python -c pass 2>/dev/null; then
    echo "install-test-peers: $repo/.venv is broken, recreating it"
    rm -rf .venv
fi
if [ ! -x .venv/bin/python ]; then
    echo "install-test-peers: creating $repo/.venv"
    python3 -m venv .venv
else
    echo "install-test-peers: reusing $repo/.venv"
fi
echo "install-test-peers: pip install -r tests/interop/requirements.txt"
.venv/bin/python -m pip install --quiet --disable-pip-version-check -r tests/interop/requirements.txt
.venv/bin/python -c 'import websockets; print("install-test-peers: python websockets", websockets.__version__)'

echo "install-test-peers: npm ci in tests/interop"
(cd tests/interop && npm ci --no-audit --no-fund --loglevel=error)
node -e 'console.log("install-test-peers: node", process.version, "ws", require("./tests/interop/node_modules/ws/package.json").version)'
