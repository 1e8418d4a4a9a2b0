//! The `/data` quota, counted on the writes themselves.
//!
//! Each component with a data directory has one [`Usage`]: the bytes its data directory
//! holds as the quota counts them, measured when it starts, then charged by every
//! operation that can make it grow (`files.rs` wraps `wasi:filesystem` to do so). An
//! operation that would take it past the quota fails with the WASI error
//! `insufficient-space` (`ENOSPC` in the guest): the component is told and goes on; the
//! log says so once per burst of refusals.
//!
//! What counts: each file, directory and link as its apparent size or its allocated
//! blocks, whichever is larger, rounded up to whole 4 KiB blocks (a sparse file counts at
//! its full length, and each entry at least one block: the number of names is bounded by
//! the quota too). A write is charged the growth it causes (its new end against the
//! file's size); a new name one block plus its bytes (the directory holding it grows).
//! The first measurement runs before the guest does; until then the quota counts as full.
//! Files the component holds open count while open, also once unlinked: each is tracked
//! by its handle when it is opened ([`Usage::track`]), never looked up by a name. A
//! failed operation gives its charge back ([`Usage::refund`]) unless a measurement began
//! since, which already counted what the operation left on disk.
//!
//! A watcher re-measures the directory every [`INTERVAL`] (or ten times as long as the
//! last walk took, if that is longer: a walk costs at most a tenth of a core), and a
//! refused charge re-measures at once if something was deleted or shrunk since (at most
//! once per ten times the last walk's time, so a walk costs the guest's thread at most a
//! tenth of it): so deletions and truncations are given back. The walk goes from
//! directory handle to directory handle (no path is ever built, so depth is no limit),
//! never follows a link, and stops counting once it is over the quota. As a backstop, a
//! measurement that finds the directory more than [`SLACK`] over the quota (by a way no
//! charge saw) stops the component with the reason `disk quota (N MiB) exceeded`.

use super::{ExitReason, Stop};
use crate::log::ExtLog;
use crate::sandbox::Limit;
pub(super) use crate::transport::disk_walk::{blocks_of, measure, BLOCK, INTERVAL, SLACK};
use cap_std::fs::Dir;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Instant;

/// What a new name costs in its directory, beyond its own bytes (a generous directory
/// entry header).
const NAME_OVERHEAD: u64 = 32;
/// One component's use of its data directory, shared by its filesystem calls, its output
/// streams and the watcher.
pub(super) struct Usage {
    /// The data directory.
    root: Dir,
    /// The quota, in MiB and in bytes.
    mb: u64,
    limit: u64,
    state: Mutex<State>,
    /// Files the component opened, to count those it unlinked while it holds them.
    open: Mutex<Vec<Weak<std::fs::File>>>,
    /// Only one measurement at a time; when a refusal may measure again (after a tenth
    /// of a core's worth of walking at most).
    walking: Mutex<Instant>,
    /// Something was deleted or shrunk since the last measurement.
    shrunk: AtomicBool,
    /// A refusal was logged, and nothing was admitted since.
    refusing: AtomicBool,
    log: ExtLog,
}

#[derive(Default)]
struct State {
    /// The bytes counted.
    used: u64,
    /// What was charged since the measurement under way started.
    charged_in_walk: u64,
    /// How many measurements have begun.
    walks: u64,
}

/// Why a charge was refused: the quota is reached.
#[derive(Debug)]
pub(super) struct QuotaFull;

/// A charge made, to give back with [`Usage::refund`] if its operation fails.
#[derive(Debug, Clone, Copy)]
#[must_use = "a charge is refunded if its operation fails"]
pub(super) struct Charge {
    bytes: u64,
    /// The measurements begun when it was made.
    walk: u64,
}

