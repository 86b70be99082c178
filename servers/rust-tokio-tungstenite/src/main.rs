//! Why this exists: tokio-tungstenite as a WebSocket echo server for `wsbench compare`. One
//! current-thread tokio runtime serves every connection, like the seeds' single-threaded
//! servers. Text and binary messages go back as they came (same opcode); tungstenite joins
//! fragments, checks UTF-8, queues a pong for every ping (sent on the next read or write) and
//! answers the close frame. A protocol error ends only its own connection.
//!
//! tungstenite cannot answer a plain HTTP GET: its handshake rejects a request without
//! `Upgrade: websocket` before any callback runs (the manifest says `http = false`).
//! Message and frame limits are raised to 128 MiB (the defaults are 64 MiB and 16 MiB).
//!
//! Usage: echo PORT   (0 picks a free port)
//! Prints `listening on ws://127.0.0.1:PORT` once it accepts connections.

use std::io::Write;
use std::net::{Ipv4Addr, SocketAddr};

use futures_util::{SinkExt, StreamExt};
use tokio::net::{TcpListener, TcpSocket, TcpStream};
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_tungstenite::tungstenite::Error;

const MAX_MESSAGE_BYTES: usize = 128 << 20;
const LISTEN_BACKLOG: u32 = 4096;

async fn echo(stream: TcpStream) -> Result<(), Error> {
    let config = WebSocketConfig::default()
        .max_message_size(Some(MAX_MESSAGE_BYTES))
        .max_frame_size(Some(MAX_MESSAGE_BYTES));
    let mut ws = tokio_tungstenite::accept_async_with_config(stream, Some(config)).await?;
    while let Some(message) = ws.next().await {
        let message = message?;
        if message.is_text() || message.is_binary() {
            ws.send(message).await?;
        }
    }
    Ok(())
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
                eprintln!("rust-tokio-tungstenite: cannot listen on 127.0.0.1:{port}: {e}");
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
                    eprintln!("rust-tokio-tungstenite: accept failed: {e}");
                    tokio::time::sleep(std::time::Duration::from_millis(10)).await;
                    continue;
                }
            };
            let _ = stream.set_nodelay(true);
            // Connection errors (resets when a benchmark client exits) are expected; stay quiet.
            tokio::spawn(async move {
                let _ = echo(stream).await;
            });
        }
    });
}
