#!/usr/bin/env bash
# Installs the third-party WebSocket peers that the interop tests
# (crates/wsbench/tests/interop.rs) drive against `wsbench serve`:
#   - Python `websockets` into <repo>/.venv (pinned in tests/interop/requirements.txt); also
#     the guarded server tests/interop/auth_server.py of crates/wsbench/tests/engine/endpoint.rs
#     and the JSON-RPC / graphql-transport-ws peer tests/interop/jsonrpc_server.py of
#     crates/wsbench/tests/engine/flow.rs
#   - Python `prometheus-client` into the same .venv (same file), whose text parser reads
#     `--metrics-addr` in crates/wsbench/tests/live.rs
#   - node `ws` into tests/interop/node_modules (pinned in tests/interop/package-lock.json)
# and what the HTML report's browser test (crates/wsbench/tests/browser.rs) and the browser
# recording test (crates/wsbench/tests/recorded_browser.rs) need:
#   - `playwright-core` into tests/browser/node_modules (pinned in tests/browser/package-lock.json)
#   - Chromium at /usr/bin/chromium (apt-get, only when it is missing; needs root or sudo)
# and the fault tests' proxy (crates/wsbench/tests/faults.rs):
#   - toxiproxy-server into <repo>/.tools (scripts/install-toxiproxy.sh, needs Go)
# and the real servers of the application-protocol tests (crates/appproto/tests, started
# by crates/testpeers; see docs/peers.md):
#   - mosquitto and rabbitmq-server (apt-get, only when missing; needs root or sudo)
#   - socket.io (+ socket.io-msgpack-parser), graphql-ws (+ graphql, ws) and rpc-websockets
#     into tests/peers/node_modules
#     (pinned in tests/peers/package-lock.json)
#   - nats-server into <repo>/.tools (scripts/install-nats-server.sh, needs Go)
#   - centrifugo into <repo>/.tools (scripts/install-centrifugo.sh, needs Go), also the
#     fleet member servers/centrifugo
#   - ruby-actioncable and puma (apt-get, only when missing; needs root or sudo): Action Cable
#     for the fleet member servers/ruby-actioncable, whose config.ru the tests start
#   - aiosignalr (a SignalR hub server) into <repo>/.venv-signalr (servers/python-signalr/
#     requirements.txt: it needs websockets 16, .venv pins 17.4), the fleet member's hub
#   - sockudo, a Pusher server, into <repo>/.tools (scripts/install-sockudo.sh: cargo install,
#     needs protobuf-compiler from apt-get; about 10 minutes once per machine, its binary
#     then kept in ~/.cache/wsbench-tools), also the fleet member servers/sockudo
# and the HTTP/2 fronts of the RFC 8441 tests (crates/wsbench/tests/engine/http2.rs):
#   - nftables and iproute2 (apt-get, only when missing; needs root or sudo): the head-of-line
#     test drops packets with nft between network namespaces it makes with ip
#   - haproxy (apt-get, only when missing; needs root or sudo); node's own http2 module needs
#     nothing more than node
#   - the fleet's axum server, servers/rust-axum (cargo build --release --locked, from
#     crates.io; its own Cargo.lock)
# and the HTTP/3 servers of the RFC 9220 tests (crates/wsbench/tests/engine/http3_peers.rs),
# both also fleet members:
#   - Caddy into <repo>/.tools (scripts/install-caddy.sh, needs Go), servers/caddy-h3
#   - hypercorn and aioquic into <repo>/.venv (servers/python-hypercorn-h3/requirements.txt),
#     servers/python-hypercorn-h3's ASGI echo application
# Idempotent: re-running it only re-checks what is already installed.
set -euo pipefail

cd "$(dirname "$0")/.."
repo=$(pwd)

