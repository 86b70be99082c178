//! The terminal report: what a person reads after `wsbench run`, compact like wrk's or
//! oha's. Numbers in human units (µs/ms/s, MiB, thousands separators), problems (errors,
//! interruption, a client-bound run) impossible to miss. Plain text unless colour is asked
//! for; the golden files in `tests/golden/` pin the layout.

use std::fmt::Write as _;

use crate::result::{LatencyStats, RunResult};
use crate::units::format::{bytes, bytes_per_sec, group, micros, plural, rate, seconds, sig3};

const LABEL: usize = 14;
const COLUMN: usize = 9;
const WIDTH: usize = 100;

const BOLD: &str = "1";
const RED: &str = "1;31";
const YELLOW: &str = "1;33";

/// The report, without colours.
pub fn render_text(result: &RunResult) -> String {
    render_text_with(result, false)
}

/// The report; `color` adds ANSI colours (for a terminal).
pub fn render_text_with(result: &RunResult, color: bool) -> String {
    let paint = Paint(color);
    let mut out = String::new();
    header(&mut out, result, paint);
    headline(&mut out, result, paint);
    latency_table(&mut out, result);
    traffic(&mut out, result, paint);
    for (label, text) in super::endpoint::endpoint_lines(result) {
        line(&mut out, label, &text);
    }
    thresholds(&mut out, result, paint);
    server(&mut out, result);
    client_cpu(&mut out, result);
    for (label, text) in super::memory::memory_lines(result) {
        line(&mut out, label, &text);
    }
    for (label, text) in super::scenario_lines(result) {
        line(&mut out, label, &text);
    }
    shards(&mut out, result, paint);
    out.push_str(&super::stages::text_block(result).unwrap_or_default());
    let scenario = crate::scenario::of_result(result);
    // Little's law holds when a fixed number of exchanges is always outstanding.
    if scenario.is_none_or(|scenario| scenario.littles_law()) {
        littles_law(&mut out, result);
    }
    if let Some(block) = scenario.and_then(|scenario| scenario.report_block(result)) {
        out.push_str(&block);
    }
    out
}

/// What the headline rate counts: round trips, a fan-out's deliveries, a flow's matched
/// replies.
fn exchanges(result: &RunResult) -> &'static str {
    super::exchange(result).many
}

/// One of what the headline counts: "round trip", "delivery", "matched reply".
fn exchange(result: &RunResult) -> &'static str {
    super::exchange(result).one
}

/// ANSI styling, or none.
#[derive(Debug, Clone, Copy)]
struct Paint(bool);

impl Paint {
    fn paint(self, style: &str, text: &str) -> String {
        if self.0 { format!("\x1b[{style}m{text}\x1b[0m") } else { text.to_owned() }
    }
}

/// What ran against what, for how long, how wide.
fn header(out: &mut String, result: &RunResult, paint: Paint) {
    let summary = &result.summary;
    let kind = if result.target.builtin { " (built-in server)" } else { "" };
    let title = format!("wsbench {} → {}{kind}", result.scenario, result.target.url);
    let _ = write!(out, "{}", paint.paint(BOLD, &title));
    if result.interrupted {
        let _ = write!(out, "  {}", paint.paint(RED, "[INTERRUPTED: partial results]"));
    }
    if let Some(partial) = &result.partial {
        let text = format!("[PARTIAL: {}; the figures cover those shards only]", partial.describe());
        let _ = write!(out, "  {}", paint.paint(RED, &text));
    }
    if let Some(early) = &result.ended_early {
        let text = format!(
            "[ENDED EARLY: {}, {} into the {} measured window; its rates are over that]",
            early.reason,
            seconds(result.measured_s),
            seconds(early.planned_measured_s)
        );
        let _ = write!(out, "  {}", paint.paint(RED, &text));
    }
    if let Some(reason) = crate::result::no_request_answered_reason(result) {
        let _ = write!(out, "  {}", paint.paint(RED, &format!("[FAILED: {reason}]")));
    }
    out.push('\n');
    let shape = match crate::scenario::of_result(result).and_then(|scenario| scenario.load_shape(result)) {
        Some(shape) => shape,
        None => format!(
            "{} × {} in flight",
            plural(summary.littles_law.connections, "connection", "connections"),
            if summary.littles_law.in_flight == u64::MAX {
                "uncapped".to_owned()
            } else {
                group(summary.littles_law.in_flight)
            },
        ),
    };
    let _ = writeln!(
        out,
        "{} elapsed, {} measured after warm-up; {shape}",
        seconds(result.elapsed_s),
        seconds(result.measured_s),
    );
    out.push('\n');
}

