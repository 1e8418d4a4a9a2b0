//! What the host tells the embedding application: notes, panels, prompts, exits.
//! The sidecar prints these as id-less JSON lines (docs/sidecar.md).

use serde::Serialize;
use zot_protocol::{Empty, Notify, OpenPanel, PanelClose, PanelRender, Submit};

/// One notification for the embedding application.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum HostEvent {
    /// A note for the user.
    Notify {
        extension: String,
        #[serde(flatten)]
        frame: Notify,
    },
    /// Open a panel.
    OpenPanel {
        extension: String,
        #[serde(flatten)]
        frame: OpenPanel,
    },
    /// Redraw an open panel.
    PanelRender {
        extension: String,
        #[serde(flatten)]
        frame: PanelRender,
    },
    /// Close a panel.
    PanelClose {
        extension: String,
        #[serde(flatten)]
        frame: PanelClose,
    },
    /// Retract every note this extension pushed.
    ClearNotes {
        extension: String,
        #[serde(flatten)]
        frame: Empty,
    },
    /// Queue a user prompt (`text` already trimmed, never empty).
    Submit {
        extension: String,
        #[serde(flatten)]
        frame: Submit,
    },
    /// Run a slash command as if typed (`text` trimmed, starts with `/`).
    SubmitSlash {
        extension: String,
        #[serde(flatten)]
        frame: Submit,
    },
    /// The extension is gone; its commands and tools were removed.
    ExtensionExited {
        extension: String,
        reason: String,
        code: Option<i32>,
        signal: Option<i32>,
    },
    /// The extension's registrations changed (registered, shadowed, or removed).
    RegistryChanged { extension: String },
}
