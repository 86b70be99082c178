//! `--batch N`: an echo request is one message holding N calls, and its reply the batch
//! reply holding their N responses, in any order (JSON-RPC 2.0 §6). Call `i` of request
//! `seq` has the id `seq × N + i + 1`, so a response names its request and its place in
//! the batch. The reply is the round trip once every call of the batch is answered; a
//! response with `error` is counted by its code, and the first one answers the request (no
//! round trip). A reply missing some calls is `jsonrpc_batch_incomplete`; a response whose
//! id is none of the batch's, or a second one for the same call, `jsonrpc_batch_unmatched`;
//! a single response where a batch reply was due (a server that takes no batches answers
//! `-32600` with id null) is counted by its code, or `jsonrpc_batch_unbatched`.

use std::fmt::Write as _;

use wsbench_appproto::jsonrpc::{self, Message};

use super::{JsonRpcSession, batch_elements, error_cause, malformed_batch, request_seq};
use crate::protocol::{Incoming, Sink};

/// The id of call `call` (from 0) of request `seq`, in batches of `size`.
pub(super) fn call_id(seq: u64, call: u64, size: u64) -> u64 {
    seq * size + call + 1
}

impl JsonRpcSession {
    /// A message answering a batch of calls.
    pub(super) fn receive_batch_reply(&mut self, message: &[u8], sink: &mut dyn Sink) {
        let Some(elements) = batch_elements(message) else { return self.receive_unbatched(message, sink) };
        self.answered.iter_mut().for_each(|answered| *answered = false);
        let (mut seq, mut answered, mut failed) = (None, 0, false);
        for element in elements {
            let Ok(element) = element else {
                malformed_batch(sink);
                break;
            };
            let (id, error) = match jsonrpc::decode(element.as_bytes()) {
                Ok(Message::Result { id, .. }) => (id, None),
                Ok(Message::Error { id, code, message, .. }) => (id, Some((code, message))),
                Ok(_) => continue,
                Err(error) => {
                    let detail = error.to_string();
                    let error = Incoming::Error {
                        cause: "jsonrpc_malformed",
                        detail: &detail,
                        seq: None,
                        fatal: false,
                    };
                    sink.incoming(error);
                    continue;
                }
            };
            let call = request_seq(&id).map(|call| (call / self.batch, (call % self.batch) as usize));
            let slot = match (call, seq) {
                (Some((of, slot)), None) => {
                    seq = Some(of);
                    Some(slot)
                }
                (Some((of, slot)), Some(first)) if of == first => Some(slot),
                _ => None,
            };
            let Some(slot) = slot.filter(|slot| !self.answered[*slot]) else {
                let detail = "a response in a batch reply whose id is none of the batch's calls, or a call answered twice";
                let error =
                    Incoming::Error { cause: "jsonrpc_batch_unmatched", detail, seq: None, fatal: false };
                sink.incoming(error);
                continue;
            };
            self.answered[slot] = true;
            answered += 1;
            if let Some((code, words)) = error {
                let cause = error_cause(&mut self.cause, code);
                // The first error answers the request; later ones are counted alone.
                let answers = if failed { None } else { seq };
                failed = true;
                sink.incoming(Incoming::Error { cause, detail: &words, seq: answers, fatal: false });
            }
        }
        let Some(seq) = seq else { return };
        if failed {
            return;
        }
        if answered == self.batch {
            return sink.incoming(Incoming::Reply { seq: Some(seq), payload: message });
        }
        self.detail.clear();
        let _ = write!(self.detail, "a batch reply answering {answered} of its {} calls", self.batch);
        let error = Incoming::Error {
            cause: "jsonrpc_batch_incomplete",
            detail: &self.detail,
            seq: Some(seq),
            fatal: false,
        };
        sink.incoming(error);
    }

    /// A single response where a batch reply was due: an error by its code (a server that
    /// takes no batches answers `-32600`), else `jsonrpc_batch_unbatched`; it answers the
    /// request its id names, if any.
    fn receive_unbatched(&mut self, message: &[u8], sink: &mut dyn Sink) {
        let (cause, detail, id) = match jsonrpc::decode(message) {
            Ok(Message::Error { id, code, message, .. }) => {
                (error_cause(&mut self.cause, code).to_owned(), message.into_owned(), Some(id))
            }
            Ok(Message::Result { id, .. }) => (
                "jsonrpc_batch_unbatched".to_owned(),
                "a single response where a batch reply (an array) was due: does the server take batches?"
                    .to_owned(),
                Some(id),
            ),
            Ok(_) => return sink.incoming(Incoming::Other),
            Err(error) => ("jsonrpc_malformed".to_owned(), error.to_string(), None),
        };
        let seq = id.as_ref().and_then(request_seq).map(|call| call / self.batch);
        sink.incoming(Incoming::Error { cause: &cause, detail: &detail, seq, fatal: false });
    }
}
