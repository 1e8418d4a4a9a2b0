//! The three host processes measured once a minute: resident memory, open descriptors,
//! live children, and zombies among every process below the soak.

use crate::procfs::{self, Proc};
use std::time::Duration;

/// One host process: the soak itself (the library), `zot host`, `zot mcp`.
#[derive(Clone, Copy)]
pub struct Watched {
    pub name: &'static str,
    pub pid: u32,
}

/// One process at one minute.
#[derive(Clone)]
pub struct Figures {
    pub rss_kib: u64,
    /// The least of five readings 100 ms apart: a descriptor open for an instant (a
    /// directory the disk watcher walks, a file a call writes) is not counted.
    pub fds: usize,
    /// Its children that are not zombies (extensions, compile children).
    pub children: usize,
}

pub struct Sample {
    pub minute: usize,
    /// In the order of the watched processes.
    pub figures: Vec<Figures>,
    /// Zombies below the soak that were still zombies a second later.
    pub zombies: Vec<Proc>,
}

/// The figures of `watched` now.
pub async fn sample(minute: usize, watched: &[Watched]) -> Sample {
    let mut fds = vec![usize::MAX; watched.len()];
    for _ in 0..5 {
        for (least, w) in fds.iter_mut().zip(watched) {
            *least = (*least).min(procfs::fd_count(&w.pid.to_string()));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let table = procfs::table();
    let figures = watched
        .iter()
        .zip(fds)
        .map(|(w, fds)| {
            let pid = w.pid.to_string();
            Figures {
                rss_kib: procfs::rss_kib(&pid),
                fds,
                children: table
                    .iter()
                    .filter(|p| p.ppid == w.pid && p.state != 'Z')
                    .count(),
            }
        })
        .collect();
    Sample {
        minute,
        figures,
        zombies: zombies().await,
    }
}

/// Zombies below this process, seen twice a second apart (one that its parent reaps at
/// once, as a crashed extension's, is not a leak).
pub async fn zombies() -> Vec<Proc> {
    let now = || {
        procfs::descendants(&procfs::table(), std::process::id())
            .into_iter()
            .filter(|p| p.state == 'Z')
            .collect::<Vec<_>>()
    };
    let first = now();
    if first.is_empty() {
        return first;
    }
    tokio::time::sleep(Duration::from_secs(1)).await;
    let second = now();
    first.into_iter().filter(|p| second.contains(p)).collect()
}

/// Every process below this one.
pub fn below() -> Vec<Proc> {
    procfs::descendants(&procfs::table(), std::process::id())
}
