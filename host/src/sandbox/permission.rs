//! One permission as the user names it (`zot ext grant -p`), and why one the manifest
//! does not ask for is refused.

use super::{memory, HostPattern, SandboxError};
use crate::manifest::{CwdAccess, Manifest};
use std::str::FromStr;

/// One permission: `data_dir`, `cwd` (or `cwd:read`), `env:NAME`, `http:PATTERN`,
/// `memory:MB`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Permission {
    DataDir,
    Cwd,
    Env(String),
    Http(String),
    Memory(u64),
}

impl FromStr for Permission {
    type Err = SandboxError;

    fn from_str(permission: &str) -> Result<Permission, SandboxError> {
        let (kind, value) = permission.split_once(':').unwrap_or((permission, ""));
        Ok(match (kind, value) {
            ("data_dir", "") => Permission::DataDir,
            ("cwd", "" | "read") => Permission::Cwd,
            ("env", name) if !name.is_empty() => Permission::Env(name.into()),
            ("http", host) => {
                HostPattern::parse(host)?;
                Permission::Http(host.into())
            }
            ("memory", mb) => Permission::Memory(memory::parse_mb(mb)?),
            _ => return Err(SandboxError::UnknownPermission(permission.into())),
        })
    }
}

impl Permission {
    /// Whether `m` asks for it (memory: at most what it asks, or the default).
    pub fn is_asked(&self, m: &Manifest) -> bool {
        let asked = &m.permissions;
        match self {
            Permission::DataDir => asked.data_dir,
            Permission::Cwd => asked.cwd.is_some(),
            Permission::Env(name) => asked.env.contains(name),
            Permission::Http(host) => asked.http.contains(host),
            Permission::Memory(mb) => *mb <= memory::asked_mb(&m.limits),
        }
    }
}

/// Why `permission` is refused: the manifest does not ask it; what it asks, as
/// permissions, and the nearest of them.
pub(super) fn not_asked(m: &Manifest, permission: &str) -> SandboxError {
    let asked = &m.permissions;
    let mut options: Vec<String> = Vec::new();
    if asked.data_dir {
        options.push("data_dir".into());
    }
    if asked.cwd == Some(CwdAccess::Read) {
        options.push("cwd".into());
    }
    options.extend(asked.env.iter().map(|n| format!("env:{n}")));
    options.extend(asked.http.iter().map(|h| format!("http:{h}")));
    if let Some(mb) = m.limits.memory_mb {
        options.push(format!("memory:{mb}"));
    }
    let nearest = options
        .iter()
        .map(|o| (edit_distance(o, permission), o))
        .filter(|(d, _)| *d < permission.chars().count())
        .min()
        .map(|(_, o)| o.clone());
    SandboxError::NotAsked {
        permission: permission.into(),
        asked: options,
        nearest,
    }
}

/// The Levenshtein distance between `a` and `b`, in characters.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = (diagonal + usize::from(ca != *cb))
                .min(above + 1)
                .min(row[j] + 1);
            diagonal = above;
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::edit_distance;

    #[test]
    fn edit_distance_counts_single_character_edits() {
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(edit_distance("http:a", "http:a"), 0);
        assert_eq!(
            edit_distance("http:http://127.0.0.1:8766", "http:127.0.0.1:8766"),
            7
        );
    }
}
