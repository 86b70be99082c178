#!/usr/bin/env bash
# Installs the Caddy web server (github.com/caddyserver/caddy/v2), whose reverse_proxy carries
# WebSockets over HTTP/3 (RFC 9220: extended CONNECT on QUIC streams) to HTTP/1.1 backends, for
# the HTTP/3 tests (crates/wsbench/tests/engine/h3_peers.rs) and the fleet member
# servers/caddy-h3. The binary goes to <repo>/.tools/caddy, built from source by
# scripts/install-go-tool.sh (needs Go and the Go module proxy; minutes on 2 cores).
# Idempotent: does nothing when the pinned version is already there.
#
# The version is pinned (v2.11.9, served by the module proxy when this was written; 2.11 is the
# first release proxying HTTP/3 WebSockets). Override with CADDY_VERSION=vX.Y.Z.
set -euo pipefail

cd "$(dirname "$0")/.."
exec scripts/install-go-tool.sh caddy github.com/caddyserver/caddy/v2/cmd/caddy "${CADDY_VERSION:-v2.11.9}"
