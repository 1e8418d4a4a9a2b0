//! `zot ext install | update | info | verify`: fetching extensions with the user's
//! consent, and keeping track of where they came from.

use super::grant;
use std::io::{self, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use zot_host::discovery::Found;
use zot_host::install::{self, provenance, InstallSource, Progress, Request, Staged};
use zot_host::manifest::Manifest;
use zot_host::paths::{project_extensions_dir, ZotHome};

#[derive(clap::Args)]
pub(crate) struct InstallArgs {
    /// A directory holding extension.json, a git URL (https://, git@, ssh://, file://,
    /// *.git), or a WebAssembly component (a .wasm file).
    source: String,
    /// The branch, tag or commit to install (git sources).
    #[arg(long = "ref", value_name = "REF")]
    git_ref: Option<String>,
    /// The extension's folder inside the source, e.g. `examples/guard` of a monorepo.
    #[arg(long, value_name = "SUBDIR")]
    path: Option<String>,
    /// Install into ./.zot/extensions (this project) instead of $ZOT_HOME/extensions.
    #[arg(long)]
    project: bool,
    /// Install under this name instead of the manifest's (or the component's) own.
    #[arg(long)]
    name: Option<String>,
    /// Do not ask: consent to what it asks for (for scripts).
    #[arg(long, short)]
    yes: bool,
    /// Replace an existing install of that name (atomically).
    #[arg(long)]
    force: bool,
}

#[derive(clap::Args)]
pub(crate) struct UpdateArgs {
    /// The extension to update (as it would load from here: project first, then global).
    #[arg(required_unless_present = "all", conflicts_with = "all")]
    name: Option<String>,
    /// Update every extension that has an install record.
    #[arg(long)]
    all: bool,
    /// Do not ask, even if it now asks for more.
    #[arg(long, short)]
    yes: bool,
}

pub(crate) fn install(home: &ZotHome, args: InstallArgs) -> Result<(), String> {
    let what = |e: String| format!("install {}: {e}", args.source);
    let root = if args.project {
        project_extensions_dir(&super::ext::cwd()?)
    } else {
        home.extensions_dir()
    };
    let req = Request {
        source: InstallSource::parse(&args.source),
        git_ref: args.git_ref.clone(),
        path: args.path.clone(),
        name: args.name.clone(),
        root,
        home: home.clone(),
    };
    let staged = install::stage(&req, &TermProgress::new()).map_err(|e| what(e.0))?;
    let m = &staged.manifest;
    if staged.dest().symlink_metadata().is_ok() && !args.force {
        return Err(what(format!(
            "{} is already installed at {}; pass --force to replace it, or use `zot ext update {}`",
            m.name,
            staged.dest().display(),
            m.name
        )));
    }
    println!("{}", headline(&staged));
    let question = describe_asks(m);
    ask(&question, args.yes).map_err(what)?;
    let wasm = component_of(&staged);
    let done = staged.commit(args.force).map_err(|e| what(e.0))?;
    if let Some(file) = wasm {
        let installed = done.dir.join(file);
        grant::grant_asked(home, &done.manifest, &installed).map_err(what)?;
    }
    let version = match done.manifest.version.as_str() {
        "" => String::new(),
        v => format!(" {v}"),
    };
    println!(
        "Installed {}{version} into {}",
        done.manifest.name,
        done.dir.display()
    );
    if !done.manifest.enabled {
        println!(
            "It is disabled; turn it on with `zot ext enable {}`.",
            done.manifest.name
        );
    }
    Ok(())
}

/// `name version from source (commit)`.
fn headline(staged: &Staged) -> String {
    let m = &staged.manifest;
    let r = &staged.record;
    let mut line = m.name.clone();
    if !m.version.is_empty() {
        line += &format!(" {}", m.version);
    }
    line += &format!(" from {}", r.source);
    if let Some(path) = &r.path {
        line += &format!(" (--path {path})");
    }
    if let Some(commit) = &r.commit {
        line += &format!(" at {}", short(commit));
    }
    line
}

fn short(commit: &str) -> &str {
    &commit[..commit.len().min(12)]
}

/// Prints what `m` may do once installed; returns the question to ask.
fn describe_asks(m: &Manifest) -> String {
    if m.wasm.is_some() {
        println!("It is a sandboxed WebAssembly component. It asks to:");
        grant::describe_asked(m);
        format!("Grant this and install {}?", m.name)
    } else {
        eprintln!(
            "warning: {} is a classic extension: it runs as a program with your full user \
             permissions (every file you can read or write, the network, your environment). \
             Install only extensions you trust.",
            m.name
        );
        format!("Install {}?", m.name)
    }
}

/// The component file of a staged component, relative to its folder.
fn component_of(staged: &Staged) -> Option<PathBuf> {
    match staged.manifest.launch(staged.tree()) {
        zot_host::manifest::Launch::Wasm(path) => {
            path.strip_prefix(staged.tree()).ok().map(Path::to_path_buf)
        }
        zot_host::manifest::Launch::Exec(_) => None,
    }
}

/// Asks `question` on the terminal; `yes` answers it. Without a terminal and without
/// `yes`, refuses and says how to proceed.
pub(crate) fn ask(question: &str, yes: bool) -> Result<(), String> {
    if yes {
        return Ok(());
    }
    if !io::stdin().is_terminal() {
        return Err(format!(
            "stdin is not a terminal, so \"{question}\" cannot be asked: pass --yes to \
             consent; nothing was changed"
        ));
    }
    eprint!("{question} [y/N] ");
    let _ = io::stderr().flush();
    let mut answer = String::new();
    io::stdin()
        .read_line(&mut answer)
        .map_err(|e| format!("cannot read the answer: {e}"))?;
    match answer.trim().to_ascii_lowercase().as_str() {
        "y" | "yes" => Ok(()),
        _ => Err("not confirmed; nothing was changed".into()),
    }
}

pub(crate) fn update(home: &ZotHome, args: UpdateArgs) -> Result<(), String> {
    let cwd = super::ext::cwd()?;
    let targets: Vec<Found> = match &args.name {
        Some(name) => {
            vec![install::find(&cwd, home, name).map_err(|e| format!("update {name}: {e}"))?]
        }
        None => install::installed(&cwd, home)
            .into_iter()
            .filter(|f| record_of(f).is_ok_and(|r| r.is_some()))
            .collect(),
    };
    if targets.is_empty() {
        println!("Nothing to update: no extension has an install record.");
        return Ok(());
    }
    let mut failed = Vec::new();
    for found in targets {
        let name = found.name();
        if let Err(e) = update_one(home, &found, args.yes) {
            eprintln!("zot: update {name}: {e}");
            failed.push(name);
        }
    }
    if failed.is_empty() {
        Ok(())
    } else {
        Err(format!("could not update {}", failed.join(", ")))
    }
}

fn record_of(found: &Found) -> Result<Option<provenance::Provenance>, String> {
    let root = found.dir.parent().unwrap_or(&found.dir);
    provenance::load(root, &found.name()).map_err(|e| e.0)
}

fn update_one(home: &ZotHome, found: &Found, yes: bool) -> Result<(), String> {
    let name = found.name();
    let old = found.manifest.as_ref().map_err(|e| e.to_string())?;
    let root = found.dir.parent().unwrap_or(&found.dir).to_path_buf();
    let record = record_of(found)?.ok_or_else(|| {
        format!(
            "no install record for {name} (installed by hand or by an older zot); reinstall it \
             with `zot ext install <source> --force`"
        )
    })?;
    let req = Request::again(&record, root, home.clone());
    let staged = install::stage(&req, &TermProgress::new()).map_err(|e| e.0)?;
    let new = &staged.manifest;
    if new.name != name {
        return Err(format!(
            "the source now names itself {:?}; install it under that name instead",
            new.name
        ));
    }
    if staged.record.files == record.files {
        println!("{name} is up to date ({}).", headline(&staged));
        return Ok(());
    }
    println!("{name}: an update is available.");
    match (&record.commit, &staged.record.commit) {
        (Some(a), Some(b)) if a != b => println!("  commit   {} -> {}", short(a), short(b)),
        _ => {}
    }
    if old.version != new.version {
        println!("  version  {} -> {}", old.version, new.version);
    }
    let changed = provenance::verify(staged.tree(), &record).map_err(|e| e.0)?;
    println!("  files    {} changed", changed.len());
    let grown = grant::grown(old, new);
    if grown.is_empty() {
        println!("  It asks for nothing more than before.");
    } else {
        println!("  It now also asks to:");
        for line in &grown {
            println!("  - {line}");
        }
        ask(&format!("Grant this and update {name}?"), yes)?;
    }
    let wasm = component_of(&staged);
    let done = staged.commit(true).map_err(|e| e.0)?;
    if let Some(file) = wasm {
        let installed = done.dir.join(file);
        if grown.is_empty() {
            grant::repin(home, &done.manifest, &installed)?;
        } else {
            grant::grant_asked(home, &done.manifest, &installed)?;
        }
    }
    println!("Updated {name} in {}", done.dir.display());
    Ok(())
}

pub(crate) fn info(home: &ZotHome, name: &str, json: bool) -> Result<(), String> {
    let cwd = super::ext::cwd()?;
    let found = install::find(&cwd, home, name).map_err(|e| format!("info {name}: {e}"))?;
    let m = found
        .manifest
        .as_ref()
        .map_err(|e| format!("info {name}: {e}"))?;
    let record = record_of(&found).map_err(|e| format!("info {name}: {e}"))?;
    let grant = zot_host::grants::load(home, name)
        .ok()
        .flatten()
        .filter(|_| m.wasm.is_some());
    let scope = match found.source {
        zot_host::discovery::Source::Project => "project",
        _ => "global",
    };
    let transport = if m.wasm.is_some() { "wasm" } else { "stdio" };
    if json {
        let value = serde_json::json!({
            "name": m.name, "version": m.version, "description": m.description,
            "dir": found.dir.display().to_string(), "scope": scope, "transport": transport,
            "enabled": m.enabled, "provenance": record, "grant": grant,
        });
        println!(
            "{}",
            serde_json::to_string_pretty(&value).expect("JSON serialises")
        );
        return Ok(());
    }
    let row = |k: &str, v: &str| println!("{k:<13}{v}");
    row("name", &m.name);
    row("version", &m.version);
    row("description", &m.description);
    row("directory", &format!("{} ({scope})", found.dir.display()));
    row("transport", transport);
    row("enabled", if m.enabled { "yes" } else { "no" });
    match &record {
        None => row(
            "source",
            "unknown (no install record: installed by hand or by an older zot)",
        ),
        Some(r) => {
            row("source", &format!("{} ({})", r.source, kind_label(r.kind)));
            if let Some(v) = &r.git_ref {
                row("ref", v);
            }
            if let Some(v) = &r.path {
                row("path", v);
            }
            if let Some(v) = &r.commit {
                row("commit", v);
            }
            row("installed at", &r.installed_at);
            row(
                "files",
                &format!(
                    "{} recorded (`zot ext verify {name}` checks them)",
                    r.files.len()
                ),
            );
        }
    }
    if m.wasm.is_some() {
        match &grant {
            Some(_) => row("granted", &format!("see `zot ext grant {name}`")),
            None => row("granted", "nothing beyond its data dir"),
        }
    }
    Ok(())
}

fn kind_label(kind: install::SourceKind) -> &'static str {
    match kind {
        install::SourceKind::Dir => "directory",
        install::SourceKind::Git => "git",
        install::SourceKind::Wasm => "component file",
    }
}

