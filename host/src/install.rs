//! Managing installed extensions: install, remove, enable/disable, list.
//!
//! An install is staged in a fresh folder inside `$ZOT_HOME/extensions` (same
//! filesystem), checked (symlinks stay inside the tree, `extension.json` is valid), then
//! renamed to `$ZOT_HOME/extensions/<manifest name>`. Any failure removes the staging
//! folder, so nothing is left behind.

use crate::discovery::{discover, Found, SearchPath, Source};
use crate::manifest::{self, Manifest, MANIFEST_FILE};
use crate::paths::{project_extensions_dir, ZotHome};
use serde::Serialize;
use serde_json::Value;
use std::fmt;
use std::fs;
use std::path::{Component, Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};

/// Why an operation failed, worded for the user: it names the file or extension and,
/// where there is one, the next step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error(pub String);

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Error {}

fn fail<T>(message: impl Into<String>) -> Result<T, Error> {
    Err(Error(message.into()))
}

/// Where an install comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InstallSource {
    /// A local directory holding `extension.json`, copied recursively.
    Dir(PathBuf),
    /// A git URL, cloned with depth 1.
    Git(String),
}

impl InstallSource {
    /// Classifies a command-line argument. `https://`, `git@`, `ssh://` and `file://` are
    /// git URLs, as is anything ending in `.git` unless it is a directory holding
    /// `extension.json`; everything else is a directory.
    pub fn parse(arg: &str) -> InstallSource {
        const GIT_PREFIXES: [&str; 4] = ["https://", "git@", "ssh://", "file://"];
        let is_extension_dir = Path::new(arg).join(MANIFEST_FILE).is_file();
        if GIT_PREFIXES.iter().any(|p| arg.starts_with(p))
            || arg.ends_with(".git") && !is_extension_dir
        {
            InstallSource::Git(arg.to_string())
        } else {
            InstallSource::Dir(PathBuf::from(arg))
        }
    }
}

/// What [`install`] put where.
#[derive(Debug, Clone)]
pub struct Installed {
    pub manifest: Manifest,
    /// `$ZOT_HOME/extensions/<name>`.
    pub dir: PathBuf,
}

/// Installs `source` as `$ZOT_HOME/extensions/<manifest name>`. Refuses an existing
/// destination, a missing or invalid manifest and symlinks leading out of the tree;
/// leaves nothing behind when it fails.
pub fn install(home: &ZotHome, source: &InstallSource) -> Result<Installed, Error> {
    let root = home.extensions_dir();
    fs::create_dir_all(&root)
        .map_err(|e| Error(format!("cannot create {}: {e}", root.display())))?;
    let staging = Staging::create(&root)?;
    let tree = staging.0.join("tree");
    match source {
        InstallSource::Dir(dir) => copy_source(dir, &tree, &root)?,
        InstallSource::Git(url) => clone(url, &tree)?,
    }
    check_links(&tree)?;
    let manifest = read_manifest(&tree)?;
    let dir = root.join(&manifest.name);
    if dir.symlink_metadata().is_ok() {
        return fail(format!(
            "{} is already installed at {}; remove it first with `zot ext remove {}`",
            manifest.name,
            dir.display(),
            manifest.name
        ));
    }
    fs::rename(&tree, &dir).map_err(|e| {
        Error(format!(
            "cannot move the extension to {}: {e}",
            dir.display()
        ))
    })?;
    Ok(Installed { manifest, dir })
}

/// A staging folder `.tmp-install-<pid>-<n>`, removed with everything in it on drop.
struct Staging(PathBuf);

