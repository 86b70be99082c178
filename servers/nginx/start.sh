#!/bin/sh
# Starts nginx in the foreground (daemon off; no Debian service) on 127.0.0.1:PORT with a
# config made from nginx.conf.in in run/PORT/. The master runs as the caller; its one worker
# runs as nobody when that is root (www/ must stay world-readable). SIGTERM is nginx's fast
# shutdown.
set -eu
port=${1:?usage: start.sh PORT}
here=$(cd "$(dirname "$0")" && pwd)
run="$here/run/$port"
rm -rf "$run"
mkdir -p "$run"
sed -e "s|@PORT@|$port|g" -e "s|@DIR@|$here|g" -e "s|@RUN@|$run|g" "$here/nginx.conf.in" > "$run/nginx.conf"
exec /usr/sbin/nginx -p "$run" -c "$run/nginx.conf" -e "$run/error.log"
