//! The SHA-256 of every file below a folder, by relative path: what an install record
//! keeps (links by their text) and what project trust is bound to (links followed inside
//! the folder, so that what a link points to is what is trusted).
//!
//! Only regular files are read, each at most [`MAX_FILE_BYTES`], opened without blocking
//! and checked through the opened handle, so a FIFO, a device or a socket is an error
//! naming it, never a hang. Links are resolved from the folder itself, as a program
//! running there would, by the kernel beneath the folder's handle (`openat2` with
//! `RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS`, through cap-std): a link that leads out of
//! it (absolute, `..` above it, `/proc/self/…`) is an error naming the link.

use cap_std::fs::{Dir, OpenOptions, OpenOptionsExt};
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::fs;
use std::io::Read;
use std::os::unix::fs::MetadataExt;
use std::path::{Component, Path, PathBuf};

/// What to do with a symbolic link.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Links {
    /// Record it as `symlink:<its text>` (an install record; targets are checked apart).
    Record,
    /// Hash what it points to inside the folder: a file's content, or for a folder
    /// `folder:<its path>` (each folder is walked once, by its own path, so a loop ends);
    /// a link that leads out of the folder is an error.
    Follow,
}

/// At most this many files are hashed in one folder, so a huge or looping tree is an
/// error, not a hang.
pub const MAX_FILES: usize = 100_000;

/// At most this many bytes in one file that is hashed (1 GiB): a larger one is an error.
pub const MAX_FILE_BYTES: u64 = 1 << 30;

/// Why a folder could not be hashed: the path and the cause.
#[derive(Debug)]
pub struct TreeError {
    pub path: PathBuf,
    pub cause: std::io::Error,
}

impl TreeError {
    fn new(path: &Path, cause: std::io::Error) -> TreeError {
        TreeError {
            path: path.to_path_buf(),
            cause,
        }
    }

    fn refused(path: &Path, why: String) -> TreeError {
        TreeError::new(path, std::io::Error::other(why))
    }
}

impl fmt::Display for TreeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "cannot read {}: {}", self.path.display(), self.cause)
    }
}

impl std::error::Error for TreeError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.cause)
    }
}

/// The SHA-256 of every file below `dir` by relative path (`/`-separated), links as
/// `links` says.
pub fn hash_tree(dir: &Path, links: Links) -> Result<BTreeMap<String, String>, TreeError> {
    let root = Dir::open_ambient_dir(dir, cap_std::ambient_authority())
        .map_err(|e| TreeError::new(dir, e))?;
    let mut walk = Walk {
        root,
        top: dir.to_path_buf(),
        links,
        files: BTreeMap::new(),
        folders: HashMap::new(),
        links_found: Vec::new(),
    };
    walk.dir("")?;
    for (rel, path) in std::mem::take(&mut walk.links_found) {
        walk.follow(rel, &path)?;
    }
    Ok(walk.files)
}

/// Hex SHA-256 of the regular file at `path` (a link to one is followed), read in
/// pieces: a FIFO, a device, a socket or a file over [`MAX_FILE_BYTES`] is an error.
pub fn sha256_file(path: &Path) -> Result<String, TreeError> {
    let file = open_regular(path, MAX_FILE_BYTES)?;
    sha256_of(file, path, MAX_FILE_BYTES)
}

/// The bytes of the regular file at `path` (a link to one is followed), at most `max`
/// of them: a FIFO, a device, a socket or a larger file is an error, never a hang.
pub fn read_regular(path: &Path, max: u64) -> Result<Vec<u8>, TreeError> {
    let (file, len) = open_sized(path, max)?;
    // Room for what the handle said, and a byte to see if it grew: one allocation, not
    // a doubling (and its copies and fresh pages) per power of two.
    let mut bytes = Vec::with_capacity(len as usize + 1);
    file.take(max + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| TreeError::new(path, e))?;
    if bytes.len() as u64 > max {
        return Err(too_large(path, max));
    }
    Ok(bytes)
}

/// Opens `path` without blocking, and checks through the handle that it is a regular
/// file of at most `max` bytes.
pub(crate) fn open_regular(path: &Path, max: u64) -> Result<fs::File, TreeError> {
    open_sized(path, max).map(|(file, _)| file)
}

/// [`open_regular`], with the size its handle said.
fn open_sized(path: &Path, max: u64) -> Result<(fs::File, u64), TreeError> {
    use std::os::unix::fs::OpenOptionsExt;
    let file = fs::OpenOptions::new()
        .read(true)
        .custom_flags(NONBLOCK)
        .open(path)
        .map_err(|e| TreeError::new(path, e))?;
    checked(file, path, max)
}

