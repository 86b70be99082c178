//! A WebSocket server that attacks its clients' memory or breaks RFC 6455 on purpose, for
//! the tests of what `wsbench run` holds and counts against it: real sockets on port 0, one
//! std thread per connection. Each connection is upgraded (agreeing permessage-deflate when
//! the attack needs it and the client offered it), waits for the client's first frame, and
//! then gets the [`Attack`]:
//!
//! - [`Attack::DeflateBomb`]: one compressed message announced and sent as one frame, a few
//!   KiB per MiB it inflates to (zeros), written until the client hangs up;
//! - [`Attack::EndlessFrame`]: an uncompressed frame announcing 2^63−1 bytes, then zeros;
//! - [`Attack::EndlessContinuations`]: a binary frame without FIN, then 64 KiB continuation
//!   frames, none with FIN;
//! - [`Attack::Bytes`]: these bytes (a masked frame, invalid UTF-8, …).
//!
//! After the attack the connection reads until the client closes it. Dropping the server
//! stops it.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use wsbench_proto::deflate::Deflater;
use wsbench_proto::handshake::{add_header, server_response};

use super::raw_server::{RawServer, read_upgrade};

/// What each connection gets after the client's first frame.
#[derive(Debug, Clone)]
pub enum Attack {
    /// A compressed message of this many MiB of zeros.
    DeflateBomb {
        mib: u64,
    },
    EndlessFrame,
    EndlessContinuations,
    Bytes(Vec<u8>),
}

/// Most bytes one connection writes in an endless attack: the client should hang up long
/// before (the tests bound it far lower).
const ENDLESS_BYTES: u64 = 4 << 30;

/// One MiB of zeros, deflated and sync-flushed (the `00 00 ff ff` tail kept): repeated, a
/// valid stream that inflates to a MiB per copy.
fn bomb_unit() -> Vec<u8> {
    let mut unit = Vec::new();
    Deflater::new(15, true).compress(&vec![0u8; 1 << 20], &mut unit).expect("deflate");
    unit.extend_from_slice(&[0x00, 0x00, 0xff, 0xff]);
    unit
}

pub struct HostileServer {
    server: RawServer,
}

impl HostileServer {
    pub fn start(attack: Attack) -> HostileServer {
        let unit = bomb_unit();
        let server = RawServer::start(move |stream, _stop| {
            let _ = serve(stream, &attack, &unit);
        });
        HostileServer { server }
    }

    pub fn url(&self) -> String {
        format!("ws://{}/", self.server.addr())
    }
}

fn serve(mut stream: TcpStream, attack: &Attack, unit: &[u8]) -> std::io::Result<()> {
    stream.set_read_timeout(Some(Duration::from_secs(30)))?;
    stream.set_write_timeout(Some(Duration::from_secs(30)))?;
    let Some((upgrade, mut input)) = read_upgrade(&mut stream)? else { return Ok(()) };
    let mut chunk = [0u8; 4096];
    let mut response = server_response(&upgrade, None);
    if matches!(attack, Attack::DeflateBomb { .. }) && !upgrade.extensions.is_empty() {
        add_header(&mut response, "Sec-WebSocket-Extensions", "permessage-deflate");
    }
    stream.write_all(&response)?;
    // The client's first frame (its header at least) says it is sending.
    while input.len() < 2 {
        let n = stream.read(&mut chunk)?;
        if n == 0 {
            return Ok(());
        }
        input.extend_from_slice(&chunk[..n]);
    }
    match attack {
        Attack::DeflateBomb { mib } => {
            let mut header = vec![0xC2, 127];
            header.extend_from_slice(&(mib * unit.len() as u64).to_be_bytes());
            stream.write_all(&header)?;
            for _ in 0..*mib {
                stream.write_all(unit)?;
            }
        }
        Attack::EndlessFrame => {
            let mut header = vec![0x02, 127];
            header.extend_from_slice(&(i64::MAX as u64).to_be_bytes());
            stream.write_all(&header)?;
            endless(&mut stream, &[0u8; 64 * 1024], 0)?;
        }
        Attack::EndlessContinuations => {
            let piece = [0u8; 64 * 1024];
            let mut frame = vec![0x02, 127];
            frame.extend_from_slice(&(piece.len() as u64).to_be_bytes());
            frame.extend_from_slice(&piece);
            stream.write_all(&frame)?;
            frame[0] = 0x00;
            endless(&mut stream, &frame, 0)?;
        }
        Attack::Bytes(bytes) => stream.write_all(bytes)?,
    }
    while stream.read(&mut chunk)? > 0 {}
    Ok(())
}

/// Writes `piece` again and again until the client hangs up (or [`ENDLESS_BYTES`]).
fn endless(stream: &mut TcpStream, piece: &[u8], mut written: u64) -> std::io::Result<()> {
    while written < ENDLESS_BYTES {
        stream.write_all(piece)?;
        written += piece.len() as u64;
    }
    Ok(())
}
