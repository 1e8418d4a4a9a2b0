//! Where zot keeps things: `$ZOT_HOME` and the folders below it.

use std::path::{Path, PathBuf};

/// The root of zot's state: extensions, logs, per-extension data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ZotHome {
    root: PathBuf,
}

impl ZotHome {
    /// A home rooted at `root`.
    pub fn new(root: impl Into<PathBuf>) -> Self {
        ZotHome { root: root.into() }
    }

    /// `$ZOT_HOME` if set, else the platform default: Linux `$XDG_STATE_HOME/zot` or
    /// `~/.local/state/zot`, macOS `~/Library/Application Support/zot`.
    pub fn from_env() -> Result<Self, String> {
        if let Some(dir) = std::env::var_os("ZOT_HOME").filter(|v| !v.is_empty()) {
            return Ok(ZotHome::new(dir));
        }
        let base = directories::BaseDirs::new().ok_or(
            "cannot find your home directory: set ZOT_HOME to choose where zot keeps its state",
        )?;
        let dir = base.state_dir().unwrap_or_else(|| base.data_dir());
        Ok(ZotHome::new(dir.join("zot")))
    }

    /// The root folder.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Global extensions: `$ZOT_HOME/extensions`.
    pub fn extensions_dir(&self) -> PathBuf {
        self.root.join("extensions")
    }

    /// Log folder: `$ZOT_HOME/logs`.
    pub fn logs_dir(&self) -> PathBuf {
        self.root.join("logs")
    }

    /// One extension's log: `$ZOT_HOME/logs/ext-<name>.log`.
    pub fn log_path(&self, name: &str) -> PathBuf {
        self.logs_dir().join(format!("ext-{name}.log"))
    }

    /// The project extensions a load left untrusted, one summary line a load:
    /// `$ZOT_HOME/logs/untrusted.log` (never an extension's own log).
    pub fn untrusted_log_path(&self) -> PathBuf {
        self.logs_dir().join("untrusted.log")
    }

    /// Compiled components: `$ZOT_HOME/cache`.
    pub fn cache_dir(&self) -> PathBuf {
        self.root.join("cache")
    }

    /// Project trust records: `$ZOT_HOME/trust`.
    pub fn trust_dir(&self) -> PathBuf {
        self.root.join("trust")
    }

    /// The user's host-wide settings: `$ZOT_HOME/settings.json`.
    pub fn settings_path(&self) -> PathBuf {
        self.root.join("settings.json")
    }
}

/// Serializes a path as text, any bytes that are not UTF-8 replaced by U+FFFD (a folder
/// a repository named is no reason for a report to fail).
pub(crate) fn serialize_lossy<S: serde::Serializer>(path: &Path, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&path.to_string_lossy())
}

/// The project-local extensions found from `cwd`: `<project>/.zot/extensions`, the
/// project being the nearest folder up from `cwd` that has one
/// ([`project_root`]).
pub fn project_extensions_dir(cwd: &Path) -> PathBuf {
    extensions_below(&project_root(cwd))
}

/// `dir/.zot/extensions`.
pub(crate) fn extensions_below(dir: &Path) -> PathBuf {
    dir.join(".zot").join("extensions")
}

/// The project whose extensions are found from `cwd`, as trust names it: the nearest
/// folder, from `cwd`'s real path up, that holds a `.zot/extensions` (as git finds
/// `.git`), else `cwd`'s real path. The walk stops below the user's home folder (whose
/// own `.zot` counts only from the home folder itself) and at the filesystem root.
/// Trust is bound to it, so a project whose `.zot` is a link into another project's is
/// trusted on its own: what runs there is decided there.
pub fn project_root(cwd: &Path) -> PathBuf {
    let start = real(cwd);
    let home = directories::BaseDirs::new().map(|b| real(b.home_dir()));
    for dir in start.ancestors() {
        if dir != start && home.as_deref() == Some(dir) {
            break;
        }
        if extensions_below(dir).symlink_metadata().is_ok() {
            return dir.to_path_buf();
        }
    }
    start
}

/// `path` with every link resolved, or as given when it does not exist.
pub fn real(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
}

/// Replaces the file at `path` with `bytes` atomically, creating its folder, without
/// following a link (see `crate::util::safe_write`).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    crate::util::safe_write::write_file(path, bytes)
}
