//! One connection's side of Centrifugo's JSON protocol: the connect command and its
//! result, for echo the subscription to the connection's own channel, requests,
//! subscriptions and publishes as numbered commands, every reply matched to its command by
//! id, pushes read (publications, server-side unsubscribes, disconnects), the server's
//! pings answered and watched for. Nothing here allocates per message once the buffers have
//! grown, but a subscription's record (one per subscribed topic).

use std::collections::VecDeque;
use std::fmt::Write as _;
use std::time::{Duration, Instant};

use wsbench_appproto::centrifugo::{self, Reply};
use wsbench_appproto::json::{unescape_into, write_str};

use super::MAX_PING_DELAY;
use crate::protocol::error_text::ErrorText;
use crate::protocol::{Incoming, Outbox, Session, Sink, Use};

/// Commands awaiting their reply that a session remembers; beyond, the oldest is given up
/// (counted as `centrifugo_no_reply`). Centrifugo answers every command in order: this is a
/// bound against a server that does not, not a working size.
pub const MAX_PENDING: usize = 4096;

/// The name the connect command gives the client.
pub const CLIENT_NAME: &str = "wsbench";

/// Where the connection is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// `connect` sent, its result awaited.
    Connecting,
    /// Echo: the subscription to its own channel sent, its result awaited.
    Subscribing,
    Ready,
    /// Refused, broken or disconnected: nothing more is read or sent.
    Over,
}

/// What a command awaiting its reply was.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Pending {
    Connect,
    /// The echo connection's subscription to its own channel.
    EchoSubscribe,
    /// A subscription to the workload's topic (`tK`).
    Subscribe(String),
    /// A publish; the echo request it carries.
    Publish(Option<u64>),
}

#[derive(Debug)]
pub(super) struct CentrifugoSession {
    usage: Use,
    token: Option<String>,
    /// `--channel` around its `{topic}`.
    template: (String, String),
    /// Echo: the connection's own channel.
    echo_channel: String,
    phase: Phase,
    last_id: u32,
    /// Commands awaiting their reply, oldest first.
    pending: VecDeque<(u32, Pending)>,
    /// Commands forgotten unanswered since the last report (beyond [`MAX_PENDING`]).
    given_up: u64,
    /// The server wants its pings answered.
    pong: bool,
    /// How long the server may stay silent (its ping interval and [`MAX_PING_DELAY`]);
    /// `None` when it sends no pings.
    silence_allowed: Option<Duration>,
    /// When the server's silence becomes too long.
    ping_due: Option<Instant>,
    /// The command being written, a payload as JSON, a publication's data decoded, a
    /// channel's topic name (kept for their capacity), and the errors' words.
    encoding: Vec<u8>,
    data: Vec<u8>,
    decoded: Vec<u8>,
    channel: String,
    topic: String,
    words: ErrorText,
}

impl CentrifugoSession {
    pub(super) fn new(
        usage: Use,
        token: Option<String>,
        template: (String, String),
        echo_channel: String,
    ) -> CentrifugoSession {
        CentrifugoSession {
            usage,
            token,
            template,
            echo_channel,
            phase: Phase::Connecting,
            last_id: 0,
            pending: VecDeque::new(),
            given_up: 0,
            pong: false,
            silence_allowed: None,
            ping_due: None,
            encoding: Vec::new(),
            data: Vec::new(),
            decoded: Vec::new(),
            channel: String::new(),
            topic: String::new(),
            words: ErrorText::default(),
        }
    }

    /// The next command id (1 to 4,294,967,295, then around again: the server refuses 0),
    /// remembered as `pending` until its reply; the oldest beyond [`MAX_PENDING`] is given up.
    fn next_id(&mut self, pending: Pending) -> u32 {
        if self.pending.len() >= MAX_PENDING {
            self.pending.pop_front();
            self.given_up += 1;
        }
        self.last_id = self.last_id.checked_add(1).unwrap_or(1);
        self.pending.push_back((self.last_id, pending));
        self.last_id
    }

