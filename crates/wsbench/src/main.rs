//! The `wsbench` binary: parses flags and hands them to the library. Exit codes (see
//! docs/exit-codes.md): 0 success (a run: completed with no error counted), 1 the command
//! failed (or a shard of a `run --processes` died; the merged result is still written), 2 bad
//! usage (flags, scenario files), 3 a run completed but counted failures (connect timeouts,
//! resets, close frames, … `summary.errors` is not empty; its result is still written), 130 a
//! run interrupted by Ctrl-C (its result is still written). `compare` and `--find-max-rate`
//! exit 0 when they complete: their tables say what failed.

use std::io::{IsTerminal, Write};
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use anyhow::Context;
use clap::Parser;
use wsbench::cli::{Cli, Command, CompareArgs, FleetCommand, ReportArgs, RunArgs};

const EXIT_USAGE: u8 = 2;
/// The run completed, but counted failures (`summary.errors` is not empty).
const EXIT_RUN_FAILURES: u8 = wsbench::run::EXIT_RUN_FAILURES;
const EXIT_INTERRUPTED: u8 = 130;

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Run(args) => run(*args),
        Command::Report(args) => report(args),
        Command::Fleet(command) => fleet(command),
        Command::Compare(args) => compare(*args),
        Command::Serve(args) => args.serve().map(|()| ExitCode::SUCCESS).map_err(Into::into),
        Command::Merge(args) => wsbench::merge::command(&args.files, args.output.as_deref())
            .map_err(Into::into)
            .and_then(|merged| {
                let color = std::io::stdout().is_terminal();
                print(&wsbench::report::render_merge(&merged, args.output.is_some(), color))
            })
            .map(|()| ExitCode::SUCCESS),
        Command::Rtt(args) => wsbench::rtt::command(args)
            .and_then(|result| print(&wsbench::report::render_rtt(&result)))
            .map(|()| ExitCode::SUCCESS),
    };
    match result {
        Ok(code) => code,
        Err(error) => {
            eprintln!("wsbench: {error:#}");
            let usage = error.downcast_ref::<wsbench::config::ConfigError>().is_some();
            ExitCode::from(if usage { EXIT_USAGE } else { 1 })
        }
    }
}

fn run(args: RunArgs) -> anyhow::Result<ExitCode> {
    let config = args.into_config()?;
    let interrupt = Arc::new(AtomicBool::new(false));
    for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        // A second Ctrl-C ends the process at once.
        signal_hook::flag::register_conditional_shutdown(signal, 130, interrupt.clone())?;
        signal_hook::flag::register(signal, interrupt.clone())?;
    }
    if let Some(slo) = config.find_max_rate.clone() {
        let search = wsbench::run::find_max_rate(config, slo, &interrupt)?;
        print(&wsbench::report::render_search(&search))?;
        return Ok(if search.interrupted { ExitCode::from(EXIT_INTERRUPTED) } else { ExitCode::SUCCESS });
    }
    let result = wsbench::run::run(config, &interrupt)?;
    print(&wsbench::report::render_text_with(&result, std::io::stdout().is_terminal()))?;
    // Interrupted without Ctrl-C: a shard of a `--processes` run died.
    let ctrl_c = interrupt.load(std::sync::atomic::Ordering::Relaxed);
    Ok(match (result.interrupted, ctrl_c) {
        (false, _) if !result.summary.errors.is_empty() => ExitCode::from(EXIT_RUN_FAILURES),
        (false, _) => ExitCode::SUCCESS,
        (true, true) => ExitCode::from(EXIT_INTERRUPTED),
        (true, false) => ExitCode::FAILURE,
    })
}

fn fleet(command: FleetCommand) -> anyhow::Result<ExitCode> {
    use wsbench::fleet;
    match command {
        FleetCommand::List { fleet_dir } => {
            let servers = fleet::load(&fleet_dir.unwrap_or_else(fleet::default_dir))?;
            let mut text =
                format!("{:<24} {:<11} {:<22} {:<16} status\n", "name", "language", "library", "version");
            for manifest in &servers {
                text.push_str(&fleet::status_line(manifest));
                text.push('\n');
            }
            print(&text)?;
        }
        FleetCommand::Install { names, force, fleet_dir } => {
            let servers = fleet::load(&fleet_dir.unwrap_or_else(fleet::default_dir))?;
            // No names: every manifest, the HTTP-only baseline (nginx) included.
            let selected =
                if names.is_empty() { servers.iter().collect() } else { fleet::select(&servers, &names)? };
            let mut failed = Vec::new();
            for manifest in selected {
                if let Err(error) =
                    fleet::install(manifest, force, &mut |line| eprintln!("fleet install {line}"))
                {
                    eprintln!("wsbench: {error}");
                    failed.push(manifest.name.clone());
                }
            }
            if !failed.is_empty() {
                anyhow::bail!(
                    "fleet install failed for {} (see above); the others are installed",
                    failed.join(", ")
                );
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn compare(args: CompareArgs) -> anyhow::Result<ExitCode> {
    let interrupt = Arc::new(AtomicBool::new(false));
    for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register_conditional_shutdown(signal, 130, interrupt.clone())?;
        signal_hook::flag::register(signal, interrupt.clone())?;
    }
    let mut settings = args.settings;
    settings.scenario = args.scenario_name;
    let config = wsbench::compare::CompareConfig {
        servers: args.servers,
        repeat: args.repeat,
        fleet_dir: args.fleet_dir.unwrap_or_else(wsbench::fleet::default_dir),
        out: args.out,
        settings,
    };
    let rows = wsbench::compare::compare(&config, &interrupt, &mut |line| eprintln!("{line}"))?;
    print(&wsbench::report::render_compare_table(&rows))?;
    if args.markdown {
        print(&format!("\n{}", wsbench::report::render_md(&wsbench::report::median_results(&rows))))?;
    }
    if let Some(path) = &args.html {
        wsbench::report::write_compare_html(&rows, path)?;
        eprintln!("wrote {}", path.display());
    }
    Ok(ExitCode::SUCCESS)
}

fn report(args: ReportArgs) -> anyhow::Result<ExitCode> {
    if let Some(html) = &args.html {
        wsbench::report::write_html_report(&args.files, html)?;
        eprintln!("wsbench: wrote {}", html.display());
    }
    let text = wsbench::report::report_command_with(
        &args.files,
        args.format.into(),
        std::io::stdout().is_terminal(),
    )?;
    print(&text)?;
    Ok(ExitCode::SUCCESS)
}

/// Writes to stdout; a closed pipe (`| head`) is not an error.
fn print(text: &str) -> anyhow::Result<()> {
    let mut stdout = std::io::stdout().lock();
    match stdout.write_all(text.as_bytes()).and_then(|()| stdout.flush()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => other.context("writing to stdout"),
    }
}
