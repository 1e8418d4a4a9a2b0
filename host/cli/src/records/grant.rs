//! What the user allows a component, or a classic
//! extension while it is confined. The grant is recorded in `$ZOT_HOME/grants/` under
//! the extension's identity (where it is installed, not its name) with the component's
//! hash (a classic extension's: the fingerprint of its files); at run time a permission
//! is in force only if the manifest asks for it and it is granted here for that very
//! code.

use crate::flags::scope::{copy_at, resolve, ScopeArgs};
use crate::output::error::{CliError, Context as _};
use crate::output::terminal::Prompt;
use std::path::{Path, PathBuf};
use zot_host::manage::identity::Identity;
use zot_host::manage::manifest::Manifest;
use zot_host::manage::records::grants::{self, Bound, Revoked};
use zot_host::manage::sandbox::{asked_words, granted_words};
use zot_host::ZotHome;

#[derive(clap::Args)]
pub(crate) struct GrantArgs {
    /// An installed extension's name, or an extension directory.
    #[arg(add = clap_complete::ArgValueCompleter::new(crate::complete::targets))]
    pub(crate) target: String,
    /// Grant everything its manifest asks for.
    #[arg(long)]
    all: bool,
    /// Grant one permission its manifest asks for: `data_dir`, `cwd`, `env:NAME`,
    /// `http:HOST`, `memory:MB`. Repeatable; adds to what was granted before.
    #[arg(long = "permission", short = 'p', value_name = "PERMISSION")]
    permissions: Vec<String>,
    #[command(flatten)]
    scope: ScopeArgs,
    /// Print what it asks and what is granted (after granting, with -p or --all) as
    /// JSON.
    #[arg(long)]
    json: bool,
}

/// With no `--all`/`--permission`, shows what is asked and granted; else records more.
/// A target that is a relative path is taken from `cwd`; what it says goes to `prompt`
/// (the shell's, when the shell runs it).
pub(crate) fn grant_in(
    home: &ZotHome,
    cwd: &Path,
    args: GrantArgs,
    prompt: &mut dyn Prompt,
) -> Result<(), CliError> {
    let what = format!("grant {}", args.target);
    if !args.json {
        return run_grant(home, cwd, args, prompt).map(drop).context(what);
    }
    let shown = run_grant(home, cwd, args, &mut crate::output::terminal::Quiet).context(what)?;
    let out = serde_json::json!({
        "name": shown.name, "dir": shown.dir, "asks": shown.asks, "limits": shown.limits,
        "granted": shown.grant, "grant_stale": shown.stale, "replaced": shown.replaced,
    });
    crate::output::terminal::print_line(&serde_json::to_string_pretty(&out).unwrap_or_default());
    Ok(())
}

/// What `grant` shows: the extension, what its manifest asks, and the grant recorded
/// after it ran (`stale`: given to another build, not applied; `replaced`: such a grant
/// was replaced now).
struct Shown {
    name: String,
    dir: PathBuf,
    asks: zot_host::manage::manifest::Permissions,
    limits: serde_json::Value,
    grant: Option<zot_host::manage::sandbox::Grant>,
    stale: bool,
    replaced: bool,
}

#[derive(clap::Args)]
pub(crate) struct RevokeArgs {
    /// An installed extension's name, or an extension directory.
    #[arg(add = clap_complete::ArgValueCompleter::new(crate::complete::targets))]
    pub(crate) target: String,
    #[command(flatten)]
    scope: ScopeArgs,
}

/// Forgets the grant of an extension (a relative path taken from `cwd`).
pub(crate) fn revoke_in(
    home: &ZotHome,
    cwd: &Path,
    args: RevokeArgs,
    prompt: &mut dyn Prompt,
) -> Result<(), CliError> {
    let what = format!("revoke {}", args.target);
    let (dir, copy) = locate_dir(home, cwd, &args.target, args.scope).context(&what)?;
    let shown = copy.map_or(args.target.clone(), |c| format!("{} ({c})", args.target));
    let id = Identity::of(&dir, home);
    match grants::revoke_permissions(home, &id).context(&what)? {
        Revoked::KeptConfinement => prompt.say(&format!(
            "revoked every permission granted to {shown}: it keeps only its data dir, \
             and stays confined"
        )),
        Revoked::Everything => prompt.say(&format!(
            "revoked every permission granted to {shown}: it keeps only its data dir"
        )),
        Revoked::Nothing => prompt.say(&format!("{shown} had no grant")),
    }
    Ok(())
}

