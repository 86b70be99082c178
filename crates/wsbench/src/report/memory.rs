//! The report's lines on what one connection costs in memory: the server's (its RSS growth),
//! the client's (the growth of the heap this process held in use, from the run's start to
//! every connection open: what earlier runs of the same process freed does not hide in it,
//! as it does in the RSS) and the kernel's
//! (the machine's slab growth, which holds both ends' sockets when they share the machine).
//! Figures of every run; they matter most where connections are held idle. Per connection
//! only from [`MIN_CONNECTIONS`] established connections: below, the fixed costs (a worker's
//! buffers and stack, the allocator's arenas, the server's own start-up growth) are shared
//! by too few connections and make the figure (433 KiB "per connection" at 10) say nothing
//! of what one costs; the totals are printed instead. Reads only the result file.

use crate::result::RunResult;
use crate::units::format::{bytes, group};

/// The fewest established connections whose memory figures are printed per connection.
pub const MIN_CONNECTIONS: u64 = 1_000;

/// `(label, text)` lines: `memory:` per connection, then the totals behind it; none when the
/// result has no memory figure (older files, an unprobed server without client figures).
pub fn memory_lines(result: &RunResult) -> Vec<(&'static str, String)> {
    let (server, client) = (&result.server, &result.client);
    if result.summary.connections.established < MIN_CONNECTIONS {
        return totals_only(result);
    }
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
    let totals = totals(result);
    let mut lines = vec![("memory:", format!("per connection: {}", each.join(", ")))];
    if !totals.is_empty() {
        lines.push(("", totals.join("; ")));
    }
    lines
}

/// A run of too few connections: the totals, and why this run has no figure per connection.
fn totals_only(result: &RunResult) -> Vec<(&'static str, String)> {
    let mut totals = totals(result);
    if let (Some(baseline), Some(peak)) = (result.server.rss_baseline_bytes, result.server.rss_peak_bytes) {
        totals.insert(0, format!("server RSS {} → {} peak", bytes(baseline), bytes(peak)));
    }
    if totals.is_empty() {
        return Vec::new();
    }
    let why = format!(
        "no figure per connection from {}: below {}, fixed costs dominate it",
        match result.summary.connections.established {
            1 => "1 connection".to_owned(),
            n => format!("{} connections", group(n)),
        },
        group(MIN_CONNECTIONS)
    );
    vec![("memory:", totals.join("; ")), ("", why)]
}

/// The totals behind the figures per connection: the client's heap in use (and its RSS)
/// and the kernel's slab.
fn totals(result: &RunResult) -> Vec<String> {
    let mut totals = Vec::new();
    let client = &result.client;
    let rss = match (client.rss_baseline_bytes, client.rss_connected_bytes) {
        (Some(baseline), Some(connected)) => Some(format!("RSS {} → {}", bytes(baseline), bytes(connected))),
        _ => None,
    };
    match (client.heap_baseline_bytes, client.heap_connected_bytes, rss) {
        (Some(baseline), Some(connected), rss) => {
            let rss = rss.map_or(String::new(), |rss| format!(" ({rss})"));
            totals.push(format!(
                "client heap {} → {} once connected{rss}",
                bytes(baseline),
                bytes(connected)
            ));
        }
        (_, _, Some(rss)) => totals.push(format!("client {rss} once connected")),
        _ => {}
    }
    if let Some(slab) = result.server.kernel_slab_delta_bytes {
        totals.push(format!("kernel slab +{} (the machine's: both ends' sockets)", bytes(slab)));
    }
    totals
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
            "client heap 2.00 MiB → 2.58 MiB once connected (RSS 8.00 MiB → 8.67 MiB); kernel slab +3.81 MiB (the machine's: both ends' sockets)"
        );
    }

    #[test]
    fn too_few_connections_give_the_totals_and_the_rule_instead() {
        let mut result = RunResult::from_outcome(&fixture::closed_loop());
        result.summary.connections.established = MIN_CONNECTIONS - 1;
        let lines = memory_lines(&result);
        assert!(
            lines[0].1.starts_with("server RSS ") && lines[0].1.contains("client heap 2.00 MiB → 2.58 MiB")
        );
        assert!(!lines.iter().any(|(_, text)| text.contains("per connection:")), "{lines:?}");
        assert_eq!(
            lines[1].1,
            "no figure per connection from 999 connections: below 1,000, fixed costs dominate it"
        );
        result.summary.connections.established = 20;
        let twenty = memory_lines(&result);
        assert_eq!(
            twenty[1].1,
            "no figure per connection from 20 connections: below 1,000, fixed costs dominate it"
        );
    }

    #[test]
    fn nothing_without_figures() {
        let result = RunResult::from_outcome(&fixture::open_loop_troubled());
        assert!(memory_lines(&result).is_empty());
    }
}
