#!/usr/bin/env bash
# bench/tls-large.sh: large messages over TLS (wss) against the TLS floor, measured the same
# way, in one interleaved run. The floor is bench/peers/tls-floor-server.c driven by
# bench/peers/tls-floor-client.c: an OpenSSL 3 TLS echo, 1 MiB of plaintext read and written
# back at a time, no WebSocket work, with the cipher suite rustls negotiates by default
# (TLS 1.3, TLS_AES_256_GCM_SHA384). For each message size and repeat it runs each server once,
# in a rotating order, each fresh and pinned to SERVER_CPU, with its client pinned to
# CLIENT_CPU: `wsbench serve --cert --key` driven by `wsbench run throughput wss://… --insecure
# --binary --frames-per-send 1` (one frame per message, one in flight per connection), the
# floor server driven by the floor client (one MESSAGE-byte block in flight per connection);
# 10 connections, 1 for 100 MB (as bench/large.sh). Both servers use one ECDSA P-256
# certificate made for the run. Per size it prints the medians of round trips/s and MB/s (round
# trips/s × the message size), the server's CPU per MB echoed and the client's (wsbench: the
# result's server.cpu_us_per_round_trip and client.cpu_us_per_round_trip ÷ the message size in
# MB, warm-up included; floor: the floor client's own figures over its measured window), and
# serve's ÷ the floor's for each. A measurement: no goal is judged; a failed run makes it exit 1
# (its row says FAILED).
#
#   bench/tls-large.sh [SIZES...]   (default: 65536 1048576 16777216 104857600)
#   Environment: DURATION (default 4; doubled at 100 MB), WARMUP (default 1), REPEATS (default 3),
#                SERVER_CPU (default 0), CLIENT_CPU (default 1), BEFORE (the path of an earlier
#                wsbench binary: its server is measured too, as "serve-before").
# Needs cargo, cc, OpenSSL 3's headers (Debian: libssl-dev), openssl, python3 and taskset.
set -euo pipefail
{
if [ $# -gt 0 ]; then sizes=("$@"); else sizes=(65536 1048576 16777216 104857600); fi
DURATION=${DURATION:-4}
WARMUP=${WARMUP:-1}
REPEATS=${REPEATS:-3}
SERVER_CPU=${SERVER_CPU:-0}
CLIENT_CPU=${CLIENT_CPU:-1}
root=$(cd "$(dirname "$0")/.." && pwd)
build=$root/bench/.build/tls-large
peers=$root/bench/peers
for size in "${sizes[@]}"; do
    if ! [[ $size =~ ^[0-9]+$ ]] || [ "$size" -lt 1 ] || [ "$size" -gt 1073741824 ]; then
        echo "tls-large.sh: message size $size must be 1 to 1073741824 bytes" >&2
        exit 2
    fi
done
for var in DURATION WARMUP REPEATS SERVER_CPU CLIENT_CPU; do
    if ! [[ ${!var} =~ ^[0-9]+$ ]] || [ "${!var}" -gt 3600 ]; then
        echo "tls-large.sh: $var=${!var} must be a whole number from 0 to 3600" >&2
        exit 2
    fi
done
if [ "$DURATION" -lt 1 ] || [ "$REPEATS" -lt 1 ]; then
    echo "tls-large.sh: DURATION and REPEATS must be at least 1" >&2
    exit 2
fi
for tool in taskset python3 cargo cc openssl; do
    command -v "$tool" >/dev/null || { echo "tls-large.sh: $tool not found: install it first" >&2; exit 2; }
done
mkdir -p "$build"
for peer in tls-floor-server tls-floor-client; do
    if [ ! -x "$build/$peer" ] || [ "$peers/$peer.c" -nt "$build/$peer" ] || [ "$peers/floor-client.h" -nt "$build/$peer" ]; then
        cc -O2 -Wall -o "$build/$peer" "$peers/$peer.c" -lssl -lcrypto ||
            { echo "tls-large.sh: building bench/peers/$peer.c failed (OpenSSL 3's headers: apt-get install libssl-dev)" >&2; exit 2; }
    fi
done
cert=$build/cert.pem key=$build/key.pem
if [ ! -s "$cert" ] || [ ! -s "$key" ]; then
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout "$key" -out "$cert" \
        -days 3650 -subj /CN=localhost -addext subjectAltName=DNS:localhost,IP:127.0.0.1 2>/dev/null ||
        { echo "tls-large.sh: openssl could not make a certificate in ${build#"$root"/}" >&2; exit 2; }
fi
(cd "$root" && cargo build --release -q -p wsbench)
wsbench=${CARGO_TARGET_DIR:-$root/target}/release/wsbench
servers=(serve floor)
# BEFORE=PATH: also an earlier build of wsbench's server, as "serve-before" (a before/after).
if [ -n "${BEFORE:-}" ]; then
    [ -x "$BEFORE" ] || { echo "tls-large.sh: BEFORE=$BEFORE is not an executable wsbench" >&2; exit 2; }
    servers+=(serve-before)
fi

# start NAME: starts that server pinned to SERVER_CPU on a free port; sets port and server_pid
# (returns 1 if it never accepted a connection).
start() {
    port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    local out=$build/server-$1.out
    case "$1" in
        serve) taskset -c "$SERVER_CPU" "$wsbench" serve --port "$port" --cert "$cert" --key "$key" >"$out" 2>&1 & ;;
        serve-before) taskset -c "$SERVER_CPU" "$BEFORE" serve --port "$port" --cert "$cert" --key "$key" >"$out" 2>&1 & ;;
        floor) taskset -c "$SERVER_CPU" "$build/tls-floor-server" "$port" "$cert" "$key" >"$out" 2>&1 & ;;
        *) echo "tls-large.sh: no start line for $1" >&2; exit 2 ;;
    esac
    server_pid=$!
    for _ in $(seq 200); do
        if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then return 0; fi
        sleep 0.05
    done
    return 1
}

