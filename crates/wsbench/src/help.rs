//! What `--help` adds to the flags clap derives (not part of the library): the default of each
//! core option of `run` and `compare`, taken from the library's constants and the scenario
//! registry (so it cannot drift from what a run does), and `compare --help` without the
//! `run` flags compare refuses. The settings are `Option`s so that a scenario file can set
//! them and a scenario can pick its own default; clap's `default_value` would override both,
//! so the default is written into the help instead.

use clap::Command;
use wsbench::config::{self, Defaults, Pace, Pacing, Payload, RunSettings};
use wsbench::scenario::SCENARIOS;
use wsbench::units::format_duration;

/// Each core option of `run` whose own help does not already say its default, with the text
/// of its default. Options that have none (a file to write, a header) are not listed.
fn core_defaults() -> Vec<(&'static str, String)> {
    let standard = Defaults::standard();
    let differing = |what: &dyn Fn(&Defaults) -> String| {
        let usual = what(&standard);
        let others: Vec<String> = SCENARIOS
            .iter()
            .map(|scenario| (scenario.name(), what(&scenario.defaults())))
            .filter(|(_, value)| *value != usual)
            .map(|(name, value)| format!("{name}: {value}"))
            .collect();
        std::iter::once(usual).chain(others).collect::<Vec<_>>().join("; ")
    };
    vec![
        ("connections", config::DEFAULT_CONNECTIONS.to_string()),
        ("clients", "as --connections".to_owned()),
        ("arrival", scenario_values(|s| s.defaults().ramp_per_sec.map(|per_sec| seconds(1.0 / per_sec)))),
        ("interval", open_loop_default(|pace| matches!(pace, Pace::Interval(_)))),
        ("rate", open_loop_default(|pace| matches!(pace, Pace::Rate(_)))),
        ("max_send_lag", format_duration(config::DEFAULT_MAX_SEND_LAG)),
        ("slo", "none; --find-max-rate needs one".to_owned()),
        ("shard", "the whole run".to_owned()),
        ("start_at", "at once".to_owned()),
        ("wait_for_target", "no waiting".to_owned()),
        ("duration", differing(&|d| format_duration(d.duration))),
        ("warmup", differing(&|d| format_duration(d.warmup))),
        ("hold", format_duration(wsbench::scenario::DEFAULT_HOLD)),
        ("in_flight", config::DEFAULT_IN_FLIGHT.to_string()),
        ("payload", differing(&|d| payload(&d.payload))),
        ("payload_bytes", "the scenario's payload".to_owned()),
        ("frames_per_send", differing(&|d| d.frames_per_send.unwrap_or(1).to_string())),
        ("connect_timeout", format_duration(config::DEFAULT_CONNECT_TIMEOUT)),
        ("client_cpus", "every CPU the process may use, less the built-in server's".to_owned()),
        ("server_cpus", "the first CPU, when there are two or more".to_owned()),
        ("source_addrs", "the kernel's choice".to_owned()),
        ("server_pid", "the process listening on the target's port".to_owned()),
        ("processes", "1".to_owned()),
        ("stages", "none: one load for the whole --duration".to_owned()),
        ("server_processes", "1".to_owned()),
    ]
}

/// `name: value` for each scenario that has a value, joined.
fn scenario_values(value: impl Fn(&dyn config::ScenarioRules) -> Option<String>) -> String {
    let values: Vec<String> = SCENARIOS
        .iter()
        .filter_map(|scenario| value(*scenario).map(|value| format!("{}: {value}", scenario.name())))
        .collect();
    values.join("; ")
}

/// `--rate` or `--interval`: none (a closed loop), except where a scenario paces itself.
fn open_loop_default(of_kind: impl Fn(&Pace) -> bool) -> String {
    let paced = scenario_values(|scenario| match scenario.pacing(&RunSettings::default()) {
        Ok(Pacing::Messages { default: Some(pace), .. }) if of_kind(&pace) => Some(pace_text(pace)),
        Ok(Pacing::Connections { default_rate }) if of_kind(&Pace::Rate(default_rate)) => {
            Some(pace_text(Pace::Rate(default_rate)))
        }
        _ => None,
    });
    match paced.is_empty() {
        true => "none: a closed loop".to_owned(),
        false => format!("none: a closed loop; {paced}"),
    }
}

