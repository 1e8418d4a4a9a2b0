//! Where zot keeps things: `$ZOT_HOME` and the folders below it.

use crate::identity::Identity;
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

    /// Compiled components: `$ZOT_HOME/cache`.
    pub fn cache_dir(&self) -> PathBuf {
        self.root.join("cache")
    }

    /// One extension's private data folder: `$ZOT_HOME/data/<its identity's key>`
    /// (`data/<name>` for a global install).
    pub fn data_dir(&self, identity: &Identity) -> PathBuf {
        self.root.join("data").join(identity.key())
    }

    /// One extension's grant: `$ZOT_HOME/grants/<its identity's key>.json`.
    pub fn grant_path(&self, identity: &Identity) -> PathBuf {
        let mut path = self.root.join("grants").join(identity.key());
        path.as_mut_os_string().push(".json");
        path
    }

    /// One install's record: `$ZOT_HOME/provenance/<its identity's key>.json`
    /// (`provenance/<name>.json` for a global install). A project's copies are recorded
    /// here too, never in the project, which anyone who can write to it could forge.
    pub fn provenance_path(&self, identity: &Identity) -> PathBuf {
        let mut path = self.root.join("provenance").join(identity.key());
        path.as_mut_os_string().push(".json");
        path
    }

    /// Project trust records: `$ZOT_HOME/trust`.
    pub fn trust_dir(&self) -> PathBuf {
        self.root.join("trust")
    }
}

/// Serializes a path as text, any bytes that are not UTF-8 replaced by U+FFFD (a folder
/// a repository named is no reason for a report to fail).
pub(crate) fn serialize_lossy<S: serde::Serializer>(path: &Path, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&path.to_string_lossy())
}

/// The project-local extensions found from `cwd`: `<project>/.zot/extensions`, the
/// project being the nearest folder up from `cwd` that has one
/// ([`project_root`](crate::identity::project_root)).
pub fn project_extensions_dir(cwd: &Path) -> PathBuf {
    extensions_below(&crate::identity::project_root(cwd))
}

/// `dir/.zot/extensions`.
pub(crate) fn extensions_below(dir: &Path) -> PathBuf {
    dir.join(".zot").join("extensions")
}

/// Replaces the file at `path` with `bytes` atomically, creating its folder, without
/// following a link (see [`crate::safe_write`]).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    crate::safe_write::write_file(path, bytes)
}
