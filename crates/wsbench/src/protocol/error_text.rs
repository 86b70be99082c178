//! How a session says an error: its cause and detail written into two buffers the session
//! keeps (no allocation per error once they have grown) and handed to the sink as one
//! [`Incoming::Error`]; and a message that is not the protocol's, named by why and the start
//! of what came. The session decides what the error means for the connection (a fatal one
//! ends it); this only writes it.

use std::fmt::{Arguments, Write as _};

use super::{Incoming, Sink};

/// How much of a message that is not the protocol's an error's detail quotes.
pub const QUOTED: usize = 120;

/// The buffers of a session's errors.
#[derive(Debug, Default)]
pub struct ErrorText {
    cause: String,
    detail: String,
}

impl ErrorText {
    /// An error counted by `cause`, its detail written by `detail`; `seq`: the request it
    /// answers; `fatal`: the connection cannot go on.
    pub fn report(
        &mut self,
        sink: &mut dyn Sink,
        cause: Arguments<'_>,
        seq: Option<u64>,
        fatal: bool,
        detail: impl FnOnce(&mut String),
    ) {
        self.cause.clear();
        let _ = self.cause.write_fmt(cause);
        self.detail.clear();
        detail(&mut self.detail);
        sink.incoming(Incoming::Error { cause: &self.cause, detail: &self.detail, seq, fatal });
    }

    /// [`ErrorText::report`] for a session whose state `phase` becomes `over` when the error
    /// is fatal (the session reads and sends nothing more).
    pub fn report_in<P>(
        &mut self,
        phase: &mut P,
        over: P,
        sink: &mut dyn Sink,
        cause: Arguments<'_>,
        fatal: bool,
        detail: impl FnOnce(&mut String),
    ) {
        if fatal {
            *phase = over;
        }
        self.report(sink, cause, None, fatal, detail);
    }

    /// `message` is not the protocol's: counted by `cause`, with `why` and the start of it.
    pub fn malformed(&mut self, sink: &mut dyn Sink, cause: &str, why: &str, message: &[u8], fatal: bool) {
        self.report(sink, format_args!("{cause}"), None, fatal, |detail| {
            let quoted = String::from_utf8_lossy(&message[..message.len().min(QUOTED)]);
            let _ = write!(detail, "{why}: {quoted:?}");
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::tests::Heard;

    #[test]
    fn an_error_is_its_cause_and_detail_and_a_malformed_message_is_quoted_by_its_start() {
        let mut text = ErrorText::default();
        let mut heard = Heard::default();
        text.report(&mut heard, format_args!("x_error_{}", 7), Some(3), false, |d| d.push_str("said"));
        let long = vec![b'a'; 200];
        text.malformed(&mut heard, "x_malformed", "not JSON", &long, true);
        assert_eq!(heard.errors[0], ("x_error_7".into(), "said".into(), Some(3), false));
        let quoted = format!("not JSON: \"{}\"", "a".repeat(QUOTED));
        assert_eq!(heard.errors[1], ("x_malformed".into(), quoted, None, true));
    }
}
