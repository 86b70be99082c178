#!/bin/sh
# Starts sockudo for `wsbench compare`: the Pusher protocol on 127.0.0.1:PORT (the WebSocket
# at /app/app-key, the HTTP API at /apps/app-id/…), one app (id app-id, key app-key, secret
# app-secret: its defaults) with client events allowed, the local adapter, no metrics, no
# rate limits, warnings only. Its configuration goes when it stops.
set -eu
port=$1
dir=$(mktemp -d)
cat > "$dir/config.json" <<CONF
{
  "host": "127.0.0.1",
  "port": $port,
  "metrics": { "enabled": false },
  "rate_limiter": { "enabled": false },
  "app_manager": {
    "driver": "memory",
    "array": { "apps": [
      { "id": "app-id", "key": "app-key", "secret": "app-secret", "enabled": true,
        "policy": { "features": { "enable_client_messages": true } } }
    ] }
  }
}
CONF
RUST_LOG=${RUST_LOG:-warn} ./sockudo --config "$dir/config.json" &
server=$!
trap 'kill "$server" 2>/dev/null; wait "$server"; rm -rf "$dir"; exit 0' TERM INT
echo "listening on ws://127.0.0.1:$port/app/app-key"
wait "$server"
rm -rf "$dir"
