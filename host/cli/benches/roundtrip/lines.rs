//! JSON-lines round trips with a child process: one helper for the pipe floor, the relay,
//! the sidecar and `zot mcp`, which differ only in their request and answer.

use crate::interleave::Row;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

/// A child process spoken to in lines on its stdin and stdout. Dropping it closes its
/// stdin and waits for it to exit.
pub struct Lines {
    child: Child,
    stdin: Option<ChildStdin>,
    out: BufReader<ChildStdout>,
    line: Vec<u8>,
}

impl Lines {
    pub fn spawn(command: &mut Command) -> Lines {
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        Lines {
            stdin: child.stdin.take(),
            out: BufReader::new(child.stdout.take().unwrap()),
            child,
            line: Vec::with_capacity(4096),
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Writes `bytes` (whole lines) with one `write_all`.
    pub fn send(&mut self, bytes: &[u8]) {
        self.stdin.as_mut().unwrap().write_all(bytes).unwrap();
    }

    /// Reads lines until one contains `needle` (a byte search, no JSON parse); returns it.
    pub fn until(&mut self, needle: &[u8]) -> &[u8] {
        loop {
            self.line.clear();
            let read = self.out.read_until(b'\n', &mut self.line).unwrap();
            assert!(read > 0, "end of output before {:?}", show(needle));
            if contains(&self.line, needle) {
                return &self.line;
            }
        }
    }
}

impl Drop for Lines {
    fn drop(&mut self) {
        drop(self.stdin.take());
        let _ = self.child.wait();
    }
}

pub fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

fn show(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A latency row over [`Lines`]: `request(id, i)` is encoded before the clock starts and
/// written at once; the clock stops at the first line holding `"id":"<id>"`, which
/// `check` then asserts is a correct answer.
pub struct Piped {
    lines: Lines,
    request: fn(&str, u64) -> String,
    check: fn(&[u8]),
    next: u64,
}

impl Piped {
    pub fn new(lines: Lines, request: fn(&str, u64) -> String, check: fn(&[u8])) -> Piped {
        Piped {
            lines,
            request,
            check,
            next: 0,
        }
    }
}

impl Row for Piped {
    fn run(&mut self, n: usize) -> Vec<Duration> {
        let mut samples = Vec::with_capacity(n);
        for _ in 0..n {
            let i = self.next;
            self.next += 1;
            let id = format!("r{i}");
            let request = (self.request)(&id, i);
            let needle = format!("\"id\":\"{id}\"");
            let t = Instant::now();
            self.lines.send(request.as_bytes());
            let answer = self.lines.until(needle.as_bytes());
            samples.push(t.elapsed());
            (self.check)(answer);
        }
        samples
    }
}

/// A `zot host` sidecar loading only `exts`, with ZOT_HOME `home`, once it said `host_ready`.
pub fn sidecar(home: &Path, exts: &[PathBuf]) -> Lines {
    let mut command = Command::new(env!("CARGO_BIN_EXE_zot"));
    command.args(["host", "--only", "--zot-home"]).arg(home);
    for e in exts {
        command.arg("--ext").arg(e);
    }
    let mut lines = Lines::spawn(&mut command);
    lines.until(b"\"type\":\"host_ready\"");
    lines
}
