//! `zot ext grant` / `zot ext revoke`: what the user allows a component. The grant is
//! recorded in `$ZOT_HOME/grants/<name>.json` with the component's hash; at run time a
//! permission is in force only if the manifest asks for it and it is granted here.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use zot_host::grants;
use zot_host::install;
use zot_host::manifest::{CwdAccess, Launch, Manifest, Permissions, MAX_MEMORY_MB};
use zot_host::paths::ZotHome;
use zot_host::sandbox::{Grant, DEFAULT_MEMORY_MB};

#[derive(clap::Args)]
pub(crate) struct GrantArgs {
    /// An installed extension's name, or an extension directory.
    target: String,
    /// Grant everything its manifest asks for.
    #[arg(long)]
    all: bool,
    /// Grant one permission: `data_dir`, `cwd`, `env:NAME`, `http:HOST`, `memory:MB`.
    /// Repeatable; adds to what was granted before.
    #[arg(long = "permission", short = 'p', value_name = "PERMISSION")]
    permissions: Vec<String>,
}

/// With no `--all`/`--permission`, shows what is asked and granted; else records more.
pub(crate) fn grant(args: GrantArgs) -> ExitCode {
    report(run_grant(args))
}

/// Forgets the grant of `name`.
pub(crate) fn revoke(name: &str) -> ExitCode {
    report((|| {
        let home = super::zot_home(None)?;
        zot_host::manifest::validate_name(name)?;
        match grants::revoke(&home, name) {
            Ok(true) => {
                println!("revoked every permission granted to {name}: it keeps only its data dir")
            }
            Ok(false) => println!("{name} had no grant"),
            Err(e) => {
                return Err(format!(
                    "cannot remove {}: {e}",
                    grants::path(&home, name).display()
                ))
            }
        }
        Ok(())
    })())
}

