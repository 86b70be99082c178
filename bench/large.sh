#!/usr/bin/env bash
# bench/large.sh: large messages (uWebSockets' "huge message" benchmark and the sizes on the way
# to it) against `wsbench serve`, uWebSockets' own EchoServer (bench/peers/uws-echo, built from
# vendored source), the raw-TCP floor (bench/peers/large-floor-server.c driven by
# bench/peers/large-floor-client.c: the kernel's copies and nothing else), Bun (its WebSocket
# server is uWebSockets) and one more fleet server, in one interleaved run. For each message size
# and repeat it runs every server once, in a rotating order, each fresh and pinned to SERVER_CPU,
# with its client pinned to CLIENT_CPU: `wsbench run throughput` (binary messages, one frame per
# message, one in flight per connection) for the WebSocket servers, the floor client (one
# MESSAGE-byte block in flight per connection) for the floor; 10 connections, 1 for 100 MB as in
# scenarios/uws-huge.toml. Per size it prints the medians of: round trips/s and MB/s (round
# trips/s × the message size), the server's CPU per MB echoed and the client's (wsbench: the
# result's server.cpu_us_per_round_trip and client.cpu_us_per_round_trip ÷ the message size in
# MB; floor: the floor client's own figures over its window), with rate ÷ uws, rate ÷ Bun and
# each CPU per MB ÷ the floor's; then PASS or MISS against the goals:
#   serve's server CPU per MB ≤ 1.3 × the floor server's at 1 MiB and larger;
#   serve's round trips/s ≥ 1.0 × uws's at every size;
#   the wsbench client's CPU per MB (driving serve) ≤ 1.3 × the floor client's at every size;
#   serve ≥ 1.0 × Bun's round trips/s at 16 MiB and at 100 MB;
#   serve's CPU per MB at 100 MB ≤ 1.3 × its CPU per MB at 1 MiB (cost per byte independent of
#   the message size).
# A measurement, not a timed test: a MISS does not fail the script; a failed run does (its row
# says FAILED, exit 1).
#
#   bench/large.sh [SIZES...]   (bytes, 1 to 1073741824; default 65536 1048576 16777216 104857600)
#   Environment: DURATION (whole seconds, default 4; doubled at 100 MB), WARMUP (whole seconds,
#                default 1), REPEATS (default 3), SERVER_CPU (default 0), CLIENT_CPU (default
#                1), SERVERS (which to run, in the rotation's order: default "serve uws floor
#                bun $OTHER"), OTHER (the fleet server in the default SERVERS: go-gws (default)
#                or rust-fastwebsockets), BEFORE (the path of an earlier wsbench binary: its
#                server is measured too, as "serve-before").
# The C peers and uws are built into bench/.build/large when missing or older than their source
# (cc; gcc, g++ and zlib's headers for uws). Bun and OTHER must be installed first (`wsbench
# fleet install bun go-gws`), or left out: SERVERS="serve uws floor" bench/large.sh.
set -euo pipefail
{
if [ $# -gt 0 ]; then sizes=("$@"); else sizes=(65536 1048576 16777216 104857600); fi
DURATION=${DURATION:-4}
WARMUP=${WARMUP:-1}
REPEATS=${REPEATS:-3}
SERVER_CPU=${SERVER_CPU:-0}
CLIENT_CPU=${CLIENT_CPU:-1}
OTHER=${OTHER:-go-gws}
read -r -a servers <<<"${SERVERS:-serve uws floor bun $OTHER}"
# bounded NAME VALUE MIN MAX: exits 2 unless VALUE is a whole number from MIN to MAX.
bounded() {
    if ! [[ $2 =~ ^[0-9]+$ ]] || [ "$2" -lt "$3" ] || [ "$2" -gt "$4" ]; then
        echo "large.sh: $1 must be a whole number from $3 to $4, not '$2'" >&2
        exit 2
    fi
}
for size in "${sizes[@]}"; do bounded "a message size (bytes)" "$size" 1 1073741824; done
bounded DURATION "$DURATION" 1 3600
bounded WARMUP "$WARMUP" 0 3600
bounded REPEATS "$REPEATS" 1 100
bounded SERVER_CPU "$SERVER_CPU" 0 4095
bounded CLIENT_CPU "$CLIENT_CPU" 0 4095
root=$(cd "$(dirname "$0")/.." && pwd)
build=$root/bench/.build/large
peers=$root/bench/peers
mkdir -p "$build"
for tool in taskset python3 cargo; do
    command -v "$tool" >/dev/null || { echo "large.sh: $tool not found: install it first" >&2; exit 2; }
done
(cd "$root" && cargo build --release -q -p wsbench)
wsbench=${CARGO_TARGET_DIR:-$root/target}/release/wsbench
# BEFORE=PATH: also an earlier build of wsbench's server, as "serve-before" (a before/after).
[ -n "${BEFORE:-}" ] && servers+=(serve-before)
[ ${#servers[@]} -gt 0 ] || { echo "large.sh: SERVERS is empty: name at least one of serve uws floor bun go-gws rust-fastwebsockets" >&2; exit 2; }
for name in "${servers[@]}"; do
    case "$name" in
        serve|serve-before|uws|floor) ;;
        bun|go-gws|rust-fastwebsockets)
            if ! (cd "$root" && "$wsbench" fleet list) | grep -E "^$name " | grep -qE ' installed$'; then
                echo "large.sh: $name is not installed: run \`$wsbench fleet install $name\` first, or leave it out of SERVERS (e.g. SERVERS=\"serve uws floor\")" >&2
                exit 2
            fi ;;
        *) echo "large.sh: unknown server $name in SERVERS: use serve, uws, floor, bun, go-gws or rust-fastwebsockets" >&2; exit 2 ;;
    esac
done
# The peers, built when missing or older than their source.
built_from() { [ -x "$1" ] && ! find "${@:2}" -newer "$1" | grep -q .; }
if [[ " ${servers[*]} " == *" floor "* ]]; then
    for peer in large-floor-server large-floor-client; do
        built_from "$build/$peer" "$peers/$peer.c" "$peers/floor-client.h" && continue
        command -v cc >/dev/null || { echo "large.sh: cc not found: install a C compiler (Debian: apt-get install build-essential) to build bench/peers/$peer.c" >&2; exit 2; }
        cc -O2 -Wall -o "$build/$peer" "$peers/$peer.c"
    done
fi
uws=$build/uws-echo
if [[ " ${servers[*]} " == *" uws "* ]] && ! built_from "$uws/uws-echo" "$peers/uws-echo"; then
    "$peers/uws-echo/build.sh" "$uws" >/dev/null || { echo "large.sh: building uWebSockets' EchoServer failed (bench/peers/uws-echo/build.sh)" >&2; exit 2; }
fi

# start NAME: starts that server pinned to SERVER_CPU on a free port; sets port and server_pid
# (returns 1 if it never accepted a connection).
start() {
    port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    local out=$build/server-$1.out
    case "$1" in
        serve) taskset -c "$SERVER_CPU" "$wsbench" serve --port "$port" >"$out" 2>&1 & ;;
        serve-before) taskset -c "$SERVER_CPU" "$BEFORE" serve --port "$port" >"$out" 2>&1 & ;;
        uws) taskset -c "$SERVER_CPU" "$uws/uws-echo" "$port" >"$out" 2>&1 & ;;
        floor) taskset -c "$SERVER_CPU" "$build/large-floor-server" "$port" >"$out" 2>&1 & ;;
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

