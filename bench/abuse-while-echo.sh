#!/usr/bin/env bash
# Issue 7's robustness benchmark: a 1,000-connection echo run against `wsbench serve`, clean
# and with the abuse suite's attacks (bench/abuse.py) hitting the same server at the same
# time, interleaved REPEATS times. Prints each run, the medians and their ratio; the goal is
# zero errors in the abused echo runs and throughput within 20 % of the clean ones.
# Server on CPU 0, echo client on CPU 1, the attacker unpinned (it sleeps between attacks).
#
# usage: bench/abuse-while-echo.sh          (env: DURATION=10 WARMUP=2 REPEATS=3)
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION=${DURATION:-10} WARMUP=${WARMUP:-2} REPEATS=${REPEATS:-3}
out=bench/.build/abuse-run
mkdir -p "$out"
cargo build --release -q -p wsbench
cp target/release/wsbench "$out/wsbench"
wsbench="$out/wsbench"

taskset -c 0 "$wsbench" serve --port 0 --max-message 1MiB --handshake-timeout 3s >"$out/server.log" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null || true' EXIT
for _ in $(seq 50); do grep -q "listening on" "$out/server.log" && break; sleep 0.1; done
url=$(head -n 1 "$out/server.log" | awk '{print $3}')
port=${url##*:}

echo "abuse-while-echo: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(uname -r)"
echo "command: DURATION=$DURATION WARMUP=$WARMUP REPEATS=$REPEATS bench/abuse-while-echo.sh; server $url"

run_echo() { # NAME
    local rc=0
    taskset -c 1 "$wsbench" run echo "$url" --connections 1000 --duration "${DURATION}s" --warmup "${WARMUP}s" \
        --payload bytes:20 --binary --client-cpus 1 --json "$out/$1.json" >"$out/$1.log" 2>&1 || rc=$?
    python3 - "$out/$1.json" "$1" "$rc" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
s = r["summary"]
print(f"{sys.argv[2]:<10} exit {sys.argv[3]}  {s['echoes_per_sec']:>10,.0f} echoes/s  "
      f"established {s['connections']['established']}  errors {s['errors'] or 'none'}  p99 {s['latency_us']['p99']} µs")
PY
}

for repeat in $(seq "$REPEATS"); do
    run_echo "clean-$repeat"
    python3 bench/abuse.py 127.0.0.1 "$port" $((DURATION + WARMUP + 3)) >"$out/abuse-$repeat.log" 2>&1 &
    attacker=$!
    sleep 1
    run_echo "abused-$repeat"
    wait "$attacker" || true
done
echo "attacks answered in the last abused run:"
sed 's/^/  /' "$out/abuse-$REPEATS.log"

python3 - "$out" "$REPEATS" <<'PY'
import json, statistics, sys
out, repeats = sys.argv[1], int(sys.argv[2])
def runs(kind):
    return [json.load(open(f"{out}/{kind}-{i}.json"))["summary"] for i in range(1, repeats + 1)]
clean, abused = runs("clean"), runs("abused")
c = statistics.median(s["echoes_per_sec"] for s in clean)
a = statistics.median(s["echoes_per_sec"] for s in abused)
errors = sum(sum(s["errors"].values()) for s in abused)
ratio = a / c if c else 0.0
print(f"median clean {c:,.0f} echoes/s, median abused {a:,.0f} echoes/s: ratio {ratio:.2f} (goal ≥ 0.80); "
      f"errors in abused runs: {errors} (goal 0)")
print("RESULT:", "PASS" if ratio >= 0.8 and errors == 0 else "MISS")
PY