impl Usage {
    /// The usage of `dir` under a quota of `mb` MiB: full until [`Usage::measure_first`]
    /// has measured it.
    pub(super) fn new(dir: &std::path::Path, mb: u64, log: ExtLog) -> std::io::Result<Arc<Self>> {
        let root = Dir::open_ambient_dir(dir, cap_std::ambient_authority())?;
        let limit = mb << 20;
        Ok(Arc::new(Usage {
            root,
            mb,
            limit,
            state: Mutex::new(State {
                used: limit,
                ..State::default()
            }),
            open: Mutex::new(Vec::new()),
            walking: Mutex::new(Instant::now()),
            shrunk: AtomicBool::new(false),
            refusing: AtomicBool::new(false),
            log,
        }))
    }

    /// The first measurement, before the guest runs (it blocks: run it off the async
    /// threads). A directory that cannot be measured within the walk's bounds stays full.
    pub(super) fn measure_first(&self) {
        let first = measure(&self.root, self.limit);
        self.state.lock().unwrap().used = match first.complete {
            true => first.bytes,
            false => first.bytes.max(self.limit),
        };
    }

    /// Charges `bytes` of growth, or refuses it if it would take the usage past the
    /// quota (after measuring again, if something was given back since).
    pub(super) fn charge(&self, bytes: u64) -> Result<Charge, QuotaFull> {
        if let Some(charge) = self.try_charge(bytes) {
            return Ok(charge);
        }
        if self.shrunk.load(Ordering::SeqCst) && self.remeasure(false) {
            if let Some(charge) = self.try_charge(bytes) {
                return Ok(charge);
            }
        }
        if !self.refusing.swap(true, Ordering::SeqCst) {
            self.log.warn(&format!(
                "{} reached: a write of {bytes} bytes was refused (insufficient space)",
                Limit::Disk.named(self.mb)
            ));
        }
        Err(QuotaFull)
    }

    /// [`Usage::charge`] of an upper bound of the growth (a preview-1 module's write,
    /// whose offset is not known here): before a refusal the directory is measured
    /// again, since the bounds charged so far may have over-counted.
    pub(super) fn charge_bound(&self, bytes: u64) -> Result<Charge, QuotaFull> {
        if let Some(charge) = self.try_charge(bytes) {
            return Ok(charge);
        }
        self.shrunk();
        self.charge(bytes)
    }

    /// Charges `bytes` if they fit (nothing always fits).
    fn try_charge(&self, bytes: u64) -> Option<Charge> {
        let mut state = self.state.lock().unwrap();
        let charge = Charge {
            bytes,
            walk: state.walks,
        };
        if bytes == 0 {
            return Some(charge);
        }
        if state.used.saturating_add(bytes) > self.limit {
            return None;
        }
        state.used += bytes;
        state.charged_in_walk = state.charged_in_walk.saturating_add(bytes);
        drop(state);
        self.refusing.store(false, Ordering::SeqCst);
        Some(charge)
    }

    /// Gives back a charge whose operation failed: all of it, or nothing if a measurement
    /// began since it was made (that measurement replaces the count with what is on disk,
    /// which holds what the operation really wrote, and not the rest of the charge).
    pub(super) fn refund(&self, charge: Charge) {
        let mut state = self.state.lock().unwrap();
        if state.walks != charge.walk {
            return;
        }
        state.used = state.used.saturating_sub(charge.bytes);
        state.charged_in_walk = state.charged_in_walk.saturating_sub(charge.bytes);
    }

    /// Something was deleted or shrunk: the next refusal measures again first.
    pub(super) fn shrunk(&self) {
        self.shrunk.store(true, Ordering::SeqCst);
    }

    /// Counts `file` while it is open (even once unlinked).
    pub(super) fn track(&self, file: &Arc<std::fs::File>) {
        let mut open = self.open.lock().unwrap();
        // Forget closed files once they could be half of the list.
        if open.len() >= 64 && open.len().is_power_of_two() {
            open.retain(|f| f.strong_count() > 0);
        }
        open.push(Arc::downgrade(file));
    }

    /// What a new entry named `name` costs: a block, and its bytes in its directory.
    pub(super) fn name_cost(name: &str) -> u64 {
        BLOCK + Self::entry_bytes(name)
    }

    /// What a name costs its directory.
    pub(super) fn entry_bytes(name: &str) -> u64 {
        name.len() as u64 + NAME_OVERHEAD
    }

