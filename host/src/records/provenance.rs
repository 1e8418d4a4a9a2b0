//! Where an install came from and what it was: recorded under `$ZOT_HOME/provenance`,
//! keyed by the install's identity (`<name>.json` for a global install,
//! `@project/<project key>/<name>.json` for a project's copy; see
//! [`ZotHome::provenance_path`]), never inside the extension or the project: neither can
//! rewrite or forge its record, and a record a project holds is never read. A symlink is
//! recorded by its text and by the content of what it resolves to, so repointing what it
//! names is a change too. `zot ext verify` compares the files against it and `zot ext
//! update` fetches again from the recorded source.

use crate::identity::Identity;
use crate::manifest::MANIFEST_FILE;
use crate::paths::ZotHome;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

/// What kind of source an install came from.
/// An install record, or the files it is checked against, that could not be read or
/// written.
#[derive(Debug)]
pub enum ProvenanceError {
    Io {
        action: &'static str,
        path: std::path::PathBuf,
        cause: std::io::Error,
    },
    /// The record is not JSON of a record.
    Damaged {
        path: std::path::PathBuf,
        cause: serde_json::Error,
    },
}

impl ProvenanceError {
    fn io(
        action: &'static str,
        path: impl Into<std::path::PathBuf>,
    ) -> impl Fn(std::io::Error) -> Self {
        let path = path.into();
        move |cause| ProvenanceError::Io {
            action,
            path: path.clone(),
            cause,
        }
    }
}

impl std::fmt::Display for ProvenanceError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ProvenanceError::Io {
                action,
                path,
                cause,
            } => write!(f, "cannot {action} {}: {cause}", path.display()),
            ProvenanceError::Damaged { path, cause } => {
                write!(f, "{} is damaged: {cause}", path.display())
            }
        }
    }
}

impl std::error::Error for ProvenanceError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ProvenanceError::Io { cause, .. } => Some(cause),
            ProvenanceError::Damaged { cause, .. } => Some(cause),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SourceKind {
    /// A local directory.
    Dir,
    /// A git repository.
    Git,
    /// A single component file, with a generated manifest.
    Wasm,
}

/// The record of one install. Its JSON form is public (`zot ext info --json`,
/// docs/installing.md): change it only additively.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Provenance {
    /// The installed extension's name.
    pub name: String,
    pub kind: SourceKind,
    /// The URL, or the absolute path of the directory or file.
    pub source: String,
    /// `--ref` as given (branch, tag or commit), if any.
    #[serde(rename = "ref", default, skip_serializing_if = "Option::is_none")]
    pub git_ref: Option<String>,
    /// `--path` as given, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// `--name` as given, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rename: Option<String>,
    /// The commit installed (git sources).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
    /// RFC 3339, UTC.
    pub installed_at: String,
    /// Every installed file, by path relative to the extension (`/`-separated): its
    /// SHA-256, or `symlink:<target>` for a link.
    pub files: BTreeMap<String, String>,
    /// Every installed symlink, by path: the SHA-256 of the file it resolves to inside
    /// the extension, or `directory` (its files are in `files`). Absent in records made
    /// before links were resolved; then only the links' text is checked.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub targets: BTreeMap<String, String>,
    /// What the install built (its files are in `files` too), when it built something.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub build: Option<Built>,
    /// The signature checked at install (or at the last update), when one was required.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature: Option<Signed>,
}

/// A minisign signature of what was installed, checked against a key the user chose
/// (`--require-signature`, or a signer their settings name for the source): kept so
/// `info` shows who signed, `verify` checks it again and `update` requires that key.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Signed {
    /// The public key that verified it (base64, the line `minisign -G` writes).
    pub key: String,
    pub over: SignedOver,
    /// The signature's trusted comment (signed with it).
    pub trusted_comment: String,
    /// The signature, as its file had it.
    pub minisig: String,
    /// For a tree: every file the signed statement lists, as it lists it.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub files: BTreeMap<String, String>,
}

/// What a signature is of.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SignedOver {
    /// The component file's bytes (`<file>.minisig` beside it).
    File,
    /// The statement of the source's tree (`extension.minisig` in its folder).
    Tree,
}

