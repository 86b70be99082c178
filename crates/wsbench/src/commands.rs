//! The binary's dispatch (not part of the library): each subcommand becomes one library call,
//! and what it produced becomes the text for stdout and the exit code, decided by the
//! library's `ExitCode` rules. No measuring or rendering happens here.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};

use wsbench::config::{RunSettings, check_output_file};
use wsbench::error::{CommandError, with_causes};
use wsbench::exit;
use wsbench::live::dashboard::{self, event::Ending};
use wsbench::session::{self, RunReport};
use wsbench::{compare, fleet, report};

use crate::cli::{Command, CompareArgs, FleetCommand, ReportArgs};

/// What a command prints on stdout, and the status it exits with.
#[derive(Debug)]
pub struct Output {
    pub text: String,
    pub code: u8,
}

impl Output {
    pub fn success(text: String) -> Output {
        Output { text, code: exit::SUCCESS }
    }
}

/// Runs one subcommand. The commands that measure install the signal handlers first (the
/// server has its own); a shard leaves saying which signal stopped it to its parent.
pub fn execute(command: Command) -> Result<Output, CommandError> {
    let color = std::io::stdout().is_terminal();
    let interrupt = |announce| session::interrupt::install(announce).map_err(CommandError::Signals);
    match command {
        Command::Run(args) => {
            let settings = args.into_settings()?;
            let interrupt = interrupt(!settings.progress_to_parent)?;
            run(settings, &interrupt, color)
        }
        Command::Report(args) => report_files(&args, color),
        Command::Merge(args) => {
            if let Some(path) = &args.output {
                check_output_file("output", path)?;
            }
            let merged = wsbench::merge::command(&args.files, args.output.as_deref(), args.partial)?;
            Ok(Output::success(report::render_merge(&merged, args.output.is_some(), color)))
        }
        Command::Serve(args) => args.serve().map(|()| Output::success(String::new())).map_err(Into::into),
        Command::Rtt(settings) => Ok(Output::success(report::render_rtt(&wsbench::rtt::command(settings)?))),
        Command::Fleet(command) => fleet_command(command),
        Command::Sweep(args) => {
            let settings = args.into_sweep_settings()?;
            sweep(&settings, &*interrupt(true)?)
        }
        Command::Compare(args) => match args.into_compare()? {
            (args, None) => compare_servers(args, &*interrupt(true)?),
            (args, Some(sweep)) => compare_sweeps(args, sweep, &*interrupt(true)?),
        },
        Command::Diff(args) => {
            let format = args.format;
            let diff = wsbench::diff::command(&args.into_settings())?;
            Ok(Output { text: diff.render(format), code: diff.exit_code() })
        }
        Command::Completions { shell } => Ok(Output::success(crate::help::completions(shell))),
        Command::Import(args) => args.import(),
        Command::Man => Ok(Output::success(crate::help::man_page().map_err(CommandError::Stdout)?)),
    }
}

fn run(settings: RunSettings, interrupt: &AtomicBool, color: bool) -> Result<Output, CommandError> {
    let page = open_dashboard(&settings)?;
    let report = session::run(&settings, interrupt).inspect_err(|error| {
        // The page ends with the error the terminal shows.
        let report = format!("wsbench: {}", with_causes(error));
        page.iter().for_each(|page| page.finish(&Ending { report: report.clone(), ..Ending::default() }));
    })?;
    let html = settings.html.as_deref().zip(report.result());
    let html_failed = html.is_some_and(|(path, result)| !write_run_html(path, result));
    let ending = page.as_ref().map(|_| Ending {
        report: plain_report(&report),
        result: report.result(),
        html: html.filter(|_| !html_failed).map(|(path, _)| path),
    });
    let mut output = render_run(&report, interrupt, color);
    if html_failed {
        output.code = output.code.max(exit::FAILED);
    }
    if let Some(path) = settings.json.as_deref().filter(|_| settings.print_result) {
        match wsbench::result::between_markers(path) {
            Ok(text) => output.text.push_str(&text),
            Err(error) => eprintln!("wsbench: --print-result: cannot read {}: {error}", path.display()),
        }
    }
    if let (Some(page), Some(ending)) = (&page, &ending) {
        page.finish(ending);
    }
    Ok(output)
}

/// `wsbench sweep`: every step checked before any load, measured, reported; the page
/// written where asked.
fn sweep(settings: &wsbench::sweep::SweepSettings, interrupt: &AtomicBool) -> Result<Output, CommandError> {
    let report = session::sweep::run(settings, interrupt, &mut |line| eprintln!("wsbench: {line}"))?;
    let mut output = render_run(&report, interrupt, false);
    if let (Some(path), Some(sweep)) = (settings.settings.html.as_deref(), report.sweep()) {
        match report::write_sweep_html(std::slice::from_ref(sweep), path, &command_line()) {
            Ok(()) => eprintln!("wsbench: wrote {}", path.display()),
            Err(error) => {
                eprintln!("wsbench: --html: {}", with_causes(&error));
                output.code = output.code.max(exit::FAILED);
            }
        }
    }
    Ok(output)
}

