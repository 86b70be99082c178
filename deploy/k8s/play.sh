#!/usr/bin/env bash
# Runs the Kubernetes deployment of deploy/k8s for real on one machine, without a cluster:
# the Indexed Job's pod template becomes N Pods (one per completion index, with the
# annotation the Job controller sets and the same `wsbench run --shard I/N --start-at …`
# arguments) plus the target Deployment's pod, rendered by `validate pods`
# (deploy/k8s/validate/pods.go) and run with `podman kube play`, host networking on
# loopback. The shards start before the target and wait for it (--wait-for-target). Then
# it collects the shard results from the results volume (a host folder) and from the pod
# logs (scripts/k8s-collect-results.sh through a kubectl stand-in that asks podman), checks
# that both agree, merges them with `wsbench merge` in the image, and checks that the
# merged result holds every connection of the run. Exits non-zero, saying why, otherwise.
#
#   deploy/k8s/play.sh [--image NAME:TAG] [--shards N] [--connections C] [--duration D]
#                      [--port P] [--keep DIR]
#
#   --image  the image deploy/image/build.sh built (default: localhost/wsbench:VERSION of
#            the newest localhost/wsbench image)
#   --keep   keep the rendered pods, the results and the logs in DIR (default: removed)
#
# Needs podman and runc (apt-get install podman buildah runc) and Go (for the renderer).
# Ulimits and the runtime come from a containers.conf named by CONTAINERS_CONF, since
# `podman kube play` has no flags for them (deploy/k8s/README.md says why runc).
set -euo pipefail

cd "$(dirname "$0")/../.."
repo="$(pwd)"
image=""
shards=2
connections=2000
duration=5s
port=28080
keep=""
usage() {
    echo "usage: $0 [--image NAME:TAG] [--shards N] [--connections C] [--duration D] [--port P] [--keep DIR]" >&2
    exit 2
}
while [ $# -gt 0 ]; do
    case "$1" in
        --image) image="${2:?}"; shift 2 ;;
        --shards) shards="${2:?}"; shift 2 ;;
        --connections) connections="${2:?}"; shift 2 ;;
        --duration) duration="${2:?}"; shift 2 ;;
        --port) port="${2:?}"; shift 2 ;;
        --keep) keep="${2:?}"; shift 2 ;;
        *) usage ;;
    esac
done
say() { echo "play.sh: $*"; }
fail() { echo "play.sh: $*" >&2; exit 1; }

command -v podman >/dev/null || fail "podman is not installed: apt-get install podman buildah runc"
command -v runc >/dev/null || fail "runc is not installed: apt-get install runc"
go=go
command -v go >/dev/null || go=/usr/local/go/bin/go
[ -x "$(command -v "$go")" ] || fail "Go is not installed (deploy/k8s/validate/go.mod says which version)"
if [ -z "$image" ]; then
    image="$(podman images --filter reference=localhost/wsbench --format '{{.Repository}}:{{.Tag}}' | head -n 1)"
    [ -n "$image" ] || fail "no localhost/wsbench image: run deploy/image/build.sh first"
fi
podman image exists "$image" || fail "no image $image: run deploy/image/build.sh first"
if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
    fail "127.0.0.1:$port is already taken: give another --port"
fi

work="$(mktemp -d)"
results="$work/results"
mkdir -p "$results" "$work/bin" "$work/from-logs"
# The pods run as the image's user 10001; hostPath volumes get no fsGroup in podman.
chown 10001:10001 "$results" 2>/dev/null || chmod 0777 "$results"
cleanup() {
    if [ -f "$work/pods.yaml" ]; then
        CONTAINERS_CONF="$work/containers.conf" podman kube down "$work/pods.yaml" >/dev/null 2>&1 || true
    fi
    if [ -n "$keep" ]; then
        mkdir -p "$keep" && cp -r "$work"/. "$keep"/ && say "kept the pods, results and logs in $keep"
    fi
    rm -rf "$work"
}
trap cleanup EXIT

# runc: crun cannot set the limits below here (no CAP_SYS_RESOURCE) nor run on hybrid
# cgroups. 20,000 open files is the machines' hard limit; nproc below it.
cat >"$work/containers.conf" <<'CONF'
[containers]
default_ulimits = ["nofile=20000:20000", "nproc=32768:32768"]
[engine]
runtime = "runc"
CONF
export CONTAINERS_CONF="$work/containers.conf"

