//! The SHA-256 of every file below a folder, by relative path: what an install record
//! keeps (links by their text) and what project trust is bound to (links followed, so
//! that what a link points to is what is trusted).

use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, HashSet};
use std::fmt;
use std::fs;
use std::io::Read;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// What to do with a symbolic link.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Links {
    /// Record it as `symlink:<its text>` (an install record; targets are checked apart).
    Record,
    /// Hash what it points to, wherever that is; a folder is walked (once: a loop ends).
    Follow,
}

/// At most this many files are hashed in one folder, so a huge or looping tree is an
/// error, not a hang.
pub const MAX_FILES: usize = 100_000;

/// Why a folder could not be hashed: the path and the cause.
#[derive(Debug)]
pub struct TreeError {
    pub path: PathBuf,
    pub cause: std::io::Error,
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
    let mut walk = Walk {
        links,
        files: BTreeMap::new(),
        seen: HashSet::new(),
    };
    walk.dir(dir, "")?;
    Ok(walk.files)
}

/// Hex SHA-256 of the file at `path`, read in pieces.
pub fn sha256_file(path: &Path) -> Result<String, TreeError> {
    let err = |cause| TreeError {
        path: path.to_path_buf(),
        cause,
    };
    let mut file = fs::File::open(path).map_err(err)?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0; 64 * 1024];
    loop {
        match file.read(&mut buf).map_err(err)? {
            0 => break,
            n => hasher.update(&buf[..n]),
        }
    }
    Ok(hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect())
}

struct Walk {
    links: Links,
    files: BTreeMap<String, String>,
    /// Folders walked, by device and inode (a followed link to one seen is skipped).
    seen: HashSet<(u64, u64)>,
}

impl Walk {
    fn dir(&mut self, dir: &Path, prefix: &str) -> Result<(), TreeError> {
        let err = |path: &Path| {
            let path = path.to_path_buf();
            move |cause| TreeError { path, cause }
        };
        let meta = fs::metadata(dir).map_err(err(dir))?;
        if !self.seen.insert((meta.dev(), meta.ino())) {
            return Ok(());
        }
        let mut entries: Vec<_> = fs::read_dir(dir)
            .map_err(err(dir))?
            .collect::<Result<_, _>>()
            .map_err(err(dir))?;
        entries.sort_by_key(|e| e.file_name());
        for entry in entries {
            let rel = format!("{prefix}{}", entry.file_name().to_string_lossy());
            let path = entry.path();
            let mut kind = entry.file_type().map_err(err(&path))?;
            if kind.is_symlink() {
                if self.links == Links::Record {
                    let target = fs::read_link(&path).map_err(err(&path))?;
                    self.add(rel, format!("symlink:{}", target.display()), &path)?;
                    continue;
                }
                kind = match fs::metadata(&path) {
                    Ok(meta) => meta.file_type(),
                    // A dangling link: what it says is what is bound.
                    Err(_) => {
                        let target = fs::read_link(&path).map_err(err(&path))?;
                        self.add(rel, format!("missing:{}", target.display()), &path)?;
                        continue;
                    }
                };
            }
            if kind.is_dir() {
                self.dir(&path, &format!("{rel}/"))?;
            } else {
                let hash = sha256_file(&path)?;
                self.add(rel, hash, &path)?;
            }
        }
        Ok(())
    }

    fn add(&mut self, rel: String, hash: String, path: &Path) -> Result<(), TreeError> {
        if self.files.len() >= MAX_FILES {
            return Err(TreeError {
                path: path.to_path_buf(),
                cause: std::io::Error::other(format!("more than {MAX_FILES} files")),
            });
        }
        self.files.insert(rel, hash);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_recorded_or_followed_and_loops_end() {
        let root = std::env::temp_dir().join(format!("zot-tree-{}", std::process::id()));
        let _ = fs::remove_dir_all(&root);
        let dir = root.join("ext");
        fs::create_dir_all(dir.join("sub")).unwrap();
        fs::write(dir.join("sub/a.txt"), "a").unwrap();
        fs::write(root.join("outside.txt"), "outside").unwrap();
        std::os::unix::fs::symlink("../outside.txt", dir.join("link")).unwrap();
        std::os::unix::fs::symlink("..", dir.join("sub/up")).unwrap();
        std::os::unix::fs::symlink("nowhere", dir.join("dangling")).unwrap();

        let recorded = hash_tree(&dir, Links::Record).unwrap();
        assert_eq!(recorded["link"], "symlink:../outside.txt");
        assert_eq!(recorded["sub/up"], "symlink:..");

        let followed = hash_tree(&dir, Links::Follow).unwrap();
        assert_eq!(
            followed["link"],
            sha256_file(&root.join("outside.txt")).unwrap()
        );
        assert_eq!(followed["sub/a.txt"], crate::cache::sha256_hex(b"a"));
        assert_eq!(followed["dangling"], "missing:nowhere");
        assert!(
            !followed.keys().any(|k| k.starts_with("sub/up/")),
            "a loop is walked once: {followed:?}"
        );
        fs::remove_dir_all(&root).unwrap();
    }
}
