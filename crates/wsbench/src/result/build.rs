//! Turning what the engine measured ([`RunOutcome`]) into the numbers the result file
//! reports: percentiles, rates, Little's law, the server's resource use from the
//! probe's raw samples, and whether the client was the bottleneck.

use hdrhistogram::Histogram;

use std::collections::BTreeMap;

use serde_json::Value;

use super::{
    ByteCounts, ClientSummary, ConnectStats, ConnectionCounts, EncodedHistograms, LatencyStats, LittlesLaw,
    MessageCounts, RunResult, SCHEMA_VERSION, ServerSummary, Summary, Target, TimelinePoint,
    encode_histogram,
};
use crate::metrics::{Metrics, SectionHistograms};
use crate::samples::{ClientMemory, RunOutcome, ServerReport, WorkerCpu};
use crate::units::format::micros;

/// `x`, or 0 when it is NaN or infinite (JSON has no such numbers).
fn finite(x: f64) -> f64 {
    if x.is_finite() { x } else { 0.0 }
}

impl LatencyStats {
    pub fn from_histogram(histogram: &Histogram<u64>) -> LatencyStats {
        if histogram.is_empty() {
            return LatencyStats::default();
        }
        let q = |quantile: f64| histogram.value_at_quantile(quantile);
        LatencyStats {
            count: histogram.len(),
            min: histogram.min(),
            mean: finite(histogram.mean()),
            stddev: finite(histogram.stdev()),
            p50: q(0.5),
            p75: q(0.75),
            p90: q(0.9),
            p95: q(0.95),
            p99: q(0.99),
            p999: q(0.999),
            p9999: q(0.9999),
            max: histogram.max(),
        }
    }
}

impl ConnectStats {
    pub fn from_histogram(histogram: &Histogram<u64>) -> ConnectStats {
        if histogram.is_empty() {
            return ConnectStats::default();
        }
        ConnectStats {
            count: histogram.len(),
            min: histogram.min(),
            mean: finite(histogram.mean()),
            p50: histogram.value_at_quantile(0.5),
            p90: histogram.value_at_quantile(0.9),
            p99: histogram.value_at_quantile(0.99),
            max: histogram.max(),
        }
    }
}

impl LittlesLaw {
    /// `rate` in exchanges per second, `measured_mean_us` the mean latency.
    pub fn new(connections: u64, in_flight: u64, rate: f64, measured_mean_us: f64) -> LittlesLaw {
        let rate = finite(rate);
        // An uncapped open loop (in_flight = u64::MAX) has no fixed concurrency to predict from.
        let predicted =
            (rate > 0.0 && in_flight != u64::MAX).then(|| connections as f64 * in_flight as f64 / rate * 1e6);
        let ratio = predicted.filter(|p| *p > 0.0).map(|p| finite(measured_mean_us / p));
        LittlesLaw {
            connections,
            in_flight,
            throughput_per_sec: rate,
            predicted_mean_latency_us: predicted,
            measured_mean_latency_us: finite(measured_mean_us),
            ratio,
        }
    }
}

impl LittlesLaw {
    /// The law without its prediction when `varying`: a run whose concurrency changed over
    /// it (stages) has no one concurrency to predict its mean latency from; each stage's
    /// mean connections are in its figures, and the report predicts per stage.
    pub fn varying_if(self, varying: bool) -> LittlesLaw {
        match varying {
            true => LittlesLaw { predicted_mean_latency_us: None, ratio: None, ..self },
            false => self,
        }
    }
}

