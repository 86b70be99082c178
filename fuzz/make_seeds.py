#!/usr/bin/env python3
"""Writes the hand-made seed corpora under fuzz/corpus/<target>/.

The seeds are committed; this script only documents how they were made and regenerates
them after a change to a target's input format. Frames are built here independently of
wsbench-proto, so a seed does not inherit a bug of the encoder. Files named regression-*
are crash reproducers and are never touched by this script.

Usage: python3 fuzz/make_seeds.py
"""

import base64
import hashlib
import os
import struct

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")
KEY = bytes([0x37, 0xFA, 0x21, 0x3D])  # the RFC 6455 §5.7 example key
TEXT, BINARY, CONT, CLOSE, PING, PONG = 0x1, 0x2, 0x0, 0x8, 0x9, 0xA


def frame(opcode, payload=b"", fin=True, key=None, rsv=0, length=None, length_bytes=None):
    """One frame; `length` overrides the header's length, `length_bytes` forces 0/2/8."""
    n = len(payload) if length is None else length
    if length_bytes is None:
        length_bytes = 0 if n < 126 else 2 if n < 65536 else 8
    out = bytearray([(0x80 if fin else 0) | (rsv << 4) | opcode])
    mask_bit = 0x80 if key else 0
    if length_bytes == 0:
        out.append(mask_bit | n)
    elif length_bytes == 2:
        out.append(mask_bit | 126)
        out += struct.pack(">H", n)
    else:
        out.append(mask_bit | 127)
        out += struct.pack(">Q", n)
    if key:
        out += key
        payload = bytes(b ^ key[i % 4] for i, b in enumerate(payload))
    return bytes(out + payload)


def close(code, reason=b""):
    return struct.pack(">H", code) + reason


def frame_seeds(key):
    """(name, mode byte, wire) for a decoder that expects frames masked with `key` (or not)."""
    other = None if key else KEY  # frames of the wrong masking for this role
    f = lambda *a, **k: frame(*a, key=key, **k)  # noqa: E731
    return [
        ("text-hello", 0, f(TEXT, b"Hello")),
        ("text-hello-bytewise", 1, f(TEXT, b"Hello")),
        ("binary-empty", 0, f(BINARY)),
        ("binary-125", 2 | (3 << 2), f(BINARY, bytes(range(125)))),
        ("binary-126-len16", 3, f(BINARY, bytes(i % 251 for i in range(126)))),
        ("binary-300-pieces", 3 | (5 << 2), f(BINARY, bytes(i * 7 % 256 for i in range(300)))),
        ("binary-len64-short", 0, f(BINARY, b"sixty-four", length_bytes=8)),
        ("binary-len64-partial", 0, f(BINARY, b"only part of 65536", length=65536)),
        (
            "fragmented-text-with-ping",
            1,
            f(TEXT, "κό".encode(), fin=False) + f(PING, b"ping") + f(CONT, "σμε".encode()),
        ),
        (
            "fragmented-binary-3",
            2 | (1 << 2),
            f(BINARY, b"one", fin=False) + f(CONT, b"two", fin=False) + f(CONT, b"three"),
        ),
        ("text-split-mid-char", 1, f(TEXT, b"\xf0\x9d", fin=False) + f(CONT, b"\x84\x9e!")),
        ("ping-pong", 0, f(PING, b"are you there") + f(PONG)),
        ("close-normal", 0, f(CLOSE, close(1000, b"bye"))),
        ("close-empty", 1, f(CLOSE)),
        ("close-one-byte", 0, f(CLOSE, b"\x03")),
        ("close-code-1005", 0, f(CLOSE, close(1005))),
        ("close-bad-reason", 0, f(CLOSE, close(1000, b"\xff"))),
        ("text-invalid-utf8", 0, f(TEXT, b"\xce\xba\xf4\x90\x80\x80 more")),
        ("text-truncated-char", 0, f(TEXT, b"ab\xe2\x82")),
        ("wrong-masking", 0, frame(TEXT, b"hi", key=other)),
        ("reserved-bits", 0, f(TEXT, b"x", rsv=4)),
        ("reserved-opcode", 0, f(0x3, b"x")),
        ("control-too-long", 0, f(PING, bytes(126))),
        ("control-fragmented", 0, f(PING, b"p", fin=False)),
        ("continuation-alone", 0, f(CONT, b"x")),
        ("text-inside-fragmented", 0, f(TEXT, b"a", fin=False) + f(TEXT, b"b")),
        ("message-too-big-small-limit", 0x80, f(BINARY, bytes(100))),
        ("length-top-bit", 0, f(BINARY, length=1 << 63, length_bytes=8)),
        (
            "many-messages",
            2 | (2 << 2),
            b"".join(f(op, p) for op, p in [(TEXT, b"a"), (BINARY, b"\0\1"), (PING, b""), (TEXT, "€".encode())]),
        ),
        ("truncated-header", 0, f(BINARY, bytes(200))[:3]),
    ]


