#!/usr/bin/env bash
# Builds the wsbench container image, localhost/wsbench:VERSION, without any container
# registry: the image is FROM scratch and holds only the release binary, the shared
# libraries `ldd` says it loads (copied from this machine, so they match the binary), an
# nsswitch.conf (names resolve through /etc/hosts, then DNS) and passwd/group lines for the
# non-root user 10001 it runs as. No shell, no package manager: the entrypoint is wsbench
# itself, and it runs with a read-only root filesystem (results go to a mounted volume).
#
#   deploy/image/build.sh [--binary PATH] [--tag NAME:TAG] [--smoke]
#
#   --binary PATH   use this wsbench binary (default: `cargo build --release --locked`,
#                   honouring CARGO_TARGET_DIR)
#   --tag NAME:TAG  the image's name (default: localhost/wsbench:VERSION, VERSION from
#                   `wsbench --version`)
#   --smoke         then run the image: `wsbench --version`, and a 3 s echo run against
#                   the built-in server inside the container, read-only root, as the pods run
#
# Needs podman (Debian: apt-get install podman buildah runc). The build runs no container,
# so it needs no OCI runtime; the smoke run uses runc with explicit open-file and process
# limits (see deploy/k8s/README.md for why: crun and podman's default limits fail on
# machines whose hard open-file limit is low, such as this project's CI machines).
set -euo pipefail

cd "$(dirname "$0")/../.."
binary=""
tag=""
smoke=false
usage() { echo "usage: $0 [--binary PATH] [--tag NAME:TAG] [--smoke]" >&2; exit 2; }
while [ $# -gt 0 ]; do
    case "$1" in
        --binary) binary="${2:?--binary needs a path}"; shift 2 ;;
        --tag) tag="${2:?--tag needs NAME:TAG}"; shift 2 ;;
        --smoke) smoke=true; shift ;;
        -h|--help) usage ;;
        *) usage ;;
    esac
done

if ! command -v podman >/dev/null; then
    echo "build.sh: podman is not installed: apt-get install podman buildah runc" >&2
    exit 1
fi
if [ -z "$binary" ]; then
    echo "build.sh: cargo build --release --locked -p wsbench --bin wsbench"
    cargo build --release --locked -p wsbench --bin wsbench
    binary="${CARGO_TARGET_DIR:-target}/release/wsbench"
fi
if [ ! -x "$binary" ]; then
    echo "build.sh: $binary is not an executable wsbench binary" >&2
    exit 1
fi
version="$("$binary" --version | awk '{ print $2 }')"
tag="${tag:-localhost/wsbench:$version}"

context="$(mktemp -d)"
trap 'rm -rf "$context"' EXIT
root="$context/rootfs"
mkdir -p "$root/usr/local/bin" "$root/etc" "$root/tmp" "$root/results"
chmod 1777 "$root/tmp"
install -m 0755 "$binary" "$root/usr/local/bin/wsbench"

# Every library the dynamic loader resolves for the binary (and the loader itself), at the
# path it is looked up under: `ldd` prints `name => /path (addr)` or `/path (addr)`.
libraries="$(ldd "$binary" | awk '/=>/ { if ($3 ~ /^\//) print $3; next } $1 ~ /^\// { print $1 }')"
if [ -z "$libraries" ]; then
    echo "build.sh: ldd lists no libraries for $binary (a static binary needs none: fine)"
fi
for library in $libraries; do
    mkdir -p "$root$(dirname "$library")"
    cp -L "$library" "$root$library"
done

# glibc (2.34 and later) reads /etc/hosts and DNS without loading any NSS module.
cat >"$root/etc/nsswitch.conf" <<'NSS'
passwd: files
group:  files
hosts:  files dns
NSS
printf 'root:x:0:0:root:/:/nonexistent\nwsbench:x:10001:10001:wsbench:/tmp:/nonexistent\n' >"$root/etc/passwd"
printf 'root:x:0:\nwsbench:x:10001:\n' >"$root/etc/group"
chown 10001:10001 "$root/results"

cat >"$context/Containerfile" <<CONTAINERFILE
FROM scratch
COPY rootfs/ /
LABEL org.opencontainers.image.title="wsbench" \\
      org.opencontainers.image.version="$version" \\
      org.opencontainers.image.description="Reproducible WebSocket server benchmarks"
# A fixed numeric user, so Kubernetes' runAsNonRoot can verify it.
USER 10001:10001
WORKDIR /tmp
# The built-in server's default port.
EXPOSE 8080
ENTRYPOINT ["/usr/local/bin/wsbench"]
CMD ["--help"]
CONTAINERFILE

echo "build.sh: podman build -t $tag (FROM scratch: $(echo "$libraries" | wc -w) libraries beside wsbench)"
podman build --pull=never --network none --tag "$tag" --file "$context/Containerfile" "$context"
podman image inspect --format 'build.sh: {{.Id}} {{.Size}} bytes, user {{.Config.User}}, entrypoint {{.Config.Entrypoint}}' "$tag"

if $smoke; then
    # As a pod runs it: host network, read-only root, the non-root user, runc, and limits
    # the machine's hard limits allow.
    # --read-only-tmpfs=false: no writable /tmp either, as with Kubernetes'
    # readOnlyRootFilesystem.
    run=(podman run --rm --runtime runc --network host --read-only --read-only-tmpfs=false
        --ulimit nofile=20000:20000 --ulimit nproc=32768:32768 "$tag")
    echo "build.sh: smoke: ${run[*]} --version"
    "${run[@]}" --version
    echo "build.sh: smoke: ${run[*]} run --connections 50 --duration 3s --warmup 0s"
    output="$("${run[@]}" run --connections 50 --duration 3s --warmup 0s 2>&1)" || {
        echo "$output" >&2
        echo "build.sh: the smoke run in the image failed" >&2
        exit 1
    }
    echo "$output" | tail -n 25
    if ! grep -q "round trips/s" <<<"$output"; then
        echo "build.sh: the smoke run printed no round trips/s" >&2
        exit 1
    fi
fi
echo "build.sh: built $tag"
