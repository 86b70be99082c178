#!/usr/bin/env bash
# Installs Toxiproxy (github.com/Shopify/toxiproxy/v2), the fault-injecting TCP proxy that
# the fault tests (crates/wsbench/tests/faults.rs) put between `wsbench run` and its server
# to reset, delay and cut connections. The server binary goes to <repo>/.tools/toxiproxy-server
# (built from source with `go install` by scripts/install-go-tool.sh; needs Go and the Go
# module proxy). Idempotent: does nothing when the pinned version is already there.
#
# The version is pinned (v2.12.0, the current v2 release as of writing; the module proxy's
# `go list -m -versions` lists only some tags, `go list -m github.com/Shopify/toxiproxy/v2@latest`
# is not reliable either). Override with TOXIPROXY_VERSION=vX.Y.Z.
set -euo pipefail

cd "$(dirname "$0")/.."
exec scripts/install-go-tool.sh toxiproxy-server github.com/Shopify/toxiproxy/v2/cmd/server \
    "${TOXIPROXY_VERSION:-v2.12.0}"
