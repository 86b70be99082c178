#!/bin/sh
# Starts mosquitto for `wsbench compare`: a WebSocket listener on 127.0.0.1:PORT (any path,
# subprotocol mqtt) taking anonymous clients. mosquitto 2.0.11 will not start with WebSocket
# listeners only, so it also listens for MQTT on a Unix socket in a folder of its own (no
# port to find). Its configuration and socket go when it stops.
set -eu
port=$1
dir=$(mktemp -d)
chmod 755 "$dir"
# As root mosquitto drops to its own user, which must reach the socket's folder.
if [ "$(id -u)" = 0 ] && id mosquitto >/dev/null 2>&1; then chown mosquitto "$dir"; fi
cat > "$dir/mosquitto.conf" <<CONF
per_listener_settings true
persistence false
log_dest stderr
log_type error
log_type warning
max_queued_messages 100000
listener $port 127.0.0.1
protocol websockets
socket_domain ipv4
allow_anonymous true
listener 0 $dir/mqtt.sock
allow_anonymous true
CONF
mosquitto -c "$dir/mosquitto.conf" &
broker=$!
trap 'kill "$broker" 2>/dev/null; wait "$broker"; rm -rf "$dir"; exit 0' TERM INT
echo "listening on ws://127.0.0.1:$port"
wait "$broker"
rm -rf "$dir"
