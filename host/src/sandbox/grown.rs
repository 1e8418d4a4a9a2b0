//! Whether an updated manifest asks for more than the one the grant was given for.

use super::memory::{asked_mb, DEFAULT_MEMORY_MB};
use super::words::in_words;
use crate::manifest::{Manifest, Permissions};

/// What `new` asks for that `old` did not, in plain words (a change of transport
/// counts); empty when it asks for nothing more.
pub fn grown_since(old: &Manifest, new: &Manifest) -> Vec<String> {
    match (old.wasm.is_some(), new.wasm.is_some()) {
        (true, false) => {
            return vec![
                "run as a classic program with your full user permissions (it was sandboxed)"
                    .into(),
            ]
        }
        (false, true) | (false, false) => return Vec::new(),
        (true, true) => {}
    }
    let (a, b) = (&old.permissions, &new.permissions);
    let added = Permissions {
        data_dir: b.data_dir && !a.data_dir,
        cwd: b.cwd.filter(|_| a.cwd.is_none()),
        env: b
            .env
            .iter()
            .filter(|n| !a.env.contains(n))
            .cloned()
            .collect(),
        http: b
            .http
            .iter()
            .filter(|h| !a.http.contains(h))
            .cloned()
            .collect(),
    };
    let more_memory =
        Some(asked_mb(&new.limits)).filter(|mb| *mb > asked_mb(&old.limits).max(DEFAULT_MEMORY_MB));
    in_words(&added, more_memory)
}
