//! What the host is to an MCP server: a client that asks nothing of it (no roots,
//! sampling or elicitation), re-lists its tools when told they changed, and writes its
//! log messages into the extension's log.

use crate::log::ExtLog;
#[allow(deprecated)]
use rmcp::model::LoggingMessageNotificationParam;
use rmcp::model::{
    ClientCapabilities, ClientConfig, Implementation, ProgressNotificationParam, ProtocolVersion,
};
use rmcp::service::{NotificationContext, RoleClient};
use std::sync::Arc;
use tokio::sync::{mpsc, Notify};

/// The longest log message of a server written to the log, in bytes.
const MAX_LOG_MESSAGE: usize = 4096;

pub(super) struct Client {
    /// Told on `notifications/tools/list_changed`.
    pub(super) relist: Arc<Notify>,
    pub(super) log: ExtLog,
    /// Where `notifications/progress` go, never waiting: one that finds no room is
    /// dropped.
    pub(super) progress: mpsc::Sender<ProgressNotificationParam>,
}

impl rmcp::ClientHandler for Client {
    /// The `initialize` handshake's newest revision (2026-07-28 has none): its
    /// notifications (`list_changed`, log messages) come on the one stdio stream.
    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("zot", env!("CARGO_PKG_VERSION")),
        )
        .with_protocol_version(ProtocolVersion::LATEST_WITH_INITIALIZE)
    }

    async fn on_tool_list_changed(&self, _: NotificationContext<RoleClient>) {
        self.relist.notify_one();
    }

    async fn on_progress(
        &self,
        progress: ProgressNotificationParam,
        _: NotificationContext<RoleClient>,
    ) {
        let _ = self.progress.try_send(progress);
    }

    // Servers of MCP 2025-11-25 and before log this way (SEP-2577 deprecates it).
    #[allow(deprecated)]
    async fn on_logging_message(
        &self,
        message: LoggingMessageNotificationParam,
        _: NotificationContext<RoleClient>,
    ) {
        let level = serde_json::to_value(message.level)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default();
        let mut text = match message.data {
            serde_json::Value::String(s) => s,
            other => other.to_string(),
        };
        crate::util::cut(&mut text, MAX_LOG_MESSAGE);
        let logger = message.logger.map(|l| format!("{l}: ")).unwrap_or_default();
        self.log.guest(&level, &format!("{logger}{text}"));
    }
}
