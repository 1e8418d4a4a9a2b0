//! `zot ext guard <name|dir> [--fail-closed|--fail-open]`: whether a `tool_call` guard
//! that cannot answer (no answer in time, an exit, not running) blocks the call — the
//! user's choice, recorded outside the extension like a grant — or allows it, as the
//! protocol says by default.

use crate::flags::scope::ScopeArgs;
use crate::output::error::{CliError, Context as _};
use crate::output::terminal::cwd;
use crate::records::grant::locate_dir;
use crate::records::guard::failure_words;
use zot_host::manage::identity::Identity;
use zot_host::manage::manifest::Manifest;
use zot_host::manage::records::guard;
use zot_host::ZotHome;

#[derive(clap::Args)]
pub(crate) struct GuardArgs {
    /// An installed extension's name, or an extension directory.
    #[arg(add = clap_complete::ArgValueCompleter::new(crate::complete::targets))]
    target: String,
    /// A tool call it cannot answer is blocked, with a reason naming it.
    #[arg(long, conflicts_with = "fail_open")]
    fail_closed: bool,
    /// A tool call it cannot answer is allowed (the protocol's default).
    #[arg(long)]
    fail_open: bool,
    #[command(flatten)]
    scope: ScopeArgs,
}

/// Shows, or sets, how the guard fails.
pub(crate) fn guard(home: &ZotHome, args: GuardArgs) -> Result<(), CliError> {
    let what = format!("guard {}", args.target);
    let (dir, copy) =
        locate_dir(home, &cwd().context(&what)?, &args.target, args.scope).context(&what)?;
    let m = Manifest::read(&dir).context(&what)?;
    let id = Identity::of(&dir, home);
    let shown = match copy {
        Some(copy) => format!("{} ({copy})", m.name),
        None => m.name.clone(),
    };
    let choice = match (args.fail_closed, args.fail_open) {
        (true, _) => Some(true),
        (_, true) => Some(false),
        (false, false) => None,
    };
    if let Some(fail_closed) = choice {
        let changed = guard::choose(home, &id, fail_closed)
            .map_err(|e| {
                format!(
                    "cannot record it in {}: {e}",
                    home.guard_path(&id).display()
                )
            })
            .context(&what)?;
        if !changed {
            say!(
                "{shown} already fails {}.",
                if fail_closed { "closed" } else { "open" }
            );
            return Ok(());
        }
    }
    say!("{shown} {}", failure_words(&guard::load(home, &id)));
    if choice.is_some() {
        say!("It takes effect the next time zot starts (or reloads).");
    }
    Ok(())
}
