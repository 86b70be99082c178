#!/usr/bin/env python3
"""Writes the hand-made seed corpora of the application-protocol fuzz targets under
fuzz/corpus/<target>/ (mqtt_decode, stomp_decode, socketio_decode, graphql_ws_decode,
jsonrpc_decode, centrifugo_decode, nats_decode, actioncable_decode, pusher_decode,
signalr_decode).

The seeds are committed; this script documents how they were made and regenerates them.
They are built here by hand from the specifications and from real servers' traffic, not
with wsbench-appproto's encoders, so a seed does not inherit an encoder's bug. Files named
regression-* are crash reproducers and are never touched by this script.

Usage: python3 fuzz/make_appproto_seeds.py
"""

import os

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")


def write(target, seeds):
    folder = os.path.join(ROOT, target)
    os.makedirs(folder, exist_ok=True)
    for name, data in seeds.items():
        with open(os.path.join(folder, "seed-" + name), "wb") as f:
            f.write(data if isinstance(data, bytes) else data.encode())


def mqtt_string(s):
    return len(s).to_bytes(2, "big") + s


def mqtt_packet(first, body):
    n, length = len(body), bytearray()
    while True:
        byte, n = n % 128, n // 128
        length.append(byte | (0x80 if n else 0))
        if not n:
            return bytes([first]) + bytes(length) + body


def mqtt_seeds():
    v3, v5 = b"\x00", b"\x01"  # control byte: version (bit 0), limit (bit 1), split (rest)
    publish = mqtt_packet(0x32, mqtt_string(b"wsbench/t1") + b"\x00\x07" + b'{"ts":1}')
    publish5 = mqtt_packet(0x30, mqtt_string(b"t") + b"\x05\x01\x01\x23\x00\x09" + b"x" * 200)
    return {
        "connack-311": v3 + b"\x20\x02\x01\x05",
        "connack-5-props": v5 + b"\x20\x06\x00\x87\x03\x21\x00\x0a",
        "suback-311": v3 + b"\x90\x04\x00\x07\x01\x80",
        "suback-5": v5 + b"\x90\x05\x00\x07\x00\x87\x00",
        "unsuback-5": v5 + b"\xb0\x04\x00\x08\x00\x11",
        "publish-qos1-split": b"\x30" + publish + b"\x40\x02\x00\x07\xd0\x00",
        "publish-5-alias-long": b"\x43" + publish5,
        "small-limit": b"\x02" + publish5,
        "puback-ping-disconnect-5": v5 + b"\x40\x03\x00\x09\x10\xd0\x00\xe0\x01\x8b\xe0\x00",
        "length-5-bytes": v3 + b"\x30\xff\xff\xff\xff\x01",
        "qos3": v3 + b"\x36\x03\x00\x01t",
        "unexpected-pubrec": v3 + b"\x50\x02\x00\x01",
    }


def stomp_seeds():
    message = (b"MESSAGE\nsubscription:s1\ndestination:/topic/t0\nmessage-id:T_s1@@1\n"
               b"content-length:8\n\n{\"ts\":1}\x00\n")
    return {
        "connected": b"\x00CONNECTED\nversion:1.2\nheart-beat:10000,10000\nserver:RabbitMQ/3.10.8\n\n\x00\n",
        "message-content-length": b"\x10" + message,
        "message-crlf-no-length": b"\x20MESSAGE\r\nsubscription:s\r\ndestination:/q/a\\cb\r\nmessage-id:1\r\n\r\nbody\x00\r\n",
        "heart-beats": b"\x06\n\r\n\n",
        "receipt-and-error": b"\x14RECEIPT\nreceipt-id:r1\n\n\x00ERROR\nmessage:Unknown destination\n\nInvalid destination\x00\n",
        "escapes": b"\x02MESSAGE\nk\\\\ey:v\\na\\rl\\cue\n\n\x00",
        "bad-escape": b"\x00MESSAGE\na:b\\t\n\n\x00",
        "small-limit": b"\x01" + message,
        "length-too-long": b"\x00MESSAGE\ncontent-length:99999999999\n\n",
        "nul-in-body": b"\x08SEND\ncontent-length:3\n\na\x00b\x00",
        "lone-cr": b"\x00\r",
    }


def socketio_seeds():
    return {
        "open": '0{"sid":"lv_VI97HAXpY6yYWAAAC","upgrades":[],"pingInterval":25000,"pingTimeout":20000,"maxPayload":1000000}',
        "ping": "2",
        "connect-reply": '40{"sid":"abc"}',
        "connect-error": '44/nope,{"message":"Invalid namespace"}',
        "event-ack-id": '42/chat,17["message",{"topic":"t0","n":[1,2]},"x"]',
        "ack": '4317[{"a":1}]',
        "binary-event": '451-["echo",{"_placeholder":true,"num":0}]',
        "binary-ack": '462-/admin,9[{"_placeholder":true,"num":1},{"_placeholder":true,"num":0}]',
        "escaped-name": '42["a\\"b\\u00e9",1]',
        "huge-ack-id": "4299999999999999999999999[]",
        "nested": '42["x",[[[[{"a":"]"}]]]],"\\\\"]',
    }


