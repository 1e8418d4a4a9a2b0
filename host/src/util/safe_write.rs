//! Writing a file atomically without following links.
//!
//! A folder is opened as a [`SafeDir`]: its anchor (a folder the user chose or zot's
//! own) is opened as any path is, every component below it with
//! `O_NOFOLLOW|O_DIRECTORY`, so a link planted there is refused, naming it. The anchor of
//! a path inside a project's `.zot/extensions` is the project (the folder holding
//! `.zot`): a repository cannot redirect `.zot`, `.zot/extensions` or an extension's
//! folder. Any other path is its own anchor (`$ZOT_HOME` and its folders are the
//! user's); [`SafeDir::create_sub`] opens a folder below one without following a link. A
//! file is written to a temporary name created exclusively without following links
//! (`O_CREAT|O_EXCL|O_NOFOLLOW`) in that handle, then renamed into place within it.

use cap_std::fs::Dir;
use std::ffi::{CString, OsStr, OsString};
use std::io::{self, Write};
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

/// A folder opened without following a link below its anchor.
pub struct SafeDir {
    dir: Dir,
    path: PathBuf,
}

impl SafeDir {
    /// Opens the existing folder `path`; a link at or below its anchor is refused.
    pub fn open(path: &Path) -> io::Result<SafeDir> {
        Self::walk(path, false)
    }

    /// Opens the folder `path`, creating what is missing of it; a link at or below its
    /// anchor is refused (the anchor itself is created as any folder is).
    pub fn create(path: &Path) -> io::Result<SafeDir> {
        Self::walk(path, true)
    }

    /// Opens the folder `below` (plain names) inside `anchor`: the anchor is opened as
    /// any path is, every name below it without following a link, created where missing
    /// when `create`. A data dir is opened so: its anchor is `$ZOT_HOME/data`, the
    /// user's; what an extension could swap for a link is below it.
    pub fn beneath(anchor: &Path, below: &Path, create: bool) -> io::Result<SafeDir> {
        let names = plain_names(below.components(), below)?;
        Self::from_anchor(anchor.to_path_buf(), &names, create)
    }

    fn walk(path: &Path, create: bool) -> io::Result<SafeDir> {
        let (anchor, below) = anchor(path)?;
        Self::from_anchor(anchor, &below, create)
    }

    fn from_anchor(anchor: PathBuf, below: &[OsString], create: bool) -> io::Result<SafeDir> {
        if create {
            std::fs::create_dir_all(&anchor)?;
        }
        let file = std::fs::File::open(&anchor)?;
        let mut here = SafeDir {
            dir: Dir::from_std_file(file),
            path: anchor,
        };
        for name in below {
            here = here.sub(name, create)?;
        }
        Ok(here)
    }

    /// The folder `name` in this one, created when `create` and missing; refused when it
    /// is a link.
    fn sub(&self, name: &OsStr, create: bool) -> io::Result<SafeDir> {
        let path = self.path.join(name);
        let c = c_name(name)?;
        if create {
            // SAFETY: a valid directory fd and a NUL-terminated name.
            let rc = unsafe { libc::mkdirat(self.fd(), c.as_ptr(), 0o777) };
            let e = io::Error::last_os_error();
            if rc != 0 && e.kind() != io::ErrorKind::AlreadyExists {
                return Err(e);
            }
        }
        let flags = libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC;
        // SAFETY: as above; the fd returned is owned below.
        let fd = unsafe { libc::openat(self.fd(), c.as_ptr(), flags) };
        if fd < 0 {
            let e = io::Error::last_os_error();
            return Err(self.refuse_link(name).unwrap_or(e));
        }
        // SAFETY: `fd` was just opened and is owned by nobody else.
        let file = std::fs::File::from(unsafe { OwnedFd::from_raw_fd(fd) });
        Ok(SafeDir {
            dir: Dir::from_std_file(file),
            path,
        })
    }

    /// The folder `name` in this one, created if missing; refused when it is a link.
    pub fn create_sub(&self, name: &str) -> io::Result<SafeDir> {
        self.sub(OsStr::new(name), true)
    }

