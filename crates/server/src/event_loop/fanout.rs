//! `wsbench serve --pubsub`'s fan-out inside the event loop: a connection's commands
//! handled (subscriptions acknowledged, each publish encoded once and queued for every
//! subscriber of its topic), and the turn's deliveries written at its end, one write per
//! subscriber (corking). The protocol's parsing and topic table are in `pubsub.rs`.

use wsbench_proto::{OpCode, write_frame};

use super::{BACKPRESSURE_BYTES, EventLoop};
use crate::conn::Phase;
use crate::pubsub::{self, Command, Subscriber};

impl EventLoop {
    /// Handles `key`'s pub/sub commands: acknowledges subscriptions in the thread's output
    /// buffer, and hands each publish, encoded once, to every subscriber of its topic.
    pub(super) fn handle_pubsub(&mut self, key: usize) {
        let inbox = std::mem::take(&mut self.conns[key].state.inbox);
        let me = (key, self.conns[key].serial);
        let mut rest = &inbox[..];
        while let Some((len, tail)) = rest.split_first_chunk::<4>() {
            let (payload, tail) = tail.split_at(u32::from_ne_bytes(*len) as usize);
            rest = tail;
            match pubsub::parse(payload) {
                Some(Command::Subscribe(topic)) => {
                    self.topics.subscribe(topic, me);
                    self.frame.clear();
                    pubsub::ack(topic, &mut self.frame);
                    write_frame(&mut self.out, true, OpCode::Text, None, &self.frame);
                }
                Some(Command::Publish(topic)) => {
                    self.frame.clear();
                    write_frame(&mut self.frame, true, OpCode::Text, None, payload);
                    let conns = &self.conns;
                    let alive = |(k, serial): Subscriber| conns.get(k).is_some_and(|c| c.serial == serial);
                    self.deliver_to.clear();
                    self.deliver_to.extend_from_slice(self.topics.subscribers(topic, alive));
                    for index in 0..self.deliver_to.len() {
                        let (to, _) = self.deliver_to[index];
                        if to == key {
                            self.out.extend_from_slice(&self.frame);
                        } else {
                            self.deliver(to);
                        }
                    }
                }
                None => {}
            }
        }
        let mut inbox = inbox;
        inbox.clear();
        self.conns[key].state.inbox = inbox;
    }

    /// Queues the shared frame for subscriber `key` (not the connection being read) in its
    /// output; the turn's deliveries to it are written together at the end of the turn
    /// ([`EventLoop::uncork`]), one write however many publishes reached it. A subscriber
    /// that does not read stops being read from (the backpressure rule).
    fn deliver(&mut self, key: usize) {
        let conn = &mut self.conns[key];
        if conn.state.phase != Phase::WebSocket {
            return;
        }
        conn.output.extend_from_slice(&self.frame);
        if conn.output.len() > BACKPRESSURE_BYTES {
            conn.reading_paused = true;
        }
        if !conn.corked {
            conn.corked = true;
            self.corked.push(key);
        }
    }

    /// Writes what this turn delivered to each subscriber.
    pub(super) fn uncork(&mut self) {
        while let Some(key) = self.corked.pop() {
            if let Some(conn) = self.conns.get_mut(key).filter(|conn| conn.corked) {
                conn.corked = false;
                self.flush(key);
            }
        }
    }
}
