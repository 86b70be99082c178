# Sourced by bench/soak.sh for `bench/soak.sh memory` (not run alone; its header says what
# it measures): both I/O backends' clients and their servers, VmRSS every INTERVAL seconds,
# and the least-squares slope of each after the fifth minute.
minutes="${MINUTES:-120}"
interval="${INTERVAL:-10}"
server_cpu="${SERVER_CPU:-0}"
client_cpu="${CLIENT_CPU:-1}"
stall_every="${STALL_EVERY:-0}"
out="${OUT:-bench/.build/soak}"
mkdir -p "$out"

# shellcheck source=bench/release-bin.sh
. bench/release-bin.sh

backends=(uring epoll)
declare -A server port client
pids=()
stop_all() {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
}
trap stop_all EXIT

for io in "${backends[@]}"; do
    taskset -c "$server_cpu" "$BIN" serve --port 0 >"$out/serve-$io.out" 2>"$out/serve-$io.err" &
    server[$io]=$!
    pids+=("$!")
    for _ in $(seq 100); do
        if grep -q 'listening on' "$out/serve-$io.out" 2>/dev/null; then break; fi
        sleep 0.1
    done
    port[$io]=$(sed -n 's#^listening on ws://[^:]*:\([0-9]*\).*#\1#p' "$out/serve-$io.out" | head -1)
done
load=(run echo --connections 1000 --rate 2000/s --warmup 0s --duration "${minutes}m")
for io in "${backends[@]}"; do
    taskset -c "$client_cpu" "$BIN" "${load[@]}" --io "$io" --quiet --json "$out/memory-$io.json" \
        "ws://127.0.0.1:${port[$io]}/" >"$out/memory-$io.txt" 2>"$out/memory-$io.stderr" &
    client[$io]=$!
    pids+=("$!")
done

{
    echo "date: $(date -u '+%Y-%m-%d %H:%M UTC'); wsbench $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
    echo "machine: $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1), $(nproc) cores," \
        "Linux $(uname -r); load average at the start: $(cut -d' ' -f1-3 /proc/loadavg)"
    for io in "${backends[@]}"; do
        echo "client $io: taskset -c $client_cpu wsbench ${load[*]} --io $io ws://127.0.0.1:${port[$io]}/"
        echo "server $io: taskset -c $server_cpu wsbench serve --port 0 (port ${port[$io]})"
    done
    echo "VmRSS every ${interval} s; stalls of its own: $([ "$stall_every" -gt 0 ] &&
        echo "one process in four stopped 0.2-2 s every ~${stall_every} s" || echo none)"
} | tee "$out/memory.header" >&2

# Stops one of the four at random now and then (by the pids above), as a busy machine does.
if [ "$stall_every" -gt 0 ]; then
    (
        while kill -0 "${client[uring]}" 2>/dev/null || kill -0 "${client[epoll]}" 2>/dev/null; do
            sleep $((stall_every / 2 + RANDOM % (stall_every + 1)))
            victim=${pids[RANDOM % ${#pids[@]}]}
            pause=$(awk -v r="$RANDOM" 'BEGIN { printf "%.2f", 0.2 + 1.8 * r / 32767 }')
            kill -STOP "$victim" 2>/dev/null || true
            sleep "$pause"
            kill -CONT "$victim" 2>/dev/null || true
            echo "$(date +%s) $victim $pause" >>"$out/memory-stalls.txt"
        done
    ) &
    pids+=("$!")
fi

rss() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status" 2>/dev/null || echo; }
csv="$out/memory.csv"
echo "t_s,client_uring_kib,client_epoll_kib,server_uring_kib,server_epoll_kib" >"$csv"
start=$(date +%s)
while kill -0 "${client[uring]}" 2>/dev/null || kill -0 "${client[epoll]}" 2>/dev/null; do
    echo "$(($(date +%s) - start)),$(rss "${client[uring]}"),$(rss "${client[epoll]}")," \
        "$(rss "${server[uring]}"),$(rss "${server[epoll]}")" | tr -d ' ' >>"$csv"
    sleep "$interval"
done
for io in "${backends[@]}"; do
    wait "${client[$io]}" && status=0 || status=$?
    echo "client $io exited with status $status" >>"$out/memory.header"
done
stop_all

python3 - "$csv" "$out" "$minutes" <<'EOF' | tee "$out/memory.summary"
import csv, json, sys
path, out, minutes = sys.argv[1], sys.argv[2], sys.argv[3]
print(open(f"{out}/memory.header").read().rstrip())
rows = list(csv.DictReader(open(path)))
def slope(points):
    n = len(points)
    sx = sum(x for x, _ in points); sy = sum(y for _, y in points)
    sxx = sum(x * x for x, _ in points); sxy = sum(x * y for x, y in points)
    return (n * sxy - sx * sy) / (n * sxx - sx * sx)
print(f"{'process':<14} {'RSS at 5 min':>13} {'at the end':>11} {'highest':>10} {'slope after 5 min':>18}  <= 0.1 KiB/s")
for column, name in [("client_uring_kib", "client uring"), ("client_epoll_kib", "client epoll"),
                     ("server_uring_kib", "server uring"), ("server_epoll_kib", "server epoll")]:
    points = [(float(r["t_s"]), float(r[column])) for r in rows if r[column] and float(r["t_s"]) >= 300]
    if len(points) < 3:
        print(f"{name:<14} too few samples after the fifth minute ({len(points)})")
        continue
    after = [y for _, y in points]
    s = slope(points)
    print(f"{name:<14} {after[0]:>9.0f} KiB {after[-1]:>7.0f} KiB {max(after):>6.0f} KiB {s:>12.4f} KiB/s  "
          f"{'yes' if s <= 0.1 else 'NO'}")
print(f"samples: {len(rows)}, every ~{float(rows[-1]['t_s']) / max(len(rows) - 1, 1):.0f} s over {rows[-1]['t_s']} s")
for io in ("uring", "epoll"):
    try:
        r = json.load(open(f"{out}/memory-{io}.json"))
    except (OSError, ValueError) as e:
        print(f"client {io}: no result file ({e})")
        continue
    s = r["summary"]
    ran = [w.get("io") for w in r.get("client", {}).get("workers", [])]
    print(f"client {io}: measured {r['measured_s']:.0f} s on {ran}, {s['measured_echoes']} round trips "
          f"({s['echoes_per_sec']:.0f}/s), errors {s['errors'] or 'none'}")
EOF
