//! The load report, from one list of what went wrong or needs the user
//! ([`problems`]), shown two ways: as a session's lines (`zot ext shell`, `dev`:
//! [`lines`]) and as stderr records (`zot host`, `zot mcp`: [`print_problems`]).

use super::error::{self, CliError};
use super::render::{clean, hanging, Level};
use zot_host::terminal_text::one_line;
use zot_host::LoadReport;

/// One extension the report says did not load, was warned about or is not trusted.
struct Problem<'a> {
    level: Level,
    /// `error`, `warning` or `untrusted`.
    kind: &'static str,
    extension: &'a str,
    /// Where it is, for an untrusted one (the user reviews that folder).
    dir: Option<String>,
    text: String,
}

/// What `r` reports as wrong or waiting for the user, errors first.
fn problems(r: &LoadReport) -> Vec<Problem<'_>> {
    let errors = r.errors.iter().map(|e| Problem {
        level: Level::Error,
        kind: "error",
        extension: &e.extension,
        dir: None,
        text: e.error.clone(),
    });
    let warnings = r.warnings.iter().map(|w| Problem {
        level: Level::Warn,
        kind: "warning",
        extension: &w.extension,
        dir: None,
        text: w.warning.clone(),
    });
    let untrusted = r.untrusted.iter().map(|u| Problem {
        level: Level::Warn,
        kind: "untrusted",
        extension: &u.extension,
        dir: Some(u.dir.to_string_lossy().into_owned()),
        text: u.untrusted.message(),
    });
    errors.chain(warnings).chain(untrusted).collect()
}

/// The start (or reload) report as a session shows it: what loaded, what did not and
/// why, what is untrusted.
pub(crate) fn lines(r: &LoadReport) -> Vec<(Level, String)> {
    let mut out = Vec::new();
    if !r.stopped.is_empty() {
        out.push((Level::Dim, format!("stopped: {}", r.stopped.join(", "))));
    }
    let loaded = if r.loaded.is_empty() {
        "none".to_string()
    } else {
        r.loaded.join(", ")
    };
    out.push((Level::Plain, format!("loaded: {loaded}")));
    if !r.starting.is_empty() {
        out.push((
            Level::Dim,
            format!("still compiling: {}", r.starting.join(", ")),
        ));
    }
    for p in problems(r) {
        let line = match &p.dir {
            Some(dir) => format!(
                "{}: {} ({}): {}",
                p.kind,
                clean(p.extension),
                clean(dir),
                clean(&p.text)
            ),
            None => format!("{}: {}: {}", p.kind, clean(p.extension), hanging(&p.text)),
        };
        out.push((p.level, line));
    }
    if !r.untrusted.is_empty() {
        out.push((
            Level::Warn,
            "`trust` reviews them (`trust --yes` trusts them as they are), then `reload`".into(),
        ));
    }
    out
}

/// Says on stderr what did not load, what was warned about and what was not trusted,
/// one `zot: extension NAME: …` record each.
pub(crate) fn print_problems(r: &LoadReport) {
    for p in problems(r) {
        // A line after the first (a hint) is indented: none starts a record of its own.
        let extension = one_line(p.extension);
        error::report(&CliError::new(hanging(&p.text)).within(format!("extension {extension}")));
    }
}

/// Each environment variable a started component asked for and was not granted (it runs
/// without it: `std::env::var` finds nothing, a common first surprise), as `(key, line)`:
/// the key (`extension` and variable) for saying each once, the line naming what gives
/// it, for the run (`--allow-env`, the components named on the command line) and for
/// good (`zot ext grant`).
pub(crate) fn withheld_env(infos: &[zot_host::ExtensionInfo]) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for info in infos {
        let Some(running) = info.sandbox.as_ref().and_then(|s| s.running.as_ref()) else {
            continue;
        };
        for withheld in &running.withheld {
            let Some(var) = withheld
                .strip_prefix("env ")
                .and_then(|w| w.strip_suffix(": not granted"))
            else {
                continue;
            };
            let (ext, var) = (clean(&info.name), clean(var));
            out.push((
                format!("{}\u{0}{var}", info.name),
                format!(
                    "note: {ext} asks for the environment variable {var}, not granted: it \
                     runs without it (`--allow-env {var}` gives it for a run, `zot ext grant \
                     {ext} -p env:{var}` for good)"
                ),
            ));
        }
    }
    out
}