    /// Measures the directory and the open unlinked files; if the measurement is
    /// complete, it becomes the usage (plus what was charged while it ran). `false`: it
    /// was not (another is under way, the tree is beyond the walk's bounds, or, unless
    /// `scheduled`, the last walk was too recent: a refusal measures again at most once
    /// per ten times the last walk's time).
    fn remeasure(&self, scheduled: bool) -> bool {
        let Ok(mut next) = self.walking.try_lock() else {
            return false;
        };
        let started = Instant::now();
        if !scheduled && started < *next {
            return false;
        }
        self.shrunk.store(false, Ordering::SeqCst);
        let mut state = self.state.lock().unwrap();
        state.charged_in_walk = 0;
        state.walks += 1;
        drop(state);
        let tree = measure(&self.root, self.limit);
        *next = Instant::now() + started.elapsed() * 9;
        if !tree.complete {
            return false;
        }
        let unlinked = self.unlinked_open_bytes();
        let mut state = self.state.lock().unwrap();
        state.used = tree
            .bytes
            .saturating_add(unlinked)
            .saturating_add(state.charged_in_walk);
        true
    }

    /// The bytes of the files the component holds open and has unlinked.
    fn unlinked_open_bytes(&self) -> u64 {
        let mut open = self.open.lock().unwrap();
        open.retain(|f| f.strong_count() > 0);
        open.iter()
            .filter_map(Weak::upgrade)
            .filter_map(|f| f.metadata().ok())
            .filter(|m| std::os::unix::fs::MetadataExt::nlink(m) == 0)
            .map(|m| {
                use std::os::unix::fs::MetadataExt;
                blocks_of(m.len().max(m.blocks().saturating_mul(512)))
            })
            .fold(0u64, u64::saturating_add)
    }

    /// The bytes counted now.
    #[cfg(test)]
    fn used(&self) -> u64 {
        self.state.lock().unwrap().used
    }

