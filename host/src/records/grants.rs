//! Where the user's grants are kept: `$ZOT_HOME/grants/<identity key>.json`, outside
//! every extension's directory, so no extension can write its own, and keyed by where the
//! extension is installed ([`Identity`]), never by its name. What a grant means is
//! decided in [`super::policy`].

use super::trust::Fingerprint;
use super::Grant;
use crate::caps::SandboxError;
use crate::identity::Identity;
use crate::manifest::{Launch, Manifest};
use crate::paths::ZotHome;
use crate::util::tree::TreeError;
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

/// What [`grant`] recorded.
#[derive(Debug)]
pub struct Granted {
    /// The grant now in force for these files.
    pub grant: Grant,
    /// A grant for other files (another build, changed files) was replaced, not carried.
    pub replaced: bool,
}

/// Grants the extension of `m` in `dir`, installed as `id`, everything it asks (`all`)
/// and each of `permissions` (refused unless asked), added to what was granted for these
/// very files; a grant for other files is replaced. Confinement, the user's decision
/// about the extension, is kept as it was.
pub fn grant(
    home: &ZotHome,
    id: &Identity,
    (m, dir): (&Manifest, &Path),
    all: bool,
    permissions: &[String],
) -> Result<Granted, SandboxError> {
    let (_, sha256) = binding(m, dir)?;
    let old = load(home, id)?;
    let replaced = old.as_ref().is_some_and(|g| g.sha256 != sha256);
    let (confine, require) = old
        .as_ref()
        .map_or((false, false), |g| (g.confine, g.require_confinement));
    let mut grant = Grant::for_files(old, sha256);
    grant.confine = confine;
    grant.require_confinement = require;
    if all {
        grant.add_asked(m);
    }
    for permission in permissions {
        grant.add(m, permission)?;
    }
    save(home, id, &grant)?;
    Ok(Granted { grant, replaced })
}

/// What [`revoke_permissions`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Revoked {
    /// There was no grant.
    Nothing,
    /// The grant is gone.
    Everything,
    /// Every permission is gone; it stays confined (revoking what it may reach never
    /// lifts its confinement).
    KeptConfinement,
}

/// Forgets every permission granted to `id`.
pub fn revoke_permissions(home: &ZotHome, id: &Identity) -> Result<Revoked, SandboxError> {
    if let Some(old) = load(home, id)?.filter(|g| g.confine) {
        let kept = Grant {
            sha256: old.sha256,
            confine: true,
            ..Default::default()
        };
        save(home, id, &kept)?;
        return Ok(Revoked::KeptConfinement);
    }
    Ok(match revoke(home, id)? {
        true => Revoked::Everything,
        false => Revoked::Nothing,
    })
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

/// Which files a grant is bound to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bound {
    /// The component file.
    Component,
    /// Every file of a classic extension: its confinement is bound to them.
    Classic,
    /// A remote MCP server: where it is and what is sent to it ([`remote_binding`]).
    Remote,
}

/// What a grant of the extension of `m` in `dir` is bound to, and its SHA-256 — the one
/// rule, for writing a grant and for checking one: a component's file, by its SHA-256; a
/// classic extension's files, by their fingerprint as one hash ([`classic_files`],
/// the same fingerprint a project's trust holds).
pub fn binding(m: &Manifest, dir: &Path) -> Result<(Bound, String), SandboxError> {
    match m.launch(dir) {
        Launch::Wasm(wasm) => Ok((Bound::Component, sha256_of(&wasm)?)),
        Launch::Exec(_) => classic_files(m, dir)
            .map(|(sha256, _)| (Bound::Classic, sha256))
            .map_err(|e| SandboxError::FilesUnreadable {
                path: e.path,
                cause: e.cause,
            }),
        Launch::Remote(_) => Ok((Bound::Remote, remote_binding(m))),
    }
}

/// What a remote MCP server's grant is bound to: the SHA-256 of its `mcp.url` and its
/// headers as written (names and templates, never an expanded value), as canonical
/// JSON — so a grant goes stale when the URL or a header changes, not when the
/// manifest's whitespace or the tools' prefix does.
pub fn remote_binding(m: &Manifest) -> String {
    use sha2::{Digest, Sha256};
    let mcp = m.mcp.as_ref();
    let bound = serde_json::json!({
        "url": mcp.and_then(|m| m.url.as_deref()),
        "headers": mcp.map(|m| &m.headers),
    });
    let mut hasher = Sha256::new();
    hasher.update(b"zot remote mcp\0");
    hasher.update(bound.to_string().as_bytes());
    format!("{:x}", hasher.finalize())
}

