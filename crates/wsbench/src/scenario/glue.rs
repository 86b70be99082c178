//! Where the registry meets the layers that know no scenario: the checks of a validated
//! run that need its scenario (`crate::members` validates through them), the engine's
//! [`Plan`] of a load, a result's metrics decoded with their section, and the figures a
//! scenario adds to a result.

use std::sync::Arc;

use serde_json::Value;

use super::{Descriptor, FiguresInput, SCENARIOS, by_name};
use crate::config::{
    ConfigError, LoadSpec, Metric, RunConfig, Threshold, invalid_setting, looks_like_host_port,
};
use crate::engine::{PhasePlan, Plan, Workload};
use crate::metrics::Metrics;
use crate::options::{Kind, OptionSpec};
use crate::protocol::{Session, Setup};
use crate::result::{ResultError, RunResult};
use crate::samples::ServerReport;

/// A `--threshold` on a figure of the scenario's own names one it has.
pub fn check_thresholds(scenario: &dyn Descriptor, thresholds: &[Threshold]) -> Result<(), ConfigError> {
    for threshold in thresholds {
        if let Metric::Scenario(name) = &threshold.metric
            && !scenario.threshold_names().contains(&name.as_str())
        {
            let own = match scenario.threshold_names() {
                [] => format!("the {} scenario has no figures of its own", scenario.name()),
                names => format!("the {} scenario's own are {}", scenario.name(), names.join(", ")),
            };
            return Err(invalid_setting(
                "threshold",
                format!(
                    "`{}`: unknown figure `{name}` (latency: p50, p99, …; connect_p99, …; errors; \
                     echoes_per_sec; {own})",
                    threshold.expression
                ),
            ));
        }
    }
    Ok(())
}

/// The run's message protocol carries its scenario and takes the options given; the
/// subprotocols it needs are offered and its usual path taken when the user gave none.
pub fn settle_protocol(scenario: &dyn Descriptor, config: &mut RunConfig) -> Result<(), ConfigError> {
    let load = &mut config.load;
    let Some(protocol) = crate::protocol::by_name(load.protocol) else { return Ok(()) };
    let usage = scenario.protocol_use();
    if !protocol.serves(usage) {
        let carriers: Vec<&str> =
            crate::protocol::PROTOCOLS.iter().filter(|p| p.serves(usage)).map(|p| p.name()).collect();
        return Err(invalid_setting(
            "protocol",
            format!(
                "the {} protocol cannot carry the {} scenario: use {}",
                protocol.name(),
                scenario.name(),
                or_list(&carriers)
            ),
        ));
    }
    protocol.check(&load.protocol_options).map_err(|problem| invalid_setting("protocol", problem))?;
    check_data_options(protocol, &load.protocol_options, load.handshake.data.as_deref())?;
    match config.target.as_mut() {
        Some(target) => {
            let given = if target.names_path { target.path.as_str() } else { "" };
            if let Some(path) = protocol.path_for(given, &load.protocol_options) {
                target.set_path(path);
            }
        }
        None if protocol.needs_target() => {
            return Err(invalid_setting(
                "protocol",
                format!(
                    "the {} protocol needs the URL of a server that speaks it (wsbench run … \
                     ws://HOST:PORT/; the built-in server echoes raw messages only)",
                    protocol.name()
                ),
            ));
        }
        None => {}
    }
    if load.handshake.subprotocols.is_empty() {
        load.handshake.subprotocols = protocol.subprotocols().iter().map(|s| (*s).to_owned()).collect();
    }
    Ok(())
}

/// Every scenario's name, in the registry's order.
pub fn names() -> impl Iterator<Item = &'static str> {
    SCENARIOS.iter().map(|scenario| scenario.name())
}

/// The word `name` (of `run`, or a scenario file's `scenario`) names no scenario: the known
/// ones and the one it most resembles, or the `ws://` a host:port was meant as.
pub fn unknown_scenario(name: &str) -> ConfigError {
    let word = name.to_owned();
    if looks_like_host_port(name) {
        return ConfigError::NotAScenario { word, hint: format!(": did you mean ws://{name}?") };
    }
    let known: Vec<&str> = names().collect();
    let meant = crate::config::suggest::did_you_mean(name, known.iter().copied());
    let hint = format!(
        "{meant}: the scenarios are {}; a preset or a scenario file goes after --scenario",
        known.join(", ")
    );
    ConfigError::NotAScenario { word, hint }
}

/// `a, b or c`.
pub fn or_list(names: &[&str]) -> String {
    match names.split_last() {
        Some((last, [])) => (*last).to_owned(),
        Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
        None => String::new(),
    }
}

/// The engine's plan of a validated load: its scenario's phases and workloads.
pub fn plan_of(load: &LoadSpec) -> Arc<dyn Plan> {
    let scenario = super::of(load);
    Arc::new(ScenarioPlan { scenario, shared: scenario.shared_state(load), load: load.clone() })
}

/// A scenario and the load it runs, as the engine sees them, with what its workers share.
#[derive(Debug)]
struct ScenarioPlan {
    scenario: &'static dyn Descriptor,
    load: LoadSpec,
    /// What the run's workers share (made once, here).
    shared: super::SharedState,
}