    /// Measures again every [`INTERVAL`] (refunding what was deleted) and stops the
    /// guest if a measurement finds it more than [`SLACK`] over the quota (then waits
    /// forever: it is dropped with the guest's task).
    pub(super) async fn watch(self: Arc<Self>, stop: &Stop) {
        let mut interval = INTERVAL;
        loop {
            tokio::time::sleep(interval).await;
            let usage = self.clone();
            let started = Instant::now();
            let over = tokio::task::spawn_blocking(move || {
                usage.remeasure(true) && usage.state.lock().unwrap().used > usage.limit + SLACK
            })
            .await
            .unwrap_or(false);
            interval = INTERVAL.max(started.elapsed() * 10);
            if over {
                stop.stop_for(ExitReason::LimitExceeded(Limit::Disk.named(self.mb)));
                return std::future::pending().await;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::{Path, PathBuf};

    fn dir(name: &str) -> TempDir {
        let root = zot_test_fixtures::fresh_dir(&format!("quota-{name}"));
        TempDir(root)
    }

    fn measured(path: &Path, limit: u64) -> crate::transport::disk_walk::Measure {
        let root = Dir::open_ambient_dir(path, cap_std::ambient_authority()).unwrap();
        measure(&root, limit)
    }

    #[test]
    fn files_count_in_whole_blocks_and_sparse_files_at_their_length() {
        let dir = dir("blocks");
        std::fs::write(dir.path().join("small"), b"x").unwrap();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        std::fs::write(dir.path().join("sub/ten"), vec![0u8; 10_000]).unwrap();
        let sparse = std::fs::File::create(dir.path().join("sparse")).unwrap();
        sparse.set_len(1 << 30).unwrap();
        // small: 1 block; sub: 1; ten: 3; sparse: 1 GiB.
        let all = measured(dir.path(), u64::MAX);
        assert_eq!(all.bytes, 5 * BLOCK + (1 << 30));
        assert!(all.complete);
        assert!(measured(dir.path(), 1 << 20).bytes <= (1 << 30) + 5 * BLOCK);
        std::fs::remove_file(dir.path().join("sparse")).unwrap();
        assert_eq!(measured(dir.path(), u64::MAX).bytes, 5 * BLOCK);
    }

    /// 20 nested folders of 250-character names: deeper than PATH_MAX, measured all
    /// the same; a link to a folder is counted as a link, not followed.
    #[test]
    fn a_tree_deeper_than_path_max_is_measured_and_links_are_not_followed() {
        let dir = dir("deep");
        let name = "d".repeat(250);
        let root = Dir::open_ambient_dir(dir.path(), cap_std::ambient_authority()).unwrap();
        let mut at = root.try_clone().unwrap();
        for _ in 0..20 {
            at.create_dir(&name).unwrap();
            at = at.open_dir(&name).unwrap();
        }
        at.write("bottom", vec![1u8; 1 << 20]).unwrap();
        std::os::unix::fs::symlink(dir.path(), dir.path().join("loop")).unwrap();
        let m = measure(&root, u64::MAX);
        assert!(m.complete);
        assert_eq!(m.bytes, 20 * BLOCK + (1 << 20) + BLOCK);
    }

    #[test]
    fn a_charge_past_the_quota_is_refused_and_a_deletion_gives_room_back() {
        let dir = dir("charge");
        std::fs::write(dir.path().join("old"), vec![0u8; 512 << 10]).unwrap();
        let usage = Usage::new(dir.path(), 1, dir.log()).unwrap();
        usage.measure_first();
        assert_eq!(usage.used(), 512 << 10);
        let charge = usage.charge(256 << 10).unwrap();
        assert!(usage.charge(512 << 10).is_err());
        usage.refund(charge);
        std::fs::remove_file(dir.path().join("old")).unwrap();
        usage.shrunk();
        assert!(usage.charge(900 << 10).is_ok(), "measured again: room");
    }

    /// A failed operation's charge is given back whole while the count still holds it,
    /// and not at all once a measurement began after it: that measurement counted what
    /// is on disk, so a refund then would give back bytes no longer counted (a write of
    /// 3 MiB that failed, refunded after a measurement of the 1 MiB stored, took the
    /// count to 0: 1 MiB more for the guest each time).
    #[test]
    fn a_refund_gives_back_only_what_the_count_still_holds() {
        let dir = dir("refund");
        std::fs::write(dir.path().join("old"), vec![0u8; 1 << 20]).unwrap();
        let usage = Usage::new(dir.path(), 4, dir.log()).unwrap();
        usage.measure_first();
        let failed = usage.charge(2 << 20).unwrap();
        assert_eq!(usage.used(), 3 << 20);
        usage.refund(failed);
        assert_eq!(usage.used(), 1 << 20, "given back whole");
        let failed = usage.charge(3 << 20).unwrap();
        assert!(usage.remeasure(true));
        assert_eq!(usage.used(), 1 << 20, "measured: what is on disk");
        usage.refund(failed);
        assert_eq!(
            usage.used(),
            1 << 20,
            "nothing given back past the measurement"
        );
        // Charged after that measurement: given back whole.
        let after = usage.charge(1 << 20).unwrap();
        usage.refund(after);
        assert_eq!(usage.used(), 1 << 20);
    }

    #[test]
    fn an_open_unlinked_file_counts_until_it_is_closed() {
        let dir = dir("unlinked");
        let usage = Usage::new(dir.path(), 16, dir.log()).unwrap();
        usage.measure_first();
        let file = Arc::new(std::fs::File::create(dir.path().join("gone")).unwrap());
        usage.track(&file);
        file.set_len(4 << 20).unwrap();
        std::fs::remove_file(dir.path().join("gone")).unwrap();
        assert!(usage.remeasure(true));
        assert_eq!(usage.used(), 4 << 20);
        drop(file);
        assert!(usage.remeasure(true));
        assert_eq!(usage.used(), 0);
    }

    struct TempDir(PathBuf);
    impl TempDir {
        fn path(&self) -> &Path {
            &self.0
        }
        fn log(&self) -> ExtLog {
            ExtLog::open(&self.0.with_extension("log"))
        }
    }
    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
            let _ = std::fs::remove_file(self.0.with_extension("log"));
        }
    }
}
