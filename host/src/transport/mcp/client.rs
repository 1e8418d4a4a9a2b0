//! What the host is to an MCP server: a client that asks nothing of it (no roots,
//! sampling or elicitation), re-lists its tools when told they changed, writes its log
//! messages into the extension's log (its progress is taken on the wire, `wire.rs`).

use crate::log::ExtLog;
#[allow(deprecated)]
use rmcp::model::LoggingMessageNotificationParam;
use rmcp::model::{ClientCapabilities, ClientConfig, Implementation, ProtocolVersion};
use rmcp::service::{NotificationContext, RoleClient};
use std::sync::Arc;
use tokio::sync::Notify;

/// The longest log message of a server written to the log, in bytes.
const MAX_LOG_MESSAGE: usize = 4096;

pub(super) struct Client {
    /// Told on `notifications/tools/list_changed`.
    pub(super) relist: Arc<Notify>,
    pub(super) log: ExtLog,
}

impl rmcp::ClientHandler for Client {
    /// What the host offers a server that does not speak 2026-07-28 (which has no
    /// `initialize`): that handshake's newest revision, whose notifications
    /// (`list_changed`, log messages) come on the one stream.
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
