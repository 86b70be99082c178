#!/usr/bin/env bash
# bench/idle-memory.sh: what one held, idle connection costs in memory, on each I/O backend:
# the client's bytes (its processes' heap in use, grown from before the first connection to
# all open; their RSS printed beside), the server's (its processes' RSS growth) and the kernel's (the machine's slab
# growth: both ends' sockets, as client and server share the machine), each per established
# connection, as `wsbench run scalability` records them. The built-in server runs as
# SERVER_PROCESSES processes pinned to SERVER_CPU (each process stays under the 20,000
# open-file limit), the client as PROCESSES processes pinned to CLIENT_CPU, spread over
# source addresses (28,000 ports each). One line per backend; the result files are kept.
#
#   bench/idle-memory.sh [CONNECTIONS] [IO...]    (default: 50000 epoll uring)
#   Environment: PROCESSES (default 4), SERVER_PROCESSES (default 4), HOLD (default 10s),
#                SERVER_CPU (default 0), CLIENT_CPU (default 1), SOURCES (default
#                127.0.0.2-127.0.0.9), WSBENCH (default: the release build of this tree).
set -euo pipefail
connections=${1:-50000}
shift || true
if [ $# -gt 0 ]; then backends=("$@"); else backends=(epoll uring); fi
root=$(cd "$(dirname "$0")/.." && pwd)
WSBENCH=${WSBENCH:-${CARGO_TARGET_DIR:-$root/target}/release/wsbench}
PROCESSES=${PROCESSES:-4}
SERVER_PROCESSES=${SERVER_PROCESSES:-4}
HOLD=${HOLD:-10s}
SERVER_CPU=${SERVER_CPU:-0}
CLIENT_CPU=${CLIENT_CPU:-1}
SOURCES=${SOURCES:-127.0.0.2-127.0.0.9}
out=$root/bench/.build/idle-memory
mkdir -p "$out"

echo "bench/idle-memory.sh $connections ${backends[*]} ($(git -C "$root" rev-parse --short HEAD)$(git -C "$root" diff --quiet || echo '+changes'))"
echo "machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), Linux $(uname -r)"
echo "server: $SERVER_PROCESSES processes on CPU $SERVER_CPU; client: $PROCESSES processes on CPU $CLIENT_CPU; hold $HOLD"
printf '%-6s %11s %13s %13s %13s %21s %17s\n' io established "client B/conn" "server B/conn" "kernel B/conn" "client RSS (MiB)" "kernel slab +MiB"
for io in "${backends[@]}"; do
    log=$out/serve-$io.out
    rm -f "$log"
    taskset -c "$SERVER_CPU" "$WSBENCH" serve --port 0 --processes "$SERVER_PROCESSES" >"$log" 2>&1 &
    server_pid=$!
    port=
    for _ in $(seq 200); do
        port=$(grep -m 1 -o 'ws://127.0.0.1:[0-9]*' "$log" 2>/dev/null | sed 's/.*://' || true)
        [ -n "$port" ] && break
        sleep 0.05
    done
    if [ -z "$port" ]; then
        kill "$server_pid" 2>/dev/null || true
        echo "$io: the server did not start ($(head -n 1 "$log"))"
        exit 1
    fi
    json=$out/$io-$connections.json
    rm -f "$json"
    rc=0
    taskset -c "$CLIENT_CPU" "$WSBENCH" run scalability "ws://127.0.0.1:$port/" --connections "$connections" \
        --processes "$PROCESSES" --client-cpus "$CLIENT_CPU" --source-addrs "$SOURCES" --io "$io" \
        --hold "$HOLD" --json "$json" >"$out/run-$io.log" 2>&1 || rc=$?
    kill "$server_pid"
    wait "$server_pid" 2>/dev/null || true
    if [ "$rc" -ne 0 ] || [ ! -s "$json" ]; then
        echo "$io: wsbench run exited $rc ($(tail -n 1 "$out/run-$io.log"))"
        exit 1
    fi
    python3 - "$json" "$io" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
c, s = r["client"], r["server"]
fmt = lambda x: "n/a" if x is None else f"{x:,.0f}"
mib = lambda x: x / 1048576
print(f'{sys.argv[2]:<6} {r["summary"]["connections"]["established"]:>11,} {fmt(c.get("bytes_per_connection")):>13} '
      f'{fmt(s.get("bytes_per_connection")):>13} {fmt(s.get("kernel_bytes_per_connection")):>13} '
      f'{mib(c["rss_baseline_bytes"]):>9.1f} → {mib(c["rss_connected_bytes"]):>8.1f} '
      f'{mib(s.get("kernel_slab_delta_bytes") or 0):>17.1f}')
PY
done
echo "result files: $out"
