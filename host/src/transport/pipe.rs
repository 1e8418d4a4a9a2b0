//! Byte-pipe pumps shared by transports whose extension reads frames from a pipe and
//! writes them to another (a subprocess; a WASI command component).

use super::{Inbound, LineGate};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::sync::{mpsc, oneshot};
use zot_protocol::{leading_id, Line, LineDecoder};

/// After the extension is gone, how long its output may still drain (a grandchild that
/// escaped the process group could otherwise hold the pipe open forever).
const DRAIN_AFTER_EXIT: Duration = Duration::from_millis(200);
const READ_CHUNK: usize = 64 * 1024;

/// Splits an input that has no process behind it (`zot host`'s and `zot ext run`'s
/// stdin) into size-capped lines, as an extension's output is split ([`LineReader`]),
/// until it ends. Needs a tokio runtime.
pub fn input_lines<R>(input: R, max_frame: usize) -> LineReader
where
    R: AsyncRead + Unpin + Send + 'static,
{
    // Nothing "exits" here: only the input's end stops it.
    LineReader::new(input, max_frame, None)
}

/// Splits a pipe into size-capped lines, read as they are asked for (no task, no queue
/// in between: what waits is the pipe's own buffer and at most one read of
/// `READ_CHUNK` bytes), until EOF, or until `exited` fires (or its sender is gone) and
/// the output stopped draining. Of a line longer than `max_frame` no more than `max_frame` bytes are held:
/// it arrives as [`Inbound::Oversize`].
pub struct LineReader {
    pipe: Box<dyn AsyncRead + Unpin + Send>,
    decoder: LineDecoder,
    buf: Box<[u8]>,
    /// `buf[at..filled]` is read but not yet decoded.
    at: usize,
    filled: usize,
    exited: Option<oneshot::Receiver<()>>,
    /// Drains until then once `exited` fired.
    deadline: Option<tokio::time::Instant>,
    ended: bool,
}

impl LineReader {
    pub(crate) fn new(
        pipe: impl AsyncRead + Unpin + Send + 'static,
        max_frame: usize,
        exited: Option<oneshot::Receiver<()>>,
    ) -> LineReader {
        LineReader {
            pipe: Box::new(pipe),
            decoder: LineDecoder::new(max_frame),
            buf: vec![0u8; READ_CHUNK].into_boxed_slice(),
            at: 0,
            filled: 0,
            exited,
            deadline: None,
            ended: false,
        }
    }

    /// The next line; `None` once the pipe ended (or stopped draining after the exit).
    /// Cancel-safe: nothing read is lost when the future is dropped.
    pub async fn recv(&mut self) -> Option<Inbound> {
        loop {
            if self.at < self.filled {
                // Lines already read cost no wait: without this a reader of a full
                // buffer would keep its thread, and the tasks it wakes (queued behind
                // it, where no other thread takes them), for thousands of lines. Before
                // anything is taken, so a drop here loses nothing.
                tokio::task::consume_budget().await;
                let mut input = &self.buf[self.at..self.filled];
                let line = self.decoder.decode(&mut input);
                self.at = self.filled - input.len();
                match line {
                    Some(line) => return Some(inbound(line)),
                    None => continue,
                }
            }
            if self.ended {
                return self.decoder.finish().map(inbound);
            }
            let deadline = self.deadline;
            let drain = async {
                match deadline {
                    Some(at) => tokio::time::sleep_until(at).await,
                    None => std::future::pending().await,
                }
            };
            let (pipe, buf, exited) = (&mut self.pipe, &mut self.buf, &mut self.exited);
            // Polled only until it fires: then the deadline is set.
            let exited = async {
                match exited.as_mut() {
                    Some(exited) if deadline.is_none() => {
                        let _ = exited.await;
                    }
                    _ => std::future::pending().await,
                }
            };
            tokio::select! {
                biased;
                read = pipe.read(buf) => match read {
                    Ok(0) | Err(_) => self.ended = true,
                    Ok(n) => (self.at, self.filled) = (0, n),
                },
                () = exited => {
                    self.deadline = Some(tokio::time::Instant::now() + DRAIN_AFTER_EXIT);
                }
                () = drain => self.ended = true,
            }
        }
    }

    /// Passes every line into `tx`, each admitted by a [`LineGate`], until the pipe ends
    /// or `tx` closes: for a transport whose lines the core reads from a queue.
    pub(crate) async fn forward(mut self, tx: mpsc::Sender<Inbound>) {
        let gate = LineGate::default();
        while let Some(line) = self.recv().await {
            let line = match line {
                Inbound::Line(bytes, _) => gate.admit(bytes).await,
                oversize => oversize,
            };
            if tx.send(line).await.is_err() {
                return;
            }
        }
    }
}

/// `line` as the core receives it.
fn inbound(line: Line) -> Inbound {
    match line {
        Line::Frame(bytes) => Inbound::Line(bytes, None),
        Line::Oversize { len, head } => Inbound::Oversize {
            len,
            id: leading_id(&head),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;

    /// A reader whose lines are all read already still lets the other tasks of its thread
    /// run (found as a sidecar starving the task that passes its events on).
    #[tokio::test(flavor = "current_thread")]
    async fn reading_buffered_lines_lets_other_tasks_run() {
        let lines: String = (0..1000).map(|i| format!("{{\"n\":{i}}}\n")).collect();
        let mut reader = LineReader::new(std::io::Cursor::new(lines.into_bytes()), 1024, None);
        let ran = Arc::new(AtomicBool::new(false));
        tokio::spawn({
            let ran = ran.clone();
            async move { ran.store(true, Ordering::SeqCst) }
        });
        let mut before = 0;
        while let Some(Inbound::Line(..)) = reader.recv().await {
            if ran.load(Ordering::SeqCst) {
                break;
            }
            before += 1;
        }
        assert!(ran.load(Ordering::SeqCst), "the other task never ran");
        assert!(before < 1000, "it ran only after all {before} lines");
    }
}
