#!/usr/bin/env bash
# Installs the NATS server (github.com/nats-io/nats-server/v2), whose WebSocket listener
# speaks MQTT 3.1.1 on the path /mqtt, for the appproto interop tests (started by
# crates/testpeers). The binary goes to <repo>/.tools/nats-server, built from source by
# scripts/install-go-tool.sh (needs Go and the Go module proxy; ~35 s on 2 cores).
# Idempotent: does nothing when the pinned version is already there.
#
# The version is pinned (v2.15.2, served by the module proxy when this was written).
# Override with NATS_SERVER_VERSION=vX.Y.Z.
set -euo pipefail

cd "$(dirname "$0")/.."
exec scripts/install-go-tool.sh nats-server github.com/nats-io/nats-server/v2 "${NATS_SERVER_VERSION:-v2.15.2}"
