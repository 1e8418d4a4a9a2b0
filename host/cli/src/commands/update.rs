//! `zot ext update`: the library's plan shown (what changes, what it now asks), the
//! user asked what the plan says must be asked, then applied.

use crate::flags::scope::{copy_at, resolve, Scope, ScopeArgs};
use crate::output::error::{self, CliError, Context as _};
use crate::output::install::{headline, runs, short};
use crate::output::terminal::{self, cwd, Term, TermProgress};
use crate::records::{install_record, no_record};
use crate::runtime::runtime;
use std::path::{Path, PathBuf};
use zot_host::compile::Compiler;
use zot_host::manage::install::{self, update};
use zot_host::manage::paths::ZotHome;
use zot_host::terminal_text::one_line;

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
    /// Accept a version signed by this minisign public key (the key, `RW…`, or its
    /// `.pub` file), besides the key its install was signed with, if it was. Repeat for
    /// several.
    #[arg(long = "require-signature", value_name = "KEY")]
    require_signature: Vec<String>,
    /// Do not ask, even if it now asks for more.
    #[arg(long, short)]
    yes: bool,
    #[command(flatten)]
    scope: ScopeArgs,
}

pub(crate) fn update(home: &ZotHome, args: UpdateArgs) -> Result<(), CliError> {
    let cwd = cwd()?;
    let scope = args.scope.scope();
    let signers = crate::records::signers::parse(&args.require_signature).context("update")?;
    if let Some(name) = &args.name {
        let what = format!("update {name}");
        let (dir, scope) = resolve(home, &cwd, name, scope).context(&what)?;
        let git_ref = args.git_ref.as_deref();
        return update_one(home, (&dir, scope), git_ref, &signers, args.yes).context(&what);
    }
    let targets: Vec<(String, PathBuf, Scope)> = install::installed(&cwd, home)
        .into_iter()
        .filter_map(|f| Some((f.name(), f.dir, Scope::of(f.source)?)))
        .filter(|(_, dir, s)| {
            scope.is_none_or(|want| want == *s)
                && install_record(home, dir).is_ok_and(|r| r.is_some())
        })
        .collect();
    if targets.is_empty() {
        say!("Nothing to update: no extension has an install record.");
        return Ok(());
    }
    let mut failed = Vec::new();
    for (name, dir, scope) in targets {
        if let Err(e) = update_one(home, (&dir, scope), None, &signers, args.yes)
            .context(format!("update {name}"))
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

/// Updates the install in `dir`, moving it to `git_ref` when given, accepting a version
/// signed by `signers` besides the key its record names: shows the library's plan,
/// asks what it says must be asked, and applies it.
fn update_one(
    home: &ZotHome,
    (dir, scope): (&Path, Scope),
    git_ref: Option<&str>,
    signers: &[zot_host::manage::install::signature::Signer],
    yes: bool,
) -> Result<(), String> {
    let copy = copy_at(dir, scope);
    let compiler = Compiler::this_program()?;
    let plan = runtime()?
        .block_on(update::plan(
            home,
            dir,
            git_ref,
            signers,
            compiler,
            &TermProgress::new(),
        ))
        .map_err(|e| match e {
            update::UpdateError::NoRecord => no_record(home, dir, &copy),
            e => e.to_string(),
        })?;
    apply(plan, &copy, yes)
}

/// Shows `plan`, asks what it says must be asked, and applies it.
fn apply(plan: update::Plan, copy: &str, yes: bool) -> Result<(), String> {
    let name = plan.old.name.clone();
    let (new, staged) = (&plan.staged.manifest, &plan.staged);
    if plan.up_to_date() {
        say!("{name} is up to date ({}; {copy}).", headline(staged));
        return Ok(());
    }
    say_plan(&plan, copy);
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
    if !done.manifest.enabled {
        say!("It stays disabled; turn it on with `zot ext enable {name}`.");
    }
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
    if let Some(s) = &staged.record.signature {
        say!(
            "  signed   by key {}: {}",
            s.key,
            crate::records::signers::vouches(s)
        );
    }
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
    if !new.asks_permissions() {
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

#[cfg(test)]
mod tests {
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
