#!/usr/bin/env bash
# bench/protocols.sh: what each message protocol costs the CLIENT, against raw WebSocket in
# the same interleaved run. Every run is `wsbench compare --repeat 1` against the protocol's
# fleet server (started fresh, pinned to SERVER_CPU; the client on the other CPUs); each
# repeat takes the protocols in a rotating order, so drift hits them alike.
#   pub/sub: RATE publishes/s by TOPICS publishers to SUBSCRIBERS subscribers on TOPICS topics
#            (default 1,000/s to 1,000 subscribers on 10 topics: 100,000 deliveries/s):
#            raw (builtin --pubsub), mqtt (mosquitto), stomp (rabbitmq-stomp), socketio
#            (node-socketio).
#   echo:    CONNECTIONS connections, one message in flight each (closed loop): raw (builtin),
#            mqtt (mosquitto), stomp (rabbitmq-stomp), socketio (node-socketio), jsonrpc
#            (node-rpc-websockets), graphql-ws (node-graphql-ws).
# For each it prints the medians of: the achieved rate (deliveries/s or round trips/s), the
# client's CPU per delivery or round trip (client.cpu_us_per_round_trip: user + system over
# the whole run ÷ what was received), its ratio to raw's, the user-space part of it (where the
# protocol's own work is: the kernel's part follows how the server writes), the server's CPU
# per delivery, and the errors; a protocol's row is judged (PASS: ratio ≤ 1.5) only when every run of it and of
# raw succeeded without errors. Runs whose client was flagged client-bound (it could not keep
# its own schedule) are counted and shown: their CPU per delivery is still what the client
# spent, at the same offered load for every protocol.
#
#   bench/protocols.sh [pubsub] [echo]      (default: both)
#   Environment: DURATION (default 5), WARMUP (default 2), REPEATS (default 3), RATE (1000),
#                SUBSCRIBERS (1000), TOPICS (10), CONNECTIONS (100), SERVER_CPU (0).
# Needs the fleet servers installed: `wsbench fleet install mosquitto rabbitmq-stomp
# node-socketio node-rpc-websockets node-graphql-ws` (mosquitto and RabbitMQ from Debian, as
# scripts/install-test-peers.sh installs them).
set -euo pipefail
{
if [ $# -gt 0 ]; then kinds=("$@"); else kinds=(pubsub echo); fi
DURATION=${DURATION:-5}
WARMUP=${WARMUP:-2}
REPEATS=${REPEATS:-3}
RATE=${RATE:-1000}
SUBSCRIBERS=${SUBSCRIBERS:-1000}
TOPICS=${TOPICS:-10}
CONNECTIONS=${CONNECTIONS:-100}
SERVER_CPU=${SERVER_CPU:-0}
bench=$(cd "$(dirname "$0")" && pwd)
repo=$(dirname "$bench")
build=$bench/.build/protocols
rm -rf "$build"
mkdir -p "$build"
(cd "$repo" && cargo build --release -q -p wsbench)
wsbench=$repo/target/release/wsbench
[ -n "${CARGO_TARGET_DIR:-}" ] && wsbench=$CARGO_TARGET_DIR/release/wsbench

declare -A server_of=([raw]=builtin [mqtt]=mosquitto [stomp]=rabbitmq-stomp [socketio]=node-socketio
    [jsonrpc]=node-rpc-websockets [graphql-ws]=node-graphql-ws)
pubsub_protocols=(raw mqtt stomp socketio)
echo_protocols=(raw mqtt stomp socketio jsonrpc graphql-ws)

# measure KIND PROTOCOL REPEAT: one compare run; its result file is KIND-PROTOCOL-REPEAT.json.
measure() {
    local kind=$1 protocol=$2 repeat=$3 server=${server_of[$2]} out=$build/$1-$2-$3
    local shape
    if [ "$kind" = pubsub ]; then
        shape=(--scenario pubsub --subscribers "$SUBSCRIBERS" --topics "$TOPICS" --publishers "$TOPICS"
            --rate "$RATE/s")
    else
        # Text: the JSON protocols carry text only, and RabbitMQ answers a binary STOMP body in
        # a text frame (which RFC 6455 forbids when it is not UTF-8).
        shape=(--scenario echo --connections "$CONNECTIONS" --payload bytes:20 --text)
    fi
    # The brokers and node take their time to accept a thousand connections.
    timeout $((DURATION + WARMUP + 240)) "$wsbench" compare --servers "$server" --protocol "$protocol" \
        "${shape[@]}" --warmup "${WARMUP}s" --duration "${DURATION}s" --connect-timeout 30s \
        --fleet-dir "$repo/servers" --out "$out" >"$out.log" 2>&1 || true
    if [ -f "$out/$server-1.json" ]; then
        cp "$out/$server-1.json" "$out.json"
        echo "$kind $protocol $repeat: $(tail -1 "$out.log" | tr -s ' ' | cut -c1-160)" >&2
    else
        echo "$kind $protocol $repeat: FAILED: $(tail -2 "$out.log" | tr '\n' ' ')" >&2
    fi
}

echo "bench/protocols.sh at $(git -C "$repo" rev-parse --short HEAD)$(git -C "$repo" diff --quiet || echo '+changes')"
echo "machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), Linux $(uname -r)"
echo "server on CPU $SERVER_CPU, client on the others; ${DURATION} s measured after ${WARMUP} s, $REPEATS repeats; load before: $(cut -d' ' -f1-3 /proc/loadavg)"
for kind in "${kinds[@]}"; do
    if [ "$kind" = pubsub ]; then protocols=("${pubsub_protocols[@]}"); else protocols=("${echo_protocols[@]}"); fi
    n=${#protocols[@]}
    for r in $(seq "$REPEATS"); do
        for k in $(seq 0 $((n - 1))); do
            measure "$kind" "${protocols[$(((k + r) % n))]}" "$r"
        done
    done
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$build" "${kinds[@]}" <<'PY'
import glob, json, os, statistics, sys

build, kinds = sys.argv[1], sys.argv[2:]
order = ["raw", "mqtt", "stomp", "socketio", "jsonrpc", "graphql-ws"]
med = statistics.median
for kind in kinds:
    runs = {}
    for path in glob.glob(os.path.join(build, f"{kind}-*-*.json")):
        protocol = os.path.basename(path)[len(kind) + 1:].rsplit("-", 1)[0]
        r = json.load(open(path))
        client, server, summary = r["client"], r.get("server", {}), r["summary"]
        ok = not summary["errors"] and not r.get("interrupted")
        client_us = client.get("cpu_us_per_round_trip") or float("nan")
        user_share = client["user_seconds"] / client["cpu_seconds"] if client.get("cpu_seconds") else float("nan")
        runs.setdefault(protocol, []).append({
            "rate": summary["echoes_per_sec"],
            "client_us": client_us,
            "user_us": client_us * user_share,
            "server_us": server.get("cpu_us_per_round_trip") or float("nan"),
            "errors": summary["errors"],
            "bound": bool(client.get("bound")),
            "ok": ok,
        })
    what = "deliveries/s" if kind == "pubsub" else "round trips/s"
    unit = "delivery" if kind == "pubsub" else "round trip"
    print()
    print(f"{kind}: client CPU per {unit}, medians over the repeats")
    print(f"{'protocol':<11} {'runs':>4} {what:>14} {'client µs':>10} {'÷ raw':>7} {'user µs':>8} {'server µs':>10} {'bound':>6}  judged")
    raw = runs.get("raw", [])
    raw_ok = raw and all(x["ok"] for x in raw)
    raw_us = med([x["client_us"] for x in raw]) if raw else None
    for protocol in [p for p in order if p in runs]:
        xs = runs[protocol]
        client_us = med([x["client_us"] for x in xs])
        ratio = client_us / raw_us if raw_us else float("nan")
        problems = sorted({k for x in xs for k in x["errors"]})
        if protocol == "raw":
            verdict = "the peer" if raw_ok else f"raw not clean: {', '.join(problems) or 'a run failed'}"
        elif not raw_ok:
            verdict = "not judged: raw's runs were not clean"
        elif not all(x["ok"] for x in xs):
            verdict = f"not judged: {', '.join(problems) or 'a run failed'}"
        else:
            verdict = "PASS (≤ 1.5)" if ratio <= 1.5 else "MISS (> 1.5)"
        bound = f"{sum(x['bound'] for x in xs)}/{len(xs)}"
        print(f"{protocol:<11} {len(xs):>4} {med([x['rate'] for x in xs]):>14,.0f} {client_us:>10.2f} "
              f"{ratio:>7.2f} {med([x['user_us'] for x in xs]):>8.2f} {med([x['server_us'] for x in xs]):>10.1f} "
              f"{bound:>6}  {verdict}")
PY
}
