#!/usr/bin/env bash
# bench/large.sh: large messages (uWebSockets' "huge message" benchmark and the sizes on the way
# to it) against `wsbench serve`, Bun (its WebSocket server is uWebSockets) and one more fleet
# server, in one interleaved run. For each message size and repeat it runs every server once,
# in a rotating order, each fresh and pinned to SERVER_CPU, with `wsbench run throughput` pinned
# to CLIENT_CPU (binary messages, one frame per message, one in flight per connection; 10
# connections, 1 for 100 MB as in scenarios/uws-huge.toml), and prints per size the median
# round trips/s and the server's CPU per MB of messages echoed (the probe's server CPU per round
# trip ÷ the message size in MB), then PASS or MISS against the goals:
#   serve ≥ 1.0 × Bun's round trips/s at 16 MiB and at 100 MB;
#   serve's CPU per MB at 100 MB ≤ 1.3 × its CPU per MB at 1 MiB (cost per byte independent of
#   the message size).
# A measurement, not a timed test: a MISS does not fail the script; a failed run does (its row
# says FAILED, exit 1).
#
#   bench/large.sh [SIZES...]       (default: 65536 1048576 16777216 104857600)
#   Environment: DURATION (default 4; doubled at 100 MB), WARMUP (default 1), REPEATS (default 3),
#                SERVER_CPU (default 0), CLIENT_CPU (default 1), OTHER (the third server, a
#                fleet name: go-gws (default) or rust-fastwebsockets), BEFORE (the path of an
#                earlier wsbench binary: its server is measured too, as "serve-before").
# Bun and OTHER must be installed first: `wsbench fleet install bun go-gws`.
set -euo pipefail
{
if [ $# -gt 0 ]; then sizes=("$@"); else sizes=(65536 1048576 16777216 104857600); fi
DURATION=${DURATION:-4}
WARMUP=${WARMUP:-1}
REPEATS=${REPEATS:-3}
SERVER_CPU=${SERVER_CPU:-0}
CLIENT_CPU=${CLIENT_CPU:-1}
OTHER=${OTHER:-go-gws}
root=$(cd "$(dirname "$0")/.." && pwd)
build=$root/bench/.build/large
mkdir -p "$build"
(cd "$root" && cargo build --release -q -p wsbench)
wsbench=${CARGO_TARGET_DIR:-$root/target}/release/wsbench
servers=(serve bun "$OTHER")
# BEFORE=PATH: also an earlier build of wsbench's server, as "serve-before" (a before/after).
[ -n "${BEFORE:-}" ] && servers+=(serve-before)
for name in bun "$OTHER"; do
    if ! (cd "$root" && "$wsbench" fleet list) | grep -E "^$name " | grep -qE ' installed$'; then
        echo "large.sh: $name is not installed: run \`$wsbench fleet install $name\` first" >&2
        exit 2
    fi
done

# start NAME: starts that server pinned to SERVER_CPU on a free port; sets port and server_pid
# (returns 1 if it never accepted a connection).
start() {
    port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    local out=$build/server-$1.out
    case "$1" in
        serve) taskset -c "$SERVER_CPU" "$wsbench" serve --port "$port" >"$out" 2>&1 & ;;
        serve-before) taskset -c "$SERVER_CPU" "$BEFORE" serve --port "$port" >"$out" 2>&1 & ;;
        bun) (cd "$root/servers/bun" && exec taskset -c "$SERVER_CPU" node_modules/.bin/bun server.js "$port") >"$out" 2>&1 & ;;
        go-gws) (cd "$root/servers/go-gws" && GOMAXPROCS=1 exec taskset -c "$SERVER_CPU" ./echo-server "$port") >"$out" 2>&1 & ;;
        rust-fastwebsockets)
            (cd "$root/servers/rust-fastwebsockets" && exec taskset -c "$SERVER_CPU" ./target/release/fleet-fastwebsockets-echo "$port") >"$out" 2>&1 & ;;
        *) echo "large.sh: no start line for $1" >&2; exit 2 ;;
    esac
    server_pid=$!
    for _ in $(seq 200); do
        if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then return 0; fi
        sleep 0.05
    done
    return 1
}

# measure SERVER SIZE NAME: prints "round-trips/s server-CPU-µs-per-round-trip", or "FAILED why".
measure() {
    if ! start "$1"; then
        kill "$server_pid" 2>/dev/null || true
        echo "FAILED $3: $1 did not start ($(head -n 1 "$build/server-$1.out"))"
        return
    fi
    local json=$build/$3.json log=$build/$3.log rc=0 connections=10 duration=$DURATION
    # 100 MB: one connection, as in uWebSockets' benchmark, measured twice as long (a round
    # trip takes a large part of a second).
    if [ "$2" -ge 100000000 ]; then connections=1; duration=$((2 * DURATION)); fi
    rm -f "$json"
    taskset -c "$CLIENT_CPU" "$wsbench" run throughput "ws://127.0.0.1:$port/" --connections "$connections" \
        --payload-bytes "$2" --frames-per-send 1 --binary --duration "${duration}s" --warmup "${WARMUP}s" \
        --server-pid "$server_pid" --json "$json" >"$log" 2>&1 || rc=$?
    kill "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
    if [ "$rc" -ne 0 ]; then
        echo "FAILED $3: wsbench run exited $rc ($(tail -n 1 "$log"))"
        return
    fi
    python3 - "$json" "$3" <<'PY'
import json, sys
try:
    r = json.load(open(sys.argv[1]))
except (OSError, ValueError) as e:
    sys.exit(print(f"FAILED {sys.argv[2]}: no result file ({e})"))
cpu = (r.get("server") or {}).get("cpu_us_per_round_trip")
if r["summary"]["measured_echoes"] == 0 or cpu is None:
    sys.exit(print(f"FAILED {sys.argv[2]}: no echo measured or no server CPU sampled"))
print(r["summary"]["echoes_per_sec"], cpu)
PY
}

median() { sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
ratio() { python3 -c 'import sys; print(float(sys.argv[2]) / float(sys.argv[1]))' "$1" "$2"; }
verdict() { python3 -c 'import sys; print("PASS" if float(sys.argv[1]) '"$2"' float(sys.argv[2]) else "MISS")' "$1" "$3"; }

echo "bench/large.sh at $(git -C "$root" rev-parse --short HEAD)$(git -C "$root" diff --quiet || echo '+changes')"
echo "machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), Linux $(uname -r); load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "servers on CPU $SERVER_CPU, client on CPU $CLIENT_CPU; binary, 1 frame per message, 1 in flight; 10 connections, ${DURATION} s (1 connection, $((2 * DURATION)) s at 100 MB) after ${WARMUP} s, $REPEATS repeats, medians"
status=0
for size in "${sizes[@]}"; do
    for name in "${servers[@]}"; do : >"$build/$name-$size.rate"; : >"$build/$name-$size.cpu"; : >"$build/$name-$size.failed"; done
    for repeat in $(seq "$REPEATS"); do
        first=$((repeat % ${#servers[@]}))
        order=("${servers[@]:$first}" "${servers[@]:0:$first}")
        for name in "${order[@]}"; do
            got=$(measure "$name" "$size" "$name-$size-r$repeat")
            if [[ $got == FAILED* ]]; then echo "${got#FAILED }" >>"$build/$name-$size.failed"; continue; fi
            read -r rate cpu <<<"$got"
            echo "$rate" >>"$build/$name-$size.rate"
            echo "$cpu" >>"$build/$name-$size.cpu"
        done
    done
done
printf '%-11s %-20s %14s %16s %14s\n' message server "round trips/s" "server CPU/MB" "÷ Bun (rate)"
declare -A rate_of=() cpu_mb_of=()
for size in "${sizes[@]}"; do
    for name in "${servers[@]}"; do
        [ -s "$build/$name-$size.failed" ] && continue
        rate_of[$name-$size]=$(median <"$build/$name-$size.rate")
        cpu_mb_of[$name-$size]=$(python3 -c 'import sys; print(float(sys.argv[1]) / (int(sys.argv[2]) / 1e6))' \
            "$(median <"$build/$name-$size.cpu")" "$size")
    done
done
for size in "${sizes[@]}"; do
    label=$(python3 -c 'import sys; n=int(sys.argv[1]); print(f"{n>>20} MiB" if n % (1<<20) == 0 and n >= 1<<20 else f"{n>>10} KiB" if n % 1024 == 0 else f"{n/1e6:g} MB")' "$size")
    for name in "${servers[@]}"; do
        if [ -s "$build/$name-$size.failed" ]; then
            status=1
            printf '%-11s %-20s FAILED: %s\n' "$label" "$name" "$(head -n 1 "$build/$name-$size.failed")"
            continue
        fi
        vs_bun=-
        [ -n "${rate_of[bun-$size]:-}" ] && vs_bun=$(printf '%.2f' "$(ratio "${rate_of[bun-$size]}" "${rate_of[$name-$size]}")")
        printf '%-11s %-20s %14.1f %13.0f µs %14s\n' "$label" "$name" "${rate_of[$name-$size]}" "${cpu_mb_of[$name-$size]}" "$vs_bun"
    done
done
echo "goals:"
for size in 16777216 104857600; do
    if [ -n "${rate_of[serve-$size]:-}" ] && [ -n "${rate_of[bun-$size]:-}" ]; then
        r=$(ratio "${rate_of[bun-$size]}" "${rate_of[serve-$size]}")
        printf '  serve ÷ Bun round trips/s at %-9s %5.2f (goal ≥ 1.0)  %s\n' "$size B" "$r" "$(verdict "$r" '>=' 1.0)"
    fi
done
if [ -n "${cpu_mb_of[serve-104857600]:-}" ] && [ -n "${cpu_mb_of[serve-1048576]:-}" ]; then
    r=$(ratio "${cpu_mb_of[serve-1048576]}" "${cpu_mb_of[serve-104857600]}")
    printf '  serve CPU per MB, 100 MB ÷ 1 MiB    %5.2f (goal ≤ 1.3)  %s\n' "$r" "$(verdict "$r" '<=' 1.3)"
fi
if [ "$status" != 0 ]; then echo "large.sh: FAILED: some runs failed (rows marked FAILED); logs in ${build#"$root"/}" >&2; fi
exit "$status"
}
