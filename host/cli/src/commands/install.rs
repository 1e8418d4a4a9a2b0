//! `zot ext install | update | info | verify`: fetching extensions with the user's
//! consent, and keeping track of where they came from.

use crate::flags::scope::{copy_at, resolve, Scope, ScopeArgs};
use crate::output::error::{self, CliError, Context as _};
use crate::output::terminal::{self, cwd, Prompt as _, Term, TermProgress};
use std::path::{Path, PathBuf};
use zot_host::compile::Compiler;
use zot_host::manage::confine::ConfineView;
use zot_host::manage::identity::Identity;
use zot_host::manage::install::{self, update, InstallSource, Request, Staged};
use zot_host::manage::manifest::{Launch, Manifest};
use zot_host::manage::paths::{project_extensions_dir, ZotHome};
use zot_host::manage::records::{consent, grants, provenance};
use zot_host::manage::sandbox::{asked_words, granted_words};
use zot_host::terminal_text::{self, one_line};
use zot_host::SandboxView;

#[derive(clap::Args)]
pub(crate) struct InstallArgs {
    /// A directory holding extension.json, a git URL (https://, git@, ssh://, file://,
    /// *.git), or a WebAssembly component (a .wasm file).
    #[arg(add = clap_complete::ArgValueCompleter::new(crate::complete::extension_paths()))]
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
    /// Run it confined (a classic extension, Linux: `zot ext confine`), with what it
    /// asks for.
    #[arg(long)]
    confine: bool,
}

#[derive(clap::Args)]
pub(crate) struct UpdateArgs {
    /// The extension to update (as it would load from here: project first, then global).
    #[arg(required_unless_present = "all", conflicts_with = "all")]
    #[arg(add = clap_complete::ArgValueCompleter::new(crate::complete::names))]
    name: Option<String>,
    /// Update every extension that loads from here and has an install record.
    #[arg(long)]
    all: bool,
    /// Move a git install to this branch, tag or commit (recorded for later updates).
    #[arg(long = "ref", value_name = "REF", conflicts_with = "all")]
    git_ref: Option<String>,
    /// Do not ask, even if it now asks for more.
    #[arg(long, short)]
    yes: bool,
    #[command(flatten)]
    scope: ScopeArgs,
}

pub(crate) fn install(home: &ZotHome, args: InstallArgs) -> Result<(), CliError> {
    let what = format!("install {}", args.source);
    let root = if args.project {
        project_extensions_dir(&cwd().context(&what)?)
    } else {
        home.extensions_dir()
    };
    let compiler = Compiler::this_program().context(&what)?;
    let req = Request {
        source: InstallSource::parse(&args.source),
        git_ref: args.git_ref.clone(),
        path: args.path.clone(),
        name: args.name.clone(),
        root,
        home: home.clone(),
        compiler: compiler.clone(),
    };
    // A bare component is run to learn its name: the user consents before it is even
    // compiled. What it asks is known from the file alone: what its embedded manifest
    // asks, or nothing.
    let bare = match &req.source {
        InstallSource::Wasm(file) => {
            // Not a component: said before anything is asked about it.
            install::read_component_file(file).context(&what)?;
            Some(Manifest::bare_component(file).context(&what)?)
        }
        _ => None,
    };
    if let Some(m) = bare.as_ref().filter(|_| args.confine) {
        return Err(not_confinable(m)).context(&what);
    }
    let settings = zot_host::manage::records::Settings::load(home).context(&what)?;
    if let Some(m) = &bare {
        say!("{} (a component file)", args.source);
        let question = describe_asks(m, false);
        terminal::ask(&mut Term, &question, args.yes).context(&what)?;
    }
    let staged = stage(&req).context(&what)?;
    let m = &staged.manifest;
    still_consented(&staged, bare.as_ref(), args.force).context(&what)?;
    say!("{}", headline(&staged));
    if let Some(own) = &staged.renamed_from {
        say!(
            "--name: installed as {:?}, the name zot uses for it (check, call, info, the \
             agent); the extension calls itself {own:?}, and its hello may still say so.",
            m.name
        );
    }
    if args.confine && m.is_component() {
        return Err(not_confinable(m)).context(&what);
    }
    let confined = !m.is_component() && (args.confine || settings.confine_classic);
    if bare.is_none() {
        let question = describe_asks(m, confined);
        terminal::ask(&mut Term, &question, args.yes).context(&what)?;
    }
    let wasm = staged.component_file();
    if let Some(file) = &wasm {
        let file = staged.tree().join(file);
        runtime()
            .context(&what)?
            .block_on(install::compile(
                home,
                &compiler,
                &file,
                &TermProgress::new(),
            ))
            .context(&what)?;
    }
    let done = staged.commit(args.force).context(&what)?;
    let id = Identity::of(&done.dir, home);
    // The user consented to this code and to what it asks now: nothing is inherited
    // from an earlier install there.
    let confined_by = confined.then_some(args.confine);
    consent::installed(
        home,
        &id,
        (&done.manifest, &done.dir),
        wasm.as_deref(),
        confined_by,
    )
    .context(&what)?;
    if confined {
        say!(
            "It runs confined{}.",
            if args.confine { "" } else { " (by default)" }
        );
    }
    say_installed(&done.manifest, &done.dir);
    Ok(())
}

