//! [`SandboxError`]: why a permission, a host pattern or a grant file was refused.

use super::Limit;
use std::fmt;
use std::path::PathBuf;

/// What the sandbox refused or could not do; each names the permission or file and,
/// where there is one, what to give instead.
#[derive(Debug)]
pub enum SandboxError {
    /// A permission of no known kind.
    UnknownPermission(String),
    /// An `http` entry that is not a host pattern (the entry, what is wrong).
    HostPattern { entry: String, problem: String },
    /// A limit (`memory:MB`, `disk:MB`, …) whose value is not 1 to its max.
    BadLimit { limit: Limit, value: String },
    /// A permission the manifest does not ask for: what it asks, and the nearest.
    NotAsked {
        permission: String,
        asked: Vec<String>,
        nearest: Option<String>,
    },
    /// A grant file that exists but cannot be read.
    GrantUnreadable {
        path: PathBuf,
        cause: std::io::Error,
    },
    /// A grant file that is not a grant.
    GrantInvalid {
        path: PathBuf,
        cause: serde_json::Error,
    },
    /// A grant file that cannot be written.
    GrantUnwritable {
        path: PathBuf,
        cause: std::io::Error,
    },
    /// A grant file that cannot be removed.
    GrantUnremovable {
        path: PathBuf,
        cause: std::io::Error,
    },
    /// The component a grant is pinned to cannot be read.
    ComponentUnreadable {
        path: PathBuf,
        cause: std::io::Error,
    },
    /// A classic extension's files cannot be read to compute what its grant is bound to.
    FilesUnreadable {
        path: PathBuf,
        cause: std::io::Error,
    },
}

impl fmt::Display for SandboxError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use SandboxError::*;
        match self {
            UnknownPermission(p) => write!(
                f,
                "unknown permission {p:?}: use data_dir, cwd, env:NAME, http:HOST, memory:MB, \
                 disk:MB, resources:N, http_requests:N or field_kib:KIB"
            ),
            HostPattern { entry, problem } => write!(f, "{entry:?}: {problem}"),
            BadLimit { limit, value } => {
                let spec = limit.spec();
                let what = match spec.unit {
                    "MiB" | "KiB" => format!("a number of {}", spec.unit),
                    _ => "a number".to_string(),
                };
                write!(
                    f,
                    "{}:{value}: give {what}, 1 to {}",
                    spec.permission, spec.max
                )
            }
            NotAsked {
                permission,
                asked,
                nearest,
            } => {
                let list = match asked.is_empty() {
                    true => "nothing".to_string(),
                    false => asked.join(", "),
                };
                let nearest = nearest
                    .as_ref()
                    .map_or(String::new(), |o| format!(" (nearest: {o})"));
                write!(
                    f,
                    "its manifest does not ask for {permission}, so granting it would have no \
                     effect; it asks for: {list}{nearest}; nothing was granted"
                )
            }
            GrantUnreadable { path, cause }
            | ComponentUnreadable { path, cause }
            | FilesUnreadable { path, cause } => {
                write!(f, "cannot read {}: {cause}", path.display())
            }
            GrantInvalid { path, cause } => {
                write!(f, "{} is not a valid grant: {cause}", path.display())
            }
            GrantUnwritable { path, cause } => {
                write!(f, "cannot write {}: {cause}", path.display())
            }
            GrantUnremovable { path, cause } => {
                write!(f, "cannot remove {}: {cause}", path.display())
            }
        }
    }
}

impl std::error::Error for SandboxError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        use SandboxError::*;
        match self {
            GrantUnreadable { cause, .. }
            | GrantUnwritable { cause, .. }
            | GrantUnremovable { cause, .. }
            | ComponentUnreadable { cause, .. }
            | FilesUnreadable { cause, .. } => Some(cause),
            GrantInvalid { cause, .. } => Some(cause),
            _ => None,
        }
    }
}