pub(crate) fn verify(home: &ZotHome, name: &str, json: bool) -> Result<(), String> {
    let what = |e: String| format!("verify {name}: {e}");
    let cwd = super::ext::cwd()?;
    let found = install::find(&cwd, home, name).map_err(|e| what(e.0))?;
    let record = record_of(&found).map_err(what)?.ok_or_else(|| {
        what(
            "no install record (installed by hand or by an older zot): nothing to compare with"
                .into(),
        )
    })?;
    let changes = provenance::verify(&found.dir, &record).map_err(|e| what(e.0))?;
    if json {
        let value = serde_json::json!({"name": name, "ok": changes.is_empty(), "changes": changes});
        println!(
            "{}",
            serde_json::to_string_pretty(&value).expect("JSON serialises")
        );
    } else if changes.is_empty() {
        println!(
            "{name}: all {} files match the install record of {}",
            record.files.len(),
            record.installed_at
        );
    } else {
        for change in &changes {
            let (label, path) = match change {
                provenance::Change::Modified(p) => ("modified", p),
                provenance::Change::Added(p) => ("added", p),
                provenance::Change::Removed(p) => ("removed", p),
            };
            println!("{label:<9}{path}");
        }
    }
    if changes.is_empty() {
        Ok(())
    } else {
        Err(what(format!(
            "{} file(s) changed since it was installed",
            changes.len()
        )))
    }
}

