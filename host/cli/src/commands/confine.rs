//! `zot ext confine` / `zot ext unconfine`: the user's decision to run a classic extension
//! confined (Linux: Landlock and seccomp), recorded in its grant with the fingerprint of
//! its files; it runs confined, with what is granted in the grant's words, or not at all.
//! With `--default`, the host-wide choice (`settings.json`): every classic extension the
//! user did not unconfine runs confined.

use crate::flags::scope::ScopeArgs;
use crate::output::error::{CliError, Context as _};
use crate::output::terminal::cwd;
use crate::records::grant::locate_dir;
use std::path::Path;
use zot_host::manage::identity::Identity;
use zot_host::manage::manifest::{Launch, Manifest};
use zot_host::manage::records::{consent, Settings};
use zot_host::ZotHome;

/// Which extensions `confine` and `unconfine` act on.
#[derive(clap::Args)]
pub(crate) struct UnconfineArgs {
    /// An installed extension's name, or an extension directory.
    #[arg(
        add = clap_complete::ArgValueCompleter::new(crate::complete::targets),
        required_unless_present = "default"
    )]
    target: Option<String>,
    /// Every classic extension by default, recorded in `$ZOT_HOME/settings.json`
    /// (`unconfine NAME` exempts one as its files are).
    #[arg(long, conflicts_with = "target")]
    default: bool,
    #[command(flatten)]
    scope: ScopeArgs,
}

#[derive(clap::Args)]
pub(crate) struct ConfineArgs {
    #[command(flatten)]
    which: UnconfineArgs,
    /// Confine: do not start where this kernel cannot enforce one of the rules.
    #[arg(long)]
    require_confinement: bool,
}

/// `zot ext confine`.
pub(crate) fn confine(args: ConfineArgs) -> Result<(), CliError> {
    run("confine", &args.which, args.require_confinement, true)
}

/// `zot ext unconfine`.
pub(crate) fn unconfine(args: UnconfineArgs) -> Result<(), CliError> {
    run("unconfine", &args, false, false)
}

fn run(verb: &str, which: &UnconfineArgs, require: bool, on: bool) -> Result<(), CliError> {
    let what = match &which.target {
        Some(target) => format!("{verb} {target}"),
        None => format!("{verb} --default"),
    };
    let home = crate::flags::zot_home(None).context(&what)?;
    match &which.target {
        None => set_default(&home, on, require).context(what),
        Some(target) => set(
            &home,
            &cwd().context(&what)?,
            target,
            which.scope,
            require,
            on,
        )
        .context(what),
    }
}

/// Confines every classic extension by default, or no longer.
fn set_default(home: &ZotHome, on: bool, require: bool) -> Result<(), String> {
    let settings =
        consent::set_default_confinement(home, on, require).map_err(|e| e.to_string())?;
    if on {
        say!(
            "Every classic extension runs confined from its next start, except those you \
             unconfine (`zot ext unconfine NAME`){}:",
            if settings.require_confinement {
                ", and none starts where a rule cannot be enforced"
            } else {
                ""
            }
        );
        say_rules();
    } else {
        say!(
            "Classic extensions are no longer confined by default: only those you confine \
             (`zot ext confine NAME`) are"
        );
    }
    Ok(())
}

fn set(
    home: &ZotHome,
    cwd: &Path,
    target: &str,
    scope: ScopeArgs,
    require: bool,
    on: bool,
) -> Result<(), String> {
    let (dir, copy) = locate_dir(home, cwd, target, scope)?;
    let m = Manifest::read(&dir).map_err(|e| e.to_string())?;
    let shown = copy.map_or(m.name.clone(), |c| format!("{} ({c})", m.name));
    match m.launch(&dir) {
        Launch::Exec(_) => {}
        Launch::Wasm(_) => {
            return Err(format!(
                "{shown} is a component: it always runs in the sandbox (`zot ext grant` sets what it may reach)"
            ))
        }
        Launch::Remote(_) => {
            return Err(format!(
                "{shown} is a remote MCP server: nothing runs here to confine (`zot ext grant` sets which host it may reach)"
            ))
        }
    }
    let id = Identity::of(&dir, home);
    let Some(grant) =
        consent::set_confinement(home, &id, (&m, &dir), on, require).map_err(|e| e.to_string())?
    else {
        say!("{shown} was not confined");
        return Ok(());
    };
    if !on {
        say!("{shown} is no longer confined: it runs with your full user permissions");
        if Settings::load(home).is_ok_and(|s| s.confine_classic) {
            say!(
                "(confining by default does not apply to it while its files are as they are \
                 now)"
            );
        }
        return Ok(());
    }
    say!("{shown} is confined{}:", landlock_here());
    say_rules();
    say!("It may reach, beyond that (`zot ext grant {target}` to change it):");
    for line in zot_host::manage::sandbox::granted_words(&m, &grant) {
        say!("  - {}", zot_host::terminal_text::one_line(&line));
    }
    Ok(())
}

/// ` (Landlock ABI N here)`.
fn landlock_here() -> String {
    #[cfg(target_os = "linux")]
    {
        let (abi, _) = zot_host::manage::confine::kernel_report(&Default::default());
        format!(" (Landlock ABI {abi} here)")
    }
    #[cfg(not(target_os = "linux"))]
    {
        " (confinement needs Linux: it will not start on this system)".to_string()
    }
}

/// Each rule, and whether this kernel enforces it: what each start applies (a start
/// where less held fails), and what `info` then shows as applied.
fn say_rules() {
    #[cfg(target_os = "linux")]
    {
        for rule in zot_host::manage::confine::kernel_report(&Default::default()).1 {
            match rule.not_enforced {
                None => say!("  enforced      {}", rule.what),
                Some(why) => say!("  NOT enforced  {} ({why})", rule.what),
            }
        }
        say!("  (each start applies these or does not start; `zot ext info` shows its last)");
    }
}