impl Staging {
    fn create(root: &Path) -> Result<Staging, Error> {
        static COUNTER: AtomicUsize = AtomicUsize::new(0);
        loop {
            let n = COUNTER.fetch_add(1, Ordering::Relaxed);
            let path = root.join(format!(".tmp-install-{}-{n}", std::process::id()));
            match fs::create_dir(&path) {
                Ok(()) => return Ok(Staging(path)),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => return fail(format!("cannot create {}: {e}", path.display())),
            }
        }
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

/// Copies the extension directory `dir` to `tree`, after checking it is one.
fn copy_source(dir: &Path, tree: &Path, extensions_root: &Path) -> Result<(), Error> {
    let hint = "give a directory holding extension.json or a git URL";
    let src = dir
        .canonicalize()
        .map_err(|e| Error(format!("{}: {e}; {hint}", dir.display())))?;
    if !src.is_dir() {
        return fail(format!("{} is not a directory; {hint}", dir.display()));
    }
    if !src.join(MANIFEST_FILE).is_file() {
        return fail(format!(
            "no {MANIFEST_FILE} in {}; an extension directory must hold one",
            dir.display()
        ));
    }
    if extensions_root
        .canonicalize()
        .is_ok_and(|root| root.starts_with(&src))
    {
        return fail(format!(
            "{} contains zot's extensions directory; install from a separate directory",
            dir.display()
        ));
    }
    copy_tree(&src, tree)
}

/// Copies `from` to `to` without following symlinks (they are copied as links and
/// checked afterwards) and without `.git`.
fn copy_tree(from: &Path, to: &Path) -> Result<(), Error> {
    let io = |path: &Path, e: std::io::Error| Error(format!("cannot copy {}: {e}", path.display()));
    fs::create_dir(to).map_err(|e| io(to, e))?;
    for entry in fs::read_dir(from).map_err(|e| io(from, e))? {
        let entry = entry.map_err(|e| io(from, e))?;
        if entry.file_name() == ".git" {
            continue;
        }
        let (src, dst) = (entry.path(), to.join(entry.file_name()));
        let kind = entry.file_type().map_err(|e| io(&src, e))?;
        if kind.is_symlink() {
            let target = fs::read_link(&src).map_err(|e| io(&src, e))?;
            symlink(&target, &dst).map_err(|e| io(&src, e))?;
        } else if kind.is_dir() {
            copy_tree(&src, &dst)?;
        } else if kind.is_file() {
            fs::copy(&src, &dst).map_err(|e| io(&src, e))?;
        } else {
            return fail(format!(
                "{} is not a file, directory or symlink; remove it from the extension",
                src.display()
            ));
        }
    }
    Ok(())
}

#[cfg(unix)]
fn symlink(target: &Path, link: &Path) -> std::io::Result<()> {
    std::os::unix::fs::symlink(target, link)
}

#[cfg(not(unix))]
fn symlink(_target: &Path, _link: &Path) -> std::io::Result<()> {
    Err(std::io::Error::other(
        "symlinks in extensions are supported on Unix only",
    ))
}

/// Shallow-clones `url` into `tree` (which must not exist) and drops its `.git`.
fn clone(url: &str, tree: &Path) -> Result<(), Error> {
    let out = Command::new("git")
        .args(["clone", "--depth", "1", "--quiet", "--", url])
        .arg(tree)
        .env("GIT_TERMINAL_PROMPT", "0")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .map_err(|e| {
            Error(format!(
                "cannot run git: {e}; install git or give a directory"
            ))
        })?;
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        let why: Vec<&str> = stderr
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .collect();
        return fail(format!(
            "git clone failed ({}): {}",
            out.status,
            why.join("; ")
        ));
    }
    let git = tree.join(".git");
    let removed = if git.is_dir() {
        fs::remove_dir_all(&git)
    } else {
        fs::remove_file(&git)
    };
    removed.map_err(|e| Error(format!("cannot remove {}: {e}", git.display())))
}

/// Refuses any symlink in `tree` that resolves outside it, or that is absolute.
fn check_links(tree: &Path) -> Result<(), Error> {
    let root = tree
        .canonicalize()
        .map_err(|e| Error(format!("cannot read {}: {e}", tree.display())))?;
    check_links_in(&root, &root)
}

fn check_links_in(root: &Path, dir: &Path) -> Result<(), Error> {
    let io = |e: std::io::Error| Error(format!("cannot read {}: {e}", dir.display()));
    for entry in fs::read_dir(dir).map_err(io)? {
        let entry = entry.map_err(io)?;
        let kind = entry.file_type().map_err(io)?;
        if kind.is_symlink() {
            check_link(root, &entry.path())?;
        } else if kind.is_dir() {
            check_links_in(root, &entry.path())?;
        }
    }
    Ok(())
}

/// A link must stay inside `root`: its full resolution if it resolves, else its lexical
/// one (a dangling link). Absolute links are refused too, as they would not follow a copy.
fn check_link(root: &Path, link: &Path) -> Result<(), Error> {
    let target = fs::read_link(link).unwrap_or_default();
    let shown = link.strip_prefix(root).unwrap_or(link);
    let refuse = |why: &str| {
        fail(format!(
            "symlink {} -> {} {why}; refusing to install it (replace the link with a copy of what it points to)",
            shown.display(),
            target.display()
        ))
    };
    let parent = link.parent().unwrap_or(root);
    let resolved = link
        .canonicalize()
        .ok()
        .or_else(|| normalize(&parent.join(&target)));
    if !resolved.is_some_and(|p| p.starts_with(root)) {
        return refuse("points outside the extension");
    }
    if target.is_absolute() {
        return refuse("is absolute");
    }
    Ok(())
}

/// Resolves `.` and `..` lexically; `None` if `..` climbs above the root.
fn normalize(path: &Path) -> Option<PathBuf> {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    return None;
                }
            }
            other => out.push(other),
        }
    }
    Some(out)
}

