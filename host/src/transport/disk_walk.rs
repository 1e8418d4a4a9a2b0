//! How a data directory is measured for its disk quota: each file, directory and link as
//! its apparent size or its allocated blocks, whichever is larger, in whole blocks. Shared
//! by a component's quota (`wasm::disk`) and a confined classic extension's watcher
//! (`stdio`).

use cap_std::fs::{Dir, FileTypeExt, MetadataExt};
use std::sync::Arc;
use std::time::Duration;

/// The shortest time between two measurements by a component's watcher (a component's
/// writes are charged one by one; a confined extension's are measured every
/// `confine::DISK_CHECK`).
pub(crate) const INTERVAL: Duration = Duration::from_secs(1);
/// How far over the quota a measurement may find the directory before the extension is
/// stopped.
pub(crate) const SLACK: u64 = 1 << 20;
/// What each entry counts at least, and the unit sizes are rounded up to.
pub(crate) const BLOCK: u64 = 4096;
/// The most directories a walk keeps open at once; a tree that needs more is not
/// measured (it counts as before).
const MAX_OPEN_DIRS: usize = 256;
/// The most directories a walk keeps waiting; more and it is not measured.
const MAX_PENDING: usize = 100_000;

/// A measurement of the data directory.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Measure {
    /// The bytes counted (a little over the limit at most, once over).
    pub bytes: u64,
    /// Whether every entry was counted (a walk over the limit counts as complete).
    pub complete: bool,
    /// A character or block device found in the tree, by name.
    pub device: Option<std::ffi::OsString>,
}

/// The bytes `size` counts as: whole blocks, at least one.
pub(crate) fn blocks_of(size: u64) -> u64 {
    size.div_ceil(BLOCK).max(1).saturating_mul(BLOCK)
}

/// What one entry counts: its length or its blocks, whichever is larger, in whole
/// blocks, at least one.
fn cost(meta: &cap_std::fs::Metadata) -> u64 {
    blocks_of(meta.len().max(meta.blocks().saturating_mul(512)))
}

/// Measures the tree under `root` as the quota counts it, stopping once it is over
/// `limit`. Directories are opened from their parent's handle, never through a path,
/// and only if they are the directory that was listed (a link swapped in is not
/// followed). Entries that vanish while it counts are skipped.
pub(crate) fn measure(root: &Dir, limit: u64) -> Measure {
    // Directories to list: (parent, name); a parent stays open while it has some.
    let mut pending: Vec<(Arc<Dir>, std::ffi::OsString, u64, u64)> = Vec::new();
    let mut bytes = 0u64;
    let mut open_parents = 0usize;
    let mut device = None;
    let Ok(root) = root.open_dir(".") else {
        return Measure {
            bytes: 0,
            complete: true,
            device,
        };
    };
    let mut next = Some(Arc::new(root));
    loop {
        let dir = match next.take() {
            Some(dir) => dir,
            None => match pending.pop() {
                None => break,
                Some((parent, name, dev, ino)) => {
                    let opened = parent.open_dir(&name);
                    if Arc::strong_count(&parent) == 1 {
                        open_parents -= 1;
                    }
                    drop(parent);
                    match opened {
                        Ok(d)
                            if d.dir_metadata()
                                .is_ok_and(|m| m.dev() == dev && m.ino() == ino) =>
                        {
                            Arc::new(d)
                        }
                        _ => continue,
                    }
                }
            },
        };
        let Ok(entries) = dir.entries() else {
            continue;
        };
        let mut has_children = false;
        for entry in entries.flatten() {
            let Ok(meta) = entry.metadata() else {
                continue;
            };
            bytes = bytes.saturating_add(cost(&meta));
            if bytes > limit {
                return Measure {
                    bytes,
                    complete: true,
                    device,
                };
            }
            let kind = meta.file_type();
            if device.is_none() && (kind.is_char_device() || kind.is_block_device()) {
                device = Some(entry.file_name());
            }
            if meta.is_dir() {
                if pending.len() >= MAX_PENDING {
                    return Measure {
                        bytes,
                        complete: false,
                        device,
                    };
                }
                has_children = true;
                pending.push((dir.clone(), entry.file_name(), meta.dev(), meta.ino()));
            }
        }
        if has_children {
            open_parents += 1;
            if open_parents > MAX_OPEN_DIRS {
                return Measure {
                    bytes,
                    complete: false,
                    device,
                };
            }
        }
    }
    Measure {
        bytes,
        complete: true,
        device,
    }
}
