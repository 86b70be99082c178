#!/usr/bin/env bash
# bench/recovery-cost.sh: what a reconnection costs the client, against what one churn cycle
# costs it, measured in one interleaved run. Three runs per repeat, against `wsbench serve`
# pinned to SERVER_CPU with the client on CLIENT_CPU:
#   base      CONNECTIONS connections echoing at RATE in all, nothing disrupted
#   recovery  the same, the server closing every connection with 1012 every second
#             (--disrupt close@1s,every=1s) and the client reopening each at once
#             (--reconnect=immediate): a full TCP + WebSocket handshake per reconnection
#   churn     --scenario churn at CHURN_RATE new connections/s (open, one echo, close)
# and prints the client's CPU per reconnection ((recovery − base) CPU seconds over the
# reconnections counted) and per churn cycle (CPU seconds over cycles), the medians over the
# repeats and their ratio.
#
#   bench/recovery-cost.sh
#   Environment: CONNECTIONS (default 2000), RATE (default 2000/s), CHURN_RATE (default
#                2000/s), DURATION (default 10), REPEATS (default 5), SERVER_CPU (default 0),
#                CLIENT_CPU (default 1), BIN (default target/release/wsbench).
set -euo pipefail
{
CONNECTIONS=${CONNECTIONS:-2000}
RATE=${RATE:-2000/s}
CHURN_RATE=${CHURN_RATE:-2000/s}
DURATION=${DURATION:-10}
REPEATS=${REPEATS:-5}
SERVER_CPU=${SERVER_CPU:-0}
CLIENT_CPU=${CLIENT_CPU:-1}
BIN=${BIN:-target/release/wsbench}
[ -x "$BIN" ] || { echo "bench/recovery-cost.sh: $BIN is missing: cargo build --release -p wsbench" >&2; exit 2; }
out=$(mktemp -d /tmp/wsbench-recovery-cost.XXXXXX)
common=(--server-cpus "$SERVER_CPU" --client-cpus "$CLIENT_CPU" --warmup 0s --duration "${DURATION}s" --quiet)

run() { # NAME ARGS...: one run, its result in $out/NAME.json
    local name=$1; shift
    if ! "$BIN" run "${common[@]}" "$@" --json "$out/$name.json" >"$out/$name.log" 2>&1; then
        # Exit 3 (errors counted: the closes) still wrote a result.
        [ -s "$out/$name.json" ] || { echo "FAILED: $name (see $out/$name.log)" >&2; exit 1; }
    fi
}

for repeat in $(seq "$REPEATS"); do
    # Rotate the order so that a drift of the machine falls on every kind alike.
    case $((repeat % 3)) in
        0) order=(base recovery churn) ;;
        1) order=(recovery churn base) ;;
        *) order=(churn base recovery) ;;
    esac
    for kind in "${order[@]}"; do
        case $kind in
            base) run "base-$repeat" --connections "$CONNECTIONS" --rate "$RATE" ;;
            recovery) run "recovery-$repeat" --connections "$CONNECTIONS" --rate "$RATE" \
                --reconnect=immediate --disrupt close@1s,every=1s ;;
            churn) run "churn-$repeat" --scenario churn --rate "$CHURN_RATE" ;;
        esac
    done
    echo "repeat $repeat of $REPEATS done" >&2
done

python3 - "$out" "$REPEATS" <<'EOF'
import json, statistics, sys
out, repeats = sys.argv[1], int(sys.argv[2])
def load(name):
    return json.load(open(f"{out}/{name}.json"))
per_reconnect, per_cycle = [], []
for r in range(1, repeats + 1):
    base, rec, churn = load(f"base-{r}"), load(f"recovery-{r}"), load(f"churn-{r}")
    reconnections = rec["counters"].get("reconnections", 0)
    cycles = churn["churn"]["cycles"]
    if reconnections == 0 or cycles == 0:
        sys.exit(f"repeat {r}: no reconnection or no churn cycle measured (see {out})")
    # Per second of run, so that a run a little longer or shorter than another compares.
    cpu = lambda res: res["client"]["cpu_seconds"] / res["elapsed_s"] * res["measured_s"]
    per_reconnect.append((cpu(rec) - cpu(base)) * 1e6 / reconnections)
    per_cycle.append(cpu(churn) * 1e6 / cycles)
    print(f"repeat {r}: {reconnections} reconnections, {(cpu(rec) - cpu(base)) * 1e6 / reconnections:.1f} µs each; "
          f"{cycles} churn cycles, {cpu(churn) * 1e6 / cycles:.1f} µs each")
a, b = statistics.median(per_reconnect), statistics.median(per_cycle)
print(f"client CPU per reconnection (median of {repeats}): {a:.1f} µs "
      f"(range {min(per_reconnect):.1f}–{max(per_reconnect):.1f})")
print(f"client CPU per churn cycle   (median of {repeats}): {b:.1f} µs "
      f"(range {min(per_cycle):.1f}–{max(per_cycle):.1f})")
print(f"reconnection ÷ churn cycle: {a / b:.2f}")
EOF
echo "results in $out"
}
