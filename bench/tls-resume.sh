#!/usr/bin/env bash
# bench/tls-resume.sh: what a full and a resumed TLS handshake cost, client and server, in one
# run. Churn (`wsbench run churn`, one handshake → 1 echo → close per cycle, at RATE/s) over
# wss against two servers, each once without and once with `--tls-resume`, interleaved over the
# repeats:
#   serve    `wsbench serve --tls` (self-signed ECDSA P-256, TLS 1.3): it counts its handshakes
#            by kind with the CPU its event loop spent in each (the result's
#            server.tls_handshakes);
#   haproxy  HAProxy (TLS, tickets on by default) in front of a plain `wsbench serve`: its own
#            `show stat` counters ssl_sess (full) and ssl_reused_sess (resumed) for the
#            frontend, and its process CPU (/proc/PID/stat) over the run ÷ the cycles: a whole
#            cycle's cost (handshake, upgrade, echo, close, proxying), so its full − resumed
#            difference is what resumption saves it per handshake.
# The client's figure is its own per-kind handshake CPU (counters.tls_handshakes: the thread
# CPU spent in rustls' calls from session set-up until the handshake completes).
# Servers on SERVER_CPU, client on CLIENT_CPU. Prints, per server and mode, the medians of
# the full and resumed handshakes counted by the server, client CPU µs per full and per
# resumed handshake, and the server's CPU µs per handshake (serve) or per cycle (haproxy).
#
#   bench/tls-resume.sh
#   Environment: RATE (default 500), DURATION (default 5), REPEATS (default 3),
#                SERVER_CPU (default 0), CLIENT_CPU (default 1),
#                WSBENCH (a wsbench binary to use instead of building one).
set -euo pipefail
{
RATE=${RATE:-500}
DURATION=${DURATION:-5}
REPEATS=${REPEATS:-3}
SERVER_CPU=${SERVER_CPU:-0}
CLIENT_CPU=${CLIENT_CPU:-1}
bench=$(cd "$(dirname "$0")" && pwd)
repo=$(dirname "$bench")
build=$bench/.build/tls-resume
mkdir -p "$build"
HAPROXY=${HAPROXY:-$(command -v haproxy || echo /usr/sbin/haproxy)}
[ -x "$HAPROXY" ] || { echo "tls-resume.sh: haproxy is not installed (scripts/install-test-peers.sh installs it)" >&2; exit 1; }

if [ -n "${WSBENCH:-}" ]; then
    cp "$WSBENCH" "$build/wsbench"
else
    (cd "$repo" && cargo build --release -q -p wsbench)
    cp "${CARGO_TARGET_DIR:-$repo/target}/release/wsbench" "$build/wsbench"
fi

pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done; true' EXIT

# start_serve OUT ARGS...: starts `wsbench serve --port 0 ARGS` pinned; sets port.
start_serve() {
    local out=$1
    shift
    taskset -c "$SERVER_CPU" "$build/wsbench" serve --port 0 "$@" >"$out" 2>&1 &
    pids+=($!)
    port=$(timeout 5 sh -c "until grep -q 'listening on' '$out'; do sleep 0.05; done; grep -m 1 -o 'listening on wss*://[^ ]*' '$out'" \
        | sed 's/.*://') || true
    [ -n "$port" ] || { echo "tls-resume.sh: the server did not start: $(cat "$out")" >&2; exit 1; }
}

start_serve "$build/serve-tls.out" --tls
tls_port=$port
start_serve "$build/serve-plain.out"
plain_port=$port
haproxy_port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=localhost -days 2 \
    -keyout "$build/key.pem" -out "$build/cert.pem" 2>/dev/null
cat "$build/cert.pem" "$build/key.pem" >"$build/haproxy.pem"
cat >"$build/haproxy.cfg" <<CFG
global
    maxconn 9000
    nbthread 1
    stats socket $build/stats.sock
defaults
    mode http
    timeout connect 5s
    timeout client 60s
    timeout server 60s
    timeout tunnel 60s
frontend tls
    bind 127.0.0.1:$haproxy_port ssl crt $build/haproxy.pem
    default_backend websocket
backend websocket
    server echo 127.0.0.1:$plain_port
CFG
rm -f "$build/stats.sock"
taskset -c "$SERVER_CPU" "$HAPROXY" -db -f "$build/haproxy.cfg" >"$build/haproxy.log" 2>&1 &
haproxy_pid=$!
pids+=($haproxy_pid)
timeout 5 sh -c "until [ -S '$build/stats.sock' ]; do sleep 0.05; done" \
    || { echo "tls-resume.sh: haproxy did not start: $(cat "$build/haproxy.log")" >&2; exit 1; }

# haproxy_state: prints "ssl_sess ssl_reused_sess cpu_ticks" of HAProxy now.
haproxy_state() {
    python3 - "$build/stats.sock" "$haproxy_pid" <<'PY'
import socket, sys
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
s.sendall(b"show stat\n")
data = b""
while chunk := s.recv(65536):
    data += chunk
lines = data.decode().splitlines()
header = lines[0].lstrip("# ").split(",")
row = next(l.split(",") for l in lines[1:] if l.startswith("tls,FRONTEND,"))
stat = open(f"/proc/{sys.argv[2]}/stat").read().rsplit(")", 1)[1].split()
print(row[header.index("ssl_sess")], row[header.index("ssl_reused_sess")], int(stat[11]) + int(stat[12]))
PY
}

# measure SERVER MODE: prints "full resumed client-µs-full client-µs-resumed server-µs-full server-µs-resumed".
measure() {
    local port=$tls_port json=$build/run.json flags=() before=""
    [ "$1" = haproxy ] && port=$haproxy_port && before=$(haproxy_state)
    [ "$2" = resumed ] && flags=(--tls-resume)
    rm -f "$json"
    timeout $((DURATION + 120)) taskset -c "$CLIENT_CPU" "$build/wsbench" run churn "wss://127.0.0.1:$port/" --insecure \
        --rate "${RATE}/s" --duration "${DURATION}s" --warmup 0s --client-cpus "$CLIENT_CPU" "${flags[@]}" \
        --quiet --json "$json" >"$build/client.log" 2>&1 || true
    local after=""
    [ "$1" = haproxy ] && after=$(haproxy_state)
    python3 - "$json" "$1" "$before" "$after" "$(getconf CLK_TCK)" <<'PY' || { echo "tls-resume.sh: wsbench $1 $2 failed: $(tail -3 "$build/client.log")" >&2; exit 1; }
import json, sys
r = json.load(open(sys.argv[1]))
if r["summary"]["errors"]:
    print(f"  (errors counted: {r['summary']['errors']})", file=sys.stderr)
c = r["counters"]["tls_handshakes"]
each = lambda ns, n: ns / n / 1000 if n else float("nan")
client = (each(c["full_cpu_ns"], c["full"]), each(c["resumed_cpu_ns"], c["resumed"]))
if sys.argv[2] == "serve":
    s = r["server"]["tls_handshakes"]
    full, resumed = s["full"], s["resumed"]
    server = (each(s["full_cpu_ns"], full), each(s["resumed_cpu_ns"], resumed))
else:
    b, a = [list(map(int, x.split())) for x in sys.argv[3:5]]
    full, resumed = a[0] - b[0], a[1] - b[1]
    per_cycle = (a[2] - b[2]) / int(sys.argv[5]) * 1e6 / max(full + resumed, 1)
    server = (per_cycle, float("nan")) if resumed * 2 < full + resumed else (float("nan"), per_cycle)
print(full, resumed, *(f"{x:.1f}" for x in client + server))
PY
}

echo "bench/tls-resume.sh at $(git -C "$repo" rev-parse --short HEAD)$(git -C "$repo" diff --quiet || echo '+changes')"
echo "machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), Linux $(uname -r); $("$HAPROXY" -v | head -1 | cut -d' ' -f1-3)"
echo "servers on CPU $SERVER_CPU, client on CPU $CLIENT_CPU; churn at $RATE/s for ${DURATION} s, $REPEATS repeats; load before: $(cut -d' ' -f1-3 /proc/loadavg)"
runs=("serve full" "serve resumed" "haproxy full" "haproxy resumed")
raw=$build/raw.txt
: >"$raw"
for r in $(seq "$REPEATS"); do
    # Rotate the order each repeat, so that drift over time hits every run alike.
    for k in 0 1 2 3; do
        run=${runs[$(((k + r) % 4))]}
        echo "$run $r $(measure $run)" | tee -a "$raw" >&2
    done
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$raw" <<'PY'
import math, statistics, sys
rows = [l.split() for l in open(sys.argv[1]) if len(l.split()) == 9]
runs = {}
for server, mode, _, *xs in rows:
    runs.setdefault((server, mode), []).append([float(x) for x in xs])
def med(xs):
    xs = [x for x in xs if not math.isnan(x)]
    return statistics.median(xs) if xs else float("nan")
print()
print("CPU µs per handshake (median over the repeats); handshakes as the server counted them")
print(f"{'server':<8} {'mode':<8} {'full':>7} {'resumed':>8} {'client full':>12} {'client resumed':>15} {'server full':>12} {'server resumed':>15}")
for (server, mode) in sorted(runs):
    xs = runs[(server, mode)]
    col = [med([x[i] for x in xs]) for i in range(6)]
    print(f"{server:<8} {mode:<8} {col[0]:>7.0f} {col[1]:>8.0f} {col[2]:>12.1f} {col[3]:>15.1f} {col[4]:>12.1f} {col[5]:>15.1f}")
print("(haproxy's server figures are its process CPU per cycle: handshake, upgrade, echo, close and proxying)")
for server in ("serve", "haproxy"):
    full, resumed = runs.get((server, "full")), runs.get((server, "resumed"))
    if not (full and resumed):
        continue
    client = med([x[3] for x in resumed]) / med([x[2] for x in full])
    srv = med([x[5] for x in resumed]) / med([x[4] for x in full])
    print(f"{server}: resumed ÷ full, client CPU per handshake {client:.2f}×, server {srv:.2f}×")
PY
}