fn report(result: Result<(), String>) -> ExitCode {
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("zot: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The manifest and component of `target`: a directory, or an installed name.
fn locate(home: &ZotHome, target: &str) -> Result<(Manifest, PathBuf), String> {
    let dir = if Path::new(target).join("extension.json").is_file() {
        PathBuf::from(target)
    } else {
        let cwd = std::env::current_dir().map_err(|e| format!("current directory: {e}"))?;
        install::find(&cwd, home, target)
            .map_err(|e| e.to_string())?
            .dir
    };
    let m = Manifest::read(&dir).map_err(|e| e.to_string())?;
    match m.launch(&dir) {
        Launch::Wasm(wasm) => Ok((m, wasm)),
        Launch::Exec(_) => Err(format!(
            "{} is a classic extension (\"exec\"): it runs with your full user permissions, \
             so there is nothing to grant",
            m.name
        )),
    }
}

fn run_grant(args: GrantArgs) -> Result<(), String> {
    let home = super::zot_home(None)?;
    let (m, wasm) = locate(&home, &args.target)?;
    let sha256 = sha256_of(&wasm)?;
    let old = grants::load(&home, &m.name)?;
    println!("{} asks for:", m.name);
    describe_asked(&m);
    if !args.all && args.permissions.is_empty() {
        match &old {
            Some(g) => {
                println!("granted:");
                describe(&g.permissions, granted_memory(g));
            }
            None => println!("granted: nothing beyond its data dir (no grant recorded)"),
        }
        return Ok(());
    }
    let mut grant = old.unwrap_or(current(&home, &m)?);
    grant.sha256 = sha256;
    if args.all {
        add_asked(&mut grant, &m);
    }
    for permission in &args.permissions {
        apply(&mut grant, permission)?;
    }
    save(&home, &m.name, &grant)?;
    println!("granted:");
    describe(&grant.permissions, granted_memory(&grant));
    Ok(())
}

/// Adds everything `m` asks for to `grant`.
fn add_asked(grant: &mut Grant, m: &Manifest) {
    let asked = &m.permissions;
    let p = &mut grant.permissions;
    p.data_dir |= asked.data_dir;
    p.cwd = p.cwd.or(asked.cwd);
    add_all(&mut p.env, &asked.env);
    add_all(&mut p.http, &asked.http);
    grant.memory_mb = grant.memory_mb.max(m.limits.memory_mb);
}

/// The recorded grant of `m`, else one of its data dir only.
fn current(home: &ZotHome, m: &Manifest) -> Result<Grant, String> {
    Ok(grants::load(home, &m.name)?.unwrap_or_else(|| Grant {
        permissions: Permissions {
            data_dir: true,
            ..Permissions::default()
        },
        ..Grant::default()
    }))
}

fn save(home: &ZotHome, name: &str, grant: &Grant) -> Result<(), String> {
    grants::save(home, name, grant)
        .map_err(|e| format!("cannot write {}: {e}", grants::path(home, name).display()))
}

fn sha256_of(wasm: &Path) -> Result<String, String> {
    let bytes = std::fs::read(wasm).map_err(|e| format!("cannot read {}: {e}", wasm.display()))?;
    Ok(zot_host::cache::sha256_hex(&bytes))
}

/// Grants everything `m` asks for (the user consented at install or update), for the
/// component `wasm`.
pub(crate) fn grant_asked(home: &ZotHome, m: &Manifest, wasm: &Path) -> Result<(), String> {
    let mut grant = current(home, m)?;
    add_asked(&mut grant, m);
    grant.sha256 = sha256_of(wasm)?;
    save(home, &m.name, &grant)
}

/// Keeps `m`'s grant as it is for the updated component `wasm` (it asks for no more).
pub(crate) fn repin(home: &ZotHome, m: &Manifest, wasm: &Path) -> Result<(), String> {
    let Some(mut grant) = grants::load(home, &m.name)? else {
        return Ok(());
    };
    grant.sha256 = sha256_of(wasm)?;
    save(home, &m.name, &grant)
}

/// What `new` asks for that `old` did not, in plain words (a change of transport counts).
pub(crate) fn grown(old: &Manifest, new: &Manifest) -> Vec<String> {
    let mut out = Vec::new();
    match (old.wasm.is_some(), new.wasm.is_some()) {
        (true, false) => out.push(
            "run as a classic program with your full user permissions (it was sandboxed)".into(),
        ),
        (false, true) | (false, false) => return out,
        (true, true) => {}
    }
    let (a, b) = (&old.permissions, &new.permissions);
    if b.data_dir && !a.data_dir {
        out.push("read and write its own data directory".into());
    }
    if b.cwd.is_some() && a.cwd.is_none() {
        out.push("read (not write) the project directory".into());
    }
    for name in b.env.iter().filter(|n| !a.env.contains(n)) {
        out.push(format!("read the environment variable {name}"));
    }
    for host in b.http.iter().filter(|h| !a.http.contains(h)) {
        out.push(format!("make HTTP requests to {host}"));
    }
    let memory = |m: &Manifest| m.limits.memory_mb.unwrap_or(DEFAULT_MEMORY_MB);
    if memory(new) > memory(old).max(DEFAULT_MEMORY_MB) {
        out.push(format!("use up to {} MiB of memory", memory(new)));
    }
    out
}

/// Prints what `m` asks for, in plain words.
pub(crate) fn describe_asked(m: &Manifest) {
    describe(
        &m.permissions,
        m.limits.memory_mb.unwrap_or(DEFAULT_MEMORY_MB),
    );
}

/// The most memory `grant` allows (never less than the default).
fn granted_memory(grant: &Grant) -> u64 {
    grant
        .memory_mb
        .unwrap_or(DEFAULT_MEMORY_MB)
        .max(DEFAULT_MEMORY_MB)
}

fn add_all(to: &mut Vec<String>, items: &[String]) {
    for item in items {
        if !to.contains(item) {
            to.push(item.clone());
        }
    }
}

/// Adds one `--permission` to `grant`.
fn apply(grant: &mut Grant, permission: &str) -> Result<(), String> {
    let p = &mut grant.permissions;
    match permission.split_once(':') {
        None if permission == "data_dir" => p.data_dir = true,
        None if permission == "cwd" => p.cwd = Some(CwdAccess::Read),
        Some(("cwd", "read")) => p.cwd = Some(CwdAccess::Read),
        Some(("env", name)) if !name.is_empty() => add_all(&mut p.env, &[name.to_string()]),
        Some(("http", host)) => {
            zot_host::sandbox::HostPattern::parse(host)?;
            add_all(&mut p.http, &[host.to_string()]);
        }
        Some(("memory", mb)) => {
            let mb: u64 = mb
                .parse()
                .ok()
                .filter(|mb| (1..=MAX_MEMORY_MB).contains(mb))
                .ok_or_else(|| format!("memory:{mb}: give a number of MiB, 1 to {MAX_MEMORY_MB}"))?;
            grant.memory_mb = Some(mb);
        }
        _ => {
            return Err(format!(
                "unknown permission {permission:?}: use data_dir, cwd, env:NAME, http:HOST or memory:MB"
            ))
        }
    }
    Ok(())
}

/// Prints permissions in plain words.
fn describe(p: &Permissions, memory_mb: u64) {
    if p.data_dir {
        println!("  - read and write its own data directory (seen as /data)");
    }
    if p.cwd.is_some() {
        println!("  - read (not write) the project directory");
    }
    for name in &p.env {
        println!("  - read the environment variable {name}");
    }
    for host in &p.http {
        println!("  - make HTTP requests to {host}");
    }
    println!("  - use up to {memory_mb} MiB of memory");
}
