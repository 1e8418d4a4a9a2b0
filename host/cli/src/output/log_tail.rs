//! The last lines an extension's log got during this run (its stderr and the host's
//! notes): what `check` shows when it fails and `call`/`invoke` when the extension
//! exited or did not start.

use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use zot_host::manage::manifest::Manifest;
use zot_host::ZotHome;

/// How many lines are shown at most.
const TAIL_LINES: usize = 30;
/// How many bytes from the end of the log are searched for those lines.
const TAIL_BYTES: u64 = 16 * 1024;

/// Where an extension's log ended before this run.
pub(crate) struct LogMark {
    path: PathBuf,
    from: u64,
}

impl LogMark {
    /// The log of the extension in `dir` (by its manifest's name), as long as it is now;
    /// `None` if its manifest cannot be read.
    pub(crate) fn of(home: &ZotHome, dir: &Path) -> Option<LogMark> {
        let path = home.log_path(&Manifest::read(dir).ok()?.name);
        let from = std::fs::metadata(&path).map_or(0, |m| m.len());
        Some(LogMark { path, from })
    }

    /// The last lines appended since the mark (from the start if the log has shrunk or
    /// rotated since), but the host's notes that say one of `listed` (shown apart, below
    /// the tail); `None` if nothing else was. The log escaped their control characters.
    pub(crate) fn tail(&self, listed: &[String]) -> Option<String> {
        let mut file = std::fs::File::open(&self.path).ok()?;
        let len = file.metadata().ok()?.len();
        let from = if self.from > len { 0 } else { self.from };
        let start = from.max(len.saturating_sub(TAIL_BYTES));
        file.seek(SeekFrom::Start(start)).ok()?;
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes).ok()?;
        let text = String::from_utf8_lossy(&bytes);
        // A cut at `start` leaves a partial first line: skip it.
        // The host logs a message of several lines a line each.
        let listed: Vec<String> = listed
            .iter()
            .flat_map(|l| l.lines())
            .filter(|l| !l.trim().is_empty())
            .map(|l| format!(": {}", zot_host::terminal_text::one_line(l)))
            .collect();
        let repeats = |line: &str| {
            line.contains(" [zot] ") && listed.iter().any(|l| line.ends_with(l.as_str()))
        };
        let lines: Vec<&str> = text
            .lines()
            .skip(usize::from(start > from))
            .filter(|line| !repeats(line))
            .collect();
        let tail = lines[lines.len().saturating_sub(TAIL_LINES)..].join("\n");
        (!tail.trim().is_empty()).then_some(tail)
    }
}

/// `tail` for people: a heading, then each line after `  | `. Print it with
/// `say!`/`esay!`.
pub(crate) fn shown(tail: &str) -> String {
    let mut out = String::from("this run's log (its stderr and the host's notes), last lines:");
    for line in tail.lines() {
        out.push_str("\n  | ");
        out.push_str(line);
    }
    out
}
