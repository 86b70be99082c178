//! Why this exists: fastwebsockets (Deno's server-side WebSocket library) on hyper 1 as a
//! WebSocket echo server for `wsbench compare`. One current-thread tokio runtime serves every
//! connection, like the seeds' single-threaded servers. It follows fastwebsockets' own
//! `echo_server` example: hyper performs the HTTP/1.1 upgrade, FragmentCollector joins
//! fragmented messages (and checks UTF-8), text/binary messages go back with the same opcode;
//! fastwebsockets answers pings and the close handshake itself (auto_pong / auto_close).
//! A plain HTTP GET gets 200 (for the rtt scenario's HTTP row). A protocol error ends only its
//! own connection.
//!
//! Usage: echo PORT   (0 picks a free port)
//! Prints `listening on ws://127.0.0.1:PORT` once it accepts connections.

use std::io::Write;
use std::net::{Ipv4Addr, SocketAddr};

use fastwebsockets::{upgrade, FragmentCollector, OpCode, WebSocketError};
use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response};
use tokio::net::{TcpListener, TcpSocket};

const MAX_MESSAGE_BYTES: usize = 128 << 20;
const LISTEN_BACKLOG: u32 = 4096;

async fn echo(fut: upgrade::UpgradeFut) -> Result<(), WebSocketError> {
    let mut ws = fut.await?;
    ws.set_max_message_size(MAX_MESSAGE_BYTES);
    let mut ws = FragmentCollector::new(ws);
    loop {
        let frame = ws.read_frame().await?;
        match frame.opcode {
            OpCode::Close => break,
            OpCode::Text | OpCode::Binary => ws.write_frame(frame).await?,
            _ => {}
        }
    }
    Ok(())
}

async fn handle(mut req: Request<Incoming>) -> Result<Response<Full<Bytes>>, WebSocketError> {
    if !upgrade::is_upgrade_request(&req) {
        return Ok(Response::new(Full::new(Bytes::from_static(b"ok\n"))));
    }
    let (response, fut) = upgrade::upgrade(&mut req)?;
    tokio::task::spawn(async move {
        // Connection errors (resets when a benchmark client exits) are expected; stay quiet.
        let _ = tokio::task::unconstrained(echo(fut)).await;
    });
    let (parts, _) = response.into_parts();
    Ok(Response::from_parts(parts, Full::default()))
}

fn listen(port: u16) -> std::io::Result<TcpListener> {
    let socket = TcpSocket::new_v4()?;
    socket.set_reuseaddr(true)?;
    socket.bind(SocketAddr::from((Ipv4Addr::LOCALHOST, port)))?;
    socket.listen(LISTEN_BACKLOG)
}

fn main() {
    let port: u16 = match std::env::args().nth(1).map(|p| p.parse()) {
        Some(Ok(port)) => port,
        _ => {
            eprintln!("usage: echo PORT   (0 picks a free port)");
            std::process::exit(2);
        }
    };
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("tokio runtime");
    rt.block_on(async move {
        let listener = match listen(port) {
            Ok(listener) => listener,
            Err(e) => {
                eprintln!("rust-fastwebsockets: cannot listen on 127.0.0.1:{port}: {e}");
                std::process::exit(1);
            }
        };
        let addr = listener.local_addr().expect("local_addr");
        let mut stdout = std::io::stdout();
        let _ = writeln!(stdout, "listening on ws://{addr}");
        let _ = stdout.flush();
        loop {
            let (stream, _) = match listener.accept().await {
                Ok(accepted) => accepted,
                Err(e) => {
                    // EMFILE and the like: report and keep serving the open connections.
                    eprintln!("rust-fastwebsockets: accept failed: {e}");
                    tokio::time::sleep(std::time::Duration::from_millis(10)).await;
                    continue;
                }
            };
            let _ = stream.set_nodelay(true);
            tokio::spawn(async move {
                let io = hyper_util::rt::TokioIo::new(stream);
                let _ = http1::Builder::new().serve_connection(io, service_fn(handle)).with_upgrades().await;
            });
        }
    });
}
