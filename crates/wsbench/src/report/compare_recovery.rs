//! The recovery table of `wsbench compare --disrupt …`: one row per server, how its lost
//! connections came back (the shares back after the disruption, those never back), at what
//! cost (attempts per connection, the peak a second) and what the server did meanwhile
//! (its down time, CPU and RSS peaks during the recovery). Each row is the server's median
//! run, the one the main table shows.

use std::fmt::Write as _;

use crate::units::format::{group, mib_tight};

/// The table of each server's (name's) median run, when they had a recovery.
pub fn recovery_table(measured: &[(&str, &crate::result::RunResult)]) -> Option<String> {
    if !measured.iter().any(|(_, run)| run.recovery.is_some()) {
        return None;
    }
    let mut out = String::from(
        "\nrecovery (seconds after the disruption until each share of the lost connections was back):\n",
    );
    let _ = writeln!(
        out,
        "{:<22} {:>7} {:>7} {:>7} {:>7} {:>7} {:>8} {:>9} {:>9} {:>9} {:>8} {:>8}",
        "server",
        "lost",
        "50 %",
        "90 %",
        "99 %",
        "all",
        "not back",
        "att/conn",
        "peak/s",
        "down s",
        "CPU max",
        "RSS max"
    );
    for &(name, run) in measured {
        let Some(r) = &run.recovery else { continue };
        let at = |s: Option<f64>| s.map_or("never".to_owned(), |s| format!("{s:.2}"));
        let down: Option<f64> = r.disruptions.iter().filter_map(|e| e.took_s).reduce(f64::max);
        let _ = writeln!(
            out,
            "{:<22} {:>7} {:>7} {:>7} {:>7} {:>7} {:>8} {:>9} {:>9} {:>9} {:>8} {:>8}",
            name,
            group(r.lost),
            at(r.back_after.p50_s),
            at(r.back_after.p90_s),
            at(r.back_after.p99_s),
            at(r.back_after.all_s),
            group(r.not_back),
            r.attempts_per_connection.map_or("-".to_owned(), |a| format!("{a:.2}")),
            group(r.peak_attempts_per_sec),
            down.map_or("-".to_owned(), |d| format!("{d:.2}")),
            r.server.cpu_peak_cores.map_or("-".to_owned(), |c| format!("{c:.2}")),
            r.server.rss_peak_bytes.map_or("-".to_owned(), mib_tight),
        );
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixture;
    use crate::result::{BackAfter, RecoveryFigures, RunResult};

    #[test]
    fn one_row_per_server_and_never_for_a_share_that_never_came_back() {
        let mut run = RunResult::from_outcome(&fixture::closed_loop());
        assert!(recovery_table(&[("a", &run)]).is_none());
        run.recovery = Some(RecoveryFigures {
            lost: 10_000,
            not_back: 12,
            attempts_per_connection: Some(1.5),
            back_after: BackAfter { p50_s: Some(0.4), p90_s: Some(0.9), ..BackAfter::default() },
            ..RecoveryFigures::default()
        });
        let table = recovery_table(&[("node-ws", &run)]).unwrap();
        let line = table.lines().find(|line| line.starts_with("node-ws")).unwrap();
        let cells: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(cells[1..8], ["10,000", "0.40", "0.90", "never", "never", "12", "1.50"], "{table}");
    }
}
