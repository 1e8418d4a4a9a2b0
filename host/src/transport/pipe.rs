//! Byte-pipe pumps shared by transports whose extension reads frames from a pipe and
//! writes them to another (a subprocess; a WASI command component).

use super::{Inbound, LineGate, Outbound};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::{mpsc, Notify};
use zot_protocol::{leading_id, Line, LineDecoder};

/// After the extension is gone, how long its output may still drain (a grandchild that
/// escaped the process group could otherwise hold the pipe open forever).
const DRAIN_AFTER_EXIT: Duration = Duration::from_millis(200);
const READ_CHUNK: usize = 64 * 1024;

/// Writes queued frames into `pipe` until the queue closes, `close_input` is notified
/// (then what is queued is still written), or a write fails; then closes the pipe.
/// `before_write` sees each frame's budget just before it is written.
pub(crate) async fn write_frames<W: AsyncWrite + Unpin>(
    mut pipe: W,
    mut rx: mpsc::Receiver<Outbound>,
    close_input: Arc<Notify>,
    mut before_write: impl FnMut(crate::budget::Budget),
) {
    loop {
        tokio::select! {
            biased;
            frame = rx.recv() => match frame {
                Some(frame) => {
                    before_write(frame.budget);
                    if pipe.write_all(frame.line.as_bytes()).await.is_err() {
                        break;
                    }
                }
                None => break,
            },
            () = close_input.notified() => {
                while let Ok(frame) = rx.try_recv() {
                    before_write(frame.budget);
                    if pipe.write_all(frame.line.as_bytes()).await.is_err() {
                        break;
                    }
                }
                break;
            }
        }
    }
    let _ = pipe.shutdown().await;
}

/// Splits an input that has no process behind it (`zot host`'s and `zot ext run`'s
/// stdin) into size-capped lines, as an extension's output is split (`read_lines`),
/// until it ends. Needs a tokio runtime.
pub fn input_lines<R>(input: R, max_frame: usize) -> mpsc::Receiver<Inbound>
where
    R: AsyncRead + Unpin + Send + 'static,
{
    let (tx, rx) = mpsc::channel(super::INBOUND_QUEUE);
    // Nothing "exits" here: only the input's end stops the pump.
    tokio::spawn(read_lines(input, tx, max_frame, Arc::new(Notify::new())));
    rx
}

/// Splits `pipe` into size-capped lines for the core until EOF, or until `exited` is
/// notified and the output stopped draining. Of a line longer than `max_frame` no more
/// than `max_frame` bytes are held: it arrives as [`Inbound::Oversize`].
pub(crate) async fn read_lines<R: AsyncRead + Unpin>(
    mut pipe: R,
    tx: mpsc::Sender<Inbound>,
    max_frame: usize,
    exited: Arc<Notify>,
) {
    let mut decoder = LineDecoder::new(max_frame);
    let gate = LineGate::default();
    let mut buf = vec![0u8; READ_CHUNK];
    let deadline = tokio::time::sleep(Duration::MAX);
    tokio::pin!(deadline);
    let mut gone = false;
    loop {
        let n = tokio::select! {
            read = pipe.read(&mut buf) => match read {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            },
            () = exited.notified(), if !gone => {
                gone = true;
                deadline.as_mut().reset(tokio::time::Instant::now() + DRAIN_AFTER_EXIT);
                continue;
            }
            () = &mut deadline => break,
        };
        let mut input = &buf[..n];
        while let Some(line) = decoder.decode(&mut input) {
            if tx.send(admit(&gate, line).await).await.is_err() {
                return;
            }
        }
    }
    if let Some(line) = decoder.finish() {
        let _ = tx.send(admit(&gate, line).await).await;
    }
}

async fn admit(gate: &LineGate, line: Line) -> Inbound {
    match line {
        Line::Frame(bytes) => gate.admit(bytes).await,
        Line::Oversize { len, head } => Inbound::Oversize {
            len,
            id: leading_id(&head),
        },
    }
}
