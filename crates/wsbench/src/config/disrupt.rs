//! `--disrupt KIND@AT[,every=D]` and `--disrupt-command CMD`: what happens to the server or
//! the network during a run, so that its recovery can be measured: `restart` (SIGTERM to a
//! server wsbench started, then started again, as a deploy does), `kill` (SIGKILL, then
//! started again: a crash), `close` (the built-in server closes every connection with 1012
//! and goes on: a graceful restart's closes), `drop` (every connection cut client side with
//! no close: a network partition) and `command` (an operator's command, run at that time,
//! for a server wsbench does not own). `AT` counts from when the load begins (every
//! connection up, or the first one opened for a run measured from its start); `every=D`
//! repeats it until the run ends. Checked whole before any load.

use std::time::Duration;

use serde::Serialize;

use super::error::{ConfigError, invalid};

/// The most disruptions one run may have (an `every` repeats up to this many).
pub const MAX_DISRUPTIONS: usize = 1_000;
/// The shortest `every`.
pub const MIN_EVERY: Duration = Duration::from_secs(1);

/// What a disruption does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum DisruptionKind {
    Restart,
    Kill,
    Close,
    Drop,
    Command,
}

impl DisruptionKind {
    pub const ALL: [DisruptionKind; 5] = [
        DisruptionKind::Restart,
        DisruptionKind::Kill,
        DisruptionKind::Close,
        DisruptionKind::Drop,
        DisruptionKind::Command,
    ];

    pub fn name(self) -> &'static str {
        match self {
            DisruptionKind::Restart => "restart",
            DisruptionKind::Kill => "kill",
            DisruptionKind::Close => "close",
            DisruptionKind::Drop => "drop",
            DisruptionKind::Command => "command",
        }
    }

    /// Whether it acts on a server wsbench started (and may start again).
    pub fn needs_own_server(self) -> bool {
        matches!(self, DisruptionKind::Restart | DisruptionKind::Kill | DisruptionKind::Close)
    }
}

/// One `--disrupt`: what, when (from the load's start), and how often again.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Disruption {
    pub kind: DisruptionKind,
    #[serde(serialize_with = "super::as_secs")]
    pub at: Duration,
    #[serde(serialize_with = "super::as_secs_opt", skip_serializing_if = "Option::is_none")]
    pub every: Option<Duration>,
    /// `close`: the close code (`code=1001`; 1012, Service Restart, by default).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub close_code: Option<u16>,
    /// `restart`, `kill`: how long the server stays down before it starts again (`down=3s`).
    #[serde(serialize_with = "super::as_secs_opt", skip_serializing_if = "Option::is_none")]
    pub down: Option<Duration>,
}

/// The longest a restarted server may be kept down.
pub const MAX_DOWN: Duration = Duration::from_secs(600);

/// The run's disruptions, and the operator's command `command` disruptions run.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct RecoveryPlan {
    pub disruptions: Vec<Disruption>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
}

impl RecoveryPlan {
    /// Every disruption of a run whose load lasts `load` (warm-up and window), in order:
    /// its kind and when, from the load's start.
    pub fn schedule(&self, load: Duration) -> Vec<(DisruptionKind, Duration)> {
        let mut all = Vec::new();
        for disruption in &self.disruptions {
            let mut at = disruption.at;
            while at < load && all.len() < MAX_DISRUPTIONS {
                all.push((disruption.kind, at));
                let Some(every) = disruption.every else { break };
                at += every;
            }
        }
        all.sort_by_key(|&(_, at)| at);
        all
    }

    pub fn is_empty(&self) -> bool {
        self.disruptions.is_empty()
    }

    /// How long a restarted server stays down (the longest any restart asks).
    pub fn down(&self) -> Duration {
        self.disruptions.iter().filter_map(|d| d.down).max().unwrap_or(Duration::ZERO)
    }

    /// The close code the built-in server is to close with, when a `close` disruption asks.
    pub fn close_code(&self) -> Option<u16> {
        self.disruptions.iter().find_map(|d| d.close_code)
    }
}

/// What the checks need to know of the rest of the run.
#[derive(Debug, Clone, Copy)]
pub struct RunShape {
    /// The load's warm-up and measured window together.
    pub load: Duration,
    /// wsbench starts the server: the built-in one (`builtin`), or a comparison's fleet member.
    pub own_server: bool,
    pub builtin: bool,
    pub reconnect: bool,
    pub processes: u64,
    /// The built-in server's processes.
    pub server_processes: u64,
    pub stages: bool,
}

impl RunShape {
    /// The shape of a run of `load` placed by `placement` (`own_server`: no URL given).
    pub fn of(
        load: &super::LoadSpec,
        builtin: bool,
        fleet_member: bool,
        placement: &super::Placement,
    ) -> RunShape {
        RunShape {
            load: load.warmup + load.duration,
            own_server: builtin || fleet_member,
            builtin,
            reconnect: load.reconnect.is_some(),
            processes: placement.processes,
            server_processes: placement.server_processes,
            stages: load.stages.is_some(),
        }
    }
}

