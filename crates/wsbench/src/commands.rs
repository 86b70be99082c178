//! The binary's dispatch (not part of the library): each subcommand becomes one library call,
//! and what it produced becomes the text for stdout and the exit code, decided by the
//! library's `ExitCode` rules. No measuring or rendering happens here.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};

use wsbench::config::{RunSettings, check_output_file};
use wsbench::error::{CommandError, with_causes};
use wsbench::exit;
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
    fn success(text: String) -> Output {
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
        Command::Compare(args) => compare_servers(*args, &*interrupt(true)?),
        Command::Completions { shell } => Ok(Output::success(crate::help::completions(shell))),
        Command::Man => Ok(Output::success(crate::help::man_page().map_err(CommandError::Stdout)?)),
    }
}

fn run(settings: RunSettings, interrupt: &AtomicBool, color: bool) -> Result<Output, CommandError> {
    let mut output = render_run(session::run(&settings, interrupt)?, interrupt, color);
    if let Some(path) = settings.json.as_deref().filter(|_| settings.print_result) {
        match wsbench::result::between_markers(path) {
            Ok(text) => output.text.push_str(&text),
            Err(error) => eprintln!("wsbench: --print-result: cannot read {}: {error}", path.display()),
        }
    }
    Ok(output)
}

/// The report of a run and its exit code; a report whose file could not be written is still
/// shown, its fallback file named in one line on stderr, and exits 1.
fn render_run(report: RunReport, interrupt: &AtomicBool, color: bool) -> Output {
    match report {
        RunReport::Once(result) => {
            let code = exit::of_run(&result, interrupt.load(Ordering::Relaxed));
            Output { text: report::render_text_with(&result, color), code }
        }
        RunReport::Search(search) => {
            Output { text: report::render_search(&search), code: exit::of_search(&search) }
        }
        RunReport::Unsaved { report, error, fallback } => {
            let kept = match fallback {
                Some(path) => format!("the result was written to {} instead", path.display()),
                None => "the result could not be written anywhere".to_owned(),
            };
            eprintln!("wsbench: {}; {kept}", with_causes(&error));
            Output { code: exit::FAILED, ..render_run(*report, interrupt, color) }
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
    if let Some(path) = &args.html {
        check_compare_html(path, args.out.as_deref())?;
    }
    let config = compare::CompareConfig {
        servers: args.servers,
        repeat: args.repeat,
        fleet_dir: args.fleet_dir.unwrap_or_else(fleet::default_dir),
        out: args.out,
        settings: RunSettings { scenario: args.scenario_name, ..args.settings },
    };
    let rows = compare::compare(&config, interrupt, &mut |line| eprintln!("{line}"))?;
    let views: Vec<report::CompareRow<'_>> = rows.iter().map(compare::Row::view).collect();
    let mut text = report::render_compare_table(&views);
    if rows.iter().any(|row| row.over == compare::Over::Http2Front && !row.runs.is_empty()) {
        text.push_str(compare::FRONT_NOTE);
    }
    if args.markdown {
        text.push('\n');
        text.push_str(&report::render_md(&report::median_results(&views)));
    }
    if let Some(path) = &args.html {
        report::write_compare_html(&views, path, &command_line())?;
        eprintln!("wrote {}", path.display());
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

/// The command line as it was typed, for the HTML footer: `wsbench` and the arguments.
fn command_line() -> String {
    wsbench::units::format::command_line(std::env::args().skip(1))
}
