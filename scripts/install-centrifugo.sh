#!/usr/bin/env bash
# Installs the Centrifugo server (github.com/centrifugal/centrifugo/v6), whose WebSocket
# endpoint /connection/websocket speaks Centrifugo's JSON client protocol, for the
# `--protocol centrifugo` tests (crates/wsbench/tests/protocols/centrifugo.rs) and the
# fleet member servers/centrifugo. The binary goes to <repo>/.tools/centrifugo, built from
# source by scripts/install-go-tool.sh (needs Go and the Go module proxy; several minutes on
# 2 cores). Idempotent: does nothing when the pinned version is already there.
#
# The version is pinned (v6.9.1, served by the module proxy when this was written).
# Override with CENTRIFUGO_VERSION=vX.Y.Z.
set -euo pipefail

cd "$(dirname "$0")/.."
exec scripts/install-go-tool.sh centrifugo github.com/centrifugal/centrifugo/v6 "${CENTRIFUGO_VERSION:-v6.9.1}"
