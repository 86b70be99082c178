//! The frames a connection reads, after its upgrade: decoded (the codec does no I/O),
//! control frames answered (ping → pong) or passed on (pong), compressed messages inflated,
//! the server's close frame answered, a protocol violation failed with its close code; and
//! the one place data frames become messages: whole (reassembled from their fragments up to
//! a limit) for the connection's protocol session to read (`worker/session.rs`) or for the
//! workload, or piece by piece for a workload that checks echoes as they stream. Every
//! message the server sends is counted here, once. A message no longer than `--max-message`
//! (the decoder's limit, for a streamed one too) and whose buffers fit the process's budget
//! for messages still arriving (`--max-message-memory`) is read; any other fails its
//! connection with 1009, counted as `protocol_error_1009_message_too_big`.

use std::time::Instant;

use wsbench_proto::{OpCode, ProtocolError, parse_close_payload};

use super::Worker;
use crate::engine::conn::State;
use crate::engine::workload::{Assembly, Message};
use crate::units::format::{bytes, group};

/// Longest message a protocol session reads; a longer one is an error of its own.
const SESSION_MESSAGE_MAX: usize = 16 << 20;

impl Worker {
    /// Handles the frames in `data[used..]` of connection `key`. Returns the bytes used, or
    /// `None` when the connection is over (the server closed it or broke the protocol; our
    /// close frame is already written) and the caller drops it.
    pub(super) fn frames(
        &mut self,
        key: usize,
        data: &mut [u8],
        mut used: usize,
        now: Instant,
    ) -> Option<usize> {
        loop {
            let conn = self.conns.get_mut(key)?;
            let chunk = match conn.decoder.decode(&mut data[used..]) {
                Ok(Some(chunk)) => chunk,
                Ok(None) => return Some(used),
                Err(error) => return self.fail(key, &error),
            };
            let payload = used + chunk.payload.start..used + chunk.payload.end;
            used += chunk.consumed;
            match chunk.opcode {
                OpCode::Text | OpCode::Binary if chunk.compressed => {
                    let binary = chunk.opcode == OpCode::Binary;
                    let piece = (chunk.first, chunk.last);
                    if let Err(error) = self.on_compressed(key, binary, piece, &data[payload], now) {
                        return self.fail(key, &error);
                    }
                }
                OpCode::Text | OpCode::Binary => {
                    let binary = chunk.opcode == OpCode::Binary;
                    if let Err(error) =
                        self.on_data(key, binary, (chunk.first, chunk.last), &data[payload], now)
                    {
                        return self.fail(key, &error);
                    }
                }
                OpCode::Ping => conn.write_control(OpCode::Pong, &data[payload]),
                OpCode::Pong => {
                    // A pong answers a ping the load sent: it counts with the messages.
                    self.rec.metrics.counters.messages_received += 1;
                    let pong = &data[payload];
                    self.hook(key, |workload, cx, conn| workload.on_pong(cx, conn, pong, now));
                }
                OpCode::Close => {
                    self.on_server_close(key, &data[payload]);
                    return None;
                }
                OpCode::Continuation => {}
            }
        }
    }

    /// The server broke the protocol (or sent a message too big, or one that does not
    /// inflate): counted by cause, closed with the error's code; the connection is over, and
    /// what its message held goes back to the budget now.
    fn fail(&mut self, key: usize, error: &ProtocolError) -> Option<usize> {
        let conn = self.conns.get_mut(key)?;
        conn.message = Vec::new();
        conn.budget.release();
        let counters = &mut self.rec.metrics.counters;
        counters.count_framing_error(&framing_cause(error), &framing_detail(error));
        super::ending::count_unanswered(counters, self.workload.as_mut(), conn);
        conn.write_control(OpCode::Close, &error.close_code().to_be_bytes());
        let _ = conn.flush(None);
        None
    }

    /// The server's close frame: the answer to a close we started, or its own close,
    /// answered with its code.
    fn on_server_close(&mut self, key: usize, payload: &[u8]) {
        let Some(conn) = self.conns.get_mut(key) else { return };
        let counters = &mut self.rec.metrics.counters;
        if conn.state == State::Closing {
            if conn.closing_by_load {
                counters.closes_answered += 1;
                self.workload.on_closed(conn, true);
            }
            return;
        }
        let (code, reason) = match parse_close_payload(payload) {
            Ok(Some((code, reason))) => (code, reason.to_owned()),
            _ => (0, String::new()),
        };
        *counters.closed_by_server.entry(code).or_default() += 1;
        if code == wsbench_proto::CloseCode::TRY_AGAIN_LATER {
            // 1013, Try Again Later: the next attempt waits (at least a second).
            let now = Instant::now();
            self.pacer.reconnects.not_before(
                conn.index,
                now + crate::engine::reconnects::TRY_AGAIN_LATER,
                now,
            );
        }
        if !reason.is_empty() {
            counters.close_reasons.entry(code).or_insert_with(|| reason.chars().take(200).collect());
        }
        if conn.state == State::Open {
            super::ending::count_unanswered(counters, self.workload.as_mut(), conn);
        }
        let opening = conn.state == State::Opening;
        let reply = if code == 0 { Vec::new() } else { code.to_be_bytes().to_vec() };
        conn.write_control(OpCode::Close, &reply);
        let _ = conn.flush(None);
        if opening {
            self.session_ended_early(key, Some((code, &reason)));
        }
    }

