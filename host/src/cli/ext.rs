//! `zot ext list|install|remove|enable|disable|logs`.

use super::ExtCommand;
use std::process::ExitCode;

/// Runs one management subcommand.
pub(crate) fn run(_cmd: ExtCommand) -> ExitCode {
    eprintln!("zot: not implemented yet");
    ExitCode::FAILURE
}
