#!/usr/bin/env bash
# Installs sockudo (crates.io), a Pusher Channels server written in Rust, for the
# `--protocol pusher` tests (crates/wsbench/tests/protocols/pusher.rs) and the fleet member
# servers/sockudo. The binary goes to <repo>/.tools/sockudo, built by `cargo install` with
# the local adapter only (`--no-default-features --features local,v2`: no Redis, NATS or
# OpenTelemetry). It needs `protoc` (Debian protobuf-compiler) for one of its dependencies
# and takes 30 minutes or more on 2 cores, so the binary is also kept in a cache outside the
# checkout ($WSBENCH_TOOL_CACHE, else ~/.cache/wsbench-tools/sockudo-VERSION), which a fresh
# clone on the same machine (CI's) copies instead of building again; an interrupted build
# resumes from its build folder there. Idempotent: does nothing when the pinned version is
# already in .tools (recorded in .tools/sockudo.version).
#
# The version is pinned (5.2.0, on crates.io when this was written). Override with
# SOCKUDO_VERSION=X.Y.Z.
set -euo pipefail

cd "$(dirname "$0")/.."
version=${SOCKUDO_VERSION:-5.2.0}
tools="$(pwd)/.tools"
binary="$tools/sockudo"
stamp="$tools/sockudo.version"
cache=${WSBENCH_TOOL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/wsbench-tools}
cached="$cache/sockudo-$version"

mkdir -p "$tools" "$cache"
if [ -x "$binary" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$version" ]; then
    [ -x "$cached" ] || cp -f "$binary" "$cached"
    echo "install-sockudo: reusing $binary ($version)"
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
        "(30 minutes or more on 2 cores; built once per machine, into $cache)"
    env -u CARGO_TARGET_DIR -u RUSTUP_TOOLCHAIN cargo install --quiet --locked "sockudo@$version" \
        --no-default-features --features local,v2 --root "$root" --target-dir "$cache/sockudo-build"
    mv -f "$root/bin/sockudo" "$cached"
    rm -rf "$cache/sockudo-build"
fi
cp -f "$cached" "$binary"
echo "$version" > "$stamp"
echo "install-sockudo: installed $binary ($version)"
