#!/usr/bin/env bash
# bench/http2.sh: what WebSockets over HTTP/2 (RFC 8441, `--http2`) cost the client against
# HTTP/1.1, same server, same shape: `wsbench serve` (a fresh one per run, pinned to
# SERVER_CPU), `wsbench run echo` (pinned to CLIENT_CPU) with N WebSockets, 20-byte binary
# echoes, one in flight each. Three clients, interleaved in a rotating order: HTTP/1.1 on
# io_uring (the default), HTTP/1.1 on epoll, and HTTP/2 (S WebSockets per TCP connection;
# carriers always run on epoll). For each it prints the median over the repeats of
#   round trips/s (measured window)
#   client CPU µs per round trip (client.cpu_us_per_round_trip)
# and the ratios h2 ÷ h1 for both HTTP/1.1 clients, and how often the client flagged itself
# client-bound.
#
#   bench/http2.sh [CONNECTIONS...]      (default: 1000)
#   Environment: DURATION (default 5), WARMUP (default 1), REPEATS (default 3),
#                STREAMS (default 100), SERVER_CPU (default 0), CLIENT_CPU (default 1),
#                WSBENCH (a wsbench binary to use instead of building one).
set -euo pipefail
{
if [ $# -gt 0 ]; then counts=("$@"); else counts=(1000); fi
DURATION=${DURATION:-5}
WARMUP=${WARMUP:-1}
REPEATS=${REPEATS:-3}
STREAMS=${STREAMS:-100}
SERVER_CPU=${SERVER_CPU:-0}
CLIENT_CPU=${CLIENT_CPU:-1}
bench=$(cd "$(dirname "$0")" && pwd)
repo=$(dirname "$bench")
build=$bench/.build/http2
mkdir -p "$build"

if [ -n "${WSBENCH:-}" ]; then
    cp "$WSBENCH" "$build/wsbench"
else
    (cd "$repo" && cargo build --release -q -p wsbench)
    cp "${CARGO_TARGET_DIR:-$repo/target}/release/wsbench" "$build/wsbench"
fi

server_pid=""
trap '[ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null; true' EXIT

# serve: starts `wsbench serve` pinned; sets server_pid and port.
serve() {
    local out=$build/server.out
    taskset -c "$SERVER_CPU" "$build/wsbench" serve --port 0 >"$out" 2>&1 &
    server_pid=$!
    port=$(timeout 5 sh -c "until grep -q 'listening on' '$out'; do sleep 0.05; done; grep -m 1 -o 'listening on ws://[^ ]*' '$out'" \
        | sed 's/.*://') || true
    [ -n "$port" ] || { echo "http2.sh: the server did not start: $(cat "$out")" >&2; exit 1; }
}

# measure CLIENT CONNECTIONS: prints "round-trips/s cpu-µs-per-round-trip bound tcp-connections".
measure() {
    serve
    local json=$build/run.json flags
    case "$1" in
        h1-uring) flags=(--io uring) ;;
        h1-epoll) flags=(--io epoll) ;;
        h2) flags=(--http2 --streams-per-connection "$STREAMS") ;;
    esac
    rm -f "$json"
    timeout $((DURATION + WARMUP + 120)) taskset -c "$CLIENT_CPU" "$build/wsbench" run echo "ws://127.0.0.1:$port/" \
        --connections "$2" --duration "${DURATION}s" --warmup "${WARMUP}s" --payload bytes:20 --binary \
        --client-cpus "$CLIENT_CPU" "${flags[@]}" --quiet --json "$json" >"$build/client.log" 2>&1 || true
    python3 - "$json" <<'PY' || { echo "http2.sh: wsbench $1 failed: $(tail -3 "$build/client.log")" >&2; exit 1; }
import json, sys
r = json.load(open(sys.argv[1]))
if r["summary"]["errors"]:
    print(f"  (errors counted: {r['summary']['errors']})", file=sys.stderr)
t = r["summary"]["transport"]["tcp_connections"]
print(r["summary"]["echoes_per_sec"], r["client"]["cpu_us_per_round_trip"], int(r["client"]["bound"]), t)
PY
    kill "$server_pid"
    wait "$server_pid" 2>/dev/null || true
    server_pid=""
}

echo "bench/http2.sh at $(git -C "$repo" rev-parse --short HEAD)$(git -C "$repo" diff --quiet || echo '+changes')"
echo "machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), Linux $(uname -r)"
echo "server on CPU $SERVER_CPU, client on CPU $CLIENT_CPU; ${DURATION} s measured after ${WARMUP} s, $REPEATS repeats, $STREAMS WebSockets per HTTP/2 connection; load before: $(cut -d' ' -f1-3 /proc/loadavg)"
clients=(h1-uring h1-epoll h2)
raw=$build/raw.txt
: >"$raw"
for n in "${counts[@]}"; do
    for r in $(seq "$REPEATS"); do
        # Rotate the order each repeat, so that drift over time hits every client alike.
        for k in 0 1 2; do
            client=${clients[$(((k + r) % 3))]}
            echo "$n $client $r $(measure "$client" "$n")" | tee -a "$raw" >&2
        done
    done
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$raw" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1]) if len(l.split()) == 7]
runs = {}
for n, client, _, rate, cpu, bound, tcp in rows:
    runs.setdefault((int(n), client), []).append((float(rate), float(cpu), int(bound), int(tcp)))
med = statistics.median
print()
print(f"{'conns':>6} {'client':<9} {'TCP conns':>9} {'round trips/s':>14} {'CPU µs/rt':>10} {'bound':>6}")
for (n, client) in sorted(runs):
    xs = runs[(n, client)]
    print(f"{n:>6} {client:<9} {xs[0][3]:>9} {med([x[0] for x in xs]):>14,.0f} {med([x[1] for x in xs]):>10.2f} "
          f"{sum(x[2] for x in xs)}/{len(xs):<4}")
print()
for n in sorted({k[0] for k in runs}):
    h2 = runs.get((n, "h2"))
    for base in ("h1-uring", "h1-epoll"):
        h1 = runs.get((n, base))
        if not (h1 and h2):
            continue
        rate = med([x[0] for x in h2]) / med([x[0] for x in h1])
        cpu = med([x[1] for x in h2]) / med([x[1] for x in h1])
        print(f"{n:>6} h2 ÷ {base}: round trips/s {rate:.3f}×, client CPU per round trip {cpu:.3f}×")
PY
}
