//! Whether a guard fails closed: the user's choice, per extension, that a `tool_call`
//! interceptor which does not answer in time, crashes, or is not running blocks the call
//! instead of allowing it (the protocol's default). Kept in
//! `$ZOT_HOME/guards/<identity key>.json`, outside every extension's folder and keyed by
//! where it is installed, like a grant.
//!
//! It only ever makes the host stricter, so it is not bound to the extension's files: a
//! guard updated in place keeps failing closed. A record that cannot be read counts as
//! failing closed (and says why in the log): a damaged file never weakens a guard.

use crate::identity::Identity;
use crate::paths::ZotHome;
use serde::{Deserialize, Serialize};

/// What is recorded for one extension.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GuardRecord {
    /// Its `tool_call` interceptor blocks when it cannot answer.
    pub fail_closed: bool,
    /// When the user chose it (RFC 3339).
    pub chosen_at: String,
}

/// How a guard that cannot answer counts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    /// As the protocol says: the call is allowed (no record).
    Open,
    /// The call is blocked (the user's choice).
    Closed,
    /// The record cannot be read (why): counted as [`Failure::Closed`].
    Unreadable(String),
}

impl Failure {
    /// Whether a call its guard cannot answer is blocked.
    pub fn blocks(&self) -> bool {
        match self {
            Failure::Open => false,
            Failure::Closed | Failure::Unreadable(_) => true,
        }
    }
}

/// What was chosen for `id`.
pub fn load(home: &ZotHome, id: &Identity) -> Failure {
    let path = home.guard_path(id);
    match std::fs::read(&path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Failure::Open,
        Err(e) => Failure::Unreadable(format!("{}: {e}", path.display())),
        Ok(bytes) => match serde_json::from_slice::<GuardRecord>(&bytes) {
            Ok(record) if record.fail_closed => Failure::Closed,
            Ok(_) => Failure::Open,
            Err(e) => Failure::Unreadable(format!("{}: {e}", path.display())),
        },
    }
}

/// Records the choice for `id`: failing closed writes the record (atomically, following
/// no link), failing open removes it. Returns whether anything changed.
pub fn choose(home: &ZotHome, id: &Identity, fail_closed: bool) -> std::io::Result<bool> {
    let path = home.guard_path(id);
    let before = load(home, id);
    if !fail_closed {
        return match std::fs::remove_file(&path) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(e),
        };
    }
    if before == Failure::Closed {
        return Ok(false);
    }
    let record = GuardRecord {
        fail_closed: true,
        chosen_at: humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string(),
    };
    let mut text = serde_json::to_vec_pretty(&record).map_err(std::io::Error::other)?;
    text.push(b'\n');
    crate::paths::write_atomic(&path, &text)?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_choice_is_kept_and_a_damaged_record_fails_closed() {
        let root = zot_test_fixtures::fresh_dir("guard");
        let home = ZotHome::new(root.clone());
        let id = Identity::Global {
            dir_name: "g".into(),
        };
        assert_eq!(load(&home, &id), Failure::Open);
        assert!(choose(&home, &id, true).unwrap());
        assert!(!choose(&home, &id, true).unwrap(), "already");
        assert_eq!(load(&home, &id), Failure::Closed);
        std::fs::write(home.guard_path(&id), "{not json").unwrap();
        assert!(load(&home, &id).blocks(), "{:?}", load(&home, &id));
        assert!(choose(&home, &id, false).unwrap());
        assert_eq!(load(&home, &id), Failure::Open);
        let _ = std::fs::remove_dir_all(&root);
    }
}
