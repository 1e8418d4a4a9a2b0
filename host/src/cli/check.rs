//! `zot ext check <path>`.

use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args)]
pub(crate) struct CheckArgs {
    /// The extension's directory or its extension.json.
    path: PathBuf,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
}

pub(crate) fn run(_args: CheckArgs) -> ExitCode {
    eprintln!("zot: not implemented yet");
    ExitCode::FAILURE
}
