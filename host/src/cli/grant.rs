//! `zot ext grant` / `zot ext revoke`: what the user allows a component. The grant is
//! recorded in `$ZOT_HOME/grants/<name>.json` with the component's hash; at run time a
//! permission is in force only if the manifest asks for it and it is granted here.

use super::resolve::{copy_at, resolve, ScopeArgs};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use zot_host::grants;
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
                Err(e) => {
                    return Err(format!(
                        "cannot remove {}: {e}",
                        grants::path(&home, name).display()
                    ))
                }
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
    let sha256 = sha256_of(&wasm)?;
    let old = grants::load(&home, &m.name)?;
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
    let mut grant = old.unwrap_or(current(&home, &m)?);
    grant.sha256 = sha256;
    if args.all {
        add_asked(&mut grant, &m);
    }
    for permission in &args.permissions {
        apply(&mut grant, &m, permission)?;
    }
    save(&home, &m.name, &grant)?;
    println!("granted:");
    print_list(&granted_words(&grant));
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
    match (old.wasm.is_some(), new.wasm.is_some()) {
        (true, false) => {
            return vec![
                "run as a classic program with your full user permissions (it was sandboxed)"
                    .into(),
            ]
        }
        (false, true) | (false, false) => return Vec::new(),
        (true, true) => {}
    }
    let (a, b) = (&old.permissions, &new.permissions);
    let added = Permissions {
        data_dir: b.data_dir && !a.data_dir,
        cwd: b.cwd.filter(|_| a.cwd.is_none()),
        env: b
            .env
            .iter()
            .filter(|n| !a.env.contains(n))
            .cloned()
            .collect(),
        http: b
            .http
            .iter()
            .filter(|h| !a.http.contains(h))
            .cloned()
            .collect(),
    };
    let memory = |m: &Manifest| m.limits.memory_mb.unwrap_or(DEFAULT_MEMORY_MB);
    let more_memory = Some(memory(new)).filter(|mb| *mb > memory(old).max(DEFAULT_MEMORY_MB));
    in_words(&added, more_memory)
}

/// What `m` asks for, in plain words.
pub(crate) fn asked_words(m: &Manifest) -> Vec<String> {
    in_words(
        &m.permissions,
        Some(m.limits.memory_mb.unwrap_or(DEFAULT_MEMORY_MB)),
    )
}

