//! One extension's log file: the host's diagnostics about that extension, the guest's
//! own log lines and the extension's stderr, appended to `$ZOT_HOME/logs/ext-<name>.log`.
//!
//! Every line is `<time> [<source>] …` with `source` one of `zot` (the host), `guest`
//! (`host.log` of a component) or `stderr` (anything the extension wrote there), and
//! control characters (a newline too) and the other characters that can disguise text
//! escaped ([`crate::util::terminal_text::one_line`]), so an extension cannot pass for the host
//! or send escape sequences to whoever reads the log. A log is capped at [`MAX_LOG_BYTES`]: the line
//! that would pass the cap first renames it to `<path>.1` (replacing an older one).

use crate::util::terminal_text::one_line;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncBufReadExt, AsyncRead, BufReader};

/// How much of an offending line a diagnostic quotes.
const PREVIEW: usize = 160;

/// The size at which a log is rotated (10 MiB).
pub const MAX_LOG_BYTES: u64 = 10 << 20;

/// The longest stderr line written whole; the rest of a longer one is dropped.
pub const MAX_STDERR_LINE: usize = 64 << 10;

/// An append-only log shared by the host and the extension's stderr.
#[derive(Clone, Debug)]
pub struct ExtLog {
    path: PathBuf,
    file: Option<Arc<Mutex<Sink>>>,
    stderr: Arc<Stderr>,
}

/// The copy of an extension's stderr: its last non-blank line, and whether the copy
/// reached the end of the stream (the process closed it: it exited).
#[derive(Debug)]
struct Stderr {
    last: Mutex<Option<String>>,
    /// `Some(false)` while a copy runs, `Some(true)` once it ended; `None`: no copy.
    ended: tokio::sync::watch::Sender<Option<bool>>,
}

impl Default for Stderr {
    fn default() -> Self {
        Stderr {
            last: Mutex::new(None),
            ended: tokio::sync::watch::Sender::new(None),
        }
    }
}

/// The open file, how long it is and where it rotates (`None`: never).
#[derive(Debug)]
struct Sink {
    file: File,
    len: u64,
    cap: Option<u64>,
}

impl ExtLog {
    /// Opens (creating folders and the file as needed) `path` for appending, capped at
    /// [`MAX_LOG_BYTES`]. A log that cannot be opened degrades to tracing output only.
    pub fn open(path: &Path) -> ExtLog {
        Self::open_capped(path, MAX_LOG_BYTES)
    }

    fn open_capped(path: &Path, cap: u64) -> ExtLog {
        let file = path
            .parent()
            .map_or(Ok(()), std::fs::create_dir_all)
            .and_then(|()| append(path));
        let file = match file {
            Ok((file, len)) => Some(Arc::new(Mutex::new(Sink {
                file,
                len,
                cap: Some(cap),
            }))),
            Err(e) => {
                tracing::warn!("cannot open log {}: {e}", path.display());
                None
            }
        };
        ExtLog {
            path: path.to_path_buf(),
            file,
            stderr: Arc::default(),
        }
    }

    /// A log on this process's stderr (for `zot ext run`, whose diagnostics go there).
    pub fn stderr() -> ExtLog {
        use std::os::fd::AsFd;
        let file = std::io::stderr()
            .as_fd()
            .try_clone_to_owned()
            .ok()
            .map(|fd| {
                Arc::new(Mutex::new(Sink {
                    file: File::from(fd),
                    len: 0,
                    cap: None,
                }))
            });
        ExtLog {
            path: PathBuf::from("/dev/stderr"),
            file,
            stderr: Arc::default(),
        }
    }

    /// The log's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Copies what an extension writes to stderr into the log, a `[stderr]` line per
    /// line (one longer than `MAX_STDERR_LINE` is cut and marked), until `stderr` ends.
    pub async fn copy_stderr(self, stderr: impl AsyncRead + Unpin) {
        self.stderr.ended.send_replace(Some(false));
        self.copy_lines(stderr).await;
        self.stderr.ended.send_replace(Some(true));
    }

