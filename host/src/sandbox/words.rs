//! Permissions in plain words, for people deciding what to grant.

use super::{memory, Grant};
use crate::manifest::{Manifest, Permissions};

/// What `m` asks for, in plain words.
pub fn asked_words(m: &Manifest) -> Vec<String> {
    in_words(&m.permissions, Some(memory::asked_mb(&m.limits)))
}

/// What `grant` allows, in plain words.
pub fn granted_words(grant: &Grant) -> Vec<String> {
    in_words(&grant.permissions, Some(memory::granted_mb(grant)))
}

/// Permissions in plain words, one line each; with `memory_mb`, the memory too.
pub(super) fn in_words(p: &Permissions, memory_mb: Option<u64>) -> Vec<String> {
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
            .map(|name| format!("read the environment variable {name}")),
    );
    out.extend(
        p.http
            .iter()
            .map(|host| format!("make HTTP requests to {host}")),
    );
    out.extend(memory_mb.map(|mb| format!("use up to {mb} MiB of memory")));
    out
}
