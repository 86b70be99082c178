//! The subscriptions a session keeps in a protocol where everything happens on a named
//! subscription the server must first confirm (Action Cable's identifiers, Pusher's
//! channels): what each is for (the echo connection's own, a subscriber's topic, a
//! publisher's, a stream's), whether the server answered it and by when it must, and a
//! publisher's publishes held until its subscription is confirmed (at most
//! [`MAX_WAITING`]; the others, and those for a subscription refused or never answered, are
//! counted as not sent, each an error by the protocol's causes). The names themselves are
//! the protocol's to make.

use std::collections::VecDeque;
use std::fmt::Write as _;
use std::time::{Duration, Instant};

use super::Sink;
use super::error_text::ErrorText;

/// Publishes a publisher holds while its subscription awaits the server's confirmation.
pub const MAX_WAITING: usize = 1024;

/// What a subscription is for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Purpose {
    /// The echo connection's own.
    Echo,
    /// A subscriber's, to the workload's topic (`tK`).
    Topic(String),
    /// A publisher's, to publish on topic `tK`.
    Publishing(String),
    Stream,
}

impl Purpose {
    /// The number K of the workload's topic `tK` it is for (as written), if any.
    pub fn topic_number(&self) -> Option<&str> {
        match self {
            Purpose::Topic(name) | Purpose::Publishing(name) => Some(name.strip_prefix('t').unwrap_or(name)),
            Purpose::Echo | Purpose::Stream => None,
        }
    }

    /// Whether nothing can go on without it (the echo's, the stream's).
    pub fn is_vital(&self) -> bool {
        matches!(self, Purpose::Echo | Purpose::Stream)
    }

    /// Whose it is, for an error's detail.
    pub fn whose(&self) -> &'static str {
        match self {
            Purpose::Echo => "the echo's",
            Purpose::Stream => "the stream's",
            Purpose::Topic(_) => "a subscriber's",
            Purpose::Publishing(_) => "a publisher's",
        }
    }
}

/// Whether the server has answered a subscription.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    /// Awaited until this time.
    Awaited(Instant),
    Confirmed,
    Rejected,
}

#[derive(Debug)]
struct Subscription {
    name: String,
    purpose: Purpose,
    answer: Answer,
    /// A publisher's publishes waiting for the confirmation.
    waiting: VecDeque<Vec<u8>>,
    /// A publisher's publishes not sent since the last report.
    dropped: u64,
}

/// A publish not sent: on the subscription `name`, because it was refused or never
/// answered (`refused`) or because too many waited; `count` of them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dropped {
    pub name: String,
    pub refused: bool,
    pub count: u64,
}

/// A subscription given up: the server answered it neither way by its deadline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Overdue {
    pub name: String,
    pub purpose: Purpose,
    /// Publishes that waited for it, not sent.
    pub unsent: usize,
}

/// The causes a protocol counts its subscriptions' lapses by.
#[derive(Debug)]
pub struct LapseCauses {
    /// A subscription the server answered neither way in time.
    pub unconfirmed: &'static str,
    /// A publish not sent: its subscription was refused or given up.
    pub refused: &'static str,
    /// A publish not sent: [`MAX_WAITING`] already waited for its subscription.
    pub crowded: &'static str,
    /// Where to look when a subscription is never answered (in its error's detail).
    pub hint: &'static str,
}

/// A connection's subscriptions, in the order they were made.
#[derive(Debug, Default)]
pub struct Subscriptions {
    list: Vec<Subscription>,
}

impl Subscriptions {
    /// Records the subscription `name` for `purpose`, its answer due by `deadline`.
    pub fn add(&mut self, name: String, purpose: Purpose, deadline: Instant) {
        let answer = Answer::Awaited(deadline);
        self.list.push(Subscription { name, purpose, answer, waiting: VecDeque::new(), dropped: 0 });
    }

    fn at(&self, name: &str) -> Option<usize> {
        self.list.iter().position(|subscription| subscription.name == name)
    }

