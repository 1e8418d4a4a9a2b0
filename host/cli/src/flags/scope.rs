//! Which installed copy a name means, for every command that takes one: the project's
//! (`./.zot/extensions`) first, as discovery loads them, then the global one
//! (`$ZOT_HOME/extensions`); `--project` or `--global` chooses.

use std::path::{Path, PathBuf};
use zot_host::manage::discovery::{discover, Source};
use zot_host::manage::install::search_path;
use zot_host::manage::manifest::{validate_name, Manifest};
use zot_host::manage::paths::{project_extensions_dir, ZotHome};

/// One of the two places extensions are installed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Scope {
    /// `./.zot/extensions` below the current directory.
    Project,
    /// `$ZOT_HOME/extensions`.
    Global,
}

impl Scope {
    /// `project` or `global`.
    pub(crate) fn label(self) -> &'static str {
        match self {
            Scope::Project => "project",
            Scope::Global => "global",
        }
    }

    fn root(self, home: &ZotHome, cwd: &Path) -> PathBuf {
        match self {
            Scope::Project => project_extensions_dir(cwd),
            Scope::Global => home.extensions_dir(),
        }
    }

    fn source(self) -> Source {
        match self {
            Scope::Project => Source::Project,
            Scope::Global => Source::Global,
        }
    }

    /// The scope of a discovered extension (`None` for an explicit path).
    pub(crate) fn of(source: Source) -> Option<Scope> {
        match source {
            Source::Explicit => None,
            Source::Project => Some(Scope::Project),
            Source::Global => Some(Scope::Global),
        }
    }
}

/// `--project` / `--global`: which copy of a name to act on.
#[derive(clap::Args, Debug, Clone, Copy)]
pub(crate) struct ScopeArgs {
    /// Act on the project-local copy (./.zot/extensions), not the one that loads.
    #[arg(long, conflicts_with = "global")]
    project: bool,
    /// Act on the global copy ($ZOT_HOME/extensions), not the one that loads.
    #[arg(long)]
    global: bool,
}

impl ScopeArgs {
    /// The scope chosen; `None`: the copy that loads (project first).
    pub(crate) fn scope(self) -> Option<Scope> {
        match (self.project, self.global) {
            (true, _) => Some(Scope::Project),
            (_, true) => Some(Scope::Global),
            _ => None,
        }
    }
}

/// The installed extension `name` as seen from `cwd`: in `scope`, or else the copy that
/// loads (the project's when the user trusts it, else the global one), then an untrusted
/// project copy. A folder whose manifest has that name wins, else a folder of that name
/// with no usable manifest (a broken install). Returns its directory and scope, or why
/// not, naming where it looked.
pub(crate) fn resolve(
    home: &ZotHome,
    cwd: &Path,
    name: &str,
    scope: Option<Scope>,
) -> Result<(PathBuf, Scope), String> {
    validate_name(name).map_err(|e| format!("{name:?} is not an extension name: {e}"))?;
    // Each pass: a scope, and whether an untrusted project copy counts in it.
    let passes = match scope {
        Some(s) => vec![(s, true)],
        None => vec![
            (Scope::Project, false),
            (Scope::Global, true),
            (Scope::Project, true),
        ],
    };
    let found = discover(&search_path(cwd, home));
    let loads = found.found.iter().chain(&found.shadowed);
    let untrusted = found.untrusted.iter().map(|(f, _)| f);
    for &(s, any) in &passes {
        let mut candidates = loads.clone().chain(untrusted.clone().filter(|_| any));
        if let Some(f) = candidates.find(|f| f.source == s.source() && f.name() == name) {
            return Ok((f.dir.clone(), s));
        }
        let dir = s.root(home, cwd).join(name);
        if any && dir.symlink_metadata().is_ok() && Manifest::read(&dir).is_err() {
            return Ok((dir, s));
        }
    }
    let mut places: Vec<String> = Vec::new();
    for (s, _) in &passes {
        let place = s.root(home, cwd).display().to_string();
        if !places.contains(&place) {
            places.push(place);
        }
    }
    Err(format!(
        "no extension named {name:?} in {}; `zot ext list` shows the installed ones",
        places.join(" or ")
    ))
}

/// `project copy at <dir>` / `global copy at <dir>`: which copy a command acts on.
pub(crate) fn copy_at(dir: &Path, scope: Scope) -> String {
    format!("{} copy at {}", scope.label(), dir.display())
}