/// `--disrupt` (each) and `--disrupt-command`, checked against the run they are part of.
pub fn plan(specs: &[String], command: Option<&str>, run: RunShape) -> Result<RecoveryPlan, ConfigError> {
    let disruptions = specs.iter().map(|spec| parse(spec, run.load)).collect::<Result<Vec<_>, _>>()?;
    let wants_command = disruptions.iter().any(|d| d.kind == DisruptionKind::Command);
    let command = command.map(str::trim).filter(|c| !c.is_empty()).map(str::to_owned);
    match (wants_command, &command) {
        (true, None) => {
            return Err(invalid(
                "disrupt",
                "a command disruption needs --disrupt-command 'CMD': the command to run",
            ));
        }
        (false, Some(_)) => {
            return Err(invalid(
                "disrupt-command",
                "is run by --disrupt command@AT: give one, or no command",
            ));
        }
        _ => {}
    }
    let Some(first) = disruptions.first() else { return Ok(RecoveryPlan::default()) };
    if let Some(owned) = disruptions.iter().find(|d| d.kind.needs_own_server() && !run.own_server) {
        return Err(invalid(
            "disrupt",
            format!(
                "{}: wsbench can {} only a server it started (the built-in server: give no URL); for a \
                 server of yours, give --disrupt command@AT with --disrupt-command 'how to restart it'",
                owned.kind.name(),
                owned.kind.name()
            ),
        ));
    }
    let refusal = match () {
        _ if !run.reconnect => {
            Some("needs --reconnect[=POLICY]: without it no connection comes back to measure")
        }
        _ if run.processes > 1 => Some("runs in one client process: give no --processes"),
        _ if run.stages => Some("does not combine with --stages, whose connections come and go by plan"),
        _ if run.server_processes > 1 && disruptions.iter().any(|d| d.kind == DisruptionKind::Close) => {
            Some("close is told to one server process: give no --server-processes")
        }
        _ if !run.builtin && disruptions.iter().any(|d| d.kind == DisruptionKind::Close) => {
            Some("close is told to the built-in server only: give restart or kill for a fleet member")
        }
        _ => None,
    };
    if let Some(refusal) = refusal {
        return Err(invalid("disrupt", format!("{}@…: {refusal}", first.kind.name())));
    }
    Ok(RecoveryPlan { disruptions, command })
}

impl super::RunSettings {
    /// `--disrupt` and `--disrupt-command`, checked against the run (`builtin`: no URL).
    pub(super) fn recovery(
        &self,
        load: &super::LoadSpec,
        builtin: bool,
        placement: &super::Placement,
    ) -> Result<RecoveryPlan, ConfigError> {
        let shape = RunShape::of(load, builtin, self.server_owned, placement);
        plan(&self.disrupt, self.disrupt_command.as_deref(), shape)
    }
}

/// `KIND@AT[,every=D]`.
fn parse(spec: &str, load: Duration) -> Result<Disruption, ConfigError> {
    let bad = |why: String| invalid("disrupt", format!("`{spec}`: {why}"));
    let (kind, rest) = spec.trim().split_once('@').ok_or_else(|| {
        bad("write KIND@AT, e.g. restart@30s or kill@30s,every=2m (KIND: restart, kill, close, drop, command)".into())
    })?;
    let kind = DisruptionKind::ALL.into_iter().find(|k| k.name() == kind.trim()).ok_or_else(|| {
        bad(format!("`{}` is no disruption: give restart, kill, close, drop or command", kind.trim()))
    })?;
    let mut parts = rest.split(',');
    let at = time(parts.next().unwrap_or_default()).map_err(&bad)?;
    let (mut every, mut close_code, mut down) = (None, None, None);
    for part in parts {
        match part.trim().split_once('=') {
            Some(("every", value)) => {
                let value = time(value).map_err(&bad)?;
                if value < MIN_EVERY {
                    return Err(bad(format!("every must be at least {} s", MIN_EVERY.as_secs())));
                }
                every = Some(value);
            }
            Some(("code", value)) if kind == DisruptionKind::Close => {
                let code =
                    value.trim().parse::<u16>().ok().filter(|c| wsbench_proto::is_valid_close_code(*c));
                close_code = Some(code.ok_or_else(|| {
                    bad(format!("`{value}` is not a close code a server may send: give e.g. 1012 or 1001"))
                })?);
            }
            Some(("down", value)) if matches!(kind, DisruptionKind::Restart | DisruptionKind::Kill) => {
                let value = time(value).map_err(&bad)?;
                if value > MAX_DOWN {
                    return Err(bad(format!("down may be at most {} s", MAX_DOWN.as_secs())));
                }
                down = Some(value);
            }
            _ => {
                let options = match kind {
                    DisruptionKind::Close => "every=DURATION and code=CODE",
                    DisruptionKind::Restart | DisruptionKind::Kill => "every=DURATION and down=DURATION",
                    DisruptionKind::Drop | DisruptionKind::Command => "every=DURATION",
                };
                return Err(bad(format!("`{}`: the options are {options}", part.trim())));
            }
        }
    }
    if at >= load {
        return Err(bad(format!(
            "{} is not within the load's {} (warm-up and --duration): give an earlier time or a longer run",
            crate::units::format::seconds(at.as_secs_f64()),
            crate::units::format::seconds(load.as_secs_f64())
        )));
    }
    Ok(Disruption { kind, at, every, close_code, down })
}