/// `file`, and its size, if its handle says it is a regular file of at most `max` bytes.
fn checked(file: fs::File, path: &Path, max: u64) -> Result<(fs::File, u64), TreeError> {
    let meta = file.metadata().map_err(|e| TreeError::new(path, e))?;
    if !meta.file_type().is_file() {
        return Err(not_regular(path, meta.mode()));
    }
    if meta.len() > max {
        return Err(too_large(path, max));
    }
    Ok((file, meta.len()))
}

fn not_regular(path: &Path, mode: u32) -> TreeError {
    TreeError::refused(
        path,
        format!("it is {}, not a regular file", kind_name(mode)),
    )
}

fn too_large(path: &Path, max: u64) -> TreeError {
    TreeError::refused(path, format!("it is larger than {max} bytes"))
}

/// `a FIFO`, `a socket`, …: what a file of mode `mode` that is not a regular one is.
fn kind_name(mode: u32) -> &'static str {
    match mode & libc::S_IFMT {
        libc::S_IFDIR => "a directory",
        libc::S_IFLNK => "a symbolic link",
        libc::S_IFIFO => "a FIFO",
        libc::S_IFSOCK => "a socket",
        libc::S_IFCHR => "a character device",
        libc::S_IFBLK => "a block device",
        _ => "of an unknown kind",
    }
}

/// Hex SHA-256 of what `file` (opened from `path`) holds, read in pieces: more than
/// `max` bytes is an error.
pub(crate) fn sha256_of(file: impl Read, path: &Path, max: u64) -> Result<String, TreeError> {
    let mut hasher = Sha256::new();
    let mut buf = vec![0; 64 * 1024];
    let mut file = file.take(max + 1);
    let mut total = 0u64;
    loop {
        match file.read(&mut buf).map_err(|e| TreeError::new(path, e))? {
            0 => break,
            n => {
                total += n as u64;
                hasher.update(&buf[..n]);
            }
        }
    }
    if total > max {
        return Err(too_large(path, max));
    }
    Ok(hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect())
}

struct Walk {
    /// The folder's handle: every path is resolved beneath it.
    root: Dir,
    /// The folder's path, for messages.
    top: PathBuf,
    links: Links,
    files: BTreeMap<String, String>,
    /// Every folder walked (by its own path, never through a link), by device and
    /// inode: its path relative to the root.
    folders: HashMap<(u64, u64), String>,
    /// The links met ([`Links::Follow`]), resolved once every folder is walked.
    links_found: Vec<(String, PathBuf)>,
}

impl Walk {
    /// Walks the folder `rel` (relative to the root, `""` for the root itself; no link on
    /// the way).
    fn dir(&mut self, rel: &str) -> Result<(), TreeError> {
        let path = self.top.join(rel);
        let err = |e| TreeError::new(&path, e);
        let dir = if rel.is_empty() {
            self.root.try_clone().map_err(err)?
        } else {
            self.root.open_dir(rel).map_err(err)?
        };
        let meta = dir.dir_metadata().map_err(err)?;
        self.folders.insert(id(&meta), rel.to_string());
        self.entries(&dir, rel)
    }

    /// Hashes the entries of the folder `dir`, at `rel`.
    fn entries(&mut self, dir: &Dir, rel: &str) -> Result<(), TreeError> {
        let path = self.top.join(rel);
        let err = |e| TreeError::new(&path, e);
        let mut entries: Vec<_> = dir
            .entries()
            .map_err(err)?
            .collect::<Result<_, _>>()
            .map_err(err)?;
        entries.sort_by_key(|e| e.file_name());
        let prefix = if rel.is_empty() {
            String::new()
        } else {
            format!("{rel}/")
        };
        for entry in entries {
            let rel = format!("{prefix}{}", entry.file_name().to_string_lossy());
            let path = self.top.join(&rel);
            let kind = entry.file_type().map_err(|e| TreeError::new(&path, e))?;
            if kind.is_dir() {
                self.dir(&rel)?;
            } else if kind.is_file() {
                let hash = self.hash(&rel, false)?;
                self.add(rel, hash, &path)?;
            } else if kind.is_symlink() {
                self.link(rel, &path)?;
            } else {
                // Open nothing that is not a regular file: name what it is.
                let meta = entry.metadata().map_err(|e| TreeError::new(&path, e))?;
                return Err(not_regular(&path, cap_std::fs::MetadataExt::mode(&meta)));
            }
        }
        Ok(())
    }