/// The headline rate and the warning that qualifies it.
fn headline(out: &mut String, result: &RunResult, paint: Paint) {
    let per_sec = result.summary.exchanges_per_sec;
    let mut headline = format!("{}/s (after warm-up): {}", exchanges(result), rate(per_sec));
    if let Some(suffix) =
        crate::scenario::of_result(result).and_then(|scenario| scenario.headline_suffix(result))
    {
        headline.push_str(&suffix);
    }
    let _ = writeln!(out, "{}", paint.paint(BOLD, &headline));
    let load = result.client.machine_load.as_ref();
    let warnings = [
        result.client.bound_reason.as_ref().filter(|_| result.client.bound),
        load.and_then(|load| load.busy.as_ref()),
        load.and_then(|load| load.shared_cpus.as_ref()),
        result.client.machine_network.as_ref().and_then(|network| network.warning.as_ref()),
    ];
    let awaited = super::awaited::warnings(result);
    for reason in warnings.into_iter().flatten().chain(&awaited) {
        for line in wrap(&format!("WARNING: {reason}"), WIDTH, "         ") {
            let _ = writeln!(out, "{}", paint.paint(YELLOW, &line));
        }
    }
    out.push('\n');
}

/// Latency percentiles: corrected, uncorrected when it differs, send lag when measured.
fn latency_table(out: &mut String, result: &RunResult) {
    let summary = &result.summary;
    if summary.latency_us.count == 0 {
        line(out, "latency:", &format!("no {} measured", exchanges(result)));
        return;
    }
    let headings = ["min", "mean", "stddev", "p50", "p90", "p95", "p99", "p99.9", "max"];
    let header: String = headings.iter().map(|h| format!("{h:<COLUMN$}")).collect();
    line(out, "", &header);
    line(out, "latency", &latency_row(&summary.latency_us));
    if summary.latency_uncorrected_us != summary.latency_us {
        line(out, "uncorrected", &latency_row(&summary.latency_uncorrected_us));
    }
    if summary.send_lag_us.count > 0 {
        line(out, "send lag", &latency_row(&summary.send_lag_us));
    }
}

/// Connect times, connections, errors and messages.
fn traffic(out: &mut String, result: &RunResult, paint: Paint) {
    let summary = &result.summary;
    let connect = &summary.connect_us;
    if connect.count == 0 {
        line(out, "connect:", "no connection established");
    } else {
        let (p50, p99, max) =
            (micros(connect.p50 as f64), micros(connect.p99 as f64), micros(connect.max as f64));
        line(out, "connect:", &format!("p50 {p50}, p99 {p99}, max {max}"));
    }
    let connections = &summary.connections;
    let reconnections = match result.counters.reconnections {
        0 => String::new(),
        n => format!(" ({})", plural(n, "reconnection", "reconnections")),
    };
    let unfinished = match connections.unfinished {
        0 => String::new(),
        n => format!(", {} still opening when the run ended", group(n)),
    };
    let text = format!(
        "{} attempted, {} established, {} failed{unfinished}{reconnections}",
        group(connections.attempted),
        group(connections.established),
        group(connections.failed),
    );
    line(out, "connections:", &text);
    let transport = &summary.transport;
    if transport.is_shared() {
        let (kind, carried) = match transport.quic_connections {
            0 => ("TCP", plural(transport.tcp_connections, "TCP connection", "TCP connections")),
            n => ("QUIC", plural(n, "QUIC connection", "QUIC connections")),
        };
        let text = format!(
            "{}: WebSockets as streams, {} per {kind} connection; {carried} carried them{}",
            transport_name(&transport.name),
            group(transport.streams_per_connection),
            quic_packets(transport),
        );
        line(out, "transport:", &text);
    }
    if summary.errors.is_empty() {
        line(out, "errors:", "none");
    } else {
        let errors: Vec<String> =
            summary.errors.iter().map(|(kind, n)| error_with_detail(result, kind, *n)).collect();
        line(out, "errors:", &paint.paint(RED, &errors.join(", ")));
    }
    for (label, text) in super::awaited::awaited_lines(result) {
        line(out, label, &text);
    }
    let messages = &summary.messages;
    let mut text = format!(
        "{} sent, {} received, {} unanswered{}",
        group(messages.sent),
        group(messages.received),
        group(messages.unanswered),
        super::awaited::unanswered_note(result)
    );
    if messages.unsent > 0 {
        text.push_str(&format!(", {} unsent (queued, never taken by the socket)", group(messages.unsent)));
    }
    line(out, "messages:", &text);
    for (label, text) in super::recovery::recovery_lines(result) {
        line(out, label, &text);
    }
    transfer(out, result);
    if let Some(compression) = &summary.compression {
        compression_lines(out, compression);
    }
}