impl ServerSummary {
    /// Derives the server's numbers from the probe's raw samples. `established` and
    /// `measured_exchanges` come from the client side.
    pub fn from_report(report: &ServerReport, established: u64, measured_exchanges: u64) -> ServerSummary {
        let samples = &report.samples;
        if samples.is_empty() {
            let reason = report.unprobed_reason.clone().unwrap_or_else(|| {
                if report.pids.is_empty() { "no server process was found" } else { "no samples were taken" }
                    .to_owned()
            });
            return ServerSummary {
                probed: false,
                pids: report.pids.clone(),
                found_by: report.found_by.clone(),
                unprobed_reason: Some(reason),
                rss_baseline_bytes: None,
                rss_peak_bytes: None,
                cpu_seconds: None,
                threads_peak: None,
                fds_peak: None,
                connections_per_mb: None,
                exchanges_per_cpu_second: None,
                samples: Vec::new(),
                cpu_us_per_round_trip: None,
                bytes_per_connection: None,
                kernel_slab_delta_bytes: None,
                kernel_bytes_per_connection: None,
                tls_handshakes: None,
            };
        };
        ServerSummary {
            probed: true,
            pids: report.pids.clone(),
            found_by: report.found_by.clone(),
            unprobed_reason: None,
            rss_baseline_bytes: report.rss_baseline_bytes(),
            rss_peak_bytes: report.rss_peak_bytes(),
            cpu_seconds: Some(finite(report.cpu_seconds().unwrap_or(0.0))),
            threads_peak: report.threads_peak(),
            fds_peak: report.fds_peak(),
            connections_per_mb: report.connections_per_mb(established),
            exchanges_per_cpu_second: report.exchanges_per_cpu_second(measured_exchanges),
            samples: samples.clone(),
            cpu_us_per_round_trip: None,
            bytes_per_connection: report.bytes_per_connection(established),
            kernel_slab_delta_bytes: report.kernel_slab_delta_bytes(),
            kernel_bytes_per_connection: report.kernel_bytes_per_connection(established),
            tls_handshakes: report.tls_handshakes.as_deref().copied(),
        }
    }

    /// Sets the server's CPU µs per round trip from the echoes the client received.
    pub fn per_round_trip(mut self, round_trips: u64) -> ServerSummary {
        self.cpu_us_per_round_trip =
            self.cpu_seconds.and_then(|cpu| crate::client_cpu::cpu_us_per_round_trip(cpu, round_trips));
        self
    }
}

impl ClientSummary {
    /// `round_trips`: every echo received (the basis of CPU per round trip).
    pub fn from_workers(workers: &[WorkerCpu], round_trips: u64) -> ClientSummary {
        let bound_reason = crate::client_cpu::client_bound(workers);
        let sum = |part: fn(&WorkerCpu) -> f64| finite(workers.iter().map(part).sum());
        let cpu_seconds = sum(|w| w.cpu_seconds);
        ClientSummary {
            bound: bound_reason.is_some(),
            bound_reason,
            workers: workers.to_vec(),
            cpu_seconds,
            user_seconds: sum(|w| w.user_seconds),
            system_seconds: sum(|w| w.system_seconds),
            cpu_us_per_round_trip: crate::client_cpu::cpu_us_per_round_trip(cpu_seconds, round_trips),
            cpu_us_per_paced_message: None,
            rss_baseline_bytes: None,
            rss_connected_bytes: None,
            heap_baseline_bytes: None,
            heap_connected_bytes: None,
            bytes_per_connection: None,
            machine_load: None,
            machine_network: None,
        }
    }

    /// An open-loop run: sets the CPU µs per paced message from the messages it sent.
    pub fn paced(mut self, open_loop: bool, messages_sent: u64) -> ClientSummary {
        self.cpu_us_per_paced_message = open_loop
            .then(|| crate::client_cpu::cpu_us_per_round_trip(self.cpu_seconds, messages_sent))
            .flatten();
        self
    }

    /// Adds the client's memory, and what each of `established` connections cost it.
    pub fn with_memory(mut self, memory: &ClientMemory, established: u64) -> ClientSummary {
        self.rss_baseline_bytes = memory.rss_baseline_bytes;
        self.rss_connected_bytes = memory.rss_connected_bytes;
        self.heap_baseline_bytes = memory.heap_baseline_bytes;
        self.heap_connected_bytes = memory.heap_connected_bytes;
        self.bytes_per_connection = match (memory.heap_baseline_bytes, memory.heap_connected_bytes) {
            (Some(baseline), Some(connected)) => {
                crate::probe::per_connection(connected.saturating_sub(baseline), established)
            }
            _ => None,
        };
        self
    }
}

