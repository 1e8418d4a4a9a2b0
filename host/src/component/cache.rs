//! Compiled components, cached under `$ZOT_HOME/cache/`, keyed by the component's SHA-256
//! and the engine's compatibility hash. An entry is `[sha256 of the rest][sha256 of the
//! component it was compiled from][artifact]`, written to a temporary file and renamed
//! into place; one whose checksum does not match (torn, corrupt) or that was compiled
//! from another component than the bytes just hashed (a copied or planted entry) is
//! compiled again and replaced. The component file is read once, as a regular file of
//! at most `MAX_COMPONENT_BYTES` opened
//! without blocking; those bytes are hashed and compiled. Compiling (`super::compile`)
//! runs on a blocking thread, never on the async runtime's workers.

use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};
use tokio::sync::OnceCell;
use wasmtime::Engine;

use super::compile::Compiler;
use super::{Code, ComponentError};

/// How a component was obtained.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// Already loaded by this process (shared code, no work).
    Shared,
    /// Compiled now (cache miss or bad entry), taking this long.
    Compiled(Duration),
    /// Loaded from the cache, taking this long.
    Cached(Duration),
}

/// A loaded component (or core module) and its identity.
pub struct Loaded {
    pub code: Code,
    /// Hex SHA-256 of the component file.
    pub sha256: String,
    pub source: Source,
    /// Why a cache entry was not used, if one existed.
    pub rejected: Option<String>,
}

/// Hex SHA-256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The cache file for `sha256` under `dir`, for this engine.
fn entry_path(dir: &Path, engine: &Engine, sha256: &str) -> PathBuf {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    engine.precompile_compatibility_hash().hash(&mut hasher);
    dir.join(format!("{sha256}-{:016x}.cwasm", hasher.finish()))
}

/// Loads the component at `wasm`: from `cache_dir` when a valid entry exists, else
/// compiled (and the entry written). Cache write failures are not fatal.
///
/// Within one process a component is compiled or loaded once and its code shared by every
/// extension that runs it; concurrent starts of the same component wait for that one load.
pub async fn load(
    engine: &Engine,
    wasm: &Path,
    cache_dir: &Path,
    compiler: &Compiler,
) -> Result<Loaded, ComponentError> {
    let path = wasm.to_path_buf();
    let bytes = tokio::task::spawn_blocking(move || read_component(&path))
        .await
        .map_err(|e| ComponentError::Io(format!("cannot read {}: {e}", wasm.display())))?
        .map_err(|e| ComponentError::Io(e.to_string()))?;
    // The header only (what the file is); the full pass ([`super::inspect`]) runs before
    // a compile, not on every load from the cache.
    if let Some(what) = super::filetype::not_a_component(&bytes) {
        return Err(ComponentError::NotAComponent(what));
    }
    let sha256 = sha256_hex(&bytes);
    let entry = entry_path(cache_dir, engine, &sha256);
    let cell = {
        static LOADED: OnceLock<Mutex<HashMap<PathBuf, Arc<OnceCell<Code>>>>> = OnceLock::new();
        let mut loaded = LOADED.get_or_init(Default::default).lock().unwrap();
        loaded.entry(entry.clone()).or_default().clone()
    };
    let mut fresh = None;
    let code = cell
        .get_or_try_init(|| async {
            let (engine, compiler) = (engine.clone(), compiler.clone());
            let sha = sha256.clone();
            let loaded = tokio::task::spawn_blocking(move || {
                load_blocking(&engine, &compiler, &bytes, sha, &entry)
            })
            .await
            .map_err(|e| {
                ComponentError::Compiler(format!("compiling the component failed: {e}"))
            })??;
            let code = loaded.code.clone();
            fresh = Some(loaded);
            Ok::<_, ComponentError>(code)
        })
        .await?
        .clone();
    Ok(fresh.unwrap_or(Loaded {
        code,
        sha256,
        source: Source::Shared,
        rejected: None,
    }))
}

fn load_blocking(
    engine: &Engine,
    compiler: &Compiler,
    bytes: &[u8],
    sha256: String,
    entry: &Path,
) -> Result<Loaded, ComponentError> {
    let started = Instant::now();
    let rejected = match read_entry(engine, entry, &sha256) {
        Ok(code) => {
            return Ok(Loaded {
                code,
                sha256,
                source: Source::Cached(started.elapsed()),
                rejected: None,
            })
        }
        Err(None) => None,
        Err(Some(why)) => Some(why),
    };
    let started = Instant::now();
    let code = compiler.compile(engine, bytes, &sha256, entry)?;
    Ok(Loaded {
        code,
        sha256,
        source: Source::Compiled(started.elapsed()),
        rejected,
    })
}

/// The component in the cache entry `entry`, which must have been compiled from the
/// component whose hex SHA-256 is `sha256`: `Err(None)` when there is none, else why it
/// cannot be used.
pub(crate) fn read_entry(
    engine: &Engine,
    entry: &Path,
    sha256: &str,
) -> Result<Code, Option<String>> {
    let data = match crate::tree::read_regular(entry, crate::tree::MAX_FILE_BYTES) {
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
    crate::safe_write::write_file(entry, &data)
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

/// The bytes of the component file at `path`: a regular file of at most
/// `MAX_COMPONENT_BYTES`, never a FIFO or a
/// device read forever.
pub fn read_component(path: &Path) -> Result<Vec<u8>, crate::tree::TreeError> {
    crate::tree::read_regular(path, super::inspect::MAX_COMPONENT_BYTES as u64)
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