# apt-get install the Debian packages among "$@" that are not installed (root or sudo).
apt_install() {
    local missing=() package sudo=""
    for package in "$@"; do
        if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
            missing+=("$package")
        fi
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    if [ "$(id -u)" -ne 0 ]; then
        if ! command -v sudo >/dev/null; then
            echo "install-test-peers: ${missing[*]} missing; install them as root" >&2
            exit 1
        fi
        sudo="sudo"
    fi
    echo "install-test-peers: apt-get update && apt-get install -y ${missing[*]}"
    # Another apt-get (an unattended upgrade, a second checkout's install) may hold the
    # dpkg lock: wait for it, up to ten minutes, instead of failing at once.
    $sudo apt-get -o DPkg::Lock::Timeout=600 update -qq
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq "${missing[@]}"
}

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
.venv/bin/python -c 'import importlib.metadata as m; print("install-test-peers: python prometheus-client", m.version("prometheus-client"))'
echo "install-test-peers: pip install -r servers/python-hypercorn-h3/requirements.txt"
.venv/bin/python -m pip install --quiet --disable-pip-version-check -r servers/python-hypercorn-h3/requirements.txt
.venv/bin/python -c 'import importlib.metadata as m; print("install-test-peers: python hypercorn", m.version("hypercorn"), "aioquic", m.version("aioquic"))'

# aiosignalr needs websockets 16, which .venv pins at 17.4: the SignalR hub has a venv of its own.
if [ ! -x .venv-signalr/bin/python ] || ! .venv-signalr/bin/python -c pass 2>/dev/null; then
    rm -rf .venv-signalr
    python3 -m venv .venv-signalr
fi
.venv-signalr/bin/python -m pip install --quiet --disable-pip-version-check -r servers/python-signalr/requirements.txt
.venv-signalr/bin/python -c 'import importlib.metadata as m; print("install-test-peers: python aiosignalr", m.version("aiosignalr"))'

echo "install-test-peers: npm ci in tests/interop"
(cd tests/interop && npm ci --no-audit --no-fund --loglevel=error)
node -e 'console.log("install-test-peers: node", process.version, "ws", require("./tests/interop/node_modules/ws/package.json").version)'

echo "install-test-peers: npm ci in tests/browser"
(cd tests/browser && npm ci --no-audit --no-fund --loglevel=error)
if [ ! -x /usr/bin/chromium ]; then
    apt_install chromium
fi
echo "install-test-peers: $(/usr/bin/chromium --version 2>/dev/null)," \
    "playwright-core $(node -p 'require("./tests/browser/node_modules/playwright-core/package.json").version')"

./scripts/install-toxiproxy.sh

apt_install mosquitto rabbitmq-server haproxy ruby-actioncable puma protobuf-compiler nftables iproute2
echo "install-test-peers: mosquitto $(dpkg-query -W -f='${Version}' mosquitto)," \
    "rabbitmq-server $(dpkg-query -W -f='${Version}' rabbitmq-server)," \
    "haproxy $(dpkg-query -W -f='${Version}' haproxy)," \
    "ruby-actioncable $(dpkg-query -W -f='${Version}' ruby-actioncable)," \
    "puma $(dpkg-query -W -f='${Version}' puma)"
echo "install-test-peers: npm ci in tests/peers"
(cd tests/peers && npm ci --no-audit --no-fund --loglevel=error)
node -e 'for (const p of ["socket.io", "socket.io-msgpack-parser", "graphql-ws", "graphql", "rpc-websockets"])
    console.log("install-test-peers:", p, require(`./tests/peers/node_modules/${p}/package.json`).version)'
./scripts/install-nats-server.sh
./scripts/install-centrifugo.sh
./scripts/install-sockudo.sh
./scripts/install-caddy.sh
# The fleet's node.js `ws` server: the stages tests run against it (tests/stages.rs).
echo "install-test-peers: npm ci in servers/node-ws"
(cd servers/node-ws && npm ci --no-audit --no-fund --loglevel=error)

echo "install-test-peers: cargo build --release --locked in servers/rust-axum"
(cd servers/rust-axum && env -u CARGO_TARGET_DIR cargo build --release --locked --quiet)