fn read_manifest(tree: &Path) -> Result<Manifest, Error> {
    if !tree.join(MANIFEST_FILE).is_file() {
        return fail(format!(
            "no {MANIFEST_FILE} at the top of the source; an extension must hold one"
        ));
    }
    Manifest::read(tree).map_err(|e| Error(format!("invalid {MANIFEST_FILE}: {}", e.message)))
}

/// Whether `name` is one plain path component, so it cannot address another folder.
fn is_plain_name(name: &str) -> bool {
    let mut parts = Path::new(name).components();
    matches!(parts.next(), Some(Component::Normal(_))) && parts.next().is_none()
}

fn plain_name(name: &str) -> Result<(), Error> {
    if is_plain_name(name) {
        Ok(())
    } else {
        fail(format!("{name:?} is not an extension name"))
    }
}

/// The global install called `name`: the directory in `$ZOT_HOME/extensions` whose
/// manifest has that name, else the directory of that name (a broken install).
pub fn find_installed(home: &ZotHome, name: &str) -> Result<PathBuf, Error> {
    plain_name(name)?;
    let root = home.extensions_dir();
    let by_manifest = fs::read_dir(&root).ok().and_then(|entries| {
        entries
            .filter_map(Result::ok)
            .map(|e| e.path())
            .find(|dir| Manifest::read(dir).is_ok_and(|m| m.name == name))
    });
    let by_dir = || Some(root.join(name)).filter(|d| d.symlink_metadata().is_ok());
    by_manifest.or_else(by_dir).ok_or_else(|| {
        Error(format!(
            "no extension named {name:?} in {}; `zot ext list` shows the installed ones",
            root.display()
        ))
    })
}

/// Deletes an installed extension's directory; a symlinked install loses only the link.
pub fn remove(dir: &Path) -> Result<(), Error> {
    let err = |e: std::io::Error| Error(format!("cannot delete {}: {e}", dir.display()));
    if dir.symlink_metadata().map_err(err)?.is_dir() {
        fs::remove_dir_all(dir).map_err(err)
    } else {
        fs::remove_file(dir).map_err(err)
    }
}

/// The extension called `name` that would be loaded from `cwd`: project-local first,
/// then global.
pub fn find(cwd: &Path, home: &ZotHome, name: &str) -> Result<Found, Error> {
    discover(&search_path(cwd, home))
        .found
        .into_iter()
        .find(|f| f.name() == name)
        .ok_or_else(|| {
            Error(format!(
                "no extension named {name:?} in {} or {}; `zot ext list` shows the installed ones",
                project_extensions_dir(cwd).display(),
                home.extensions_dir().display()
            ))
        })
}

/// Sets `enabled` in the manifest of the extension [`find`] returns, keeping its other
/// fields and their order; returns that extension.
pub fn set_enabled(cwd: &Path, home: &ZotHome, name: &str, enabled: bool) -> Result<Found, Error> {
    let found = find(cwd, home, name)?;
    manifest::set_enabled(&found.dir, enabled).map_err(|e| Error(e.to_string()))?;
    Ok(found)
}

/// `$ZOT_HOME/logs/ext-<name>.log`, once `name` is known not to address another folder.
pub fn log_path(home: &ZotHome, name: &str) -> Result<PathBuf, Error> {
    plain_name(name)?;
    Ok(home.log_path(name))
}

fn search_path(cwd: &Path, home: &ZotHome) -> SearchPath {
    SearchPath {
        explicit: Vec::new(),
        cwd: cwd.to_path_buf(),
        home: home.clone(),
        installed: true,
    }
}

/// An extension's state as `zot ext list` shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum State {
    Enabled,
    Disabled,
    /// The manifest cannot be used; see [`Listed::error`].
    Error,
}

/// One row of `zot ext list`. Its JSON form is the public `--json` contract
/// (docs/cli.md): change it only additively.
#[derive(Debug, Clone, Serialize)]
pub struct Listed {
    pub name: String,
    pub version: String,
    pub description: String,
    pub source: Source,
    pub dir: String,
    /// How the host talks to it: `stdio` for a manifest with `exec`, `wasm` for one with
    /// `wasm`.
    pub transport: &'static str,
    pub enabled: bool,
    pub state: State,
    /// Why the manifest cannot be used (only when `state` is `error`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Components only: what the manifest asks and what the user granted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<ListedSandbox>,
}

/// A component's kind and permissions in `zot ext list --json`.
#[derive(Debug, Clone, Serialize)]
pub struct ListedSandbox {
    /// `reactor` or `command`, read from the file's exports; `null` when it cannot be
    /// read or is not a component of a supported kind.
    pub component: Option<crate::transport::wasm::Kind>,
    pub asked: crate::manifest::Permissions,
    pub limits: crate::manifest::Limits,
    /// `null` when no grant is recorded (the data dir only).
    pub granted: Option<crate::sandbox::Grant>,
}

