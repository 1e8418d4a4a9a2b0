//! Native stdio: a reader thread turns stdin into lines, so a running handler can see a
//! `tool_cancel` without waiting for input.

use super::{Lines, Transport};
use std::io::Read;
use std::sync::mpsc::{self, Receiver};

/// Lines read ahead; the reader waits when this many are queued.
const READ_AHEAD: usize = 256;

pub(crate) struct Stdio {
    lines: Receiver<Vec<u8>>,
}

impl Stdio {
    pub(crate) fn start() -> Self {
        let (tx, lines) = mpsc::sync_channel(READ_AHEAD);
        std::thread::Builder::new()
            .name("zot-ext-stdin".into())
            .spawn(move || {
                let mut stdin = std::io::stdin().lock();
                let mut decoder = Lines::new();
                let mut buf = vec![0u8; 64 * 1024];
                loop {
                    let n = match stdin.read(&mut buf) {
                        Ok(0) => break,
                        Ok(n) => n,
                        Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                        Err(_) => break,
                    };
                    let mut input = &buf[..n];
                    while let Some(line) = decoder.next(&mut input) {
                        if tx.send(line).is_err() {
                            return;
                        }
                    }
                }
                if let Some(line) = decoder.finish() {
                    let _ = tx.send(line);
                }
            })
            .expect("spawn the stdin reader");
        Stdio { lines }
    }
}

impl Transport for Stdio {
    fn recv(&mut self) -> Option<Vec<u8>> {
        self.lines.recv().ok()
    }

    fn try_recv(&mut self) -> Option<Vec<u8>> {
        self.lines.try_recv().ok()
    }

    fn send(&mut self, line: &[u8]) -> std::io::Result<()> {
        super::write_line(line)
    }
}
