//! `zot mcp` over stdio: rmcp's line transport, with what it writes bounded. Every
//! message goes into an [`Outbox`] that a task writes to stdout; nothing waits for the
//! client. Its next request is not read while [`REQUESTS_IN_FLIGHT`] are unanswered;
//! the host's notifications are not taken while [`OUTPUT_BYTES`] wait; a client that
//! leaves [`CUT_OFF_BYTES`] unread is cut off: said on stderr, its input no longer read,
//! and `zot mcp` ends (status 1).

use crate::output::outbox::{Outbox, OUTPUT_BYTES};
use rmcp::model::{ClientNotification, JsonRpcMessage, RequestId};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::async_rw::AsyncRwTransport;
use rmcp::transport::Transport;
use rmcp::RoleServer;
use std::collections::hash_map::RandomState;
use std::collections::HashMap;
use std::hash::BuildHasher as _;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use tokio::io::AsyncWrite;
use tokio::sync::Notify;

/// How many bytes of output may wait unread before the client is cut off (one message
/// alone may be larger).
pub(super) const CUT_OFF_BYTES: usize = 4 * OUTPUT_BYTES;

/// How many of the client's requests may be unanswered before its next line waits.
const REQUESTS_IN_FLIGHT: usize = 2 * super::CALLS_IN_FLIGHT;

/// What both halves share: the output, the requests unanswered, whether the client was
/// cut off.
#[derive(Default)]
pub(super) struct Shared {
    out: Outbox,
    /// The requests unanswered, by a keyed hash of their id (an id may be long).
    pending: Mutex<HashMap<u64, usize>>,
    ids: RandomState,
    /// A request was answered or dropped, or the client was cut off.
    changed: Notify,
    cut: AtomicBool,
}

impl Shared {
    /// Whether the client was cut off for not reading.
    pub(super) fn was_cut_off(&self) -> bool {
        self.cut.load(Ordering::SeqCst)
    }

    /// Writes the output to `stdout` until it is closed or a write fails.
    pub(super) async fn write_to(&self, stdout: impl AsyncWrite + Unpin) {
        self.out.write_to(stdout).await;
    }

    /// No more output: the writer ends once what waits is written.
    pub(super) fn close(&self) {
        self.out.close();
    }

    fn cut_off(&self, waiting: usize) {
        if !self.cut.swap(true, Ordering::SeqCst) {
            esay!(
                "zot mcp: the client does not read its output: {waiting} bytes wait unread \
                 (at most {} MiB may): cut off",
                CUT_OFF_BYTES >> 20
            );
        }
        self.changed.notify_waiters();
    }

    /// Returns once the client is cut off.
    async fn cut(&self) {
        loop {
            let changed = self.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            if self.was_cut_off() {
                return;
            }
            changed.await;
        }
    }

    fn key(&self, id: &RequestId) -> u64 {
        self.ids.hash_one(id.to_string())
    }

    fn opened(&self, id: &RequestId) {
        *self
            .pending
            .lock()
            .unwrap()
            .entry(self.key(id))
            .or_default() += 1;
    }

    fn closed(&self, id: &RequestId) {
        let key = self.key(id);
        let mut pending = self.pending.lock().unwrap();
        if let Some(n) = pending.get_mut(&key) {
            *n -= 1;
            if *n == 0 {
                pending.remove(&key);
            }
            drop(pending);
            self.changed.notify_waiters();
        }
    }

    /// Waits until fewer than [`REQUESTS_IN_FLIGHT`] are unanswered, so that the next
    /// line may be read. False once the client is cut off.
    async fn room(&self) -> bool {
        loop {
            let changed = self.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            if self.was_cut_off() {
                return false;
            }
            if self.pending.lock().unwrap().values().sum::<usize>() < REQUESTS_IN_FLIGHT {
                return true;
            }
            changed.await;
        }
    }

    /// Waits until fewer than [`OUTPUT_BYTES`] wait for the client: notifications are
    /// taken from the host only then (it drops the oldest meanwhile).
    pub(super) async fn room_for_notes(&self) {
        self.out.room().await;
    }
}

/// stdout as rmcp writes it: into the outbox, refused past [`CUT_OFF_BYTES`].
struct ToClient(Arc<Shared>);

impl AsyncWrite for ToClient {
    fn poll_write(
        self: Pin<&mut Self>,
        _: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        match self.0.out.try_push(buf.to_vec(), CUT_OFF_BYTES) {
            Ok(()) => Poll::Ready(Ok(buf.len())),
            Err(waiting) => {
                self.0.cut_off(waiting);
                Poll::Ready(Err(std::io::ErrorKind::BrokenPipe.into()))
            }
        }
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

type Lines = AsyncRwTransport<RoleServer, crate::output::std_streams::Input, ToClient>;

/// rmcp's transport over stdin and the outbox.
pub(super) struct Stdio {
    lines: Lines,
    shared: Arc<Shared>,
}

impl Stdio {
    /// Reads `input` in lines of at most `max_line` bytes.
    pub(super) fn new(
        input: crate::output::std_streams::Input,
        max_line: usize,
        shared: Arc<Shared>,
    ) -> Stdio {
        let lines =
            AsyncRwTransport::new(input, ToClient(shared.clone())).with_max_line_length(max_line);
        Stdio { lines, shared }
    }
}

impl Transport<RoleServer> for Stdio {
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl std::future::Future<Output = Result<(), Self::Error>> + Send + 'static {
        let answered = match &item {
            JsonRpcMessage::Response(r) => Some(r.id.clone()),
            JsonRpcMessage::Error(e) => e.id.clone(),
            _ => None,
        };
        let shared = self.shared.clone();
        let send = self.lines.send(item);
        async move {
            let sent = send.await;
            if let Some(id) = answered {
                shared.closed(&id);
            }
            sent
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        if !self.shared.room().await {
            return None;
        }
        let message = tokio::select! {
            message = self.lines.receive() => message?,
            () = self.shared.cut() => return None,
        };
        match &message {
            JsonRpcMessage::Request(r) => self.shared.opened(&r.id),
            // A cancelled request is not answered (MCP's rule).
            JsonRpcMessage::Notification(n) => {
                if let ClientNotification::CancelledNotification(c) = &n.notification {
                    if let Some(id) = &c.params.request_id {
                        self.shared.closed(id);
                    }
                }
            }
            _ => {}
        }
        Some(message)
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.lines.close().await
    }
}
