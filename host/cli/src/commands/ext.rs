//! `zot ext list|remove|enable|disable|logs`: printing around `zot_host::manage::install`.

use crate::flags::scope::{copy_at, resolve, Scope};
use crate::output::error::{self, CliError, Context as _};
use crate::output::terminal::{self, cwd, Term};
use std::fs::File;
use std::io::{self, BufRead, IsTerminal, Read, Seek, SeekFrom, Write};
use std::path::Path;
use std::time::Duration;
use zot_host::manage::discovery::Source;
use zot_host::manage::identity::Identity;
use zot_host::manage::install::{self, Listed};
use zot_host::manage::paths::project_root;
use zot_host::terminal_text::one_line;
use zot_host::ZotHome;

/// `zot ext list`: a table, or `--json`.
pub(crate) fn list(home: &ZotHome, json: bool) -> Result<(), CliError> {
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
        print_table(&listing.active);
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
/// manifest error below its row.
fn print_table(rows: &[Listed]) {
    let cells = |r: &Listed| {
        [
            r.source.as_str(),
            &r.name,
            if r.version.is_empty() {
                "-"
            } else {
                &r.version
            },
            r.state.as_str(),
            &r.description,
        ]
        .map(|cell| one_line(cell).into_owned())
    };
    let header = ["SOURCE", "NAME", "VERSION", "STATE", "DESCRIPTION"].map(String::from);
    let table: Vec<[String; 5]> = std::iter::once(header)
        .chain(rows.iter().map(cells))
        .collect();
    let widths: Vec<usize> = (0..5)
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

/// Prints the log with control characters escaped; with `follow`, keeps printing what
/// is appended (polling every 200 ms) and waits for a log that does not exist yet.
pub(crate) fn logs(home: &ZotHome, name: &str, follow: bool) -> Result<(), CliError> {
    let path = install::log_path(home, name).context(format!("logs {name}"))?;
    let what = format!("logs {name}: {}", path.display());
    if !follow {
        let mut file = match File::open(&path) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                return Err(CliError::new(format!(
                    "no log at {} yet; it is written when the extension runs",
                    path.display()
                )))
                .context(format!("logs {name}"));
            }
            opened => opened.context(&what)?,
        };
        return ignore_broken_pipe(copy_escaped(&mut file, &mut io::stdout().lock()))
            .context(&what);
    }
    if !path.exists() {
        error::note(format_args!(
            "no log at {} yet; waiting for it",
            path.display()
        ));
    }
    let mut offset = 0;
    loop {
        match print_from(&path, offset) {
            Ok(next) => offset = next,
            Err(e) if e.kind() == io::ErrorKind::BrokenPipe => return Ok(()),
            Err(e) => return Err(e).context(&what),
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn ignore_broken_pipe(result: io::Result<u64>) -> io::Result<()> {
    match result {
        Err(e) if e.kind() != io::ErrorKind::BrokenPipe => Err(e),
        _ => Ok(()),
    }
}

/// Prints `path` from `offset` to its current end and returns the new offset. A file
/// shorter than `offset` was truncated or replaced: it is printed from its start.
fn print_from(path: &Path, offset: u64) -> io::Result<u64> {
    let Ok(mut file) = File::open(path) else {
        return Ok(offset);
    };
    let len = file.metadata()?.len();
    let start = if len < offset {
        error::note(format_args!(
            "{} was truncated; following from its start",
            path.display()
        ));
        0
    } else {
        offset
    };
    file.seek(SeekFrom::Start(start))?;
    let mut out = io::stdout().lock();
    let copied = copy_escaped(file.take(len - start), &mut out)?;
    out.flush()?;
    Ok(start + copied)
}

/// Copies `from` line by line, each shown with [`one_line`] (its newline kept), so a log
/// cannot drive the terminal; returns the bytes read.
fn copy_escaped(from: impl Read, out: &mut impl Write) -> io::Result<u64> {
    let mut from = io::BufReader::new(from);
    let mut line = Vec::new();
    let mut copied = 0;
    while from.read_until(b'\n', &mut line)? > 0 {
        copied += line.len() as u64;
        let newline = line.last() == Some(&b'\n');
        let text = String::from_utf8_lossy(&line[..line.len() - usize::from(newline)]);
        out.write_all(one_line(&text).as_bytes())?;
        if newline {
            out.write_all(b"\n")?;
        }
        line.clear();
    }
    Ok(copied)
}
