//! What a page that opens late (or is reloaded) is sent first: every event of the command
//! so far, in order, so its charts show the whole run and not only what follows. The
//! seconds are kept up to [`MAX_SECONDS`]; past it every other one is dropped and from then
//! on only every second one (then every fourth, …) is kept, as the probe thins its samples
//! (`crate::probe::thinning`), so a run of days holds the same memory as one of two hours.
//! The other events (a measurement begins, a line of progress) are few but not bounded by
//! the run's length either (a comparison of many servers): past [`MAX_NOTES`] the oldest
//! are dropped. Never thinned: the latest second, which a page always shows.

use std::collections::VecDeque;
use std::sync::Arc;

/// Seconds kept before the history is thinned: two hours at one a second.
pub const MAX_SECONDS: usize = 7_200;
/// Other events kept.
pub const MAX_NOTES: usize = 1_000;

/// One event as the page receives it: its SSE event name and its JSON text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    pub name: &'static str,
    pub data: Arc<str>,
}

impl Event {
    pub fn new(name: &'static str, data: String) -> Event {
        Event { name, data: data.into() }
    }

    /// The event on the wire (`text/event-stream`): its name and its one line of data.
    pub fn wire(&self) -> String {
        format!("event: {}\ndata: {}\n\n", self.name, self.data)
    }

    fn is_second(&self) -> bool {
        self.name == SECOND
    }
}

/// The name of a second's event.
pub const SECOND: &str = "second";

/// The command's events so far, bounded.
#[derive(Debug)]
pub struct History {
    /// Kept events in order, each with its sequence number.
    events: VecDeque<(u64, Event)>,
    seconds: usize,
    notes: usize,
    /// Seconds arriving per second kept.
    stride: u64,
    /// Seconds arrived since the history was last thinned.
    arrived: u64,
    /// The last event is a second kept only until the next arrives (not one of every
    /// `stride`).
    provisional: bool,
}

impl Default for History {
    fn default() -> History {
        History { events: VecDeque::new(), seconds: 0, notes: 0, stride: 1, arrived: 0, provisional: false }
    }
}

impl History {
    /// Keeps `event`, number `seq`, as far as the bounds allow.
    pub fn push(&mut self, seq: u64, event: Event) {
        if event.is_second() {
            self.push_second(seq, event);
            return;
        }
        if self.notes == MAX_NOTES
            && let Some(at) = self.events.iter().position(|(_, e)| !e.is_second())
        {
            self.events.remove(at);
            self.notes -= 1;
        }
        self.events.push_back((seq, event));
        self.notes += 1;
    }

    fn push_second(&mut self, seq: u64, event: Event) {
        // The latest second stands in for those not kept since the last one kept.
        if self.provisional && self.events.back().is_some_and(|(_, e)| e.is_second()) {
            self.events.pop_back();
            self.seconds -= 1;
        }
        self.provisional = !self.arrived.is_multiple_of(self.stride);
        self.arrived += 1;
        self.events.push_back((seq, event));
        self.seconds += 1;
        if self.seconds >= MAX_SECONDS {
            self.thin();
        }
    }

    /// Drops every other second: the history then stands for twice as many seconds.
    fn thin(&mut self) {
        let mut nth = 0u64;
        self.events.retain(|(_, event)| {
            if !event.is_second() {
                return true;
            }
            nth += 1;
            nth.is_multiple_of(2)
        });
        self.seconds = self.events.iter().filter(|(_, e)| e.is_second()).count();
        self.stride *= 2;
        self.arrived = 0;
        self.provisional = false;
    }

    /// Every kept event, in order, with its sequence number.
    pub fn events(&self) -> impl Iterator<Item = &(u64, Event)> {
        self.events.iter()
    }

    pub fn len(&self) -> usize {
        self.events.len()
    }

    pub fn is_empty(&self) -> bool {
        self.events.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn second(n: u64) -> Event {
        Event::new(SECOND, format!("{{\"second\":{n}}}"))
    }

    #[test]
    fn a_long_run_keeps_a_bounded_history_that_still_spans_it_and_ends_at_the_latest_second() {
        let mut history = History::default();
        let total = 10 * MAX_SECONDS as u64 + 3;
        for n in 0..total {
            history.push(n, second(n));
            assert!(history.len() <= MAX_SECONDS, "{} events kept after {n}", history.len());
        }
        let kept: Vec<u64> = history.events().map(|(seq, _)| *seq).collect();
        assert!(kept.len() >= MAX_SECONDS / 4, "thinned too far: {}", kept.len());
        assert!(kept.windows(2).all(|pair| pair[0] < pair[1]), "out of order");
        assert!(kept[0] < total / 10, "the start of the run was lost: {}", kept[0]);
        assert_eq!(*kept.last().unwrap(), total - 1, "the latest second is always kept");
    }

    #[test]
    fn notes_survive_thinning_and_the_oldest_go_past_their_bound() {
        let mut history = History::default();
        history.push(0, Event::new("begin", "{}".to_owned()));
        for n in 1..=MAX_SECONDS as u64 {
            history.push(n, second(n));
        }
        assert_eq!(history.events().next().unwrap().1.name, "begin", "thinning dropped a note");
        for n in 0..MAX_NOTES as u64 + 5 {
            history.push(100_000 + n, Event::new("note", format!("\"{n}\"")));
        }
        let notes: Vec<&(u64, Event)> = history.events().filter(|(_, e)| e.name != SECOND).collect();
        assert_eq!(notes.len(), MAX_NOTES);
        assert_eq!(&*notes[0].1.data, "\"5\"", "the oldest notes go first");
    }

    #[test]
    fn an_event_goes_on_the_wire_as_one_named_sse_message() {
        assert_eq!(second(4).wire(), "event: second\ndata: {\"second\":4}\n\n");
    }
}