/// A classic extension's files as a grant is bound to them ([`binding`]): their one
/// hash, and the fingerprint it is the hash of (what its program is checked against
/// before it runs).
pub fn classic_files(m: &Manifest, dir: &Path) -> Result<(String, Fingerprint), TreeError> {
    let files = super::trust::fingerprint(dir, Some(m))?;
    Ok((super::trust::digest_of(&files), files))
}

/// The SHA-256 of the component `wasm`, which a grant is pinned to.
pub fn sha256_of(wasm: &Path) -> Result<String, SandboxError> {
    crate::util::tree::sha256_file(wasm).map_err(|e| SandboxError::ComponentUnreadable {
        path: e.path,
        cause: e.cause,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A component's grant is bound to its file, a classic extension's to all its files:
    /// a change of any file the rule covers is another binding, the same files the same.
    #[test]
    fn a_grant_is_bound_to_the_component_or_to_every_file() {
        let root = std::env::temp_dir().join(format!("zot-binding-{}", std::process::id()));
        let (wasm_dir, exec_dir) = (root.join("c"), root.join("e"));
        std::fs::create_dir_all(&wasm_dir).unwrap();
        std::fs::create_dir_all(&exec_dir).unwrap();
        std::fs::write(wasm_dir.join("x.wasm"), b"\0asm component").unwrap();
        std::fs::write(wasm_dir.join("notes.txt"), b"a").unwrap();
        std::fs::write(exec_dir.join("run.sh"), b"#!/bin/sh\n").unwrap();
        std::fs::write(exec_dir.join("lib.txt"), b"a").unwrap();
        let component = Manifest::from_json(br#"{"name": "c", "wasm": "x.wasm"}"#).unwrap();
        let classic = Manifest::from_json(br#"{"name": "e", "exec": "./run.sh"}"#).unwrap();
        let (kind, first) = binding(&component, &wasm_dir).unwrap();
        assert_eq!(kind, Bound::Component);
        assert_eq!(first, sha256_of(&wasm_dir.join("x.wasm")).unwrap());
        // Another file beside the component: the same binding.
        std::fs::write(wasm_dir.join("notes.txt"), b"b").unwrap();
        assert_eq!(binding(&component, &wasm_dir).unwrap().1, first);
        let (kind, first) = binding(&classic, &exec_dir).unwrap();
        assert_eq!(kind, Bound::Classic);
        assert_eq!(first, classic_files(&classic, &exec_dir).unwrap().0);
        assert_eq!(binding(&classic, &exec_dir).unwrap().1, first);
        // Any file of a classic extension: another binding.
        std::fs::write(exec_dir.join("lib.txt"), b"b").unwrap();
        assert_ne!(binding(&classic, &exec_dir).unwrap().1, first);
        // Unreadable: an error naming what, not a binding.
        std::fs::remove_file(wasm_dir.join("x.wasm")).unwrap();
        assert!(binding(&component, &wasm_dir).is_err());
        std::fs::remove_dir_all(&root).unwrap();
    }

    /// A remote server's grant is bound to its URL and headers as written: another URL
    /// or header is another binding; the prefix or the manifest's layout is not.
    #[test]
    fn a_remote_grant_is_bound_to_the_url_and_the_headers_written() {
        let m = |text: &str| Manifest::from_json(text.as_bytes()).unwrap();
        let dir = Path::new("/nowhere");
        let one = m(r#"{"name":"r","mcp":{"url":"https://a.example/mcp",
            "headers":{"Authorization":"Bearer ${env:T}"}}}"#);
        let (kind, first) = binding(&one, dir).unwrap();
        assert_eq!(kind, Bound::Remote);
        let same = m(
            r#"{"name":"r",   "mcp":{"prefix":"a.","url":"https://a.example/mcp",
            "headers":{"Authorization":"Bearer ${env:T}"}}}"#,
        );
        assert_eq!(binding(&same, dir).unwrap().1, first);
        for other in [
            r#"{"name":"r","mcp":{"url":"https://b.example/mcp","headers":{"Authorization":"Bearer ${env:T}"}}}"#,
            r#"{"name":"r","mcp":{"url":"https://a.example/mcp","headers":{"Authorization":"Bearer ${env:U}"}}}"#,
            r#"{"name":"r","mcp":{"url":"https://a.example/mcp"}}"#,
        ] {
            assert_ne!(binding(&m(other), dir).unwrap().1, first, "{other}");
        }
    }
}
