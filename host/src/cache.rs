//! Compiled components, cached under `$ZOT_HOME/cache/`, keyed by the component's SHA-256
//! and the engine's compatibility hash. An entry is `[sha256 of the rest][artifact]`,
//! written to a temporary file and renamed into place; one whose checksum does not match
//! (torn, corrupt, tampered with by accident) is compiled again and replaced. Compiling
//! ([`crate::compile`]) runs on a blocking thread, never on the async runtime's workers.

use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};
use tokio::sync::OnceCell;
use wasmtime::component::Component;
use wasmtime::Engine;

use crate::compile::Compiler;

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

/// A loaded component and its identity.
pub struct Loaded {
    pub component: Component,
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
) -> Result<Loaded, String> {
    let bytes = tokio::fs::read(wasm)
        .await
        .map_err(|e| format!("cannot read {}: {e}", wasm.display()))?;
    if let Some(what) = crate::filetype::not_a_component(&bytes) {
        return Err(format!("not a WebAssembly component (it is {what})"));
    }
    let sha256 = sha256_hex(&bytes);
    let entry = entry_path(cache_dir, engine, &sha256);
    let cell = {
        static LOADED: OnceLock<Mutex<HashMap<PathBuf, Arc<OnceCell<Component>>>>> =
            OnceLock::new();
        let mut loaded = LOADED.get_or_init(Default::default).lock().unwrap();
        loaded.entry(entry.clone()).or_default().clone()
    };
    let mut fresh = None;
    let component = cell
        .get_or_try_init(|| async {
            let (engine, compiler) = (engine.clone(), compiler.clone());
            let (sha, wasm) = (sha256.clone(), wasm.to_path_buf());
            let loaded = tokio::task::spawn_blocking(move || {
                load_blocking(&engine, &compiler, &bytes, &wasm, sha, &entry)
            })
            .await
            .map_err(|e| format!("compiling the component failed: {e}"))??;
            let component = loaded.component.clone();
            fresh = Some(loaded);
            Ok::<_, String>(component)
        })
        .await?
        .clone();
    Ok(fresh.unwrap_or(Loaded {
        component,
        sha256,
        source: Source::Shared,
        rejected: None,
    }))
}

fn load_blocking(
    engine: &Engine,
    compiler: &Compiler,
    bytes: &[u8],
    wasm: &Path,
    sha256: String,
    entry: &Path,
) -> Result<Loaded, String> {
    let started = Instant::now();
    let rejected = match read_entry(engine, entry) {
        Ok(component) => {
            return Ok(Loaded {
                component,
                sha256,
                source: Source::Cached(started.elapsed()),
                rejected: None,
            })
        }
        Err(None) => None,
        Err(Some(why)) => Some(why),
    };
    let started = Instant::now();
    let component = compiler.compile(engine, bytes, wasm, entry)?;
    Ok(Loaded {
        component,
        sha256,
        source: Source::Compiled(started.elapsed()),
        rejected,
    })
}

/// The component in the cache entry `entry`: `Err(None)` when there is none, else why it
/// cannot be used.
pub(crate) fn read_entry(engine: &Engine, entry: &Path) -> Result<Component, Option<String>> {
    let data = match std::fs::read(entry) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(None),
        Err(e) => return Err(Some(format!("cannot read {}: {e}", entry.display()))),
        Ok(data) => data,
    };
    let artifact =
        verified(&data).ok_or_else(|| Some(format!("{} fails its checksum", entry.display())))?;
    // SAFETY: the artifact is one this host (or its compiler child) serialised, its
    // checksum matches what was written beside it, and the entry's name carries the
    // engine's compatibility hash; wasmtime checks the header and target again.
    unsafe { Component::deserialize(engine, artifact) }
        .map_err(|e| Some(format!("{} is not usable: {e}", entry.display())))
}

/// The artifact in `data` if its checksum prefix matches.
fn verified(data: &[u8]) -> Option<&[u8]> {
    if data.len() < 32 {
        return None;
    }
    let (sum, artifact) = data.split_at(32);
    (Sha256::digest(artifact).as_slice() == sum).then_some(artifact)
}

/// Writes the cache entry `entry` for `artifact` (its checksum, then it), atomically.
pub(crate) fn store(entry: &Path, artifact: &[u8]) -> std::io::Result<()> {
    let mut data = Sha256::digest(artifact).to_vec();
    data.extend_from_slice(artifact);
    crate::paths::write_atomic(entry, &data)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checksums() {
        let artifact = b"compiled code";
        let mut data = Sha256::digest(artifact).to_vec();
        data.extend_from_slice(artifact);
        assert_eq!(verified(&data), Some(&artifact[..]));
        let last = data.len() - 1;
        data[last] ^= 1;
        assert_eq!(verified(&data), None);
        assert_eq!(verified(b"short"), None);
    }
}
