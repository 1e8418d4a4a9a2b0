//! The stdout of the sidecar and of `zot mcp`: bytes waiting for the client, bounded
//! by whoever fills it. Nothing here is dropped. The sidecar's notifications wait for
//! room before they are taken from the host (which drops the oldest when the client
//! falls behind), and its requests are not read while the client leaves their answers
//! unread; `zot mcp` is refused past a limit ([`Outbox::try_push`]) and cuts the
//! client off.

use std::collections::VecDeque;
use std::sync::Mutex;
use tokio::io::{AsyncWrite, AsyncWriteExt};
use tokio::sync::Notify;
use zot_protocol::Encoded;

/// How many bytes of output may wait for the client before the sidecar stops taking
/// notifications from the host and stops reading requests.
pub(crate) const OUTPUT_BYTES: usize = 16 * 1024 * 1024;

/// The least a line counts for, so that what it costs beside its bytes is counted too.
const LINE_WEIGHT: usize = 128;

fn weight(line: &[u8]) -> usize {
    line.len().max(LINE_WEIGHT)
}

/// Lines for stdout, in order.
#[derive(Default)]
pub(crate) struct Outbox {
    state: Mutex<State>,
    /// A line was queued, or the outbox closed.
    queued: Notify,
    /// The writer wrote a line.
    written: Notify,
}

#[derive(Default)]
struct State {
    lines: VecDeque<Vec<u8>>,
    /// Bytes queued or being written (each line at least [`LINE_WEIGHT`]).
    bytes: usize,
    closed: bool,
}

impl Outbox {
    /// Queues a line; never waits, never drops. Callers bound what they queue with
    /// [`Outbox::room`].
    pub(crate) fn push(&self, line: Encoded) {
        let _ = self.try_push(line.into_bytes(), usize::MAX);
    }

    /// Queues `bytes` unless some wait already and, with them, more than `limit` would;
    /// then gives back how many wait. Never waits.
    pub(crate) fn try_push(&self, bytes: Vec<u8>, limit: usize) -> Result<(), usize> {
        let mut st = self.state.lock().unwrap();
        if st.closed {
            return Ok(());
        }
        if st.bytes > 0 && st.bytes.saturating_add(weight(&bytes)) > limit {
            return Err(st.bytes);
        }
        st.bytes += weight(&bytes);
        st.lines.push_back(bytes);
        drop(st);
        self.queued.notify_one();
        Ok(())
    }

    /// Waits until less than [`OUTPUT_BYTES`] wait for the client.
    pub(crate) async fn room(&self) {
        loop {
            let written = self.written.notified();
            tokio::pin!(written);
            written.as_mut().enable();
            if self.state.lock().unwrap().bytes < OUTPUT_BYTES {
                return;
            }
            written.await;
        }
    }

    /// No more lines: the writer ends once it wrote those queued.
    pub(crate) fn close(&self) {
        self.state.lock().unwrap().closed = true;
        self.queued.notify_one();
    }

    /// Writes the lines to `out` in order, flushing whenever none is left, until the
    /// outbox is closed and empty or a write fails.
    pub(crate) async fn write_to(&self, out: impl AsyncWrite + Unpin) {
        let mut out = tokio::io::BufWriter::with_capacity(64 * 1024, out);
        loop {
            let (next, closed) = {
                let mut st = self.state.lock().unwrap();
                (st.lines.pop_front(), st.closed)
            };
            let Some(line) = next else {
                if out.flush().await.is_err() || closed {
                    return;
                }
                // A line may have been queued since the check: the permit is kept.
                self.queued.notified().await;
                continue;
            };
            let written = out.write_all(&line).await;
            self.state.lock().unwrap().bytes -= weight(&line);
            self.written.notify_waiters();
            if written.is_err() {
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::sync::Arc;
    use std::time::Duration;
    use zot_protocol::encode;

    #[test]
    fn try_push_takes_a_line_alone_whatever_its_size_and_refuses_past_the_limit() {
        let outbox = Outbox::default();
        assert_eq!(outbox.try_push(vec![b'x'; 1000], 500), Ok(()), "alone");
        assert_eq!(outbox.try_push(vec![b'y'; 10], 1000), Err(1000));
        // A short line counts for at least LINE_WEIGHT.
        assert_eq!(outbox.try_push(vec![b'z'; 1], 1000 + LINE_WEIGHT), Ok(()));
        assert_eq!(outbox.try_push(vec![b'z'; 1], usize::MAX), Ok(()));
        assert_eq!(outbox.state.lock().unwrap().bytes, 1000 + 2 * LINE_WEIGHT);
    }

    #[tokio::test]
    async fn room_waits_while_the_client_is_behind_and_nothing_is_lost() {
        let outbox = Arc::new(Outbox::default());
        let big = "x".repeat(OUTPUT_BYTES);
        outbox.push(encode(&json!({"big": big})));
        let waiting = tokio::time::timeout(Duration::from_millis(50), outbox.room()).await;
        assert!(waiting.is_err(), "room while 16 MiB wait");
        outbox.push(encode(&json!({"small": 1})));
        let (client, mut server) = tokio::io::duplex(1024);
        let writer = tokio::spawn({
            let outbox = outbox.clone();
            async move { outbox.write_to(client).await }
        });
        let reader = tokio::spawn(async move {
            let mut all = Vec::new();
            tokio::io::AsyncReadExt::read_to_end(&mut server, &mut all)
                .await
                .unwrap();
            all
        });
        outbox.room().await;
        outbox.close();
        writer.await.unwrap();
        let all = reader.await.unwrap();
        let lines: Vec<&[u8]> = all.split(|b| *b == b'\n').collect();
        assert_eq!(lines.len(), 3, "two lines and the end");
        assert_eq!(lines[1], br#"{"small":1}"#);
    }
}
