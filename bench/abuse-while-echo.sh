#!/usr/bin/env bash
# The robustness benchmark: a 1,000-connection echo run against `wsbench serve`, clean and
# with the abuse suite's attacks (bench/abuse.py) hitting the same server at the same time,
# interleaved REPEATS times. Prints each run, the attacks and how the server answered them,
# the medians and their ratio; the goal is zero errors in the abused echo runs and
# throughput within 20 % of the clean ones. PASS or MISS only when every run succeeded,
# every attack landed (the attacker's exit status) and the echo client was never CPU-bound;
# otherwise the reason, and a failure exits 1.
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

# run_echo NAME: one echo run; its exit status goes to NAME.rc beside its result file.
run_echo() {
    local rc=0
    rm -f "$out/$1.json"
    taskset -c 1 "$wsbench" run echo "$url" --connections 1000 --duration "${DURATION}s" --warmup "${WARMUP}s" \
        --payload bytes:20 --binary --client-cpus 1 --json "$out/$1.json" >"$out/$1.log" 2>&1 || rc=$?
    echo "$rc" >"$out/$1.rc"
    if python3 - "$out/$1.json" "$1" "$rc" <<'PY'
import json, sys
try:
    s = json.load(open(sys.argv[1]))["summary"]
except (OSError, ValueError) as e:
    sys.exit(print(f"{sys.argv[2]:<10} exit {sys.argv[3]}  FAILED: no result file ({e})"))
print(f"{sys.argv[2]:<10} exit {sys.argv[3]}  {s['echoes_per_sec']:>10,.0f} echoes/s  "
      f"established {s['connections']['established']}  errors {s['errors'] or 'none'}  p99 {s['latency_us']['p99']} µs")
PY
    then :; else echo "$1: its result file could not be read"; fi
}

for repeat in $(seq "$REPEATS"); do
    run_echo "clean-$repeat"
    python3 bench/abuse.py 127.0.0.1 "$port" $((DURATION + WARMUP + 3)) >"$out/abuse-$repeat.log" 2>&1 &
    attacker=$!
    sleep 1
    run_echo "abused-$repeat"
    # The attacker exits 1 unless every attack landed (the server answered it as expected).
    rc=0
    wait "$attacker" || rc=$?
    echo "$rc" >"$out/abuse-$repeat.rc"
    echo "attacks of repeat $repeat (attacker exit $rc):"
    sed 's/^/  /' "$out/abuse-$repeat.log"
done

python3 - "$out" "$REPEATS" <<'PY'
import json, statistics, sys
out, repeats = sys.argv[1], int(sys.argv[2])
failures, results = [], {}
for kind in ("clean", "abused"):
    for i in range(1, repeats + 1):
        name = f"{kind}-{i}"
        rc = int(open(f"{out}/{name}.rc").read())
        # Exit 3: completed with errors counted, which the goal judges; anything else failed.
        if rc not in (0, 3):
            failures.append(f"{name}: wsbench run exited {rc}")
            continue
        try:
            r = json.load(open(f"{out}/{name}.json"))
        except (OSError, ValueError) as e:
            failures.append(f"{name}: no result file ({e})")
            continue
        if r["summary"]["measured_echoes"] == 0:
            failures.append(f"{name}: no echo measured")
            continue
        results.setdefault(kind, []).append(r)
for i in range(1, repeats + 1):
    rc = int(open(f"{out}/abuse-{i}.rc").read())
    if rc != 0:
        last = open(f"{out}/abuse-{i}.log").read().strip().splitlines()[-1:] or ["no output"]
        failures.append(f"attacker of repeat {i} exited {rc}: {last[0]}")
clean, abused = results.get("clean", []), results.get("abused", [])
if clean and abused:
    c = statistics.median(r["summary"]["echoes_per_sec"] for r in clean)
    a = statistics.median(r["summary"]["echoes_per_sec"] for r in abused)
    errors = sum(sum(r["summary"]["errors"].values()) for r in abused)
    ratio = a / c if c else 0.0
    print(f"median clean {c:,.0f} echoes/s, median abused {a:,.0f} echoes/s: ratio {ratio:.2f} (goal ≥ 0.80); "
          f"errors in abused runs: {errors} (goal 0)")
bound = sum(1 for r in clean + abused if r["client"]["bound"])
if failures:
    # A failed run, or attacks that did not land, is a failed result: no ratio is judged.
    print("RESULT: FAILED: " + "; ".join(failures))
    sys.exit(1)
if bound:
    print(f"RESULT: not judged: the echo client was CPU-bound in {bound} of {len(clean + abused)} runs, "
          "so the ratio measures the client, not how the attacks slowed the server")
else:
    print("RESULT:", "PASS" if ratio >= 0.8 and errors == 0 else "MISS")
PY