/// `kind count`, and what the server said about it when it said something (`"…"`,
/// shortened to [`WORDS_SHOWN`] characters).
pub fn error_with_detail(result: &RunResult, kind: &str, count: u64) -> String {
    match result.counters.error_detail(kind) {
        Some(detail) if detail.chars().count() > WORDS_SHOWN => {
            let shortened: String = detail.chars().take(WORDS_SHOWN).chain(['…']).collect();
            format!("{kind} {} ({shortened:?})", group(count))
        }
        Some(detail) => format!("{kind} {} ({detail:?})", group(count)),
        None => format!("{kind} {}", group(count)),
    }
}

/// How much of the server's words the errors line shows.
const WORDS_SHOWN: usize = 100;

/// `; QUIC packets: L lost of S sent (P %)` when QUIC connections carried the run and
/// counted their packets; empty otherwise.
fn quic_packets(transport: &crate::result::TransportSummary) -> String {
    if transport.quic_connections == 0 || transport.quic_packets_sent == 0 {
        return String::new();
    }
    let share = transport.quic_packets_lost as f64 * 100.0 / transport.quic_packets_sent as f64;
    format!(
        "; QUIC packets: {} lost of {} sent ({share:.1} %)",
        group(transport.quic_packets_lost),
        group(transport.quic_packets_sent),
    )
}

/// permessage-deflate: what was negotiated, and wire bytes against payload bytes each way.
/// A transport as people call it (its registry's title, `HTTP/2 (RFC 8441)`; a name this
/// wsbench does not know as it is).
fn transport_name(name: &str) -> String {
    crate::engine::dial::by_name(name).map_or(name, |dial| dial.title()).to_owned()
}

fn compression_lines(out: &mut String, compression: &crate::result::CompressionSummary) {
    let negotiated: Vec<String> = compression
        .negotiated
        .iter()
        .map(|(answer, n)| format!("{answer} ({})", plural(*n, "connection", "connections")))
        .collect();
    line(out, "compression:", &negotiated.join(", "));
    let (wire, payload) = (&compression.wire_bytes, &compression.payload_bytes);
    let text = format!(
        "sent {} for {} of payload ({}×), received {} for {} ({}×); {} echoes compressed",
        bytes(wire.sent),
        bytes(payload.sent),
        sig3(compression.ratio_sent),
        bytes(wire.received),
        bytes(payload.received),
        sig3(compression.ratio_received),
        group(compression.compressed_messages_received),
    );
    line(out, "wire bytes:", &text);
}

/// Bytes each way over the whole run, warm-up included, and their rate over the elapsed time
/// (as wrk's Transfer/sec): sent counts the message frames written, received everything read
/// (the upgrade response included), both before TLS.
fn transfer(out: &mut String, result: &RunResult) {
    let counted = &result.summary.bytes;
    let elapsed = result.elapsed_s;
    let per_sec = |n: u64| if elapsed > 0.0 { bytes_per_sec(n as f64 / elapsed) } else { "n/a".to_owned() };
    let text = format!(
        "{} sent ({}), {} received ({}) over {}",
        bytes(counted.sent),
        per_sec(counted.sent),
        bytes(counted.received),
        per_sec(counted.received),
        seconds(elapsed)
    );
    line(out, "transfer:", &text);
}