    /// The handle, for operations within the folder (rename, remove, list).
    pub fn dir(&self) -> &Dir {
        &self.dir
    }

    /// The handle, kept.
    pub fn into_dir(self) -> Dir {
        self.dir
    }

    /// The path it was opened as.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Replaces the file `name` in this folder with `bytes`: written to `.<name>.<pid>.tmp`
    /// created exclusively without following links, then renamed over `name` (a link
    /// there is replaced, never written through). A link at the temporary name is refused,
    /// naming it.
    pub fn write(&self, name: &str, bytes: &[u8]) -> io::Result<()> {
        self.replace(name, 0o666, |file| file.write_all(bytes))
    }

    /// Replaces the file `name` in this folder with a copy of the file `from`, with its
    /// permission bits (an executable stays one), as [`SafeDir::write`] does.
    pub fn copy_from(&self, name: &str, from: &Path) -> io::Result<()> {
        use std::os::unix::fs::PermissionsExt;
        let mut source = std::fs::File::open(from)?;
        let mode = source.metadata()?.permissions().mode() & 0o777;
        self.replace(name, mode, |file| io::copy(&mut source, file).map(drop))
    }

    /// Creates `.<name>.<pid>.tmp` with `mode` (less the umask), has `fill` write it, and
    /// renames it over `name`.
    fn replace(
        &self,
        name: &str,
        mode: u32,
        fill: impl FnOnce(&mut std::fs::File) -> io::Result<()>,
    ) -> io::Result<()> {
        if !is_plain(Path::new(name)) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{name:?} is not a file name"),
            ));
        }
        let tmp = OsString::from(format!(".{name}.{}.tmp", std::process::id()));
        let c_tmp = c_name(&tmp)?;
        let mut file = match self.create_new(&c_tmp, mode) {
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                if let Some(link) = self.refuse_link(&tmp) {
                    return Err(link);
                }
                // Left by a killed process that had our id: ours to replace.
                self.dir.remove_file(&tmp)?;
                self.create_new(&c_tmp, mode)?
            }
            other => other?,
        };
        let written = fill(&mut file).and_then(|()| {
            self.dir
                .rename(&tmp, &self.dir, name)
                .map_err(|e| io::Error::new(e.kind(), format!("cannot rename into place: {e}")))
        });
        if written.is_err() {
            let _ = self.dir.remove_file(&tmp);
        }
        written
    }

    fn create_new(&self, name: &CString, mode: u32) -> io::Result<std::fs::File> {
        let flags =
            libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW | libc::O_CLOEXEC;
        // SAFETY: a valid directory fd and a NUL-terminated name; the fd is owned below.
        let fd = unsafe { libc::openat(self.fd(), name.as_ptr(), flags, mode as libc::c_uint) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `fd` was just opened and is owned by nobody else.
        Ok(std::fs::File::from(unsafe { OwnedFd::from_raw_fd(fd) }))
    }

    /// The error for `name` in this folder when it is a link.
    fn refuse_link(&self, name: &OsStr) -> Option<io::Error> {
        let meta = self.dir.symlink_metadata(name).ok()?;
        meta.file_type().is_symlink().then(|| {
            io::Error::other(format!(
                "{} is a link: zot does not write through links; remove it",
                self.path.join(name).display()
            ))
        })
    }

    fn fd(&self) -> i32 {
        self.dir.as_fd().as_raw_fd()
    }
}

/// Replaces the file at `path` with `bytes` atomically without following links (see the
/// module's doc), creating its folder.
pub fn write_file(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let (Some(dir), Some(name)) = (path.parent(), path.file_name().and_then(OsStr::to_str)) else {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{} is not a file path", path.display()),
        ));
    };
    SafeDir::create(dir)?.write(name, bytes)
}

