#!/usr/bin/env bash
# bench/run.sh: wsbench's macro-benchmark suite. It measures, in one run, how wsbench's client
# (`wsbench run`) and server (`wsbench serve`) compare with their peers in bench/peers/ and
# prints the RATIOS against the performance goals. PASS or MISS is printed only for a ratio
# against a peer measured in the same run, from runs that all succeeded, and never for a
# server comparison during which the wsbench client was CPU-bound (the reason is printed
# instead). It is a measurement, not a timed test: a MISS does not fail the script; a run
# that failed does (its row says FAILED, exit 1).
#
#   bench/run.sh [--large] [--write-results] [--no-build]
#     --large          also run the comparisons at 10,000 connections
#     --write-results  also write bench/RESULTS.md
#     --no-build       use the binaries already built (after a first full run)
#   Environment: DURATION (seconds measured per run, default 10), WARMUP (default 2),
#                REPEATS (default 3), SERVER_CPU (default 0), CLIENT_CPU (default 1),
#                QUIET_BUSY (default 5), QUIET_WAIT (default 20: before each run, wait up to
#                that many seconds for other processes to use at most QUIET_BUSY % of the
#                CPUs; 0 does not wait), RETRIES (default 2: a run during which they used
#                more is made again up to that many times; the least disturbed counts).
#
# Every run is one server (pinned to SERVER_CPU) and one client (pinned to CLIENT_CPU), with
# 20-byte binary echoes, one message in flight per connection, a fresh server per run. In each
# repeat the runs are interleaved (in a rotating order), so that drift over time affects every
# side alike; the table shows the median over the repeats. See bench/README.md.
set -euo pipefail

# The whole script is one { } group, so bash reads all of it before running any of it: editing
# this file while a run is going on cannot change what that run does.
{

usage() { sed -n '2,21p' "$0" | sed 's/^# \{0,1\}//'; }

large=0
write_results=0
no_build=0
for arg in "$@"; do
    case "$arg" in
        --large) large=1 ;;
        --write-results) write_results=1 ;;
        --no-build) no_build=1 ;;
        -h | --help) usage; exit 0 ;;
        *) echo "run.sh: unknown argument '$arg'" >&2; usage >&2; exit 2 ;;
    esac
done

DURATION=${DURATION:-10}
DURATION=${DURATION%s}
WARMUP=${WARMUP:-2}
WARMUP=${WARMUP%s}
REPEATS=${REPEATS:-3}
SERVER_CPU=${SERVER_CPU:-0}
CLIENT_CPU=${CLIENT_CPU:-1}
QUIET_WAIT=${QUIET_WAIT:-20}
RETRIES=${RETRIES:-2}
QUIET_BUSY=${QUIET_BUSY:-5}
SCALE_CONNECTIONS=10000
SCALE_HOLD=5
for v in DURATION WARMUP REPEATS SERVER_CPU CLIENT_CPU QUIET_WAIT QUIET_BUSY RETRIES; do
    if ! [[ ${!v} =~ ^[0-9]+$ ]]; then
        echo "run.sh: $v must be a whole number (got '${!v}')" >&2
        exit 2
    fi
done
if [ "$REPEATS" -lt 1 ] || [ "$DURATION" -lt 1 ]; then
    echo "run.sh: DURATION and REPEATS must be at least 1" >&2
    exit 2
fi
counts=(100 1000)
if [ "$large" = 1 ]; then counts+=(10000); fi

bench=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(dirname "$bench")
build="$bench/.build"
logs="$build/last-run"
# The wsbench binary is copied here after the build, so that a rebuild in the shared target/
# during the runs (by someone working on the tree) cannot swap it mid-measurement.
wsbench_built="$repo/target/release/wsbench"
wsbench="$build/wsbench"
fws="$bench/peers/fastwebsockets-echo/target/release/fastwebsockets-echo"
epoll_client="$build/epoll-client"
epoll_server="$build/epoll-echo-server"
node_client="$bench/peers/node-ws-client.js"

command_line="DURATION=$DURATION WARMUP=$WARMUP REPEATS=$REPEATS QUIET_BUSY=$QUIET_BUSY QUIET_WAIT=$QUIET_WAIT RETRIES=$RETRIES bench/run.sh${*:+ $*}"

say() { printf '%s\n' "$*" >&2; }
die() { say "run.sh: $*"; exit 1; }

for tool in taskset flock python3 cc cargo node npm; do
    command -v "$tool" >/dev/null || die "$tool is required but not installed"
done
ncpu=$(nproc)
if [ "$SERVER_CPU" -ge "$ncpu" ] || [ "$CLIENT_CPU" -ge "$ncpu" ] || [ "$SERVER_CPU" = "$CLIENT_CPU" ]; then
    die "need two distinct CPUs for server ($SERVER_CPU) and client ($CLIENT_CPU); this machine has $ncpu"
