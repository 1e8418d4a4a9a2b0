//! Getting an extension's files into a staging tree.
//!
//! A directory is copied through `cap-std` handles: every read is relative to the
//! source's root and every write relative to the staging tree, so nothing outside the
//! source is read (a symlink is never followed, only recreated) and nothing outside the
//! tree is written. A symlink is kept only if it is relative and stays inside the
//! extension; anything else is refused with a message naming it. `.git` is not copied.

use super::InstallError;
use cap_std::ambient_authority;
use cap_std::fs::Dir;
use std::path::{Component, Path, PathBuf};
use std::process::{Command, Stdio};

/// Reports slow steps (clone, first compile) to the user; the CLI draws it on a
/// terminal and stays quiet when piped.
pub trait Progress {
    /// A slow step starts: `what` in a few words ("cloning <url>").
    fn begin(&self, what: &str);
    /// The step begun last is over.
    fn end(&self);
}

/// No progress reports.
pub struct Quiet;

impl Progress for Quiet {
    fn begin(&self, _: &str) {}
    fn end(&self) {}
}

/// Copies the directory `src` to `dst` (which must not exist).
pub(super) fn copy_dir(src: &Path, dst: &Path) -> Result<(), InstallError> {
    let io = |path: &Path, e| InstallError::io("copy", path)(e);
    let from = Dir::open_ambient_dir(src, ambient_authority()).map_err(|e| io(src, e))?;
    std::fs::create_dir(dst).map_err(|e| io(dst, e))?;
    let to = Dir::open_ambient_dir(dst, ambient_authority()).map_err(|e| io(dst, e))?;
    copy_into(&from, &to, Path::new(""))
}

/// Copies the contents of `from` into `to`; `rel` is where `from` is in the extension.
fn copy_into(from: &Dir, to: &Dir, rel: &Path) -> Result<(), InstallError> {
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
        if name == ".git" {
            continue;
        }
        let here = rel.join(&name);
        let kind = entry.file_type().map_err(|e| io(&here, e))?;
        if kind.is_symlink() {
            let target = from.read_link_contents(&name).map_err(|e| io(&here, e))?;
            check_link(rel, &here, &target)?;
            symlink(to, &target, &name).map_err(|e| io(&here, e))?;
        } else if kind.is_dir() {
            to.create_dir(&name).map_err(|e| io(&here, e))?;
            let sub_from = from.open_dir(&name).map_err(|e| io(&here, e))?;
            let sub_to = to.open_dir(&name).map_err(|e| io(&here, e))?;
            copy_into(&sub_from, &sub_to, &here)?;
        } else if kind.is_file() {
            let mut reader = from.open(&name).map_err(|e| io(&here, e))?;
            let mut writer = to.create(&name).map_err(|e| io(&here, e))?;
            std::io::copy(&mut reader, &mut writer).map_err(|e| io(&here, e))?;
            let permissions = reader.metadata().map_err(|e| io(&here, e))?.permissions();
            writer
                .set_permissions(permissions)
                .map_err(|e| io(&here, e))?;
        } else {
            return Err(InstallError::SpecialFile(here));
        }
    }
    Ok(())
}

/// A link at `link` (in directory `dir` of the extension) to `target` must be relative
/// and stay inside the extension.
fn check_link(dir: &Path, link: &Path, target: &Path) -> Result<(), InstallError> {
    let absolute = target.is_absolute();
    if absolute || normalize(&dir.join(target)).is_none() {
        return Err(InstallError::UnsafeSymlink {
            link: link.to_path_buf(),
            target: target.to_path_buf(),
            absolute,
        });
    }
    Ok(())
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

/// Resolves `.` and `..` lexically; `None` if `..` climbs above the start.
pub(super) fn normalize(path: &Path) -> Option<PathBuf> {
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

    #[test]
    fn normalizes_lexically() {
        assert_eq!(
            normalize(Path::new("a/./b/../c")),
            Some(PathBuf::from("a/c"))
        );
        assert_eq!(normalize(Path::new("a/../..")), None);
    }

    #[test]
    fn links_must_stay_inside() {
        let inside = |dir: &str, target: &str| {
            check_link(Path::new(dir), Path::new("l"), Path::new(target)).is_ok()
        };
        assert!(inside("", "a.txt"));
        assert!(inside("sub", "../a.txt"));
        assert!(!inside("", "../a.txt"));
        assert!(!inside("sub", "../../a.txt"));
        assert!(!inside("", "/etc/passwd"));
    }

    #[test]
    fn sub_paths_stay_inside() {
        assert!(sub_path("examples/guard").is_ok());
        for bad in ["", "../x", "/abs", "a/../../b"] {
            assert!(sub_path(bad).is_err(), "{bad}");
        }
    }
}
