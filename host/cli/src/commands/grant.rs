//! `zot ext grant` / `zot ext revoke` on the terminal: what the user allows a component,
//! or a classic extension while it is confined (`crate::records::grant`, which the shell
//! also runs).

use crate::output::error::{CliError, Context as _};
use crate::output::terminal::{cwd, Prompt, Term};
use crate::records::grant::{grant_in, revoke_in, GrantArgs, RevokeArgs};
use std::path::Path;
use zot_host::ZotHome;

/// `zot ext grant`, in the current directory and `$ZOT_HOME`, on the terminal.
pub(crate) fn grant(args: GrantArgs) -> Result<(), CliError> {
    on_terminal(format!("grant {}", args.target), args, grant_in)
}

/// `zot ext revoke`, in the current directory and `$ZOT_HOME`, on the terminal.
pub(crate) fn revoke(args: RevokeArgs) -> Result<(), CliError> {
    on_terminal(format!("revoke {}", args.target), args, revoke_in)
}

/// Runs `flow` (`grant_in` or `revoke_in`) in `$ZOT_HOME` and the current directory,
/// saying and asking on the terminal; `what` names the command if either is not found.
fn on_terminal<A>(
    what: String,
    args: A,
    flow: fn(&ZotHome, &Path, A, &mut dyn Prompt) -> Result<(), CliError>,
) -> Result<(), CliError> {
    let home = crate::flags::zot_home(None).context(&what)?;
    flow(&home, &cwd().context(&what)?, args, &mut Term)
}