fi

# One run at a time: two would share bench/.build/ and take each other's CPUs.
mkdir -p "$build"
exec 9>"$build/run.lock"
if ! flock -n 9; then
    die "another bench/run.sh is running (pid $(cat "$build/run.pid" 2>/dev/null || echo unknown)); wait for it to finish"
fi
echo $$ >"$build/run.pid"
rm -rf "$logs"
mkdir -p "$logs"
measurements="$logs/measurements.tsv" # pair, connections, repeat, value ("" when it failed), others' CPU % before, during, wsbench client bound (1/0, "" for other clients)
scalability="$logs/scalability.tsv"   # repeat, connect_s, connect_source, rss_baseline, rss_peak, established
notes="$logs/notes.txt"
: >"$measurements"
: >"$scalability"
: >"$notes"

# ---------------------------------------------------------------------------------------------
# The machine and the command, first.
cpu_model=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)
revision=$(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo unknown)
if [ -n "$(git -C "$repo" status --porcelain 2>/dev/null | head -n 1)" ]; then revision="$revision (+ uncommitted changes)"; fi
header="$logs/header.md"
{
    echo "- Command: \`$command_line\`"
    echo "- Machine: $ncpu CPUs, ${cpu_model:-unknown CPU}, Linux $(uname -r), open-file limit $(ulimit -n)"
    echo "- wsbench: $revision; $(date -u '+%Y-%m-%d %H:%M UTC')"
    echo "- Each run: server on CPU $SERVER_CPU, client on CPU $CLIENT_CPU, 20-byte binary echo, one message in flight per connection, ${WARMUP} s warm-up + ${DURATION} s measured; medians of $REPEATS interleaved repeats"
} >"$header"
cat "$header"

# Is anything else using the CPUs? Sample /proc/stat for a second.
# cpu_busy_percent [SECONDS]: how busy all CPUs were over that time (default 1 s).
cpu_busy_percent() {
    local a b
    read -r -a a </proc/stat
    sleep "${1:-1}"
    read -r -a b </proc/stat
    python3 - "${a[@]:1}" -- "${b[@]:1}" <<'EOF'
import sys
args = sys.argv[1:]
cut = args.index("--")
a, b = [int(x) for x in args[:cut]], [int(x) for x in args[cut + 1:]]
d = [y - x for x, y in zip(a, b)]
total = sum(d[:8]) or 1
idle = d[3] + d[4]
print(round(100 * (total - idle) / total))
EOF
}

# ---------------------------------------------------------------------------------------------
# Build everything.
mkdir -p "$build"
say ""
say "== building (logs in ${logs#"$repo"/}/build-*.log)"
build_step() {
    local name=$1
    shift
    if ! "$@" >"$logs/build-$name.log" 2>&1; then
        tail -n 30 "$logs/build-$name.log" >&2
        die "building $name failed (full log: $logs/build-$name.log)"
    fi
    say "   built $name"
}
if [ "$no_build" = 1 ]; then
    for bin in "$wsbench_built" "$fws" "$epoll_client" "$epoll_server" "$bench/peers/node_modules/ws/package.json" \
        "$repo/servers/bun/node_modules/.bin/bun"; do
        [ -e "$bin" ] || die "--no-build: $bin is missing; run once without --no-build"
    done
    say "   --no-build: using the binaries already built"
else
    build_step wsbench cargo build --release --manifest-path "$repo/Cargo.toml" -p wsbench
    build_step fastwebsockets-echo cargo build --release --locked --manifest-path "$bench/peers/fastwebsockets-echo/Cargo.toml"
    build_step epoll-client cc -O2 -Wall -o "$epoll_client" "$bench/peers/epoll-client.c"
    build_step epoll-echo-server cc -O2 -Wall -o "$epoll_server" "$bench/peers/epoll-echo-server.c"
    build_step node-ws npm ci --prefix "$bench/peers" --no-audit --no-fund --loglevel=error
    build_step bun npm ci --prefix "$repo/servers/bun" --no-audit --no-fund --loglevel=error
fi
cp "$wsbench_built" "$wsbench.tmp"
mv -f "$wsbench.tmp" "$wsbench"
echo "- wsbench binary: $("$wsbench" --version 2>/dev/null || echo unknown), built $(date -u -r "$wsbench_built" '+%Y-%m-%d %H:%M UTC')" >>"$header"
sed -n '$p' "$header"

have_run=1
if ! "$wsbench" run --help >"$logs/wsbench-run-help.txt" 2>&1; then
    have_run=0
    say ""
    say "run.sh: ERROR: this wsbench has no working \`wsbench run\` ($(head -n 1 "$logs/wsbench-run-help.txt"))."
    say "        The rows that need it (A, B: fastwebsockets, C) cannot be measured; the script will exit 1."
    echo "\`wsbench run\` is missing from this build: every row that needs it is marked ERROR." >>"$notes"