/// Refuses what was staged if it is not what the user was asked about (a component file
/// that changed meanwhile), or would replace an install without `--force`.
fn still_consented(staged: &Staged, bare: Option<&Manifest>, force: bool) -> Result<(), String> {
    let m = &staged.manifest;
    // Staging read the file again: it must ask what the user consented to.
    if let Some(b) = bare.filter(|b| (&b.permissions, &b.limits) != (&m.permissions, &m.limits)) {
        return Err(format!(
            "{} changed while it was installed: it now asks for something else; nothing \
             was changed",
            b.wasm.as_deref().unwrap_or_default()
        ));
    }
    if staged.dest().symlink_metadata().is_ok() && !force {
        let taken = install::InstallError::AlreadyInstalled {
            name: m.name.clone(),
            dest: staged.dest(),
        };
        return Err(taken.to_string());
    }
    Ok(())
}

/// Says where the extension of `m` was installed (`dir`), and that it is off if it is.
fn say_installed(m: &Manifest, dir: &Path) {
    let version = match m.version.as_str() {
        "" => String::new(),
        v => format!(" {}", one_line(v)),
    };
    say!("Installed {}{version} into {}", m.name, dir.display());
    if !m.enabled {
        say!(
            "It is disabled; turn it on with `zot ext enable {}`.",
            m.name
        );
    }
}

/// `--confine` of a component.
fn not_confinable(m: &Manifest) -> String {
    format!(
        "--confine: {} is a component: it always runs in the sandbox (what it asks is \
         shown before it is installed)",
        m.name
    )
}

/// Stages `req` on a runtime of its own (install and update run outside any), showing
/// progress on the terminal.
fn stage(req: &Request) -> Result<Staged, String> {
    runtime()?
        .block_on(install::stage(req, &TermProgress::new()))
        .map_err(|e| e.to_string())
}

fn runtime() -> Result<tokio::runtime::Runtime, String> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start a runtime: {e}"))
}

/// `name version from source (--ref REF, --path SUBDIR) at commit`, one line.
fn headline(staged: &Staged) -> String {
    one_line(&headline_text(staged)).into_owned()
}

fn headline_text(staged: &Staged) -> String {
    let m = &staged.manifest;
    let r = &staged.record;
    let mut line = m.name.clone();
    if !m.version.is_empty() {
        line += &format!(" {}", m.version);
    }
    line += &format!(" from {}", r.source);
    let options: Vec<String> = [("--ref", &r.git_ref), ("--path", &r.path)]
        .into_iter()
        .filter_map(|(flag, value)| Some(format!("{flag} {}", value.as_ref()?)))
        .collect();
    if !options.is_empty() {
        line += &format!(" ({})", options.join(", "));
    }
    if let Some(commit) = &r.commit {
        line += &format!(" at {}", short(commit));
    }
    line
}

/// The first 12 characters of `commit` (as recorded, so not necessarily hex).
fn short(commit: &str) -> &str {
    commit
        .char_indices()
        .nth(12)
        .map_or(commit, |(end, _)| &commit[..end])
}

