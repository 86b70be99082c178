#!/usr/bin/env bash
# Fuzz smoke test for the RFC 6455 codec, the echo server and the application-protocol
# decoders (mqtt_decode, stomp_decode, socketio_decode, graphql_ws_decode, jsonrpc_decode, centrifugo_decode, nats_decode,
# actioncable_decode, pusher_decode, signalr_decode)
# and the HTTP/3 frame and QPACK decoders (http3_decode),
# as CI runs it: every cargo-fuzz target in fuzz/
# for SECONDS seconds each (default 60), starting from the committed seeds and regression
# inputs in fuzz/corpus/<target>/. Exits non-zero if any target crashes; libFuzzer leaves
# the crashing input in fuzz/artifacts/<target>/. Needs a nightly toolchain and cargo-fuzz
# (`cargo install cargo-fuzz --locked`).
#
# New inputs libFuzzer finds go to fuzz/target/corpus/<target>/ (ignored by git), so the
# committed corpus stays the hand-made seeds plus the regressions someone chose to save.
#
# Usage: scripts/fuzz-smoke.sh [SECONDS] [TARGET...]
set -euo pipefail

cd "$(dirname "$0")/../fuzz"
seconds=${1:-60}
shift $(( $# > 0 ? 1 : 0 ))
if [ $# -gt 0 ]; then
    targets=("$@")
else
    mapfile -t targets < <(cargo +nightly fuzz list)
fi

echo "fuzz-smoke: cargo +nightly fuzz build"
cargo +nightly fuzz build

failed=()
for target in "${targets[@]}"; do
    scratch="target/corpus/$target"
    mkdir -p "$scratch"
    echo "fuzz-smoke: $target for ${seconds}s"
    if ! cargo +nightly fuzz run "$target" "$scratch" "corpus/$target" -- \
        -max_total_time="$seconds" -rss_limit_mb=2048 -print_final_stats=1; then
        failed+=("$target")
    fi
done

if [ ${#failed[@]} -gt 0 ]; then
    echo "fuzz-smoke: FAILED: ${failed[*]} (inputs in fuzz/artifacts/<target>/)" >&2
    exit 1
fi
echo "fuzz-smoke: all ${#targets[@]} targets ran ${seconds}s without a crash"