# measure SERVER SIZE NAME: prints "round-trips/s server-CPU-µs-per-MB client-CPU-µs-per-MB",
# or "FAILED why".
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
    if [ "$1" = floor ]; then
        taskset -c "$CLIENT_CPU" "$build/large-floor-client" 127.0.0.1 "$port" "$connections" "$2" "$duration" \
            --warmup "$WARMUP" --server-pid "$server_pid" >"$log" 2>&1 || rc=$?
    else
        taskset -c "$CLIENT_CPU" "$wsbench" run throughput "ws://127.0.0.1:$port/" --connections "$connections" \
            --payload-bytes "$2" --frames-per-send 1 --binary --duration "${duration}s" --warmup "${WARMUP}s" \
            --server-pid "$server_pid" --json "$json" >"$log" 2>&1 || rc=$?
    fi
    kill "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
    if [ "$rc" -ne 0 ]; then
        echo "FAILED $3: the client exited $rc ($(tail -n 1 "$log"))"
        return
    fi
    python3 - "$json" "$3" "$2" "$log" <<'PY'
import json, sys
path, name, mb = sys.argv[1], sys.argv[2], int(sys.argv[3]) / 1e6
if name.startswith("floor-"):
    line = next((l for l in open(sys.argv[4]) if l.startswith("round_trips_per_sec=")), None)
    if line is None:
        sys.exit(print(f"FAILED {name}: the floor client printed no result line"))
    f = dict(kv.split("=", 1) for kv in line.split())
    sys.exit(print(f["round_trips_per_sec"], f["server_cpu_us_per_mb"], f["cpu_us_per_mb"]))