/// A spinner with the elapsed time on stderr while a slow step runs, on a terminal only.
pub(crate) struct TermProgress {
    on: bool,
    running: Mutex<Option<(Arc<AtomicBool>, std::thread::JoinHandle<()>)>>,
}

impl TermProgress {
    pub(crate) fn new() -> Self {
        TermProgress {
            on: io::stderr().is_terminal(),
            running: Mutex::new(None),
        }
    }
}

impl Progress for TermProgress {
    fn begin(&self, what: &str) {
        if !self.on {
            return;
        }
        let stop = Arc::new(AtomicBool::new(false));
        let (flag, what) = (stop.clone(), what.to_string());
        let thread = std::thread::spawn(move || {
            let started = Instant::now();
            let frames = ['|', '/', '-', '\\'];
            let mut i = 0;
            while !flag.load(Ordering::SeqCst) {
                eprint!(
                    "\r{} {what} {:.1}s",
                    frames[i % 4],
                    started.elapsed().as_secs_f64()
                );
                let _ = io::stderr().flush();
                i += 1;
                std::thread::sleep(Duration::from_millis(100));
            }
            eprintln!("\r\x1b[2K{what}: {:.1}s", started.elapsed().as_secs_f64());
        });
        *self.running.lock().unwrap() = Some((stop, thread));
    }

    fn end(&self) {
        if let Some((stop, thread)) = self.running.lock().unwrap().take() {
            stop.store(true, Ordering::SeqCst);
            let _ = thread.join();
        }
    }
}