    /// The link at `rel`: its text (recorded), or kept to be followed once every folder
    /// is walked.
    fn link(&mut self, rel: String, path: &Path) -> Result<(), TreeError> {
        if self.links == Links::Follow {
            self.links_found.push((rel, path.to_path_buf()));
            return Ok(());
        }
        let target = self
            .root
            .read_link_contents(&rel)
            .map_err(|e| TreeError::new(path, e))?;
        self.add(rel, format!("symlink:{}", target.display()), path)
    }

    /// What the link at `rel` leads to inside the folder: a file's SHA-256, a folder's
    /// path (`folder:<path>`, `.` for the root; it was walked by that path), or
    /// `missing:<its text>`. One leading out of the folder is an error.
    fn follow(&mut self, rel: String, path: &Path) -> Result<(), TreeError> {
        let target = self
            .root
            .read_link_contents(&rel)
            .map_err(|e| TreeError::new(path, e))?;
        let leaves = || {
            TreeError::refused(
                path,
                format!(
                    "it is a link to {}, which leads out of the extension's folder (links \
                     are followed only inside it)",
                    target.display()
                ),
            )
        };
        if target.is_absolute() {
            return Err(leaves());
        }
        match self.root.metadata(&rel) {
            Ok(meta) if meta.is_dir() => match self.folders.get(&id(&meta)) {
                Some(folder) if folder.is_empty() => self.add(rel, "folder:.".into(), path),
                Some(folder) => {
                    let folder = format!("folder:{folder}");
                    self.add(rel, folder, path)
                }
                // Beneath the root, yet not walked: it changed meanwhile.
                None => Err(TreeError::refused(
                    path,
                    "it leads to a folder that changed while it was read".into(),
                )),
            },
            Ok(meta) if meta.is_file() => {
                let hash = self.hash(&rel, true)?;
                self.add(rel, hash, path)
            }
            // Open nothing that is not a regular file: name what it is.
            Ok(meta) => Err(not_regular(path, cap_std::fs::MetadataExt::mode(&meta))),
            // A dangling link inside: what it says is what is bound.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                self.add(rel, format!("missing:{}", target.display()), path)
            }
            Err(e) if leads_out(&e) => Err(leaves()),
            Err(e) => Err(TreeError::new(path, e)),
        }
    }

    /// The SHA-256 of the regular file at `rel`, opened beneath the root (following a
    /// link there only when `follow`), without blocking, checked through its handle.
    fn hash(&self, rel: &str, follow: bool) -> Result<String, TreeError> {
        let path = self.top.join(rel);
        let flags = if follow {
            NONBLOCK
        } else {
            NONBLOCK | libc::O_NOFOLLOW
        };
        let file = self
            .root
            .open_with(rel, OpenOptions::new().read(true).custom_flags(flags))
            .map_err(|e| {
                if leads_out(&e) {
                    TreeError::refused(&path, "it leads out of the extension's folder".into())
                } else {
                    TreeError::new(&path, e)
                }
            })?;
        let (file, _) = checked(file.into_std(), &path, MAX_FILE_BYTES)?;
        sha256_of(file, &path, MAX_FILE_BYTES)
    }

    fn add(&mut self, rel: String, hash: String, path: &Path) -> Result<(), TreeError> {
        if self.files.len() >= MAX_FILES {
            return Err(TreeError::refused(
                path,
                format!("more than {MAX_FILES} files"),
            ));
        }
        self.files.insert(rel, hash);
        Ok(())
    }
}

/// A folder's device and inode.
fn id(meta: &cap_std::fs::Metadata) -> (u64, u64) {
    use cap_std::fs::MetadataExt;
    (meta.dev(), meta.ino())
}

/// Open flags that never wait (a FIFO) and never take a terminal.
const NONBLOCK: i32 = libc::O_NONBLOCK | libc::O_NOCTTY;

/// Whether resolving beneath the root failed because the path leads out of it (`EXDEV`
/// from `openat2`'s `RESOLVE_BENEATH`, or cap-std's own check), or through a magic link.
fn leads_out(e: &std::io::Error) -> bool {
    e.raw_os_error() == Some(libc::EXDEV)
        || (e.kind() == std::io::ErrorKind::PermissionDenied
            && e.raw_os_error().is_none()
            && e.to_string().contains("outside"))
}

/// How many symlinks one path may pass through before it counts as a loop (as Linux).
const MAX_LINKS: usize = 40;

/// Why a path cannot be proved to lead somewhere inside a tree.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LinkFault {
    /// It leads out of the tree (an absolute link, or `..` above its root).
    Outside,
    /// It passes through more than [`MAX_LINKS`] links: a loop.
    Loop,
    /// What it leads to does not exist.
    Missing,
}