    /// The channel of the workload's topic `name` (`tK`) into `self.channel`.
    fn set_channel(&mut self, name: &str) {
        let number =
            name.strip_prefix('t').filter(|k| !k.is_empty() && k.bytes().all(|b| b.is_ascii_digit()));
        self.channel.clear();
        let (before, after) = &self.template;
        let _ = write!(self.channel, "{before}{}{after}", number.unwrap_or(name));
    }

    /// The workload's name (`tK`) of `channel` into `self.topic`; false when the channel is
    /// none of the template's.
    fn set_topic(&mut self, channel: &str) -> bool {
        let (before, after) = &self.template;
        let number = channel.strip_prefix(before.as_str()).and_then(|rest| rest.strip_suffix(after.as_str()));
        self.topic.clear();
        match number {
            Some(k) if !k.is_empty() && k.bytes().all(|b| b.is_ascii_digit()) => {
                self.topic.push('t');
                self.topic.push_str(k);
                true
            }
            _ => false,
        }
    }

    /// Sends the message `write` encodes.
    fn send(&mut self, out: &mut dyn Outbox, write: impl FnOnce(&mut Vec<u8>)) {
        self.encoding.clear();
        write(&mut self.encoding);
        out.text(&self.encoding);
    }

    /// Each command given up unanswered since the last report, an error.
    fn report_given_up(&mut self, sink: &mut dyn Sink) {
        for _ in 0..std::mem::take(&mut self.given_up) {
            let detail = "a command had no reply while 4096 more were sent";
            sink.incoming(Incoming::Error { cause: "centrifugo_no_reply", detail, seq: None, fatal: false });
        }
    }

    /// The pending command `id` answers, taken (looked for from the oldest: replies come in
    /// order).
    fn take(&mut self, id: u32) -> Option<Pending> {
        let at = self.pending.iter().position(|(awaiting, _)| *awaiting == id)?;
        self.pending.remove(at).map(|(_, pending)| pending)
    }

    fn on_line(&mut self, line: &[u8], now: Instant, sink: &mut dyn Sink) {
        let reply = match centrifugo::decode(line) {
            Ok(reply) => reply,
            Err(error) => return self.malformed(&error.to_string(), line, sink),
        };
        match reply {
            Reply::Ping => {
                if self.pong && self.phase != Phase::Connecting {
                    self.send(sink, centrifugo::encode_pong);
                }
                sink.incoming(Incoming::Other);
            }
            Reply::Connected { id, ping, pong, .. } => self.on_connected(id, ping, pong, now, sink),
            Reply::Done { id } => self.on_done(id, sink),
            Reply::Error { id, code, message } => self.on_error(id, code, &message, sink),
            Reply::Publication { channel, data } => self.on_publication(&channel, data, sink),
            Reply::Unsubscribed { channel, code, reason } => {
                let echo = self.usage == Use::Requests && *channel == *self.echo_channel;
                self.error(sink, format_args!("centrifugo_unsubscribed_{code}"), echo, None, |detail| {
                    let _ = write!(detail, "the server unsubscribed the client from {channel}: {reason}");
                });
            }
            Reply::Disconnect { code, reason } => {
                self.error(sink, format_args!("centrifugo_disconnect_{code}"), true, None, |detail| {
                    let _ = write!(detail, "the server disconnected the client: {reason}");
                });
            }
            Reply::OtherPush => sink.incoming(Incoming::Other),
        }
    }