try:
    r = json.load(open(path))
except (OSError, ValueError) as e:
    sys.exit(print(f"FAILED {name}: no result file ({e})"))
server = (r.get("server") or {}).get("cpu_us_per_round_trip")
client = (r.get("client") or {}).get("cpu_us_per_round_trip")
if r["summary"]["measured_echoes"] == 0 or server is None or client is None:
    sys.exit(print(f"FAILED {name}: no echo measured, or no server or client CPU in the result"))
print(r["summary"]["echoes_per_sec"], server / mb, client / mb)
PY
}

median() { sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
ratio() { python3 -c 'import sys; print(float(sys.argv[2]) / float(sys.argv[1]))' "$1" "$2"; }
verdict() { python3 -c 'import sys; print("PASS" if float(sys.argv[1]) '"$2"' float(sys.argv[2]) else "MISS")' "$1" "$3"; }
label() { python3 -c 'import sys; n=int(sys.argv[1]); print(f"{n>>20} MiB" if n % (1<<20) == 0 and n >= 1<<20 else f"{n>>10} KiB" if n % 1024 == 0 else f"{n/1e6:g} MB")' "$1"; }
# of KIND A B: A's median ÷ B's with 2 decimals, or "-" unless both exist (KIND: rate, cpu, client).
of() {
    local -n table=$1_of
    if [ -n "${table[$2]:-}" ] && [ -n "${table[$3]:-}" ]; then printf '%.2f' "$(ratio "${table[$3]}" "${table[$2]}")"; else echo -; fi
}

echo "bench/large.sh at $(git -C "$root" rev-parse --short HEAD)$(git -C "$root" diff --quiet || echo '+changes')"
echo "machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), Linux $(uname -r); load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "servers on CPU $SERVER_CPU, client on CPU $CLIENT_CPU; binary, 1 frame per message, 1 in flight; 10 connections, ${DURATION} s (1 connection, $((2 * DURATION)) s at 100 MB) after ${WARMUP} s, $REPEATS repeats, medians; servers: ${servers[*]}"
status=0
for size in "${sizes[@]}"; do
    for name in "${servers[@]}"; do
        for kind in rate cpu client failed; do : >"$build/$name-$size.$kind"; done
    done
    for repeat in $(seq "$REPEATS"); do
        first=$((repeat % ${#servers[@]}))
        order=("${servers[@]:$first}" "${servers[@]:0:$first}")
        for name in "${order[@]}"; do
            got=$(measure "$name" "$size" "$name-$size-r$repeat")
            if [[ $got == FAILED* ]]; then echo "${got#FAILED }" >>"$build/$name-$size.failed"; continue; fi
            read -r rate cpu client <<<"$got"
            echo "$rate" >>"$build/$name-$size.rate"
            echo "$cpu" >>"$build/$name-$size.cpu"
            echo "$client" >>"$build/$name-$size.client"
        done
    done
done
declare -A rate_of=() cpu_of=() client_of=()
for size in "${sizes[@]}"; do
    for name in "${servers[@]}"; do
        [ -s "$build/$name-$size.failed" ] && continue
        rate_of[$name-$size]=$(median <"$build/$name-$size.rate")
        cpu_of[$name-$size]=$(median <"$build/$name-$size.cpu")
        client_of[$name-$size]=$(median <"$build/$name-$size.client")
    done
done
# printf pads bytes: the header's "÷" and the values' "µ" are two bytes each, one column wide.
row='%-9s %-13s %13s %7s %6s %6s %14s %7s %14s %7s\n'
printf '%-9s %-13s %13s %7s %7s %7s %13s %8s %13s %8s\n' message server "round trips/s" "MB/s" "÷ uws" "÷ Bun" "server CPU/MB" "÷ floor" "client CPU/MB" "÷ floor"
for size in "${sizes[@]}"; do
    for name in "${servers[@]}"; do
        if [ -s "$build/$name-$size.failed" ]; then
            status=1
            printf '%-9s %-13s FAILED: %s\n' "$(label "$size")" "$name" "$(head -n 1 "$build/$name-$size.failed")"
            continue
        fi
        # shellcheck disable=SC2059 # the format is $row, above
        printf "$row" "$(label "$size")" "$name" "$(printf '%.1f' "${rate_of[$name-$size]}")" \
            "$(python3 -c 'import sys; print(f"{float(sys.argv[1]) * int(sys.argv[2]) / 1e6:.0f}")' "${rate_of[$name-$size]}" "$size")" \
            "$(of rate "$name-$size" "uws-$size")" "$(of rate "$name-$size" "bun-$size")" \
            "$(printf '%.0f µs' "${cpu_of[$name-$size]}")" "$(of cpu "$name-$size" "floor-$size")" \
            "$(printf '%.0f µs' "${client_of[$name-$size]}")" "$(of client "$name-$size" "floor-$size")"
    done
done
# goal TEXT VALUE OP BOUND: one verdict line; none when VALUE is "-" (a server left out or failed).
goal() {
    [ "$2" = - ] || printf '  %-50s %5s (goal %s %s)  %s\n' "$1" "$2" "$([ "$3" = '<=' ] && echo ≤ || echo ≥)" "$4" "$(verdict "$2" "$3" "$4")"
}
echo "goals:"
for size in "${sizes[@]}"; do
    if [ "$size" -ge 1048576 ]; then
        goal "serve ÷ floor, server CPU per MB at $(label "$size")" "$(of cpu "serve-$size" "floor-$size")" '<=' 1.3
    fi
done
for size in "${sizes[@]}"; do
    goal "serve ÷ uws, round trips/s at $(label "$size")" "$(of rate "serve-$size" "uws-$size")" '>=' 1.0
done
for size in "${sizes[@]}"; do
    goal "wsbench ÷ floor, client CPU per MB at $(label "$size")" "$(of client "serve-$size" "floor-$size")" '<=' 1.3
done
for size in 16777216 104857600; do
    goal "serve ÷ Bun, round trips/s at $(label "$size")" "$(of rate "serve-$size" "bun-$size")" '>=' 1.0
done
goal "serve CPU per MB, 100 MiB ÷ 1 MiB" "$(of cpu serve-104857600 serve-1048576)" '<=' 1.3
if [ "$status" != 0 ]; then echo "large.sh: FAILED: some runs failed (rows marked FAILED); logs in ${build#"$root"/}" >&2; fi
exit "$status"
}
