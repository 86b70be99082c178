//! The flags of `wsbench import` (not part of the library): the recording, which of its
//! connections, the speed and where the flow file goes. The import itself is the library's
//! (`wsbench::recording`).

use std::path::PathBuf;

use clap::Args;

use wsbench::config::check_output_file;
use wsbench::error::CommandError;

use crate::commands::Output;

#[derive(Debug, Args)]
pub struct ImportArgs {
    /// The recording: a HAR file (`.har`, as Chromium's DevTools exports it) or a JSONL
    /// recording (`wsbench record --out FILE.jsonl`).
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    /// Write the flow scenario file here and print what was inferred; without it, print the
    /// file (what was inferred in its opening comments).
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Which recorded connection becomes the flow (from 1).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=10_000))]
    pub connection: u64,
    /// Replay this many times faster: recorded pauses are divided by it (0.01 to 100).
    #[arg(long, default_value_t = 1.0, value_parser = speed)]
    pub speed: f64,
}

impl ImportArgs {
    pub fn import(self) -> Result<Output, CommandError> {
        if let Some(path) = &self.output {
            check_output_file("output", path)?;
        }
        let imported = wsbench::recording::import(
            &self.file,
            self.connection as usize,
            self.speed,
            self.output.as_deref(),
        )?;
        let text = match &self.output {
            Some(path) => {
                let mut text = format!("wrote {}; inferred:\n", path.display());
                for note in &imported.notes {
                    text += &format!("  {note}\n");
                }
                text
            }
            None => imported.toml,
        };
        Ok(Output { text, code: wsbench::exit::SUCCESS })
    }
}

fn speed(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(speed) if (0.01..=100.0).contains(&speed) => Ok(speed),
        _ => Err(format!("`{text}`: a factor from 0.01 to 100 (2 replays twice as fast)")),
    }
}
