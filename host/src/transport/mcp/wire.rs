//! The MCP server's side of the wire: JSON-RPC messages as lines over the connection of
//! the program or component that is the server, for rmcp's client. Nothing here waits
//! for the server to read: what waits for it is bounded in bytes ([`TO_SERVER_BYTES`]),
//! and a server that leaves that much unread is stopped. Its requests (`ping`,
//! sampling, elicitation, roots) are answered here as they are read, none held; its
//! progress of a call waiting is handed on here too, so that it is on its way before
//! the call's answer is read.

use crate::budget::Budget;
use crate::log::ExtLog;
use crate::transport::{Control, FrameSink, Inbound, Lines, Outbound, OUTBOUND_BYTES};
use rmcp::model::{
    JsonRpcMessage, JsonRpcNotification, JsonRpcRequest, ProgressNotificationParam,
    ServerNotification, ServerRequest,
};
use rmcp::service::{RoleClient, RxJsonRpcMessage, TxJsonRpcMessage};
use serde::Serialize;
use serde_json::json;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use tokio::sync::{mpsc, Notify, Semaphore};

/// How many bytes of messages may wait for the server to read them (one alone may be
/// larger). A message that finds no room stops the server: it does not read its input.
pub const TO_SERVER_BYTES: usize = OUTBOUND_BYTES;

/// The answer to a request for what the host does not offer.
const NOT_OFFERED: &str =
    "Method not found: the host offers no sampling, elicitation or roots (it declares no \
     client capabilities)";

/// rmcp's [`rmcp::transport::Transport`] over a [`crate::transport::Connection`]'s
/// queues: each message one line out, each line in one message.
pub(super) struct Wire {
    to_server: ToServer,
    from_server: Lines,
    log: ExtLog,
    /// Told once the server's output has ended.
    ended: Arc<Notify>,
    /// Where the progress of a call goes, with the core's id of the call; one that
    /// finds no room is dropped.
    progress: mpsc::Sender<(String, ProgressNotificationParam)>,
}

impl Wire {
    pub(super) fn new(
        to_server: ToServer,
        from_server: Lines,
        log: ExtLog,
        ended: Arc<Notify>,
        progress: mpsc::Sender<(String, ProgressNotificationParam)>,
    ) -> Wire {
        Wire {
            to_server,
            from_server,
            log,
            ended,
            progress,
        }
    }
}

/// Messages to the server, never waiting: each holds its share of
/// [`TO_SERVER_BYTES`] until the server has read it.
pub(super) struct ToServer {
    sink: FrameSink,
    room: Arc<Semaphore>,
    /// What each message may take of a sandboxed server's time (a tool call's).
    budget: Budget,
    control: Arc<dyn Control>,
    log: ExtLog,
    /// Set once the server was stopped for not reading.
    stopped: AtomicBool,
}

impl ToServer {
    pub(super) fn new(
        sink: FrameSink,
        budget: Budget,
        control: Arc<dyn Control>,
        log: ExtLog,
    ) -> ToServer {
        ToServer {
            sink,
            room: Arc::new(Semaphore::new(TO_SERVER_BYTES)),
            budget,
            control,
            log,
            stopped: AtomicBool::new(false),
        }
    }

    /// Queues `message` for the server, or, if what waits for it leaves no room, stops
    /// the server (once, saying why in its log). Fails once its input is closed.
    fn send(&self, message: &impl Serialize) -> Result<(), Closed> {
        let line = zot_protocol::encode(message);
        let share = line.as_bytes().len().clamp(1, TO_SERVER_BYTES) as u32;
        let Ok(room) = self.room.clone().try_acquire_many_owned(share) else {
            self.not_reading();
            return Err(Closed);
        };
        let frame = Outbound {
            line,
            budget: self.budget,
            room: Some(room),
        };
        match self.sink.try_send(frame) {
            Ok(()) => Ok(()),
            Err(tokio::sync::mpsc::error::TrySendError::Full(_)) => {
                self.not_reading();
                Err(Closed)
            }
            Err(tokio::sync::mpsc::error::TrySendError::Closed(_)) => Err(Closed),
        }
    }

    fn not_reading(&self) {
        if self.stopped.swap(true, Ordering::SeqCst) {
            return;
        }
        let waiting = TO_SERVER_BYTES - self.room.available_permits();
        self.log.warn(&format!(
            "the MCP server does not read its input: {waiting} bytes of messages wait for it \
             (at most {} MiB may): stopped",
            TO_SERVER_BYTES >> 20
        ));
        self.control.kill();
    }
}

/// The server's input is closed: it exited, is being stopped, or does not read.
#[derive(Debug)]
pub(super) struct Closed;

