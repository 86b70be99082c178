//! What `wsbench run --find-max-rate` prints: the step table with its verdict, for the
//! terminal (and for `wsbench report` of a search file, written by `find_rate`).

use std::fmt::Write as _;

use crate::result::search::{CUT_SHORT, PRECISION, Search};
use crate::units::format::millis_fixed;

/// The step table and the verdict, for the terminal.
pub fn render_search(search: &Search) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "highest rate under {} (open loop, rate doubled then bisected to {:.0}%; rates in round trips/s):",
        search.slo.text,
        PRECISION * 100.0
    );
    let _ = writeln!(
        out,
        "{:>4}  {:>12}  {:>12}  {:>10}  {:>10}  {:>10}  verdict",
        "step", "offered", "achieved", "p50", "p99", "p99.9"
    );
    for (i, step) in search.steps.iter().enumerate() {
        let ms = |us: u64| millis_fixed(us as f64);
        let verdict = match step.broken_by.as_deref() {
            None => "held".to_owned(),
            Some(CUT_SHORT) => format!("not judged: {CUT_SHORT}"),
            Some(why) => format!("broke: {why}"),
        };
        let _ = writeln!(
            out,
            "{:>4}  {:>12.0}  {:>12.0}  {:>10}  {:>10}  {:>10}  {verdict}",
            i + 1,
            step.offered_per_sec,
            step.achieved_per_sec,
            ms(step.latency_us.p50),
            ms(step.latency_us.p99),
            ms(step.latency_us.p999),
        );
    }
    let slo = &search.slo.text;
    let _ = match (search.max_rate_per_sec, search.broke_at_per_sec) {
        (Some(held), Some(broke)) => {
            writeln!(out, "max rate: {held:.0} round trips/s held {slo}; {broke:.0} round trips/s broke it")
        }
        (Some(held), None) => {
            writeln!(
                out,
                "max rate: at least {held:.0} round trips/s held {slo} (the search stopped before it broke)"
            )
        }
        (None, _) => writeln!(out, "max rate: none found: even the lowest rate tried broke {slo}"),
    };
    if search.interrupted {
        let _ = writeln!(out, "[INTERRUPTED: the search ended early]");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixture;
    use crate::result::RunResult;
    use crate::result::search::{SearchFile, Step};

    /// A search judged by the real objective on a fixture run: the lower rate held (the
    /// fixture delivers it), the higher did not.
    fn searched(max_rate: Option<f64>) -> Search {
        let slo: crate::config::Slo = "p99<1h".parse().unwrap();
        let run = RunResult::from_outcome(&fixture::closed_loop());
        let delivered = run.summary.exchanges_per_sec;
        let steps = vec![Step::judge(delivered / 2.0, &run, &slo), Step::judge(delivered * 2.0, &run, &slo)];
        Search {
            slo,
            steps,
            max_rate_per_sec: max_rate,
            broke_at_per_sec: Some(delivered * 2.0),
            interrupted: true,
        }
    }

    #[test]
    fn table_has_a_row_per_step_and_a_verdict() {
        let text = render_search(&searched(Some(1_000.0)));
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[0],
            "highest rate under p99<1h (open loop, rate doubled then bisected to 5%; rates in round trips/s):"
        );
        assert_eq!(lines[1], "step       offered      achieved         p50         p99       p99.9  verdict");
        assert!(lines[2].starts_with("   1  ") && lines[2].ends_with(" ms  held"), "{}", lines[2]);
        assert!(lines[3].contains(" ms  broke: delivered "), "{}", lines[3]);
        assert!(lines[4].starts_with("max rate: 1000 round trips/s held p99<1h; "), "{}", lines[4]);
        assert_eq!(lines[5], "[INTERRUPTED: the search ended early]");
    }

    #[test]
    fn a_step_cut_short_is_not_judged() {
        let mut search = searched(Some(1_000.0));
        search.steps[1].broken_by = Some(CUT_SHORT.to_owned());
        let text = render_search(&search);
        assert!(
            text.lines().nth(3).unwrap().ends_with(" ms  not judged: cut short by an interruption"),
            "{text}"
        );
    }

    #[test]
    fn reports_none_when_nothing_holds() {
        assert!(render_search(&searched(None)).contains("max rate: none found"));
    }

    #[test]
    fn the_file_has_kind_and_version_and_reads_back() {
        let search = searched(Some(1_000.0));
        let text = serde_json::to_string_pretty(&SearchFile::new(&search)).unwrap();
        assert!(text.starts_with("{\n  \"kind\": \"wsbench-search\",\n  \"schema_version\": 1,"), "{text}");
        let back: SearchFile = serde_json::from_str(&text).unwrap();
        assert_eq!(back.search, search);
    }
}
