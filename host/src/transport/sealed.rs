//! Trust, then exec, without a window: a native program (ELF) whose start is bound to
//! its files' hashes (project trust, a confinement's fingerprint) is copied into a
//! sealed memory file (`memfd`: no write, no resize, no new seal), hashed as it is
//! copied, checked against the hash its start was bound to, and run from that copy. A
//! writer racing the start can change the file on disk, not what runs. A script is run
//! by its path: its interpreter opens it by name after the exec (docs/security.md).

use crate::records::trust::Fingerprint;
use sha2::{Digest, Sha256};
use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::{Path, PathBuf};

/// The most bytes of a program copied (as [`crate::util::tree`] hashes at most).
const MAX_PROGRAM_BYTES: u64 = 1 << 30;

/// A program's bytes in a sealed memory file.
#[derive(Debug)]
pub struct Sealed {
    file: OwnedFd,
    /// Hex SHA-256 of its bytes.
    sha256: String,
    /// The path they were copied from.
    path: PathBuf,
}

/// What [`seal`] made of a program.
#[derive(Debug)]
pub enum Sealing {
    Sealed(Sealed),
    /// Not a native program (a `#!` script, say): run by its path.
    NotNative,
    /// This kernel does not run programs from memory files (`vm.memfd_noexec`, or no
    /// `memfd_create`): run by its path, for this reason.
    Unavailable(String),
}

impl Sealed {
    /// The path an exec runs it by: the child's inherited copy of the descriptor (the
    /// kernel opens it before closing the descriptors marked close-on-exec). Landlock
    /// lets a confined extension execute it: a memory file is on an internal mount,
    /// which no path reaches.
    pub fn exec_path(&self) -> PathBuf {
        PathBuf::from(format!("/proc/self/fd/{}", self.file.as_raw_fd()))
    }

    /// Whether these are the bytes `files` holds for the program (the key
    /// [`crate::records::trust::fingerprint`] gives it: its real path inside `dir`, or
    /// `outside:<real path>`); the reason when not. The file at that path may have
    /// changed since it was copied: what runs is what was copied, and that is checked.
    pub fn check(&self, files: &Fingerprint, dir: &Path) -> Result<(), String> {
        let inside = crate::paths::real(dir);
        let real = crate::paths::real(&self.path);
        let key = match real.strip_prefix(&inside) {
            Ok(rel) => rel
                .components()
                .map(|c| c.as_os_str().to_string_lossy())
                .collect::<Vec<_>>()
                .join("/"),
            Err(_) => format!("outside:{}", real.display()),
        };
        match files.get(&key) {
            Some(sha) if *sha == self.sha256 => Ok(()),
            Some(_) => Err(format!(
                "its program {} changed since its files were checked",
                self.path.display()
            )),
            None => Err(format!(
                "its program {} was not among the files checked",
                self.path.display()
            )),
        }
    }
}

/// Copies the program at `path` (a link to it followed, as an exec would) into a sealed
/// memory file if it is a native program. A file that is not a regular one, is larger
/// than 1 GiB or cannot be read is an error.
pub fn seal(path: &Path) -> std::io::Result<Sealing> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut program = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)?;
    let meta = program.metadata()?;
    if !meta.file_type().is_file() {
        return Err(std::io::Error::other("it is not a regular file"));
    }
    let mut magic = [0u8; 4];
    let mut got = 0;
    while got < magic.len() {
        match program.read(&mut magic[got..])? {
            0 => break,
            n => got += n,
        }
    }
    if magic != *b"\x7fELF" {
        return Ok(Sealing::NotNative);
    }
    let mut copy = match memory_file(path) {
        Ok(file) => file,
        Err(why) => return Ok(Sealing::Unavailable(why)),
    };
    let mut hasher = Sha256::new();
    hasher.update(magic);
    copy.write_all(&magic)?;
    let mut buf = vec![0; 64 * 1024];
    let mut rest = program.take(MAX_PROGRAM_BYTES + 1 - magic.len() as u64);
    let mut total = magic.len() as u64;
    loop {
        match rest.read(&mut buf)? {
            0 => break,
            n => {
                hasher.update(&buf[..n]);
                copy.write_all(&buf[..n])?;
                total += n as u64;
            }
        }
    }
    if total > MAX_PROGRAM_BYTES {
        return Err(std::io::Error::other("it is over 1 GiB"));
    }
    let seals = libc::F_SEAL_SEAL | libc::F_SEAL_SHRINK | libc::F_SEAL_GROW | libc::F_SEAL_WRITE;
    // SAFETY: F_ADD_SEALS on a descriptor this function owns.
    if unsafe { libc::fcntl(copy.as_raw_fd(), libc::F_ADD_SEALS, seals) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(Sealing::Sealed(Sealed {
        file: copy.into(),
        sha256: hasher
            .finalize()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect(),
        path: path.to_path_buf(),
    }))
}