    fn on_connected(&mut self, id: u32, ping: u32, pong: bool, now: Instant, sink: &mut dyn Sink) {
        if self.phase != Phase::Connecting || self.take(id) != Some(Pending::Connect) {
            return self.error(sink, format_args!("centrifugo_unexpected"), false, None, |detail| {
                let _ = write!(detail, "a connect result for command {id}, which was no connect");
            });
        }
        self.pong = pong;
        self.silence_allowed = (ping > 0).then(|| Duration::from_secs(u64::from(ping)) + MAX_PING_DELAY);
        self.ping_due = self.silence_allowed.map(|allowed| now + allowed);
        if self.usage == Use::Requests {
            self.phase = Phase::Subscribing;
            let id = self.next_id(Pending::EchoSubscribe);
            let channel = std::mem::take(&mut self.echo_channel);
            self.send(sink, |out| centrifugo::encode_subscribe(out, id, &channel));
            self.echo_channel = channel;
            return;
        }
        self.phase = Phase::Ready;
        sink.incoming(Incoming::Ready);
    }

    fn on_done(&mut self, id: u32, sink: &mut dyn Sink) {
        match self.take(id) {
            Some(Pending::EchoSubscribe) => {
                self.phase = Phase::Ready;
                sink.incoming(Incoming::Ready);
            }
            Some(Pending::Subscribe(topic)) => sink.incoming(Incoming::Subscribed { topic: &topic }),
            Some(Pending::Connect) => {
                self.error(sink, format_args!("centrifugo_unexpected"), true, None, |detail| {
                    let _ = write!(detail, "the reply to connect command {id} carried no connect result");
                })
            }
            Some(Pending::Publish(_)) | None => sink.incoming(Incoming::Other),
        }
    }

    fn on_error(&mut self, id: u32, code: u32, message: &str, sink: &mut dyn Sink) {
        let pending = self.take(id);
        let (what, fatal, seq) = match &pending {
            Some(Pending::Connect) => ("connect", true, None),
            Some(Pending::EchoSubscribe) => ("subscribe to the echo channel", true, None),
            Some(Pending::Subscribe(_)) => ("subscribe", false, None),
            Some(Pending::Publish(seq)) => ("publish", false, *seq),
            None => ("a command", false, None),
        };
        let channel = match &pending {
            Some(Pending::EchoSubscribe) => self.echo_channel.clone(),
            Some(Pending::Subscribe(topic)) => {
                self.set_channel(topic);
                self.channel.clone()
            }
            _ => String::new(),
        };
        self.error(sink, format_args!("centrifugo_error_{code}"), fatal, seq, |detail| {
            let _ = write!(detail, "{message} (code {code}, answering {what}");
            if !channel.is_empty() {
                let _ = write!(detail, " {channel}");
            }
            detail.push(')');
        });
    }

    fn on_publication(&mut self, channel: &str, data: &str, sink: &mut dyn Sink) {
        let known_topic = self.usage == Use::PubSub && self.set_topic(channel);
        match self.usage {
            Use::Requests if channel == self.echo_channel => {
                let payload = match unescape_into(data.as_bytes(), &mut self.decoded) {
                    true => &self.decoded[..],
                    false => data.as_bytes(),
                };
                sink.incoming(Incoming::Reply { seq: None, payload })
            }
            Use::PubSub if known_topic => {
                sink.incoming(Incoming::Delivery { topic: &self.topic, payload: data.as_bytes() })
            }
            Use::PubSub => sink.incoming(Incoming::Delivery { topic: channel, payload: data.as_bytes() }),
            _ => sink.incoming(Incoming::Other),
        }
    }

    /// A line that is no Centrifugo reply: counted with the start of what came; before the
    /// session is ready the server is no Centrifugo server and the connection cannot go on.
    fn malformed(&mut self, why: &str, line: &[u8], sink: &mut dyn Sink) {
        let fatal = self.phase != Phase::Ready;
        if fatal {
            self.phase = Phase::Over;
        }
        self.words.malformed(sink, "centrifugo_malformed", why, line, fatal);
    }

    /// An error counted by `cause`; a `fatal` one closes the connection.
    fn error(
        &mut self,
        sink: &mut dyn Sink,
        cause: std::fmt::Arguments<'_>,
        fatal: bool,
        seq: Option<u64>,
        detail: impl FnOnce(&mut String),
    ) {
        if fatal {
            self.phase = Phase::Over;
        }
        self.words.report(sink, cause, seq, fatal, detail);
    }
}

