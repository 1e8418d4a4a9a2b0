//! Where the user's grants are kept: `$ZOT_HOME/grants/<name>.json`, outside every
//! extension's directory, so no extension can write its own. What a grant means is
//! decided in [`super::policy`].

use super::{Grant, SandboxError};
use crate::manifest::Manifest;
use crate::paths::ZotHome;
use std::path::{Path, PathBuf};

/// The grant file of extension `name`.
pub fn path(home: &ZotHome, name: &str) -> PathBuf {
    home.root().join("grants").join(format!("{name}.json"))
}

/// The grant recorded for `name`, if any. An unreadable grant counts as none (and says
/// why), so a damaged file never grants more.
pub fn load(home: &ZotHome, name: &str) -> Result<Option<Grant>, SandboxError> {
    let path = path(home, name);
    match std::fs::read(&path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(cause) => Err(SandboxError::GrantUnreadable { path, cause }),
        Ok(bytes) => serde_json::from_slice(&bytes)
            .map(Some)
            .map_err(|cause| SandboxError::GrantInvalid { path, cause }),
    }
}

/// Records `grant` for `name`, replacing the file atomically; the error names the file.
pub fn save(home: &ZotHome, name: &str, grant: &Grant) -> Result<(), SandboxError> {
    let path = path(home, name);
    write(&path, name, grant).map_err(|cause| SandboxError::GrantUnwritable { path, cause })
}

fn write(path: &Path, name: &str, grant: &Grant) -> std::io::Result<()> {
    let dir = path.parent().expect("grant files live in a folder");
    std::fs::create_dir_all(dir)?;
    let tmp = dir.join(format!(".{name}.json.tmp"));
    let mut text = serde_json::to_vec_pretty(grant).expect("grants serialise");
    text.push(b'\n');
    std::fs::write(&tmp, text)?;
    std::fs::rename(&tmp, path)
}

/// Forgets the grant of `name`; true if there was one.
pub fn revoke(home: &ZotHome, name: &str) -> Result<bool, SandboxError> {
    let path = path(home, name);
    match std::fs::remove_file(&path) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(cause) => Err(SandboxError::GrantUnremovable { path, cause }),
    }
}

/// Grants everything `m` asks for (the user consented at install or update), for the
/// component `wasm`.
pub fn grant_asked(home: &ZotHome, m: &Manifest, wasm: &Path) -> Result<(), SandboxError> {
    let mut grant = load(home, &m.name)?.unwrap_or_default();
    grant.add_asked(m);
    grant.sha256 = sha256_of(wasm)?;
    save(home, &m.name, &grant)
}

/// Keeps `m`'s grant as it is for the updated component `wasm` (it asks for no more).
pub fn repin(home: &ZotHome, m: &Manifest, wasm: &Path) -> Result<(), SandboxError> {
    let Some(mut grant) = load(home, &m.name)? else {
        return Ok(());
    };
    grant.sha256 = sha256_of(wasm)?;
    save(home, &m.name, &grant)
}

/// The SHA-256 of the component `wasm`, which a grant is pinned to.
pub fn sha256_of(wasm: &Path) -> Result<String, SandboxError> {
    let bytes = std::fs::read(wasm).map_err(|cause| SandboxError::ComponentUnreadable {
        path: wasm.to_path_buf(),
        cause,
    })?;
    Ok(crate::cache::sha256_hex(&bytes))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::manifest::{CwdAccess, Limits, Permissions, MAX_MEMORY_MB};

    /// A damaged or hand-edited grant file is an error naming the file, or a grant that
    /// still gives no more than the manifest asks; never a panic.
    #[test]
    fn an_odd_grant_file_is_an_error_or_no_more_than_asked() {
        let root = std::env::temp_dir().join(format!("zot-grants-{}", std::process::id()));
        let home = ZotHome::new(&root);
        let asked = Permissions {
            data_dir: true,
            cwd: Some(CwdAccess::Read),
            env: vec!["HOME".into()],
            http: vec!["api.example.com".into()],
        };
        let limits = Limits {
            memory_mb: Some(MAX_MEMORY_MB),
            tool_timeout_ms: None,
        };
        let odd: [&[u8]; 8] = [
            b"",
            b"\xff\xfe not UTF-8",
            b"[]",
            b"null",
            br#"{"permissions": 5}"#,
            br#"{"memory_mb": -1}"#,
            br#"{"memory_mb": 18446744073709551615, "sha256": "\u00e9\u00e9"}"#,
            br#"{"permissions": {"http": ["", "*", "[::1", "http://"], "env": [""]}}"#,
        ];
        for bytes in odd {
            std::fs::create_dir_all(root.join("grants")).unwrap();
            std::fs::write(path(&home, "odd"), bytes).unwrap();
            match load(&home, "odd") {
                Err(e) => assert!(e.to_string().contains("odd.json"), "{e}"),
                Ok(grant) => {
                    let d = super::super::decide(
                        &asked,
                        &limits,
                        grant.as_ref(),
                        "/d".into(),
                        Path::new("/p"),
                        |_| None,
                    );
                    assert!(d.policy.memory_bytes <= (MAX_MEMORY_MB as usize) << 20);
                    assert!(d.policy.http.is_empty(), "{:?}", d.policy.http);
                }
            }
        }
        std::fs::remove_dir_all(&root).unwrap();
    }
}