/// `path` split into the folder opened as any path is and the names below it opened
/// without following links: below the project for a path in its `.zot/extensions`, else
/// none.
fn anchor(path: &Path) -> io::Result<(PathBuf, Vec<OsString>)> {
    let parts: Vec<Component> = path.components().collect();
    let project = parts
        .windows(2)
        .rposition(|w| w[0].as_os_str() == ".zot" && w[1].as_os_str() == "extensions");
    let split = match project {
        Some(i) => i,
        None => parts.len(),
    };
    let below = plain_names(parts[split..].iter().copied(), path)?;
    let anchor: PathBuf = parts[..split].iter().collect();
    let anchor = if anchor.as_os_str().is_empty() {
        PathBuf::from(".")
    } else {
        anchor
    };
    Ok((anchor, below))
}

/// The names of `parts` (of `whole`), each a plain name: no `..`, no root.
fn plain_names<'a>(
    parts: impl Iterator<Item = Component<'a>>,
    whole: &Path,
) -> io::Result<Vec<OsString>> {
    parts
        .map(|c| match c {
            Component::Normal(name) => Ok(name.to_os_string()),
            _ => Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{} is not a plain folder path", whole.display()),
            )),
        })
        .collect()
}

fn is_plain(path: &Path) -> bool {
    let mut parts = path.components();
    matches!(parts.next(), Some(Component::Normal(_))) && parts.next().is_none()
}

fn c_name(name: &OsStr) -> io::Result<CString> {
    CString::new(name.as_bytes()).map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{name:?} holds a NUL byte"),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    fn temp(tag: &str) -> PathBuf {
        let dir = zot_test_fixtures::fresh_dir(&format!("safe-{tag}"));
        dir
    }

    #[test]
    fn anchors_a_project_path_at_the_project() {
        let (a, below) = anchor(Path::new("/p/.zot/extensions/x")).unwrap();
        assert_eq!(a, Path::new("/p"));
        assert_eq!(below, [".zot", "extensions", "x"]);
        let (a, below) = anchor(Path::new("/home/zot/grants")).unwrap();
        assert_eq!(a, Path::new("/home/zot/grants"));
        assert!(below.is_empty());
        assert!(anchor(Path::new("/p/.zot/extensions/..")).is_err());
    }

    #[test]
    fn writes_replace_and_never_follow_a_link() {
        let root = temp("write");
        let victim = root.join("victim");
        std::fs::write(&victim, "precious").unwrap();
        let ext = root.join("p/.zot/extensions/x");
        let dir = SafeDir::create(&ext).unwrap();
        dir.write("a.json", b"one").unwrap();
        dir.write("a.json", b"two").unwrap();
        assert_eq!(std::fs::read(ext.join("a.json")).unwrap(), b"two");

        // A link at the name is replaced, not written through.
        symlink(&victim, ext.join("b.json")).unwrap();
        dir.write("b.json", b"mine").unwrap();
        assert!(!ext.join("b.json").symlink_metadata().unwrap().is_symlink());

        // A link at the temporary name is refused, naming it.
        let tmp = ext.join(format!(".c.json.{}.tmp", std::process::id()));
        symlink(&victim, &tmp).unwrap();
        let e = dir.write("c.json", b"x").unwrap_err().to_string();
        assert!(
            e.contains(&tmp.display().to_string()) && e.contains("link"),
            "{e}"
        );
        assert_eq!(std::fs::read(&victim).unwrap(), b"precious");
        assert!(!ext.join("c.json").exists());
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn a_link_below_the_anchor_is_refused() {
        let root = temp("links");
        let elsewhere = root.join("elsewhere");
        std::fs::create_dir_all(&elsewhere).unwrap();
        std::fs::create_dir_all(root.join("p")).unwrap();
        symlink(&elsewhere, root.join("p/.zot")).unwrap();
        let e = SafeDir::create(&root.join("p/.zot/extensions"))
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("p/.zot is a link"), "{e}");
        assert!(SafeDir::open(&root.join("p/.zot/extensions/x")).is_err());
        assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), 0);
        symlink(&elsewhere, root.join("fresh")).unwrap();
        let e = SafeDir::open(&root)
            .unwrap()
            .create_sub("fresh")
            .err()
            .unwrap();
        assert!(e.to_string().contains("fresh is a link"), "{e}");
        assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), 0);
        std::fs::remove_dir_all(&root).unwrap();
    }
}