def graphql_ws_seeds():
    return {
        "ack": '{"type":"connection_ack"}',
        "ping-null": '{"type":"ping","payload":null}',
        "next": '{"id":"1","type":"next","payload":{"data":{"ticks":2}}}',
        "next-errors": '{"id":"1","type":"next","payload":{"data":null,"errors":[{"message":"boom"}]}}',
        "error": '{"id":"2","type":"error","payload":[{"message":"Cannot query field \\"nope\\" on type \\"Query\\".","locations":[{"line":1,"column":3}]}]}',
        "error-empty": '{"id":"2","type":"error","payload":[]}',
        "complete": '{"id":"1","type":"complete"}',
        "escaped-id": '{"id":"a\\"b","type":"complete"}',
        "array": '["connection_ack"]',
        "unknown-type": '{"type":"data","id":"1"}',
    }


def jsonrpc_seeds():
    return {
        "result": '{"jsonrpc":"2.0","result":{"ts":5},"id":1}',
        "result-null-string-id": '{"jsonrpc":"2.0","result":null,"id":"x"}',
        "error": '{"jsonrpc":"2.0","error":{"code":-32601,"message":"Method not found"},"id":1}',
        "error-data": '{"jsonrpc":"2.0","error":{"code":-32000,"message":"Error","data":"unknown topic"},"id":null}',
        "notification": '{"jsonrpc":"2.0","method":"tick","params":[1]}',
        "event": '{"notification":"t0","params":{"topic":"t0","payload":"x"}}',
        "subscribed": '{"jsonrpc":"2.0","result":{"t0":"ok","nope":"provided event invalid"},"id":1}',
        "batch": '[{"jsonrpc":"2.0","result":1,"id":1}]',
        "negative-id": '{"jsonrpc":"2.0","result":1,"id":-4.5}',
        "server-request": '{"jsonrpc":"2.0","method":"m","id":1}',
    }


def centrifugo_seeds():
    return {
        "ping": "{}",
        "connect": '{"id":1,"connect":{"client":"4c1c","version":"6.9.1","ping":25,"pong":true}}',
        "subscribe": '{"id":2,"subscribe":{}}',
        "error": '{"id":3,"error":{"code":103,"message":"permission denied"}}',
        "publication": '{"push":{"channel":"chat:room-1","pub":{"data":{"id":"0-1","ts":5},"offset":3}}}',
        "batch": '{"id":3,"publish":{}}\n{"push":{"channel":"e","pub":{"data":"x \\"q\\""}}}\n{}',
        "unsubscribe": '{"push":{"channel":"t1","unsubscribe":{"code":2000,"reason":"server unsubscribe"}}}',
        "disconnect": '{"push":{"disconnect":{"code":3503,"reason":"force disconnect"}}}',
        "join": '{"push":{"channel":"t1","join":{"info":{"user":"u","client":"c"}}}}',
        "no-data": '{"push":{"channel":"t1","pub":{}}}',
    }


def nats_seeds():
    # The first byte picks the payload limit (bit 0: 64 bytes) and the split (the rest).
    info = 'INFO {"server_id":"NDX","version":"2.15.2","proto":1,"headers":true,"max_payload":1048576}\r\n'
    return {
        "info": "\x00" + info,
        "info-ping": "\x10" + info + "PING\r\n",
        "msg": "\x04MSG t.1 3 11\r\nhello world\r\n",
        "msg-reply": "\x06MSG wsbench.echo.r 2 _INBOX.wsbench.r.0.42 5\r\nhello\r\n",
        "msg-double-space": "\x00MSG _INBOX.k 1  4\r\n{}{}\r\n",
        "hmsg-no-responders": "\x08HMSG _INBOX.a.7 1 16 16\r\nNATS/1.0 503\r\n\r\n\r\n",
        "hmsg-body": "\x0aHMSG s 2 r 12 15\r\nNATS/1.0\r\n\r\nabc\r\n",
        "err": "\x02-ERR 'Authorization Violation'\r\n",
        "err-subject": "\x00-ERR 'Permissions Violation for Publish to \"t.1\"'\r\n",
        "pong-ok": "\x00PONG\r\n+OK\r\nping\r\n",
        "too-large": "\x01MSG t 1 65\r\n" + "x" * 65 + "\r\n",
        "packed": "\x0c" + info + "PONG\r\nMSG t1 3 7\r\n{\"n\":0}\r\nMSG t1 3 7\r\n{\"n\":1}\r\nPING\r\n",
    }


