//! The MCP server's side of the wire: JSON-RPC messages as lines over the connection of
//! the program or component that is the server, for rmcp's client.

use crate::budget::Budget;
use crate::log::ExtLog;
use crate::transport::{Inbound, Outbound};
use rmcp::service::{RoleClient, RxJsonRpcMessage, TxJsonRpcMessage};
use std::sync::Arc;
use tokio::sync::Notify;

/// rmcp's [`rmcp::transport::Transport`] over a [`crate::transport::Connection`]'s
/// queues: each message one line out, each line in one message.
pub(super) struct Wire {
    pub(super) to_server: crate::transport::FrameSink,
    pub(super) from_server: crate::transport::Lines,
    /// What each message may take of a sandboxed server's time (a tool call's).
    pub(super) budget: Budget,
    pub(super) log: ExtLog,
    /// Told once the server's output has ended.
    pub(super) ended: Arc<Notify>,
}

/// The server's input is closed: it exited, or is being stopped.
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
        let (to_server, budget) = (self.to_server.clone(), self.budget);
        async move {
            let frame = Outbound {
                line: zot_protocol::encode(&item),
                budget,
                room: None,
            };
            to_server.send(frame).await.map_err(|_| Closed)
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        loop {
            let Some(item) = self.from_server.recv().await else {
                self.ended.notify_one();
                return None;
            };
            match item {
                Inbound::Line(line, _room) => match serde_json::from_slice(&line) {
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
                        serde_json::json!({"jsonrpc": "2.0", "id": id,
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
