//! A STOMP client over [`super::Ws`] for the interop tests: frames encoded with
//! `wsbench_appproto::stomp` go out as text messages; what comes back is fed, in whatever
//! pieces the broker's messages make, to the incremental decoder.

use wsbench_appproto::stomp::{DEFAULT_MAX_FRAME, Decoder, Frame, Item, ServerFrame};

use super::{Message, Ws};

#[derive(Debug)]
pub struct StompClient {
    pub ws: Ws,
    decoder: Decoder,
    input: Vec<u8>,
    /// Heart-beats received so far.
    pub heart_beats: usize,
}

impl StompClient {
    pub fn open(port: u16, path: &str) -> StompClient {
        let ws = Ws::connect(port, path, &["v12.stomp"]).expect("WebSocket upgrade");
        StompClient { ws, decoder: Decoder::new(DEFAULT_MAX_FRAME), input: Vec::new(), heart_beats: 0 }
    }

    /// Encodes with `write` and sends the bytes as one text message.
    pub fn send(&mut self, write: impl FnOnce(&mut Vec<u8>)) {
        let mut wire = Vec::new();
        write(&mut wire);
        self.ws.send_text(&wire);
    }

    /// The next frame (heart-beats are counted on the way), or the close that came instead.
    pub fn next_frame(&mut self) -> Result<Frame<'static>, (u16, String)> {
        loop {
            if let Some((item, used)) = self.decoder.decode(&self.input).expect("a valid STOMP frame") {
                if item == Item::HeartBeat {
                    self.heart_beats += 1;
                    self.input.drain(..used);
                    continue;
                }
                // Leak the frame's bytes so the view can outlive the buffer (tests only).
                let bytes: &'static [u8] = Vec::leak(self.input.drain(..used).collect());
                let Some((Item::Frame(frame), _)) = self.decoder.decode(bytes).expect("decodes again") else {
                    unreachable!("the same bytes decode to the same frame")
                };
                return Ok(frame);
            }
            match self.ws.recv() {
                Message::Text(text) => self.input.extend_from_slice(text.as_bytes()),
                Message::Binary(bytes) => self.input.extend_from_slice(&bytes),
                Message::Close(code, reason) => return Err((code, reason)),
            }
        }
    }

    /// The next frame as a server frame; panics on a close or a frame no client expects.
    pub fn next(&mut self) -> ServerFrame<'static> {
        let frame =
            self.next_frame().unwrap_or_else(|close| panic!("closed {close:?} while waiting for a frame"));
        frame.server_frame().expect("a frame a client expects")
    }
}
