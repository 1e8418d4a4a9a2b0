//! `zot ext grant` / `zot ext revoke`: what the user allows a component. The grant is
//! recorded in `$ZOT_HOME/grants/<name>.json` with the component's hash; at run time a
//! permission is in force only if the manifest asks for it and it is granted here.

use super::resolve::{copy_at, resolve, ScopeArgs};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use zot_host::manifest::{Launch, Manifest};
use zot_host::paths::ZotHome;
use zot_host::sandbox::{asked_words, granted_words, grants};

#[derive(clap::Args)]
pub(crate) struct GrantArgs {
    /// An installed extension's name, or an extension directory.
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

/// Forgets the grant of `name`.
pub(crate) fn revoke(name: &str) -> ExitCode {
    report(
        &format!("revoke {name}"),
        (|| {
            let home = super::zot_home(None)?;
            zot_host::manifest::validate_name(name)?;
            match grants::revoke(&home, name) {
                Ok(true) => println!(
                    "revoked every permission granted to {name}: it keeps only its data dir"
                ),
                Ok(false) => println!("{name} had no grant"),
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
            eprintln!("zot: {what}: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The manifest and component of `args.target`: a directory, or an installed name
/// (then also which copy, in words).
fn locate(home: &ZotHome, args: &GrantArgs) -> Result<(Manifest, PathBuf, Option<String>), String> {
    let target = &args.target;
    let (dir, copy) = if Path::new(target).join("extension.json").is_file() {
        (PathBuf::from(target), None)
    } else {
        let (dir, scope) = resolve(home, &super::ext::cwd()?, target, args.scope.scope())?;
        let copy = copy_at(&dir, scope);
        (dir, Some(copy))
    };
    let m = Manifest::read(&dir).map_err(|e| e.to_string())?;
    match m.launch(&dir) {
        Launch::Wasm(wasm) => Ok((m, wasm, copy)),
        Launch::Exec(_) => Err(format!(
            "{} is a classic extension (\"exec\"): it runs with your full user permissions, \
             so there is nothing to grant",
            m.name
        )),
    }
}

fn run_grant(args: GrantArgs) -> Result<(), String> {
    let home = super::zot_home(None)?;
    let (m, wasm, copy) = locate(&home, &args)?;
    let sha256 = grants::sha256_of(&wasm).map_err(|e| e.to_string())?;
    let old = grants::load(&home, &m.name).map_err(|e| e.to_string())?;
    match &copy {
        Some(copy) => println!("{} ({copy}) asks for:", m.name),
        None => println!("{} asks for:", m.name),
    }
    print_list(&asked_words(&m));
    if !args.all && args.permissions.is_empty() {
        match &old {
            Some(g) => {
                println!("granted:");
                print_list(&granted_words(g));
            }
            None => println!("granted: nothing beyond its data dir (no grant recorded)"),
        }
        return Ok(());
    }
    let mut grant = old.unwrap_or_default();
    grant.sha256 = sha256;
    if args.all {
        grant.add_asked(&m);
    }
    for permission in &args.permissions {
        grant.add(&m, permission).map_err(|e| e.to_string())?;
    }
    grants::save(&home, &m.name, &grant).map_err(|e| e.to_string())?;
    println!("granted:");
    print_list(&granted_words(&grant));
    Ok(())
}

/// Prints lines as a list.
pub(crate) fn print_list(lines: &[String]) {
    for line in lines {
        println!("  - {line}");
    }
}
