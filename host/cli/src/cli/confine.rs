//! `zot ext confine` / `zot ext unconfine`: the user's decision to run a classic extension
//! confined (Linux: Landlock and seccomp), recorded in its grant with the fingerprint of
//! its files; it runs confined, with what is granted in the grant's words, or not at all.

use super::error::{CliError, Context as _};
use super::grant::locate_dir;
use super::resolve::ScopeArgs;
use super::terminal::cwd;
use std::path::Path;
use zot_host::manage::grants;
use zot_host::manage::identity::Identity;
use zot_host::manage::manifest::{Launch, Manifest};
use zot_host::ZotHome;

#[derive(clap::Args)]
pub(crate) struct ConfineArgs {
    /// An installed extension's name, or an extension directory.
    #[arg(add = clap_complete::ArgValueCompleter::new(super::complete::targets))]
    target: String,
    #[command(flatten)]
    scope: ScopeArgs,
}

/// `zot ext confine`.
pub(crate) fn confine(args: ConfineArgs) -> Result<(), CliError> {
    let what = format!("confine {}", args.target);
    let home = super::zot_home(None).context(&what)?;
    set(&home, &cwd().context(&what)?, &args, true).context(what)
}

/// `zot ext unconfine`.
pub(crate) fn unconfine(args: ConfineArgs) -> Result<(), CliError> {
    let what = format!("unconfine {}", args.target);
    let home = super::zot_home(None).context(&what)?;
    set(&home, &cwd().context(&what)?, &args, false).context(what)
}

fn set(home: &ZotHome, cwd: &Path, args: &ConfineArgs, on: bool) -> Result<(), String> {
    let (dir, copy) = locate_dir(home, cwd, &args.target, args.scope)?;
    let m = Manifest::read(&dir).map_err(|e| e.to_string())?;
    let shown = copy.map_or(m.name.clone(), |c| format!("{} ({c})", m.name));
    match m.launch(&dir) {
        Launch::Exec(_) => {}
        Launch::Wasm(_) => {
            return Err(format!(
                "{shown} is a component: it always runs in the sandbox (`zot ext grant` sets what it may reach)"
            ))
        }
    }
    let id = Identity::of(&dir, home);
    let old = grants::load(home, &id).map_err(|e| e.to_string())?;
    if !on {
        match old {
            Some(mut grant) if grant.confine => {
                grant.confine = false;
                grants::save(home, &id, &grant).map_err(|e| e.to_string())?;
                say!("{shown} is no longer confined: it runs with your full user permissions");
            }
            Some(_) | None => say!("{shown} was not confined"),
        }
        return Ok(());
    }
    let digest = zot_host::manage::trust::digest(&dir, Some(&m)).map_err(|e| e.to_string())?;
    // What was granted to other files is not carried over.
    let mut grant = old.filter(|g| g.sha256 == digest).unwrap_or_default();
    grant.sha256 = digest;
    grant.confine = true;
    grants::save(home, &id, &grant).map_err(|e| e.to_string())?;
    let (abi, rules) = zot_host::confine::kernel_report(&Default::default());
    say!("{shown} is confined (Landlock ABI {abi} here):");
    for rule in rules {
        match rule.not_enforced {
            None => say!("  enforced      {}", rule.what),
            Some(why) => say!("  NOT enforced  {} ({why})", rule.what),
        }
    }
    Ok(())
}