/// `compare --sweep`: each server swept in turn, one table of steps each, their curves on
/// one page.
fn compare_sweeps(
    args: CompareArgs,
    sweep: wsbench::sweep::SweepSettings,
    interrupt: &AtomicBool,
) -> Result<Output, CommandError> {
    let html = args.settings.html.clone();
    if let Some(path) = &html {
        check_compare_html(path, args.out.as_deref())?;
    }
    let config = compare::CompareConfig {
        servers: args.servers,
        repeat: args.repeat,
        fleet_dir: args.fleet_dir.unwrap_or_else(fleet::default_dir),
        out: args.out,
        settings: RunSettings { scenario: args.scenario_name, html: None, ..args.settings },
    };
    let swept = compare::compare_sweeps(&config, &sweep, interrupt, &mut |line| eprintln!("{line}"))?;
    let mut text = String::new();
    let mut failed = false;
    for (label, outcome) in &swept {
        match outcome {
            Ok(sweep) => {
                text.push_str(&report::render_sweep(sweep));
                failed |= exit::of_sweep(sweep, false) != exit::SUCCESS;
            }
            Err(problem) => {
                text.push_str(&format!("{label}: {problem}\n"));
                failed = true;
            }
        }
        text.push('\n');
    }
    let sweeps: Vec<_> = swept.into_iter().filter_map(|(_, outcome)| outcome.ok()).collect();
    if let Some(path) = &html {
        report::write_sweep_html(&sweeps, path, &command_line())?;
        eprintln!("wrote {}", path.display());
    }
    Ok(Output { text, code: exit::of_compare(failed, interrupt.load(Ordering::Relaxed)) })
}

/// The report of a run or a search as text without colours (the live page's last words).
fn plain_report(report: &RunReport) -> String {
    match report {
        RunReport::Once(result) => report::render_text(result),
        RunReport::Search(search) => report::render_search(search),
        RunReport::Sweep(sweep) => report::render_sweep(sweep),
        RunReport::Unsaved { report, .. } => plain_report(report),
    }
}

/// `--dashboard`: the live page, open before any load (a taken port is a usage error).
fn open_dashboard(settings: &RunSettings) -> Result<Option<dashboard::Open>, CommandError> {
    let Some(addr) = settings.dashboard_addr()? else { return Ok(None) };
    let page = dashboard::serve(addr)?;
    // Said even with --quiet: with port 0 this is how the browser learns the port.
    eprintln!("wsbench: live page at http://{}/", page.addr());
    Ok(Some(page))
}

/// `run --html FILE`: the run's HTML report; a failure is said on stderr (the run's report
/// and result file stand) and makes the command fail.
fn write_run_html(path: &std::path::Path, result: &wsbench::result::RunResult) -> bool {
    let label = path.file_stem().map_or_else(|| "run".to_owned(), |stem| stem.to_string_lossy().into_owned());
    match report::write_run_html(&label, result, path, &command_line()) {
        Ok(()) => {
            eprintln!("wsbench: wrote {}", path.display());
            true
        }
        Err(error) => {
            eprintln!("wsbench: --html: {}", with_causes(&error));
            false
        }
    }
}

/// The report of a run and its exit code; a report whose file could not be written is still
/// shown, its fallback file named in one line on stderr, and exits 1.
fn render_run(report: &RunReport, interrupt: &AtomicBool, color: bool) -> Output {
    match report {
        RunReport::Once(result) => {
            let code = exit::of_run(result, interrupt.load(Ordering::Relaxed));
            Output { text: report::render_text_with(result, color), code }
        }
        RunReport::Search(search) => {
            Output { text: report::render_search(search), code: exit::of_search(search) }
        }
        RunReport::Sweep(sweep) => Output {
            text: report::render_sweep(sweep),
            code: exit::of_sweep(sweep, interrupt.load(Ordering::Relaxed)),
        },
        RunReport::Unsaved { report, error, fallback } => {
            let kept = match fallback {
                Some(path) => format!("the result was written to {} instead", path.display()),
                None => "the result could not be written anywhere".to_owned(),
            };
            eprintln!("wsbench: {}; {kept}", with_causes(error));
            Output { code: exit::FAILED, ..render_run(report, interrupt, color) }
        }
    }
}

fn report_files(args: &ReportArgs, color: bool) -> Result<Output, CommandError> {
    if let Some(html) = &args.html {
        check_output_file("html", html)?;
        report::write_html_report(&args.files, html, &command_line())?;
        eprintln!("wsbench: wrote {}", html.display());
    }
    Ok(Output::success(report::report_command_with(&args.files, args.format, color)?))
}

