#!/usr/bin/env bash
# bench/client-cost.sh: what a round trip costs the CLIENT. wsbench on io_uring, wsbench on
# epoll and the minimal C epoll client (bench/peers/epoll-client.c), interleaved in a rotating
# order, against the same server (a fresh one per run): `wsbench serve` and fastwebsockets-echo.
# Server pinned to SERVER_CPU, client to CLIENT_CPU; 20-byte binary echoes, one in flight per
# connection. For each it prints the median over the repeats of
#   round trips/s (measured window)
#   client CPU µs per round trip: the client's CPU (user + system, whole run) over every echo it
#   received (wsbench: client.cpu_us_per_round_trip; epoll-client: its cpu_us_per_echo line)
# and the ratios wsbench ÷ epoll-client, and whether wsbench flagged itself client-bound.
# Then the open loop against `wsbench serve`: for each CONNECTIONS:RATE of OPEN and each
# --send-window of WINDOWS, wsbench on each backend sends RATE messages/s spread over the
# connections, interleaved with a closed loop over as many connections, and it prints the
# client CPU µs per paced message (client.cpu_us_per_paced_message) ÷ the closed loop's CPU µs
# per round trip (goal ≤ 1.5), the send lag p99 (goal ≤ 100 µs), corrected − uncorrected
# latency p50 (goal ≤ 50 µs), the corrected latency p50/p99 (what a wider window costs: its
# sends go out in bigger bursts) and the client's sleeps per paced message (its voluntary
# context switches, from /usr/bin/time where installed). Before it, what one wake-up from a
# timed sleep costs on this machine (bench/peers/wakeup-cost.c, on CLIENT_CPU, sleeping
# 250 µs at a time): the floor under every paced batch, whichever client.
#
#   bench/client-cost.sh [CONNECTIONS...]      (default: 100 1000 10000)
#   Environment: DURATION (default 5), WARMUP (default 1), REPEATS (default 3),
#                SERVERS (default "serve fws"), SERVER_CPU (default 0), CLIENT_CPU (default 1),
#                OPEN (default "100:10000 1000:40000"; empty: no open-loop rows),
#                WINDOWS (default "500us", the run's default; e.g. "500us 1ms 2ms 4ms").
set -euo pipefail
{
if [ $# -gt 0 ]; then counts=("$@"); else counts=(100 1000 10000); fi
DURATION=${DURATION:-5}
WARMUP=${WARMUP:-1}
REPEATS=${REPEATS:-3}
SERVERS=${SERVERS:-serve fws}
SERVER_CPU=${SERVER_CPU:-0}
CLIENT_CPU=${CLIENT_CPU:-1}
OPEN=${OPEN-100:10000 1000:40000}
WINDOWS=${WINDOWS:-500us}
bench=$(cd "$(dirname "$0")" && pwd)
repo=$(dirname "$bench")
build=$bench/.build/client-cost
mkdir -p "$build"

(cd "$repo" && cargo build --release -q -p wsbench)
cp "${CARGO_TARGET_DIR:-$repo/target}/release/wsbench" "$build/wsbench"
cc -O2 -Wall -o "$build/epoll-client" "$bench/peers/epoll-client.c"
cc -O2 -Wall -o "$build/wakeup-cost" "$bench/peers/wakeup-cost.c"
fws=$bench/peers/fastwebsockets-echo/target/release/fastwebsockets-echo
if [[ " $SERVERS " == *" fws "* ]]; then
    cargo build --release --locked -q --manifest-path "$bench/peers/fastwebsockets-echo/Cargo.toml"
fi

server_pid=""
trap '[ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null; true' EXIT

# serve KIND: starts the server pinned; sets server_pid and port.
serve() {
    local out=$build/server.out cmd
    case "$1" in
        serve) cmd=("$build/wsbench" serve --port 0) ;;
        fws) cmd=("$fws" 0) ;;
    esac
    taskset -c "$SERVER_CPU" "${cmd[@]}" >"$out" 2>&1 &
    server_pid=$!
    # Its port, from the `listening on` line (waiting up to 5 s for it).
    port=$(timeout 5 sh -c "until grep -q 'listening on' '$out'; do sleep 0.05; done; grep -m 1 -o 'listening on [a-z]*://[^ ]*' '$out'" \
        | sed 's/.*://') || true
    [ -n "$port" ] || { echo "client-cost.sh: the $1 server did not start: $(cat "$out")" >&2; exit 1; }
}

