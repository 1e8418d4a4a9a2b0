//! Where the user's grants are kept: `$ZOT_HOME/grants/<identity key>.json`, outside
//! every extension's directory, so no extension can write its own, and keyed by where the
//! extension is installed ([`Identity`]), never by its name. What a grant means is
//! decided in [`super::policy`].

use super::{Grant, SandboxError};
use crate::identity::Identity;
use crate::manifest::Manifest;
use crate::paths::ZotHome;
use std::path::Path;

/// The grant recorded for `id`, if any. An unreadable grant counts as none (and says
/// why), so a damaged file never grants more.
pub fn load(home: &ZotHome, id: &Identity) -> Result<Option<Grant>, SandboxError> {
    let path = home.grant_path(id);
    match std::fs::read(&path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(cause) => Err(SandboxError::GrantUnreadable { path, cause }),
        Ok(bytes) => serde_json::from_slice(&bytes)
            .map(Some)
            .map_err(|cause| SandboxError::GrantInvalid { path, cause }),
    }
}

/// Records `grant` for `id`, replacing the file atomically; the error names the file.
pub fn save(home: &ZotHome, id: &Identity, grant: &Grant) -> Result<(), SandboxError> {
    let path = home.grant_path(id);
    write(&path, grant).map_err(|cause| SandboxError::GrantUnwritable { path, cause })
}

fn write(path: &Path, grant: &Grant) -> std::io::Result<()> {
    let mut text = serde_json::to_vec_pretty(grant).map_err(std::io::Error::other)?;
    text.push(b'\n');
    crate::paths::write_atomic(path, &text)
}

/// Forgets the grant of `id`; true if there was one.
pub fn revoke(home: &ZotHome, id: &Identity) -> Result<bool, SandboxError> {
    let path = home.grant_path(id);
    match std::fs::remove_file(&path) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(cause) => Err(SandboxError::GrantUnremovable { path, cause }),
    }
}

/// Grants everything `m` asks for (the user consented at install or update), for the
/// component `wasm` installed as `id`.
pub fn grant_asked(
    home: &ZotHome,
    id: &Identity,
    m: &Manifest,
    wasm: &Path,
) -> Result<(), SandboxError> {
    let mut grant = load(home, id)?.unwrap_or_default();
    grant.add_asked(m);
    grant.sha256 = sha256_of(wasm)?;
    save(home, id, &grant)
}

/// Keeps the grant of `id` as it is for the updated component `wasm` (it asks for no
/// more).
pub fn repin(home: &ZotHome, id: &Identity, wasm: &Path) -> Result<(), SandboxError> {
    let Some(mut grant) = load(home, id)? else {
        return Ok(());
    };
    grant.sha256 = sha256_of(wasm)?;
    save(home, id, &grant)
}

/// The SHA-256 of the component `wasm`, which a grant is pinned to.
pub fn sha256_of(wasm: &Path) -> Result<String, SandboxError> {
    crate::tree::sha256_file(wasm).map_err(|e| SandboxError::ComponentUnreadable {
        path: e.path,
        cause: e.cause,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::manifest::{CwdAccess, Permissions};
    use crate::sandbox::Limit;

    const MAX_MEMORY_MB: u64 = Limit::Memory.spec().max;
    use crate::sandbox::Caps;

    /// A damaged or hand-edited grant file is an error naming the file, or a grant that
    /// still gives no more than the manifest asks; never a panic.
    #[test]
    fn an_odd_grant_file_is_an_error_or_no_more_than_asked() {
        let root = std::env::temp_dir().join(format!("zot-grants-{}", std::process::id()));
        let home = ZotHome::new(&root);
        let id = Identity::Global {
            dir_name: "odd".into(),
        };
        let asked = Permissions {
            data_dir: true,
            cwd: Some(CwdAccess::Read),
            env: vec!["HOME".into()],
            http: vec!["api.example.com".into()],
        };
        let limits = Caps {
            memory_mb: Some(MAX_MEMORY_MB),
            ..Caps::default()
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
            std::fs::write(home.grant_path(&id), bytes).unwrap();
            match load(&home, &id) {
                Err(e) => assert!(e.to_string().contains("odd.json"), "{e}"),
                Ok(grant) => {
                    let d = super::super::policy::decide(
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
