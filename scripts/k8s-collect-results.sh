#!/usr/bin/env bash
# Copies the shard result files of a finished Kubernetes run (deploy/k8s/) into a local
# folder, ready for `wsbench merge`. Two sources, as deploy/k8s/README.md explains:
#   --from logs  (default) each shard pod prints its result between marker lines at the
#                end of its log; works without a ReadWriteMany volume.
#   --from pvc   starts deploy/k8s/results-reader.yaml on the results volume, `kubectl cp`s
#                the files, and deletes the helper pod again.
# Exits non-zero, naming them, when some shards' results are missing (the others are kept).
#
#   scripts/k8s-collect-results.sh [--from logs|pvc] [--namespace NS] [--job NAME] OUT_DIR
set -euo pipefail

from=logs
namespace=""
job=wsbench-shards
reader_manifest="$(cd "$(dirname "$0")/.." && pwd)/deploy/k8s/results-reader.yaml"
reader_pod=wsbench-results-reader
usage() { echo "usage: $0 [--from logs|pvc] [--namespace NS] [--job NAME] OUT_DIR" >&2; exit 2; }

while [ $# -gt 0 ]; do
    case "$1" in
        --from) from="${2:?}"; shift 2 ;;
        --namespace|-n) namespace="${2:?}"; shift 2 ;;
        --job) job="${2:?}"; shift 2 ;;
        -h|--help) usage ;;
        -*) usage ;;
        *) break ;;
    esac
done
[ $# -eq 1 ] || usage
out_dir="$1"
case "$from" in logs|pvc) ;; *) usage ;; esac

kc() {
    if [ -n "$namespace" ]; then kubectl --namespace "$namespace" "$@"; else kubectl "$@"; fi
}

completions="$(kc get job "$job" -o 'jsonpath={.spec.completions}')"
case "$completions" in
    ''|*[!0-9]*) echo "k8s-collect-results: cannot read .spec.completions of job/$job" >&2; exit 1 ;;
esac
mkdir -p "$out_dir"
missing=()

collect_from_logs() {
    # pod name and completion index of every pod of the Job (index from the annotation,
    # which every Kubernetes version with Indexed Jobs sets).
    local pods
    pods="$(kc get pods -l "job-name=$job" -o \
        'jsonpath={range .items[*]}{.metadata.name}{" "}{.metadata.annotations.batch\.kubernetes\.io/job-completion-index}{"\n"}{end}')"
    local i pod file
    for ((i = 0; i < completions; i++)); do
        file="$out_dir/shard-$i.json"
        rm -f "$file"
        pod="$(awk -v i="$i" '$2 == i { print $1 }' <<<"$pods" | tail -n 1)"
        if [ -z "$pod" ]; then
            missing+=("$i (no pod)")
            continue
        fi
        kc logs "pod/$pod" \
            | sed -n "/^----- BEGIN wsbench result shard-$i.json -----\$/,/^----- END wsbench result shard-$i.json -----\$/p" \
            | sed '1d;$d' >"$file.part" || true
        if [ -s "$file.part" ]; then
            mv "$file.part" "$file"
        else
            rm -f "$file.part"
            missing+=("$i (no result in the log of $pod)")
        fi
    done
}

collect_from_pvc() {
    kc apply -f "$reader_manifest" >/dev/null
    trap 'kc delete pod "$reader_pod" --wait=false >/dev/null 2>&1 || true' EXIT
    kc wait --for=condition=Ready "pod/$reader_pod" --timeout=180s >/dev/null
    local i file source
    for ((i = 0; i < completions; i++)); do
        file="$out_dir/shard-$i.json"
        rm -f "$file"
        source="$reader_pod:/results/shard-$i.json"
        if ! kc cp "$source" "$file" >/dev/null 2>&1 || [ ! -s "$file" ]; then
            rm -f "$file"
            missing+=("$i (not on the volume)")
        fi
    done
}

"collect_from_$from"
found=$((completions - ${#missing[@]}))
echo "k8s-collect-results: $found of $completions shard results in $out_dir (from $from)"
if [ ${#missing[@]} -gt 0 ]; then
    printf 'k8s-collect-results: missing shard %s\n' "${missing[@]}" >&2
    exit 1
fi
echo "next: wsbench merge $out_dir/shard-*.json -o merged.json && wsbench report merged.json"
