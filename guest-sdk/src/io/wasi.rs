//! Stdio in the sandbox: a WASI command component's stdin is a `wasi:io` stream that can
//! be read without blocking, which is how a running handler sees a `tool_cancel`.

use super::{Lines, Transport};
use std::collections::VecDeque;
use wasi::io::streams::{InputStream, StreamError};

const CHUNK: u64 = 64 * 1024;

pub(crate) struct Stdio {
    stdin: InputStream,
    decoder: Lines,
    ready: VecDeque<Vec<u8>>,
    closed: bool,
}

impl Stdio {
    pub(crate) fn new() -> Self {
        Stdio {
            stdin: wasi::cli::stdin::get_stdin(),
            decoder: Lines::new(),
            ready: VecDeque::new(),
            closed: false,
        }
    }

    /// Reads once (waiting for data if `block`) and queues the complete lines.
    fn fill(&mut self, block: bool) {
        if self.closed {
            return;
        }
        let read = if block {
            self.stdin.blocking_read(CHUNK)
        } else {
            self.stdin.read(CHUNK)
        };
        match read {
            Ok(bytes) => {
                let mut input = &bytes[..];
                while let Some(line) = self.decoder.next(&mut input) {
                    self.ready.push_back(line);
                }
            }
            Err(StreamError::Closed | StreamError::LastOperationFailed(_)) => {
                self.closed = true;
                self.ready.extend(self.decoder.finish());
            }
        }
    }
}

impl Transport for Stdio {
    fn recv(&mut self) -> Option<Vec<u8>> {
        while self.ready.is_empty() && !self.closed {
            self.fill(true);
        }
        self.ready.pop_front()
    }

    fn try_recv(&mut self) -> Option<Vec<u8>> {
        if self.ready.is_empty() {
            self.fill(false);
        }
        self.ready.pop_front()
    }

    fn send(&mut self, line: &[u8]) -> std::io::Result<()> {
        super::write_line(line)
    }
}