/// One line per `--threshold`: passed or FAILED, and the value measured for it.
fn thresholds(out: &mut String, result: &RunResult, paint: Paint) {
    for (n, judged) in result.summary.thresholds.iter().enumerate() {
        let label = if n == 0 { "thresholds:" } else { "" };
        let metric = judged.expression.parse::<crate::config::Threshold>().map(|t| t.metric);
        let value = match (judged.value, metric) {
            (None, _) => "nothing measured".to_owned(),
            (Some(n), Ok(crate::config::Metric::Errors | crate::config::Metric::Scenario(_))) => {
                group(n as u64)
            }
            (Some(n), Ok(crate::config::Metric::RoundTripsPerSec)) => format!("{}/s", rate(n)),
            (Some(us), _) => micros(us),
        };
        let verdict = if judged.passed { "✓ passed".to_owned() } else { paint.paint(RED, "✗ FAILED") };
        line(out, label, &format!("{verdict}  {}  (measured {value})", judged.expression));
    }
}

/// The most items of a list that a report line writes out one by one: a run of 60 shards or
/// a server of 61 processes gets a summary instead of a line that fills the screen.
const LIST_MAX: usize = 8;

/// "pid 4242" or "pid 1, 2, 3"; past [`LIST_MAX`] pids, "61 processes, pid 100 … 160".
fn pid_list(pids: &[u32]) -> String {
    match pids {
        [first, .., last] if pids.len() > LIST_MAX => {
            format!("{} processes, pid {first} … {last}", group(pids.len() as u64))
        }
        _ => format!("pid {}", pids.iter().map(u32::to_string).collect::<Vec<_>>().join(", ")),
    }
}

/// The server's memory and CPU, or why it was not probed.
fn server(out: &mut String, result: &RunResult) {
    let server = &result.server;
    let (true, Some(baseline), Some(peak), Some(cpu)) =
        (server.probed, server.rss_baseline_bytes, server.rss_peak_bytes, server.cpu_seconds)
    else {
        let reason = server.unprobed_reason.as_deref().unwrap_or("no samples were taken");
        let _ = writeln!(out, "server: not probed ({reason})");
        return;
    };
    let mut first = format!("RSS {} → {}", bytes(baseline), bytes(peak));
    let _ = write!(first, " ({}", pid_list(&server.pids));
    if let Some(found_by) = &server.found_by {
        let _ = write!(first, ", {found_by}");
    }
    first.push(')');
    if let (Some(threads), Some(fds)) = (server.threads_peak, server.fds_peak) {
        let _ = write!(first, ", peak {} threads, {} fds", group(threads), group(fds));
    }
    line(out, "server:", &first);
    let per_mb = match server.connections_per_mb {
        Some(per_mb) => format!("{} connections/MB", sig3(per_mb)),
        None => "connections/MB n/a (RSS did not grow)".to_owned(),
    };
    let per_cpu = match server.exchanges_per_cpu_second {
        Some(per_cpu) => format!("{} {}/CPU-second", rate(per_cpu), exchanges(result)),
        None => format!("{}/CPU-second n/a (no CPU used)", exchanges(result)),
    };
    line(out, "", &format!("CPU {}, {per_mb}, {per_cpu}", seconds(cpu)));
}

/// The client's CPU: its user/system split and µs per round trip beside the server's,
/// the one figure that says which side a round trip costs more (nothing for files written
/// before the client's CPU was split).
fn client_cpu(out: &mut String, result: &RunResult) {
    let client = &result.client;
    if client.cpu_seconds <= 0.0 {
        return;
    }
    let mut text = format!(
        "CPU {} (user {}, system {})",
        seconds(client.cpu_seconds),
        seconds(client.user_seconds),
        seconds(client.system_seconds)
    );
    if let Some(us) = client.cpu_us_per_round_trip {
        let _ = write!(text, ", {} µs per {}", sig3(us), exchange(result));
        if let Some(server_us) = result.server.cpu_us_per_round_trip.filter(|&us| us > 0.0) {
            let _ = write!(text, " (server {} µs, client ÷ server {:.2})", sig3(server_us), us / server_us);
        }
    }
    if let Some(us) = client.cpu_us_per_paced_message {
        let _ = write!(text, ", {} µs per paced message", sig3(us));
    }
    let mut backends: Vec<&str> =
        client.workers.iter().map(|w| w.io.as_str()).filter(|io| !io.is_empty()).collect();
    backends.sort_unstable();
    backends.dedup();
    if !backends.is_empty() {
        let _ = write!(text, "; I/O {}", backends.join(", "));
    }
    line(out, "client:", &text);
}