# The roundtrip target reads: flags (bit 0: masked, then 4 key bytes), then up to 8 items.
# Item: kind byte (%4: 0 control, 1 text, 2/3 binary).
#   control: op byte (%3: ping, pong, close); ping/pong: length byte, payload, seed byte;
#            close: choice byte (0 = empty, else code index), length byte (%124), reason, seed.
#   data: length byte (0-199 literal; 200-205: 125, 126, 127, 65535, 65536, 70000), payload,
#         seed byte, fragment count byte (%4), one cut byte per fragment, and after each
#         non-final fragment a byte whose bit 0 inserts a control item.
def data_item(kind, payload, length=None, cuts=(), interleave=()):
    out = bytes([kind, len(payload) if length is None else length]) + payload + b"\x07"
    out += bytes([len(cuts)]) + bytes(cuts)
    for extra in interleave:
        out += extra
    return out


def control_item(op, payload=b"", kind=b"\x00"):
    """A ping (op 0) or pong (op 1); `kind` is the item's kind byte, or the interleave byte
    (b"\x01") when it follows a fragment."""
    return kind + bytes([op, len(payload)]) + payload + b"\x00"


def close_item(choice, reason=b""):
    if choice == 0:
        return bytes([0, 2, 0])
    return bytes([0, 2, choice, len(reason)]) + reason + b"\x00"


ROUNDTRIP = [
    ("text-unmasked", b"\x00" + data_item(1, b"Hello")),
    ("text-masked", b"\x01" + KEY + data_item(1, b"Hello")),
    ("binary-empty", b"\x00" + data_item(2, b"")),
    ("binary-125", b"\x01abcd" + data_item(2, b"", length=200)),
    ("binary-126", b"\x00" + data_item(3, b"", length=201)),
    ("binary-65535", b"\x01wxyz" + data_item(2, b"", length=203)),
    ("binary-65536", b"\x00" + data_item(2, b"", length=204)),
    ("text-utf8-fragmented", b"\x01" + KEY + data_item(1, "κόσμε 𝄞".encode(), cuts=(40, 90, 200), interleave=(b"\x00", b"\x00"))),
    (
        "fragmented-with-ping",
        b"\x01" + KEY + data_item(2, bytes(range(30)), cuts=(128,), interleave=(control_item(0, b"ping", kind=b"\x01"),)),
    ),
    ("ping-pong", b"\x00" + control_item(0, b"ping") + control_item(1)),
    ("close-normal", b"\x01" + KEY + close_item(1, b"bye")),
    ("close-empty", b"\x00" + close_item(0)),
    ("mixed", b"\x03" + KEY + data_item(1, b"a") + control_item(1, b"p") + data_item(2, b"\x00\xff") + close_item(3, b"done")),
]

RFC_REQUEST = (
    b"GET /chat HTTP/1.1\r\nHost: server.example.com\r\nUpgrade: websocket\r\n"
    b"Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
    b"Origin: http://example.com\r\nSec-WebSocket-Protocol: chat, superchat\r\n"
    b"Sec-WebSocket-Version: 13\r\n\r\n"
)
MINIMAL = (
    b"GET / HTTP/1.1\r\nHost: h\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
    b"Sec-WebSocket-Key: AQIDBAUGBwgJCgsMDQ4PEA==\r\nSec-WebSocket-Version: 13\r\n\r\n"
)


def without(message, header):
    """`message` with every line that starts with `header` removed."""
    return b"\r\n".join(line for line in message.split(b"\r\n") if not line.startswith(header))


