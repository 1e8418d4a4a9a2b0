//! Getting an extension's files into a staging tree.
//!
//! A directory is copied through `cap-std` handles: every read is relative to the
//! source's root and every write relative to the staging tree, so nothing outside the
//! source is read (a symlink is never followed, only recreated) and nothing outside the
//! tree is written. A symlink is kept only if what it names, resolved against the real
//! location of every folder and link on the way ([`resolve`]), is inside the copy;
//! anything else is refused with a message naming it. Files lose their setuid, setgid
//! and sticky bits. `.git` is not copied.

use super::InstallError;
use crate::util::tree::{resolve, LinkFault};
use cap_std::ambient_authority;
use cap_std::fs::Dir;
use std::path::{Component, Path, PathBuf};
use std::process::{Command, Stdio};

/// Reports slow steps (clone, first compile) to the user; the CLI draws it on a
/// terminal and stays quiet when piped.
pub trait Progress {
    /// A slow step starts: `what` in a few words ("cloning `<url>`").
    fn begin(&self, what: &str);
    /// The step begun last is over.
    fn end(&self);
    /// The step begun last wrote `line` (a build's output: outside text).
    fn output(&self, line: &str);
}

/// No progress reports.
pub struct Quiet;

impl Progress for Quiet {
    fn begin(&self, _: &str) {}
    fn end(&self) {}
    fn output(&self, _: &str) {}
}

/// Copies the directory `from` to `dst` (which must not exist), then checks that every
/// symlink it recreated resolves inside the copy (see [`resolve`]).
pub(crate) fn copy_dir(from: &Dir, dst: &Path) -> Result<(), InstallError> {
    let io = |path: &Path, e| InstallError::io("copy", path)(e);
    std::fs::create_dir(dst).map_err(|e| io(dst, e))?;
    let to = Dir::open_ambient_dir(dst, ambient_authority()).map_err(|e| io(dst, e))?;
    let mut links = Vec::new();
    let skip = Skip::of(from);
    copy_into(from, &to, Path::new(""), &mut links, &skip)?;
    for (link, target) in links {
        resolve(&to, &link).map_err(|fault| link_error(fault, link, target))?;
    }
    Ok(())
}

/// Copies the contents of `from` into `to`; `rel` is where `from` is in the extension.
/// Symlinks are recreated as they are and added to `links` (with their targets), to be
/// checked once the whole tree is there. Files keep their permissions but never their
/// setuid, setgid or sticky bits; directories are made fresh, without them.
fn copy_into(
    from: &Dir,
    to: &Dir,
    rel: &Path,
    links: &mut Vec<(PathBuf, PathBuf)>,
    skip: &Skip,
) -> Result<(), InstallError> {
    let io = |path: &Path, e| {
        let shown = if path.as_os_str().is_empty() {
            Path::new(".")
        } else {
            path
        };
        InstallError::io("copy", shown)(e)
    };
    for entry in from.entries().map_err(|e| io(rel, e))? {
        let entry = entry.map_err(|e| io(rel, e))?;
        let name = entry.file_name();
        let here = rel.join(&name);
        if name == ".git" || skip.skips(&here) {
            continue;
        }
        let kind = entry.file_type().map_err(|e| io(&here, e))?;
        if kind.is_symlink() {
            let target = from.read_link_contents(&name).map_err(|e| io(&here, e))?;
            if target.is_absolute() {
                return Err(link_error(LinkFault::Outside, here, target));
            }
            symlink(to, &target, &name).map_err(|e| io(&here, e))?;
            links.push((here, target));
        } else if kind.is_dir() {
            to.create_dir(&name).map_err(|e| io(&here, e))?;
            // Made fresh, but a setgid parent would pass its bit on.
            let made = to.symlink_metadata(&name).map_err(|e| io(&here, e))?;
            to.set_permissions(&name, plain_permissions(made.permissions()))
                .map_err(|e| io(&here, e))?;
            let sub_from = from.open_dir(&name).map_err(|e| io(&here, e))?;
            let sub_to = to.open_dir(&name).map_err(|e| io(&here, e))?;
            copy_into(&sub_from, &sub_to, &here, links, skip)?;
        } else if kind.is_file() {
            let mut reader = from.open(&name).map_err(|e| io(&here, e))?;
            let mut writer = to.create(&name).map_err(|e| io(&here, e))?;
            std::io::copy(&mut reader, &mut writer).map_err(|e| io(&here, e))?;
            let permissions = reader.metadata().map_err(|e| io(&here, e))?.permissions();
            writer
                .set_permissions(plain_permissions(permissions))
                .map_err(|e| io(&here, e))?;
        } else {
            return Err(InstallError::SpecialFile(here));
        }
    }
    Ok(())
}