/// Prints what `m` may do once installed (a classic extension: the command it runs,
/// exactly); returns the question to ask.
fn describe_asks(m: &Manifest, confined: bool) -> String {
    if m.is_component() {
        say!("It is a sandboxed WebAssembly component. It asks to:");
        Term.list(&asked_words(m));
        format!("Grant this and install {}?", m.name)
    } else if confined {
        say!(
            "It is a classic extension, to run confined (Landlock and seccomp): the system \
             read-only, its folder, its data dir, no network. It runs (from its folder's \
             copy):"
        );
        say!("  {}", runs(m));
        say!("It asks to:");
        Term.list(&asked_words(m));
        format!("Grant this and install {} confined?", m.name)
    } else {
        esay!(
            "warning: {} is a classic extension: it runs as a program with your full user \
             permissions (every file you can read or write, the network, your environment). \
             Install only extensions you trust.",
            m.name
        );
        say!("It runs (from its folder's copy):");
        say!("  {}", runs(m));
        format!("Install {}?", m.name)
    }
}

/// The command line a classic extension's manifest runs (`exec` and `args`, or an MCP server's `env`, `command` and `args`) exactly as
/// written, each quoted for a POSIX shell.
fn runs(m: &Manifest) -> String {
    let words = m.command_words(m.command().unwrap_or_default());
    terminal_text::command_line(words.iter().map(String::as_str))
}

pub(crate) fn update(home: &ZotHome, args: UpdateArgs) -> Result<(), CliError> {
    let cwd = cwd()?;
    let scope = args.scope.scope();
    if let Some(name) = &args.name {
        let what = format!("update {name}");
        let (dir, scope) = resolve(home, &cwd, name, scope).context(&what)?;
        return update_one(home, &dir, scope, args.git_ref.as_deref(), args.yes).context(&what);
    }
    let targets: Vec<(String, PathBuf, Scope)> = install::installed(&cwd, home)
        .into_iter()
        .filter_map(|f| Some((f.name(), f.dir, Scope::of(f.source)?)))
        .filter(|(_, dir, s)| {
            scope.is_none_or(|want| want == *s) && record_of(home, dir).is_ok_and(|r| r.is_some())
        })
        .collect();
    if targets.is_empty() {
        say!("Nothing to update: no extension has an install record.");
        return Ok(());
    }
    let mut failed = Vec::new();
    for (name, dir, scope) in targets {
        if let Err(e) =
            update_one(home, &dir, scope, None, args.yes).context(format!("update {name}"))
        {
            // One that cannot be updated does not stop the others.
            error::report(&e);
            failed.push(name);
        }
    }
    if failed.is_empty() {
        Ok(())
    } else {
        Err(CliError::new(format!(
            "update --all: could not update {}",
            failed.join(", ")
        )))
    }
}

/// The install record of the extension installed in `dir`, from `$ZOT_HOME` (a record a
/// project holds is never read).
fn record_of(home: &ZotHome, dir: &Path) -> Result<Option<provenance::Provenance>, String> {
    provenance::load(home, &Identity::of(dir, home)).map_err(|e| e.to_string())
}

/// Why there is nothing to compare with or fetch again for the `copy` in `dir`.
fn no_record(home: &ZotHome, dir: &Path, copy: &str) -> String {
    match Identity::of(dir, home) {
        Identity::Project { .. } => format!(
            "no install record for the {copy} in {}: zot reads a project copy's record \
             only from there, never from the project (anyone who can write to the project \
             could forge it); reinstall it with `zot ext install --project <source> --force`",
            home.root().join("provenance").display()
        ),
        Identity::Global { .. } | Identity::Path { .. } => format!(
            "no install record for the {copy} (installed by hand or by an older zot); \
             reinstall it with `zot ext install <source> --force`"
        ),
    }
}

