//! [`Ctx`]: what a handler can do besides returning its answer.

use crate::io::Transport;
use std::collections::{HashSet, VecDeque};
use std::path::Path;
use zot_protocol::{ExtFrame, HostFrame};

/// Frames set aside while a handler polls for `tool_cancel`; past this, polling stops
/// until the handler returns (the host's own queues bound the rest).
const MAX_BACKLOG: usize = 4096;

/// What the host said about itself in `hello_ack`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HostInfo {
    /// The protocol version (1).
    pub protocol_version: u32,
    /// The host's version.
    pub zot_version: String,
    /// The agent's model provider, e.g. `anthropic`.
    pub provider: String,
    /// The agent's model.
    pub model: String,
    /// The project directory (in the sandbox: where it is mounted, when granted).
    pub cwd: String,
    /// This extension's own directory.
    pub extension_dir: String,
    /// A directory for this extension's files (in the sandbox: `/data`).
    pub data_dir: String,
}

/// How a [`Ctx::notify`] note is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    /// Neutral.
    Info,
    /// Something worked.
    Success,
    /// Something to look at.
    Warn,
    /// Something failed.
    Error,
}

impl Level {
    fn as_str(self) -> &'static str {
        match self {
            Level::Info => "info",
            Level::Success => "success",
            Level::Warn => "warn",
            Level::Error => "error",
        }
    }
}

/// The connection to the host, lent to every handler.
pub struct Ctx {
    transport: Box<dyn Transport>,
    host: HostInfo,
    /// Lines read by [`Ctx::cancelled`] and not handled yet, in arrival order.
    backlog: VecDeque<Vec<u8>>,
    /// Tool calls the host abandoned (`tool_cancel` seen while polling).
    cancelled: HashSet<String>,
    /// The tool call being handled.
    call: Option<String>,
    /// Writing to the host failed: it is gone.
    closed: bool,
}

impl Ctx {
    pub(crate) fn new(transport: Box<dyn Transport>) -> Self {
        Ctx {
            transport,
            host: HostInfo::default(),
            backlog: VecDeque::new(),
            cancelled: HashSet::new(),
            call: None,
            closed: false,
        }
    }

    /// What the host said in `hello_ack` (empty until it arrives; handlers run after).
    pub fn host(&self) -> &HostInfo {
        &self.host
    }

    /// This extension's data directory (`hello_ack.data_dir`; `/data` in the sandbox).
    pub fn data_dir(&self) -> &Path {
        Path::new(&self.host.data_dir)
    }

    /// Shows a note to the user.
    pub fn notify(&mut self, level: Level, message: impl Into<String>) {
        self.send(ExtFrame::Notify(zot_protocol::Notify {
            level: level.as_str().into(),
            message: message.into(),
            extra: Default::default(),
        }));
    }

    /// Retracts every note this extension showed.
    pub fn clear_notes(&mut self) {
        self.send(ExtFrame::ClearNotes(Default::default()));
    }

    /// Writes a line to this extension's log (stderr, which the host appends to
    /// `$ZOT_HOME/logs/ext-<name>.log`).
    pub fn log(&self, message: impl std::fmt::Display) {
        eprintln!("{message}");
    }

    /// Opens a panel at any time (a command can also answer with
    /// [`Response::open_panel`](crate::Response::open_panel)).
    pub fn open_panel(&mut self, panel: crate::Panel) {
        self.send(ExtFrame::OpenPanel(zot_protocol::OpenPanel {
            panel: panel.into(),
            extra: Default::default(),
        }));
    }

    /// Redraws the open panel `panel.id`.
    pub fn render_panel(&mut self, panel: crate::Panel) {
        self.send(ExtFrame::PanelRender(zot_protocol::PanelRender {
            panel_id: panel.id,
            title: panel.title,
            lines: panel.lines,
            footer: panel.footer,
            extra: Default::default(),
        }));
    }

    /// Closes the panel `panel_id`.
    pub fn close_panel(&mut self, panel_id: impl Into<String>) {
        self.send(ExtFrame::PanelClose(zot_protocol::PanelClose {
            panel_id: panel_id.into(),
            extra: Default::default(),
        }));
    }

    /// Queues `text` as a user prompt.
    pub fn submit(&mut self, text: impl Into<String>) {
        self.send(ExtFrame::Submit(zot_protocol::Submit {
            text: text.into(),
            extra: Default::default(),
        }));
    }

    /// Runs a slash command (`text` starts with `/`) as if the user typed it.
    pub fn submit_slash(&mut self, text: impl Into<String>) {
        self.send(ExtFrame::SubmitSlash(zot_protocol::Submit {
            text: text.into(),
            extra: Default::default(),
        }));
    }

    /// Says how the tool call being handled is going (`tool_progress`): `progress` of
    /// `total` (either may be `None`) and a line of `text` (a status, or output so far).
    /// Outside a tool handler it does nothing. A host that does not know the frame
    /// ignores it; `zot mcp` sends it to an MCP client that asked for progress.
    pub fn progress(&mut self, progress: Option<f64>, total: Option<f64>, text: Option<&str>) {
        let Some(id) = self.call.clone() else { return };
        self.send(ExtFrame::ToolProgress(zot_protocol::ToolProgress {
            id,
            progress,
            total,
            text: text.map(str::to_string),
            extra: Default::default(),
        }));
    }

    /// The id of the tool call being handled, if a tool handler is running.
    pub fn call_id(&self) -> Option<&str> {
        self.call.as_deref()
    }

    /// Whether the host abandoned the tool call being handled (`tool_cancel`: it timed
    /// out or the user aborted). Never waits. A long tool should check it between steps
    /// and stop; its result is not sent once cancelled.
    pub fn cancelled(&mut self) -> bool {
        while self.backlog.len() < MAX_BACKLOG {
            let Some(line) = self.transport.try_recv() else {
                break;
            };
            if let Ok(HostFrame::ToolCancel(cancel)) = HostFrame::decode(&line) {
                self.cancelled.insert(cancel.id);
            }
            self.backlog.push_back(line);
        }
        self.call
            .as_ref()
            .is_some_and(|id| self.cancelled.contains(id))
    }

    // --- for the dispatcher -------------------------------------------------------

    pub(crate) fn set_host(&mut self, host: HostInfo) {
        self.host = host;
    }

    /// The next line from the host: set-aside ones first.
    pub(crate) fn next_line(&mut self) -> Option<Vec<u8>> {
        if self.closed {
            return None;
        }
        self.backlog.pop_front().or_else(|| self.transport.recv())
    }

    /// Starts handling tool call `id`; false if the host already abandoned it.
    pub(crate) fn begin_call(&mut self, id: &str) -> bool {
        if self.cancelled.contains(id) {
            return false;
        }
        self.call = Some(id.to_string());
        true
    }

    /// Ends the current tool call; true if it was cancelled meanwhile.
    pub(crate) fn end_call(&mut self) -> bool {
        self.call
            .take()
            .is_some_and(|id| self.cancelled.contains(&id))
    }

    /// A `tool_cancel` reached the dispatcher: the call it names is over either way.
    pub(crate) fn forget_cancel(&mut self, id: &str) {
        self.cancelled.remove(id);
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.closed
    }

    pub(crate) fn send(&mut self, frame: ExtFrame) {
        if self.closed {
            return;
        }
        let line = serde_json::to_vec(&frame).expect("frames serialize");
        if self.transport.send(&line).is_err() {
            self.closed = true;
        }
    }
}