/// What is not copied besides `.git`: the build folder `target/` of a Cargo crate (a
/// `Cargo.toml` at the top), and `node_modules/` of a component's folder (a manifest
/// running `wasm`: a component sees nothing of its folder, its build tools are no use to
/// it), except the files the manifest names there (the built program or component), so
/// an install does not carry a whole build.
struct Skip {
    /// The build folders left out, each with the paths in it to keep.
    builds: Vec<(&'static str, Vec<PathBuf>)>,
}

impl Skip {
    fn of(from: &Dir) -> Skip {
        let (named, component) = named_files(from);
        let mut builds = Vec::new();
        if from.is_file("Cargo.toml") && from.is_dir("target") {
            builds.push(("target", named.clone()));
        }
        if component && from.is_dir("node_modules") {
            builds.push(("node_modules", named));
        }
        Skip { builds }
    }

    /// Whether `rel` (a path in the source) is left out.
    fn skips(&self, rel: &Path) -> bool {
        self.builds.iter().any(|(folder, keep)| {
            rel.starts_with(folder) && !keep.iter().any(|k| k.starts_with(rel))
        })
    }
}

/// The relative paths the manifest in `from` names (`exec`, `wasm`, `args`), without
/// `./`, and whether it runs a component (`wasm`); none and false when it cannot be read.
fn named_files(from: &Dir) -> (Vec<PathBuf>, bool) {
    use std::io::Read;
    let mut text = Vec::new();
    let read = from.open(super::MANIFEST_FILE).and_then(|f| {
        if !f.metadata()?.is_file() {
            return Err(std::io::Error::other("not a regular file"));
        }
        f.take(crate::manifest::MAX_MANIFEST_BYTES)
            .read_to_end(&mut text)
    });
    let Ok(manifest) = read
        .map_err(drop)
        .and_then(|_| serde_json::from_slice::<serde_json::Value>(&text).map_err(drop))
    else {
        return (Vec::new(), false);
    };
    let args = manifest["args"].as_array().cloned().unwrap_or_default();
    let named = [&manifest["exec"], &manifest["wasm"]]
        .into_iter()
        .chain(args.iter())
        .filter_map(serde_json::Value::as_str)
        .map(|p| PathBuf::from(p.strip_prefix("./").unwrap_or(p)))
        .filter(|p| p.is_relative())
        .collect();
    (named, manifest["wasm"].is_string())
}

/// `permissions` without the setuid, setgid and sticky bits.
#[cfg(unix)]
fn plain_permissions(permissions: cap_std::fs::Permissions) -> cap_std::fs::Permissions {
    use cap_std::fs::PermissionsExt;
    cap_std::fs::Permissions::from_mode(permissions.mode() & 0o777)
}

#[cfg(not(unix))]
fn plain_permissions(permissions: cap_std::fs::Permissions) -> cap_std::fs::Permissions {
    permissions
}

#[cfg(unix)]
fn symlink(dir: &Dir, target: &Path, name: &std::ffi::OsStr) -> std::io::Result<()> {
    dir.symlink(target, name)
}

#[cfg(not(unix))]
fn symlink(_dir: &Dir, _target: &Path, _name: &std::ffi::OsStr) -> std::io::Result<()> {
    Err(std::io::Error::other(
        "symlinks in extensions are supported on Unix only",
    ))
}

/// The install error for the symlink `link` with the text `target`, which leads nowhere
/// inside the tree (`fault`).
fn link_error(fault: LinkFault, link: PathBuf, target: PathBuf) -> InstallError {
    match fault {
        LinkFault::Outside => InstallError::UnsafeSymlink {
            absolute: target.is_absolute(),
            link,
            target,
        },
        fault => InstallError::UnprovableSymlink {
            link,
            target,
            looped: fault == LinkFault::Loop,
        },
    }
}

/// Opens the extension's folder in the source folder `src`: `sub` (the `--path` given
/// as `path`) resolved through `src`'s handle, so it cannot lead out of it, or `src`
/// itself. Returns the handle and where it really is in `src`. It must hold a manifest.
pub(super) fn open_sub(
    src: &Path,
    sub: Option<&Path>,
    path: Option<&str>,
) -> Result<(Dir, PathBuf), InstallError> {
    let root = Dir::open_ambient_dir(src, ambient_authority())
        .map_err(|e| InstallError::io("open", src)(e))?;
    let at = path.map(str::to_string);
    let real = match sub {
        None => PathBuf::new(),
        Some(sub) => match resolve(&root, sub) {
            Ok(real) => real,
            Err(LinkFault::Missing) => return Err(InstallError::NoSubdir(at)),
            Err(_) => {
                return Err(InstallError::SubPathOutside(
                    path.unwrap_or_default().into(),
                ))
            }
        },
    };
    let dir = if real.as_os_str().is_empty() {
        root
    } else {
        root.open_dir(&real)
            .map_err(|_| InstallError::NoSubdir(at.clone()))?
    };
    if !dir.is_file(super::MANIFEST_FILE) {
        return Err(match (&at, manifests_below(&dir)) {
            (None, found) if !found.is_empty() => InstallError::ManifestsBelow(found),
            (None | Some(_), _) => InstallError::NoManifest(at),
        });
    }
    Ok((dir, real))
}

/// Folders of `dir`, one to three levels down (not hidden, and not `node_modules` or
/// `target`), that hold a manifest: at most ten, sorted. Three: the published zot
/// repository keeps its extensions at `examples/extensions/<name>`.
fn manifests_below(dir: &Dir) -> Vec<String> {
    let mut found = Vec::new();
    below(dir, "", 3, &mut found);
    found.sort();
    found
}

/// At most this many folders holding a manifest are suggested.
const MOST_BELOW: usize = 10;

/// Adds to `found` the folders of `dir` (at `at` in the source), `depth` levels down,
/// that hold a manifest, stopping once it has ten.
fn below(dir: &Dir, at: &str, depth: usize, found: &mut Vec<String>) {
    let Ok(entries) = dir.entries() else {
        return;
    };
    let mut names: Vec<String> = entries
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|n| !n.starts_with('.') && n != "node_modules" && n != "target")
        .collect();
    names.sort();
    for name in names {
        if depth == 0 || found.len() >= MOST_BELOW {
            return;
        }
        let Ok(sub) = dir.open_dir(&name) else {
            continue;
        };
        let here = match at {
            "" => name,
            at => format!("{at}/{name}"),
        };
        if sub.is_file(super::MANIFEST_FILE) {
            found.push(here.clone());
        }
        below(&sub, &here, depth - 1, found);
    }
}

