//! `zot ext list|remove|enable|disable|logs`: printing around `zot_host::manage::install`.

use crate::flags::scope::{copy_at, resolve, Scope};
use crate::output::error::{CliError, Context as _};
use crate::output::terminal::{self, cwd, Term};
use std::io::{self, IsTerminal};
use zot_host::manage::discovery::Source;
use zot_host::manage::identity::Identity;
use zot_host::manage::install::{self, Listed};
use zot_host::manage::paths::project_root;
use zot_host::terminal_text::one_line;
use zot_host::ZotHome;

/// `zot ext list`: a table, or `--json`.
pub(crate) fn list(home: &ZotHome, json: bool, long: bool) -> Result<(), CliError> {
    let listing = install::list(&cwd()?, home);
    if json {
        let text = serde_json::to_string_pretty(&listing.active).expect("rows serialise");
        terminal::print_line(&text);
    } else if listing.active.is_empty() {
        say!("No extensions installed.");
        say!("Install one with `zot ext install <path|git-url>`.");
    } else {
        let cwd = cwd()?;
        let project = project_root(&cwd);
        if project != zot_host::manage::paths::real(&cwd)
            && listing.active.iter().any(|r| r.source == Source::Project)
        {
            say!(
                "Project {} (found from {})",
                one_line(&project.to_string_lossy()),
                one_line(&cwd.to_string_lossy())
            );
        }
        print_table(&listing.active, long);
        for s in &listing.shadowed {
            say!(
                "shadowed: {} at {} (a {} extension of that name wins)",
                one_line(&s.name),
                one_line(&s.dir),
                source_name(&listing.active, &s.name)
            );
        }
    }
    Ok(())
}

fn source_name(rows: &[Listed], name: &str) -> &'static str {
    rows.iter()
        .find(|r| r.name == name)
        .map_or("", |r| r.source.as_str())
}

/// Prints aligned columns (each cell one line, shown with `terminal_text`), and each
/// manifest error below its row; `long`: with the transport, confinement and grant
/// columns.
fn print_table(rows: &[Listed], long: bool) {
    let cells = |r: &Listed| {
        let version = if r.version.is_empty() {
            "-"
        } else {
            &r.version
        };
        let mut cells = vec![r.source.as_str(), &r.name, version, r.state.as_str()];
        if long {
            let (confinement, grant) = how_it_runs(r);
            cells.extend([r.transport.as_str(), confinement, grant]);
        }
        cells.push(&r.description);
        cells
            .into_iter()
            .map(|cell| one_line(cell).into_owned())
            .collect::<Vec<_>>()
    };
    let mut header = vec!["SOURCE", "NAME", "VERSION", "STATE"];
    if long {
        header.extend(["TRANSPORT", "CONFINEMENT", "GRANT"]);
    }
    header.push("DESCRIPTION");
    let header: Vec<String> = header.into_iter().map(String::from).collect();
    let table: Vec<Vec<String>> = std::iter::once(header)
        .chain(rows.iter().map(cells))
        .collect();
    let widths: Vec<usize> = (0..table[0].len())
        .map(|i| {
            table
                .iter()
                .map(|r| r[i].chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    for (i, row) in table.iter().enumerate() {
        let line: Vec<String> = row
            .iter()
            .zip(&widths)
            .map(|(cell, w)| format!("{cell:<w$}"))
            .collect();
        say!("{}", line.join("  ").trim_end());
        let Some(r) = i.checked_sub(1).map(|j| &rows[j]) else {
            continue;
        };
        match (&r.untrusted, &r.error) {
            (Some(u), _) => say!("    {}", one_line(&u.message())),
            (None, Some(error)) => say!("    error: {}", one_line(error)),
            (None, None) => {}
        }
        if let Some(warning) = &r.warning {
            say!("    {}", one_line(warning));
        }
    }
}

/// The confinement and grant columns of `list --long`: a component runs in the sandbox
/// with its grant (`granted`, `stale`: granted to another build, `none`: its data dir
/// only); a classic extension confined (`stale`: for other files, it does not start;
/// what its grant opens is in `info`) or not (`none`: it runs with the user's full
/// permissions: `everything`).
fn how_it_runs(r: &Listed) -> (&'static str, &'static str) {
    match (&r.sandbox, &r.confinement) {
        (Some(sb), _) => (
            "sandbox",
            match (&sb.granted, sb.grant_stale) {
                (_, true) => "stale",
                (Some(_), false) => "granted",
                (None, false) => "none",
            },
        ),
        (None, Some(c)) => match (c.confined, c.stale) {
            (true, false) => ("confined", "-"),
            (true, true) => ("stale", "-"),
            (false, _) => ("none", "everything"),
        },
        (None, None) => ("-", "-"),
    }
}

/// Removes the copy of `name`, its install record, its grant and its project trust;
/// `purge`: whether to delete its data dir too (`None`: ask on a terminal, else keep).
pub(crate) fn remove(
    home: &ZotHome,
    name: &str,
    yes: bool,
    purge: Option<bool>,
    scope: Option<Scope>,
) -> Result<(), CliError> {
    let what = format!("remove {name}");
    let cwd = cwd().context(&what)?;
    let (dir, scope) = resolve(home, &cwd, name, scope).context(&what)?;
    let copy = copy_at(&dir, scope);
    let id = Identity::of(&dir, home);
    terminal::ask(&mut Term, &format!("Remove the {copy}?"), yes).context(&what)?;
    install::remove(home, &dir).context(&what)?;
    say!("Removed {name} ({copy}), its install record and its grant");
    let data = home.data_dir(&id);
    if !data.exists() {
        return Ok(());
    }
    let purge = match purge {
        Some(p) => p,
        None if yes || !io::stdin().is_terminal() => false,
        None => terminal::confirm(&format!("Delete its data at {} too?", data.display()))
            .context(&what)?,
    };
    if purge {
        std::fs::remove_dir_all(&data)
            .map_err(|e| format!("cannot delete {}: {e}", data.display()))
            .context(&what)?;
        say!("Deleted its data at {}", data.display());
    } else {
        say!(
            "Kept its data at {} (`--purge` deletes it; a new install there gets it back)",
            data.display()
        );
    }
    Ok(())
}

pub(crate) fn set_enabled(
    home: &ZotHome,
    name: &str,
    enabled: bool,
    scope: Option<Scope>,
) -> Result<(), CliError> {
    let verb = if enabled { "enable" } else { "disable" };
    let what = format!("{verb} {name}");
    let (dir, scope) = resolve(home, &cwd().context(&what)?, name, scope).context(&what)?;
    let changed = zot_host::manage::manifest::set_enabled(&dir, enabled).context(&what)?;
    if !changed {
        say!("{name} is already {verb}d ({})", copy_at(&dir, scope));
        return Ok(());
    }
    say!("{name} is now {verb}d ({})", copy_at(&dir, scope));
    say!("It takes effect the next time zot starts.");
    Ok(())
}
