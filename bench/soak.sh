#!/usr/bin/env bash
# bench/soak.sh: a long run with --reconnect while the server under it is restarted. Starts
# `wsbench serve` (the pub/sub server for `pubsub`), runs `wsbench run … --reconnect` against
# it for MINUTES, kills the server (by the pid this script started) RESTARTS times, evenly
# spaced, each time for DOWN seconds before starting it again on the same port, and prints
# what the result file counted: reconnection attempts per connection and outage, refused
# attempts, resets, and for pub/sub the subscriptions made again, the publishes that fell
# due while their publisher was cut off and the deliveries lost. A measurement of how
# wsbench rides out restarts, not a timed test.
#
# `bench/soak.sh memory` asks instead whether memory stays flat over a long run: the echo
# load on both I/O backends at once (`--io uring` and `--io epoll`), each client against a
# `wsbench serve` of its own, the servers pinned to SERVER_CPU and the clients to
# CLIENT_CPU; every INTERVAL seconds it reads the four processes' VmRSS, and at the end it
# prints, for each, the RSS at the fifth minute, at the end and at its highest, and the
# least-squares slope of the samples after the fifth minute (KiB/s), with the machine, the
# date and the commands. With STALL_EVERY=N, every N seconds on average one of the four,
# chosen at random, is stopped (SIGSTOP, by the pid this script started) for 0.2–2 s and
# continued, as a busy machine stops processes: the bursts that follow are what used to
# grow a client's memory.
#
#   bench/soak.sh echo        # 10 min, 1,000 connections at 2,000 msg/s, 3 restarts, 5 s down
#   bench/soak.sh pubsub      # 10 min, 100 subscribers / 10 topics / 10 publishers at 200/s
#   bench/soak.sh memory      # 120 min, 1,000 connections at 2,000 msg/s, uring and epoll
#
# Environment: BIN (default target/release/wsbench, built unless NO_BUILD=1), MINUTES
# (default 10; 120 for memory), RESTARTS (default 3), DOWN (default 5), OUT (default
# bench/.build/soak); for memory also INTERVAL (default 10), SERVER_CPU (default 0),
# CLIENT_CPU (default 1), STALL_EVERY (default 0: no stalls of its own).
# One block, read whole before it runs: editing this file during a run cannot change it.
{
set -euo pipefail

cd "$(dirname "$0")/.."
scenario="${1:-echo}"
if [ "$scenario" = memory ]; then
    # shellcheck source=bench/soak-memory.sh
    . bench/soak-memory.sh
    exit
fi
minutes="${MINUTES:-10}"
restarts="${RESTARTS:-3}"
down="${DOWN:-5}"
out="${OUT:-bench/.build/soak}"
mkdir -p "$out"

case "$scenario" in
    echo)
        serve_args=()
        load=(echo --connections 1000 --rate 2000/s)
        connections=1000
        ;;
    pubsub)
        serve_args=(--pubsub)
        load=(pubsub --subscribers 100 --topics 10 --publishers 10 --rate 200/s)
        connections=110
        ;;
    *)
        echo "usage: bench/soak.sh echo|pubsub|memory" >&2
        exit 2
        ;;
esac

# shellcheck source=bench/release-bin.sh
. bench/release-bin.sh

# Starts the server on port $1 (0: any) in the background; sets $server and $port.
start_server() {
    "$BIN" serve --port "$1" "${serve_args[@]}" >"$out/serve.out" 2>"$out/serve.err" &
    server=$!
    for _ in $(seq 100); do
        if grep -q 'listening on' "$out/serve.out" 2>/dev/null; then break; fi
        sleep 0.1
    done
    port=$(sed -n 's#^listening on ws://[^:]*:\([0-9]*\).*#\1#p' "$out/serve.out" | head -1)
}

start_server 0
trap 'kill "$server" 2>/dev/null || true; kill "$client" 2>/dev/null || true' EXIT
json="$out/$scenario.json"
"$BIN" run "${load[@]}" "ws://127.0.0.1:$port/" --reconnect --warmup 0s --duration "${minutes}m" --quiet \
    --json "$json" >"$out/$scenario.txt" 2>"$out/$scenario.stderr" &
client=$!
echo "bench/soak.sh: $BIN run ${load[*]} ws://127.0.0.1:$port/ --reconnect --duration ${minutes}m (pid $client);" \
    "the server (pid $server) restarted $restarts times, down ${down} s each" >&2

spacing=$((minutes * 60 / (restarts + 1)))
for n in $(seq "$restarts"); do
    sleep "$spacing"
    kill -9 "$server"
    wait "$server" 2>/dev/null || true
    echo "  $(date +%T) restart $n: server down" >&2
    sleep "$down"
    start_server "$port"
    echo "  $(date +%T) restart $n: server back (pid $server)" >&2
done
wait "$client" || status=$?
echo "bench/soak.sh: the client exited with status ${status:-0}" >&2

python3 - "$json" "$connections" "$restarts" "${load[*]}" "$minutes" "$down" <<'EOF' | tee "$out/$scenario.summary"
import json, sys
path, connections, restarts, load, minutes, down = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5], sys.argv[6]
r = json.load(open(path))
c, s = r["counters"], r["summary"]
print(f"command: wsbench run {load} URL --reconnect --warmup 0s --duration {minutes}m; {restarts} restarts, {down} s down each")
print(f"measured {r['measured_s']:.0f} s, interrupted {r['interrupted']}, ended early {r.get('ended_early')}")
print(f"connections: {s['connections']}; reconnection attempts {c['reconnections']} "
      f"({c['reconnections'] / max(connections * restarts, 1):.1f} per connection and outage)")
print(f"errors: {s['errors']}")
timeline = r["timeline"]
full = sum(1 for p in timeline if p["connections_open"] == connections)
print(f"seconds with every connection open: {full} of {len(timeline)}; last second: {timeline[-2]['connections_open']} open")
if "pubsub" in r:
    p = r["pubsub"]
    print(f"pubsub: {p['published']} publishes ({p.get('not_sent', 0)} due while their publisher was cut off), "
          f"{p['expected_deliveries']} deliveries expected, {p['delivered']} delivered, {p['lost']} lost, "
          f"{p.get('resubscribed', 0)} subscriptions made again")
EOF
exit
}
