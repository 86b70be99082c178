//! The report's lines on what one connection costs in memory: the server's (its RSS growth),
//! the client's (this process's RSS growth once every connection was open) and the kernel's
//! (the machine's slab growth, which holds both ends' sockets when they share the machine).
//! Figures of every run, shown whenever the result has them; they matter most where
//! connections are held idle. Reads only the result file.

use crate::result::RunResult;
use crate::units::format::bytes;

/// `(label, text)` lines: `memory:` per connection, then the totals behind it; none when the
/// result has no memory figure (older files, an unprobed server without client figures).
pub fn memory_lines(result: &RunResult) -> Vec<(&'static str, String)> {
    let (server, client) = (&result.server, &result.client);
    let per_connection = |bytes_each: f64| bytes(bytes_each.round().max(0.0) as u64);
    let mut each = Vec::new();
    if let Some(server) = server.bytes_per_connection {
        each.push(format!("server {}", per_connection(server)));
    }
    if let Some(client) = client.bytes_per_connection {
        each.push(format!("client {}", per_connection(client)));
    }
    if let Some(kernel) = server.kernel_bytes_per_connection {
        each.push(format!("kernel {}", per_connection(kernel)));
    }
    if each.is_empty() {
        return Vec::new();
    }
    let mut totals = Vec::new();
    if let (Some(baseline), Some(connected)) = (client.rss_baseline_bytes, client.rss_connected_bytes) {
        totals.push(format!("client RSS {} → {} once connected", bytes(baseline), bytes(connected)));
    }
    if let Some(slab) = server.kernel_slab_delta_bytes {
        totals.push(format!("kernel slab +{} (the machine's: both ends' sockets)", bytes(slab)));
    }
    let mut lines = vec![("memory:", format!("per connection: {}", each.join(", ")))];
    if !totals.is_empty() {
        lines.push(("", totals.join("; ")));
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixture;

    #[test]
    fn each_side_per_connection_then_the_totals() {
        let result = RunResult::from_outcome(&fixture::closed_loop());
        let lines = memory_lines(&result);
        assert_eq!(
            lines[0],
            ("memory:", "per connection: server 37.5 KiB, client 612 B, kernel 3.91 KiB".into())
        );
        assert_eq!(
            lines[1].1,
            "client RSS 8.00 MiB → 8.58 MiB once connected; kernel slab +3.81 MiB (the machine's: both ends' sockets)"
        );
    }

    #[test]
    fn nothing_without_figures() {
        let result = RunResult::from_outcome(&fixture::open_loop_troubled());
        assert!(memory_lines(&result).is_empty());
    }
}
