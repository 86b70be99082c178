//! The `wsbench` binary: parses flags and hands them to the library. Exit codes: 0 success,
//! 1 the command failed, 2 bad usage (flags, scenario files), 130 a run interrupted by
//! Ctrl-C (its result is still written).

use std::io::{IsTerminal, Write};
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use anyhow::Context;
use clap::Parser;
use wsbench::cli::{Cli, Command, ReportArgs, RunArgs};

const EXIT_USAGE: u8 = 2;
const EXIT_INTERRUPTED: u8 = 130;

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Run(args) => run(*args),
        Command::Report(args) => report(args),
        Command::Serve(args) => wsbench_server::serve_until_signalled(&args.into_config())
            .map(|()| ExitCode::SUCCESS)
            .map_err(Into::into),
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
    let result = wsbench::run::run(config, &interrupt)?;
    print(&wsbench::report::render_text_with(&result, std::io::stdout().is_terminal()))?;
    Ok(if result.interrupted { ExitCode::from(EXIT_INTERRUPTED) } else { ExitCode::SUCCESS })
}

fn report(args: ReportArgs) -> anyhow::Result<ExitCode> {
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
