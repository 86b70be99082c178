#!/bin/sh
# Starts the NATS server for `wsbench compare`: its WebSocket listener on 127.0.0.1:PORT
# (MQTT 3.1.1 on the path /mqtt; NATS's own protocol on any other path, / for --protocol
# nats), the MQTT block it needs (JetStream, a server name; its own TCP ports chosen by the
# server), data in a folder of its own that goes when it stops.
set -eu
port=$1
dir=$(mktemp -d)
cat > "$dir/nats.conf" <<CONF
listen: "127.0.0.1:-1"
server_name: wsbench_nats
jetstream { store_dir: "$dir/jetstream" }
websocket { listen: "127.0.0.1:$port", no_tls: true }
mqtt { listen: "127.0.0.1:-1" }
CONF
./nats-server -c "$dir/nats.conf" &
broker=$!
trap 'kill "$broker" 2>/dev/null; wait "$broker"; rm -rf "$dir"; exit 0' TERM INT
wait "$broker"
rm -rf "$dir"