fi

busy=$(cpu_busy_percent)
if [ "$busy" -gt 10 ]; then
    say ""
    say "run.sh: WARNING: other processes are using ${busy}% of the CPUs right now; the numbers will be noisy."
    echo "Before the runs other processes were using ${busy}% of the CPUs: the numbers are noisy." >>"$notes"
fi

# wait_quiet: prints how busy the CPUs were (other processes: nothing of ours runs now), after
# waiting up to QUIET_WAIT seconds for them to drop to QUIET_BUSY % or less.
wait_quiet() {
    local busy waited=0
    busy=$(cpu_busy_percent 0.5)
    while [ "$busy" -gt "$QUIET_BUSY" ] && [ "$waited" -lt "$QUIET_WAIT" ]; do
        busy=$(cpu_busy_percent 1)
        waited=$((waited + 1))
    done
    echo "$busy"
}

# ---------------------------------------------------------------------------------------------
# Servers: started pinned, one per run; the port comes from their `listening on` line.
server_pid=""
server_wrapper=""
server_port=""
# shellcheck disable=SC2317  # (called by the EXIT trap)
cleanup() {
    local pid
    for pid in $server_pid $server_wrapper; do
        kill "$pid" 2>/dev/null || true
    done
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# start_server KIND LOG-PREFIX: sets server_pid and server_port, or returns 1.
start_server() {
    local kind=$1 out="$2.server.out" err="$2.server.err" cmd
    case "$kind" in
        serve) cmd=("$wsbench" serve --port 0) ;;
        fws) cmd=("$fws" 0) ;;
        tcp) cmd=("$epoll_server" 0) ;;
        *) die "unknown server kind $kind" ;;
    esac
    taskset -c "$SERVER_CPU" "${cmd[@]}" >"$out" 2>"$err" &
    server_pid=$!
    server_wrapper=""
    local line=""
    for _ in $(seq 100); do
        line=$(grep -m 1 -o 'listening on [a-z]*://[^ ]*' "$out" 2>/dev/null || true)
        [ -n "$line" ] && break
        if ! kill -0 "$server_pid" 2>/dev/null; then break; fi
        sleep 0.1
    done
    server_port=${line##*:}
    # $! is the server itself (taskset execs it) unless a shell with job control put a
    # subshell in between; then the server is that subshell's child, and it is the one to stop.
    local exe child
    exe=$(readlink -f "${cmd[0]}")
    if [ -n "$line" ] && [ "$(readlink "/proc/$server_pid/exe" 2>/dev/null)" != "$exe" ]; then
        for child in $(ps -o pid= --ppid "$server_pid" 2>/dev/null); do
            if [ "$(readlink "/proc/$child/exe" 2>/dev/null)" = "$exe" ]; then
                server_wrapper=$server_pid
                server_pid=$child
                break
            fi
        done
    fi
    if [ -z "$line" ] || ! [[ $server_port =~ ^[0-9]+$ ]]; then
        say "   $kind server did not print its 'listening on' line; stderr:"
        sed 's/^/     /' "$err" >&2
        stop_server
        return 1
    fi
}

stop_server() {
    local pid
    for pid in $server_pid $server_wrapper; do
        kill "$pid" 2>/dev/null || true
        # wait only works on our own child; poll for a grandchild.
        wait "$pid" 2>/dev/null || true
        for _ in $(seq 50); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.1
        done
        if kill -0 "$pid" 2>/dev/null; then
            say "   server pid $pid ignored SIGTERM for 5 s; sending SIGKILL"
            kill -KILL "$pid" 2>/dev/null || true
        fi
    done
    server_pid=""
    server_wrapper=""
}

# json_field FILE EXPR: evaluates a Python expression over the result document `r`.
json_field() {
    python3 - "$1" "$2" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
v = eval(sys.argv[2], {"r": r})
print("" if v is None else v)
EOF
}

