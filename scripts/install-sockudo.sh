#!/usr/bin/env bash
# Installs sockudo (crates.io), a Pusher Channels server written in Rust, for the
# `--protocol pusher` tests (crates/wsbench/tests/protocols/pusher.rs) and the fleet member
# servers/sockudo. The binary goes to <repo>/.tools/sockudo, built by `cargo install` with
# the local adapter only (`--no-default-features --features local,v2`: no Redis, NATS or
# OpenTelemetry). It needs `protoc` (Debian protobuf-compiler) for one of its dependencies.
# It is a release build (optimisation level 3, SOCKUDO_OPT_LEVEL 0-3 to change it) without
# debug information, so `compare` measures sockudo as shipped. Cold on 2 cores with the crates
# downloaded: 9 min 31 s at level 3 on a quiet machine (31 min 47 s at a load average of 8.4),
# 534 s at level 1 (load average 3.6): the lower level saves too little to be worth figures
# that understate the server. The binary is kept in a
# cache outside the checkout ($WSBENCH_TOOL_CACHE, else ~/.cache/wsbench-tools/sockudo-VERSION-oN),
# which a fresh clone on the same machine copies instead of building again. Idempotent: does
# nothing when the pinned version and level are already in .tools (recorded in
# .tools/sockudo.version).
#
# The version is pinned (5.2.0, on crates.io when this was written). Override with
# SOCKUDO_VERSION=X.Y.Z.
set -euo pipefail

cd "$(dirname "$0")/.."
version=${SOCKUDO_VERSION:-5.2.0}
level=${SOCKUDO_OPT_LEVEL:-3}
case $level in
    [0-3]) ;;
    *) echo "install-sockudo: SOCKUDO_OPT_LEVEL is $level: give 0, 1, 2 or 3" >&2; exit 2 ;;
esac
tools="$(pwd)/.tools"
binary="$tools/sockudo"
stamp="$tools/sockudo.version"
cache=${WSBENCH_TOOL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/wsbench-tools}
cached="$cache/sockudo-$version-o$level"

mkdir -p "$tools" "$cache"
if [ -x "$binary" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$version-o$level" ]; then
    [ -x "$cached" ] || cp -f "$binary" "$cached"
    echo "install-sockudo: reusing $binary ($version, opt-level $level)"
    exit 0
fi
if [ ! -x "$cached" ]; then
    if ! command -v protoc >/dev/null; then
        echo "install-sockudo: protoc is needed to build sockudo (apt-get install protobuf-compiler)" >&2
        exit 1
    fi
    root=$(mktemp -d)
    trap 'rm -rf "$root"' EXIT
    echo "install-sockudo: cargo install sockudo@$version --no-default-features --features local,v2" \
        "at opt-level $level (about 10 minutes on 2 quiet cores; built once per machine, into $cache)"
    env -u CARGO_TARGET_DIR -u RUSTUP_TOOLCHAIN CARGO_INCREMENTAL=0 CARGO_PROFILE_RELEASE_OPT_LEVEL="$level" \
        CARGO_PROFILE_RELEASE_DEBUG=0 cargo install --quiet --locked "sockudo@$version" \
        --no-default-features --features local,v2 --root "$root" --target-dir "$cache/sockudo-build"
    mv -f "$root/bin/sockudo" "$cached"
    rm -rf "$cache/sockudo-build"
fi
cp -f "$cached" "$binary"
echo "$version-o$level" > "$stamp"
echo "install-sockudo: installed $binary ($version, opt-level $level)"
