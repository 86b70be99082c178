//! The flags of `wsbench record` (not part of the library): where to listen, the upstream
//! server, the file, and the bounds of the recording. The proxy itself is the library's
//! (`wsbench::record`), which checks every bound before it listens.

use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use clap::Args;

use wsbench::config::Target;
use wsbench::error::CommandError;
use wsbench::record::{RecordConfig, Tally};
use wsbench::units::format::group;
use wsbench::units::{UnitError, parse_bytes};

use crate::commands::Output;

#[derive(Debug, Args)]
pub struct RecordArgs {
    /// The address clients connect to (port 0 picks a free one; the `listening on` line
    /// says which).
    #[arg(long, default_value = "127.0.0.1:8080")]
    pub listen: SocketAddr,
    /// The server to forward to, `ws://HOST:PORT[/path]` or `wss://…`: each connection
    /// opens the client's path and query there (after the URL's path, when it has one).
    #[arg(long, value_name = "URL")]
    pub upstream: String,
    /// The JSONL recording to write (a regular file; replaced), one event a line, written as
    /// each message is forwarded.
    #[arg(long, value_name = "FILE")]
    pub out: PathBuf,
    /// Keep Authorization, Cookie and other secret headers and query values in the file;
    /// without it they are written as <redacted>.
    #[arg(long)]
    pub record_secrets: bool,
    /// Accept any certificate from a wss upstream (a self-signed test server).
    #[arg(long)]
    pub insecure: bool,
    /// Connections forwarded at once (1 to 5,000); more are answered 503.
    #[arg(long, default_value_t = 1000)]
    pub max_connections: u64,
    /// Largest message recorded (at most 1MiB, what import reads); a longer one is forwarded
    /// and noted as skipped.
    #[arg(long, value_parser = bytes, default_value = "1MiB")]
    pub max_message: u64,
    /// Messages recorded over all connections (1 to 100,000, what import reads); then
    /// recording stops and forwarding goes on.
    #[arg(long, default_value_t = 100_000)]
    pub max_messages: u64,
    /// Size of the file (at most 256MiB, what import reads); then recording stops and
    /// forwarding goes on.
    #[arg(long, value_parser = bytes, default_value = "256MiB")]
    pub max_bytes: u64,
}

fn bytes(text: &str) -> Result<u64, UnitError> {
    parse_bytes(text)
}

impl RecordArgs {
    /// Records until `stop` (a signal), then says what was recorded.
    pub fn record(self, stop: Arc<AtomicBool>) -> Result<Output, CommandError> {
        let out = self.out.clone();
        let config = RecordConfig {
            listen: self.listen,
            upstream: Target::parse(&self.upstream)?,
            out: self.out,
            record_secrets: self.record_secrets,
            insecure: self.insecure,
            max_connections: self.max_connections,
            max_message: self.max_message,
            max_messages: self.max_messages,
            max_bytes: self.max_bytes,
        };
        let upstream = config.upstream.url.clone();
        let tally = wsbench::record::record(config, stop, |addr| {
            let mut stdout = std::io::stdout().lock();
            let _ = writeln!(
                stdout,
                "listening on ws://{addr}\nforwarding to {upstream}, recording to {}",
                out.display()
            );
            let _ = stdout.flush();
        })?;
        Ok(Output::success(summary(&tally, &out)))
    }
}

fn summary(tally: &Tally, out: &std::path::Path) -> String {
    let mut text = format!(
        "recorded {} connections, {} messages ({} bytes) to {}\n",
        group(tally.connections),
        group(tally.messages),
        group(tally.bytes),
        out.display()
    );
    if tally.upstream_failures > 0 {
        text += &format!(
            "{} connections could not reach the upstream (answered 502)\n",
            group(tally.upstream_failures)
        );
    }
    if let Some(why) = &tally.stopped {
        text += &format!("recording stopped early: {why}\n");
    }
    text
}