# measure SERVER CLIENT CONNECTIONS [RATE WINDOW]: prints "round-trips/s cpu-µs-per-round-trip
# bound"; with a RATE (open loop, wsbench only, --send-window WINDOW) "round-trips/s
# cpu-µs-per-paced-message bound send-lag-p99-µs corrected-minus-uncorrected-p50-µs
# latency-p50-µs latency-p99-µs sleeps-per-message" (the last "-" without /usr/bin/time).
measure() {
    serve "$1"
    local limit=$((DURATION + WARMUP + 120)) line
    case "$2" in
        uring | epoll)
            local json=$build/run.json
            local switches=$build/switches.txt count_switches=()
            rm -f "$json" "$switches"
            [ -x /usr/bin/time ] && count_switches=(/usr/bin/time -f %w -o "$switches")
            timeout "$limit" "${count_switches[@]}" taskset -c "$CLIENT_CPU" "$build/wsbench" run echo "ws://127.0.0.1:$port/" \
                --connections "$3" --duration "${DURATION}s" --warmup "${WARMUP}s" --payload bytes:20 --binary \
                --client-cpus "$CLIENT_CPU" --io "$2" --quiet --json "$json" ${4:+--rate "$4/s" --send-window "$5"} \
                >"$build/client.log" 2>&1 || true
            line=$(python3 - "$json" "$2" "$switches" <<'PY'
import json, os, sys
r = json.load(open(sys.argv[1]))
ios = {w.get("io") for w in r["client"]["workers"]}
assert ios == {sys.argv[2]}, f"ran on {ios}, not {sys.argv[2]}"
s, c = r["summary"], r["client"]
if s["errors"]:
    print(f"  (errors counted: {s['errors']})", file=sys.stderr)
paced = c.get("cpu_us_per_paced_message")
if paced is None:
    print(s["echoes_per_sec"], c["cpu_us_per_round_trip"], int(c["bound"]))
else:
    latency = s["latency_us"]
    gap = latency["p50"] - s["latency_uncorrected_us"]["p50"]
    switches = open(sys.argv[3]).read().split() if os.path.exists(sys.argv[3]) else []
    sleeps = f"{int(switches[-1]) / r['counters']['messages_sent']:.3f}" if switches else "-"
    print(s["echoes_per_sec"], paced, int(c["bound"]), s["send_lag_us"]["p99"], gap, latency["p50"], latency["p99"], sleeps)
PY
            ) || { echo "client-cost.sh: wsbench --io $2 failed: $(tail -3 "$build/client.log")" >&2; exit 1; }
            ;;
        c)
            timeout "$limit" taskset -c "$CLIENT_CPU" "$build/epoll-client" 127.0.0.1 "$port" "$3" "$DURATION" \
                --warmup "$WARMUP" >"$build/client.log" 2>&1 \
                || { echo "client-cost.sh: epoll-client failed: $(tail -3 "$build/client.log")" >&2; exit 1; }
            line="$(sed -n 's/^echoes_per_sec=//p' "$build/client.log") $(sed -n 's/^cpu_us_per_echo=\([^ ]*\).*/\1/p' "$build/client.log") 0"
            ;;
    esac
    kill "$server_pid"
    wait "$server_pid" 2>/dev/null || true
    server_pid=""
    echo "$line"
}

echo "bench/client-cost.sh at $(git -C "$repo" rev-parse --short HEAD)$(git -C "$repo" diff --quiet || echo '+changes')"
echo "machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), Linux $(uname -r)"
echo "server on CPU $SERVER_CPU, client on CPU $CLIENT_CPU; ${DURATION} s measured after ${WARMUP} s, $REPEATS repeats; load before: $(cut -d' ' -f1-3 /proc/loadavg)"
clients=(uring epoll c)
raw=$build/raw.txt
: >"$raw"
for n in "${counts[@]}"; do
    for server in $SERVERS; do
        for r in $(seq "$REPEATS"); do
            # Rotate the order each repeat, so that drift over time hits every client alike.
            for k in 0 1 2; do
                client=${clients[$(((k + r) % 3))]}
                echo "$n $server $client $r $(measure "$server" "$client" "$n")" | tee -a "$raw" >&2
            done
        done
    done
done
python3 - "$raw" <<'PY'
import statistics, sys
# A run that failed left a short row (its error is above): not counted.
rows = [l.split() for l in open(sys.argv[1]) if len(l.split()) == 7]
runs = {}
for n, server, client, _, rate, cpu, bound in rows:
    runs.setdefault((int(n), server, client), []).append((float(rate), float(cpu), int(bound)))
