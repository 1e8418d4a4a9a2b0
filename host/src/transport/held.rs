//! The files a process group holds open after unlinking them (Linux): they take disk
//! space that no walk of a folder finds, so a confined extension's quota counts them.
//! Found through `/proc`: every process whose group is the extension's, every
//! descriptor of it that is a regular file with no name left on the data dir's device.

use super::disk_walk::blocks_of;
use std::collections::HashSet;
use std::os::unix::fs::MetadataExt;

/// The bytes of the unlinked regular files on `device` that the processes of group `pgid`
/// hold open, each file counted once, as a quota counts a file.
pub(crate) fn unlinked(pgid: i32, device: u64) -> u64 {
    let mut seen = HashSet::new();
    let mut bytes = 0u64;
    for pid in members(pgid) {
        let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
            continue; // ended meanwhile
        };
        for fd in fds.flatten() {
            // The descriptor's own file, whatever its name was.
            let Ok(meta) = std::fs::metadata(fd.path()) else {
                continue;
            };
            if meta.is_file()
                && meta.nlink() == 0
                && meta.dev() == device
                && seen.insert(meta.ino())
            {
                bytes = bytes
                    .saturating_add(blocks_of(meta.len().max(meta.blocks().saturating_mul(512))));
            }
        }
    }
    bytes
}

/// The processes of group `pgid` (the extension and everything it started: a confined
/// one cannot leave its group).
fn members(pgid: i32) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| group_of(*pid) == Some(pgid))
        .collect()
}

/// The process group of `pid`: the fifth field of `/proc/<pid>/stat`, read after the
/// command's name (which may hold spaces and parentheses).
fn group_of(pid: u32) -> Option<i32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (_, after) = stat.rsplit_once(')')?;
    after.split_whitespace().nth(2)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{BufRead, Write};
    use std::os::unix::process::CommandExt;
    use std::process::{Command, Stdio};

    /// A process of a group of its own writes 1 MiB to a named file and 2 MiB to one it
    /// unlinked, then waits: the group holds 2 MiB unlinked, then nothing once it ends.
    #[test]
    fn an_unlinked_file_held_open_counts_and_a_named_one_does_not() {
        let dir = std::env::temp_dir().join(format!("zot-held-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let device = std::fs::metadata(&dir).unwrap().dev();
        let script = r#"
import os, sys
d = sys.argv[1]
named = open(d + "/named", "wb"); named.write(b"x" * (1 << 20)); named.flush()
gone = open(d + "/gone", "wb"); os.unlink(d + "/gone")
gone.write(b"x" * (2 << 20)); gone.flush(); os.fsync(gone.fileno())
print("ready", flush=True)
sys.stdin.read()
"#;
        let mut child = Command::new("python3")
            .args(["-c", script, dir.to_str().unwrap()])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .process_group(0)
            .spawn()
            .unwrap();
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        assert_eq!(line.trim(), "ready");
        let pgid = child.id() as i32;
        let held = unlinked(pgid, device);
        assert!((2 << 20..3 << 20).contains(&held), "{held}");
        child.stdin.take().unwrap().write_all(b"").unwrap();
        child.wait().unwrap();
        assert_eq!(unlinked(pgid, device), 0, "an ended group holds nothing");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