/// A merged result: which shards it is made of, and which of them died.
fn shards(out: &mut String, result: &RunResult, paint: Paint) {
    if result.shards.is_empty() {
        return;
    }
    let mut hosts: Vec<&str> = result.shards.iter().map(|s| s.host.as_str()).collect();
    hosts.sort_unstable();
    hosts.dedup();
    let rates: Vec<f64> = result.shards.iter().map(|s| s.exchanges_per_sec).collect();
    let rates = if rates.len() <= LIST_MAX {
        rates.iter().map(|&r| rate(r)).collect::<Vec<_>>().join(" + ")
    } else {
        let (min, max) = rates.iter().fold((f64::MAX, f64::MIN), |(lo, hi), &r| (lo.min(r), hi.max(r)));
        format!("{} to {} per shard", rate(min), rate(max))
    };
    let hosts = if hosts.len() <= LIST_MAX {
        hosts.join(", ")
    } else {
        format!("{}, … ({} hosts)", hosts[..LIST_MAX - 1].join(", "), group(hosts.len() as u64))
    };
    let text = format!("{} merged (on {hosts}), {}/s {rates}", result.shards.len(), exchanges(result));
    line(out, "shards:", &text);
    for shard in &result.shards {
        if let Some(died) = &shard.died {
            let name = shard.shard.as_deref().unwrap_or(&shard.file);
            line(out, "", &paint.paint(RED, &format!("shard {name} died ({died}): partial result")));
        }
    }
}

/// Little's law holds for a closed loop; an open loop's concurrency is not fixed.
fn littles_law(out: &mut String, result: &RunResult) {
    let law = &result.summary.littles_law;
    let open_loop = result.config.get("message_interval").is_some_and(|v| !v.is_null());
    match law.predicted_mean_latency_us {
        _ if open_loop => {}
        // The concurrency changes from stage to stage: one prediction per stage.
        _ if !result.stages.is_empty() => {
            out.push_str(&super::stages::littles_law_block(result, law.in_flight))
        }
        Some(predicted) => {
            let _ = writeln!(
                out,
                "Little's law: {} × {} in flight ÷ {}/s = {} predicted mean, {} measured",
                plural(law.connections, "connection", "connections"),
                law.in_flight,
                rate(law.throughput_per_sec),
                micros(predicted),
                micros(law.measured_mean_latency_us)
            );
        }
        None => {
            let _ = writeln!(out, "Little's law: no prediction (no round trips were measured)");
        }
    }
}

/// One labelled line; an empty label continues the previous one.
fn line(out: &mut String, label: &str, text: &str) {
    let _ = writeln!(out, "{}", format!("{label:<LABEL$}{text}").trim_end());
}

fn latency_row(stats: &LatencyStats) -> String {
    let p = |value: u64| value as f64;
    [
        p(stats.min),
        stats.mean,
        stats.stddev,
        p(stats.p50),
        p(stats.p90),
        p(stats.p95),
        p(stats.p99),
        p(stats.p999),
        p(stats.max),
    ]
    .iter()
    .map(|us| format!("{:<COLUMN$}", micros(*us)))
    .collect()
}

/// Word-wraps `text` to `width` columns, continuing lines after `indent`.
fn wrap(text: &str, width: usize, indent: &str) -> Vec<String> {
    let mut lines = Vec::new();
    let mut current = String::new();
    for word in text.split_whitespace() {
        let prefix = if lines.is_empty() { "" } else { indent };
        if !current.is_empty() && prefix.len() + current.chars().count() + 1 + word.chars().count() > width {
            lines.push(format!("{prefix}{current}"));
            current.clear();
        }
        if !current.is_empty() {
            current.push(' ');
        }
        current.push_str(word);
    }
    if !current.is_empty() {
        let prefix = if lines.is_empty() { "" } else { indent };
        lines.push(format!("{prefix}{current}"));
    }
    lines
}

#[cfg(test)]
#[path = "text_tests.rs"]
mod tests;
