//! `http1`: a WebSocket as RFC 6455 opens it, one per TCP connection: the socket (source
//! address, non-blocking connect), the TLS session of a `wss://` target (SNI), the HTTP/1.1
//! upgrade request (subprotocols, extra headers, the permessage-deflate offer), and the
//! check of the server's `101` (the key's accept, the subprotocol it chose, the extension
//! it agreed, the TLS it negotiated). The worker registers the connection with its I/O and
//! drives it; this file owns no event loop.

use std::io;
use std::net::SocketAddr;
use std::time::Instant;

use rand::RngCore;
use rustls::ClientConnection;
use rustls_pki_types::ServerName;
use socket2::{Domain, Protocol, Socket, Type};
use wsbench_proto::handshake::{client_key, client_request_with_headers, parse_response};
use wsbench_proto::{Decoder, Reservation, Role};
use wsbench_transport::Transport;

use super::{Carriers, Dial};
use crate::engine::Job;
use crate::engine::compression;
use crate::engine::conn::ClientConn;
use crate::engine::handshake_failure::{self, HandshakeFailure, Upgrade};
use crate::metrics::Counters;
use crate::protocol::preflight::{Step, Target};

/// The HTTP/1.1 upgrade (the default).
#[derive(Debug)]
pub struct Http1;

impl Dial for Http1 {
    fn name(&self) -> &'static str {
        "http1"
    }
    fn flag_name(&self) -> &'static str {
        "h1"
    }
    fn title(&self) -> &'static str {
        "HTTP/1.1"
    }

    fn open(
        &self,
        job: &Job,
        index: u64,
        now: Instant,
        _key: usize,
        _carriers: &mut Carriers,
    ) -> io::Result<ClientConn> {
        open(job, index, now)
    }

    fn connected(&self, conn: &mut ClientConn) -> io::Result<bool> {
        match conn.transport.socket() {
            Some(socket) => connected(socket),
            None => Ok(true),
        }
    }

    fn redial(&self, job: &Job, conn: &mut ClientConn) -> io::Result<()> {
        conn.transport = connect(job, conn.index)?.into();
        conn.output_sent = 0;
        Ok(())
    }

    /// The `101` at the start of `data`, checked: what it agreed is counted and set on the
    /// connection (its permessage-deflate state).
    fn answer(&self, job: &Job, conn: &mut ClientConn, data: &mut [u8], counters: &mut Counters) -> Upgrade {
        if conn.preflight.is_some() {
            return preflight_answer(job, conn, data);
        }
        let n = match handshake_failure::answer(data, &conn.key, false) {
            Upgrade::Accepted(n) => n,
            other => return other,
        };
        if let Err(failure) = check_accepted(job, conn, &data[..n], counters) {
            return Upgrade::Refused(failure);
        }
        let attached = job.load.compression.as_ref().map(|offer| {
            compression::attach(offer, &conn.key, job.load.max_message, &mut conn.decoder, data, counters)
        });
        match attached {
            Some(Ok(state)) => conn.compression = Some(state),
            Some(Err(failure)) => return Upgrade::Refused(failure),
            None => {}
        }
        Upgrade::Accepted(n)
    }
}

/// Starts connection `index` (global number): the TCP connect is in progress, the TLS
/// session (if any) set up, and the upgrade request queued to write once connected.
fn open(job: &Job, index: u64, now: Instant) -> io::Result<ClientConn> {
    let transport = connect(job, index)?;
    let mut nonce = [0u8; 16];
    rand::rng().fill_bytes(&mut nonce);
    let decoder = Decoder::new(Role::Client, job.load.max_message);
    let mut conn = ClientConn::new(transport.into(), index, client_key(nonce), decoder, now);
    conn.budget = Reservation::new(job.message_memory.clone());
    conn.preflight = job.plan.preflight(index);
    match conn.preflight.as_mut() {
        Some(preflight) => with_target(job, index, |target| preflight.request(target, &mut conn.output)),
        None => conn.output.extend_from_slice(&upgrade_request(job, &conn.key, index, None, None)),
    }
    Ok(conn)
}