/// `--path`: a relative path inside the source, without `..`.
pub(super) fn sub_path(path: &str) -> Result<PathBuf, InstallError> {
    let p = Path::new(path);
    let plain = p
        .components()
        .all(|c| matches!(c, Component::Normal(_) | Component::CurDir));
    if path.is_empty() || !plain {
        return Err(InstallError::BadSubPath(path.to_string()));
    }
    Ok(p.to_path_buf())
}

/// Clones `url` into `into` at `git_ref` (a branch, tag or commit; the default branch
/// when `None`), shallowly when git allows; returns the commit checked out.
pub(super) fn clone(
    url: &str,
    git_ref: Option<&str>,
    into: &Path,
    progress: &dyn Progress,
) -> Result<String, InstallError> {
    progress.begin(&format!("cloning {url}"));
    let result = clone_at(url, git_ref, into);
    progress.end();
    result?;
    let head = git(Some(into), &["rev-parse", "HEAD"])?;
    Ok(head.trim().to_string())
}

fn clone_at(url: &str, git_ref: Option<&str>, into: &Path) -> Result<(), InstallError> {
    let mut shallow = vec!["clone", "--depth", "1", "--quiet"];
    if let Some(r) = git_ref {
        shallow.extend(["--branch", r]);
    }
    let into_str = into.to_str().ok_or(InstallError::StagingNotUtf8)?;
    shallow.extend(["--", url, into_str]);
    let first = match git(None, &shallow) {
        Ok(_) => return Ok(()),
        Err(e) => e,
    };
    // `--branch` takes branches and tags only; a commit needs the history.
    let Some(commit) = git_ref.filter(|r| looks_like_commit(r)) else {
        return Err(first);
    };
    let _ = std::fs::remove_dir_all(into);
    git(
        None,
        &["clone", "--quiet", "--no-checkout", "--", url, into_str],
    )?;
    git(Some(into), &["checkout", "--quiet", "--detach", commit]).map_err(|e| {
        InstallError::NoCommit {
            commit: commit.to_string(),
            url: url.to_string(),
            cause: Box::new(e),
        }
    })?;
    Ok(())
}

fn looks_like_commit(r: &str) -> bool {
    (4..=64).contains(&r.len()) && r.bytes().all(|b| b.is_ascii_hexdigit())
}

