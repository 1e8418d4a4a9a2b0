//! Scratch folders (removed on drop, laid out as a host's), one-at-a-time tests, and
//! processes seen from `/proc`.

use super::*;
use std::marker::PhantomData;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// A unique directory under the system temp dir, removed on drop.
pub struct TempDir {
    path: PathBuf,
}

impl TempDir {
    pub fn new(tag: &str) -> TempDir {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        let path = std::env::temp_dir().join(format!(
            "zot-test-{tag}-{}-{}-{nanos}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::SeqCst)
        ));
        std::fs::create_dir_all(&path).unwrap();
        TempDir { path }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

/// Runs heavy or timing-sensitive tests of one binary one at a time (the machine is
/// small). Survives a poisoned lock.
pub fn serial() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|p| p.into_inner())
}

/// True once `pid` no longer exists (or is a zombie nobody has reaped yet).
pub fn process_gone(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit_once(')')
            .map(|(_, rest)| rest.trim_start().starts_with('Z'))
            .unwrap_or(false),
    }
}

/// Polls [`process_gone`] until `timeout`.
pub fn wait_process_gone(pid: u32, timeout: Duration) -> bool {
    let deadline = Instant::now() + timeout;
    loop {
        if process_gone(pid) {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A field of `/proc/<pid>/status` in KiB (e.g. `VmHWM`, `VmRSS`).
pub fn proc_status_kib(pid: u32, field: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status.lines().find_map(|l| {
        let rest = l.strip_prefix(field)?.strip_prefix(':')?;
        rest.trim().trim_end_matches("kB").trim().parse().ok()
    })
}

/// A scratch folder laid out as [`HostBuilder::in_dir`] makes it (`home`: ZOT_HOME, with
/// the shared compile cache linked in; `cwd`: the project). A test module that adds
/// helpers of its own names a marker type for them (`struct Shell; type Layout =
/// common::Layout<Shell>;`) and writes an `impl Layout` of its own: the modules share one
/// crate, so their helpers may share a name without colliding.
pub struct Layout<Helpers> {
    dir: TempDir,
    helpers: PhantomData<Helpers>,
}

impl<Helpers> Layout<Helpers> {
    pub fn new(tag: &str) -> Self {
        let dir = TempDir::new(tag);
        let _ = HostBuilder::in_dir(dir.path());
        Layout {
            dir,
            helpers: PhantomData,
        }
    }

    /// The scratch folder itself.
    pub fn root(&self) -> &Path {
        self.dir.path()
    }

    /// `ZOT_HOME`.
    pub fn home(&self) -> PathBuf {
        self.root().join("home")
    }

    /// The current directory of the runs: a project.
    pub fn cwd(&self) -> PathBuf {
        self.root().join("cwd")
    }
}
