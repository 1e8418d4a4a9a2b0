//! One cache entry of a compiled component: `[sha256 of the rest][sha256 of the component
//! it was compiled from][artifact]`, written to a temporary file and renamed into place,
//! read back only if its checksum holds and it was compiled from the component asked
//! for. Both the cache ([`super::cache`]) and the compiler child ([`super::compile`])
//! write and read entries through here, so neither needs the other's module.

use sha2::{Digest, Sha256};
use std::path::Path;
use wasmtime::Engine;

use super::Code;

/// Hex SHA-256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The component in the cache entry `entry`, which must have been compiled from the
/// component whose hex SHA-256 is `sha256`: `Err(None)` when there is none, else why it
/// cannot be used.
pub(crate) fn read_entry(
    engine: &Engine,
    entry: &Path,
    sha256: &str,
) -> Result<Code, Option<String>> {
    let data = match crate::util::tree::read_regular(entry, crate::util::tree::MAX_FILE_BYTES) {
        Err(e) if e.cause.kind() == std::io::ErrorKind::NotFound => return Err(None),
        Err(e) => return Err(Some(e.to_string())),
        Ok(data) => data,
    };
    let (source, artifact) =
        verified(&data).ok_or_else(|| Some(format!("{} fails its checksum", entry.display())))?;
    if hex(source) != sha256 {
        return Err(Some(format!(
            "{} was compiled from another component (SHA-256 {}), not this one",
            entry.display(),
            hex(source)
        )));
    }
    // SAFETY: the artifact is one this host (or its compiler child) serialised from the
    // component with this SHA-256, its checksum matches what was written beside it, and
    // the entry's name carries the engine's compatibility hash; wasmtime checks the
    // header and target again.
    unsafe { Code::deserialize(engine, artifact) }
        .map_err(|e| Some(format!("{} is not usable: {e}", entry.display())))
}

/// The SHA-256 of the component and the artifact in `data`, if its checksum matches.
fn verified(data: &[u8]) -> Option<(&[u8], &[u8])> {
    if data.len() < 64 {
        return None;
    }
    let (sum, rest) = data.split_at(32);
    (Sha256::digest(rest).as_slice() == sum).then(|| rest.split_at(32))
}

/// Writes the cache entry `entry` for `artifact`, compiled from the component whose hex
/// SHA-256 is `sha256` (a checksum, then that SHA-256, then the artifact), atomically.
pub(crate) fn store(entry: &Path, sha256: &str, artifact: &[u8]) -> std::io::Result<()> {
    let source = unhex(sha256).ok_or_else(|| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("{sha256:?} is not a SHA-256"),
        )
    })?;
    let mut rest = source.to_vec();
    rest.extend_from_slice(artifact);
    let mut data = Sha256::digest(&rest).to_vec();
    data.extend_from_slice(&rest);
    crate::util::safe_write::write_file(entry, &data)
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

    #[test]
    fn checksums_and_the_source_it_was_compiled_from() {
        let dir = std::env::temp_dir().join(format!("zot-cache-{}", std::process::id()));
        let entry = dir.join("entry.cwasm");
        let sha = sha256_hex(b"component");
        store(&entry, &sha, b"compiled code").unwrap();
        let mut data = std::fs::read(&entry).unwrap();
        let (source, artifact) = verified(&data).unwrap();
        assert_eq!(
            (hex(source), artifact),
            (sha.clone(), &b"compiled code"[..])
        );
        let last = data.len() - 1;
        data[last] ^= 1;
        assert_eq!(verified(&data), None);
        assert_eq!(verified(b"short"), None);
        assert!(store(&entry, "not hex", b"x").is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