def actioncable_seeds():
    # As Action Cable 6.1 (Debian's ruby-actioncable under puma) sent them.
    ident = '"{\\"channel\\":\\"BenchChannel\\",\\"room\\":\\"1\\"}"'
    return {
        "welcome": '{"type":"welcome"}',
        "ping": '{"type":"ping","message":1795887365}',
        "confirm": '{"identifier":' + ident + ',"type":"confirm_subscription"}',
        "reject": '{"identifier":"{\\"channel\\":\\"GuardedChannel\\"}","type":"reject_subscription"}',
        "message": '{"identifier":' + ident + ',"message":{"action":"echo","seq":7,"payload":"hi \\"x\\""}}',
        "broadcast": '{"identifier":' + ident + ',"message":{"action":"broadcast","payload":{"id":"0-1","ts":5}}}',
        "disconnect": '{"type":"disconnect","reason":"unauthorized","reconnect":false}',
        "unknown-type": '{"type":"confirm_subscription_v2"}',
        "no-identifier": '{"type":"confirm_subscription"}',
        "null-message": '{"identifier":"x","message":null}',
        "array": '["welcome"]',
    }


def pusher_seeds():
    # As sockudo 5.2 sent them.
    return {
        "established": '{"event":"pusher:connection_established","data":"{\\"socket_id\\":\\"341576051.1131946837\\",\\"activity_timeout\\":120}"}',
        "succeeded": '{"event":"pusher_internal:subscription_succeeded","channel":"private-t1","data":"{}"}',
        "presence": '{"event":"pusher_internal:subscription_succeeded","channel":"presence-t2","data":"{\\"presence\\":{\\"hash\\":{\\"u7\\":{}},\\"count\\":1,\\"ids\\":[\\"u7\\"]}}"}',
        "auth-error": '{"event":"pusher:error","data":{"message":"Authentication error: Channel requires authentication","code":4009}}',
        "client-event-refused": '{"event":"pusher:error","data":{"code":4301,"message":"Client event error: Client events can only be sent to private or presence channels"}}',
        "client-event": '{"event":"client-x","channel":"private-t1","data":{"id":"0-1","n":[1]}}',
        "api-event": '{"event":"tick","channel":"pub-1","data":"{\\"seq\\": 1}"}',
        "pong": '{"event":"pusher:pong"}',
        "ping": '{"event":"pusher:ping","data":{}}',
        "subscription-error": '{"event":"pusher:subscription_error","channel":"private-x","data":{"type":"AuthError","error":"no","status":401}}',
        "error-string": '{"event":"pusher:error","data":"{\\"code\\":4100,\\"message\\":\\"Over capacity\\"}"}',
        "no-event": '{"channel":"x"}',
    }


def signalr_seeds():
    # The hub protocol specification's JSON examples and what aiosignalr 0.1.1 sent, each
    # ended by the record separator; several records in one message.
    rs = "\x1e"
    return {
        "handshake-ok": "{}" + rs,
        "handshake-error": '{"error":"The protocol \'foo\' is not supported."}' + rs,
        "invocation": '{"type":1,"invocationId":"123","target":"Send","arguments":[42,"Test Message"]}' + rs,
        "invocation-headers": '{"type":1,"headers":{"Foo":"Bar"},"invocationId":"123","target":"Send","arguments":[42]}' + rs,
        "group-message": '{"type":1,"target":"message","arguments":[{"id":"0-1","n":[1]}]}' + rs,
        "stream-item": '{"type":2,"invocationId":"123","item":42}' + rs,
        "completion-result": '{"type":3,"invocationId":"7","result":"hi"}' + rs,
        "completion-error": '{"type":3,"invocationId":"3","error":"An unexpected error occurred invoking \'Fail\' on the server."}' + rs,
        "completion-both": '{"type":3,"invocationId":"123","result":42,"error":"It didn\'t work!"}' + rs,
        "ping-close": '{"type":6}' + rs + '{"type":7,"error":"Connection closed because of an error!","allowReconnect":true}' + rs,
        "ack": '{"type":8,"sequenceId":1394}' + rs,
        "unterminated": '{"type":6}',
    }


if __name__ == "__main__":
    write("mqtt_decode", mqtt_seeds())
    write("stomp_decode", stomp_seeds())
    write("socketio_decode", socketio_seeds())
    write("graphql_ws_decode", graphql_ws_seeds())
    write("jsonrpc_decode", jsonrpc_seeds())
    write("centrifugo_decode", centrifugo_seeds())
    write("nats_decode", nats_seeds())
    write("actioncable_decode", actioncable_seeds())
    write("pusher_decode", pusher_seeds())
    write("signalr_decode", signalr_seeds())