/// Where `path` (relative to `root`) really is, following every symlink on the way as
/// the kernel would, but from `root` and never above it: a path relative to `root`
/// with no symlink in it. The text of a link says nothing until it is resolved against
/// the real location of what it names.
pub fn resolve(root: &Dir, path: &Path) -> Result<PathBuf, LinkFault> {
    let mut real = PathBuf::new();
    // Whether `real` is a folder: only a folder can be passed through, as the kernel
    // has it (`file/..`, `file/.` and `file/` are ENOTDIR, not where they seem to lead).
    let mut in_folder = true;
    let mut todo = Vec::new();
    push_parts(&mut todo, path)?;
    let mut hops = 0;
    while let Some(part) = todo.pop() {
        if !in_folder {
            return Err(LinkFault::Missing);
        }
        if part == "." {
            continue;
        }
        if part == ".." {
            if !real.pop() {
                return Err(LinkFault::Outside);
            }
            continue;
        }
        let next = real.join(&part);
        let meta = root
            .symlink_metadata(&next)
            .map_err(|_| LinkFault::Missing)?;
        if meta.is_symlink() {
            hops += 1;
            if hops > MAX_LINKS {
                return Err(LinkFault::Loop);
            }
            let target = root
                .read_link_contents(&next)
                .map_err(|_| LinkFault::Missing)?;
            push_parts(&mut todo, &target)?;
        } else {
            in_folder = meta.is_dir();
            real = next;
        }
    }
    Ok(real)
}