/// The folder `target` names: a directory, or an installed name (then also which copy,
/// in words).
pub(crate) fn locate_dir(
    home: &ZotHome,
    cwd: &Path,
    target: &str,
    scope: ScopeArgs,
) -> Result<(PathBuf, Option<String>), String> {
    let path = cwd.join(target);
    if path.join("extension.json").is_file() {
        return Ok((path, None));
    }
    let (dir, scope) = resolve(home, cwd, target, scope.scope())?;
    let copy = copy_at(&dir, scope);
    Ok((dir, Some(copy)))
}

/// The manifest and folder of `args.target`, what its grant is pinned to and its hash
/// (and which copy, in words).
fn locate(
    home: &ZotHome,
    cwd: &Path,
    args: &GrantArgs,
) -> Result<(Manifest, PathBuf, Bound, String, Option<String>), String> {
    let (dir, copy) = locate_dir(home, cwd, &args.target, args.scope)?;
    let m = Manifest::read(&dir).map_err(|e| e.to_string())?;
    let (pinned, sha256) = grants::binding(&m, &dir).map_err(|e| e.to_string())?;
    Ok((m, dir, pinned, sha256, copy))
}

fn run_grant(
    home: &ZotHome,
    cwd: &Path,
    args: GrantArgs,
    prompt: &mut dyn Prompt,
) -> Result<Shown, String> {
    let (m, dir, pinned, sha256, copy) = locate(home, cwd, &args)?;
    let mut shown = Shown {
        name: m.name.clone(),
        dir: dir.clone(),
        asks: m.permissions.clone(),
        limits: serde_json::to_value(&m.limits).unwrap_or_default(),
        grant: None,
        stale: false,
        replaced: false,
    };
    let id = Identity::of(&dir, home);
    let old = grants::load(home, &id).map_err(|e| e.to_string())?;
    let other_build = match pinned {
        Bound::Component => "another build of the component",
        Bound::Classic => "other files of the extension",
        Bound::Remote => "the server at another URL or with other headers",
    };
    match &copy {
        Some(copy) => prompt.say(&format!("{} ({copy}) asks for:", m.name)),
        None => prompt.say(&format!("{} asks for:", m.name)),
    }
    prompt.list(&asked_words(&m));
    if !args.all && args.permissions.is_empty() {
        match &old {
            Some(g) if g.sha256 != sha256 => {
                prompt.say(&format!(
                    "granted to {other_build} (not applied; granting again gives it to \
                     these):"
                ));
                prompt.list(&granted_words(&m, g));
            }
            Some(g) => {
                prompt.say("granted:");
                prompt.list(&granted_words(&m, g));
            }
            None => prompt.say("granted: nothing beyond its data dir (no grant recorded)"),
        }
        shown.stale = old.as_ref().is_some_and(|g| g.sha256 != sha256);
        shown.grant = old;
        return Ok(shown);
    }
    // What is granted now is for these files only; confinement is kept.
    let granted = grants::grant(home, &id, (&m, &dir), args.all, &args.permissions)
        .map_err(|e| e.to_string())?;
    if granted.replaced {
        prompt.say(&format!("(the grant given to {other_build} is replaced)"));
    }
    let grant = granted.grant;
    prompt.say("granted:");
    prompt.list(&granted_words(&m, &grant));
    shown.replaced = granted.replaced;
    shown.grant = Some(grant);
    let runs_confined = match pinned {
        Bound::Component | Bound::Remote => true,
        Bound::Classic => !matches!(
            zot_host::manage::records::confinement_of(home, &id, &m, &dir),
            zot_host::manage::records::Confinement::Unconfined { .. }
        ),
    };
    match (pinned, runs_confined) {
        (Bound::Component | Bound::Remote, _) | (Bound::Classic, true) => {}
        (Bound::Classic, false) => prompt.say(&format!(
            "{} is not confined: it runs with your full user permissions, and this grant \
             applies once you confine it (`zot ext confine {}`, on Linux)",
            m.name, args.target
        )),
    }
    Ok(shown)
}
