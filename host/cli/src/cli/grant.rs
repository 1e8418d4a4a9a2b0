//! `zot ext grant` / `zot ext revoke`: what the user allows a component. The grant is
//! recorded in `$ZOT_HOME/grants/` under the extension's identity (where it is
//! installed, not its name) with the component's hash; at run time a permission is in
//! force only if the manifest asks for it and it is granted here for that very component.

use super::resolve::{copy_at, resolve, ScopeArgs};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use zot_host::identity::Identity;
use zot_host::manifest::{Launch, Manifest};
use zot_host::paths::ZotHome;
use zot_host::sandbox::{asked_words, granted_words, grants};

#[derive(clap::Args)]
pub(crate) struct GrantArgs {
    /// An installed extension's name, or an extension directory.
    #[arg(add = clap_complete::ArgValueCompleter::new(super::complete::targets))]
    target: String,
    /// Grant everything its manifest asks for.
    #[arg(long)]
    all: bool,
    /// Grant one permission its manifest asks for: `data_dir`, `cwd`, `env:NAME`,
    /// `http:HOST`, `memory:MB`. Repeatable; adds to what was granted before.
    #[arg(long = "permission", short = 'p', value_name = "PERMISSION")]
    permissions: Vec<String>,
    #[command(flatten)]
    scope: ScopeArgs,
}

/// With no `--all`/`--permission`, shows what is asked and granted; else records more.
pub(crate) fn grant(args: GrantArgs) -> ExitCode {
    let what = format!("grant {}", args.target);
    report(&what, run_grant(args))
}

#[derive(clap::Args)]
pub(crate) struct RevokeArgs {
    /// An installed extension's name, or an extension directory.
    #[arg(add = clap_complete::ArgValueCompleter::new(super::complete::targets))]
    target: String,
    #[command(flatten)]
    scope: ScopeArgs,
}

/// Forgets the grant of an extension.
pub(crate) fn revoke(args: RevokeArgs) -> ExitCode {
    report(
        &format!("revoke {}", args.target),
        (|| {
            let home = super::zot_home(None)?;
            let (dir, copy) = locate_dir(&home, &args.target, args.scope)?;
            let shown = copy.map_or(args.target.clone(), |c| format!("{} ({c})", args.target));
            match grants::revoke(&home, &Identity::of(&dir, &home)) {
                Ok(true) => {
                    say!("revoked every permission granted to {shown}: it keeps only its data dir")
                }
                Ok(false) => say!("{shown} had no grant"),
                Err(e) => return Err(e.to_string()),
            }
            Ok(())
        })(),
    )
}

/// Exit 0, or `zot: <what>: <why>` on stderr and exit 1.
fn report(what: &str, result: Result<(), String>) -> ExitCode {
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            esay!("zot: {what}: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The folder `target` names: a directory, or an installed name (then also which copy,
/// in words).
fn locate_dir(
    home: &ZotHome,
    target: &str,
    scope: ScopeArgs,
) -> Result<(PathBuf, Option<String>), String> {
    if Path::new(target).join("extension.json").is_file() {
        return Ok((PathBuf::from(target), None));
    }
    let (dir, scope) = resolve(home, &super::ext::cwd()?, target, scope.scope())?;
    let copy = copy_at(&dir, scope);
    Ok((dir, Some(copy)))
}

/// The manifest, folder and component of `args.target` (and which copy, in words).
fn locate(
    home: &ZotHome,
    args: &GrantArgs,
) -> Result<(Manifest, PathBuf, PathBuf, Option<String>), String> {
    let (dir, copy) = locate_dir(home, &args.target, args.scope)?;
    let m = Manifest::read(&dir).map_err(|e| e.to_string())?;
    match m.launch(&dir) {
        Launch::Wasm(wasm) => Ok((m, dir, wasm, copy)),
        Launch::Exec(_) => Err(format!(
            "{} is a classic extension (\"exec\"): it runs with your full user permissions, \
             so there is nothing to grant",
            m.name
        )),
    }
}

fn run_grant(args: GrantArgs) -> Result<(), String> {
    let home = super::zot_home(None)?;
    let (m, dir, wasm, copy) = locate(&home, &args)?;
    let id = Identity::of(&dir, &home);
    let sha256 = grants::sha256_of(&wasm).map_err(|e| e.to_string())?;
    let old = grants::load(&home, &id).map_err(|e| e.to_string())?;
    match &copy {
        Some(copy) => say!("{} ({copy}) asks for:", m.name),
        None => say!("{} asks for:", m.name),
    }
    print_list(&asked_words(&m));
    if !args.all && args.permissions.is_empty() {
        match &old {
            Some(g) if g.sha256 != sha256 => {
                say!(
                    "granted to another build of the component (not applied; granting again \
                     gives it to this one):"
                );
                print_list(&granted_words(&m, g));
            }
            Some(g) => {
                say!("granted:");
                print_list(&granted_words(&m, g));
            }
            None => say!("granted: nothing beyond its data dir (no grant recorded)"),
        }
        return Ok(());
    }
    // A grant given to another build is not carried over: what is granted now is for
    // this component only.
    if old.as_ref().is_some_and(|g| g.sha256 != sha256) {
        say!("(the grant given to another build of the component is replaced)");
    }
    let mut grant = old.filter(|g| g.sha256 == sha256).unwrap_or_default();
    grant.sha256 = sha256;
    if args.all {
        grant.add_asked(&m);
    }
    for permission in &args.permissions {
        grant.add(&m, permission).map_err(|e| e.to_string())?;
    }
    grants::save(&home, &id, &grant).map_err(|e| e.to_string())?;
    say!("granted:");
    print_list(&granted_words(&m, &grant));
    Ok(())
}

/// Prints lines as a list.
pub(crate) fn print_list(lines: &[String]) {
    for line in lines {
        say!("  - {line}");
    }
}