impl ClientSummary {
    /// An open-loop client that could not send on schedule (send lag p99 above the limit)
    /// bounds the result too, whatever its CPU share says.
    pub fn with_send_lag(mut self, send_lag: &Histogram<u64>, limit_us: Option<u64>) -> ClientSummary {
        let Some(limit_us) = limit_us else { return self };
        let p99 = send_lag.value_at_quantile(0.99);
        if send_lag.is_empty() || p99 <= limit_us {
            return self;
        }
        let lag = format!(
            "send lag p99 was {}, above the {} limit: the client could not send on schedule, so the result \
             is bounded by the client, not the server",
            micros(p99 as f64),
            micros(limit_us as f64)
        );
        self.bound_reason = Some(match self.bound_reason.take() {
            Some(cpu) => format!("{cpu}; {lag}"),
            None => lag,
        });
        self.bound = true;
        self
    }
}

/// The open-loop send-lag limit of a run's configuration, in µs (None for a closed loop).
fn send_lag_limit_us(config: &serde_json::Value) -> Option<u64> {
    is_open_loop(config).then_some(())?;
    Some((config.get("max_send_lag")?.as_f64()? * 1e6) as u64)
}

/// Whether a run's configuration sends on a schedule (it has a message interval).
fn is_open_loop(config: &serde_json::Value) -> bool {
    config.get("message_interval").and_then(|interval| interval.as_f64()).is_some()
}

impl Summary {
    /// The headline figures of one run's metrics.
    fn from_outcome(outcome: &RunOutcome) -> Summary {
        let metrics = &outcome.metrics;
        let counters = &metrics.counters;
        let per_sec = |count: f64, secs: f64| if secs > 0.0 { finite(count / secs) } else { 0.0 };
        let exchanges_per_sec = per_sec(outcome.measured_exchanges as f64, outcome.measured_secs);
        let latency_us = LatencyStats::from_histogram(&metrics.latency);
        Summary {
            exchanges_per_sec,
            measured_exchanges: outcome.measured_exchanges,
            latency_us,
            latency_uncorrected_us: LatencyStats::from_histogram(&metrics.latency_uncorrected),
            connect_us: ConnectStats::from_histogram(&metrics.connect),
            send_lag_us: LatencyStats::from_histogram(&metrics.send_lag),
            connections: ConnectionCounts {
                attempted: counters.connections_attempted,
                established: counters.connections_established,
                failed: counters.connections_failed(),
                unfinished: counters.connects_unfinished,
            },
            disconnections: counters.disconnections(),
            errors: errors_of(
                metrics,
                super::unanswered::Window {
                    seconds: outcome.measured_secs,
                    exchanges: outcome.measured_exchanges,
                },
            ),
            stalls: super::Stalls::of(&metrics.timeline),
            sends: super::SendLedger::of(counters, outcome.measured_exchanges),
            messages: MessageCounts {
                sent: counters.messages_sent,
                received: counters.messages_received,
                unanswered: counters.messages_unanswered,
                unsent: counters.messages_unsent,
            },
            bytes: ByteCounts { sent: counters.bytes_sent, received: counters.bytes_received },
            connect_phase_s: finite(outcome.connect_phase_secs),
            connections_per_ms: per_sec(
                counters.connections_established as f64,
                outcome.connect_phase_secs * 1e3,
            ),
            latency_distribution: super::Distribution::from_histogram(&metrics.latency),
            connect_distribution: super::Distribution::from_histogram(&metrics.connect),
            littles_law: LittlesLaw::new(
                outcome.connections,
                outcome.in_flight,
                exchanges_per_sec,
                latency_us.mean,
            )
            .varying_if(!metrics.stages.is_empty()),
            thresholds: Vec::new(),
            compression: super::compression::CompressionSummary::of(counters),
            transport: super::transport::TransportSummary::of(&outcome.config, counters),
        }
    }
}

/// The run's errors by kind: its counters' and its scenario's, and whether it asked and was
/// never answered.
fn errors_of(metrics: &Metrics, window: super::unanswered::Window) -> BTreeMap<String, u64> {
    let mut errors = metrics.errors();
    if super::unanswered::none_answered(metrics, window) {
        errors.insert(super::NO_REQUEST_ANSWERED.to_owned(), 1);
    }
    errors
}

impl TimelinePoint {
    fn of(second: &crate::metrics::TimelineSecond) -> TimelinePoint {
        TimelinePoint {
            second: second.second,
            exchanges: second.exchanges,
            connections_open: second.connections_open,
            awaiting: second.awaiting,
            reconnects: second.reconnects,
            p50_us: second.p50_us,
            p99_us: second.p99_us,
        }
    }
}

