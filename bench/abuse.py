#!/usr/bin/env python3
"""Abusive WebSocket clients, for bench/abuse-while-echo.sh: repeats the attacks of the abuse
suite (crates/wsbench/tests/abuse.rs) against one server for a given time, so that a benchmark
can measure an echo run beside them. Each attack runs in its own thread, once per cycle, and
counts how the server answered. An attack has landed when the server answered it at least
once as the suite expects (LANDED); the exit status is 1 unless every attack landed, so that
a benchmark never reports a run "under attack" that no attack reached. Standard library only.

usage: abuse.py HOST PORT SECONDS
"""
import os
import socket
import struct
import sys
import threading
import time

import wsraw

HOST, PORT, SECONDS = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
DEADLINE = time.monotonic() + SECONDS
COUNTS = {}
LOCK = threading.Lock()


def count(name, outcome):
    with LOCK:
        COUNTS.setdefault(name, {}).setdefault(outcome, 0)
        COUNTS[name][outcome] += 1


def connect(timeout=5.0):
    s = socket.create_connection((HOST, PORT), timeout=timeout)
    s.settimeout(timeout)
    return s


def upgrade(s):
    response = wsraw.upgrade(s, HOST)
    assert response.startswith(b"HTTP/1.1 101"), response[:40]


def frame(opcode, payload, fin=True, masked=True, length=None):
    head = wsraw.frame_header(fin, opcode, len(payload) if length is None else length, masked)
    if not masked:
        return head + payload
    key = os.urandom(4)
    return head + key + bytes(b ^ key[i % 4] for i, b in enumerate(payload))


def close_code(s):
    """The close code the server sent (None if it just closed)."""
    data = b""
    try:
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
            if len(data) >= 4 and data[0] & 0x0F == 8:
                break
    except OSError:
        pass
    if len(data) >= 4 and data[0] & 0x0F == 8:
        return struct.unpack(">H", data[2:4])[0]
    return None


def http_status(s):
    try:
        return s.recv(64).split(b" ")[1].decode()
    except (OSError, IndexError):
        return "closed"


def attack(name, fn):
    def loop():
        while time.monotonic() < DEADLINE:
            try:
                count(name, fn())
            except Exception as error:  # a refused or reset attack still counts
                count(name, type(error).__name__)
            time.sleep(1.0)
    return threading.Thread(target=loop, daemon=True)


def huge_header():
    s = connect()
    s.sendall(b"GET / HTTP/1.1\r\nX-Big: " + b"a" * 1_000_000 + b"\r\n\r\n")
    return http_status(s)


def many_headers():
    s = connect()
    s.sendall(b"GET / HTTP/1.1\r\n" + b"".join(b"X-%d: y\r\n" % i for i in range(10_000)) + b"\r\n")
    return http_status(s)


def huge_length():
    s = connect()
    upgrade(s)
    s.sendall(frame(2, b"", length=(1 << 63) - 1)[:14])
    return close_code(s)


def over_max_message():
    s = connect()
    upgrade(s)
    s.sendall(frame(2, b"x" * (1024 * 1024 + 1)))
    return close_code(s)


def tiny_fragments():
    s = connect()
    upgrade(s)
    parts = [frame(1 if i == 0 else 0, b"a", fin=False) for i in range(20_000)] + [frame(0, b"a")]
    s.sendall(b"".join(parts))
    s.recv(65536)
    s.sendall(frame(8, struct.pack(">H", 1000)))
    return "echoed"


def ping_flood():
    s = connect()
    upgrade(s)
    s.sendall(b"".join(frame(9, b"p") for _ in range(5_000)))
    s.sendall(frame(8, struct.pack(">H", 1000)))
    close_code(s)
    return "answered"


def unmasked():
    s = connect()
    upgrade(s)
    s.sendall(frame(1, b"hi", masked=False))
    return close_code(s)


def bad_utf8():
    s = connect()
    upgrade(s)
    s.sendall(frame(1, b"\xce\xba\xf4\x90\x80\x80"))
    return close_code(s)


def connection_flood():
    sockets = [connect() for _ in range(300)]
    time.sleep(0.5)
    for s in sockets:
        s.close()
    return "opened 300"


def half_open():
    s = connect()
    upgrade(s)
    s.shutdown(socket.SHUT_WR)
    return "closed" if s.recv(1) == b"" else "open"


def slowloris():
    s = connect(timeout=15.0)
    request = b"GET / HTTP/1.1\r\nHost: x\r\n"
    for byte in request:
        if time.monotonic() >= DEADLINE:
            return "unfinished"
        try:
            s.sendall(bytes([byte]))
        except OSError:
            return "cut off"
        time.sleep(0.5)
    return "not cut off"


ATTACKS = [huge_header, many_headers, huge_length, over_max_message, tiny_fragments, ping_flood,
           unmasked, bad_utf8, connection_flood, half_open, slowloris]
# The answers that show an attack reached the server and was handled as the suite expects.
LANDED = {
    "huge_header": {"431"},
    "many_headers": {"431", "400"},
    "huge_length": {1009},
    "over_max_message": {1009},
    "tiny_fragments": {"echoed"},
    "ping_flood": {"answered"},
    "unmasked": {1002},
    "bad_utf8": {1007},
    "connection_flood": {"opened 300"},
    "half_open": {"closed"},
    "slowloris": {"cut off"},
}
threads = [attack(fn.__name__, fn) for fn in ATTACKS]
for thread in threads:
    thread.start()
while time.monotonic() < DEADLINE:
    time.sleep(0.2)
with LOCK:
    counts = {name: dict(outcomes) for name, outcomes in COUNTS.items()}
for name in sorted(counts):
    print(f"{name}: " + ", ".join(f"{k}={v}" for k, v in sorted(counts[name].items(), key=str)))
missed = [fn.__name__ for fn in ATTACKS if not LANDED[fn.__name__] & set(counts.get(fn.__name__, {}))]
if missed:
    print(f"did not land: {', '.join(missed)}")
    sys.exit(1)
print(f"landed: all {len(ATTACKS)} attacks")
