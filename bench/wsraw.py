"""The two pieces of a WebSocket client that bench scripts speaking it over plain sockets share
(bench/abuse.py, bench/fragmented.py): the HTTP/1.1 upgrade and a frame's header. Standard
library only; a script run from bench/ imports it by name.
"""
import base64
import os
import struct


def upgrade(sock, host):
    """Sends an upgrade request on `sock` and returns the response's head (up to and including
    the blank line); raises ConnectionError if the server closes first. The caller checks the
    status."""
    key = base64.b64encode(os.urandom(16)).decode()
    sock.sendall(
        f"GET / HTTP/1.1\r\nHost: {host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n".encode()
    )
    response = b""
    while b"\r\n\r\n" not in response:
        chunk = sock.recv(4096)
        if not chunk:
            raise ConnectionError("closed during the handshake")
        response += chunk
    return response


def frame_header(fin, opcode, length, masked=True):
    """A frame's header up to its mask key (which the caller appends when `masked`), with the
    shortest length encoding."""
    head = bytes([(0x80 if fin else 0) | opcode])
    bit = 0x80 if masked else 0
    if length < 126:
        return head + bytes([bit | length])
    if length < 65536:
        return head + bytes([bit | 126]) + struct.pack(">H", length)
    return head + bytes([bit | 127]) + struct.pack(">Q", length)