fn time(text: &str) -> Result<Duration, String> {
    crate::units::parse_duration(text.trim()).map_err(|e| e.problem)
}

#[cfg(test)]
mod tests {
    use super::*;

    const RUN: RunShape = RunShape {
        load: Duration::from_secs(60),
        own_server: true,
        builtin: true,
        reconnect: true,
        processes: 1,
        server_processes: 1,
        stages: false,
    };

    fn planned(specs: &[&str], command: Option<&str>, run: RunShape) -> Result<RecoveryPlan, String> {
        let specs: Vec<String> = specs.iter().map(|s| s.to_string()).collect();
        plan(&specs, command, run).map_err(|e| e.to_string())
    }

    #[test]
    fn disruptions_parse_and_repeat_within_the_load() {
        let plan = planned(&["restart@10s", "drop@5s,every=20s"], None, RUN).unwrap();
        let schedule: Vec<(&str, u64)> =
            plan.schedule(RUN.load).iter().map(|(kind, at)| (kind.name(), at.as_secs())).collect();
        assert_eq!(schedule, [("drop", 5), ("restart", 10), ("drop", 25), ("drop", 45)]);
        let command = planned(&["command@1s"], Some("systemctl restart app"), RUN).unwrap();
        assert_eq!(command.command.as_deref(), Some("systemctl restart app"));
        assert!(planned(&[], None, RUN).unwrap().is_empty());
        assert_eq!(planned(&["close@1s,code=1001"], None, RUN).unwrap().close_code(), Some(1001));
        assert_eq!(planned(&["close@1s"], None, RUN).unwrap().close_code(), None);
        assert_eq!(planned(&["restart@1s,down=3s"], None, RUN).unwrap().down(), Duration::from_secs(3));
        assert!(
            planned(&["drop@1s,down=3s"], None, RUN).unwrap_err().contains("the options are every=DURATION")
        );
        assert!(planned(&["kill@1s,down=1h"], None, RUN).unwrap_err().contains("down may be at most 600 s"));
    }

    #[test]
    fn what_cannot_run_is_refused_before_any_load() {
        let external = RunShape { own_server: false, builtin: false, ..RUN };
        let cases = [
            (&["restart@10s"][..], None, external, "wsbench can restart only a server it started"),
            (&["close@10s"], None, external, "can close only a server it started"),
            (&["drop@10s"], None, RunShape { reconnect: false, ..RUN }, "needs --reconnect"),
            (&["drop@10s"], None, RunShape { processes: 2, ..RUN }, "give no --processes"),
            (&["drop@10s"], None, RunShape { stages: true, ..RUN }, "does not combine with --stages"),
            (&["close@10s"], None, RunShape { server_processes: 2, ..RUN }, "give no --server-processes"),
            (&["command@10s"], None, RUN, "needs --disrupt-command"),
            (&[], Some("true"), RUN, "is run by --disrupt command@AT"),
            (&["restart@90s"], None, RUN, "90.0 s is not within the load's 60.0 s"),
            (&["reboot@1s"], None, RUN, "`reboot` is no disruption"),
            (&["restart"], None, RUN, "write KIND@AT"),
            (&["drop@1s,every=100ms"], None, RUN, "every must be at least 1 s"),
            (&["drop@1s,twice"], None, RUN, "the options are every=DURATION"),
            (&["drop@1s,code=1001"], None, RUN, "the options are every=DURATION"),
            (&["close@1s,code=1006"], None, RUN, "`1006` is not a close code a server may send"),
            (&["drop@soon"], None, RUN, "`soon` is not a duration"),
        ];
        for (specs, command, run, expected) in cases {
            let error = planned(specs, command, run).unwrap_err();
            assert!(error.starts_with("--disrupt"), "{error}");
            assert!(error.contains(expected), "{specs:?}: {error}");
        }
        // Drops and commands need no server of wsbench's own.
        assert!(planned(&["drop@1s", "command@2s"], Some("true"), external).is_ok());
    }

    #[test]
    fn a_repeat_every_second_of_a_week_is_bounded() {
        let week = RunShape { load: crate::config::MAX_DURATION, ..RUN };
        let plan = planned(&["drop@1s,every=1s"], None, week).unwrap();
        assert_eq!(plan.schedule(week.load).len(), MAX_DISRUPTIONS);
    }
}
