#!/usr/bin/env python3
"""Why this exists: `wsbench run` sends every message as one frame, so it cannot show what a
server pays for a fragmented one (reassembly, then the echo). This drives fragmented binary
messages at a WebSocket echo server over plain sockets and prints the echo rate and the
server process's CPU per MB echoed, for A/B runs of `wsbench serve` builds.

Each connection sends one message of MESSAGE bytes as FRAMES frames (masked, a zero mask key so
the payload is built once), reads its echo (MESSAGE bytes in one frame, counted, not checked),
then sends the next. It runs 1 s unmeasured, then SECONDS, and prints one line:
    messages=N mb_per_sec=M server_cpu_us_per_mb=C
C is the server's user + system CPU (from /proc/PID/stat, 10 ms ticks) over the window per MB
echoed. Python is the client: at 1 MiB and above its cost is mostly the kernel's copies, and
only the server's CPU is reported. Pin the server and this to different cores.

Usage: fragmented.py PORT SERVER_PID MESSAGE FRAMES SECONDS [CONNECTIONS]
  MESSAGE 1 to 1073741824 bytes, FRAMES 1 to 1024 (at most MESSAGE), SECONDS 1 to 3600,
  CONNECTIONS 1 to 64 (default 4). Exit 1 on a refused or closed connection, 2 on bad input.
"""
import os
import selectors
import socket
import sys
import time

import wsraw


def die(message, code=1):
    print(f"fragmented.py: {message}", file=sys.stderr)
    sys.exit(code)


def number(text, name, low, high):
    try:
        value = int(text)
    except ValueError:
        die(f"{name} must be a whole number, not {text!r}", 2)
    if not low <= value <= high:
        die(f"{name} must be from {low} to {high}, not {value}", 2)
    return value


def server_cpu_seconds(pid):
    try:
        fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    except OSError:
        die(f"no process {pid} (is the server still running?)")
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def fragmented_message(size, frames):
    payload = bytes(i % 251 for i in range(min(size, 1 << 20))) * (size // (1 << 20) + 1)
    step = -(-size // frames)
    wire = bytearray()
    for i, at in enumerate(range(0, size, step)):
        piece = payload[at:min(at + step, size)]
        last = at + step >= size
        wire += wsraw.frame_header(last, 0x2 if i == 0 else 0x0, len(piece)) + bytes(4) + piece
    return memoryview(bytes(wire))


def connect(port):
    try:
        sock = socket.create_connection(("127.0.0.1", port))
    except OSError as error:
        die(f"cannot connect to 127.0.0.1:{port}: {error}")
    try:
        response = wsraw.upgrade(sock, "127.0.0.1")
    except ConnectionError:
        die("the server closed the connection during the handshake")
    if not response.startswith(b"HTTP/1.1 101"):
        die(f"the server refused the upgrade: {response.splitlines()[0]!r}")
    sock.setblocking(False)
    return sock


def main(argv):
    if len(argv) not in (6, 7):
        die("usage: fragmented.py PORT SERVER_PID MESSAGE FRAMES SECONDS [CONNECTIONS]", 2)
    port = number(argv[1], "PORT", 1, 65535)
    pid = number(argv[2], "SERVER_PID", 1, 1 << 22)
    size = number(argv[3], "MESSAGE", 1, 1 << 30)
    frames = number(argv[4], "FRAMES", 1, min(1024, size))
    seconds = number(argv[5], "SECONDS", 1, 3600)
    connections = number(argv[6], "CONNECTIONS", 1, 64) if len(argv) == 7 else 4
    wire = fragmented_message(size, frames)
    echo_bytes = len(wsraw.frame_header(True, 0x2, size, masked=False)) + size
    scratch = bytearray(1 << 20)
    selector = selectors.DefaultSelector()
    progress = {}
    for _ in range(connections):
        sock = connect(port)
        progress[sock] = [0, 0]
        selector.register(sock, selectors.EVENT_READ | selectors.EVENT_WRITE)
    start = time.monotonic() + 1
    measuring, echoed, cpu_start = False, 0, 0.0
    while True:
        now = time.monotonic()
        if not measuring and now >= start:
            measuring, echoed, cpu_start, start = True, 0, server_cpu_seconds(pid), now
        if measuring and now - start >= seconds:
            break
        for key, events in selector.select(0.5):
            sock, sent_received = key.fileobj, progress[key.fileobj]
            if events & selectors.EVENT_WRITE and sent_received[0] < len(wire):
                try:
                    sent_received[0] += sock.send(wire[sent_received[0]:sent_received[0] + (4 << 20)])
                except BlockingIOError:
                    pass
                except OSError as error:
                    die(f"sending failed: {error}")
                if sent_received[0] == len(wire):
                    selector.modify(sock, selectors.EVENT_READ)
            if events & selectors.EVENT_READ:
                try:
                    got = sock.recv_into(scratch)
                except BlockingIOError:
                    continue
                except OSError as error:
                    die(f"receiving failed: {error}")
                if got == 0:
                    die("the server closed a connection mid-run")
                sent_received[1] += got
                if sent_received[1] > echo_bytes:
                    die(f"more bytes came back than one echo of {size} bytes")
                if sent_received[1] == echo_bytes:
                    echoed += 1
                    sent_received[0] = sent_received[1] = 0
                    selector.modify(sock, selectors.EVENT_READ | selectors.EVENT_WRITE)
    elapsed = time.monotonic() - start
    cpu = server_cpu_seconds(pid) - cpu_start
    mb = echoed * size / 1e6
    per_mb = f"{cpu * 1e6 / mb:.0f}" if mb else "-"
    print(f"messages={echoed} mb_per_sec={mb / elapsed:.0f} server_cpu_us_per_mb={per_mb}")


if __name__ == "__main__":
    main(sys.argv)
