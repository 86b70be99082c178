//! The `wsbench` binary: parses flags and hands them to the library. Exit codes: 0 success,
//! 1 the command failed, 2 bad usage (flags, scenario files).

use std::process::ExitCode;

use clap::Parser;
use wsbench::cli::{Cli, Command};

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Serve(args) => {
            wsbench_server::serve_until_signalled(&args.into_config()).map_err(anyhow::Error::from)
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("wsbench: {error:#}");
            ExitCode::FAILURE
        }
    }
}
