//! What `--help` adds to the flags clap derives (not part of the library): the default of each
//! core option of `run` and `compare`, taken from the library's constants and the registries
//! (so it cannot drift from what a run does), the protocols `--protocol` takes, and `compare
//! --help` without the `run` flags compare refuses. The settings are `Option`s so that a
//! scenario file can set them and a scenario can pick its own default; clap's `default_value`
//! would override both, so the default is written into the help instead, as clap writes one:
//! `[default: X]` at the end, the one way every option of every command says its default.

use clap::Command;
use wsbench::config::{self, Defaults, Pace, Pacing, Payload, RunSettings};
use wsbench::scenario::SCENARIOS;
use wsbench::units::format::bytes;
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
        ("send_window", format_duration(config::DEFAULT_SEND_WINDOW)),
        ("run_id", "a new one".to_owned()),
        ("ramp", "as fast as possible".to_owned()),
        ("reply_timeout", format_duration(config::DEFAULT_REPLY_TIMEOUT)),
        ("tls_version", "either".to_owned()),
        (
            "max_message",
            format!(
                "{}, or the largest message the run sends if larger",
                bytes(wsbench_proto::DEFAULT_MAX_MESSAGE)
            ),
        ),
        (
            "max_message_memory",
            format!("{}, or --max-message if larger", bytes(wsbench_server::DEFAULT_MAX_MESSAGE_MEMORY)),
        ),
        ("dashboard", format!("off; --dashboard alone: {}", config::DEFAULT_DASHBOARD_ADDR)),
        ("io", format!("{} where the kernel allows it; epoll for wss://", config::IoBackend::DEFAULT.name())),
        ("protocol", wsbench::protocol::DEFAULT.to_owned()),
        ("transport", wsbench::engine::dial::DIALS[0].flag_name().to_owned()),
    ]
}

/// What an option's help names of a registry, after its own words: `--protocol`'s protocols.
fn core_choices() -> Vec<(&'static str, String)> {
    let protocols = wsbench::scenario::or_list(&wsbench::protocol::names());
    vec![("protocol", format!(": {protocols} (each described under Protocols below)"))]
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

/// `command` (`run` or `compare`) with the choices a registry gives an option after its
/// help, and each core option's default at the end of it.
pub fn with_defaults(command: Command) -> Command {
    let defaults = core_defaults().into_iter().map(|(id, default)| (id, format!(" [default: {default}]")));
    core_choices().into_iter().chain(defaults).fold(command, |command, (id, text)| {
        if command.get_arguments().all(|arg| arg.get_id() != id) {
            return command;
        }
        command.mut_arg(id, |arg| {
            let help = arg.get_help().map(ToString::to_string).unwrap_or_default();
            arg.help(format!("{help}{text}"))
        })
    })
}

/// The protocols `--protocol` takes, each with what it is: the end of `run --help`.
pub fn protocols_help() -> String {
    let lines = wsbench::protocol::PROTOCOLS
        .iter()
        .map(|protocol| format!("  {:<12} {}", protocol.name(), protocol.about()));
    std::iter::once("Protocols (--protocol NAME):".to_owned()).chain(lines).collect::<Vec<_>>().join("\n")
}

/// `compare` without the flags of `run` it refuses (it still names them if given), nor
/// `--slo`, which only `--find-max-rate` takes.
pub fn without_refused(command: Command) -> Command {
    let refused: Vec<&str> = wsbench::compare::REFUSED_SETTINGS.iter().copied().chain(["slo"]).collect();
    without(command, &refused)
        .mut_arg("transport", |arg| arg.help(compare_transport_help()).value_name("NAME[,NAME…]"))
}

/// What compare's `--transport` takes: a list of the registry's transports, each a row per
/// server beside the default one's.
fn compare_transport_help() -> String {
    let dials = wsbench::engine::dial::DIALS;
    let others: Vec<&str> = dials[1..].iter().map(|dial| dial.flag_name()).collect();
    format!(
        "Also measure every server over these transports, comma-separated ({}): a row per server \
         and transport beside its {} row; natively where its server.toml lists the transport, \
         else through an HAProxy front (HTTP/2 only; a server without HTTP/3 gets a row saying \
         so). Rows over QUIC are served with a certificate compare makes, and trusted by it alone",
        others.join(","),
        dials[0].flag_name()
    )
}

/// `command` without the flags it refuses (`names`, as their flags are written).
pub fn without(command: Command, names: &[&str]) -> Command {
    names
        .iter()
        .map(|setting| setting.replace('-', "_"))
        .fold(command, |command, id| command.mut_arg(id, |arg| arg.hide(true)))
}

/// The long help of `diff`, for a newcomer: what is compared, how many runs a side the rank
/// test needs, what happens with fewer (and when that is too little), what Holm's correction
/// and the noise band do, and what `--fail-on` gates. The numbers are the library's own.
pub fn diff_about() -> String {
    use wsbench::diff::{MIN_BLOCK_SECONDS, MIN_BLOCKS, MIN_RUNS_FOR_RANK_TEST, MIN_SECONDS};
    let per_second = wsbench::diff::figures_kept_per_second().join(", ");
    format!(
        "Compare repeated runs before and after a change: per figure, the change with a confidence
interval and a verdict (better, worse, no difference).

What is compared: result files of `wsbench run --json`, the base runs before `--` and the new
runs after it, all of the same benchmark (scenario, settings, wsbench version, machine and
transport; runs that differ are refused unless --force). For each figure both sides measured
(the rate, latency p50, p90, p99 and p99.9, connect p99, errors per million messages, server
CPU per round trip, server RSS peak) the table shows the median of each side's runs, the
change, its confidence interval at 1 − alpha, the p-value and the verdict.

{MIN_RUNS_FOR_RANK_TEST} or more runs a side: the Mann–Whitney U rank test over the runs, and the Hodges–Lehmann
interval of the shift. This is the way to a verdict that covers how much runs differ from one
another: repeat each benchmark {MIN_RUNS_FOR_RANK_TEST} times or more.

Fewer runs: a block bootstrap of each run's per-second values (consecutive seconds resampled
in blocks of {MIN_BLOCK_SECONDS} s or more, with a fixed seed) around the change of the medians. It tests the
figures results keep per second ({per_second}); the others are \"untested\".
Every run needs {MIN_SECONDS} measured seconds ({MIN_BLOCKS} blocks; the warm-up and the last, partial second
do not count: give --duration 12s or more). With fewer, the verdict is \"too little data\",
with no interval and no p-value. The bootstrap cannot see how much runs differ from one another.

Holm: with many figures tested at once, some would look changed by chance alone. Holm's
correction raises the p-values so that the chance of even one false \"better\" or \"worse\"
anywhere in the diff stays below --alpha.

Noise band: a change counts only when it is significant after Holm and its whole interval lies
outside ±--noise of the base value; a real but tiny change is \"no difference\".

--fail-on FIGURE:+N% (a rise) or FIGURE:-N% (a drop) makes diff exit 99 when the diff counts
that figure's change and it went past N% in that direction: a gate for CI, as --threshold is
for a run. A figure with too little data or untested never fails a gate: its line says \"not
judged\"."
    )
}