impl std::fmt::Display for Closed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the MCP server's input is closed")
    }
}

impl std::error::Error for Closed {}

impl rmcp::transport::Transport<RoleClient> for Wire {
    type Error = Closed;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl std::future::Future<Output = Result<(), Closed>> + Send + 'static {
        std::future::ready(self.to_server.send(&super::call::with_call_token(item)))
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        loop {
            let Some(item) = self.from_server.recv().await else {
                self.ended.notify_one();
                return None;
            };
            match item {
                Inbound::Line(line, _room) => match serde_json::from_slice(&line) {
                    Ok(JsonRpcMessage::Request(request)) => self.answer(request),
                    Ok(JsonRpcMessage::Notification(JsonRpcNotification {
                        notification: ServerNotification::ProgressNotification(progress),
                        ..
                    })) => self.progressed(progress.params),
                    Ok(message) => return Some(message),
                    Err(e) => self.log.warn(&format!(
                        "skipped a line that is no MCP message ({e}): {}",
                        crate::log::preview(&line)
                    )),
                },
                Inbound::Oversize { len, id } => {
                    let why =
                        format!("skipped a {len}-byte line: longer than the frame size limit");
                    self.log.warn(&why);
                    // The request it answered fails now rather than at its timeout.
                    let error = id.map(|id| {
                        json!({"jsonrpc": "2.0", "id": id,
                            "error": {"code": -32603, "message": why}})
                    });
                    if let Some(message) = error.and_then(|e| serde_json::from_value(e).ok()) {
                        return Some(message);
                    }
                }
            }
        }
    }

    async fn close(&mut self) -> Result<(), Closed> {
        Ok(())
    }
}

impl Wire {
    /// Hands on the server's progress of a call (by its token, the core's id of it:
    /// [`super::call::with_call_token`]); any other is dropped.
    fn progressed(&self, progress: ProgressNotificationParam) {
        if let Some(id) = super::call::call_of(&progress.progress_token) {
            let _ = self.progress.try_send((id.to_string(), progress));
        }
    }

    /// Answers a request of the server's at once: `ping` with an empty result, any other
    /// (sampling, elicitation, roots, …) as a method the host does not offer (it
    /// declares no client capabilities). A server that does not read its answers is
    /// stopped by [`ToServer::send`].
    fn answer(&self, request: JsonRpcRequest<ServerRequest>) {
        let answer = match request.request {
            ServerRequest::PingRequest(_) => {
                json!({"jsonrpc": "2.0", "id": request.id, "result": {}})
            }
            // Sampling, roots, elicitation, a custom request, and any rmcp adds
            // (`ServerRequest` is non-exhaustive): refused.
            _ => json!({"jsonrpc": "2.0", "id": request.id,
                "error": {"code": -32601, "message": NOT_OFFERED}}),
        };
        let _ = self.to_server.send(&answer);
    }
}

/// A remote server's rmcp transport (Streamable HTTP), doing what [`Wire`] does on a
/// server's lines: each `tools/call` goes with the core's call id as its progress token
/// ([`super::call::with_call_token`]), the server's progress of a call is handed on as
/// it is read, and `ended` is told once the transport has no more to give. rmcp's
/// client answers the server's requests (`ping`; the rest as not offered, since the host
/// declares no client capabilities); nothing waits unread (each message is one request,
/// the transport bounds how many run at once).
pub(super) struct Tokened<T> {
    inner: T,
    ended: Arc<Notify>,
    progress: mpsc::Sender<(String, ProgressNotificationParam)>,
}

impl<T> Tokened<T> {
    pub(super) fn new(
        inner: T,
        ended: Arc<Notify>,
        progress: mpsc::Sender<(String, ProgressNotificationParam)>,
    ) -> Tokened<T> {
        Tokened {
            inner,
            ended,
            progress,
        }
    }
}

impl<T: rmcp::transport::Transport<RoleClient>> rmcp::transport::Transport<RoleClient>
    for Tokened<T>
{
    type Error = T::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl std::future::Future<Output = Result<(), T::Error>> + Send + 'static {
        self.inner.send(super::call::with_call_token(item))
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        loop {
            match self.inner.receive().await {
                None => {
                    self.ended.notify_one();
                    return None;
                }
                Some(JsonRpcMessage::Notification(JsonRpcNotification {
                    notification: ServerNotification::ProgressNotification(progress),
                    ..
                })) => {
                    if let Some(id) = super::call::call_of(&progress.params.progress_token) {
                        let _ = self.progress.try_send((id.to_string(), progress.params));
                    }
                }
                Some(message) => return Some(message),
            }
        }
    }

    fn close(&mut self) -> impl std::future::Future<Output = Result<(), T::Error>> + Send {
        self.inner.close()
    }
}