    /// What the subscription `name` is for, if it is one of these.
    pub fn purpose(&self, name: &str) -> Option<&Purpose> {
        self.at(name).map(|at| &self.list[at].purpose)
    }

    /// The name of the subscription for `purpose`, if there is one.
    pub fn name_of(&self, purpose: &Purpose) -> Option<&str> {
        self.list.iter().find(|subscription| subscription.purpose == *purpose).map(|s| s.name.as_str())
    }

    /// The server confirmed `name`: what it is for and the publishes that waited for it;
    /// `None` when it is none of these or was confirmed already.
    pub fn confirm(&mut self, name: &str) -> Option<(Purpose, VecDeque<Vec<u8>>)> {
        let at = self.at(name)?;
        let subscription = &mut self.list[at];
        if subscription.answer == Answer::Confirmed {
            return None;
        }
        subscription.answer = Answer::Confirmed;
        Some((subscription.purpose.clone(), std::mem::take(&mut subscription.waiting)))
    }

    /// The server refused `name`: what it was for and how many publishes waited for it.
    pub fn refuse(&mut self, name: &str) -> Option<(Purpose, usize)> {
        let at = self.at(name)?;
        let subscription = &mut self.list[at];
        subscription.answer = Answer::Rejected;
        Some((subscription.purpose.clone(), std::mem::take(&mut subscription.waiting).len()))
    }

    /// A publish on topic `tK` whose data is `data`: the name of its confirmed subscription
    /// to send it on now, or `None` when it is held (or counted as not sent). `subscribe`
    /// makes the subscription (returning its name and deadline) when there is none yet.
    pub fn publish(
        &mut self,
        topic: &str,
        data: &[u8],
        subscribe: impl FnOnce() -> (String, Instant),
    ) -> Option<&str> {
        let at =
            match self.list.iter().position(|s| matches!(&s.purpose, Purpose::Publishing(t) if t == topic)) {
                Some(at) => at,
                None => {
                    let (name, deadline) = subscribe();
                    self.add(name, Purpose::Publishing(topic.to_owned()), deadline);
                    self.list.len() - 1
                }
            };
        let subscription = &mut self.list[at];
        match subscription.answer {
            Answer::Confirmed => return Some(subscription.name.as_str()),
            Answer::Awaited(_) if subscription.waiting.len() < MAX_WAITING => {
                subscription.waiting.push_back(data.to_vec())
            }
            Answer::Awaited(_) | Answer::Rejected => subscription.dropped += 1,
        }
        None
    }

    /// When the next unanswered subscription falls due.
    pub fn next_deadline(&self) -> Option<Instant> {
        self.list
            .iter()
            .filter_map(|subscription| match subscription.answer {
                Answer::Awaited(due) => Some(due),
                _ => None,
            })
            .min()
    }

    /// The subscriptions unanswered at `now`, given up (refused from now on).
    pub fn overdue(&mut self, now: Instant) -> Vec<Overdue> {
        let mut overdue = Vec::new();
        for subscription in &mut self.list {
            if matches!(subscription.answer, Answer::Awaited(due) if due <= now) {
                subscription.answer = Answer::Rejected;
                let unsent = std::mem::take(&mut subscription.waiting).len();
                overdue.push(Overdue {
                    name: subscription.name.clone(),
                    purpose: subscription.purpose.clone(),
                    unsent,
                });
            }
        }
        overdue
    }

    /// The publishes not sent since the last call, by subscription.
    pub fn dropped(&mut self) -> Vec<Dropped> {
        let mut dropped = Vec::new();
        for subscription in &mut self.list {
            let count = std::mem::take(&mut subscription.dropped);
            if count > 0 {
                let refused = subscription.answer == Answer::Rejected;
                dropped.push(Dropped { name: subscription.name.clone(), refused, count });
            }
        }
        dropped
    }
}