    /// A piece of a compressed message: inflated, and handed on whole on its last piece.
    /// The error fails the connection.
    fn on_compressed(
        &mut self,
        key: usize,
        binary: bool,
        (first, last): (bool, bool),
        payload: &[u8],
        now: Instant,
    ) -> Result<(), ProtocolError> {
        let Some(conn) = self.conns.get_mut(key) else { return Ok(()) };
        // The decoder lets RSV1 through only once the extension was agreed.
        let Some(compression) = conn.compression.as_mut() else {
            return Err(ProtocolError::ReservedBits(0b100));
        };
        if first {
            self.rec.metrics.counters.compressed_messages_received += 1;
        }
        compression.receive(payload, last, &mut conn.budget)?;
        if last {
            let message = std::mem::take(&mut compression.inflated);
            let handed = self.on_data(key, binary, (true, true), &message, now);
            if let Some(conn) = self.conns.get_mut(key) {
                conn.budget.release();
                if let Some(compression) = conn.compression.as_mut() {
                    compression.recycle(message);
                }
            }
            handed?;
        }
        Ok(())
    }

    /// A piece of a data message: passed on as the protocol session or the workload wants
    /// it, and counted once the message is whole. Messages that cross our close at the end
    /// of the run answer nothing the run asked, and are dropped. The error (reassembling it
    /// would pass the process's budget) fails the connection.
    fn on_data(
        &mut self,
        key: usize,
        binary: bool,
        (first, last): (bool, bool),
        payload: &[u8],
        now: Instant,
    ) -> Result<(), ProtocolError> {
        let Some(conn) = self.conns.get_mut(key) else { return Ok(()) };
        if conn.state == State::Closing && !conn.closing_by_load {
            return Ok(());
        }
        self.rec.metrics.counters.payload_bytes_received += payload.len() as u64;
        if last {
            self.rec.metrics.counters.messages_received += 1;
        }
        let to_session = !conn.passthrough;
        let max = match (to_session, self.assembly) {
            (true, _) => SESSION_MESSAGE_MAX,
            (false, Assembly::Pieces) => {
                let piece = Message::Piece { data: payload, first, last };
                self.hook(key, |workload, cx, conn| workload.on_message(cx, conn, piece, now));
                return Ok(());
            }
            (false, Assembly::Whole { max }) => max,
        };
        if first && last {
            let whole = if payload.len() > max { Message::TooLong } else { Message::Whole(payload) };
            self.on_whole(key, whole, binary, to_session, now);
            return Ok(());
        }
        if first {
            conn.message.clear();
            conn.message_too_long = false;
        }
        if !conn.message_too_long {
            if conn.message.len() + payload.len() > max {
                // Buffering it would let a hostile server grow the client without bound.
                conn.message_too_long = true;
                conn.message = Vec::new();
                conn.budget.release();
            } else {
                conn.budget.make_room(&mut conn.message, payload.len())?;
                conn.message.extend_from_slice(payload);
            }
        }
        if !last {
            return Ok(());
        }
        conn.budget.release();
        let message = std::mem::take(&mut conn.message);
        let whole = if conn.message_too_long { Message::TooLong } else { Message::Whole(&message) };
        self.on_whole(key, whole, binary, to_session, now);
        if let Some(conn) = self.conns.get_mut(key) {
            conn.message = message;
            conn.message.clear();
        }
        Ok(())
    }
}

impl Worker {
    /// A whole message (or one too long to keep): to the protocol session, or to the
    /// workload.
    fn on_whole(&mut self, key: usize, whole: Message<'_>, binary: bool, to_session: bool, now: Instant) {
        match (to_session, whole) {
            (true, Message::Whole(message)) => self.deliver_to_session(key, message, binary, now),
            (true, _) => self.rec.metrics.counters.count_protocol_error("message_too_long", ""),
            (false, whole) => self.hook(key, |workload, cx, conn| workload.on_message(cx, conn, whole, now)),
        }
    }
}

/// The one name of a violation of RFC 6455 by the server, as the report counts it: the close
/// code wsbench failed the connection with and the rule that broke, e.g.
/// `protocol_error_1002_masked_server_frame` or `protocol_error_1009_message_too_big`.
pub fn framing_cause(error: &ProtocolError) -> String {
    format!("protocol_error_{}_{}", error.close_code(), error.rule())
}

/// What broke, in one line; a message too big names the setting that bounds it.
fn framing_detail(error: &ProtocolError) -> String {
    match error {
        ProtocolError::OverBudget(over) => format!(
            "messages still arriving would hold more than --max-message-memory ({}) on all connections",
            bytes(over.limit)
        ),
        ProtocolError::MessageTooBig { size, limit } => {
            format!("a message of {} bytes is longer than --max-message ({})", group(*size), bytes(*limit))
        }
        ProtocolError::InflatedTooBig { limit } => {
            format!("a compressed message inflates past --max-message ({})", bytes(*limit))
        }
        _ => error.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_violation_names_its_close_code_and_rule() {
        let cases = [
            (ProtocolError::MaskedServerFrame, "protocol_error_1002_masked_server_frame"),
            (ProtocolError::ControlFrameTooLong(126), "protocol_error_1002_control_frame_too_long"),
            (ProtocolError::InvalidUtf8, "protocol_error_1007_invalid_utf8"),
            (ProtocolError::MessageTooBig { size: 2, limit: 1 }, "protocol_error_1009_message_too_big"),
            (ProtocolError::InflatedTooBig { limit: 1 }, "protocol_error_1009_message_too_big"),
            (
                ProtocolError::OverBudget(wsbench_proto::OverBudget { limit: 1 }),
                "protocol_error_1009_message_too_big",
            ),
            (ProtocolError::InvalidDeflateData, "protocol_error_1002_invalid_deflate_data"),
        ];
        for (error, cause) in cases {
            assert_eq!(framing_cause(&error), cause);
        }
    }
}
