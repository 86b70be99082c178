#!/bin/sh
# Starts Yaws in the foreground (no daemon, no Debian service) on 127.0.0.1:PORT, with a config
# made from yaws.conf.in in run/PORT/ and HOME pointed there (Yaws keeps its control files
# under $HOME). One scheduler thread (+S 1:1), like the seeds' single-threaded servers.
# SIGTERM stops it: the VM shuts down cleanly, and -shutdown_time kills what is left after 1 s.
set -eu
port=${1:?usage: start.sh PORT}
here=$(cd "$(dirname "$0")" && pwd)
run="$here/run/$port"
rm -rf "$run"
mkdir -p "$run/logs" "$run/www" "$run/home"
sed -e "s|@PORT@|$port|g" -e "s|@DIR@|$here|g" -e "s|@RUN@|$run|g" "$here/yaws.conf.in" > "$run/yaws.conf"
HOME="$run/home" exec erl -noshell -noinput +K true +S 1:1 -shutdown_time 1000 -pa /usr/lib/yaws/ebin \
    -run yaws -conf "$run/yaws.conf" -yaws id "wsbench_$port"
