//! The client's store of TLS sessions to resume (`--tls-resume`), shared by every
//! connection of the run's process to the same server: what rustls hands it after a
//! handshake (TLS 1.3 tickets, each used once; the TLS 1.2 session, reused until replaced;
//! the key-exchange group the server chose) and gives back to the next connection that
//! may resume. Its capacity is fixed when the run starts, so its memory never grows with
//! the run's length: past `tickets` stored tickets the oldest goes. rustls' own store keeps
//! 8 tickets per server, which a burst of reconnections (more connections at once than
//! tickets) would use up at once; this one is sized to the run's connections instead.

use std::collections::VecDeque;
use std::sync::Mutex;

use rustls::NamedGroup;
use rustls::client::{ClientSessionStore, Tls12ClientSessionValue, Tls13ClientSessionValue};
use rustls_pki_types::ServerName;

/// Servers (names) the store keeps sessions for: a run has one target (and one SNI).
const SERVERS: usize = 4;
/// The fewest and the most TLS 1.3 tickets kept per server, whatever the run's size:
/// rustls' own default is 8; the most bounds the store at a few MB (a ticket and its
/// session, and half the server's certificate chain, which its handshake's tickets share).
pub const MIN_TICKETS: usize = 8;
pub const MAX_TICKETS: usize = 16_384;

/// A bounded store of sessions, by server name.
#[derive(Debug)]
pub struct SessionStore {
    tickets: usize,
    servers: Mutex<VecDeque<Server>>,
}

/// What is stored for one server.
#[derive(Debug)]
struct Server {
    name: ServerName<'static>,
    kx_hint: Option<NamedGroup>,
    tls12: Option<Tls12ClientSessionValue>,
    /// The newest last.
    tls13: VecDeque<Tls13ClientSessionValue>,
}

impl SessionStore {
    /// A store keeping up to `tickets` TLS 1.3 tickets per server (within [`MIN_TICKETS`]
    /// and [`MAX_TICKETS`]): as many as the run has connections, so that each can resume
    /// when all come back at once.
    pub fn new(tickets: u64) -> SessionStore {
        let tickets = (tickets as usize).clamp(MIN_TICKETS, MAX_TICKETS);
        SessionStore { tickets, servers: Mutex::new(VecDeque::new()) }
    }

    /// Runs `act` on `name`'s entry, made if `create` (the oldest server's going past
    /// [`SERVERS`]), or on nothing.
    fn with<T>(&self, name: &ServerName<'_>, create: bool, act: impl FnOnce(Option<&mut Server>) -> T) -> T {
        let mut servers = self.servers.lock().unwrap_or_else(|e| e.into_inner());
        let at = servers.iter().position(|server| server.name == *name);
        let at = match (at, create) {
            (Some(at), _) => Some(at),
            (None, false) => None,
            (None, true) => {
                if servers.len() == SERVERS {
                    servers.pop_front();
                }
                let new =
                    Server { name: name.to_owned(), kx_hint: None, tls12: None, tls13: VecDeque::new() };
                servers.push_back(new);
                Some(servers.len() - 1)
            }
        };
        act(at.map(|at| &mut servers[at]))
    }
}

impl ClientSessionStore for SessionStore {
    fn set_kx_hint(&self, name: ServerName<'static>, group: NamedGroup) {
        self.with(&name, true, |server| server.map(|s| s.kx_hint = Some(group)));
    }

    fn kx_hint(&self, name: &ServerName<'_>) -> Option<NamedGroup> {
        self.with(name, false, |server| server?.kx_hint)
    }

    fn set_tls12_session(&self, name: ServerName<'static>, value: Tls12ClientSessionValue) {
        self.with(&name, true, |server| server.map(|s| s.tls12 = Some(value)));
    }

    fn tls12_session(&self, name: &ServerName<'_>) -> Option<Tls12ClientSessionValue> {
        self.with(name, false, |server| server?.tls12.clone())
    }

    fn remove_tls12_session(&self, name: &ServerName<'static>) {
        self.with(name, false, |server| server.map(|s| s.tls12 = None));
    }

    fn insert_tls13_ticket(&self, name: ServerName<'static>, value: Tls13ClientSessionValue) {
        let tickets = self.tickets;
        self.with(&name, true, |server| {
            let Some(server) = server else { return };
            if server.tls13.len() == tickets {
                server.tls13.pop_front();
            }
            server.tls13.push_back(value);
        });
    }

    /// The newest ticket: the likeliest still to be valid.
    fn take_tls13_ticket(&self, name: &ServerName<'static>) -> Option<Tls13ClientSessionValue> {
        self.with(name, false, |server| server?.tls13.pop_back())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_store_is_bounded_in_servers_and_sized_within_its_limits() {
        assert_eq!(SessionStore::new(0).tickets, MIN_TICKETS);
        assert_eq!(SessionStore::new(10_000_000).tickets, MAX_TICKETS);
        assert_eq!(SessionStore::new(500).tickets, 500);
        let store = SessionStore::new(1);
        let name = |i: usize| ServerName::try_from(format!("s{i}.example")).unwrap();
        for i in 0..SERVERS + 3 {
            store.set_kx_hint(name(i), NamedGroup::X25519);
        }
        assert_eq!(store.servers.lock().unwrap().len(), SERVERS);
        assert_eq!(store.kx_hint(&name(0)), None, "the oldest server went");
        assert_eq!(store.kx_hint(&name(SERVERS + 2)), Some(NamedGroup::X25519));
        assert!(store.take_tls13_ticket(&name(SERVERS + 2)).is_none());
    }
}