/// The completion script of `shell` for the whole command line, as clap defines it.
pub fn completions(shell: clap_complete::Shell) -> String {
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut crate::cli::command(), "wsbench", &mut script);
    String::from_utf8_lossy(&script).into_owned()
}

/// The man page (roff): one page, `wsbench(1)`: the top of it, a list of the subcommands
/// naming the section each has further down, then those sections (`WSBENCH RUN`, `WSBENCH
/// FLEET INSTALL`, …) with their synopsis, description and options. There are no pages of
/// their own (`wsbench-run(1)`), so the list names none.
pub fn man_page() -> Result<String, std::io::Error> {
    let mut command = crate::cli::command();
    command.build();
    let man = clap_mangen::Man::new(command.clone());
    let mut page = Vec::new();
    man.render_title(&mut page)?;
    man.render_name_section(&mut page)?;
    man.render_synopsis_section(&mut page)?;
    man.render_description_section(&mut page)?;
    man.render_options_section(&mut page)?;
    let mut text = String::from_utf8_lossy(&page).into_owned();
    let subcommands = sections_of(&command);
    text.push_str(".SH SUBCOMMANDS\n");
    for sub in &subcommands {
        let name = format!("wsbench {}", sub.get_name());
        let about = sub.get_about().map(ToString::to_string).unwrap_or_default();
        let section = name.to_uppercase();
        text.push_str(&format!(
            ".TP\n\\fB{}\\fR\n{} (section {} below)\n",
            roff(&name),
            roff(&about),
            roff(&section)
        ));
    }
    let mut version = Vec::new();
    man.render_version_section(&mut version)?;
    text.push_str(&String::from_utf8_lossy(&version));
    for sub in subcommands {
        man_sections(sub, &mut text)?;
    }
    Ok(text)
}

/// `command`'s subcommands that have a section, in the order `--help` lists them.
fn sections_of(command: &Command) -> Vec<&Command> {
    let mut subs: Vec<&Command> =
        command.get_subcommands().filter(|sub| !sub.is_hide_set() && sub.get_name() != "help").collect();
    subs.sort_by_key(|sub| sub.get_display_order());
    subs
}

