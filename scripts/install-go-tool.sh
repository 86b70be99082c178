#!/usr/bin/env bash
# Builds one pinned Go program into <repo>/.tools/NAME with `go install` (needs Go and the
# Go module proxy), for the test peers that are published only as Go modules.
# Idempotent: does nothing when NAME is there at VERSION (recorded in .tools/NAME.version).
#
# Usage: scripts/install-go-tool.sh NAME PACKAGE VERSION
#   e.g. scripts/install-go-tool.sh nats-server github.com/nats-io/nats-server/v2 v2.15.2
# The binary `go install` makes is named after the package's last path element (its
# major-version suffix left out); it is renamed to NAME.
set -euo pipefail

cd "$(dirname "$0")/.."
name=$1 package=$2 version=$3
tools="$(pwd)/.tools"
binary="$tools/$name"
stamp="$tools/$name.version"

if [ -x "$binary" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$version" ]; then
    echo "install-go-tool: reusing $binary ($version)"
    exit 0
fi
if ! command -v go >/dev/null; then
    echo "install-go-tool: Go is needed to build $name (https://go.dev/dl/)" >&2
    exit 1
fi
mkdir -p "$tools"
build=$(mktemp -d)
trap 'rm -rf "$build"' EXIT
echo "install-go-tool: go install $package@$version"
GOBIN="$build" go install "$package@$version"
# A module's major-version suffix (`/v2`) is not part of the binary's name.
built=$(basename "$package")
if [[ $built =~ ^v[0-9]+$ ]]; then built=$(basename "$(dirname "$package")"); fi
mv -f "$build/$built" "$binary"
echo "$version" > "$stamp"
echo "install-go-tool: installed $binary ($version)"
