#!/usr/bin/env bash
# bench/ab.sh: wsbench against an earlier revision of itself, in one interleaved run, so that a
# change (a refactor, an optimisation) can be shown not to cost speed. For each connection
# count and repeat it makes three runs, in a rotating order:
#   whole  old `serve` + old `run`   vs  new `serve` + new `run`
#   client old `run` vs new `run`, both against the new `serve`
# with the server pinned to SERVER_CPU and the client to CLIENT_CPU, 20-byte binary echoes,
# one in flight (as bench/run.sh does), and prints the median echoes/s of each side and the
# ratio new ÷ old with the spread (min–max of the per-repeat ratios), and the same for the
# client's CPU time per round trip (its workers' CPU seconds over every echo it received),
# which the host's noise moves less than the rate. A row with a failed run (an exit status
# other than 0, no result file, no echo measured) says FAILED instead, and the script exits 1;
# rows note how many runs the client reported itself CPU-bound in.
# SCENARIO=pubsub measures a fan-out instead: `serve --pubsub`, N subscribers on 10 topics,
# 10 publishers at PUBSUB_RATE publishes/s (each delivered to N/10 subscribers): deliveries/s
# and the client's CPU per delivery.
#
#   bench/ab.sh OLD_REVISION [CONNECTIONS...]     (default connections: 100 1000; pubsub:
#                                                 subscribers, default 5000)
#   Environment: DURATION (default 5), WARMUP (default 1), REPEATS (default 5),
#                SERVER_CPU (default 0), CLIENT_CPU (default 1), IO (uring or epoll: the
#                client's --io, default uring), SCENARIO (echo or pubsub, default echo),
#                PUBSUB_RATE (default 200).
set -euo pipefail
{
old_rev=${1:?usage: bench/ab.sh OLD_REVISION [CONNECTIONS...]}
shift
SCENARIO=${SCENARIO:-echo}
if [ $# -gt 0 ]; then connections=("$@"); elif [ "$SCENARIO" = pubsub ]; then connections=(5000); else connections=(100 1000); fi
IO=${IO:-uring}
PUBSUB_RATE=${PUBSUB_RATE:-200}
DURATION=${DURATION:-5}
WARMUP=${WARMUP:-1}
REPEATS=${REPEATS:-5}
SERVER_CPU=${SERVER_CPU:-0}
CLIENT_CPU=${CLIENT_CPU:-1}
root=$(cd "$(dirname "$0")/.." && pwd)
build=$root/bench/.build/ab
mkdir -p "$build"

# The old revision is built in a worktree of its own (its own target/), the new one here.
old_tree=$build/old-tree
if [ ! -d "$old_tree" ]; then
    git -C "$root" worktree add --detach "$old_tree" "$old_rev" >/dev/null
else
    git -C "$old_tree" checkout -q --detach "$old_rev"
fi
(cd "$old_tree" && CARGO_TARGET_DIR="$old_tree/target" cargo build --release -q -p wsbench)
(cd "$root" && cargo build --release -q -p wsbench)
cp "$old_tree/target/release/wsbench" "$build/wsbench-old"
cp "${CARGO_TARGET_DIR:-$root/target}/release/wsbench" "$build/wsbench-new"

# serve SIDE: starts that side's server pinned; sets port and server_pid (returns 1 if it
# printed no port).
serve() {
    local out=$build/serve-$1.out
    local mode=()
    [ "$SCENARIO" = pubsub ] && mode=(--pubsub)
    # Removed first: on a loaded machine the wait below could read the last server's port
    # before the new server's redirection empties the file.
    rm -f "$out"
    taskset -c "$SERVER_CPU" "$build/wsbench-$1" serve --port 0 "${mode[@]}" >"$out" 2>&1 &
    server_pid=$!
    for _ in $(seq 100); do
        port=$(grep -m 1 -o 'ws://127.0.0.1:[0-9]*' "$out" 2>/dev/null | sed 's/.*://' || true)
        [ -n "$port" ] && return 0
        sleep 0.05
    done
    return 1
}

# measure SERVER-SIDE CLIENT-SIDE CONNECTIONS NAME: prints "echoes/s client-CPU-µs-per-echo
# bound" (bound: 1 when the client reported itself CPU-bound), or "FAILED why" when the run
# failed. Each run writes its own result file, removed first: a failed run can never be read
# as the previous run's figures.
measure() {
    if ! serve "$1"; then
        kill "$server_pid" 2>/dev/null || true
        echo "FAILED $4: the $1 server did not start ($(head -n 1 "$build/serve-$1.out"))"
        return
    fi
    local json=$build/$4.json log=$build/$4.log rc=0
    rm -f "$json"
    local shape=(echo --connections "$3" --payload bytes:20 --binary)
    if [ "$SCENARIO" = pubsub ]; then
        shape=(pubsub --subscribers "$3" --topics 10 --publishers 10 --rate "$PUBSUB_RATE/s")
    fi
    "$build/wsbench-$2" run "${shape[@]}" "ws://127.0.0.1:$port/" --duration "${DURATION}s" \
        --warmup "${WARMUP}s" --io "$IO" --client-cpus "$CLIENT_CPU" --json "$json" \
        >"$log" 2>&1 || rc=$?
    kill "$server_pid"
    wait "$server_pid" 2>/dev/null || true
    # Exit 3: the run completed but counted errors, which an A/B of a clean echo must not have.
    if [ "$rc" -ne 0 ]; then
        echo "FAILED $4: wsbench run exited $rc ($(tail -n 1 "$log"))"
        return
    fi
    python3 - "$json" "$4" <<'PY'
import json, sys
try:
    r = json.load(open(sys.argv[1]))
except (OSError, ValueError) as e:
    sys.exit(print(f"FAILED {sys.argv[2]}: no result file ({e})"))
if r["summary"]["measured_echoes"] == 0:
    sys.exit(print(f"FAILED {sys.argv[2]}: no echo measured"))
cpu = sum(w["cpu_seconds"] for w in r["client"]["workers"])
print(r["summary"]["echoes_per_sec"], cpu * 1e6 / max(r["counters"]["messages_received"], 1),
      1 if r["client"]["bound"] else 0)
PY
}

status=0
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
ratio() { python3 -c 'import sys; print(float(sys.argv[2]) / float(sys.argv[1]))' "$1" "$2"; }
spread() { sort -g "$1" | awk 'NR==1{min=$1} {max=$1} END {printf "%.2f–%.2f", min, max}'; }

echo "bench/ab.sh $old_rev ($(git -C "$root" rev-parse --short "$old_rev")) vs working tree ($(git -C "$root" rev-parse --short HEAD)$(git -C "$root" diff --quiet || echo '+changes'))"
echo "machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), Linux $(uname -r)"
echo "server on CPU $SERVER_CPU, client on CPU $CLIENT_CPU (--io $IO); $SCENARIO; ${DURATION} s measured after ${WARMUP} s, $REPEATS repeats"
printf '%-8s %-7s %12s %12s %8s %11s   %9s %9s %8s %11s\n' conns compare "old echo/s" "new echo/s" "new÷old" "spread" \
    "old µs" "new µs" "new÷old" "spread"
for conns in "${connections[@]}"; do
    for kind in whole client; do
        for file in old new ratio cpu-old cpu-new cpu-ratio failed bound; do : >"$build/$kind-$conns.$file"; done
    done
    for repeat in $(seq "$REPEATS"); do
        # Rotate which side goes first.
        if [ $((repeat % 2)) -eq 1 ]; then order=(old new); else order=(new old); fi
        declare -A got=()
        for side in "${order[@]}"; do
            got[whole-$side]=$(measure "$side" "$side" "$conns" "whole-$side-$conns-r$repeat")
            got[client-$side]=$(measure new "$side" "$conns" "client-$side-$conns-r$repeat")
        done
        for kind in whole client; do
            # A repeat with a failed run gives no ratio: the failure is recorded instead.
            for side in old new; do
                if [ -z "${got[$kind-$side]}" ]; then got[$kind-$side]="FAILED $kind-$side-$conns-r$repeat: no figures"; fi
            done
            if [[ ${got[$kind-old]} == FAILED* ]] || [[ ${got[$kind-new]} == FAILED* ]]; then
                for side in old new; do
                    if [[ ${got[$kind-$side]} == FAILED* ]]; then echo "${got[$kind-$side]#FAILED }" >>"$build/$kind-$conns.failed"; fi
                done
                continue
            fi
            read -r old_rate old_cpu old_bound <<<"${got[$kind-old]}"
            read -r new_rate new_cpu new_bound <<<"${got[$kind-new]}"
            echo "$old_rate" >>"$build/$kind-$conns.old"
            echo "$new_rate" >>"$build/$kind-$conns.new"
            echo "$old_cpu" >>"$build/$kind-$conns.cpu-old"
            echo "$new_cpu" >>"$build/$kind-$conns.cpu-new"
            echo $((old_bound + new_bound)) >>"$build/$kind-$conns.bound"
            ratio "$old_rate" "$new_rate" >>"$build/$kind-$conns.ratio"
            ratio "$old_cpu" "$new_cpu" >>"$build/$kind-$conns.cpu-ratio"
        done
        unset got
    done
    for kind in whole client; do
        failures=$(wc -l <"$build/$kind-$conns.failed")
        if [ "$failures" -gt 0 ]; then
            # A failed run is a failed row: no ratio from the repeats that happened to work.
            status=1
            printf '%-8s %-7s FAILED: %s of %s runs failed, first: %s\n' "$conns" "$kind" "$failures" \
                $((2 * REPEATS)) "$(head -n 1 "$build/$kind-$conns.failed")"
            continue
        fi
        old=$(median <"$build/$kind-$conns.old")
        new=$(median <"$build/$kind-$conns.new")
        old_cpu=$(median <"$build/$kind-$conns.cpu-old")
        new_cpu=$(median <"$build/$kind-$conns.cpu-new")
        bound=$(awk '{ n += $1 } END { print n + 0 }' "$build/$kind-$conns.bound")
        printf '%-8s %-7s %12.0f %12.0f %8.3f %11s   %9.2f %9.2f %8.3f %11s%s\n' "$conns" "$kind" "$old" "$new" \
            "$(ratio "$old" "$new")" "$(spread "$build/$kind-$conns.ratio")" "$old_cpu" "$new_cpu" \
            "$(ratio "$old_cpu" "$new_cpu")" "$(spread "$build/$kind-$conns.cpu-ratio")" \
            "$([ "$bound" -gt 0 ] && echo "   client-bound in $bound of $((2 * REPEATS)) runs")"
    done
done
if [ "$status" != 0 ]; then echo "ab.sh: FAILED: some runs failed (rows marked FAILED); logs in ${build#"$root"/}" >&2; fi
exit "$status"
}
