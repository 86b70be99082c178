//! A recovery run's lines (`--disrupt`): what was disrupted and when, how long the server
//! took to come back, how the lost connections came back (first, 50/90/99/100 % back after
//! the disruption, each one's downtime), at what cost (attempts per connection, the peak a
//! second, the failures while down by cause), and the load and the server before, during
//! and after. Every renderer that shows a run's figures shows these from the result file.

use crate::result::{RecoveryFigures, RunResult, Stretch};
use crate::units::format::{bytes, group, micros, plural, rate, seconds};

/// The `recovery:` lines, when the run had a recovery.
pub fn recovery_lines(result: &RunResult) -> Vec<(&'static str, String)> {
    let Some(recovery) = &result.recovery else { return Vec::new() };
    let mut lines = vec![("recovery:", disruptions(recovery))];
    lines.push(("", back(recovery)));
    if recovery.back > 0 {
        let downtime = &recovery.downtime_us;
        lines.push((
            "",
            format!(
                "each one down: p50 {}, p99 {}, max {}; {} ({} per connection), at most {}/s (at {} s)",
                micros(downtime.p50 as f64),
                micros(downtime.p99 as f64),
                micros(downtime.max as f64),
                plural(recovery.attempts, "attempt", "attempts"),
                recovery.attempts_per_connection.map_or("-".to_owned(), |a| format!("{a:.2}")),
                group(recovery.peak_attempts_per_sec),
                recovery.peak_at_s.unwrap_or(0),
            ),
        ));
    }
    if !recovery.failures.is_empty() {
        let failures: Vec<String> =
            recovery.failures.iter().map(|(kind, n)| format!("{kind} {}", group(*n))).collect();
        lines.push(("", format!("while down (not errors of the run): {}", failures.join(", "))));
    }
    lines.extend(load(recovery).into_iter().map(|line| ("", line)));
    lines
}

/// `restart at 3.31 s (down 0.63 s; its start 0.13 s), policy immediate`.
fn disruptions(recovery: &RecoveryFigures) -> String {
    let events: Vec<String> = recovery
        .disruptions
        .iter()
        .take(3)
        .map(|event| {
            let mut text = format!("{} at {}", event.kind, seconds(event.at_s));
            match (event.took_s, event.start_s, &event.failed) {
                (_, _, Some(failed)) => text.push_str(&format!(" (FAILED: {failed})")),
                (Some(took), Some(start), None) => text.push_str(&format!(
                    " (server down {}, listening {} after its start)",
                    seconds(took),
                    seconds(start)
                )),
                (Some(took), None, None) => text.push_str(&format!(" (took {})", seconds(took))),
                _ => {}
            }
            text
        })
        .collect();
    let more = match recovery.disruptions.len() {
        0..=3 => String::new(),
        n => format!(" and {} more", n - 3),
    };
    format!("{}{more}; reconnect policy {}", events.join(", "), recovery.policy)
}

/// `1,000 lost, 1,000 back (first 0.58 s, 50 % 0.90 s, …, all 1.17 s after the disruption)`.
fn back(recovery: &RecoveryFigures) -> String {
    let after = &recovery.back_after;
    let at = |value: Option<f64>| value.map_or("never".to_owned(), seconds);
    let dropped = match recovery.dropped {
        0 => String::new(),
        n => format!(" ({} cut by the drop)", group(n)),
    };
    format!(
        "{} lost{dropped}, {} back, {} not back: first {}, 50 % {}, 90 % {}, 99 % {}, all {} after the disruption",
        group(recovery.lost),
        group(recovery.back),
        group(recovery.not_back),
        at(after.first_s),
        at(after.p50_s),
        at(after.p90_s),
        at(after.p99_s),
        at(after.all_s),
    )
}

/// The load before, during and after; the server during.
fn load(recovery: &RecoveryFigures) -> Vec<String> {
    let stretch = |name: &str, stretch: &Option<Stretch>| {
        stretch.map(|s| {
            format!("{name} {}/s, p99 up to {}", rate(s.exchanges_per_sec), micros(s.p99_us_max as f64))
        })
    };
    let parts: Vec<String> = [
        stretch("before", &recovery.before),
        stretch("during", &recovery.during),
        stretch("after", &recovery.after),
    ]
    .into_iter()
    .flatten()
    .collect();
    let mut lines: Vec<String> = (!parts.is_empty()).then(|| parts.join("; ")).into_iter().collect();
    let server = &recovery.server;
    if let (Some(cpu), Some(rss)) = (server.cpu_peak_cores, server.rss_peak_bytes) {
        lines.push(format!("server during the recovery: CPU up to {cpu:.2} cores, RSS up to {}", bytes(rss)));
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::disruption::DisruptionEvent;
    use crate::fixture;
    use crate::result::{BackAfter, RecoveryFigures, ServerDuringRecovery};

    fn recovered() -> RunResult {
        let mut result = RunResult::from_outcome(&fixture::closed_loop());
        result.recovery = Some(RecoveryFigures {
            policy: "immediate".into(),
            disruptions: vec![DisruptionEvent {
                kind: "restart".into(),
                at_s: 3.31,
                took_s: Some(0.63),
                start_s: Some(0.13),
                failed: None,
            }],
            lost: 1_000,
            back: 1_000,
            attempts: 2_825,
            attempts_per_connection: Some(2.825),
            peak_attempts_per_sec: 2_338,
            peak_at_s: Some(3),
            back_after: BackAfter {
                first_s: Some(0.58),
                p50_s: Some(0.9),
                p90_s: Some(1.15),
                p99_s: Some(1.17),
                all_s: Some(1.17),
            },
            failures: [("connection_refused".to_owned(), 1_825)].into(),
            server: ServerDuringRecovery { cpu_peak_cores: Some(0.9), rss_peak_bytes: Some(19 << 20) },
            ..RecoveryFigures::default()
        });
        result
    }

    #[test]
    fn a_recovery_says_what_happened_how_they_came_back_and_at_what_cost() {
        let lines = recovery_lines(&recovered());
        let text: Vec<String> = lines.iter().map(|(label, text)| format!("{label}{text}")).collect();
        assert_eq!(
            text[0],
            "recovery:restart at 3.31 s (server down 0.63 s, listening 0.13 s after its start); reconnect policy immediate"
        );
        assert_eq!(
            text[1],
            "1,000 lost, 1,000 back, 0 not back: first 0.58 s, 50 % 0.90 s, 90 % 1.15 s, 99 % 1.17 s, all 1.17 s after the disruption"
        );
        assert!(
            text[2].contains("2,825 attempts (2.83 per connection), at most 2,338/s (at 3 s)"),
            "{}",
            text[2]
        );
        assert_eq!(text[3], "while down (not errors of the run): connection_refused 1,825");
        assert_eq!(text[4], "server during the recovery: CPU up to 0.90 cores, RSS up to 19.0 MiB");
        assert!(recovery_lines(&RunResult::from_outcome(&fixture::closed_loop())).is_empty());
    }

    #[test]
    fn shares_that_never_came_back_say_never() {
        let mut result = recovered();
        let recovery = result.recovery.as_mut().unwrap();
        recovery.not_back = 10;
        recovery.back_after.p99_s = None;
        recovery.back_after.all_s = None;
        let text = recovery_lines(&result)[1].1.clone();
        assert!(text.ends_with("99 % never, all never after the disruption"), "{text}");
    }
}