/// Runs git (in `dir`), never prompting; its stdout, or an error quoting its stderr.
fn git(dir: Option<&Path>, args: &[&str]) -> Result<String, InstallError> {
    let mut cmd = Command::new("git");
    if let Some(dir) = dir {
        cmd.arg("-C").arg(dir);
    }
    let out = cmd
        .args(args)
        .env("GIT_TERMINAL_PROMPT", "0")
        .stdin(Stdio::null())
        .output()
        .map_err(InstallError::NoGit)?;
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        let why: Vec<&str> = stderr
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .collect();
        return Err(InstallError::Git {
            command: args[0].to_string(),
            stderr: why.join("; "),
        });
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A tree `<tmp>/outer/tree` holding `a.txt`, `a/b/` and `sub/`, with `outer/a.txt`
    /// beside it (so a link out of the tree would find something).
    fn tree(tag: &str) -> (PathBuf, Dir) {
        let outer = zot_test_fixtures::fresh_dir(&format!("fetch-{tag}"));
        let root = outer.join("tree");
        std::fs::create_dir_all(root.join("a/b")).unwrap();
        std::fs::create_dir_all(root.join("sub")).unwrap();
        std::fs::write(root.join("a.txt"), "a").unwrap();
        std::fs::write(outer.join("a.txt"), "outside").unwrap();
        let dir = Dir::open_ambient_dir(&root, ambient_authority()).unwrap();
        (outer, dir)
    }

    #[test]
    fn resolves_dot_and_dot_dot_against_real_folders() {
        let (outer, dir) = tree("dots");
        std::fs::create_dir_all(outer.join("tree/a/c")).unwrap();
        assert_eq!(
            resolve(&dir, Path::new("a/./b/../c")),
            Ok(PathBuf::from("a/c"))
        );
        assert_eq!(resolve(&dir, Path::new("a/../..")), Err(LinkFault::Outside));
        std::fs::remove_dir_all(outer).unwrap();
    }

    #[cfg(unix)]
    #[test]
    fn links_must_stay_inside() {
        let (outer, dir) = tree("links");
        let root = outer.join("tree");
        let link = |target: &str, at: &str| std::os::unix::fs::symlink(target, root.join(at));
        let inside = |at: &str, target: &str| {
            let l = Path::new(at).join("l");
            link(target, l.to_str().unwrap()).unwrap();
            let resolved = resolve(&dir, &l);
            dir.remove_file(&l).unwrap();
            resolved
        };
        assert_eq!(inside("", "a.txt"), Ok(PathBuf::from("a.txt")));
        assert_eq!(inside("sub", "../a.txt"), Ok(PathBuf::from("a.txt")));
        assert_eq!(inside("", "../a.txt"), Err(LinkFault::Outside));
        assert_eq!(inside("sub", "../../a.txt"), Err(LinkFault::Outside));
        assert_eq!(inside("", "/etc/passwd"), Err(LinkFault::Outside));
        assert_eq!(inside("", "nothing"), Err(LinkFault::Missing));

        // The text stays inside; what it names does not.
        link("../../..", "sub/top").unwrap();
        assert_eq!(
            inside("", "sub/top/../../../etc/passwd"),
            Err(LinkFault::Outside)
        );
        link("sub/top", "hop").unwrap();
        assert_eq!(inside("", "hop"), Err(LinkFault::Outside));
        link("../a", "sub/to-a").unwrap();
        assert_eq!(inside("", "sub/to-a/b"), Ok(PathBuf::from("a/b")));
        link("loop2", "loop1").unwrap();
        link("loop1", "loop2").unwrap();
        assert_eq!(inside("", "loop1"), Err(LinkFault::Loop));
        // Only a folder is passed through, as the kernel has it (found by the
        // install_tree fuzz target: `a.txt/..` was kept, and leads nowhere).
        for through_a_file in ["a.txt/..", "a.txt/.", "a.txt/", "a.txt/x", "sub/../a.txt/"] {
            assert_eq!(
                inside("", through_a_file),
                Err(LinkFault::Missing),
                "{through_a_file}"
            );
        }
        assert_eq!(inside("", "sub/."), Ok(PathBuf::from("sub")));
        assert_eq!(inside("", "sub/"), Ok(PathBuf::from("sub")));
        std::fs::remove_dir_all(outer).unwrap();
    }

    #[test]
    fn sub_paths_stay_inside() {
        assert!(sub_path("examples/guard").is_ok());
        for bad in ["", "../x", "/abs", "a/../../b"] {
            assert!(sub_path(bad).is_err(), "{bad}");
        }
    }
}