# run_client KIND PORT CONNECTIONS LOG-PREFIX: prints echoes/s, or returns 1. Runs in a
# subshell of its own ($(...)), so the `times` right after the client gives the client's CPU
# time (user and system, of everything it ran) in LOG-PREFIX.times.
run_client() {
    local kind=$1 port=$2 n=$3 log="$4.client.log" limit=$((DURATION + WARMUP + 120)) value
    case "$kind" in
        wsbench)
            local json="$4.json"
            # Exit 3 means the run completed but counted errors: still a measurement (the
            # errors are noted below); anything else is a failed run.
            local rc=0
            timeout "$limit" taskset -c "$CLIENT_CPU" "$wsbench" run echo "ws://127.0.0.1:$port" \
                --connections "$n" --duration "${DURATION}s" --warmup "${WARMUP}s" --payload bytes:20 --binary \
                --client-cpus "$CLIENT_CPU" --json "$json" >"$log" 2>&1 || rc=$?
            times >"$4.times"
            if [ "$rc" -ne 0 ] && [ "$rc" -ne 3 ]; then
                return 1
            fi
            value=$(json_field "$json" 'r["summary"]["echoes_per_sec"]') || return 1
            if [ "$(json_field "$json" 'r["summary"]["measured_echoes"]')" = 0 ]; then
                say "   wsbench run measured no echoes: $(grep -m 1 'messages:' "$log" || true)"
                return 1
            fi
            local bound errors
            bound=$(json_field "$json" 'r.get("client", {}).get("bound")' 2>/dev/null || true)
            errors=$(json_field "$json" 'r["summary"].get("errors") or ""' 2>/dev/null || true)
            if [ "$bound" = True ]; then
                echo "$(basename "$4"): the wsbench client reported itself CPU-bound" >>"$notes"
                echo 1 >"$4.bound"
            else
                echo 0 >"$4.bound"
            fi
            if [ -n "$errors" ]; then echo "$(basename "$4"): wsbench run counted errors: $errors" >>"$notes"; fi
            ;;
        node)
            timeout "$limit" taskset -c "$CLIENT_CPU" node "$node_client" "ws://127.0.0.1:$port" "$n" "$DURATION" \
                --warmup "$WARMUP" >"$log" 2>&1 || return 1
            times >"$4.times"
            value=$(sed -n 's/^echoes_per_sec=//p' "$log")
            ;;
        epoll | epoll-raw)
            local raw=()
            if [ "$kind" = epoll-raw ]; then raw=(--raw); fi
            timeout "$limit" taskset -c "$CLIENT_CPU" "$epoll_client" 127.0.0.1 "$port" "$n" "$DURATION" \
                --warmup "$WARMUP" "${raw[@]}" >"$log" 2>&1 || return 1
            times >"$4.times"
            value=$(sed -n 's/^echoes_per_sec=//p' "$log")
            ;;
        *) die "unknown client kind $kind" ;;
    esac
    [ -n "$value" ] || return 1
    printf '%.0f\n' "$value"
}

# others_percent STAT-BEFORE STAT-AFTER T0 T1 SERVER-TICKS TIMES-FILE: the share of all CPUs
# that processes other than this run's server and client used from T0 to T1 (user + nice +
# system time from /proc/stat, less the server's ticks and the client's CPU time from `times`).
others_percent() {
    python3 - "$@" "$(getconf CLK_TCK)" "$ncpu" <<'EOF'
import re, sys
a, b, t0, t1, server_ticks, times_file, hz, ncpu = sys.argv[1:9]
a, b = [int(x) for x in a.split()[1:4]], [int(x) for x in b.split()[1:4]]
busy = sum(y - x for x, y in zip(a, b))
client = 0.0
try:
    lines = open(times_file).read().split("\n")
    for m, sec in re.findall(r"(\d+)m([\d.]+)s", lines[1]):
        client += int(m) * 60 + float(sec)
except (OSError, IndexError):
    pass
ours = int(server_ticks) + client * int(hz)
total = (float(t1) - float(t0)) * int(hz) * int(ncpu)
print(max(0, round(100 * (busy - ours) / total)) if total > 0 else 0)
EOF
}

proc_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat" 2>/dev/null || echo 0; }