/// The answer to the protocol's request before the upgrade: another request, or the upgrade
/// request at the path it names (with its bearer), queued; or its failure.
fn preflight_answer(job: &Job, conn: &mut ClientConn, data: &[u8]) -> Upgrade {
    let ClientConn { preflight: Some(preflight), output, index, .. } = conn else {
        return Upgrade::Incomplete;
    };
    match with_target(job, *index, |target| preflight.answer(data, target, output)) {
        Step::Incomplete => Upgrade::Incomplete,
        Step::Again(used) => Upgrade::Continue(used),
        Step::Upgrade { used, path, bearer, new_connection } => {
            conn.preflight = None;
            let request = upgrade_request(job, &conn.key, conn.index, Some(&path), bearer.as_deref());
            if new_connection {
                conn.output.clear();
                conn.output.extend_from_slice(&request);
                return Upgrade::Redial;
            }
            conn.output.extend_from_slice(&request);
            Upgrade::Continue(used)
        }
        Step::Failed { cause, detail } => Upgrade::Refused(HandshakeFailure::of_preflight((cause, detail))),
    }
}

/// `f` given where connection `index` goes: the host, the run's path and extra headers.
fn with_target<R>(job: &Job, index: u64, f: impl FnOnce(&Target<'_>) -> R) -> R {
    let target = &job.target;
    let host = target.host_header();
    let run_path = job.load.handshake.path_for(&target.path, index);
    let headers = job.load.handshake.headers_for(index);
    let headers: Vec<(&str, &str)> = headers.iter().map(|(n, v)| (n.as_str(), v.as_str())).collect();
    f(&Target { host: &host, path: &run_path, headers: &headers })
}

/// The socket of connection `index` (from its source address), connecting, with its TLS
/// session (SNI; a stored session offered when `--tls-resume` picks it) for a `wss://`
/// target, whose handshake is counted, full or resumed, when it completes.
pub(super) fn connect(job: &Job, index: u64) -> io::Result<Transport> {
    let target = &job.target;
    let source = (!job.load.source_addrs.is_empty())
        .then(|| job.load.source_addrs[index as usize % job.load.source_addrs.len()]);
    let stream = connect_socket(target.addr, source)?;
    Ok(match &job.tls {
        Some(tls) => {
            let host = job.load.tls.sni.as_ref().unwrap_or(&target.host);
            let name = ServerName::try_from(host.clone())
                .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
            let (config, tried) = tls.next();
            Transport::tls_counted(stream, tried, || ClientConnection::new(config.clone(), name))
                .map_err(io::Error::other)?
        }
        None => Transport::Plain(stream),
    })
}

/// The upgrade request of connection `index`: the `--subprotocol`s offered and the extra
/// headers, `{conn}` replaced by `index`; at `path` instead of the run's when given (a
/// preflight named it), with `bearer` as its `Authorization` when given.
fn upgrade_request(job: &Job, key: &str, index: u64, path: Option<&str>, bearer: Option<&str>) -> Vec<u8> {
    let handshake = &job.load.handshake;
    let protocols: Vec<&str> = handshake.subprotocols.iter().map(String::as_str).collect();
    let mut headers = handshake.headers_for(index);
    if let Some(bearer) = bearer {
        headers.retain(|(name, _)| !name.eq_ignore_ascii_case("authorization"));
        headers.push(("Authorization".to_owned(), format!("Bearer {bearer}")));
    }
    if let Some(offer) = &job.load.compression {
        headers.push(("Sec-WebSocket-Extensions".to_owned(), offer.header_value()));
    }
    let headers: Vec<(&str, &str)> = headers.iter().map(|(n, v)| (n.as_str(), v.as_str())).collect();
    let target = &job.target;
    let run_path = handshake.path_for(&target.path, index);
    client_request_with_headers(&target.host_header(), path.unwrap_or(&run_path), key, &protocols, &headers)
}

/// Checks what an accepted upgrade (`head`, the `101` response) agreed to and counts it
/// ([`check_agreed`]).
fn check_accepted(
    job: &Job,
    conn: &ClientConn,
    head: &[u8],
    counters: &mut Counters,
) -> Result<(), HandshakeFailure> {
    let chosen = parse_response(head, &conn.key).ok().flatten().and_then(|(response, _)| response.protocol);
    check_agreed(job, chosen, conn.transport.negotiated_tls(), counters)
}

/// Checks what the server agreed to (`chosen`: the subprotocol it named) and counts it:
/// the subprotocol must be one offered (and, when some were offered, one must be chosen);
/// the TLS version and cipher suite are counted by value.
pub(super) fn check_agreed(
    job: &Job,
    chosen: Option<String>,
    tls: Option<(rustls::ProtocolVersion, rustls::CipherSuite)>,
    counters: &mut Counters,
) -> Result<(), HandshakeFailure> {
    let offered = &job.load.handshake.subprotocols;
    match chosen {
        Some(protocol) if offered.contains(&protocol) => {
            *counters.subprotocols_chosen.entry(protocol).or_default() += 1;
        }
        Some(_) => return Err(HandshakeFailure::of("subprotocol_not_offered")),
        None if !offered.is_empty() => return Err(HandshakeFailure::of("subprotocol_not_chosen")),
        None => {}
    }
    if let Some((version, suite)) = tls {
        let version = match version {
            rustls::ProtocolVersion::TLSv1_2 => "TLSv1.2".to_owned(),
            rustls::ProtocolVersion::TLSv1_3 => "TLSv1.3".to_owned(),
            other => format!("{other:?}"),
        };
        *counters.tls_negotiated.entry(format!("{version} {suite:?}")).or_default() += 1;
    }
    Ok(())
}

/// A non-blocking TCP socket (no Nagle) connecting to `addr`, from `source` if given.
fn connect_socket(addr: SocketAddr, source: Option<std::net::IpAddr>) -> io::Result<mio::net::TcpStream> {
    let socket = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
    socket.set_nonblocking(true)?;
    socket.set_tcp_nodelay(true)?;
    if let Some(source) = source {
        bind_address_no_port(&socket)?;
        socket.bind(&SocketAddr::new(source, 0).into())?;
    }
    match socket.connect(&addr.into()) {
        Ok(()) => {}
        Err(e) if e.raw_os_error() == Some(libc::EINPROGRESS) => {}
        Err(e) => return Err(e),
    }
    Ok(mio::net::TcpStream::from_std(socket.into()))
}

/// Whether the non-blocking connect has completed: `Ok(false)` while it is in progress,
/// its error when it failed.
pub(super) fn connected(socket: &mut mio::net::TcpStream) -> io::Result<bool> {
    if let Some(error) = socket.take_error()? {
        return Err(error);
    }
    match socket.peer_addr() {
        Ok(_) => Ok(true),
        Err(e) if e.kind() == io::ErrorKind::NotConnected => Ok(false),
        Err(e) => Err(e),
    }
}

/// `IP_BIND_ADDRESS_NO_PORT`: bind the source address now but pick the port at connect
/// time, so ports are shared across destinations instead of exhausted at bind.
fn bind_address_no_port(socket: &Socket) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    let one: libc::c_int = 1;
    // SAFETY: a valid fd and a pointer to a live c_int of the size given.
    let result = unsafe {
        libc::setsockopt(
            socket.as_raw_fd(),
            libc::IPPROTO_IP,
            libc::IP_BIND_ADDRESS_NO_PORT,
            (&one as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if result == 0 { Ok(()) } else { Err(io::Error::last_os_error()) }
}
