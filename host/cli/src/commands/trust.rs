//! `zot ext trust [DIR]` / `zot ext untrust [DIR]` on the terminal: the user's say over a
//! project's own extensions (`crate::records::trust`, which `install` and the shell also
//! use).

use crate::output::error::{CliError, Context as _};
use crate::output::terminal::Term;
use crate::records::trust::{project_of, trust_with, TrustArgs};
use std::path::PathBuf;
use zot_host::manage::records::trust;
use zot_host::ZotHome;

#[derive(clap::Args)]
pub(crate) struct UntrustArgs {
    /// The project directory (default: the current directory).
    #[arg(value_hint = clap::ValueHint::DirPath)]
    dir: Option<PathBuf>,
}

/// `zot ext trust` on the terminal.
pub(crate) fn trust(home: &ZotHome, args: TrustArgs) -> Result<(), CliError> {
    trust_with(home, args, &mut Term)
}

/// Forgets the trust of every extension of the project.
pub(crate) fn untrust(home: &ZotHome, args: UntrustArgs) -> Result<(), CliError> {
    let (_, project) = project_of(args.dir)?;
    match trust::untrust(home, &project, None).context(format!("untrust {}", project.display()))? {
        true => say!(
            "{}'s extensions are no longer trusted: zot will not start them there.",
            project.display()
        ),
        false => say!("Nothing was trusted in {}.", project.display()),
    }
    Ok(())
}
