//! What Linux's `/proc` says of a process: its resident memory, its open descriptors, and
//! the process table (parent and state of each). Included with `#[path]` by the bench
//! (`host/cli/benches/roundtrip`) and the soak (`tests/soak`).

#![allow(dead_code)] // each includer uses part of it

use std::path::Path;

/// VmRSS in KiB of process `pid` (`self`: this one).
pub fn rss_kib(pid: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

/// How many descriptors process `pid` has open.
pub fn fd_count(pid: &str) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, Iterator::count)
}

/// One row of the process table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Proc {
    pub pid: u32,
    pub ppid: u32,
    /// `R`, `S`, `Z` (a zombie: exited, not yet reaped by its parent), …
    pub state: char,
    /// The name the kernel keeps (`comm`, at most 15 bytes).
    pub comm: String,
}

/// Every process now (those that exit while it is read are left out).
pub fn table() -> Vec<Proc> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .filter_map(|pid: u32| read_stat(&Path::new("/proc").join(pid.to_string()), pid))
        .collect()
}

/// `/proc/<pid>/stat`: `pid (comm) state ppid …`; `comm` may hold spaces and parentheses.
fn read_stat(dir: &Path, pid: u32) -> Option<Proc> {
    let stat = std::fs::read_to_string(dir.join("stat")).ok()?;
    let (head, rest) = stat.rsplit_once(')')?;
    let comm = head.split_once('(')?.1.to_string();
    let mut fields = rest.split_whitespace();
    let state = fields.next()?.chars().next()?;
    let ppid = fields.next()?.parse().ok()?;
    Some(Proc {
        pid,
        ppid,
        state,
        comm,
    })
}

/// The processes below `root` in `table` (children, their children, …), not `root`.
pub fn descendants(table: &[Proc], root: u32) -> Vec<Proc> {
    let mut found: Vec<Proc> = Vec::new();
    let mut parents = vec![root];
    while let Some(parent) = parents.pop() {
        for p in table.iter().filter(|p| p.ppid == parent) {
            parents.push(p.pid);
            found.push(p.clone());
        }
    }
    found
}