/// What `grant` allows, in plain words.
pub(crate) fn granted_words(grant: &Grant) -> Vec<String> {
    in_words(&grant.permissions, Some(granted_memory(grant)))
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

/// One `--permission`.
enum Permission<'a> {
    DataDir,
    Cwd,
    Env(&'a str),
    Http(&'a str),
    Memory(u64),
}

impl<'a> Permission<'a> {
    fn parse(permission: &'a str) -> Result<Permission<'a>, String> {
        let (kind, value) = permission.split_once(':').unwrap_or((permission, ""));
        Ok(match (kind, value) {
            ("data_dir", "") => Permission::DataDir,
            ("cwd", "" | "read") => Permission::Cwd,
            ("env", name) if !name.is_empty() => Permission::Env(name),
            ("http", host) => {
                zot_host::sandbox::HostPattern::parse(host)?;
                Permission::Http(host)
            }
            ("memory", mb) => Permission::Memory(
                mb.parse()
                    .ok()
                    .filter(|mb| (1..=MAX_MEMORY_MB).contains(mb))
                    .ok_or_else(|| {
                        format!("memory:{mb}: give a number of MiB, 1 to {MAX_MEMORY_MB}")
                    })?,
            ),
            _ => {
                return Err(format!(
                    "unknown permission {permission:?}: use data_dir, cwd, env:NAME, http:HOST \
                     or memory:MB"
                ))
            }
        })
    }

    /// Whether `m` asks for it (memory: at most what it asks, or the default).
    fn is_asked(&self, m: &Manifest) -> bool {
        let asked = &m.permissions;
        match *self {
            Permission::DataDir => asked.data_dir,
            Permission::Cwd => asked.cwd.is_some(),
            Permission::Env(name) => asked.env.iter().any(|n| n == name),
            Permission::Http(host) => asked.http.iter().any(|h| h == host),
            Permission::Memory(mb) => mb <= m.limits.memory_mb.unwrap_or(DEFAULT_MEMORY_MB),
        }
    }

    fn add_to(&self, grant: &mut Grant) {
        let p = &mut grant.permissions;
        match *self {
            Permission::DataDir => p.data_dir = true,
            Permission::Cwd => p.cwd = Some(CwdAccess::Read),
            Permission::Env(name) => add_all(&mut p.env, &[name.to_string()]),
            Permission::Http(host) => add_all(&mut p.http, &[host.to_string()]),
            Permission::Memory(mb) => grant.memory_mb = Some(mb),
        }
    }
}

/// Adds one `--permission` to `grant`; refused unless `m` asks for it.
fn apply(grant: &mut Grant, m: &Manifest, permission: &str) -> Result<(), String> {
    let parsed = Permission::parse(permission)?;
    if !parsed.is_asked(m) {
        return Err(not_asked(m, permission));
    }
    parsed.add_to(grant);
    Ok(())
}

/// Why `permission` is refused: the manifest does not ask it; what it asks, as
/// `--permission` values, and the nearest of them.
fn not_asked(m: &Manifest, permission: &str) -> String {
    let asked = &m.permissions;
    let mut options: Vec<String> = Vec::new();
    if asked.data_dir {
        options.push("data_dir".into());
    }
    if asked.cwd == Some(CwdAccess::Read) {
        options.push("cwd".into());
    }
    options.extend(asked.env.iter().map(|n| format!("env:{n}")));
    options.extend(asked.http.iter().map(|h| format!("http:{h}")));
    if let Some(mb) = m.limits.memory_mb {
        options.push(format!("memory:{mb}"));
    }
    let nearest = options
        .iter()
        .map(|o| (edit_distance(o, permission), o))
        .filter(|(d, _)| *d < permission.chars().count())
        .min()
        .map_or(String::new(), |(_, o)| format!(" (nearest: {o})"));
    let list = match options.is_empty() {
        true => "nothing".to_string(),
        false => options.join(", "),
    };
    format!(
        "its manifest does not ask for {permission}, so granting it would have no effect; it \
         asks for: {list}{nearest}; nothing was granted"
    )
}

/// The Levenshtein distance between `a` and `b`, in characters.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = (diagonal + usize::from(ca != *cb))
                .min(above + 1)
                .min(row[j] + 1);
            diagonal = above;
        }
    }
    row[b.len()]
}

/// Permissions in plain words, one line each; with `memory_mb`, the memory too.
fn in_words(p: &Permissions, memory_mb: Option<u64>) -> Vec<String> {
    let mut out = Vec::new();
    if p.data_dir {
        out.push("read and write its own data directory (seen as /data)".into());
    }
    if p.cwd.is_some() {
        out.push("read (not write) the project directory".into());
    }
    out.extend(
        p.env
            .iter()
            .map(|name| format!("read the environment variable {name}")),
    );
    out.extend(
        p.http
            .iter()
            .map(|host| format!("make HTTP requests to {host}")),
    );
    out.extend(memory_mb.map(|mb| format!("use up to {mb} MiB of memory")));
    out
}

/// Prints lines as a list.
pub(crate) fn print_list(lines: &[String]) {
    for line in lines {
        println!("  - {line}");
    }
}

#[cfg(test)]
mod tests {
    use super::edit_distance;

    #[test]
    fn edit_distance_counts_single_character_edits() {
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(edit_distance("http:a", "http:a"), 0);
        assert_eq!(
            edit_distance("http:http://127.0.0.1:8766", "http:127.0.0.1:8766"),
            7
        );
    }
}