fn fleet_command(command: FleetCommand) -> Result<Output, CommandError> {
    let servers = |dir: Option<std::path::PathBuf>| fleet::load(&dir.unwrap_or_else(fleet::default_dir));
    match command {
        FleetCommand::List { fleet_dir } => Ok(Output::success(fleet::list_table(&servers(fleet_dir)?))),
        FleetCommand::Install { names, force, fleet_dir } => {
            fleet::install_all(&servers(fleet_dir)?, &names, force, &mut |line| {
                eprintln!("fleet install {line}")
            })?;
            Ok(Output::success(String::new()))
        }
    }
}

fn compare_servers(args: CompareArgs, interrupt: &AtomicBool) -> Result<Output, CommandError> {
    let html = args.settings.html.clone();
    if let Some(path) = &html {
        check_compare_html(path, args.out.as_deref())?;
    }
    let page = open_dashboard(&args.settings)?;
    let config = compare::CompareConfig {
        servers: args.servers,
        repeat: args.repeat,
        fleet_dir: args.fleet_dir.unwrap_or_else(fleet::default_dir),
        out: args.out,
        // Each run writes to the one page this process opened.
        settings: RunSettings { scenario: args.scenario_name, dashboard: None, html: None, ..args.settings },
    };
    let rows = compare::compare(&config, interrupt, &mut |line| {
        eprintln!("{line}");
        if let Some(page) = &page {
            page.note(line);
        }
    })?;
    let views: Vec<report::CompareRow<'_>> = rows.iter().map(compare::Row::view).collect();
    let mut text = report::render_compare_table(&views);
    if rows.iter().any(|row| row.over.front && !row.runs.is_empty()) {
        text.push_str(compare::FRONT_NOTE);
    }
    if args.markdown {
        text.push('\n');
        text.push_str(&report::render_md(&report::median_results(&views)));
    }
    if let Some(path) = &html {
        report::write_compare_html(&views, path, &command_line())?;
        eprintln!("wrote {}", path.display());
    }
    if let Some(page) = &page {
        page.finish(&Ending { report: text.clone(), result: None, html: html.as_deref() });
    }
    Ok(Output {
        text,
        code: exit::of_compare(rows.iter().any(compare::Row::failed), interrupt.load(Ordering::Relaxed)),
    })
}

/// `compare --html PATH`: a file that can be written, or one that goes straight into the
/// `--out` folder the same command creates (then that folder is what is checked).
fn check_compare_html(path: &std::path::Path, out: Option<&std::path::Path>) -> Result<(), CommandError> {
    let plain = |p: &std::path::Path| -> std::path::PathBuf {
        p.components().filter(|c| !matches!(c, std::path::Component::CurDir)).collect()
    };
    let into_out = out.is_some_and(|out| path.parent().is_some_and(|parent| plain(parent) == plain(out)));
    match out {
        Some(out) if into_out && !out.exists() => Ok(wsbench::config::check_output_folder("out", out)?),
        _ => Ok(check_output_file("html", path)?),
    }
}

/// The command line as it was typed, for the HTML footer: `wsbench` and the arguments, each
/// secret shown as `<redacted>` (a protocol's secret option, `--bearer`, `--cookie`, a URL's
/// password).
fn command_line() -> String {
    wsbench::units::format::command_line(redacted_args(std::env::args().skip(1)))
}

/// `args` with the value of each secret flag (`--password X`, `--password=X`) and a URL's
/// password replaced by `<redacted>`.
fn redacted_args(args: impl Iterator<Item = String>) -> impl Iterator<Item = String> {
    use wsbench::config::{REDACTED, redact_password};
    let mut secret = wsbench::members::secret_flags();
    secret.extend(["--bearer".to_owned(), "--cookie".to_owned()]);
    let mut value_next = false;
    args.map(move |arg| {
        if std::mem::take(&mut value_next) {
            return REDACTED.to_owned();
        }
        match arg.split_once('=') {
            Some((flag, _)) if secret.iter().any(|s| s == flag) => format!("{flag}={REDACTED}"),
            _ => {
                value_next = secret.contains(&arg);
                redact_password(&arg)
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::redacted_args;

    #[test]
    fn the_command_line_shows_no_secret() {
        let typed = [
            "run",
            "ws://u:pw@127.0.0.1:1/",
            "--password",
            "hunter2",
            "--password-env",
            "MQTT_PASS",
            "--bearer=tok",
            "--cookie",
            "c=1",
            "--username",
            "u",
        ];
        let shown: Vec<String> = redacted_args(typed.iter().map(|arg| arg.to_string())).collect();
        assert_eq!(
            shown,
            [
                "run",
                "ws://u:<redacted>@127.0.0.1:1/",
                "--password",
                "<redacted>",
                "--password-env",
                "MQTT_PASS",
                "--bearer=<redacted>",
                "--cookie",
                "<redacted>",
                "--username",
                "u"
            ]
        );
    }
}
