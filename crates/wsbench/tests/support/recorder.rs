//! `wsbench record` as a test starts it: the proxy on a free port of 127.0.0.1, its
//! `listening on` line read for the address, stopped by a signal with its summary, and the
//! recording's lines read back as JSON.

use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::Value;

/// A running `wsbench record`; killed on drop if still running.
pub struct Recorder {
    child: Child,
    pub url: String,
    lines: mpsc::Receiver<String>,
}

impl Recorder {
    /// Starts `wsbench record --listen 127.0.0.1:0 ARGS…` and waits for its `listening on`.
    pub fn start(args: &[&str]) -> Recorder {
        let mut child = Command::new(env!("CARGO_BIN_EXE_wsbench"))
            .args(["record", "--listen", "127.0.0.1:0"])
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn wsbench record");
        let (tx, rx) = mpsc::channel();
        for pipe in [
            Box::new(child.stdout.take().unwrap()) as Box<dyn Read + Send>,
            Box::new(child.stderr.take().unwrap()),
        ] {
            let tx = tx.clone();
            std::thread::spawn(move || {
                for line in BufReader::new(pipe).lines().map_while(Result::ok) {
                    let _ = tx.send(line);
                }
            });
        }
        let first = rx.recv_timeout(Duration::from_secs(20)).expect("wsbench record printed nothing");
        let url =
            first.strip_prefix("listening on ").unwrap_or_else(|| panic!("first line: {first}")).to_owned();
        Recorder { child, url, lines: rx }
    }

    /// The proxy's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Sends `signal` and returns the exit code and everything it printed after the first line.
    pub fn stop(mut self, signal: libc::c_int) -> (Option<i32>, String) {
        // SAFETY: signalling a child this test started.
        unsafe { libc::kill(self.child.id() as libc::pid_t, signal) };
        let start = std::time::Instant::now();
        let status = loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                break status;
            }
            assert!(start.elapsed() < Duration::from_secs(20), "wsbench record did not stop");
            std::thread::sleep(Duration::from_millis(20));
        };
        std::thread::sleep(Duration::from_millis(100));
        let printed: Vec<String> = self.lines.try_iter().collect();
        (status.code(), printed.join("\n"))
    }
}

impl Drop for Recorder {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Every line of a recording, parsed (a line that is not JSON fails the test).
pub fn events(file: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(file).unwrap();
    assert!(text.ends_with('\n'), "the file ends with a whole line");
    text.lines().map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}"))).collect()
}