impl Subscriptions {
    /// Says, as errors by `causes`, each subscription given up at `now` (it waited
    /// `timeout`; fatal for the echo's and the stream's, after which nothing more is said)
    /// and each publish not sent since the last report. Returns whether a fatal one was.
    pub fn report_lapses(
        &mut self,
        now: Instant,
        timeout: Duration,
        causes: &LapseCauses,
        words: &mut ErrorText,
        sink: &mut dyn Sink,
    ) -> bool {
        for overdue in self.overdue(now) {
            let fatal = overdue.purpose.is_vital();
            words.report(sink, format_args!("{}", causes.unconfirmed), None, fatal, |detail| {
                let _ = write!(
                    detail,
                    "the server neither confirmed nor refused the subscription {} within {} s ({}); \
                     {} publishes waiting for it not sent",
                    overdue.name,
                    timeout.as_secs_f64(),
                    causes.hint,
                    overdue.unsent
                );
            });
            if fatal {
                return true;
            }
        }
        for dropped in self.dropped() {
            let (cause, why) = match dropped.refused {
                true => (causes.refused, "its subscription was refused or never answered".to_owned()),
                false => {
                    (causes.crowded, format!("{MAX_WAITING} publishes already wait for its subscription"))
                }
            };
            for _ in 0..dropped.count {
                words.report(sink, format_args!("{cause}"), None, false, |detail| {
                    let _ = write!(detail, "a publish on {} not sent: {why}", dropped.name);
                });
            }
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn a_publishers_publishes_wait_for_its_subscription_then_go_or_are_counted_not_sent() {
        let now = Instant::now();
        let mut subscriptions = Subscriptions::default();
        let made = subscriptions.publish("t1", b"a", || ("room-1".into(), now + Duration::from_secs(5)));
        assert_eq!(made, None, "held until confirmed");
        assert_eq!(subscriptions.publish("t1", b"b", || unreachable!()), None);
        assert_eq!(subscriptions.next_deadline(), Some(now + Duration::from_secs(5)));
        let (purpose, waited) = subscriptions.confirm("room-1").unwrap();
        assert_eq!(purpose, Purpose::Publishing("t1".into()));
        assert_eq!(waited, [b"a".to_vec(), b"b".to_vec()]);
        assert_eq!(subscriptions.publish("t1", b"c", || unreachable!()), Some("room-1"));
        assert_eq!(subscriptions.confirm("room-1"), None, "confirmed once");
        assert_eq!(subscriptions.next_deadline(), None);

        subscriptions.publish("t2", b"x", || ("room-2".into(), now));
        for _ in 0..MAX_WAITING {
            subscriptions.publish("t2", b"x", || unreachable!());
        }
        let dropped = Dropped { name: "room-2".into(), refused: false, count: 1 };
        assert_eq!(subscriptions.dropped(), [dropped]);
        let overdue = subscriptions.overdue(now);
        assert_eq!(overdue.len(), 1);
        assert_eq!((overdue[0].name.as_str(), overdue[0].unsent), ("room-2", MAX_WAITING));
        subscriptions.publish("t2", b"x", || unreachable!());
        assert_eq!(subscriptions.dropped(), [Dropped { name: "room-2".into(), refused: true, count: 1 }]);
        assert_eq!(subscriptions.dropped(), []);
    }

    #[test]
    fn a_refused_subscription_says_what_it_was_for() {
        let mut subscriptions = Subscriptions::default();
        subscriptions.add("own".into(), Purpose::Echo, Instant::now());
        assert_eq!(subscriptions.name_of(&Purpose::Echo), Some("own"));
        assert_eq!(subscriptions.refuse("own"), Some((Purpose::Echo, 0)));
        assert_eq!(subscriptions.refuse("other"), None);
        assert!(Purpose::Echo.is_vital() && !Purpose::Topic("t1".into()).is_vital());
        assert_eq!(Purpose::Publishing("t12".into()).topic_number(), Some("12"));
    }
}
