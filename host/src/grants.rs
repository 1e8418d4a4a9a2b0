//! Where the user's grants are kept: `$ZOT_HOME/grants/<name>.json`, outside every
//! extension's directory, so no extension can write its own. What a grant means is
//! decided in [`crate::sandbox`].

use crate::paths::ZotHome;
use crate::sandbox::Grant;
use std::path::PathBuf;

/// The grant file of extension `name`.
pub fn path(home: &ZotHome, name: &str) -> PathBuf {
    home.root().join("grants").join(format!("{name}.json"))
}

/// The grant recorded for `name`, if any. An unreadable grant counts as none (and says
/// why), so a damaged file never grants more.
pub fn load(home: &ZotHome, name: &str) -> Result<Option<Grant>, String> {
    let path = path(home, name);
    match std::fs::read(&path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(format!("cannot read {}: {e}", path.display())),
        Ok(bytes) => serde_json::from_slice(&bytes)
            .map(Some)
            .map_err(|e| format!("{} is not a valid grant: {e}", path.display())),
    }
}

/// Records `grant` for `name`, replacing the file atomically.
pub fn save(home: &ZotHome, name: &str, grant: &Grant) -> std::io::Result<()> {
    let path = path(home, name);
    let dir = path.parent().expect("grant files live in a folder");
    std::fs::create_dir_all(dir)?;
    let tmp = dir.join(format!(".{name}.json.tmp"));
    let mut text = serde_json::to_vec_pretty(grant).expect("grants serialise");
    text.push(b'\n');
    std::fs::write(&tmp, text)?;
    std::fs::rename(&tmp, &path)
}

/// Forgets the grant of `name`; true if there was one.
pub fn revoke(home: &ZotHome, name: &str) -> std::io::Result<bool> {
    match std::fs::remove_file(path(home, name)) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(e),
    }
}
