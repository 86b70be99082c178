//! The `[[flow.steps]]` of a TOML scenario file as given ([`FlowSettings`]): a settings
//! section like the others, read with the file. The flow scenario checks and compiles them
//! (`crate::scenario`).

use serde::{Deserialize, Serialize};

/// `[flow]` as written in the scenario file.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct FlowSettings {
    pub steps: Vec<StepSettings>,
}

/// One `[[flow.steps]]` table: exactly one of `send`, `expect`, `expect-regex`, `sleep`,
/// `repeat` says what it is. (TOML leaves the unset ones out when it writes a step back.)
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct StepSettings {
    pub name: Option<String>,
    /// A text message: `{conn}`, `{seq}`, `{now_us}`, `{rand_u32}` are filled in.
    pub send: Option<String>,
    /// The name of an earlier `send` whose replies to wait for (matched by `match-field`).
    pub expect: Option<String>,
    /// The JSON field (top level) whose value the reply must repeat, e.g. `id`.
    pub match_field: Option<String>,
    /// `expect`: how many replies the send gets (default 1), e.g. a subscription's `next`s.
    pub count: Option<u64>,
    /// `expect`: replies keep coming until one matches this regex (e.g. a `complete`).
    pub until: Option<String>,
    /// Wait for a message matching this regex (the latest send's `{conn}`, `{seq}`, … filled in).
    pub expect_regex: Option<String>,
    /// `expect-regex`: its latency counts from the latest send of this name, not from the
    /// moment the flow began waiting.
    pub since: Option<String>,
    /// `expect`, `expect-regex`: what the matched message must say, by JSON pointer
    /// (`"/result/0" = "hello {conn}"`); strings have the send's templates filled in.
    pub check_json: Option<toml::Table>,
    /// `expect`, `expect-regex`: a regex the matched message must match (templates filled in).
    pub check_regex: Option<String>,
    pub timeout: Option<String>,
    pub sleep: Option<String>,
    /// A count, or `"until-end"`.
    pub repeat: Option<toml::Value>,
    pub steps: Option<Vec<StepSettings>>,
}