# measure SERVER CLIENT CONNECTIONS REPEAT: one run, appended to $measurements. A run during
# which other processes used more than QUIET_BUSY % of the CPUs is made again, up to RETRIES
# times; the least disturbed attempt counts.
measure() {
    local server=$1 client=$2 n=$3 rep=$4 base="$logs/$1-$2-$3-r$4"
    if [ "$client" = wsbench ] && [ "$have_run" = 0 ]; then
        printf '%s\t%s\t%s\t%s\t\t\t\n' "$server/$client" "$n" "$rep" "" >>"$measurements"
        return 0
    fi
    local attempt prefix value before during stat_a stat_b s0 s1 t0 t1
    local best_value="" best_before="" best_during="" best_prefix=""
    for attempt in $(seq $((RETRIES + 1))); do
        prefix=$base
        if [ "$attempt" -gt 1 ]; then prefix="$base-try$attempt"; fi
        before=$(wait_quiet)
        value=""
        during=""
        if start_server "$server" "$prefix"; then
            stat_a=$(head -n 1 /proc/stat)
            s0=$(proc_ticks "$server_pid")
            t0=$(date +%s.%N)
            if value=$(run_client "$client" "$server_port" "$n" "$prefix"); then
                :
            else
                value=""
                say "   $server <- $client, $n connections: FAILED; client output:"
                tail -n 5 "$prefix.client.log" 2>/dev/null | sed 's/^/     /' >&2
            fi
            t1=$(date +%s.%N)
            stat_b=$(head -n 1 /proc/stat)
            s1=$(proc_ticks "$server_pid")
            if ! kill -0 "$server_pid" 2>/dev/null; then
                say "   the $server server died during the run; stderr:"
                sed 's/^/     /' "$prefix.server.err" >&2
                value=""
            fi
            stop_server
            during=$(others_percent "$stat_a" "$stat_b" "$t0" "$t1" $((s1 - s0)) "$prefix.times")
        fi
        if [ -z "$value" ]; then
            # A failure is a result of its own, not noise: it is not retried.
            best_value=""
            best_before=$before
            best_during=$during
            best_prefix=$prefix
            break
        fi
        if [ -z "$best_value" ] || [ "$during" -lt "$best_during" ]; then
            best_value=$value
            best_before=$before
            best_during=$during
            best_prefix=$prefix
        fi
        if [ "$during" -le "$QUIET_BUSY" ] || [ "$attempt" -gt "$RETRIES" ]; then break; fi
        say "   $(printf '%-26s %6s conns  repeat %s: %s echoes/s, but other processes used %s%% of the CPUs: again' \
            "$server <- $client" "$n" "$rep" "$value" "$during")"
    done
    # Whether the counted attempt's wsbench client was CPU-bound (empty: not a wsbench client).
    local bound=""
    if [ -n "$best_prefix" ] && [ -f "$best_prefix.bound" ]; then bound=$(cat "$best_prefix.bound"); fi
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$server/$client" "$n" "$rep" "$best_value" "$best_before" "$best_during" \
        "$bound" >>"$measurements"
    say "   $(printf '%-26s %6s conns  repeat %s: %s' "$server <- $client" "$n" "$rep" "${best_value:-FAILED} ${best_value:+echoes/s}")  (others used ${best_before}% of the CPUs before, ${best_during:-?}% during)"
}

# scalability REPEAT: `wsbench run scalability` against a fresh `wsbench serve`.
scalability_run() {
    local rep=$1 prefix="$logs/serve-scalability-r$1"
    local json="$prefix.json" log="$prefix.client.log"
    if [ "$have_run" = 0 ]; then
        printf '%s\t\t\t\t\t\n' "$rep" >>"$scalability"
        return 0
    fi
    local row="" busy
    busy=$(wait_quiet)
    if [ "$busy" -gt "$QUIET_BUSY" ]; then echo "scalability repeat $rep started while other processes used ${busy}% of the CPUs" >>"$notes"; fi
    if start_server serve "$prefix"; then
        local rc=0
        timeout $((SCALE_HOLD + 180)) taskset -c "$CLIENT_CPU" "$wsbench" run scalability "ws://127.0.0.1:$server_port" \
            --connections "$SCALE_CONNECTIONS" --hold "${SCALE_HOLD}s" --json "$json" >"$log" 2>&1 || rc=$?
        if [ "$rc" -eq 0 ] || [ "$rc" -eq 3 ]; then
            # The connect phase: `connect_phase_s` when the result file has it; else an upper
            # bound from the per-second timeline (the end of the first second in which every
            # established connection was open); else elapsed_s - measured_s (which also
            # counts closing the connections).
            row=$(python3 - "$json" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
s, srv = r["summary"], r["server"]
est = s["connections"]["established"]
connect, source = None, None
for where, d in (("connect_phase_s", r), ("summary.connect_phase_s", s)):
    if isinstance(d.get("connect_phase_s"), (int, float)):
        connect, source = d["connect_phase_s"], where
        break
if connect is None:
    full = [p["second"] for p in r.get("timeline", []) if est and p["connections_open"] >= est]
    if full:
        connect, source = full[0] + 1, "upper bound from the 1-s timeline"
if connect is None:
    connect, source = r["elapsed_s"] - r["measured_s"], "upper bound: elapsed_s - measured_s"
fmt = lambda v: "" if v is None else v
print("\t".join(str(x) for x in (connect, source, fmt(srv.get("rss_baseline_bytes")),
                                 fmt(srv.get("rss_peak_bytes")), est)))
EOF
            ) || row=""
        else
            say "   scalability run failed; output:"
            tail -n 5 "$log" | sed 's/^/     /' >&2
        fi
        stop_server
    fi
    if [ -z "$row" ]; then row=$'\t\t\t\t'; fi
    printf '%s\t%s\n' "$rep" "$row" >>"$scalability"
    if [ -n "${row//$'\t'/}" ]; then
        say "   $(printf '%-26s %6s conns  repeat %s: ' "serve <- scalability" "$SCALE_CONNECTIONS" "$rep")$(
            IFS=$'\t' read -r c src base peak est <<<"$row"
            echo "connect ${c} s ($src), RSS ${base} -> ${peak} B, $est established")"
    else
        say "   $(printf '%-26s %6s conns  repeat %s: FAILED' "serve <- scalability" "$SCALE_CONNECTIONS" "$rep")"
    fi
}

