//! Compiled components, cached under `$ZOT_HOME/cache/`, keyed by the component's SHA-256
//! and the engine's compatibility hash (the entry's format: [`super::entry`]). An entry
//! whose checksum does not match (torn, corrupt) or that was compiled
//! from another component than the bytes just hashed (a copied or planted entry) is
//! compiled again and replaced. The component file is read once, as a regular file of
//! at most `MAX_COMPONENT_BYTES` opened
//! without blocking; those bytes are hashed and compiled. Reading, hashing and compiling
//! (`super::compile`) run on blocking threads, never on the async runtime's workers; a
//! caller that knows the hash the component should have lets its entry be checked
//! meanwhile (see [`load`]).

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};
use tokio::sync::OnceCell;
use wasmtime::Engine;

use super::compile::Compiler;
use super::entry::{read_entry, sha256_hex};
use super::inspect::Producer;
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
    /// Who built it ([`super::inspect::producer`]).
    pub producer: super::inspect::Producer,
}

/// The cache file for `sha256` under `dir`, for this engine.
fn entry_path(dir: &Path, engine: &Engine, sha256: &str) -> PathBuf {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    engine.precompile_compatibility_hash().hash(&mut hasher);
    dir.join(format!("{sha256}-{:016x}.cwasm", hasher.finish()))
}

/// The components this process loaded, by cache entry: each loaded once, its code shared.
fn loaded_here() -> &'static Mutex<HashMap<PathBuf, Arc<OnceCell<Code>>>> {
    static LOADED: OnceLock<Mutex<HashMap<PathBuf, Arc<OnceCell<Code>>>>> = OnceLock::new();
    LOADED.get_or_init(Default::default)
}

/// What a cache entry gave: its code and how long reading it took, or why not (`None`:
/// there is no entry).
type Checked = Result<(Code, Duration), Option<String>>;

fn check_entry(engine: &Engine, entry: &Path, sha256: &str) -> Checked {
    let started = Instant::now();
    read_entry(engine, entry, sha256).map(|code| (code, started.elapsed()))
}

/// The component file's bytes, checked to be a component, their SHA-256 and who built it.
fn read_and_hash(path: &Path) -> Result<(Vec<u8>, String, Producer), ComponentError> {
    let bytes = read_component(path).map_err(|e| ComponentError::Io(e.to_string()))?;
    // The header only (what the file is); the full pass ([`super::inspect`]) runs before
    // a compile, not on every load from the cache.
    if let Some(what) = super::filetype::not_a_component(&bytes) {
        return Err(ComponentError::NotAComponent(what));
    }
    let sha256 = sha256_hex(&bytes);
    let producer = super::inspect::producer(&bytes);
    Ok((bytes, sha256, producer))
}

/// Loads the component at `wasm`: from `cache_dir` when a valid entry exists, else
/// compiled (and the entry written). Cache write failures are not fatal.
///
/// `expected` is the SHA-256 the component should have (its grant's): the entry for it
/// is checked on another thread while the component is read and hashed, and used only if
/// the component has that very hash — an entry checked for any other is dropped, so the
/// two hashes cost one's time and nothing is taken on trust.
///
/// Within one process a component is compiled or loaded once and its code shared by every
/// extension that runs it; concurrent starts of the same component wait for that one load.
pub async fn load(
    engine: &Engine,
    wasm: &Path,
    cache_dir: &Path,
    compiler: &Compiler,
    expected: Option<&str>,
) -> Result<Loaded, ComponentError> {
    let early = expected
        .filter(|sha| sha.len() == 64 && sha.bytes().all(|b| b.is_ascii_hexdigit()))
        .map(str::to_ascii_lowercase)
        .map(|sha| (entry_path(cache_dir, engine, &sha), sha))
        .filter(|(entry, _)| {
            let loaded = loaded_here().lock().unwrap();
            !loaded.get(entry).is_some_and(|cell| cell.initialized())
        });
    // Each on a thread of the blocking pool: an idle one is woken where it last ran,
    // where a new thread would often start on the busy CPU of the one that made it.
    let checking = early.map(|(entry, sha)| {
        let engine = engine.clone();
        tokio::task::spawn_blocking(move || (check_entry(&engine, &entry, &sha), sha))
    });
    let path = wasm.to_path_buf();
    let read = tokio::task::spawn_blocking(move || read_and_hash(&path))
        .await
        .map_err(|e| ComponentError::Io(format!("cannot read {}: {e}", wasm.display())))?;
    let early = match checking {
        Some(checking) => checking.await.ok(),
        None => None,
    };
    let (bytes, sha256, producer) = read?;
    // Used only if it was checked for this very component.
    let early = early
        .filter(|(_, sha)| *sha == sha256)
        .map(|(checked, _)| checked);
    let entry = entry_path(cache_dir, engine, &sha256);
    let cell = loaded_here()
        .lock()
        .unwrap()
        .entry(entry.clone())
        .or_default()
        .clone();
    let mut fresh = None;
    let code = cell
        .get_or_try_init(|| async {
            let (engine, compiler) = (engine.clone(), compiler.clone());
            let sha = sha256.clone();
            let loaded = tokio::task::spawn_blocking(move || {
                load_blocking(&engine, &compiler, &bytes, sha, &entry, early)
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
    let mut loaded = fresh.unwrap_or(Loaded {
        code,
        sha256,
        source: Source::Shared,
        rejected: None,
        producer: Default::default(),
    });
    loaded.producer = producer;
    Ok(loaded)
}

/// The component from its entry (`checked`, if that was read already), else compiled.
fn load_blocking(
    engine: &Engine,
    compiler: &Compiler,
    bytes: &[u8],
    sha256: String,
    entry: &Path,
    checked: Option<Checked>,
) -> Result<Loaded, ComponentError> {
    let checked = checked.unwrap_or_else(|| check_entry(engine, entry, &sha256));
    let rejected = match checked {
        Ok((code, took)) => {
            return Ok(Loaded {
                code,
                sha256,
                source: Source::Cached(took),
                rejected: None,
                producer: Default::default(),
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
        producer: Default::default(),
    })
}

/// The bytes of the component file at `path`: a regular file of at most
/// `MAX_COMPONENT_BYTES`, never a FIFO or a
/// device read forever.
pub fn read_component(path: &Path) -> Result<Vec<u8>, crate::util::tree::TreeError> {
    crate::util::tree::read_regular(path, super::inspect::MAX_COMPONENT_BYTES as u64)
}
