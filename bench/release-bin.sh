# Sourced by bench/memory.sh and bench/soak.sh (not run alone): sets BIN to the wsbench
# binary they measure, unless the caller gave one: target/release/wsbench (or under
# CARGO_TARGET_DIR), built first unless NO_BUILD=1.
if [ -z "${BIN:-}" ]; then
    if [ "${NO_BUILD:-0}" != 1 ]; then
        cargo build --release -p wsbench >&2
    fi
    BIN="${CARGO_TARGET_DIR:-target}/release/wsbench"
fi
