//! One cache entry of a compiled component: the artifact alone in `<key>.cwasm`, so
//! wasmtime maps it instead of copying it in, and beside it `<key>.cwasm.sum`: the
//! SHA-256 of the artifact, then the SHA-256 of the component it was compiled from. Each
//! is written to a temporary file and renamed into place (the artifact first); an entry
//! is used only if its sum names the component asked for and holds for the artifact, as
//! read through the very handle the artifact is then mapped from. Both the cache
//! ([`super::cache`]) and the compiler child ([`super::compile`]) write and read entries
//! through here, so neither needs the other's module.

use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use wasmtime::Engine;

use super::Code;
use crate::util::tree::{self, MAX_FILE_BYTES};

/// Hex SHA-256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Where the sum of the entry `entry` is kept.
fn sum_path(entry: &Path) -> PathBuf {
    let mut name = entry.as_os_str().to_owned();
    name.push(".sum");
    PathBuf::from(name)
}

/// The component in the cache entry `entry`, which must have been compiled from the
/// component whose hex SHA-256 is `sha256`: `Err(None)` when there is none, else why it
/// cannot be used.
pub(crate) fn read_entry(
    engine: &Engine,
    entry: &Path,
    sha256: &str,
) -> Result<Code, Option<String>> {
    let absent = |e: tree::TreeError| match e.cause.kind() {
        std::io::ErrorKind::NotFound => None,
        _ => Some(e.to_string()),
    };
    let sum_file = sum_path(entry);
    let sum = tree::read_regular(&sum_file, 64).map_err(absent)?;
    let (artifact_sum, source) = match sum.len() {
        64 => sum.split_at(32),
        _ => return Err(Some(format!("{} is not a cache sum", sum_file.display()))),
    };
    if hex(source) != sha256 {
        return Err(Some(format!(
            "{} was compiled from another component (SHA-256 {}), not this one",
            entry.display(),
            hex(source)
        )));
    }
    let file = tree::open_regular(entry, MAX_FILE_BYTES).map_err(absent)?;
    let held = tree::sha256_of(&file, entry, MAX_FILE_BYTES).map_err(|e| Some(e.to_string()))?;
    if held != hex(artifact_sum) {
        return Err(Some(format!("{} fails its checksum", entry.display())));
    }
    // Mapped through the handle that was hashed where /proc/self/fd names it: that very
    // file, whatever was renamed over its path since.
    #[cfg(target_os = "linux")]
    let mapped = {
        use std::os::fd::AsRawFd;
        let link = PathBuf::from(format!("/proc/self/fd/{}", file.as_raw_fd()));
        if link.exists() {
            link
        } else {
            entry.to_path_buf()
        }
    };
    #[cfg(not(target_os = "linux"))]
    let mapped = entry.to_path_buf();
    // SAFETY: the artifact is one this host (or its compiler child) serialised from the
    // component with this SHA-256, its checksum matches what was written beside it, and
    // the entry's name carries the engine's compatibility hash; wasmtime checks the
    // header and target again. The file is the host's own, in its cache, replaced only
    // by renaming a new one over it (never written in place).
    let code = unsafe { Code::deserialize_file(engine, &mapped) }
        .map_err(|e| Some(format!("{} is not usable: {e}", entry.display())));
    drop(file);
    code
}

/// Writes the cache entry `entry` for `artifact`, compiled from the component whose hex
/// SHA-256 is `sha256`: the artifact, then its sum, each atomically.
pub(crate) fn store(entry: &Path, sha256: &str, artifact: &[u8]) -> std::io::Result<()> {
    let source = unhex(sha256).ok_or_else(|| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("{sha256:?} is not a SHA-256"),
        )
    })?;
    let mut sum = Sha256::digest(artifact).to_vec();
    sum.extend_from_slice(&source);
    crate::util::safe_write::write_file(entry, artifact)?;
    crate::util::safe_write::write_file(&sum_path(entry), &sum)
}

/// The 32 bytes written as 64 hex digits in `text`.
fn unhex(text: &str) -> Option<[u8; 32]> {
    let mut out = [0u8; 32];
    if text.len() != 64 {
        return None;
    }
    for (i, byte) in out.iter_mut().enumerate() {
        *byte = u8::from_str_radix(text.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An entry is used only as written: its sum naming this component and holding for
    /// the artifact; a missing entry or sum is no entry (compiled again), anything else
    /// says why it is not used.
    #[test]
    fn an_entry_is_used_only_if_its_sum_holds() {
        let engine = super::super::compile_engine().unwrap();
        let dir = std::env::temp_dir().join(format!("zot-cache-{}", std::process::id()));
        let entry = dir.join("entry.cwasm");
        // An empty component: its header alone.
        let empty = b"\0asm\x0d\0\x01\0";
        let component = wasmtime::component::Component::new(&engine, empty).unwrap();
        let artifact = component.serialize().unwrap();
        let sha = sha256_hex(b"component");
        let read = |sha: &str| read_entry(&engine, &entry, sha).map(|_| ());
        assert_eq!(read(&sha), Err(None), "nothing written yet");
        store(&entry, &sha, &artifact).unwrap();
        assert_eq!(read(&sha), Ok(()));
        let other = sha256_hex(b"another component");
        let said = read(&other).unwrap_err().unwrap();
        assert!(said.contains("compiled from another component"), "{said}");
        // A flipped byte in the artifact, then a sum of the wrong size.
        let mut flipped = artifact.clone();
        *flipped.last_mut().unwrap() ^= 1;
        std::fs::write(&entry, &flipped).unwrap();
        let said = read(&sha).unwrap_err().unwrap();
        assert!(said.ends_with("fails its checksum"), "{said}");
        std::fs::write(sum_path(&entry), b"short").unwrap();
        let said = read(&sha).unwrap_err().unwrap();
        assert!(said.ends_with("is not a cache sum"), "{said}");
        // An entry of the old layout (checksum and source before the artifact, no sum
        // beside it) is no entry: compiled again, and overwritten.
        std::fs::remove_file(sum_path(&entry)).unwrap();
        assert_eq!(read(&sha), Err(None));
        assert!(store(&entry, "not hex", b"x").is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