/// `text` safe in the body of a roff line: backslashes and hyphens escaped, a leading dot
/// or quote made text.
fn roff(text: &str) -> String {
    let escaped = text.replace('\\', "\\e").replace('-', "\\-");
    match escaped.starts_with(['.', '\'']) {
        true => format!("\\&{escaped}"),
        false => escaped,
    }
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
    for sub in sections_of(command) {
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

    /// `text` without its `[default: …]` parts, and how many it had.
    fn without_defaults(text: &str) -> (String, usize) {
        let (mut rest, mut count) = (text.to_owned(), 0);
        while let Some(start) = rest.find("[default: ") {
            // The default may hold brackets of its own (`[{payload}]`): the one that closes it
            // ends the entry or is followed by a space.
            let after = &rest[start..];
            let end = after
                .match_indices(']')
                .map(|(at, _)| at)
                .find(|&at| after[at + 1..].is_empty() || after[at + 1..].starts_with(char::is_whitespace));
            let end = start + end.unwrap_or(after.len() - 1) + 1;
            rest.replace_range(start..end, "");
            count += 1;
        }
        (rest, count)
    }

    #[test]
    fn every_option_of_run_that_takes_a_value_says_its_default_once_and_one_way() {
        let help = help_of("run");
        let (mut missing, mut twice) = (Vec::new(), Vec::new());
        for (flag, text) in entries(&help) {
            let takes_value = text.contains('<');
            let (_, defaults) = without_defaults(&text);
            if takes_value && !WITHOUT_DEFAULT.contains(&flag.as_str()) && defaults == 0 {
                missing.push(flag.clone());
            }
            if defaults > 1 {
                twice.push(flag);
            }
        }
        assert!(missing.is_empty(), "options of run without a [default: …] in --help: {missing:?}");
        assert!(twice.is_empty(), "options of run that say their default twice: {twice:?}");
        assert!(help.contains("--connections <CONNECTIONS>") && help.contains("[default: 1000]"), "{help}");
        let duration = entries(&help).into_iter().find(|(flag, _)| flag == "--duration").unwrap().1;
        assert!(duration.contains("[default: 10s; c10k: 300s]"), "{duration}");
    }

    /// Every argument of `command` and its subcommands, by path, with its help as `--help`
    /// shows it (clap's own `[default: …]` included).
    fn every_help(command: &Command, path: &str, found: &mut Vec<(String, String)>) {
        let mut command = command.clone();
        command.build();
        for arg in command.get_arguments().filter(|arg| !arg.is_hide_set()) {
            let mut help =
                arg.get_long_help().or(arg.get_help()).map(ToString::to_string).unwrap_or_default();
            let defaults: Vec<String> =
                arg.get_default_values().iter().map(|value| value.to_string_lossy().into_owned()).collect();
            if !defaults.is_empty() && arg.get_action().takes_values() && !arg.is_hide_default_value_set() {
                help.push_str(&format!(" [default: {}]", defaults.join(",")));
            }
            found.push((format!("{path} {}", arg.get_id()), help));
        }
        for sub in command.get_subcommands() {
            every_help(sub, &format!("{path} {}", sub.get_name()), found);
        }
    }

    #[test]
    fn every_default_in_every_help_is_written_one_way() {
        let mut helps = Vec::new();
        every_help(&crate::cli::command(), "wsbench", &mut helps);
        let mut other_ways = Vec::new();
        for (arg, help) in &helps {
            let (rest, count) = without_defaults(help);
            // A switch says what happens without it ("by default they are accepted").
            if rest.replace("by default", "").contains("default") {
                other_ways.push(format!("{arg}: {help}"));
            }
            if count > 1 {
                other_ways.push(format!("{arg} (twice): {help}"));
            }
        }
        assert!(
            other_ways.is_empty(),
            "defaults not written as [default: X] once:\n{}",
            other_ways.join("\n")
        );
        let hold = helps.iter().find(|(arg, _)| arg == "wsbench run hold").unwrap();
        assert!(hold.1.ends_with("(at most 7 days) [default: 5s]"), "{hold:?}");
    }

    #[test]
    fn the_protocols_are_listed_where_protocol_is_described() {
        let help = help_of("run");
        let protocol = entries(&help).into_iter().find(|(flag, _)| flag == "--protocol").unwrap().1;
        let protocol = protocol.trim_end();
        let names = wsbench::protocol::names();
        assert!(protocol.contains(&wsbench::scenario::or_list(&names)), "{protocol}");
        assert!(protocol.ends_with("[default: raw]") && !protocol.contains("--help"), "{protocol}");
        for name in names {
            assert!(help.contains(&format!("\n  {name:<12} ")), "{name} is not described below: {help}");
        }
        let scenario = entries(&help).into_iter().find(|(flag, _)| flag == "--scenario").unwrap().1;
        assert!(scenario.starts_with("--scenario <NAME|FILE>"), "{scenario}");
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
        assert!(help.contains("Also measure every server over these transports, comma-separated"), "{help}");
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
    fn the_man_page_lists_its_sections_and_no_page_that_does_not_exist() {
        let page = man_page().unwrap();
        assert!(!page.contains("wsbench\\-run(1)") && !page.contains("(1)\n"), "pages of their own named");
        let list = &page[page.find(".SH SUBCOMMANDS").unwrap()..page.find(".SH VERSION").unwrap()];
        assert!(list.contains(".TP\n\\fBwsbench run\\fR\nRun a benchmark scenario"), "{list}");
        let command = crate::cli::command();
        for sub in command.get_subcommands().filter(|sub| !sub.is_hide_set() && sub.get_name() != "help") {
            let section = format!("WSBENCH {}", sub.get_name().to_uppercase());
            assert!(list.contains(&format!("(section {section} below)")), "{section} not listed: {list}");
            assert!(page.contains(&format!(".SH \"{section}\"")), "{section} listed but missing");
        }
        assert!(!list.contains("wsbench help"), "clap's help subcommand has no section: {list}");
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
