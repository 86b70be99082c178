//! `wsbench serve --pubsub`'s fan-out inside the event loop: a connection's commands
//! handled (subscriptions acknowledged, each publish encoded once and queued for every
//! subscriber of its topic), and the turn's deliveries written at its end, one write per
//! subscriber (corking). A subscriber is a connection (HTTP/1.1) or a stream of one
//! (HTTP/2, by stream id): frames for a stream go through its connection's `H2Conn`. The
//! protocol's parsing and topic table are in `pubsub.rs`.

use wsbench_proto::{OpCode, write_frame};

use super::{BACKPRESSURE_BYTES, EventLoop};
use crate::conn::Phase;
use crate::pubsub::{self, Command, Subscriber};

impl EventLoop {
    /// Handles `key`'s pub/sub commands: acknowledges subscriptions in the thread's output
    /// buffer, and hands each publish, encoded once, to every subscriber of its topic.
    pub(super) fn handle_pubsub(&mut self, key: usize) {
        let inbox = std::mem::take(&mut self.conns[key].state.inbox);
        self.handle_commands(key, 0, &inbox);
        let mut inbox = inbox;
        inbox.clear();
        self.conns[key].state.inbox = inbox;
    }

    /// The pub/sub commands of `key`'s HTTP/2 streams, as [`EventLoop::handle_pubsub`]; what
    /// they answer on this connection goes to the thread's output buffer.
    pub(super) fn handle_pubsub_streams(&mut self, key: usize) {
        let commands = self.conns[key].state.h2_mut().map(|h2| h2.take_commands()).unwrap_or_default();
        for (stream, inbox) in commands {
            self.handle_commands(key, stream, &inbox);
        }
        if let Some(h2) = self.conns[key].state.h2_mut() {
            h2.drain_output(&mut self.out);
        }
    }

    /// Handles the commands in `inbox` of subscriber `(key, stream)` (stream 0: the
    /// connection itself).
    fn handle_commands(&mut self, key: usize, stream: u32, inbox: &[u8]) {
        let me = (key, self.conns[key].serial, stream);
        let mut rest = inbox;
        while let Some((len, tail)) = rest.split_first_chunk::<4>() {
            let (payload, tail) = tail.split_at(u32::from_ne_bytes(*len) as usize);
            rest = tail;
            match pubsub::parse(payload) {
                Some(Command::Subscribe(topic)) => {
                    self.topics.subscribe(topic, me);
                    let mut ack = Vec::new();
                    pubsub::ack(topic, &mut ack);
                    self.frame.clear();
                    write_frame(&mut self.frame, true, OpCode::Text, None, &ack);
                    self.answer(key, stream);
                }
                Some(Command::Publish(topic)) => {
                    self.frame.clear();
                    write_frame(&mut self.frame, true, OpCode::Text, None, payload);
                    let conns = &self.conns;
                    let alive = |(k, serial, stream): Subscriber| {
                        conns.get(k).is_some_and(|c| {
                            c.serial == serial
                                && (stream == 0 || c.state.h2().is_some_and(|h2| h2.has_stream(stream)))
                        })
                    };
                    self.deliver_to.clear();
                    self.deliver_to.extend_from_slice(self.topics.subscribers(topic, alive));
                    for index in 0..self.deliver_to.len() {
                        let (to, _, to_stream) = self.deliver_to[index];
                        if to == key {
                            self.answer(key, to_stream);
                        } else {
                            self.deliver(to, to_stream);
                        }
                    }
                }
                None => {}
            }
        }
    }

    /// The shared frame for subscriber `stream` of the connection being read: into the
    /// thread's output buffer (HTTP/1.1), or onto its HTTP/2 stream.
    fn answer(&mut self, key: usize, stream: u32) {
        match stream {
            0 => self.out.extend_from_slice(&self.frame),
            _ => {
                if let Some(h2) = self.conns[key].state.h2_mut() {
                    h2.send_to(stream, &self.frame);
                }
            }
        }
    }

    /// Queues the shared frame for subscriber `key` (not the connection being read) in its
    /// output; the turn's deliveries to it are written together at the end of the turn
    /// ([`EventLoop::uncork`]), one write however many publishes reached it. A subscriber
    /// that does not read stops being read from (the backpressure rule).
    fn deliver(&mut self, key: usize, stream: u32) {
        let conn = &mut self.conns[key];
        match (conn.state.phase, stream) {
            (Phase::WebSocket, 0) => conn.output.extend_from_slice(&self.frame),
            (Phase::Http2, stream) if stream != 0 => {
                if let Some(h2) = conn.state.h2_mut() {
                    h2.send_to(stream, &self.frame);
                }
            }
            _ => return,
        }
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
                if let Some(h2) = conn.state.h2_mut() {
                    h2.drain_output(&mut conn.output);
                }
                self.flush(key);
            }
        }
    }
}
