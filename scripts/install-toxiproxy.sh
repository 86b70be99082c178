#!/usr/bin/env bash
# Installs Toxiproxy (github.com/Shopify/toxiproxy/v2), the fault-injecting TCP proxy that
# the fault tests (crates/wsbench/tests/faults.rs) put between `wsbench run` and its server
# to reset, delay and cut connections. The server binary goes to <repo>/.tools/toxiproxy-server
# (built from source with `go install`; needs Go and the Go module proxy).
# Idempotent: does nothing when the pinned version is already there.
#
# The version is pinned (v2.12.0, the current v2 release as of writing; the module proxy's
# `go list -m -versions` lists only some tags, `go list -m github.com/Shopify/toxiproxy/v2@latest`
# is not reliable either). Override with TOXIPROXY_VERSION=vX.Y.Z.
set -euo pipefail

cd "$(dirname "$0")/.."
repo=$(pwd)
version=${TOXIPROXY_VERSION:-v2.12.0}
tools="$repo/.tools"
server="$tools/toxiproxy-server"
stamp="$tools/toxiproxy-server.version"

if [ -x "$server" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$version" ]; then
    echo "install-toxiproxy: reusing $server ($version)"
    exit 0
fi
if ! command -v go >/dev/null; then
    echo "install-toxiproxy: Go is needed to build toxiproxy (https://go.dev/dl/)" >&2
    exit 1
fi
mkdir -p "$tools"
echo "install-toxiproxy: go install github.com/Shopify/toxiproxy/v2/cmd/server@$version"
GOBIN="$tools" go install "github.com/Shopify/toxiproxy/v2/cmd/server@$version"
mv -f "$tools/server" "$server"
echo "$version" > "$stamp"
echo "install-toxiproxy: installed $server ($version)"
