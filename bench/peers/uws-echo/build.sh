#!/usr/bin/env bash
# bench/peers/uws-echo/build.sh: builds uWebSockets' EchoServer (EchoServer.cpp here, over the
# vendored uWebSockets headers and uSockets sources) into OUT (default bench/.build/uws-echo),
# the way upstream's own build does it (uSockets: gcc -O3 -flto, C11, LIBUS_NO_SSL; EchoServer:
# g++ -O3 -flto -march=native, zlib linked as upstream links it) except for C++20 (g++ 12 here)
# instead of upstream's -std=c++2b. Prints the binary's path. Fails with a one-line error when
# gcc, g++ or zlib's header is missing.
#
#   bench/peers/uws-echo/build.sh [OUT]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-$(cd "$here/../.." && pwd)/.build/uws-echo}
for tool in gcc g++; do
    command -v "$tool" >/dev/null || { echo "uws-echo/build.sh: $tool not found: install it (Debian: apt-get install build-essential)" >&2; exit 1; }
done
if ! echo '#include <zlib.h>' | gcc -E -x c - >/dev/null 2>&1; then
    echo "uws-echo/build.sh: zlib.h not found: install zlib's headers (Debian: apt-get install zlib1g-dev)" >&2
    exit 1
fi
mkdir -p "$out/obj"
us=$here/uSockets/src
for src in bsd.c context.c loop.c socket.c eventing/epoll_kqueue.c; do
    gcc -O3 -flto -std=c11 -DLIBUS_NO_SSL -I"$us" -c "$us/$src" -o "$out/obj/$(basename "$src" .c).o"
done
g++ -O3 -flto=auto -march=native -std=c++20 -DLIBUS_NO_SSL -I"$here/uWebSockets/src" -I"$us" \
    "$here/EchoServer.cpp" "$out"/obj/*.o -lz -o "$out/uws-echo.tmp"
mv "$out/uws-echo.tmp" "$out/uws-echo"
echo "$out/uws-echo"