/// A memory file that may be sealed and executed, named after `path`'s file name (what
/// `/proc/<pid>/exe` shows); why not, when this kernel makes none.
fn memory_file(path: &Path) -> Result<File, String> {
    let name: String = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
        .chars()
        .filter(|c| *c != '\0')
        .take(64)
        .collect();
    let name = std::ffi::CString::new(format!("zot:{name}")).unwrap_or_default();
    let base = libc::MFD_CLOEXEC | libc::MFD_ALLOW_SEALING;
    let create = |flags| {
        // SAFETY: `name` is a NUL-terminated string that outlives the call.
        let fd = unsafe { libc::memfd_create(name.as_ptr(), flags) };
        match fd {
            // SAFETY: a new descriptor, owned by nothing else.
            0.. => Ok(unsafe { File::from_raw_fd(fd) }),
            _ => Err(std::io::Error::last_os_error()),
        }
    };
    // `MFD_EXEC` (Linux 6.3) keeps it executable where `vm.memfd_noexec` is 1; an older
    // kernel does not know the flag, and every memory file is executable there.
    match create(base | libc::MFD_EXEC) {
        Ok(file) => Ok(file),
        Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {
            create(base).map_err(|e| format!("no memory file: {e}"))
        }
        Err(e) => Err(format!("no executable memory file (vm.memfd_noexec?): {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(tag: &str) -> PathBuf {
        let dir = zot_test_fixtures::fresh_dir(&format!("sealed-{tag}"));
        dir
    }

    fn sealed(path: &Path) -> Sealed {
        match seal(path).unwrap() {
            Sealing::Sealed(s) => s,
            other => panic!("not sealed: {other:?}"),
        }
    }

    #[test]
    fn what_runs_is_the_copy_checked_whatever_the_file_becomes() {
        let dir = scratch("runs");
        let program = dir.join("prog");
        std::fs::copy("/bin/echo", &program).unwrap();
        let copy = sealed(&program);
        let files = crate::records::trust::fingerprint(&dir, None).unwrap();
        copy.check(&files, &dir).unwrap();
        // The file on disk becomes another program; the copy is what was checked.
        std::fs::copy("/bin/true", &program).unwrap();
        let out = std::process::Command::new(copy.exec_path())
            .arg("still echo")
            .output()
            .unwrap();
        assert_eq!(String::from_utf8_lossy(&out.stdout), "still echo\n");
        // A copy made after the change is not what was checked.
        let why = sealed(&program).check(&files, &dir).unwrap_err();
        assert!(why.contains("changed since"), "{why}");
        // The copy cannot be written, grown or shrunk.
        let mut writer = std::fs::OpenOptions::new()
            .write(true)
            .open(copy.exec_path())
            .unwrap();
        assert!(writer.write_all(b"x").is_err(), "a sealed copy was written");
        assert!(writer.set_len(1).is_err(), "a sealed copy was shrunk");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_script_is_not_sealed_and_a_fifo_is_an_error() {
        let dir = scratch("script");
        let script = dir.join("run.sh");
        std::fs::write(&script, "#!/bin/sh\necho hi\n").unwrap();
        assert!(matches!(seal(&script).unwrap(), Sealing::NotNative));
        let fifo = dir.join("fifo");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        assert!(seal(&fifo).is_err(), "a FIFO was read");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_program_outside_the_folder_is_checked_by_its_real_path() {
        let dir = scratch("outside");
        let copy = sealed(Path::new("/bin/true"));
        let why = copy.check(&Fingerprint::new(), &dir).unwrap_err();
        assert!(why.contains("not among the files checked"), "{why}");
        let real = std::fs::canonicalize("/bin/true").unwrap();
        let files = Fingerprint::from([(
            format!("outside:{}", real.display()),
            crate::util::tree::sha256_file(&real).unwrap(),
        )]);
        copy.check(&files, &dir).unwrap();
        let _ = std::fs::remove_dir_all(&dir);
    }
}