    /// The last non-blank line the extension wrote to stderr (escaped, its start only),
    /// once the copy of its stderr reached the end — waiting at most `within` for that
    /// (an exit is seen before the last bytes of its stderr are read); `None` if it
    /// wrote none, or nothing of its stderr is copied here.
    pub async fn last_stderr(&self, within: std::time::Duration) -> Option<String> {
        let mut ended = self.stderr.ended.subscribe();
        if ended.borrow().is_some() {
            let _ = tokio::time::timeout(within, ended.wait_for(|e| *e == Some(true))).await;
        }
        self.stderr.last.lock().unwrap().clone()
    }

    async fn copy_lines(&self, stderr: impl AsyncRead + Unpin) {
        let mut reader = BufReader::new(stderr);
        let mut line = Vec::new();
        let mut cut = false;
        loop {
            let buf = match reader.fill_buf().await {
                Ok([]) | Err(_) => break,
                Ok(buf) => buf,
            };
            let newline = buf.iter().position(|&b| b == b'\n');
            let part = &buf[..newline.unwrap_or(buf.len())];
            if !cut {
                let room = MAX_STDERR_LINE - line.len();
                line.extend_from_slice(&part[..part.len().min(room)]);
                if part.len() > room {
                    cut = true;
                    self.stderr_line(&line, true);
                }
            }
            let used = newline.map_or(buf.len(), |i| i + 1);
            reader.consume(used);
            if newline.is_some() {
                if !cut {
                    self.stderr_line(&line, false);
                }
                line.clear();
                cut = false;
            }
        }
        if !line.is_empty() && !cut {
            self.stderr_line(&line, false);
        }
    }

    fn stderr_line(&self, bytes: &[u8], cut: bool) {
        if !bytes.trim_ascii().is_empty() {
            let last = one_line(&preview(bytes.trim_ascii())).into_owned();
            *self.stderr.last.lock().unwrap() = Some(last);
        }
        let mut text = one_line(&String::from_utf8_lossy(bytes)).into_owned();
        if cut {
            text.push_str(&format!(" [cut at {MAX_STDERR_LINE} bytes]"));
        }
        self.append(&format!("{} [stderr] {text}\n", now()));
    }

    /// Writes a host diagnostic: `<time> [zot] <level>: <message>`, a line of the log
    /// for each of its lines (a `hint:` on a line of its own, not a `\x0a` in it).
    pub fn write(&self, level: &str, message: &str) {
        match message.is_empty() {
            true => self.line("zot", level, message),
            false => message
                .lines()
                .for_each(|line| self.line("zot", level, line)),
        }
    }

    /// Writes one line a sandboxed guest logged: `<time> [guest] <level>: <message>`.
    pub fn guest(&self, level: &str, message: &str) {
        self.line("guest", level, message);
    }

    fn line(&self, source: &str, level: &str, message: &str) {
        let message = one_line(message);
        self.append(&format!("{} [{source}] {level}: {message}\n", now()));
    }

    /// Appends one whole line, first rotating a log it would take past its cap.
    fn append(&self, line: &str) {
        let Some(Ok(mut sink)) = self.file.as_ref().map(|f| f.lock()) else {
            return;
        };
        let len = line.len() as u64;
        if sink
            .cap
            .is_some_and(|cap| sink.len > 0 && sink.len + len > cap)
        {
            if let Err(e) = self.rotate(&mut sink) {
                tracing::warn!("cannot rotate log {}: {e}", self.path.display());
            }
        }
        if sink.file.write_all(line.as_bytes()).is_ok() {
            sink.len += len;
        }
    }

    /// Renames the log to `<path>.1` and starts a new one.
    fn rotate(&self, sink: &mut Sink) -> std::io::Result<()> {
        let mut old = self.path.clone().into_os_string();
        old.push(".1");
        std::fs::rename(&self.path, old)?;
        (sink.file, sink.len) = append(&self.path)?;
        Ok(())
    }

    /// `write("info", …)`.
    pub fn info(&self, message: &str) {
        self.write("info", message);
    }

    /// `write("warn", …)`.
    pub fn warn(&self, message: &str) {
        self.write("warn", message);
    }
}

/// `path` opened for appending, and its length.
fn append(path: &Path) -> std::io::Result<(File, u64)> {
    let file = OpenOptions::new().create(true).append(true).open(path)?;
    let len = file.metadata()?.len();
    Ok((file, len))
}