fn pace_text(pace: Pace) -> String {
    match pace {
        Pace::Rate(per_sec) => format!("{per_sec}/s"),
        Pace::Interval(interval) => format_duration(interval),
    }
}

fn seconds(secs: f64) -> String {
    format_duration(std::time::Duration::from_secs_f64(secs))
}

fn payload(payload: &Payload) -> String {
    match payload {
        Payload::JsonTs => "json-ts".to_owned(),
        Payload::Bytes(bytes) => format!("bytes:{bytes}"),
        Payload::Text(_) => "text:FILE".to_owned(),
    }
}

/// `command` (`run` or `compare`) with each core option's default at the end of its help.
pub fn with_defaults(command: Command) -> Command {
    core_defaults().into_iter().fold(command, |command, (id, default)| {
        if command.get_arguments().all(|arg| arg.get_id() != id) {
            return command;
        }
        command.mut_arg(id, |arg| {
            let help = arg.get_help().map(ToString::to_string).unwrap_or_default();
            arg.help(format!("{help} [default: {default}]"))
        })
    })
}

/// `compare` without the flags of `run` it refuses (it still names them if given), nor
/// `--slo`, which only `--find-max-rate` takes.
pub fn without_refused(command: Command) -> Command {
    wsbench::compare::REFUSED_SETTINGS
        .iter()
        .chain(&["slo"])
        .map(|setting| setting.replace('-', "_"))
        .fold(command, |command, id| command.mut_arg(id, |arg| arg.hide(true)))
}

/// The completion script of `shell` for the whole command line, as clap defines it.
pub fn completions(shell: clap_complete::Shell) -> String {
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut crate::cli::command(), "wsbench", &mut script);
    String::from_utf8_lossy(&script).into_owned()
}

/// The man page (roff): the top-level page, then a section per subcommand (`WSBENCH RUN`,
/// `WSBENCH FLEET INSTALL`, …) with its synopsis, description and options.
pub fn man_page() -> Result<String, std::io::Error> {
    let mut command = crate::cli::command();
    command.build();
    let mut page = Vec::new();
    clap_mangen::Man::new(command.clone()).render(&mut page)?;
    let mut text = String::from_utf8_lossy(&page).into_owned();
    for sub in command.get_subcommands().filter(|sub| !sub.is_hide_set() && sub.get_name() != "help") {
        man_sections(sub, &mut text)?;
    }
    Ok(text)
}