med = lambda xs: statistics.median(xs)
print()
print(f"{'conns':>6} {'server':<6} {'client':<13} {'round trips/s':>14} {'CPU µs/rt':>10} {'÷ C rate':>9} {'÷ C CPU':>8} {'bound':>6}")
names = {"uring": "wsbench uring", "epoll": "wsbench epoll", "c": "epoll-client"}
for (n, server) in sorted({(k[0], k[1]) for k in runs}):
    c = runs.get((n, server, "c"))
    for client in ("uring", "epoll", "c"):
        xs = runs.get((n, server, client))
        if not xs:
            continue
        rate, cpu = med([x[0] for x in xs]), med([x[1] for x in xs])
        bound = f"{sum(x[2] for x in xs)}/{len(xs)}" if client != "c" else "-"
        rr = f"{rate / med([x[0] for x in c]):.3f}" if c and client != "c" else "-"
        rc = f"{cpu / med([x[1] for x in c]):.3f}" if c and client != "c" else "-"
        print(f"{n:>6} {server:<6} {names[client]:<13} {rate:>14,.0f} {cpu:>10.2f} {rr:>9} {rc:>8} {bound:>6}")
PY
open_raw=$build/open-raw.txt
: >"$open_raw"
wakeup=""
if [ -n "$OPEN" ]; then
    wakeup=$(taskset -c "$CLIENT_CPU" "$build/wakeup-cost" 250 4000)
    echo "this machine, CPU $CLIENT_CPU: $wakeup (bench/peers/wakeup-cost.c: 4,000 sleeps of 250 µs)" >&2
fi
for pair in $OPEN; do
    n=${pair%%:*} rate=${pair##*:}
    for r in $(seq "$REPEATS"); do
        # Open loops (one per window) and the closed loop of each backend interleaved, the
        # order rotating per repeat.
        runs=()
        for io in uring epoll; do
            runs+=("$io -")
            for window in $WINDOWS; do runs+=("$io $window"); done
        done
        for k in $(seq 0 $((${#runs[@]} - 1))); do
            set -- ${runs[$(((k + r) % ${#runs[@]}))]}
            if [ "$2" = - ]; then
                echo "open $n $rate $1 closed $r $(measure serve "$1" "$n")" | tee -a "$open_raw" >&2
            else
                echo "open $n $rate $1 $2 $r $(measure serve "$1" "$n" "$rate" "$2")" | tee -a "$open_raw" >&2
            fi
        done
    done
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
WAKEUP="$wakeup" WINDOWS="$WINDOWS" python3 - "$open_raw" <<'PY'
import os, re, statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
closed, paced = {}, {}
for row in rows:
    if row[4] == "closed" and len(row) == 9:
        closed.setdefault((row[1], row[3]), []).append(float(row[7]))
    elif row[4] != "closed" and len(row) == 14:
        paced.setdefault((row[1], row[2], row[3], row[4]), []).append(row[6:14])
wakeup = re.search(r"cpu_us_per_wakeup=([0-9.]+)", os.environ.get("WAKEUP", ""))
wakeup = float(wakeup.group(1)) if wakeup else None
if paced:
    med = statistics.median
    print()
    print("open loop against wsbench serve (goals: CPU ratio <= 1.5, send lag p99 <= 100 us, p50 gap <= 50 us)")
    if wakeup is not None:
        print(f"one wake-up from a timed sleep costs {wakeup:.1f} µs of CPU on this machine; 'of it, sleeps' = sleeps/msg × that")
    print(f"{'conns':>6} {'rate/s':>8} {'client':<13} {'window':>6} {'achieved/s':>11} {'CPU µs/msg':>11} {'closed µs/rt':>13} {'ratio':>6} {'lag p99 µs':>11} {'p50 gap µs':>11} {'p50 µs':>7} {'p99 µs':>7} {'sleeps/msg':>10} {'of it, sleeps':>13}")
    # Connections, backend, then the windows in the order WINDOWS gives them.
    windows = os.environ["WINDOWS"].split()
    key = lambda kv: (int(kv[0][0]), kv[0][2], windows.index(kv[0][3]))
    for (n, rate, io, window), xs in sorted(paced.items(), key=key):
        col = lambda i: med([float(x[i]) for x in xs])
        ref = closed.get((n, io))
        ratio = f"{col(1) / med(ref):.2f}" if ref else "-"
        ref_text = f"{med(ref):.2f}" if ref else "-"
        counted = [float(x[7]) for x in xs if x[7] != "-"]
        sleeps = f"{med(counted):.3f}" if counted else "-"
        share = f"{med(counted) * wakeup:.2f}" if counted and wakeup is not None else "-"
        print(f"{n:>6} {int(rate):>8,} {'wsbench ' + io:<13} {window:>6} {col(0):>11,.0f} {col(1):>11.2f} {ref_text:>13} {ratio:>6} {col(3):>11.0f} {col(4):>11.0f} {col(5):>7.0f} {col(6):>7.0f} {sleeps:>10} {share:>13}")
PY
}