# ---------------------------------------------------------------------------------------------
# The runs: per repeat, per connection count, the five pairs in a rotating order.
pairs=("serve wsbench" "serve node" "serve epoll" "fws wsbench" "tcp epoll-raw")
say ""
say "== measuring: ${#pairs[@]} runs x ${#counts[@]} connection counts x $REPEATS repeats + scalability (logs in ${logs#"$repo"/})"
for rep in $(seq "$REPEATS"); do
    for n in "${counts[@]}"; do
        for k in $(seq 0 $((${#pairs[@]} - 1))); do
            pair=${pairs[$(((k + rep - 1) % ${#pairs[@]}))]}
            measure "${pair% *}" "${pair#* }" "$n" "$rep"
        done
    done
    scalability_run "$rep"
done

# ---------------------------------------------------------------------------------------------
# pub/sub: `wsbench serve --pubsub` against Bun's native publish (uWebSockets), through
# `wsbench compare`, which interleaves the two servers over the repeats (server on the first
# CPU, client on the others) and keeps every result file in $pubsub_dir.
pubsub_dir="$logs/pubsub"
say ""
say "== pub/sub: wsbench serve --pubsub and Bun, $REPEATS interleaved repeats (log: ${logs#"$repo"/}/pubsub.log)"
if [ "$have_run" = 1 ]; then
    busy=$(wait_quiet)
    if [ "$busy" -gt "$QUIET_BUSY" ]; then echo "the pub/sub comparison started while other processes used ${busy}% of the CPUs" >>"$notes"; fi
    if ! timeout $(((DURATION + WARMUP + 60) * REPEATS * 2)) "$wsbench" compare --scenario pubsub --servers builtin,bun \
        --fleet-dir "$repo/servers" --repeat "$REPEATS" --subscribers 1000 --topics 10 --publishers 10 \
        --rate 1000/s --duration "${DURATION}s" --warmup "${WARMUP}s" --out "$pubsub_dir" --quiet \
        >"$logs/pubsub.log" 2>&1; then
        say "   the pub/sub comparison failed; output:"
        tail -n 5 "$logs/pubsub.log" | sed 's/^/     /' >&2
    fi
fi

# ---------------------------------------------------------------------------------------------
# The table.
table="$logs/table.md"
status=0
PUBSUB_DIR=$pubsub_dir PUBSUB_REPEATS=$REPEATS QUIET_BUSY=$QUIET_BUSY python3 - "$measurements" "$scalability" "$notes" "$SCALE_CONNECTIONS" "${counts[@]}" >"$table" <<'EOF' || status=$?
import statistics, sys

meas_path, scale_path, notes_path, scale_n = sys.argv[1:5]
counts = [int(c) for c in sys.argv[5:]]
scale_n = int(scale_n)

import os
BUSY = int(os.environ["QUIET_BUSY"])  # % of all CPUs used by others just before a run that marks it as disturbed
runs, busy, client_bound = {}, {}, {}
for line in open(meas_path):
    pair, n, rep, value, before, during, was_bound = (line.rstrip("\n").split("\t") + [""] * 7)[:7]
    runs.setdefault((pair, int(n)), []).append(float(value) if value else None)
    # The run is disturbed when others used the CPUs during it (or, not known, just before).
    b = during or before
    busy.setdefault((pair, int(n)), []).append(int(b) if b else None)
    client_bound.setdefault((pair, int(n)), []).append(was_bound == "1")

def median(values):
    """The median of the runs that succeeded (None when none did)."""
    ok = [v for v in values or [] if v is not None]
    return statistics.median(ok) if ok else None

def failed(values):
    return sum(1 for v in values or [] if v is None)

def rate(v):
    return "—" if v is None else f"{v:,.0f}"

missing = False
rows = []
# A verdict (PASS or MISS) is given only for a ratio against a peer measured in this run, from
# runs that all succeeded, and, where the ratio compares servers through the wsbench client,
# only if that client was never CPU-bound (then the ratio would measure the client).
comparisons = [
    ("A. client: wsbench run ÷ node ws client (server: wsbench serve)", "serve/wsbench", "serve/node", 2.0, False),
    ("A. client: wsbench run ÷ epoll-client (server: wsbench serve)", "serve/wsbench", "serve/epoll", 0.95, False),
    ("B. server: wsbench serve ÷ fastwebsockets-echo (client: wsbench run)", "serve/wsbench", "fws/wsbench", 1.0, True),
    ("B. server: wsbench serve ÷ epoll-echo-server, raw TCP (client: epoll-client)", "serve/epoll", "tcp/epoll-raw", 0.95, True),
]
for title, a, b, goal, servers in comparisons:
    for n in counts:
        ra, rb = runs.get((a, n)), runs.get((b, n))
        ma, mb = median(ra), median(rb)
        lost = failed(ra) + failed(rb)
        missing = missing or lost > 0
        if ma is None or mb is None or mb == 0:
            rows.append((title, f"{n:,}", rate(ma), rate(mb), "—", f"≥ {goal:g}×", "ERROR: no run succeeded"))
            continue
        ratio = ma / mb
        total = len(ra) + len(rb)
        bound_runs = sum(client_bound.get((a, n), [])) + sum(client_bound.get((b, n), [])) if servers else 0
        if lost:
            result = f"FAILED: {lost} of {total} runs failed"
        elif bound_runs:
            result = f"not judged: the wsbench client was CPU-bound in {bound_runs} of {total} runs (the ratio measures the client)"
        else:
            result = "PASS" if ratio >= goal else "MISS"
        rows.append((title, f"{n:,}", rate(ma), rate(mb), f"{ratio:.3f}×", f"≥ {goal:g}×", result))

scale = []
for line in open(scale_path):
    f = line.rstrip("\n").split("\t") + [""] * 6
    scale.append(f[:6])
connect = [float(f[1]) if f[1] else None for f in scale]
sources = sorted({f[2] for f in scale if f[2]})
per_conn = []
established = []
for f in scale:
    established.append(int(f[5]) if f[5] else None)
    if f[3] and f[4]:
        per_conn.append((int(f[4]) - int(f[3])) / scale_n)
    else:
        per_conn.append(None)
mc, mr = median(connect), median(per_conn)
short = [e for e in established if e is not None and e < scale_n]
missing = missing or failed(connect) > 0 or failed(per_conn) > 0 or bool(short)
suffix = f" ({short} of {scale_n:,} established)" if short else ""
title_c = f"C. wsbench serve: connect all {scale_n:,} (wsbench run scalability; {', '.join(sources) or 'n/a'})"
# The C rows have absolute goals and no peer in this run: their figures are printed beside the
# goal, but not judged.
no_peer = "not judged: an absolute goal, no peer measured in this run"
scale_failed = failed(connect)
if mc is None:
    missing = True
    rows.append((title_c, f"{scale_n:,}", "—", "", "", "< 2 s", "ERROR: no run succeeded"))
else:
    upper = any(src.startswith("upper bound") for src in sources)
    result = f"FAILED: {scale_failed} of {len(connect)} runs failed" if scale_failed else no_peer
    if short:
        result = "FAILED: not every connection was established"
    rows.append((title_c + suffix, f"{scale_n:,}", f"{'≤ ' if upper else ''}{mc:.2f} s", "", "", "< 2 s", result))
title_r = "C. wsbench serve: RSS growth per idle connection (rss_peak − rss_baseline) ÷ connections"
if mr is None:
    missing = True
    rows.append((title_r, f"{scale_n:,}", "—", "", "", "≤ 250 B", "ERROR: no run succeeded"))
else:
    lost = failed(per_conn)
    result = f"FAILED: {lost} of {len(per_conn)} runs failed" if lost else no_peer
    if short:
        result = "FAILED: not every connection was established"
    rows.append((title_r + suffix, f"{scale_n:,}", f"{mr:,.0f} B", "", "", "≤ 250 B", result))

# D. pub/sub: server deliveries per server CPU-second, wsbench serve --pubsub ÷ Bun, from the
# result files `compare` kept. Judged only when every run of both delivered and the client
# kept up in all of them (a bound client leaves the servers idle, which flatters neither).
import json
pubsub = {}
for server in ("builtin", "bun"):
    per_cpu, bound = [], 0
    for rep in range(1, int(os.environ["PUBSUB_REPEATS"]) + 1):
        try:
            r = json.load(open(os.path.join(os.environ["PUBSUB_DIR"], f"{server}-{rep}.json")))
        except (OSError, ValueError):
            per_cpu.append(None)
            continue
        per_cpu.append(r["server"].get("echoes_per_cpu_second"))
        bound += bool(r.get("client", {}).get("bound"))
    pubsub[server] = (per_cpu, bound)
title_d = "D. pub/sub: wsbench serve --pubsub ÷ Bun (native publish), deliveries per server CPU-second (1,000 subscribers, 10 topics, 100,000 deliveries/s)"
(pa, bound_a), (pb, bound_b) = pubsub["builtin"], pubsub["bun"]
ma, mb = median(pa), median(pb)
lost = failed(pa) + failed(pb)
if ma is None or mb is None or mb == 0:
    missing = True
    rows.append((title_d, "1,010", rate(ma), rate(mb), "—", "≥ 1.3×", "ERROR: no run succeeded"))
else:
    if lost:
        missing = True
        result = f"FAILED: {lost} of {len(pa) + len(pb)} runs failed"
    elif bound_a + bound_b:
        result = f"not judged: the client was CPU-bound in {bound_a + bound_b} of {len(pa) + len(pb)} runs"
    else:
        result = "PASS" if ma / mb >= 1.3 else "MISS"
    rows.append((title_d, "1,010", rate(ma), rate(mb), f"{ma / mb:.3f}×", "≥ 1.3×", result))

print("| Comparison | Connections | A (median) | B (median) | A ÷ B | Goal | Result |")
print("|---|---:|---:|---:|---:|---|---|")
for r in rows:
    print("| " + " | ".join(r) + " |")
print()
print(f"Every run, in echoes/s (one value per repeat, in run order; * = other processes used more than {BUSY}% of the CPUs during it):")
print()
print("| Server ← client | Connections | Runs (— = failed) | Median |")
print("|---|---:|---|---:|")
names = {"serve": "wsbench serve", "fws": "fastwebsockets-echo", "tcp": "epoll-echo-server",
         "wsbench": "wsbench run", "node": "node-ws-client", "epoll": "epoll-client",
         "epoll-raw": "epoll-client --raw"}
for (pair, n), values in sorted(runs.items(), key=lambda kv: (kv[0][1], kv[0][0])):
    s, c = pair.split("/")
    marks = ["*" if b is not None and b > BUSY else "" for b in busy[(pair, n)]]
    print(f"| {names[s]} ← {names[c]} | {n:,} | " + ", ".join(rate(v) + m for v, m in zip(values, marks)) +
          f" | {rate(median(values))} |")
print(f"| wsbench serve ← scalability: connect s | {scale_n:,} | " +
      ", ".join("—" if v is None else f"{v:.2f}" for v in connect) + f" | {'—' if mc is None else f'{mc:.2f}'} |")
print(f"| wsbench serve ← scalability: RSS B/conn | {scale_n:,} | " +
      ", ".join("—" if v is None else f"{v:,.0f}" for v in per_conn) + f" | {'—' if mr is None else f'{mr:,.0f}'} |")
for server, name in (("builtin", "wsbench serve --pubsub"), ("bun", "Bun (native publish)")):
    values = pubsub[server][0]
    print(f"| {name}: deliveries per server CPU-s | 1,010 | " + ", ".join(rate(v) for v in values) +
          f" | {rate(median(values))} |")
notes = [l.strip() for l in open(notes_path) if l.strip()]
bound = [l for l in notes if l.endswith(": the wsbench client reported itself CPU-bound")]
if bound:
    wsbench_runs = sum(len(v) for (pair, _), v in runs.items() if pair.endswith("/wsbench"))
    notes = [l for l in notes if l not in bound]
    notes.append(f"`wsbench run` reported its client CPU-bound (`client.bound`) in {len(bound)} runs "
                 f"(of {wsbench_runs} counted; retried attempts are listed too): "
                 + ", ".join(l.split(":")[0] for l in bound) + ".")
all_busy = [b for bs in busy.values() for b in bs if b is not None]
disturbed = sum(1 for b in all_busy if b > BUSY)
if disturbed:
    notes.append(f"{disturbed} of {len(all_busy)} runs were disturbed: other processes used more than {BUSY}% "
                 "of the CPUs during them, even after the retries (marked *); those figures are noisy.")
if notes:
    print()
    print("Notes:")
    print()
    for l in dict.fromkeys(notes):
        print(f"- {l}")
sys.exit(1 if missing else 0)
EOF

say ""
echo ""
cat "$header"
echo ""
cat "$table"

if [ "$write_results" = 1 ]; then
    {
        echo "# wsbench macro-benchmark results"
        echo ""
        echo "Written by \`bench/run.sh --write-results\`; see bench/README.md for what each row means."
        echo ""
        cat "$header"
        echo ""
        cat "$table"
    } >"$bench/RESULTS.md"
    say ""
    say "wrote ${bench#"$repo"/}/RESULTS.md"
fi

if [ "$status" != 0 ]; then
    if [ "$have_run" = 0 ]; then
        say "run.sh: FAILED: \`wsbench run\` is missing from this wsbench build, so the rows marked ERROR were not measured."
    else
        say "run.sh: FAILED: some runs could not be measured (rows marked ERROR or FAILED); logs in $logs"
    fi
    exit 1
fi
exit 0
}