/// What an install builds: the kind of program the extension runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Target {
    /// A program for this machine, run as a classic extension.
    Native,
    /// A WebAssembly component (or preview-1 module), run in the sandbox.
    Wasm,
}

/// Where the recipe comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Recipe {
    /// The manifest's `build`.
    Manifest,
    /// `go.mod`: `go build`.
    Go,
    /// `Cargo.toml`: `cargo build --release`.
    Cargo,
    /// `package.json` with a `build` script: `npm ci` and `npm run build`.
    Npm,
}

/// What was built, kept in the install's record: the recipe, the toolchain, the
/// commands, and the SHA-256 of each file made.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Built {
    pub recipe: Recipe,
    pub target: Target,
    /// The toolchain's own words for its version (`go version go1.27.3 linux/amd64`), or
    /// the program's path when it has none.
    pub toolchain: String,
    /// Each command, as shown.
    pub steps: Vec<String>,
    /// Each file made, by path relative to the extension: its SHA-256.
    pub outputs: BTreeMap<String, String>,
}

/// The record of the install `id`, if there is one.
pub fn load(home: &ZotHome, id: &Identity) -> Result<Option<Provenance>, ProvenanceError> {
    let file = home.provenance_path(id);
    match fs::read(&file) {
        Ok(bytes) => serde_json::from_slice(&bytes)
            .map(Some)
            .map_err(|cause| ProvenanceError::Damaged { path: file, cause }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(ProvenanceError::io("read", file)(e)),
    }
}

/// Writes the record of the install `id` (atomically, never through a link).
pub fn save(home: &ZotHome, id: &Identity, record: &Provenance) -> Result<(), ProvenanceError> {
    let file = home.provenance_path(id);
    let mut text = serde_json::to_vec_pretty(record).expect("the record serialises");
    text.push(b'\n');
    crate::paths::write_atomic(&file, &text).map_err(ProvenanceError::io("write", &file))
}

/// Deletes the record of the install `id`, if any.
pub fn forget(home: &ZotHome, id: &Identity) -> Result<(), ProvenanceError> {
    let file = home.provenance_path(id);
    match fs::remove_file(&file) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            Err(ProvenanceError::io("delete", file)(e))
        }
        _ => Ok(()),
    }
}

/// The SHA-256 (or `symlink:<target>`) of every file below `dir`, by relative path.
pub fn hash_tree(dir: &Path) -> Result<BTreeMap<String, String>, ProvenanceError> {
    crate::util::tree::hash_tree(dir, crate::util::tree::Links::Record)
        .map_err(|e| ProvenanceError::io("read", e.path)(e.cause))
}

/// What every symlink among `files` (from [`hash_tree`] of `dir`) resolves to inside
/// `dir` (see [`Provenance::targets`]): `outside`, `loop` or `missing` when it no
/// longer leads to something inside.
pub fn link_targets(
    dir: &Path,
    files: &BTreeMap<String, String>,
) -> Result<BTreeMap<String, String>, ProvenanceError> {
    let root = cap_std::fs::Dir::open_ambient_dir(dir, cap_std::ambient_authority())
        .map_err(ProvenanceError::io("read", dir))?;
    let mut targets = BTreeMap::new();
    for rel in files
        .iter()
        .filter(|(_, h)| h.starts_with("symlink:"))
        .map(|(p, _)| p)
    {
        let target = match crate::util::tree::resolve(&root, Path::new(rel)) {
            Ok(real) if root.is_dir(&real) => "directory".to_string(),
            // Never opened: a FIFO or a device would be read forever.
            Ok(real) if !root.metadata(&real).is_ok_and(|m| m.is_file()) => {
                "not a regular file".to_string()
            }
            Ok(real) => {
                let bytes = root
                    .read(&real)
                    .map_err(ProvenanceError::io("read", dir.join(&real)))?;
                crate::component::entry::sha256_hex(&bytes)
            }
            Err(fault) => format!("{fault:?}").to_lowercase(),
        };
        targets.insert(rel.clone(), target);
    }
    Ok(targets)
}

/// One difference between an install and its record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "change", content = "path", rename_all = "snake_case")]
pub enum Change {
    Modified(String),
    Added(String),
    Removed(String),
}

