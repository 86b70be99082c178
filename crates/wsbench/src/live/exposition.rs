//! The run's live figures in the Prometheus text exposition format (version 0.0.4, which
//! OpenMetrics scrapers read too): counters of messages, bytes, connections and errors by
//! kind; gauges of the last second (round trips, connections open, phase) and of the server
//! (RSS; its CPU as a counter); round-trip latency as a classic histogram (cumulative `le`
//! buckets in seconds, `_sum`, `_count`) over every second published so far, warm-up
//! included. Pure: [`Totals::render`] is the page the endpoint serves.

use std::fmt::Write;

use hdrhistogram::Histogram;

use super::Second;
use crate::engine::Phase;
use crate::metrics::new_histogram;
use crate::samples::ServerSample;

/// Upper bounds of the latency buckets, in seconds.
pub const BUCKETS: [f64; 17] = [
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
    30.0,
];

/// What the endpoint shows: the run so far.
#[derive(Debug)]
pub struct Totals {
    connections_planned: u64,
    /// Every published second's round trips.
    latency: Histogram<u64>,
    last: Option<Second>,
    pub server: Option<ServerSample>,
}

impl Totals {
    pub fn new(connections_planned: u64) -> Totals {
        Totals { connections_planned, latency: new_histogram(), last: None, server: None }
    }

    /// The connections the run opens, as given to [`Totals::new`].
    pub fn connections_planned(&self) -> u64 {
        self.connections_planned
    }

    /// One more second, published as `second`, whose round trips took `latency`.
    pub fn add(&mut self, latency: &Histogram<u64>, second: &Second) {
        self.latency.add(latency).expect("histograms share bounds");
        self.last = Some(second.clone());
    }

    /// The exposition text.
    pub fn render(&self) -> String {
        let mut page = Page(String::with_capacity(4096));
        let counters = self.last.as_ref().map(|s| s.counters.clone()).unwrap_or_default();
        let errors = self.last.as_ref().map(|s| s.errors.clone()).unwrap_or_default();
        for (name, help, value) in [
            ("messages_sent", "Messages sent.", counters.messages_sent),
            ("messages_received", "Messages received from the server.", counters.messages_received),
            ("bytes_sent", "Bytes written to the sockets.", counters.bytes_sent),
            ("bytes_received", "Bytes read from the sockets.", counters.bytes_received),
            ("connections_established", "Connections established.", counters.connections_established),
            (
                "connections_failed",
                "Connections attempted and never established.",
                counters.connections_failed(),
            ),
            ("reconnections", "Attempts to reopen a lost connection (--reconnect).", counters.reconnections),
        ] {
            page.family(&format!("wsbench_{name}_total"), "counter", help);
            page.sample(&format!("wsbench_{name}_total"), "", value as f64);
        }
        page.family(
            "wsbench_errors_total",
            "counter",
            "Errors by kind (connect, handshake, close code, ...).",
        );
        for (kind, count) in errors {
            page.sample("wsbench_errors_total", &format!("kind=\"{kind}\""), count as f64);
        }
        self.gauges(&mut page);
        self.histogram(&mut page);
        page.0
    }

    fn gauges(&self, page: &mut Page) {
        let last = self.last.as_ref();
        let gauge = |page: &mut Page, name: &str, help: &str, value: f64| {
            page.family(name, "gauge", help);
            page.sample(name, "", value);
        };
        gauge(
            page,
            "wsbench_connections_planned",
            "Connections the run opens.",
            self.connections_planned as f64,
        );
        let open = last.map_or(0, |s| s.connections_open);
        gauge(page, "wsbench_connections_open", "Connections open in the last complete second.", open as f64);
        let rate = last.map_or(0, |s| s.round_trips);
        gauge(
            page,
            "wsbench_round_trips_per_second",
            "Round trips in the last complete second.",
            rate as f64,
        );
        let elapsed = last.map_or(0, |s| s.second + 1);
        gauge(page, "wsbench_elapsed_seconds", "Complete seconds of the run so far.", elapsed as f64);
        page.family("wsbench_phase", "gauge", "1 for the phase of the last complete second, else 0.");
        for phase in Phase::ALL {
            let now = last.is_some_and(|s| s.phase == phase);
            page.sample("wsbench_phase", &format!("phase=\"{}\"", phase.name()), if now { 1.0 } else { 0.0 });
        }
        if let Some(server) = &self.server {
            gauge(
                page,
                "wsbench_server_rss_bytes",
                "Resident memory of the server's processes.",
                server.rss_bytes as f64,
            );
            page.family("wsbench_server_cpu_seconds_total", "counter", "CPU time of the server's processes.");
            page.sample("wsbench_server_cpu_seconds_total", "", server.cpu_seconds);
        }
    }

