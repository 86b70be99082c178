//! The `wsbench` binary: parses flags, hands the command to the library, prints what it
//! returns and exits with the code the library decides (docs/exit-codes.md). A closed
//! stdout pipe (`| head`) is not an error.

// A command ends with at most one error, once per process: its size does not matter.
#![allow(clippy::result_large_err)]

mod cli;
mod commands;
mod help;
mod import_args;
mod record_args;
mod series_args;
mod serve_args;

use std::io::Write;

use wsbench::error::{CommandError, with_causes};
use wsbench::exit::ExitCode;

fn main() -> std::process::ExitCode {
    wsbench::allocator::return_large_buffers_to_the_kernel();
    let cli = cli::parse();
    let outcome = commands::execute(cli.command).and_then(|output| print(&output.text).map(|()| output.code));
    std::process::ExitCode::from(match outcome {
        Ok(code) => code,
        Err(error) => {
            // Said if stderr is still open; the exit code says it either way.
            let _ = writeln!(std::io::stderr(), "wsbench: {}", with_causes(&error));
            error.exit_code()
        }
    })
}

fn print(text: &str) -> Result<(), CommandError> {
    let mut stdout = std::io::stdout().lock();
    match stdout.write_all(text.as_bytes()).and_then(|()| stdout.flush()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => other.map_err(CommandError::Stdout),
    }
}
