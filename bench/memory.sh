#!/usr/bin/env bash
# bench/memory.sh: does the wsbench client's memory grow with the length of a run? Runs one
# long `wsbench run` against the built-in server and reads the client's VmRSS every
# INTERVAL seconds; prints the samples and the growth after the first minute (the last
# sample minus the one at 60 s, and the highest minus it), and the least-squares slope
# over the samples after the first minute. A measurement, not a timed test: a loaded
# machine changes the speed, not the memory.
#
#   bench/memory.sh echo      # 60 min echo, 1,000 connections, 2,000 msg/s (open loop)
#   bench/memory.sh pubsub    # 30 min pub/sub, 100 subscribers, 10 publishers, 2,000 deliveries/s
#   MINUTES=5 INTERVAL=5 bench/memory.sh echo     # shorter
#
# Environment: BIN (default: target/release/wsbench, built unless NO_BUILD=1), MINUTES
# (default 60 for echo, 30 for pubsub), INTERVAL (default 10), OUT (default
# bench/.build/memory): the samples (SCENARIO.csv), the client's stderr and result file.
# One block, read whole before it runs: editing this file during a run cannot change it.
{
set -euo pipefail

cd "$(dirname "$0")/.."
scenario="${1:-echo}"
interval="${INTERVAL:-10}"
out="${OUT:-bench/.build/memory}"
mkdir -p "$out"

case "$scenario" in
    echo)
        minutes="${MINUTES:-60}"
        args=(run echo --connections 1000 --rate 2000/s --warmup 0s --duration "${minutes}m")
        ;;
    pubsub)
        minutes="${MINUTES:-30}"
        # 10 topics of 10 subscribers; 10 publishers at 200 publishes/s in all: each publish
        # reaches its topic's 10 subscribers, 2,000 deliveries a second.
        args=(run pubsub --subscribers 100 --topics 10 --publishers 10 --rate 200/s --warmup 0s
            --duration "${minutes}m")
        ;;
    *)
        echo "usage: bench/memory.sh echo|pubsub" >&2
        exit 2
        ;;
esac

# shellcheck source=bench/release-bin.sh
. bench/release-bin.sh

csv="$out/$scenario.csv"
"$BIN" "${args[@]}" --quiet --json "$out/$scenario.json" 2>"$out/$scenario.stderr" >"$out/$scenario.txt" &
client=$!
trap 'kill "$client" 2>/dev/null || true' EXIT
start=$(date +%s)
echo "t_s,rss_kib" >"$csv"
echo "bench/memory.sh: $BIN ${args[*]} (pid $client), VmRSS every ${interval} s" >&2
while kill -0 "$client" 2>/dev/null; do
    rss=$(awk '/^VmRSS:/ { print $2 }' "/proc/$client/status" 2>/dev/null || true)
    if [ -n "$rss" ]; then
        now=$(($(date +%s) - start))
        echo "$now,$rss" >>"$csv"
        echo "  ${now} s: ${rss} KiB" >&2
    fi
    sleep "$interval"
done
wait "$client" || status=$?
trap - EXIT
echo "bench/memory.sh: the client exited with status ${status:-0}" >&2

# Growth after the first minute: the first sample at or after 60 s is the reference.
awk -F, -v cmd="$BIN ${args[*]}" 'NR > 1 {
        t[n] = $1; r[n] = $2; n++
    }
    END {
        ref = -1
        for (i = 0; i < n; i++) if (t[i] >= 60) { ref = i; break }
        if (ref < 0) { print "fewer than 60 s of samples"; exit 1 }
        peak = 0
        for (i = ref; i < n; i++) if (r[i] > peak) peak = r[i]
        # Least squares over the samples from the reference on.
        sx = sy = sxx = sxy = 0; m = 0
        for (i = ref; i < n; i++) { sx += t[i]; sy += r[i]; sxx += t[i] * t[i]; sxy += t[i] * r[i]; m++ }
        slope = (m > 1) ? (m * sxy - sx * sy) / (m * sxx - sx * sx) : 0
        printf "command: %s\n", cmd
        printf "samples: %d over %d s, every %d s\n", n, t[n - 1], (n > 1 ? t[1] - t[0] : 0)
        printf "RSS at %d s: %d KiB; at the end (%d s): %d KiB; highest after the first minute: %d KiB\n",
            t[ref], r[ref], t[n - 1], r[n - 1], peak
        printf "growth after the first minute: %+.2f MiB (end), %+.2f MiB (highest)\n",
            (r[n - 1] - r[ref]) / 1024, (peak - r[ref]) / 1024
        printf "slope after the first minute: %+.3f KiB/s\n", slope
    }' "$csv" | tee "$out/$scenario.summary"
exit
}