fn now() -> humantime::Rfc3339Timestamp {
    humantime::format_rfc3339_millis(std::time::SystemTime::now())
}

/// The start of `bytes` as text, for quoting a bad line in a diagnostic.
pub fn preview(bytes: &[u8]) -> String {
    let cut = &bytes[..bytes.len().min(PREVIEW)];
    let mut s = String::from_utf8_lossy(cut).into_owned();
    if bytes.len() > PREVIEW {
        s.push_str(&format!("… ({} bytes)", bytes.len()));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fresh, empty folder for one test.
    fn scratch(test: &str) -> PathBuf {
        let dir = zot_test_fixtures::fresh_dir(&format!("log-{test}"));
        dir
    }

    fn read(path: &Path) -> String {
        std::fs::read_to_string(path).unwrap_or_default()
    }

    #[test]
    fn a_log_past_its_cap_is_rotated_once() {
        let dir = scratch("rotate");
        let path = dir.join("ext-a.log");
        let log = ExtLog::open_capped(&path, 200);
        for i in 0..20 {
            log.info(&format!("line {i:02} {}", "x".repeat(20)));
        }
        let (now, old) = (read(&path), read(&dir.join("ext-a.log.1")));
        assert!(now.len() <= 200 && old.len() <= 200, "{now}\n{old}");
        assert!(now.contains("line 19") && !now.contains("line 00"), "{now}");
        assert!(old.ends_with('\n') && !old.contains("line 00"), "{old}");
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 2);
        // Reopening counts what is already there.
        let before = read(&path).len();
        ExtLog::open_capped(&path, before as u64 + 10).info("one more line, too long");
        assert!(read(&path).contains("one more line") && read(&path).len() < before);
    }

    #[test]
    fn host_and_guest_lines_keep_control_characters_out() {
        let dir = scratch("escape");
        let path = dir.join("ext-b.log");
        let log = ExtLog::open(&path);
        log.guest(
            "info",
            "hi\n2026-01-01T00:00:00.000Z [zot] warn: forged\x1b[2J\u{9b}",
        );
        let text = read(&path);
        assert_eq!(text.lines().count(), 1, "{text}");
        assert!(
            text.ends_with(
                "[guest] info: hi\\x0a2026-01-01T00:00:00.000Z [zot] warn: forged\\x1b[2J\\u{9b}\n"
            ),
            "{text}"
        );
    }

    /// A host diagnostic with a hint: a line each, both the host's, the hint not a
    /// `\x0a` in the first; other control characters still escaped.
    #[test]
    fn a_host_message_of_several_lines_is_a_line_each() {
        let dir = scratch("lines");
        let path = dir.join("ext-d.log");
        let log = ExtLog::open(&path);
        log.warn("cannot start ./x: No such file\nhint: build it first\x1b[2J");
        let text = read(&path);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 2, "{text}");
        assert!(lines[0].ends_with(" [zot] warn: cannot start ./x: No such file"));
        assert!(lines[1].ends_with(" [zot] warn: hint: build it first\\x1b[2J"));
    }

    #[tokio::test]
    async fn stderr_lines_are_marked_escaped_and_cut() {
        let dir = scratch("stderr");
        let path = dir.join("ext-c.log");
        let log = ExtLog::open(&path);
        let mut stderr = b"2026-01-01T00:00:00.000Z [zot] warn: forged\n\x1b[31mred\r\n".to_vec();
        stderr.extend(vec![b'y'; MAX_STDERR_LINE + 10]);
        stderr.extend(b"\nlast words");
        log.copy_stderr(&stderr[..]).await;
        let text = read(&path);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 4, "{text}");
        assert!(lines
            .iter()
            .all(|l| l.split(' ').nth(1) == Some("[stderr]")));
        assert!(lines[0].ends_with(" [stderr] 2026-01-01T00:00:00.000Z [zot] warn: forged"));
        assert!(
            lines[1].ends_with(" [stderr] \\x1b[31mred\\x0d"),
            "{}",
            lines[1]
        );
        let cut = format!(
            " [stderr] {} [cut at {MAX_STDERR_LINE} bytes]",
            "y".repeat(MAX_STDERR_LINE)
        );
        assert!(lines[2].ends_with(&cut));
        assert!(lines[3].ends_with(" [stderr] last words"));
    }
}