impl Session for CentrifugoSession {
    fn open(&mut self, _now: Instant, out: &mut dyn Outbox) {
        let id = self.next_id(Pending::Connect);
        let token = self.token.take();
        self.send(out, |out| centrifugo::encode_connect(out, id, token.as_deref(), CLIENT_NAME));
        self.token = token;
    }

    fn ready(&self) -> bool {
        self.phase == Phase::Ready
    }

    fn request(&mut self, seq: u64, payload: &[u8], out: &mut dyn Outbox) {
        if self.phase != Phase::Ready {
            return;
        }
        self.data.clear();
        write_str(&mut self.data, &String::from_utf8_lossy(payload));
        let id = self.next_id(Pending::Publish(Some(seq)));
        let (channel, data) = (std::mem::take(&mut self.echo_channel), std::mem::take(&mut self.data));
        // Written from a `str`, so UTF-8.
        let text = std::str::from_utf8(&data).unwrap_or("\"\"");
        self.send(out, |out| centrifugo::encode_publish(out, id, &channel, text));
        (self.echo_channel, self.data) = (channel, data);
    }

    fn subscribe(&mut self, topic: &str, out: &mut dyn Outbox) {
        if self.phase != Phase::Ready {
            return;
        }
        self.set_channel(topic);
        let id = self.next_id(Pending::Subscribe(topic.to_owned()));
        let channel = std::mem::take(&mut self.channel);
        self.send(out, |out| centrifugo::encode_subscribe(out, id, &channel));
        self.channel = channel;
    }

    fn publish(&mut self, topic: &str, payload: &[u8], out: &mut dyn Outbox) {
        if self.phase != Phase::Ready {
            return;
        }
        self.set_channel(topic);
        let id = self.next_id(Pending::Publish(None));
        let channel = std::mem::take(&mut self.channel);
        // The scenario's payload is a JSON object: the publication's data as it is.
        let data = String::from_utf8_lossy(payload);
        self.send(out, |out| centrifugo::encode_publish(out, id, &channel, &data));
        self.channel = channel;
    }

    fn receive(&mut self, message: &[u8], binary: bool, now: Instant, sink: &mut dyn Sink) {
        if self.phase == Phase::Over {
            return;
        }
        if binary {
            return self.malformed(
                "a binary message (the JSON protocol is text; is it the protobuf endpoint?)",
                message,
                sink,
            );
        }
        self.ping_due = self.silence_allowed.map(|allowed| now + allowed);
        for line in centrifugo::lines(message) {
            if self.phase == Phase::Over {
                break;
            }
            self.on_line(line, now, sink);
        }
        self.report_given_up(sink);
    }

    fn next_timer(&self) -> Option<Instant> {
        match self.phase {
            Phase::Subscribing | Phase::Ready => self.ping_due,
            Phase::Connecting | Phase::Over => None,
        }
    }

    /// The server silent for longer than its ping interval allows: the connection is given
    /// up, as Centrifugo's SDKs give it up.
    fn on_timer(&mut self, now: Instant, sink: &mut dyn Sink) {
        let (Some(due), Some(allowed)) = (self.ping_due, self.silence_allowed) else { return };
        if due > now || !matches!(self.phase, Phase::Subscribing | Phase::Ready) {
            return;
        }
        self.error(sink, format_args!("centrifugo_no_ping"), true, None, |detail| {
            let _ = write!(
                detail,
                "the server sent nothing for {} s, its ping interval and {} s (is it overloaded?)",
                allowed.as_secs(),
                MAX_PING_DELAY.as_secs()
            );
        });
    }

    fn close(&mut self, _out: &mut dyn Outbox) {
        self.phase = Phase::Over;
    }
}