HANDSHAKE_REQUEST = [
    ("rfc-example", RFC_REQUEST),
    ("minimal", MINIMAL),
    (
        "lowercase-headers",
        b"GET / HTTP/1.1\r\nhost: h\r\nupgrade: WebSocket\r\nconnection: upgrade\r\n"
        b"sec-websocket-key: AQIDBAUGBwgJCgsMDQ4PEA==\r\nsec-websocket-version: 13\r\n\r\n",
    ),
    ("connection-list", MINIMAL.replace(b"Connection: Upgrade", b"Connection: keep-alive, Upgrade")),
    ("two-protocol-headers", MINIMAL.replace(b"\r\n\r\n", b"\r\nSec-WebSocket-Protocol: a\r\nSec-WebSocket-Protocol: b, c\r\n\r\n")),
    ("frames-after-header", RFC_REQUEST + frame(TEXT, b"Hello", key=KEY)),
    ("plain-http-get", b"GET /index.html HTTP/1.1\r\nHost: h\r\n\r\n"),
    ("plain-http-post", b"POST /x HTTP/1.1\r\nContent-Length: 0\r\n\r\n"),
    ("post-upgrade", MINIMAL.replace(b"GET", b"POST")),
    ("http10-upgrade", MINIMAL.replace(b"HTTP/1.1", b"HTTP/1.0")),
    ("missing-key", without(MINIMAL, b"Sec-WebSocket-Key")),
    ("key-noncanonical-base64", MINIMAL.replace(b"PEA==", b"PEC==")),
    ("short-key", MINIMAL.replace(b"AQIDBAUGBwgJCgsMDQ4PEA==", b"AQID")),
    ("version-8", MINIMAL.replace(b"Version: 13", b"Version: 8")),
    ("missing-version", without(MINIMAL, b"Sec-WebSocket-Version")),
    ("missing-connection", without(MINIMAL, b"Connection")),
    ("upgrade-h2c", MINIMAL.replace(b"Upgrade: websocket", b"Upgrade: h2c")),
    ("partial", RFC_REQUEST[:60]),
    ("bare-lf", MINIMAL.replace(b"\r\n", b"\n")),
    ("garbage", b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03"),
    ("bad-header-name", b"GET / HTTP/1.1\r\nBad Header: x\r\n\r\n"),
    ("too-many-headers", b"GET / HTTP/1.1\r\n" + b"".join(b"X-%d: v\r\n" % i for i in range(70)) + b"\r\n"),
    ("key-with-spaces", MINIMAL.replace(b"Key: ", b"Key:   ").replace(b"==\r\n", b"==  \r\n")),
]

ACCEPT = base64.b64encode(hashlib.sha1(b"dGhlIHNhbXBsZSBub25jZQ==258EAFA5-E914-47DA-95CA-C5AB0DC85B11").digest())
RFC_RESPONSE = (
    b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
    b"Sec-WebSocket-Accept: " + ACCEPT + b"\r\nSec-WebSocket-Protocol: chat\r\n\r\n"
)

HANDSHAKE_RESPONSE = [
    ("rfc-example", RFC_RESPONSE),
    ("no-protocol", without(RFC_RESPONSE, b"Sec-WebSocket-Protocol")),
    ("lowercase-headers", RFC_RESPONSE.replace(b"Upgrade: websocket", b"upgrade: WebSocket").replace(b"Sec-WebSocket-Accept", b"sec-websocket-accept")),
    ("frames-after-header", RFC_RESPONSE + frame(TEXT, b"Hello")),
    ("wrong-accept", RFC_RESPONSE.replace(ACCEPT, b"s3pPLMBiTxaQ9kYGzzhZRbK+xOp=")),
    ("missing-accept", without(RFC_RESPONSE, b"Sec-WebSocket-Accept")),
    ("missing-upgrade", without(RFC_RESPONSE, b"Upgrade")),
    ("forbidden", b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n"),
    ("ok-200", b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nhello"),
    ("http10-101", RFC_RESPONSE.replace(b"HTTP/1.1", b"HTTP/1.0")),
    ("partial", RFC_RESPONSE[:50]),
    ("bare-lf", RFC_RESPONSE.replace(b"\r\n", b"\n")),
    ("garbage", b"\x00\x01\x02HTTP"),
    ("accept-with-spaces", RFC_RESPONSE.replace(b"Accept: ", b"Accept:   ")),
]


def write(target, name, data):
    directory = os.path.join(ROOT, target)
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, "seed-" + name), "wb") as out:
        out.write(data)


def main():
    for target, key in [("frame_decode_server", KEY), ("frame_decode_client", None)]:
        for name, mode, wire in frame_seeds(key):
            write(target, name, bytes([mode]) + wire)
    for name, data in ROUNDTRIP:
        write("roundtrip", name, data)
    for name, data in HANDSHAKE_REQUEST:
        write("handshake_request", name, data)
    for name, data in HANDSHAKE_RESPONSE:
        write("handshake_response", name, data)


if __name__ == "__main__":
    main()