# measure SERVER SIZE NAME: prints "round-trips/s server-CPU-µs-per-MB client-CPU-µs-per-MB",
# or "FAILED why".
measure() {
    if ! start "$1"; then
        kill "$server_pid" 2>/dev/null || true
        echo "FAILED $3: $1 did not start ($(head -n 1 "$build/server-$1.out"))"
        return
    fi
    local json=$build/$3.json log=$build/$3.log rc=0 connections=10 duration=$DURATION
    # 100 MB: one connection, measured twice as long (a round trip takes a large part of a second).
    if [ "$2" -ge 100000000 ]; then connections=1; duration=$((2 * DURATION)); fi
    rm -f "$json"
    if [ "$1" = floor ]; then
        taskset -c "$CLIENT_CPU" "$build/tls-floor-client" 127.0.0.1 "$port" "$connections" "$2" "$duration" \
            --warmup "$WARMUP" --server-pid "$server_pid" >"$log" 2>&1 || rc=$?
    else
        taskset -c "$CLIENT_CPU" "$wsbench" run throughput "wss://127.0.0.1:$port/" --insecure \
            --connections "$connections" --payload-bytes "$2" --frames-per-send 1 --binary \
            --duration "${duration}s" --warmup "${WARMUP}s" --server-pid "$server_pid" --json "$json" >"$log" 2>&1 || rc=$?
    fi
    kill "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
    if [ "$rc" -ne 0 ]; then
        echo "FAILED $3: the client exited $rc ($(tail -n 1 "$log"))"
        return
    fi
    python3 - "$json" "$3" "$2" "$log" <<'PY'
import json, sys
path, name, mb, log = sys.argv[1], sys.argv[2], int(sys.argv[3]) / 1e6, sys.argv[4]
if name.startswith("floor-"):
    line = next((l for l in open(log) if l.startswith("round_trips_per_sec=")), None)
    if line is None:
        sys.exit(print(f"FAILED {name}: the floor client printed no result"))
    f = dict(kv.split("=", 1) for kv in line.split())
    if f["server_cpu_us_per_mb"] == "-":
        sys.exit(print(f"FAILED {name}: the floor client measured no server CPU"))
    print(f["round_trips_per_sec"], f["server_cpu_us_per_mb"], f["cpu_us_per_mb"])
    sys.exit()
try:
    r = json.load(open(path))
except (OSError, ValueError) as e:
    sys.exit(print(f"FAILED {name}: no result file ({e})"))
server = (r.get("server") or {}).get("cpu_us_per_round_trip")
client = (r.get("client") or {}).get("cpu_us_per_round_trip")
if r["summary"]["measured_echoes"] == 0 or server is None or client is None:
    sys.exit(print(f"FAILED {name}: no echo measured or no CPU sampled"))
print(r["summary"]["echoes_per_sec"], server / mb, client / mb)
PY
}

median() { sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }

echo "bench/tls-large.sh at $(git -C "$root" rev-parse --short HEAD)$(git -C "$root" diff --quiet || echo '+changes')"
echo "machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), Linux $(uname -r), $(openssl version | cut -d' ' -f1-2); load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "servers on CPU $SERVER_CPU, clients on CPU $CLIENT_CPU; TLS 1.3 AES-256-GCM, binary, 1 frame per message, 1 in flight; 10 connections, ${DURATION} s (1 connection, $((2 * DURATION)) s at 100 MB) after ${WARMUP} s, $REPEATS repeats, medians"
status=0
for size in "${sizes[@]}"; do
    for name in "${servers[@]}"; do
        for f in rate server client failed; do : >"$build/$name-$size.$f"; done
    done
    for repeat in $(seq "$REPEATS"); do
        first=$((repeat % ${#servers[@]}))
        order=("${servers[@]:$first}" "${servers[@]:0:$first}")
        for name in "${order[@]}"; do
            got=$(measure "$name" "$size" "$name-$size-r$repeat")
            if [[ $got == FAILED* ]]; then echo "${got#FAILED }" >>"$build/$name-$size.failed"; continue; fi
            read -r rate server client <<<"$got"
            echo "$rate" >>"$build/$name-$size.rate"
            echo "$server" >>"$build/$name-$size.server"
            echo "$client" >>"$build/$name-$size.client"
        done
    done
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-9s %-13s %13s %9s %15s %15s %11s %11s %11s\n' message server "round trips/s" "MB/s" "server CPU/MB" "client CPU/MB" "÷ floor:rate" "server CPU" "client CPU"
for size in "${sizes[@]}"; do
    label=$(python3 -c 'import sys; n=int(sys.argv[1]); print(f"{n>>20} MiB" if n % (1<<20) == 0 and n >= 1<<20 else f"{n>>10} KiB" if n % 1024 == 0 else f"{n/1e6:g} MB")' "$size")
    floor=()
    if [ ! -s "$build/floor-$size.failed" ]; then
        floor=("$(median <"$build/floor-$size.rate")" "$(median <"$build/floor-$size.server")" "$(median <"$build/floor-$size.client")")
    fi
    for name in "${servers[@]}"; do
        if [ -s "$build/$name-$size.failed" ]; then
            status=1
            printf '%-9s %-13s FAILED: %s\n' "$label" "$name" "$(head -n 1 "$build/$name-$size.failed")"
            continue
        fi
        python3 - "$label" "$name" "$size" "$(median <"$build/$name-$size.rate")" "$(median <"$build/$name-$size.server")" \
            "$(median <"$build/$name-$size.client")" "${floor[@]}" <<'PY'
import sys
label, name, size = sys.argv[1], sys.argv[2], int(sys.argv[3])
rate, server, client = map(float, sys.argv[4:7])
floor = list(map(float, sys.argv[7:10]))
ratios = [f"{a / b:.2f}" for a, b in zip((rate, server, client), floor)] if floor and name != "floor" else ["-"] * 3
print(f"{label:<9} {name:<13} {rate:13.1f} {rate * size / 1e6:9.0f} {server:12.0f} µs {client:12.0f} µs {ratios[0]:>11} {ratios[1]:>11} {ratios[2]:>11}")
PY
    done
done
if [ "$status" != 0 ]; then echo "tls-large.sh: FAILED: some runs failed (rows marked FAILED); logs in ${build#"$root"/}" >&2; fi
exit "$status"
}
