#!/bin/sh
# Starts Centrifugo for `wsbench compare`: its HTTP server on 127.0.0.1:PORT (the WebSocket
# endpoint /connection/websocket), anonymous clients allowed to connect, subscribe and
# publish on channels without a namespace (wsbench's default `wsbench-{topic}`), the memory
# broker, logging errors only. Its configuration goes when it stops.
set -eu
port=$1
dir=$(mktemp -d)
cat > "$dir/config.json" <<CONF
{
  "http_server": { "address": "127.0.0.1", "port": $port },
  "log": { "level": "error" },
  "usage_stats": { "disabled": true },
  "client": {
    "allow_anonymous_connect_without_token": true,
    "allowed_origins": ["*"]
  },
  "channel": {
    "without_namespace": {
      "allow_subscribe_for_anonymous": true, "allow_subscribe_for_client": true,
      "allow_publish_for_anonymous": true, "allow_publish_for_client": true
    }
  }
}
CONF
./centrifugo --config "$dir/config.json" &
server=$!
trap 'kill "$server" 2>/dev/null; wait "$server"; rm -rf "$dir"; exit 0' TERM INT
echo "listening on ws://127.0.0.1:$port/connection/websocket"
wait "$server"
rm -rf "$dir"