    fn histogram(&self, page: &mut Page) {
        let name = "wsbench_round_trip_seconds";
        page.family(name, "histogram", "Round-trip latency of every second so far (warm-up included).");
        for bound in BUCKETS {
            let below = self.latency.count_between(0, (bound * 1e6) as u64);
            page.sample(&format!("{name}_bucket"), &format!("le=\"{bound}\""), below as f64);
        }
        let count = self.latency.len();
        page.sample(&format!("{name}_bucket"), "le=\"+Inf\"", count as f64);
        page.sample(&format!("{name}_sum"), "", self.latency.mean() * count as f64 / 1e6);
        page.sample(&format!("{name}_count"), "", count as f64);
    }
}

struct Page(String);

impl Page {
    fn family(&mut self, name: &str, kind: &str, help: &str) {
        let _ = writeln!(self.0, "# HELP {name} {help}\n# TYPE {name} {kind}");
    }

    fn sample(&mut self, name: &str, labels: &str, value: f64) {
        let labels = if labels.is_empty() { String::new() } else { format!("{{{labels}}}") };
        let _ = writeln!(self.0, "{name}{labels} {value}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::{Counters, record_us};

    #[test]
    fn buckets_are_cumulative_and_end_at_the_count() {
        let mut latency = new_histogram();
        for us in [50, 200, 200, 900, 40_000] {
            record_us(&mut latency, us);
        }
        let second = Second {
            second: 0,
            phase: Phase::Measured,
            stage: None,
            round_trips: 5,
            connections_open: 1,
            awaiting: false,
            reconnects: 0,
            stall_s: 0,
            p50_us: 200,
            p90_us: 900,
            p99_us: 40_000,
            max_us: 40_000,
            counters: Counters { messages_received: 5, connect_timeouts: 2, ..Counters::default() },
            errors: [("connect_timeout".to_owned(), 2)].into(),
            remaining_secs: Some(1),
            shards: None,
        };
        let mut totals = Totals::new(1);
        totals.add(&latency, &second);
        let page = totals.render();
        assert!(page.contains("wsbench_round_trip_seconds_bucket{le=\"0.0001\"} 1\n"), "{page}");
        assert!(page.contains("wsbench_round_trip_seconds_bucket{le=\"0.00025\"} 3\n"), "{page}");
        assert!(page.contains("wsbench_round_trip_seconds_bucket{le=\"0.001\"} 4\n"), "{page}");
        assert!(page.contains("wsbench_round_trip_seconds_bucket{le=\"0.05\"} 5\n"), "{page}");
        assert!(page.contains("wsbench_round_trip_seconds_bucket{le=\"+Inf\"} 5\n"), "{page}");
        assert!(page.contains("wsbench_round_trip_seconds_count 5\n"), "{page}");
        assert!(page.contains("wsbench_errors_total{kind=\"connect_timeout\"} 2\n"), "{page}");
        assert!(page.contains("wsbench_phase{phase=\"measured\"} 1\n"), "{page}");
        assert!(page.contains("wsbench_messages_received_total 5\n"), "{page}");
    }

    #[test]
    fn every_metric_the_grafana_dashboard_reads_is_served() {
        let dashboard: serde_json::Value =
            serde_json::from_str(include_str!("../../../../docs/grafana-dashboard.json")).unwrap();
        let mut totals = Totals::new(1);
        totals.server =
            Some(ServerSample { t_ms: 0, rss_bytes: 1, cpu_seconds: 1.0, threads: 1, fds: 1, slab_bytes: 0 });
        let page = totals.render();
        let panels = dashboard["panels"].as_array().unwrap();
        let mut names = 0;
        for target in panels.iter().flat_map(|p| p["targets"].as_array().unwrap()) {
            let expr = target["expr"].as_str().unwrap();
            for (start, _) in expr.match_indices("wsbench_") {
                let name: String =
                    expr[start..].chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
                let served = page.contains(&format!("\n{name}")) || page.contains(&format!("# TYPE {name} "));
                assert!(served, "the dashboard reads {name}, which is not served");
                names += 1;
            }
        }
        assert!(names >= 10, "{names}");
    }
}