/// How the files in `dir` differ from `record`, sorted by path.
pub fn verify(dir: &Path, record: &Provenance) -> Result<Vec<Change>, ProvenanceError> {
    let now = hash_tree(dir)?;
    let targets = link_targets(dir, &now)?;
    let mut changes = Vec::new();
    for (path, hash) in &record.files {
        let retargeted = record
            .targets
            .get(path)
            .is_some_and(|t| targets.get(path) != Some(t));
        match now.get(path) {
            None => changes.push(Change::Removed(path.clone())),
            Some(_) if path == MANIFEST_FILE && only_disabled(dir, hash) => {}
            Some(h) if h != hash || retargeted => changes.push(Change::Modified(path.clone())),
            Some(_) => {}
        }
    }
    changes.extend(
        now.keys()
            .filter(|p| !record.files.contains_key(*p))
            .map(|p| Change::Added(p.clone())),
    );
    changes.sort_by(|a, b| change_path(a).cmp(change_path(b)));
    Ok(changes)
}

/// Whether `dir`'s manifest is the one recorded (`hash`) but for `disable`'s switch,
/// which is zot's own and no change to the files.
fn only_disabled(dir: &Path, hash: &str) -> bool {
    let text = fs::read_to_string(dir.join(MANIFEST_FILE)).unwrap_or_default();
    crate::manifest::before_disable(&text)
        .iter()
        .any(|before| crate::component::entry::sha256_hex(before.as_bytes()) == hash)
}

fn change_path(c: &Change) -> &str {
    match c {
        Change::Modified(p) | Change::Added(p) | Change::Removed(p) => p,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verify_finds_modified_added_and_removed_files() {
        let dir = zot_test_fixtures::fresh_dir("prov");
        fs::create_dir_all(dir.join("sub")).unwrap();
        fs::write(dir.join("a"), "a").unwrap();
        fs::write(dir.join("sub/b"), "b").unwrap();
        fs::write(dir.join("c"), "c").unwrap();
        let record = Provenance {
            name: "x".into(),
            kind: SourceKind::Dir,
            source: "/src".into(),
            git_ref: None,
            path: None,
            rename: None,
            commit: None,
            installed_at: "2026-01-01T00:00:00Z".into(),
            files: hash_tree(&dir).unwrap(),
            targets: BTreeMap::new(),
            build: None,
            signature: None,
        };
        assert_eq!(verify(&dir, &record).unwrap(), []);
        fs::write(dir.join("sub/b"), "changed").unwrap();
        fs::remove_file(dir.join("c")).unwrap();
        fs::write(dir.join("d"), "new").unwrap();
        assert_eq!(
            verify(&dir, &record).unwrap(),
            [
                Change::Removed("c".into()),
                Change::Added("d".into()),
                Change::Modified("sub/b".into())
            ]
        );
        fs::remove_dir_all(&dir).unwrap();
    }

    /// A damaged or hand-edited record is an error naming the file; paths it lists that
    /// are no files of the install are reported removed, never opened.
    #[test]
    fn an_odd_record_is_an_error_or_its_odd_paths_are_removed() {
        let root = std::env::temp_dir().join(format!("zot-prov-odd-{}", std::process::id()));
        let home = ZotHome::new(root.join("home"));
        let dir = home.extensions_dir().join("x");
        fs::create_dir_all(&dir).unwrap();
        let id = Identity::of(&dir, &home);
        let file = home.provenance_path(&id);
        fs::create_dir_all(file.parent().unwrap()).unwrap();
        for bytes in [&b""[..], b"\xff", b"[]", br#"{"name": "x", "kind": "ftp"}"#] {
            fs::write(&file, bytes).unwrap();
            let e = load(&home, &id).unwrap_err().to_string();
            assert!(e.contains("x.json is damaged"), "{e}");
        }
        fs::write(
            &file,
            r#"{"name": "x", "kind": "git", "source": "", "commit": "\u00e9",
                "installed_at": "", "files": {"../../etc/passwd": "", "": "", "/abs": ""}}"#,
        )
        .unwrap();
        let record = load(&home, &id).unwrap().unwrap();
        let removed = |p: &str| Change::Removed(p.into());
        assert_eq!(
            verify(&dir, &record).unwrap(),
            [removed(""), removed("../../etc/passwd"), removed("/abs")]
        );
        fs::remove_dir_all(&root).unwrap();
    }
}
