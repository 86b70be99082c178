#!/usr/bin/env bash
# Checks the Kubernetes deployment in deploy/k8s/ without a cluster: the Go validator in
# deploy/k8s/validate/ decodes every manifest strictly into the official k8s.io/api types
# (a misspelt field is an error, as with `kubectl apply --validate=strict`) and checks the
# rules of a sharded run (Indexed Job, completions == parallelism == shard count, the
# completion index in the args, a Service that selects the target, …). Its tests also show
# that each such mistake is caught, and that results printed by the Job's pods come back
# through scripts/k8s-collect-results.sh. Needs Go (see go.mod); its modules come from the
# Go module proxy on the first run, then from the module cache.
set -euo pipefail

cd "$(dirname "$0")/../deploy/k8s/validate"
go=go
if ! command -v go >/dev/null 2>&1; then
    if [ -x /usr/local/go/bin/go ]; then
        go=/usr/local/go/bin/go
    else
        echo "validate-k8s.sh: Go is not installed (deploy/k8s/validate/go.mod says which version)" >&2
        exit 1
    fi
fi
# Never download a Go toolchain: go.mod's version must be the one installed or older.
export GOTOOLCHAIN=local

unformatted="$("$("$go" env GOROOT)/bin/gofmt" -l .)"
if [ -n "$unformatted" ]; then
    echo "validate-k8s.sh: not gofmt-formatted: $unformatted" >&2
    exit 1
fi
"$go" vet ./...
"$go" test -count=1 ./...

bin="$(mktemp -d)"
trap 'rm -rf "$bin"' EXIT
"$go" build -o "$bin/validate" .
(cd ../../.. && "$bin/validate" deploy/k8s)
# The validator must keep rejecting a manifest with a misspelt field.
if "$bin/validate" testdata/field-typo >"$bin/typo.out" 2>&1; then
    echo "validate-k8s.sh: the validator accepted testdata/field-typo, which misspells completionMode" >&2
    exit 1
fi
grep -q 'unknown field "spec.completionMod"' "$bin/typo.out" || {
    echo "validate-k8s.sh: testdata/field-typo was rejected for another reason:" >&2
    cat "$bin/typo.out" >&2
    exit 1
}
echo "validate-k8s.sh: testdata/field-typo rejected as it should be (unknown field \"spec.completionMod\")"