impl From<&Found> for Listed {
    fn from(found: &Found) -> Listed {
        let raw = raw_manifest(&found.dir);
        let text = |key: &str| raw.get(key).and_then(Value::as_str).unwrap_or_default();
        let enabled = raw.get("enabled").and_then(Value::as_bool).unwrap_or(true);
        let state = match (&found.manifest, enabled) {
            (Err(_), _) => State::Error,
            (Ok(_), true) => State::Enabled,
            (Ok(_), false) => State::Disabled,
        };
        Listed {
            name: found.name(),
            version: text("version").to_string(),
            description: text("description").to_string(),
            source: found.source,
            dir: found.dir.display().to_string(),
            transport: match &found.manifest {
                Ok(m) if m.wasm.is_none() => "stdio",
                Ok(_) => "wasm",
                Err(_) if raw.get("wasm").is_some_and(|w| !w.is_null()) => "wasm",
                Err(_) => "stdio",
            },
            enabled,
            state,
            error: found.manifest.as_ref().err().map(ToString::to_string),
            sandbox: None,
        }
    }
}

/// The manifest as a JSON object, best effort (empty when unreadable), so that a broken
/// manifest still shows its version, description and `enabled`.
fn raw_manifest(dir: &Path) -> serde_json::Map<String, Value> {
    fs::read(dir.join(MANIFEST_FILE))
        .ok()
        .and_then(|bytes| serde_json::from_slice(&bytes).ok())
        .unwrap_or_default()
}

/// What `zot ext list` shows.
#[derive(Debug, Clone)]
pub struct Listing {
    /// Project-local then global extensions, one per name, in load order.
    pub active: Vec<Listed>,
    /// Extensions hidden by an earlier one of the same name.
    pub shadowed: Vec<Listed>,
}

/// Lists the project-local (below `cwd`) and global extensions.
pub fn list(cwd: &Path, home: &ZotHome) -> Listing {
    let found = discover(&search_path(cwd, home));
    let row = |f: &Found| {
        let mut row = Listed::from(f);
        if let Some(m) = f.manifest.as_ref().ok().filter(|m| m.wasm.is_some()) {
            let component = match m.launch(&f.dir) {
                crate::manifest::Launch::Wasm(path) => fs::read(path)
                    .ok()
                    .and_then(|bytes| crate::transport::wasm::kind_of_bytes(&bytes).ok()),
                crate::manifest::Launch::Exec(_) => None,
            };
            row.sandbox = Some(ListedSandbox {
                component,
                asked: m.permissions.clone(),
                limits: m.limits.clone(),
                granted: crate::grants::load(home, &m.name).ok().flatten(),
            });
        }
        row
    };
    Listing {
        active: found.found.iter().map(row).collect(),
        shadowed: found.shadowed.iter().map(row).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp(tag: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("zot-install-{tag}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn classifies_sources() {
        for url in [
            "https://github.com/a/b",
            "git@github.com:a/b.git",
            "ssh://host/repo",
            "file:///tmp/repo",
            "../repo.git",
        ] {
            assert_eq!(InstallSource::parse(url), InstallSource::Git(url.into()));
        }
        assert_eq!(
            InstallSource::parse("./hello-py"),
            InstallSource::Dir("./hello-py".into())
        );
    }

    #[test]
    fn normalizes_lexically() {
        assert_eq!(
            normalize(Path::new("/a/b/../c/./d")),
            Some(PathBuf::from("/a/c/d"))
        );
        assert_eq!(normalize(Path::new("/a/../..")), None);
    }

    #[test]
    fn plain_names_only() {
        assert!(is_plain_name("hello-py"));
        for bad in ["", ".", "..", "../x", "a/b", "/abs"] {
            assert!(!is_plain_name(bad), "{bad}");
        }
    }

    #[test]
    fn links_must_stay_inside() {
        let root = temp("links");
        fs::create_dir(root.join("sub")).unwrap();
        fs::write(root.join("file"), "x").unwrap();
        symlink(Path::new("../file"), &root.join("sub/ok")).unwrap();
        symlink(Path::new("missing"), &root.join("dangling")).unwrap();
        assert_eq!(check_links(&root), Ok(()));
        symlink(Path::new("sub/.."), &root.join("self")).unwrap();
        symlink(Path::new("self/.."), &root.join("escape")).unwrap();
        let err = check_links(&root).unwrap_err();
        assert!(err.0.contains("escape -> self/.. points outside"), "{err}");
        fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn staging_is_removed_on_drop() {
        let root = temp("staging");
        let path = {
            let staging = Staging::create(&root).unwrap();
            fs::write(staging.0.join("f"), "x").unwrap();
            staging.0.clone()
        };
        assert!(!path.exists());
        fs::remove_dir_all(&root).unwrap();
    }
}