impl Plan for ScenarioPlan {
    fn phases(&self) -> PhasePlan {
        self.scenario.phases(&self.load)
    }
    fn workload(&self, connections: &[u64]) -> Box<dyn Workload> {
        self.scenario.workload(&self.load, connections, &self.shared)
    }
    fn session(&self, index: u64) -> Box<dyn Session> {
        let protocol = crate::protocol::by_name(self.load.protocol).unwrap_or(&crate::protocol::raw::Raw);
        let setup = Setup {
            index,
            run: &self.load.run_id,
            usage: self.scenario.protocol_use(),
            options: &self.load.protocol_options,
            open_timeout: self.load.connect_timeout,
            data: self.load.handshake.data.as_deref().map(|data| data as &dyn crate::protocol::DataRows),
        };
        protocol.session(&setup)
    }
}

/// Every `{data.NAME}` in the protocol's options, its secrets too, names a column of the
/// `--data` file (none without one), and every row's values make options the protocol takes:
/// a value that would make a topic, a subject or a frame header it refuses (among them a CR,
/// LF or NUL where its wire format is framed by them) is a usage error naming the file, the
/// row, the column and the option it fills, before load. The protocol's own `check` is the
/// rule, so each wire format keeps its rules in its own folder.
fn check_data_options(
    protocol: &dyn crate::protocol::Protocol,
    options: &crate::protocol::Options,
    data: Option<&crate::config::DataTable>,
) -> Result<(), ConfigError> {
    let templated: Vec<(&OptionSpec, &str)> = protocol
        .options()
        .iter()
        .filter_map(|spec| Some((spec, template_of(options, spec)?)))
        .filter(|(_, text)| text.contains("{data."))
        .collect();
    let Some(&(first, _)) = templated.first() else { return Ok(()) };
    let Some(data) = data else {
        return Err(invalid_setting(
            first.flag,
            "`{data.NAME}` needs --data FILE.csv, whose columns it names",
        ));
    };
    for &(spec, text) in &templated {
        data.check(spec.flag, text)?;
    }
    let mut filled = options.clone();
    for row in 0..data.rows() {
        for &(spec, text) in &templated {
            fill_option(&mut filled, spec, data.fill(text, row).into_owned());
        }
        if let Err(problem) = protocol.check(&filled) {
            return Err(refused_row(protocol, options, data, &templated, row, &problem));
        }
    }
    Ok(())
}

/// The text of option `spec` as given (a secret's as read), when it is text.
fn template_of<'o>(options: &'o crate::protocol::Options, spec: &OptionSpec) -> Option<&'o str> {
    match spec.kind {
        Kind::Secret { .. } => options.secrets.get(spec),
        _ => options.given.text(spec),
    }
}

fn fill_option(options: &mut crate::protocol::Options, spec: &OptionSpec, value: String) {
    match spec.kind {
        Kind::Secret { .. } => options.secrets.set(spec, value),
        _ => {
            options.given.0.insert(spec.key.to_owned(), toml::Value::String(value));
        }
    }
}

/// Row `row` made the protocol refuse its options (`problem`): the error names the option
/// the row refills alone to the same refusal (every templated one when none does alone),
/// the file, the row and the columns, and shows control characters escaped.
fn refused_row(
    protocol: &dyn crate::protocol::Protocol,
    options: &crate::protocol::Options,
    data: &crate::config::DataTable,
    templated: &[(&OptionSpec, &str)],
    row: u64,
    problem: &str,
) -> ConfigError {
    let alone = templated.iter().find(|&&(spec, text)| {
        let mut one = options.clone();
        fill_option(&mut one, spec, data.fill(text, row).into_owned());
        protocol.check(&one).is_err()
    });
    let culprits = alone.map_or(templated, std::slice::from_ref);
    let mut columns: Vec<&str> =
        culprits.iter().flat_map(|(_, text)| crate::config::placeholders(text)).collect();
    columns.dedup();
    let flags: Vec<String> = culprits.iter().map(|(spec, _)| format!("--{}", spec.flag)).collect();
    let problem: String = problem
        .chars()
        .flat_map(|c| match c.is_control() {
            true => c.escape_debug().collect::<Vec<char>>(),
            false => vec![c],
        })
        .collect();
    invalid_setting(
        "data",
        format!(
            "{}: {}, {} {} fills {}, which the {} protocol refuses: {problem}",
            data.path.display(),
            data.row_name(row as usize),
            if columns.len() == 1 { "column" } else { "columns" },
            columns.join(", "),
            flags.join(" and "),
            protocol.name()
        ),
    )
}

/// A result's metrics, losslessly, its scenario's section included (for a scenario this
/// wsbench does not know, without it).
pub fn decode_metrics(result: &RunResult) -> Result<Metrics, ResultError> {
    let mut metrics = result.common_metrics()?;
    if let Some(scenario) = by_name(&result.scenario) {
        metrics.section = scenario.read_section(&result.counters.scenario, &result.histograms.scenario)?;
    }
    Ok(metrics)
}

/// The figures the scenario `name` adds to a result (key, value).
pub fn figures_of(name: &str, input: &FiguresInput<'_>) -> Option<(String, Value)> {
    let (key, value) = by_name(name)?.figures(input)?;
    Some((key.to_owned(), value))
}

/// The figures of a run measured from `metrics` (`server`: what the probe saw).
pub fn figures_for(
    name: &str,
    metrics: &Metrics,
    config: &Value,
    measured_secs: f64,
    server: &ServerReport,
) -> Option<(String, Value)> {
    figures_of(name, &FiguresInput { metrics, config, measured_secs, server })
}
