//! Why this exists: axum 0.8 as a WebSocket echo server for `wsbench compare`, and the fleet's
//! server of WebSockets over HTTP/2 (RFC 8441): `axum::serve` answers HTTP/1.1 and h2c with
//! prior knowledge on the same port, and turns on SETTINGS_ENABLE_CONNECT_PROTOCOL, so the
//! one `any(handler)` route takes the HTTP/1.1 upgrade (GET) and the extended CONNECT alike.
//! One current-thread tokio runtime serves every connection, like the seeds' single-threaded
//! servers. Text and binary messages go back as they came; tungstenite (under axum) queues
//! a pong for every ping and answers the close frame. A plain GET gets `ok`.
//! Message and frame limits are raised to 128 MiB.
//!
//! Usage: echo PORT   (0 picks a free port)
//! Prints `listening on ws://127.0.0.1:PORT` once it accepts connections.

use std::io::Write;
use std::net::{Ipv4Addr, SocketAddr};

use axum::extract::ws::rejection::WebSocketUpgradeRejection;
use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade};
use axum::response::{IntoResponse, Response};
use axum::routing::any;
use axum::Router;
use tokio::net::{TcpListener, TcpSocket};

const MAX_MESSAGE_BYTES: usize = 128 << 20;
const LISTEN_BACKLOG: u32 = 4096;

/// A WebSocket (either HTTP version) is echoed; any other request gets `ok`.
async fn handler(upgrade: Result<WebSocketUpgrade, WebSocketUpgradeRejection>) -> Response {
    match upgrade {
        Ok(ws) => ws.max_message_size(MAX_MESSAGE_BYTES).max_frame_size(MAX_MESSAGE_BYTES).on_upgrade(echo),
        Err(_) => "ok\n".into_response(),
    }
}

async fn echo(mut socket: WebSocket) {
    while let Some(Ok(message)) = socket.recv().await {
        match message {
            Message::Text(_) | Message::Binary(_) => {
                if socket.send(message).await.is_err() {
                    return;
                }
            }
            Message::Close(_) => return,
            Message::Ping(_) | Message::Pong(_) => {}
        }
    }
}

fn listen(port: u16) -> std::io::Result<TcpListener> {
    let socket = TcpSocket::new_v4()?;
    socket.set_reuseaddr(true)?;
    socket.set_nodelay(true)?;
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
                eprintln!("rust-axum: cannot listen on 127.0.0.1:{port}: {e}");
                std::process::exit(1);
            }
        };
        let addr = listener.local_addr().expect("local_addr");
        let mut stdout = std::io::stdout();
        let _ = writeln!(stdout, "listening on ws://{addr}");
        let _ = stdout.flush();
        let app = Router::new().route("/", any(handler)).route("/{*path}", any(handler));
        if let Err(e) = axum::serve(listener, app).await {
            eprintln!("rust-axum: {e}");
            std::process::exit(1);
        }
    });
}
