//! Why this exists: bench/run.sh compares `wsbench serve` against a fast, widely used Rust
//! WebSocket server (the goal: wsbench serve >= 1.0x this). It follows fastwebsockets' own
//! `echo_server` example: hyper 1 performs the HTTP/1.1 upgrade, a current-thread tokio
//! runtime runs every connection, and text/binary frames are echoed with the same opcode.
//! fastwebsockets answers pings and closes itself (auto_pong / auto_close are on by default).
//!
//! Usage: fastwebsockets-echo PORT   (0 picks a free port)
//! Prints `listening on ws://127.0.0.1:PORT` once it accepts connections.

use std::io::Write;

use fastwebsockets::{upgrade, FragmentCollector, OpCode, WebSocketError};
use http_body_util::Empty;
use hyper::body::{Bytes, Incoming};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response};
use tokio::net::TcpListener;

async fn echo(fut: upgrade::UpgradeFut) -> Result<(), WebSocketError> {
    let mut ws = FragmentCollector::new(fut.await?);
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

async fn upgrade_request(mut req: Request<Incoming>) -> Result<Response<Empty<Bytes>>, WebSocketError> {
    let (response, fut) = upgrade::upgrade(&mut req)?;
    tokio::task::spawn(async move {
        // Connection errors (resets when a benchmark client exits) are expected; stay quiet.
        let _ = tokio::task::unconstrained(echo(fut)).await;
    });
    Ok(response)
}

fn main() {
    let port: u16 = match std::env::args().nth(1).map(|p| p.parse()) {
        Some(Ok(port)) => port,
        _ => {
            eprintln!("usage: fastwebsockets-echo PORT   (0 picks a free port)");
            std::process::exit(2);
        }
    };
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("tokio runtime");
    rt.block_on(async move {
        let listener = match TcpListener::bind(("127.0.0.1", port)).await {
            Ok(listener) => listener,
            Err(e) => {
                eprintln!("fastwebsockets-echo: cannot listen on 127.0.0.1:{port}: {e}");
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
                    eprintln!("fastwebsockets-echo: accept failed: {e}");
                    tokio::time::sleep(std::time::Duration::from_millis(10)).await;
                    continue;
                }
            };
            let _ = stream.set_nodelay(true);
            tokio::spawn(async move {
                let io = hyper_util::rt::TokioIo::new(stream);
                let _ = http1::Builder::new().serve_connection(io, service_fn(upgrade_request)).with_upgrades().await;
            });
        }
    });
}
