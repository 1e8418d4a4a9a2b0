//! The `/data` quota. wasmtime-wasi has no hook on writes, so a watcher beside each
//! running component measures its data directory and stops the component, with the
//! reason `disk quota (N MiB) exceeded`, once it holds more than its quota.
//!
//! Each file and directory counts as its apparent size or its allocated blocks,
//! whichever is larger, rounded up to whole 4 KiB blocks (so a sparse file counts at its
//! full length, and each entry at least one block: the number of files is bounded by the
//! quota too). A measurement stops counting once it is over the quota. The watcher checks
//! every [`MIN_INTERVAL`], or ten times as long as the last walk took if that is longer
//! (a walk costs at most a tenth of a core): the overshoot is what the component writes
//! between two checks.

use super::{ExitReason, Stop};
use crate::sandbox::Limit;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The shortest time between two measurements.
pub(super) const MIN_INTERVAL: Duration = Duration::from_millis(20);
/// What each file or directory counts at least, and the unit sizes are rounded up to.
const BLOCK: u64 = 4096;

/// The quota of one component's data directory.
pub(super) struct Quota {
    pub dir: PathBuf,
    pub mb: u64,
}

impl Quota {
    /// Measures the directory until it is over the quota, then stops the guest (and
    /// waits forever: it is dropped with the guest's task).
    pub(super) async fn watch(self, stop: &Stop) {
        let limit = self.mb << 20;
        let mut interval = MIN_INTERVAL;
        loop {
            tokio::time::sleep(interval).await;
            let dir = self.dir.clone();
            let started = Instant::now();
            let used = tokio::task::spawn_blocking(move || used_bytes(&dir, limit))
                .await
                .unwrap_or(0);
            interval = MIN_INTERVAL.max(started.elapsed() * 10);
            if used > limit {
                stop.stop_for(ExitReason::LimitExceeded(Limit::Disk.named(self.mb)));
                return std::future::pending().await;
            }
        }
    }
}

/// The bytes `dir` holds as the quota counts them (see the module's docs), at most a
/// little over `limit`: counting stops once it is over. Entries that vanish while it
/// counts are skipped.
pub(super) fn used_bytes(dir: &Path, limit: u64) -> u64 {
    let mut used = 0u64;
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let Ok(meta) = entry.path().symlink_metadata() else {
                continue;
            };
            used = used.saturating_add(cost(&meta));
            if used > limit {
                return used;
            }
            if meta.is_dir() {
                pending.push(entry.path());
            }
        }
    }
    used
}

/// What one entry counts: its length or its blocks, whichever is larger, in whole
/// blocks, at least one.
fn cost(meta: &std::fs::Metadata) -> u64 {
    use std::os::unix::fs::MetadataExt;
    let bytes = meta.len().max(meta.blocks().saturating_mul(512));
    bytes.div_ceil(BLOCK).max(1).saturating_mul(BLOCK)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_count_in_whole_blocks_and_sparse_files_at_their_length() {
        let root = std::env::temp_dir().join(format!("zot-quota-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(&root).unwrap();
        let dir = Dir(root);
        std::fs::write(dir.path().join("small"), b"x").unwrap();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        std::fs::write(dir.path().join("sub/ten"), vec![0u8; 10_000]).unwrap();
        let sparse = std::fs::File::create(dir.path().join("sparse")).unwrap();
        sparse.set_len(1 << 30).unwrap();
        // small: 1 block; sub: 1; ten: 3; sparse: 1 GiB.
        assert_eq!(used_bytes(dir.path(), u64::MAX), 5 * BLOCK + (1 << 30));
        assert!(used_bytes(dir.path(), 1 << 20) <= (1 << 30) + 5 * BLOCK);
        std::fs::remove_file(dir.path().join("sparse")).unwrap();
        assert_eq!(used_bytes(dir.path(), u64::MAX), 5 * BLOCK);
        assert_eq!(used_bytes(&dir.path().join("gone"), u64::MAX), 0);
    }

    struct Dir(PathBuf);
    impl Dir {
        fn path(&self) -> &Path {
            &self.0
        }
    }
    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}
