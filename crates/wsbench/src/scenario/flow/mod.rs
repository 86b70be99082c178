//! `flow`: each connection runs the `[[flow.steps]]` of a scenario file (send templates,
//! expect replies matched by a JSON field or a regex within a timeout, sleep, repeat), and
//! every matched step's latency is recorded by its name: JSON-RPC calls, graphql-ws
//! subscriptions, any request/response API. What the headline counts is matched replies.

mod capture;
mod figures;
mod interpreter;
mod program;
mod report;
mod section;
mod state;
mod steps;
mod template;

use std::any::Any;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value};

use super::{Descriptor, FiguresInput, Presentation};
use crate::config::{
    ConfigError, Defaults, Exchange, LoadSpec, Pacing, RunSettings, ScenarioRules, ScenarioSettings,
    invalid_setting,
};
use crate::engine::{PhasePlan, Workload};
use crate::metrics::Section;
use crate::options::OptionSpec;
use crate::result::{ResultError, RunResult};
use figures::FlowSummary;
use interpreter::FlowWorkload;
use program::FlowProgram;
use section::FlowSection;
use steps::{FLOW, FlowSettings, StepSettings};

#[derive(Debug)]
pub struct Flow;

/// The compiled program, shared by every connection.
#[derive(Debug, Clone)]
struct Program(Arc<FlowProgram>);

impl ScenarioSettings for Program {
    fn to_json(&self) -> Map<String, Value> {
        Map::from_iter([("flow".to_owned(), serde_json::to_value(&*self.0).unwrap_or_default())])
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

impl ScenarioRules for Flow {
    fn name(&self) -> &'static str {
        "flow"
    }
    fn defaults(&self) -> Defaults {
        Defaults { warmup: Duration::ZERO, ..Defaults::standard() }
    }
    fn pacing(&self, _settings: &RunSettings) -> Result<Pacing, ConfigError> {
        Ok(Pacing::Refused("a flow sends as its steps say: drop --rate/--interval"))
    }
    fn options(&self) -> &'static [OptionSpec] {
        &[FLOW]
    }
    fn settings(
        &self,
        settings: &RunSettings,
        load: &LoadSpec,
    ) -> Result<Arc<dyn ScenarioSettings>, ConfigError> {
        let Some(table) = settings.options.table(&FLOW) else {
            return Err(invalid_setting(
                "scenario",
                "flow runs the [[flow.steps]] of a scenario file: give --scenario FILE",
            ));
        };
        // A scenario file's steps were read where they stand (`steps::check_text`); these
        // are the same values again, as the settings carry them.
        let flow: FlowSettings = table.clone().try_into().map_err(|e: toml::de::Error| {
            ConfigError::Table { table: "flow.steps", problem: e.message().trim_end().to_owned() }
        })?;
        check_data(&flow.steps, load.handshake.data.as_deref())?;
        Ok(Arc::new(Program(Arc::new(FlowProgram::compile(&flow)?))))
    }
}

impl Descriptor for Flow {
    fn about(&self) -> &'static str {
        "each connection runs the [[flow.steps]] of a scenario file; latency per step"
    }
    fn exchange(&self) -> Exchange {
        Exchange { one: "matched reply", many: "matched replies" }
    }
    fn protocol_use(&self) -> crate::protocol::Use {
        crate::protocol::Use::Messages
    }
    fn phases(&self, load: &LoadSpec) -> PhasePlan {
        super::echo::after_connect(load)
    }
    fn workload(
        &self,
        load: &LoadSpec,
        _connections: &[u64],
        _shared: &super::SharedState,
    ) -> Box<dyn Workload> {
        let program = load.scenario_settings.get::<Program>().map_or_else(Default::default, |p| p.0.clone());
        Box::new(FlowWorkload::new(program, load.handshake.data.clone()))
    }
    fn read_section(
        &self,
        counters: &BTreeMap<String, Value>,
        histograms: &BTreeMap<String, Value>,
    ) -> Result<Option<Box<dyn Section>>, ResultError> {
        Ok(Some(Box::new(FlowSection::read(counters, histograms)?)))
    }
    fn figures(&self, input: &FiguresInput<'_>) -> Option<(&'static str, Value)> {
        let section = input.metrics.section.as_ref()?.as_any().downcast_ref::<FlowSection>()?;
        Some(("flow", serde_json::to_value(FlowSummary::of(section)).ok()?))
    }
}

impl Presentation for Flow {
    fn report_lines(&self, result: &RunResult) -> Vec<(&'static str, String)> {
        report::flow_lines(result)
    }
    /// A flow's messages are no fixed number of round trips outstanding.
    fn littles_law(&self) -> bool {
        false
    }
}

/// Every `{data.COLUMN}` in the steps' templates (sends, patterns, checks) names a column of
/// the `--data` file; without one, none may be used.
fn check_data(steps: &[StepSettings], data: Option<&crate::config::DataTable>) -> Result<(), ConfigError> {
    for step in steps {
        let checked = step.check_json.iter().flatten().filter_map(|(_, value)| value.as_str());
        let patterns = [&step.send, &step.until, &step.expect_regex, &step.check_regex];
        for text in patterns.into_iter().flatten().map(String::as_str).chain(checked) {
            match data {
                Some(data) => data.check("scenario", text)?,
                None if text.contains("{data.") => {
                    return Err(invalid_setting(
                        "scenario",
                        format!("`{text}`: `{{data.NAME}}` needs --data FILE.csv, whose columns it names"),
                    ));
                }
                None => {}
            }
        }
        check_data(step.steps.as_deref().unwrap_or_default(), data)?;
    }
    Ok(())
}
