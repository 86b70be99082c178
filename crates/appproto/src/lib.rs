//! The application protocols wsbench speaks inside WebSocket messages, as codecs.
//!
//! Each module turns one protocol's messages into bytes and bytes into borrowed, typed views,
//! and nothing else: no sockets, no timers, no WebSocket framing (the caller hands in a
//! message's payload, or for the byte-stream protocols any run of bytes). They run per
//! message on the load engine's hot path, so encoders append to the caller's `Vec<u8>` and
//! allocate nothing when it has room, decoders borrow from the input and never build a
//! `serde_json::Value`, and no input makes them panic (every decoder is fuzzed).
//!
//! - [`mqtt`]: MQTT 3.1.1 and 5.0 packets; an incremental decoder (`Ok(None)` = need more bytes).
//! - [`stomp`]: STOMP 1.2 frames and heart-beats; an incremental decoder.
//! - [`nats`]: NATS's text protocol (the client's side); an incremental decoder.
//! - [`socketio`]: Engine.IO v4 packets and Socket.IO v5 packets (socket.io 4.x).
//! - [`graphql_ws`]: the graphql-transport-ws protocol of the graphql-ws library.
//! - [`jsonrpc`]: JSON-RPC 2.0, with rpc-websockets' event notifications.
//! - [`centrifugo`]: Centrifugo's client protocol v2 in JSON (commands, replies, pushes).
//! - [`actioncable`]: Rails' Action Cable (`actioncable-v1-json`): commands, subscriptions'
//!   identifiers, the server's messages.
//! - [`pusher`]: the Pusher Channels protocol 7 (events, subscriptions signed with HMAC-SHA256,
//!   signed HTTP API requests).
//! - [`json`]: the JSON pieces they share (strings written and read without allocating).

pub mod actioncable;
pub mod centrifugo;
pub mod graphql_ws;
pub mod json;
pub mod jsonrpc;
pub mod mqtt;
pub mod nats;
pub mod pusher;
pub mod signalr;
pub mod socketio;
pub mod stomp;

pub use json::{ArrayElements, NotAnArray};