impl RunResult {
    /// Everything the result file says about a finished (or interrupted) run.
    pub fn from_outcome(outcome: &RunOutcome) -> RunResult {
        let metrics = &outcome.metrics;
        let counters = &metrics.counters;
        let workers: Vec<WorkerCpu> = outcome
            .client_workers
            .iter()
            .map(|w| WorkerCpu {
                name: w.name.clone(),
                cpu_seconds: finite(w.cpu_seconds),
                share: finite(w.share),
                user_seconds: finite(w.user_seconds),
                system_seconds: finite(w.system_seconds),
                io: w.io.clone(),
            })
            .collect();
        let mut server = outcome.server.clone();
        for sample in &mut server.samples {
            sample.cpu_seconds = finite(sample.cpu_seconds);
        }
        let recovery = (!outcome.disruptions.is_empty() || !metrics.recovery.is_empty()).then(|| {
            let policy = outcome.config.get("reconnect").and_then(|p| p.as_str()).unwrap_or_default();
            super::RecoveryFigures::of(
                &metrics.recovery,
                policy,
                &outcome.disruptions,
                &metrics.timeline,
                &server.samples,
            )
        });
        RunResult {
            schema_version: SCHEMA_VERSION,
            wsbench_version: env!("CARGO_PKG_VERSION").to_owned(),
            run_id: None,
            scenario: outcome.scenario.clone(),
            target: Target { url: outcome.target_url.clone(), builtin: outcome.target_builtin },
            config: outcome.config.clone(),
            machine: outcome.machine.clone(),
            started_at_unix_ms: outcome.started_at_unix_ms,
            elapsed_s: finite(outcome.elapsed_secs),
            measured_s: finite(outcome.measured_secs),
            drain_s: finite(outcome.drain_secs),
            interrupted: outcome.interrupted,
            ended_early: None,
            summary: Summary::from_outcome(outcome),
            server: ServerSummary::from_report(
                &server,
                counters.connections_established,
                outcome.measured_exchanges,
            )
            .per_round_trip(counters.messages_received),
            client: ClientSummary::from_workers(&workers, counters.messages_received)
                .with_send_lag(&metrics.send_lag, send_lag_limit_us(&outcome.config))
                .paced(is_open_loop(&outcome.config), counters.messages_sent)
                .with_memory(&outcome.client_memory, counters.connections_established),
            timeline: metrics.timeline.iter().map(TimelinePoint::of).collect(),
            counters: crate::metrics::Counters { scenario: section_counters(metrics), ..counters.clone() },
            histograms: EncodedHistograms {
                latency: encode_histogram(&metrics.latency),
                latency_uncorrected: encode_histogram(&metrics.latency_uncorrected),
                connect: encode_histogram(&metrics.connect),
                send_lag: encode_histogram(&metrics.send_lag),
                recovery_back_after: recovery
                    .as_ref()
                    .map(|_| encode_histogram(&metrics.recovery.back_after)),
                recovery_downtime: recovery.as_ref().map(|_| encode_histogram(&metrics.recovery.downtime)),
                intervals: Vec::new(),
                scenario: section_histograms(metrics),
            },
            shards: Vec::new(),
            partial: None,
            stages: super::stages::figures(&metrics.stages, &server.samples),
            recovery,
            scenario_figures: outcome.figures.iter().cloned().collect(),
        }
    }
}

/// The scenario section's counters, as the keys it adds to `counters`.
fn section_counters(metrics: &Metrics) -> BTreeMap<String, Value> {
    metrics.section.as_ref().map(|section| section.counters()).unwrap_or_default()
}

/// The scenario section's histograms, encoded, as the keys it adds to `histograms`.
fn section_histograms(metrics: &Metrics) -> BTreeMap<String, Value> {
    let Some(section) = &metrics.section else { return BTreeMap::new() };
    section
        .histograms()
        .into_iter()
        .map(|(key, histograms)| {
            let value = match histograms {
                SectionHistograms::One(histogram) => Value::String(encode_histogram(histogram)),
                SectionHistograms::Named(named) => Value::Object(
                    named
                        .into_iter()
                        .map(|(name, histogram)| {
                            (name.to_owned(), Value::String(encode_histogram(histogram)))
                        })
                        .collect(),
                ),
            };
            (key.to_owned(), value)
        })
        .collect()
}