say "building the pod renderer (deploy/k8s/validate)"
(cd deploy/k8s/validate && GOTOOLCHAIN=local "$go" build -o "$work/bin/validate" .)
# Lead time for podman to create the pods (about 0.5 s each here) before the common start.
start_at=$(( ($(date +%s) + 5 + shards) * 1000 ))
"$work/bin/validate" pods -dir deploy/k8s -shards "$shards" -connections "$connections" \
    -port "$port" -image "$image" -results "$results" -start-at "$start_at" \
    -- --duration "$duration" --warmup 1s >"$work/pods.yaml"
say "podman kube play: $shards shard pods, then the target (127.0.0.1:$port), START_AT $start_at"
started=$(date +%s)
podman kube play "$work/pods.yaml" >"$work/play.out" || { cat "$work/play.out" >&2; fail "podman kube play failed"; }

# Each shard container ends by itself; a shard that hangs is stopped after the deadline.
deadline=$(( 120 + 10 * shards ))
failed=0
for ((i = 0; i < shards; i++)); do
    container="wsbench-shards-$i-shard"
    status="$(timeout "$deadline" podman wait "$container" || echo timeout)"
    podman logs "$container" >"$work/shard-$i.log" 2>&1 || true
    if [ "$status" != 0 ]; then
        say "shard $i ended with status $status; its log:"
        tail -n 20 "$work/shard-$i.log" >&2
        failed=1
    fi
done
podman logs wsbench-target-server >"$work/target.log" 2>&1 || true
started_ns() { date -d "$(podman inspect --format '{{.State.StartedAt}}' "$1" | awk '{ print $1, $2 }')" +%s%N; }
say "shard 0 started $(( ($(started_ns wsbench-target-server) - $(started_ns wsbench-shards-0-shard)) / 1000000 )) ms before the target it waited for"
say "shards finished after $(( $(date +%s) - started )) s"
[ "$failed" = 0 ] || fail "a shard pod failed"

# The logs, as `kubectl logs` would give them: scripts/k8s-collect-results.sh reads them.
cat >"$work/bin/kubectl" <<KUBECTL
#!/usr/bin/env bash
# A stand-in for the three kubectl queries of scripts/k8s-collect-results.sh --from logs.
case "\$1 \$2" in
    "get job") printf '%s' "$shards" ;;
    "get pods") for ((i = 0; i < $shards; i++)); do echo "wsbench-shards-\$i \$i"; done ;;
    "logs "*) podman logs "\${2#pod/}-shard" 2>/dev/null ;;
    *) echo "kubectl stand-in: unexpected \$*" >&2; exit 1 ;;
esac
KUBECTL
chmod +x "$work/bin/kubectl"
PATH="$work/bin:$PATH" scripts/k8s-collect-results.sh --from logs "$work/from-logs" >/dev/null \
    || fail "the pod logs do not hold every shard's result"
files=()
for ((i = 0; i < shards; i++)); do
    [ -s "$results/shard-$i.json" ] || fail "shard $i wrote no $results/shard-$i.json"
    cmp -s "$results/shard-$i.json" "$work/from-logs/shard-$i.json" \
        || fail "shard $i: the result in its log differs from the one on the volume"
    files+=("/results/shard-$i.json")
done
say "collected $shards results from the volume and the same from the pod logs"

podman run --rm --network none --read-only --user 10001:10001 -v "$results:/results" \
    "$image" merge "${files[@]}" -o /results/merged.json >"$work/merge.out" \
    || { cat "$work/merge.out" >&2; fail "wsbench merge failed"; }
python3 - "$results/merged.json" "$connections" "$shards" <<'CHECK' || fail "the merged result is incomplete"
import json, sys
merged = json.load(open(sys.argv[1]))
want, shards = int(sys.argv[2]), int(sys.argv[3])
connections = merged["summary"]["connections"]
problems = []
if connections["attempted"] != want or connections["established"] != want:
    problems.append(f"connections {connections}, want {want} attempted and established")
if len(merged.get("shards", [])) != shards:
    problems.append(f"{len(merged.get('shards', []))} shards merged, want {shards}")
if merged["summary"]["measured_echoes"] <= 0:
    problems.append("no echoes measured")
for problem in problems:
    print("play.sh:", problem, file=sys.stderr)
print(f"play.sh: merged: {connections['established']} of {want} connections over {shards} shards, "
      f"{merged['summary']['echoes_per_sec']:.0f} round trips/s, run {merged.get('run_id')}")
sys.exit(1 if problems else 0)
CHECK
say "ok"