/// Updates the install in `dir`, moving it to `git_ref` when given: shows the library's
/// plan, asks what it says must be asked, and applies it.
fn update_one(
    home: &ZotHome,
    dir: &Path,
    scope: Scope,
    git_ref: Option<&str>,
    yes: bool,
) -> Result<(), String> {
    let copy = copy_at(dir, scope);
    let compiler = Compiler::this_program()?;
    let plan = runtime()?
        .block_on(update::plan(
            home,
            dir,
            git_ref,
            compiler,
            &TermProgress::new(),
        ))
        .map_err(|e| match e {
            update::UpdateError::NoRecord => no_record(home, dir, &copy),
            e => e.to_string(),
        })?;
    let name = plan.old.name.clone();
    let (new, staged) = (&plan.staged.manifest, &plan.staged);
    if plan.up_to_date() {
        say!("{name} is up to date ({}; {copy}).", headline(staged));
        return Ok(());
    }
    say_plan(&plan, &copy);
    let asks = plan.asks();
    if let Some(project) = &asks.trust {
        say!(
            "  Updated, it is trusted to run whenever zot starts in {}:",
            one_line(&project.to_string_lossy())
        );
        say!(
            "  {} ({})",
            one_line(&name),
            one_line(&staged.dest().to_string_lossy())
        );
        crate::records::trust::review(&mut Term, new, &staged.dest());
    }
    if let Some(question) = question(&name, &asks) {
        terminal::ask(&mut Term, &question, yes)?;
    }
    let done = runtime()?
        .block_on(plan.apply(&TermProgress::new()))
        .map_err(|e| e.to_string())?;
    say!("Updated {name} in {}", done.dir.display());
    Ok(())
}

/// What an update would change, as the user reads it before saying yes.
fn say_plan(plan: &update::Plan, copy: &str) {
    let name = &plan.old.name;
    let (old, new, staged) = (&plan.old, &plan.staged.manifest, &plan.staged);
    if plan.same_source() {
        say!("{name}: the {copy} has files changed since it was installed; its source has not changed:");
    } else {
        say!("{name}: an update is available for the {copy}:");
    }
    say!("  source   {}", headline(staged));
    let (was, now) = (&plan.record, &staged.record);
    if was.git_ref != now.git_ref {
        let shown = |r: &Option<String>| r.clone().unwrap_or_else(|| "(default branch)".into());
        say!(
            "  ref      {} -> {}",
            one_line(&shown(&was.git_ref)),
            one_line(&shown(&now.git_ref))
        );
    }
    match (&was.commit, &now.commit) {
        (Some(a), Some(b)) if a != b => say!(
            "  commit   {} -> {}",
            one_line(short(a)),
            one_line(short(b))
        ),
        _ => {}
    }
    if old.version != new.version {
        say!(
            "  version  {} -> {}",
            one_line(&old.version),
            one_line(&new.version)
        );
    }
    if !new.is_component() {
        let (was, now) = (runs(old), runs(new));
        if was == now {
            say!("  runs     {now}");
        } else {
            say!("  runs     {was}");
            say!("       ->  {now}");
        }
    }
    say!("  files    {} changed", plan.changed.len());
    if !plan.local.is_empty() {
        say!(
            "  local    {} file(s) changed since install (`zot ext verify {}`): replaced",
            plan.local.len(),
            one_line(name)
        );
    }
    if plan.confined {
        say!(
            "  confined yes: the new files run confined, with what was granted to the old \
             (`zot ext grant {}` to review)",
            one_line(name)
        );
    }
    if plan.grown.is_empty() {
        say!("  It asks for nothing more than before.");
    } else {
        say!("  It now also asks to:");
        for line in &plan.grown {
            say!("  - {line}");
        }
    }
}

/// The question an update asks before it applies, if it asks one.
fn question(name: &str, asks: &update::Asks) -> Option<String> {
    let question = match (&asks.trust, asks.grant) {
        (None, false) if asks.replace_local => Some(format!(
            "Replace the changed files of {name} with its source's?"
        )),
        (None, false) => None,
        (None, true) => Some(format!("Grant this and update {name}?")),
        (Some(p), false) => Some(format!(
            "Update {name}, trusting it to run whenever zot starts in {}?",
            p.display()
        )),
        (Some(p), true) => Some(format!(
            "Grant this, update {name} and trust it to run whenever zot starts in {}?",
            p.display()
        )),
    };
    match (question, asks.confined) {
        (Some(q), true) => Some(format!("{} (confined)", q.trim_end_matches('?')) + "?"),
        (None, true) => Some(format!("Update {name} and run the new files confined?")),
        (question, false) => question,
    }
}