/// Pushes the parts of the relative `path` onto `todo`, last first (so the first is
/// popped first); `..` stays `..`, a `.` inside is dropped, and a path that ends with
/// `/` or `/.` ends with a `.` (what it names must be a folder). An absolute path leads
/// outside.
fn push_parts(todo: &mut Vec<std::ffi::OsString>, path: &Path) -> Result<(), LinkFault> {
    let text = path.to_string_lossy();
    let mut parts = Vec::new();
    for part in path.components() {
        match part {
            Component::Normal(name) => parts.push(name.to_os_string()),
            Component::ParentDir => parts.push("..".into()),
            Component::CurDir => {}
            Component::RootDir | Component::Prefix(_) => return Err(LinkFault::Outside),
        }
    }
    if text.ends_with('/') || text.ends_with("/.") {
        parts.push(".".into());
    }
    todo.extend(parts.into_iter().rev());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    /// A fresh folder `ext` in a fresh temporary folder: (root, ext).
    fn folder(name: &str) -> (PathBuf, PathBuf) {
        let root = zot_test_fixtures::fresh_dir(&format!("tree-{name}"));
        let dir = root.join("ext");
        fs::create_dir_all(dir.join("sub")).unwrap();
        fs::write(dir.join("sub/a.txt"), "a").unwrap();
        fs::write(root.join("outside.txt"), "outside").unwrap();
        (root, dir)
    }

    /// The error hashing `dir` (links followed) gives, as text.
    fn refused(dir: &Path, links: Links) -> String {
        match hash_tree(dir, links) {
            Ok(files) => panic!("hashed: {files:?}"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn links_recorded_or_followed_inside_and_loops_end() {
        let (root, dir) = folder("links");
        symlink("sub/a.txt", dir.join("link")).unwrap();
        symlink("..", dir.join("sub/up")).unwrap();
        symlink("nowhere", dir.join("dangling")).unwrap();
        symlink("sub", dir.join("alias")).unwrap();

        let recorded = hash_tree(&dir, Links::Record).unwrap();
        assert_eq!(recorded["link"], "symlink:sub/a.txt");
        assert_eq!(recorded["sub/up"], "symlink:..");

        let followed = hash_tree(&dir, Links::Follow).unwrap();
        assert_eq!(followed["link"], crate::component::entry::sha256_hex(b"a"));
        assert_eq!(
            followed["sub/a.txt"],
            crate::component::entry::sha256_hex(b"a")
        );
        assert_eq!(followed["alias"], "folder:sub");
        assert_eq!(followed["sub/up"], "folder:.");
        assert_eq!(followed["dangling"], "missing:nowhere");
        assert!(
            !followed
                .keys()
                .any(|k| k.starts_with("alias/") || k.contains("up/")),
            "a folder is walked once, by its own path: {followed:?}"
        );
        fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn links_leading_out_of_the_folder_are_refused_naming_the_link() {
        for (name, target) in [
            ("dev-zero", "/dev/zero"),
            ("stdin", "/proc/self/fd/0"),
            ("cwd", "/proc/self/cwd/../lib/x.py"),
            ("absolute", "/etc/passwd"),
            ("up", "../outside.txt"),
            ("up-dangling", "../nothing-there"),
        ] {
            let (root, dir) = folder(name);
            symlink(target, dir.join("lib.py")).unwrap();
            let e = refused(&dir, Links::Follow);
            assert!(
                e.contains("lib.py") && e.contains(target) && e.contains("leads out"),
                "{target}: {e}"
            );
            fs::remove_dir_all(&root).unwrap();
        }
        // Through a link inside that itself stays inside, then up.
        let (root, dir) = folder("hop");
        symlink("..", dir.join("sub/top")).unwrap();
        symlink("sub/top/../outside.txt", dir.join("hop")).unwrap();
        let e = refused(&dir, Links::Follow);
        assert!(e.contains("hop") && e.contains("leads out"), "{e}");
        fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn only_regular_files_are_read() {
        // A FIFO, also when a link leads to it: refused, not opened for a blocking read.
        for via_link in [false, true] {
            let (root, dir) = folder(&format!("fifo-{via_link}"));
            mkfifo(&dir.join("sub/pipe"));
            if via_link {
                symlink("sub/pipe", dir.join("a-link")).unwrap();
            }
            for links in [Links::Follow, Links::Record] {
                let e = refused(&dir, links);
                assert!(e.contains("a FIFO") && e.contains("sub/pipe"), "{e}");
            }
            fs::remove_dir_all(&root).unwrap();
        }
        let (root, dir) = folder("socket");
        let _listener = std::os::unix::net::UnixListener::bind(dir.join("sock")).unwrap();
        let e = refused(&dir, Links::Follow);
        assert!(e.contains("a socket") && e.contains("sock"), "{e}");
        fs::remove_dir_all(&root).unwrap();
    }

    /// Links that would double the walk at each of many levels: each folder is walked
    /// once, a link to it names it (not a walk of 2^30 folders).
    #[test]
    fn links_to_folders_name_them_and_multiply_nothing() {
        let (root, dir) = folder("multiply");
        for level in 0..30 {
            fs::create_dir_all(dir.join(format!("d{level}"))).unwrap();
            for link in ["x", "y"] {
                let next = format!("../d{}", level + 1);
                symlink(&next, dir.join(format!("d{level}/{link}"))).unwrap();
            }
        }
        fs::create_dir_all(dir.join("d30")).unwrap();
        let followed = hash_tree(&dir, Links::Follow).unwrap();
        assert_eq!(followed["d0/x"], "folder:d1");
        assert_eq!(followed["d29/y"], "folder:d30");
        assert_eq!(followed.len(), 61, "{followed:?}");
        fs::remove_dir_all(&root).unwrap();
    }

    fn mkfifo(path: &Path) {
        let c = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
        // SAFETY: mkfifo reads the NUL-terminated path it is given.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    }

    /// A file named by path (a manifest's, a component): a link to a regular file is
    /// followed; a FIFO, a device or a file over the cap is refused.
    #[test]
    fn a_named_file_must_be_a_regular_one() {
        let (root, dir) = folder("named");
        mkfifo(&dir.join("pipe"));
        let e = sha256_file(&dir.join("pipe")).unwrap_err().to_string();
        assert!(e.contains("a FIFO"), "{e}");
        let e = read_regular(Path::new("/dev/zero"), 10).unwrap_err();
        assert!(e.to_string().contains("a character device"), "{e}");
        symlink("sub/a.txt", dir.join("link")).unwrap();
        assert_eq!(
            sha256_file(&dir.join("link")).unwrap(),
            crate::component::entry::sha256_hex(b"a")
        );
        fs::write(dir.join("eleven"), [0u8; 11]).unwrap();
        let e = read_regular(&dir.join("eleven"), 10).unwrap_err();
        assert!(e.to_string().contains("larger than 10 bytes"), "{e}");
        assert_eq!(read_regular(&dir.join("eleven"), 11).unwrap(), [0u8; 11]);
        fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn a_file_over_the_cap_is_refused_unread() {
        let (root, dir) = folder("big");
        let big = fs::File::create(dir.join("sub/big.bin")).unwrap();
        big.set_len(MAX_FILE_BYTES + 1).unwrap();
        let e = refused(&dir, Links::Follow);
        assert!(e.contains("big.bin") && e.contains("larger than"), "{e}");
        fs::remove_dir_all(&root).unwrap();
    }
}
