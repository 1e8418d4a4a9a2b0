//! `zot host`: the JSON-lines sidecar (docs/sidecar.md).

use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args)]
pub(crate) struct HostArgs {
    /// The project directory.
    #[arg(long)]
    cwd: Option<PathBuf>,
}

pub(crate) fn run(_args: HostArgs) -> ExitCode {
    eprintln!("zot: not implemented yet");
    ExitCode::FAILURE
}