/// `command`'s section of the man page, and its subcommands' after it.
fn man_sections(command: &Command, text: &mut String) -> Result<(), std::io::Error> {
    let name = command.get_bin_name().unwrap_or(command.get_name()).to_uppercase();
    text.push_str(&format!(".SH \"{name}\"\n"));
    let man = clap_mangen::Man::new(command.clone());
    let mut section = Vec::new();
    man.render_synopsis_section(&mut section)?;
    man.render_description_section(&mut section)?;
    if command.get_arguments().any(|arg| !arg.is_hide_set()) {
        man.render_options_section(&mut section)?;
    }
    if command.get_after_help().is_some() {
        man.render_extra_section(&mut section)?;
    }
    // Each part is a section of its own in clap_mangen; here they are subsections.
    for line in String::from_utf8_lossy(&section).lines() {
        match line.strip_prefix(".SH ") {
            Some(heading) => text.push_str(&format!(".SS {heading}\n")),
            None => {
                text.push_str(line);
                text.push('\n');
            }
        }
    }
    for sub in command.get_subcommands().filter(|sub| !sub.is_hide_set() && sub.get_name() != "help") {
        man_sections(sub, text)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The flags of `run` that take a value and have no default to speak of: what to write,
    /// what to send, or a choice with no neutral value.
    const WITHOUT_DEFAULT: &[&str] = &[
        "--threshold",
        "--json",
        "--html",
        "--data",
        "--hlog",
        "--header",
        "--header-file",
        "--subprotocol",
        "--origin",
        "--bearer",
        "--cookie",
        "--cacert",
        "--client-cert",
        "--client-key",
        "--sni",
        "--compression",
        "--metrics-addr",
        "--stream",
        "--scenario",
    ];

    fn help_of(command: &str) -> String {
        let mut cli = crate::cli::command();
        cli.find_subcommand_mut(command).unwrap().render_long_help().to_string()
    }

    /// Each `--flag <VALUE>` entry of a help text, with its description.
    fn entries(help: &str) -> Vec<(String, String)> {
        let mut entries: Vec<(String, String)> = Vec::new();
        for line in help.lines() {
            let trimmed = line.trim_start();
            if trimmed.starts_with("--") && line.starts_with("      --") {
                let flag = trimmed.split([' ', '<']).next().unwrap().to_owned();
                entries.push((flag, trimmed.to_owned()));
            } else if let Some((_, text)) = entries.last_mut() {
                text.push(' ');
                text.push_str(trimmed);
            }
        }
        entries
    }

    #[test]
    fn every_option_of_run_that_takes_a_value_says_its_default() {
        let help = help_of("run");
        let mut missing = Vec::new();
        for (flag, text) in entries(&help) {
            let takes_value = text.contains('<');
            if takes_value && !WITHOUT_DEFAULT.contains(&flag.as_str()) && !text.contains("default") {
                missing.push(flag);
            }
        }
        assert!(missing.is_empty(), "options of run without a default in --help: {missing:?}");
        assert!(help.contains("--connections <CONNECTIONS>") && help.contains("[default: 1000]"), "{help}");
        let duration = entries(&help).into_iter().find(|(flag, _)| flag == "--duration").unwrap().1;
        assert!(duration.contains("[default: 10s; c10k: 300s]"), "{duration}");
    }

    #[test]
    fn compare_help_lists_only_what_compare_takes() {
        let help = help_of("compare");
        let flags: Vec<String> = entries(&help).into_iter().map(|(flag, _)| flag).collect();
        for refused in wsbench::compare::REFUSED_SETTINGS.iter().chain(&["slo"]) {
            assert!(!flags.contains(&format!("--{refused}")), "--{refused} in compare --help:\n{help}");
        }
        for taken in ["--servers", "--repeat", "--connections <", "--duration <"] {
            assert!(help.contains(taken), "{taken} missing from compare --help");
        }
        assert!(help.contains("[default: 1000]"), "compare's core options say their defaults too");
    }

    #[test]
    fn the_bash_completions_know_every_subcommand_and_the_flags_of_run() {
        let script = completions(clap_complete::Shell::Bash);
        for word in
            ["run", "compare", "serve", "rtt", "fleet", "install", "completions", "man", "--connections"]
        {
            assert!(script.contains(word), "{word} missing from the bash completions");
        }
        for shell in [clap_complete::Shell::Zsh, clap_complete::Shell::Fish] {
            assert!(completions(shell).contains("in-flight"), "{shell}");
        }
    }

    #[test]
    fn the_man_page_is_roff_with_a_section_per_subcommand() {
        let page = man_page().unwrap();
        assert!(page.starts_with(".ie \\n(.g .ds Aq \\(aq") || page.contains("\n.TH wsbench "), "{page}");
        for sub in crate::cli::command().get_subcommands().filter(|sub| sub.get_name() != "help") {
            let heading = format!(".SH \"WSBENCH {}\"", sub.get_name().to_uppercase());
            assert!(page.contains(&heading), "{heading} missing");
        }
        assert!(page.contains(".SH \"WSBENCH FLEET INSTALL\""));
        assert!(!page.contains(".SH \"WSBENCH HELP"), "clap's help subcommand has no section");
        assert!(page.contains("[default: 1000]"), "the defaults reach the man page");
        // Every line is text or a request (a dot and a name), never a stray control.
        for line in page.lines().filter(|line| line.starts_with('.')) {
            assert!(
                line.len() > 1 && line.as_bytes()[1].is_ascii_alphabetic() || line.starts_with(".\\\""),
                "{line}"
            );
        }
    }

    #[test]
    fn every_argument_of_every_subcommand_is_described() {
        fn undescribed(command: &Command, path: &str, found: &mut Vec<String>) {
            for arg in command.get_arguments().filter(|arg| !arg.is_hide_set()) {
                if arg.get_help().is_none() && !["help", "version"].contains(&arg.get_id().as_str()) {
                    found.push(format!("{path} {}", arg.get_id()));
                }
            }
            for sub in command.get_subcommands() {
                undescribed(sub, &format!("{path} {}", sub.get_name()), found);
            }
        }
        let mut found = Vec::new();
        undescribed(&crate::cli::command(), "wsbench", &mut found);
        assert!(found.is_empty(), "arguments without a description: {found:?}");
    }
}
