//! Permissions in plain words, for people deciding what to grant.

use super::{Grant, Limit};
use crate::manifest::{Manifest, Permissions};
use crate::terminal_text::one_line;

/// What `m` asks for, in plain words: its memory, and the other limits it asks above
/// their defaults.
pub fn asked_words(m: &Manifest) -> Vec<String> {
    in_words(&m.permissions, &raised(|l| l.asked(&m.limits.caps)))
}

/// What `grant` allows the component of manifest `m`, in plain words: the memory it
/// runs with, and the other limits in force above their defaults (what it asks, at most
/// what is granted: a component asking 32 MiB runs with 32, whatever the grant).
pub fn granted_words(m: &Manifest, grant: &Grant) -> Vec<String> {
    in_words(
        &grant.permissions,
        &raised(|l| l.in_force(&m.limits.caps, &grant.caps)),
    )
}

/// Memory, and each other limit whose value is above its default.
fn raised(value: impl Fn(Limit) -> u64) -> Vec<(Limit, u64)> {
    Limit::ALL
        .into_iter()
        .map(|l| (l, value(l)))
        .filter(|(l, v)| *l == Limit::Memory || *v > l.spec().default)
        .collect()
}

/// Permissions in plain words, one line each (names from the manifest shown with
/// [`one_line`]), then `limits`.
pub(super) fn in_words(p: &Permissions, limits: &[(Limit, u64)]) -> Vec<String> {
    let mut out = Vec::new();
    if p.data_dir {
        out.push("read and write its own data directory (seen as /data)".into());
    }
    if p.cwd.is_some() {
        out.push("read (not write) the project directory".into());
    }
    out.extend(
        p.env
            .iter()
            .map(|name| format!("read the environment variable {}", one_line(name))),
    );
    out.extend(
        p.http
            .iter()
            .map(|host| format!("make HTTP requests to {}", one_line(host))),
    );
    out.extend(limits.iter().map(|(l, v)| l.words(*v)));
    out
}
