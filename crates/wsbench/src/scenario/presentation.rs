//! How a scenario shows its run, apart from how it runs: the report's extra lines and block,
//! what the header says the load was, what follows the headline rate, whether Little's law
//! applies, and its columns in the `compare` table. Every method has a default (nothing
//! extra), so a scenario that adds nothing to the report implements it with an empty
//! `impl`; the renderers in `report/` read a result through these and never run anything.

use crate::result::RunResult;

/// The presentation half of a scenario; [`super::Descriptor`] is the half that runs it.
pub trait Presentation {
    /// `(label, text)` lines for the terminal report and the HTML page.
    fn report_lines(&self, _result: &RunResult) -> Vec<(&'static str, String)> {
        Vec::new()
    }
    /// Text the terminal report adds at its end (c10k's statistics block).
    fn report_block(&self, _result: &RunResult) -> Option<String> {
        None
    }
    /// What the report's header says the load was, when not "N connections × K in flight".
    fn load_shape(&self, _result: &RunResult) -> Option<String> {
        None
    }
    /// What follows the headline rate (throughput's echoes/ms).
    fn headline_suffix(&self, _result: &RunResult) -> Option<String> {
        None
    }
    /// Little's law holds for its exchanges (a fixed number of them always outstanding), so
    /// the report checks the measured latency against it.
    fn littles_law(&self) -> bool {
        true
    }
    /// Extra columns of the `compare` table: headings and widths, and each run's cells.
    fn compare_columns(&self) -> &'static [(&'static str, usize)] {
        &[]
    }
    fn compare_cells(&self, _result: &RunResult) -> Vec<String> {
        Vec::new()
    }
}
