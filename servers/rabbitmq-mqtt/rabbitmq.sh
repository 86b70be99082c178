#!/bin/sh
# Starts RabbitMQ (Debian) for `wsbench compare` with one WebSocket plugin on 127.0.0.1:PORT,
# path /ws: web_mqtt (MQTT 3.1.1) or web_stomp (STOMP 1.2); no AMQP, MQTT or STOMP TCP
# listeners. It runs as a node of its own (name, epmd port, distribution port) with its
# files in a folder of its own that goes when it stops; its epmd runs in the foreground
# beside it, so that stopping the process group stops both. ~11 s to listen.
#
# Usage: rabbitmq.sh web_mqtt|web_stomp PORT
set -eu
plugin=$1
port=$2
dir=$(mktemp -d)
free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
epmd_port=$(free_port)
dist_port=$(free_port)
cat > "$dir/rabbitmq.conf" <<CONF
listeners.tcp = none
stomp.listeners.tcp = none
mqtt.listeners.tcp = none
$plugin.tcp.ip = 127.0.0.1
$plugin.tcp.port = $port
CONF
echo "[rabbitmq_$plugin]." > "$dir/enabled_plugins"
mkdir -p "$dir/mnesia" "$dir/log"
export HOME="$dir" RABBITMQ_NODENAME="wsbench$port@localhost" ERL_EPMD_ADDRESS=127.0.0.1 \
    ERL_EPMD_PORT="$epmd_port" RABBITMQ_DIST_PORT="$dist_port" \
    RABBITMQ_CONFIG_FILE="$dir/rabbitmq.conf" RABBITMQ_ENABLED_PLUGINS_FILE="$dir/enabled_plugins" \
    RABBITMQ_MNESIA_BASE="$dir/mnesia" RABBITMQ_LOG_BASE="$dir/log" RABBITMQ_LOGS=-
# As root, the server runs as its own user (it refuses root), environment kept.
as_rabbitmq=""
if [ "$(id -u)" = 0 ] && id rabbitmq >/dev/null 2>&1; then
    chown -R rabbitmq:rabbitmq "$dir"
    as_rabbitmq="setpriv --reuid rabbitmq --regid rabbitmq --init-groups"
fi
$as_rabbitmq epmd -port "$epmd_port" -address 127.0.0.1 &
epmd=$!
$as_rabbitmq /usr/lib/rabbitmq/bin/rabbitmq-server &
broker=$!
trap 'kill "$broker" 2>/dev/null; wait "$broker"; kill "$epmd" 2>/dev/null; rm -rf "$dir"; exit 0' TERM INT
wait "$broker"
kill "$epmd" 2>/dev/null || true
rm -rf "$dir"
