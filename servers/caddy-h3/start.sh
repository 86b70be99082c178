#!/bin/sh
# Starts Caddy for `wsbench compare` and the HTTP/3 tests: a reverse proxy on 127.0.0.1:PORT
# before a WebSocket echo server that speaks only HTTP/1.1, twice over: the TCP port takes
# plain HTTP/1.1 (`ws://`, each upgrade proxied as it came), the UDP port of the same number
# takes HTTP/3 (`wss://`, QUIC with a self-signed certificate for 127.0.0.1 and localhost
# made here, or the one WSBENCH_TLS_CERT and WSBENCH_TLS_KEY name), where Caddy advertises SETTINGS_ENABLE_CONNECT_PROTOCOL and turns each
# extended CONNECT (`:protocol websocket`, RFC 9220) into an HTTP/1.1 upgrade to the backend.
#
# Usage: start.sh PORT [BACKEND]. BACKEND (HOST:PORT) is the echo server to proxy to; without
# it the fleet's node.js `ws` server (../node-ws) is started on a free port of its own.
# $CADDY names the binary (default ./caddy). Logs warnings only; its files go when it stops.
set -eu
port=$1
backend=${2:-}
caddy=${CADDY:-./caddy}
dir=$(mktemp -d)
pids=""
stop() {
    # shellcheck disable=SC2086 # the pids are words
    kill $pids 2>/dev/null || true
    wait
    rm -rf "$dir"
}
trap 'stop; exit 0' TERM INT

if [ -z "$backend" ]; then
    : > "$dir/backend.log"
    node ../node-ws/server.js 0 >> "$dir/backend.log" 2>&1 &
    pids="$!"
    tries=0
    until backend=$(sed -n 's|^listening on ws://\([0-9.]*:[0-9]*\).*|\1|p' "$dir/backend.log") && [ -n "$backend" ]; do
        tries=$((tries + 1))
        if [ "$tries" -gt 200 ] || ! kill -0 "$pids" 2>/dev/null; then
            echo "caddy-h3: the node ws backend did not start:" >&2
            cat "$dir/backend.log" >&2
            stop
            exit 1
        fi
        sleep 0.1
    done
fi

if [ -n "${WSBENCH_TLS_CERT:-}" ]; then
    # `wsbench compare` made this certificate for its rows over HTTP/3, and trusts it alone.
    cert=$WSBENCH_TLS_CERT
    key=$WSBENCH_TLS_KEY
else
    cert="$dir/cert.pem"
    key="$dir/key.pem"
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 30 \
        -subj /CN=localhost -addext "subjectAltName=IP:127.0.0.1,DNS:localhost" \
        -keyout "$key" -out "$cert" 2>/dev/null
fi

proxy="\"routes\": [{\"handle\": [{\"handler\": \"reverse_proxy\", \"upstreams\": [{\"dial\": \"$backend\"}]}]}]"
cat > "$dir/caddy.json" <<CONF
{
  "admin": { "disabled": true },
  "logging": { "logs": { "default": { "level": "WARN" } } },
  "storage": { "module": "file_system", "root": "$dir/data" },
  "apps": {
    "tls": { "certificates": { "load_files": [
      { "certificate": "$cert", "key": "$key" }
    ] } },
    "http": { "servers": {
      "tcp": {
        "listen": ["127.0.0.1:$port"], "protocols": ["h1"],
        "automatic_https": { "disable": true },
        $proxy
      },
      "quic": {
        "listen": ["udp/127.0.0.1:$port"], "protocols": ["h3"],
        "automatic_https": { "disable": true },
        "tls_connection_policies": [{}],
        $proxy
      }
    } }
  }
}
CONF
XDG_DATA_HOME="$dir" XDG_CONFIG_HOME="$dir" "$caddy" run --config "$dir/caddy.json" &
pids="$pids $!"
echo "listening on ws://127.0.0.1:$port (HTTP/3: wss://127.0.0.1:$port over UDP), proxying to $backend"
wait