/// The file an extension runs, relative to its folder and `/`-separated as in its install
/// record: its component, else its program when that is in the folder, else the first
/// argument naming a file in it (a script run by an interpreter on `PATH`).
fn program_file(m: &Manifest, dir: &Path) -> Option<String> {
    let inside = |path: &Path| {
        let rel = path.strip_prefix(dir).ok()?;
        let parts: Option<Vec<&str>> = rel
            .components()
            .map(|c| match c {
                std::path::Component::Normal(part) => part.to_str(),
                _ => None,
            })
            .collect();
        parts.filter(|p| !p.is_empty()).map(|p| p.join("/"))
    };
    let (Launch::Wasm(path) | Launch::Exec(path)) = m.launch(dir);
    inside(&path).or_else(|| {
        m.program_args()
            .iter()
            .map(|a| dir.join(a))
            .find(|p| p.is_file())
            .and_then(|p| inside(&p))
    })
}

pub(crate) fn info(
    home: &ZotHome,
    name: &str,
    json: bool,
    scope: Option<Scope>,
) -> Result<(), CliError> {
    let what = format!("info {name}");
    let (dir, scope) = resolve(home, &cwd().context(&what)?, name, scope).context(&what)?;
    let m = Manifest::read(&dir).context(&what)?;
    let record = record_of(home, &dir).context(&what)?;
    let id = Identity::of(&dir, home);
    let view = SandboxView::on_disk(home, &id, &m, &dir);
    let grant = view.as_ref().and_then(SandboxView::recorded_grant);
    let grant_stale = view.as_ref().is_some_and(|v| v.grant_stale);
    let confinement = ConfineView::on_disk(home, &id, &m, &dir);
    let program = program_file(&m, &dir);
    let sha256 = program.as_ref().and_then(|p| {
        let hash = record.as_ref()?.files.get(p)?;
        Some(hash.clone()).filter(|h| !h.starts_with("symlink:"))
    });
    let transport = if m.is_component() { "wasm" } else { "stdio" };
    let asks = view
        .as_ref()
        .map(|v| serde_json::json!({"permissions": v.asked, "limits": v.limits}));
    if json {
        let value = serde_json::json!({
            "name": m.name, "version": m.version, "description": m.description,
            "dir": dir.display().to_string(), "scope": scope.label(), "transport": transport,
            "enabled": m.enabled, "provenance": record, "asks": asks, "grant": grant,
            "grant_stale": grant_stale,
            "program": program.as_ref().map(|p| serde_json::json!({"path": p, "sha256": sha256})),
            "confinement": confinement,
        });
        terminal::print_line(&serde_json::to_string_pretty(&value).expect("JSON serialises"));
        return Ok(());
    }
    let row = |k: &str, v: &str| say!("{k:<13}{}", one_line(v));
    let rows = |k: &str, lines: &[String]| {
        for (i, line) in lines.iter().enumerate() {
            row(if i == 0 { k } else { "" }, line);
        }
    };
    row("name", &m.name);
    row("version", &m.version);
    row("description", &m.description);
    row(
        "directory",
        &format!("{} ({} copy)", dir.display(), scope.label()),
    );
    row("transport", transport);
    row("enabled", if m.enabled { "yes" } else { "no" });
    source_rows(record.as_ref(), name, &row);
    let label = if m.is_component() {
        "component"
    } else {
        "program"
    };
    match (&program, &sha256) {
        (Some(p), Some(hash)) => row(label, &format!("{p}, sha256 {hash} (as installed)")),
        (Some(p), None) => row(label, &format!("{p}, sha256 not recorded")),
        (None, _) => row(
            label,
            &format!(
                "{} (not part of the install)",
                m.command().unwrap_or_default()
            ),
        ),
    }
    if let Some(view) = &confinement {
        for (k, v) in crate::records::confinement::rows(name, view) {
            row(k, &v);
        }
    }
    if confinement.as_ref().is_none_or(|v| v.confined) {
        rows("asks", &asked_words(&m));
    }
    let classic_grant = grants::load(home, &id).ok().flatten();
    match (&confinement, grant) {
        (Some(view), _) if !view.confined => row(
            "granted",
            "everything you can: a classic extension runs with your full user permissions",
        ),
        (Some(_), _) => match &classic_grant {
            Some(g) => rows("granted", &granted_words(&m, g)),
            None => row("granted", "nothing beyond its data dir (no grant recorded)"),
        },
        (None, Some(g)) => rows("granted", &granted_words(&m, g)),
        (None, None) => row("granted", "nothing beyond its data dir (no grant recorded)"),
    }
    if grant_stale {
        row(
            "",
            &format!(
                "not applied: given for another build of the component; {}",
                zot_host::manage::sandbox::stale_warning(name, &id, &dir)
            ),
        );
    }
    Ok(())
}

