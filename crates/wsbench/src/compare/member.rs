//! A fleet server a comparison started, as the run's recovery disruptions
//! (`--disrupt restart|kill`) stop and start it again: on the same port, by its manifest's
//! start command, ready when its port (and, for a row over UDP, its UDP port) is open.

use std::time::{Duration, Instant};

use super::START_TIMEOUT;
use crate::fleet::{FleetServer, Manifest};
use crate::session;

/// A fleet member a comparison started, as its recovery runs (`--disrupt restart|kill`)
/// restart it: on the same port, by the start command of its manifest.
#[derive(Debug)]
pub struct Member {
    pub manifest: Manifest,
    pub cpus: Vec<usize>,
    pub server: FleetServer,
    /// It serves the row over UDP (QUIC) too: started again, it is ready once it holds its
    /// UDP port as well.
    pub udp: bool,
}

impl session::disruptor::OwnedServer for Member {
    fn stop_for_restart(&mut self, kill: bool) -> Duration {
        let stopping = Instant::now();
        match kill {
            true => self.server.kill(),
            false => self.server.stop(),
        }
        // The start command's shell may end before the server it started has let go of the
        // port (closing ten thousand connections takes a while): stopped means the port is free.
        let deadline = stopping + START_TIMEOUT;
        while std::net::TcpListener::bind(("127.0.0.1", self.server.port)).is_err()
            && Instant::now() < deadline
        {
            std::thread::sleep(Duration::from_millis(10));
        }
        stopping.elapsed()
    }

    fn start_again(&mut self) -> Result<Duration, String> {
        let started = std::time::Instant::now();
        self.server = FleetServer::start_on(&self.manifest, &self.cpus, self.server.port, START_TIMEOUT)
            .map_err(|e| crate::causes::with_causes(&e))?;
        if self.udp {
            self.server.wait_for_udp(START_TIMEOUT).map_err(|e| crate::causes::with_causes(&e))?;
        }
        Ok(started.elapsed())
    }

    fn close_every_connection(&mut self) -> Result<(), String> {
        Err(format!("{} cannot be told to close its connections", self.manifest.name))
    }
}
