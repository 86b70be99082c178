//! The session's side of the MessagePack hub protocol: the handshake's answer (JSON, ended
//! by the record separator, in a text or binary message) and then binary messages of
//! length-prefixed MessagePack arrays, read as the JSON protocol's messages are: a
//! completion's result as the echo's reply (a string's or binary's bytes), a group's message
//! and a stream item as deliveries turned into JSON text (so that wsbench's marker and
//! `--message-id` read them as they read the JSON protocol's).

use wsbench_appproto::signalr::RECORD_SEPARATOR;
use wsbench_appproto::signalr::msgpack::{self as pack, Argument, PackMessage};

use super::{Phase, Raw, STREAM_ID, SignalRSession, Which};
use crate::protocol::{Incoming, Outbox, Sink};

impl SignalRSession {
    /// Invokes `method` with `arguments`, wanting the completion `id` when given.
    pub(super) fn invoke_packed(
        &mut self,
        id: Option<&str>,
        method: Which,
        arguments: &[Argument<'_>],
        out: &mut dyn Outbox,
    ) {
        self.encoding.clear();
        let target = method.of(&self.methods);
        pack::encode_invocation(&mut self.encoding, &mut self.scratch, 1, id, target, arguments);
        self.send(out);
    }

    /// A whole message from the server.
    pub(super) fn receive_packed(&mut self, message: &[u8], binary: bool, sink: &mut dyn Sink) {
        let mut rest = message;
        if self.phase == Phase::Handshaking {
            let Some(end) = rest.iter().position(|&b| b == RECORD_SEPARATOR) else {
                let why = "the handshake's answer without its record separator (0x1E)";
                return self.malformed(why, message, sink);
            };
            self.on_handshake(&rest[..end], sink);
            rest = &rest[end + 1..];
            if rest.is_empty() || self.phase != Phase::Ready {
                return;
            }
        }
        if !binary {
            let why =
                "a text message (the MessagePack hub protocol is binary; the official clients refuse it)";
            return self.malformed(why, message, sink);
        }
        for frame in pack::frames(rest) {
            if self.phase == Phase::Over {
                break;
            }
            match frame {
                Ok(frame) => self.on_frame(frame, sink),
                Err(error) => self.malformed(&error.to_string(), message, sink),
            }
        }
    }

    fn on_frame(&mut self, frame: &[u8], sink: &mut dyn Sink) {
        match pack::decode(frame) {
            Err(error) => self.malformed(&error.to_string(), frame, sink),
            Ok(PackMessage::Completion { invocation_id, result, error }) => {
                self.on_completion(invocation_id, result.map(Raw::Pack), error, sink)
            }
            Ok(PackMessage::Invocation { target, arguments }) if self.delivers(target) => {
                self.deliver(arguments, sink)
            }
            Ok(PackMessage::StreamItem { invocation_id, item })
                if self.streaming && invocation_id == STREAM_ID =>
            {
                self.deliver(item, sink)
            }
            Ok(PackMessage::Close { error, allow_reconnect }) => self.on_close(error, allow_reconnect, sink),
            Ok(_) => sink.incoming(Incoming::Other),
        }
    }

    /// A delivery of `value` (raw MessagePack), as its JSON text.
    fn deliver(&mut self, value: &[u8], sink: &mut dyn Sink) {
        self.decoded.clear();
        match pack::to_json(value, &mut self.decoded) {
            Ok(()) => sink.incoming(Incoming::Delivery { topic: "", payload: &self.decoded }),
            Err(error) => self.malformed(&error.to_string(), value, sink),
        }
    }
}