/// Where an install came from, as `info` shows it (`row`: one labelled row).
fn source_rows(record: Option<&provenance::Provenance>, name: &str, row: &dyn Fn(&str, &str)) {
    match record {
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
}

fn kind_label(kind: install::SourceKind) -> &'static str {
    match kind {
        install::SourceKind::Dir => "directory",
        install::SourceKind::Git => "git",
        install::SourceKind::Wasm => "component file",
    }
}

pub(crate) fn verify(
    home: &ZotHome,
    name: &str,
    json: bool,
    scope: Option<Scope>,
) -> Result<(), CliError> {
    let what = format!("verify {name}");
    let (dir, scope) = resolve(home, &cwd().context(&what)?, name, scope).context(&what)?;
    let copy = copy_at(&dir, scope);
    let record = record_of(home, &dir)
        .and_then(|r| {
            r.ok_or_else(|| format!("{}: nothing to compare with", no_record(home, &dir, &copy)))
        })
        .context(&what)?;
    let changes = provenance::verify(&dir, &record).context(&what)?;
    if json {
        let value = serde_json::json!({
            "name": name, "dir": dir.display().to_string(), "scope": scope.label(),
            "ok": changes.is_empty(), "changes": changes,
        });
        terminal::print_line(&serde_json::to_string_pretty(&value).expect("JSON serialises"));
    } else if changes.is_empty() {
        say!(
            "{name}: all {} files match the install record of {} ({copy})",
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
            say!("{label:<9}{}", one_line(path));
        }
    }
    if changes.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "{} file(s) changed since it was installed ({copy})",
            changes.len()
        ))
        .context(&what)
    }
}

#[cfg(test)]
mod tests {
    /// A commit comes from the provenance file, which may have been edited by hand.
    #[test]
    fn a_recorded_commit_of_any_text_is_shortened_by_characters() {
        assert_eq!(super::short("0123456789abcdef"), "0123456789ab");
        assert_eq!(super::short("abc"), "abc");
        assert_eq!(super::short("ééééééééééééé"), "éééééééééééé");
        assert_eq!(super::short(""), "");
    }

    /// The question follows what the plan says must be consented to, each case.
    #[test]
    fn an_update_asks_what_its_plan_needs() {
        use std::path::PathBuf;
        use zot_host::manage::install::update::Asks;
        let asks = |grant, trust: Option<&str>, replace_local, confined| Asks {
            grant,
            trust: trust.map(PathBuf::from),
            replace_local,
            confined,
        };
        let q = |a: Asks| super::question("x", &a);
        assert_eq!(q(asks(false, None, false, false)), None);
        assert_eq!(
            q(asks(false, None, true, false)).unwrap(),
            "Replace the changed files of x with its source's?"
        );
        assert_eq!(
            q(asks(true, None, true, false)).unwrap(),
            "Grant this and update x?"
        );
        assert_eq!(
            q(asks(false, Some("/p"), true, false)).unwrap(),
            "Update x, trusting it to run whenever zot starts in /p?"
        );
        assert_eq!(
            q(asks(true, Some("/p"), false, true)).unwrap(),
            "Grant this, update x and trust it to run whenever zot starts in /p (confined)?"
        );
        assert_eq!(
            q(asks(false, None, false, true)).unwrap(),
            "Update x and run the new files confined?"
        );
    }
}
