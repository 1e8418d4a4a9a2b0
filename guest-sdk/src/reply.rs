//! What handlers return and receive: command responses, tool output, interception
//! verdicts, panels and events.

use base64::Engine as _;
use serde_json::{json, Map, Value};

/// The answer to a slash command (`command_response`).
#[derive(Debug, Clone, PartialEq)]
pub struct Response {
    action: Action,
    error: Option<String>,
}

#[derive(Debug, Clone, PartialEq)]
enum Action {
    Prompt(String),
    Insert(String),
    Display(String),
    OpenPanel(Panel),
    Noop,
}

impl Response {
    /// Submit `text` as a user message.
    pub fn prompt(text: impl Into<String>) -> Self {
        Self::of(Action::Prompt(text.into()))
    }

    /// Put `text` in the editor, unsent.
    pub fn insert(text: impl Into<String>) -> Self {
        Self::of(Action::Insert(text.into()))
    }

    /// Show `text` as a note: no model call, not in the transcript.
    pub fn display(text: impl Into<String>) -> Self {
        Self::of(Action::Display(text.into()))
    }

    /// Open `panel`; its keys and close arrive at [`Extension::on_panel_key`] and
    /// [`Extension::on_panel_close`](crate::Extension::on_panel_close).
    ///
    /// [`Extension::on_panel_key`]: crate::Extension::on_panel_key
    pub fn open_panel(panel: Panel) -> Self {
        Self::of(Action::OpenPanel(panel))
    }

    /// Do nothing.
    pub fn noop() -> Self {
        Self::of(Action::Noop)
    }

    /// Show `message` as an error (and do nothing else).
    pub fn error(message: impl Into<String>) -> Self {
        Self::noop().with_error(message)
    }

    /// Adds an error shown whatever the action.
    pub fn with_error(mut self, message: impl Into<String>) -> Self {
        self.error = Some(message.into());
        self
    }

    fn of(action: Action) -> Self {
        Response {
            action,
            error: None,
        }
    }

    pub(crate) fn into_frame(self, id: String) -> zot_protocol::CommandResponse {
        let mut frame = zot_protocol::CommandResponse {
            id,
            error: self.error,
            ..Default::default()
        };
        frame.action = match self.action {
            Action::Prompt(text) => {
                frame.prompt = Some(text);
                "prompt"
            }
            Action::Insert(text) => {
                frame.insert = Some(text);
                "insert"
            }
            Action::Display(text) => {
                frame.display = Some(text);
                "display"
            }
            Action::OpenPanel(panel) => {
                frame.open_panel = Some(panel.into());
                "open_panel"
            }
            Action::Noop => "noop",
        }
        .to_string();
        frame
    }
}

impl<E: std::fmt::Display> From<Result<Response, E>> for Response {
    fn from(result: Result<Response, E>) -> Self {
        result.unwrap_or_else(|e| Response::error(e.to_string()))
    }
}

/// The result of a tool call (`tool_result`): content blocks and whether it failed.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ToolOutput {
    content: Vec<Value>,
    is_error: bool,
    structured: Option<Value>,
}

impl ToolOutput {
    /// One text block.
    pub fn text(text: impl Into<String>) -> Self {
        ToolOutput::default().and_text(text)
    }

    /// One image block from raw bytes (base64-encoded here).
    pub fn image(mime_type: impl Into<String>, bytes: &[u8]) -> Self {
        ToolOutput::default().and_image(mime_type, bytes)
    }

    /// A failed call: one text block, `is_error` set. The model sees `message`.
    pub fn error(message: impl Into<String>) -> Self {
        ToolOutput {
            is_error: true,
            ..ToolOutput::text(message)
        }
    }

    /// Appends a text block.
    pub fn and_text(mut self, text: impl Into<String>) -> Self {
        self.content
            .push(json!({"type": "text", "text": text.into()}));
        self
    }

    /// Appends an image block from raw bytes.
    pub fn and_image(self, mime_type: impl Into<String>, bytes: &[u8]) -> Self {
        let data = base64::engine::general_purpose::STANDARD.encode(bytes);
        self.and_image_base64(mime_type, data)
    }

    /// Appends an image block whose data is already base64.
    pub fn and_image_base64(mut self, mime_type: impl Into<String>, data: String) -> Self {
        self.content
            .push(json!({"type": "image", "mime_type": mime_type.into(), "data": data}));
        self
    }

    /// Appends an audio block from raw bytes (base64-encoded here).
    pub fn and_audio(mut self, mime_type: impl Into<String>, bytes: &[u8]) -> Self {
        let data = base64::engine::general_purpose::STANDARD.encode(bytes);
        self.content
            .push(json!({"type": "audio", "mime_type": mime_type.into(), "data": data}));
        self
    }

    /// Appends an embedded resource of text: its `uri`, and its `mime_type` if known.
    pub fn and_resource_text(
        mut self,
        uri: impl Into<String>,
        mime_type: Option<&str>,
        text: impl Into<String>,
    ) -> Self {
        let mut resource = json!({"uri": uri.into(), "text": text.into()});
        if let Some(mime_type) = mime_type {
            resource["mime_type"] = json!(mime_type);
        }
        self.content
            .push(json!({"type": "resource", "resource": resource}));
        self
    }

    /// Appends an embedded resource of raw bytes (its `blob`, base64-encoded here).
    pub fn and_resource_blob(
        mut self,
        uri: impl Into<String>,
        mime_type: Option<&str>,
        bytes: &[u8],
    ) -> Self {
        let blob = base64::engine::general_purpose::STANDARD.encode(bytes);
        let mut resource = json!({"uri": uri.into(), "blob": blob});
        if let Some(mime_type) = mime_type {
            resource["mime_type"] = json!(mime_type);
        }
        self.content
            .push(json!({"type": "resource", "resource": resource}));
        self
    }

    /// Attaches `structured_content` (for tools that declare an `output_schema`).
    pub fn structured(mut self, value: Value) -> Self {
        self.structured = Some(value);
        self
    }

    /// Whether this result reports a failure.
    pub fn is_error(&self) -> bool {
        self.is_error
    }

    /// The content blocks.
    pub fn content(&self) -> &[Value] {
        &self.content
    }

    pub(crate) fn into_frame(self, id: String) -> zot_protocol::ToolResult {
        let mut extra = Map::new();
        if let Some(value) = self.structured {
            extra.insert("structured_content".into(), value);
        }
        zot_protocol::ToolResult {
            id,
            name: None,
            content: self.content,
            is_error: self.is_error,
            extra,
        }
    }
}

impl From<String> for ToolOutput {
    fn from(text: String) -> Self {
        ToolOutput::text(text)
    }
}

impl From<&str> for ToolOutput {
    fn from(text: &str) -> Self {
        ToolOutput::text(text)
    }
}

impl<T: Into<ToolOutput>, E: std::fmt::Display> From<Result<T, E>> for ToolOutput {
    fn from(result: Result<T, E>) -> Self {
        match result {
            Ok(output) => output.into(),
            Err(e) => ToolOutput::error(e.to_string()),
        }
    }
}

/// An interceptor's answer (`event_intercept_response`).
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    /// Let it through unchanged.
    Allow,
    /// Stop it. For a tool call the reason is the tool's error text for the model; for the
    /// other events it is shown to the user.
    Block(String),
    /// Tool calls: run the tool with these arguments instead (a JSON object).
    RewriteArgs(Value),
    /// Assistant messages: replace the text.
    ReplaceText(String),
}

impl Verdict {
    /// [`Verdict::Block`] with `reason`.
    pub fn block(reason: impl Into<String>) -> Self {
        Verdict::Block(reason.into())
    }

    pub(crate) fn into_frame(self, id: String) -> zot_protocol::EventInterceptResponse {
        let mut frame = zot_protocol::EventInterceptResponse {
            id,
            ..Default::default()
        };
        match self {
            Verdict::Allow => {}
            Verdict::Block(reason) => {
                frame.block = true;
                frame.reason = Some(reason);
            }
            Verdict::RewriteArgs(args) => frame.modified_args = Some(args),
            Verdict::ReplaceText(text) => frame.replace_text = Some(text),
        }
        frame
    }
}

/// A panel: a titled block of lines with a footer, opened by a command response or
/// [`Ctx::open_panel`](crate::Ctx::open_panel), redrawn with
/// [`Ctx::render_panel`](crate::Ctx::render_panel).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Panel {
    /// Chosen by the extension; keys and closes name it.
    pub id: String,
    /// The title line.
    pub title: String,
    /// The body.
    pub lines: Vec<String>,
    /// The footer, e.g. key help.
    pub footer: String,
}

impl Panel {
    /// An empty panel.
    pub fn new(id: impl Into<String>, title: impl Into<String>) -> Self {
        Panel {
            id: id.into(),
            title: title.into(),
            ..Default::default()
        }
    }

    /// Sets the body lines.
    pub fn lines<I: IntoIterator<Item = S>, S: Into<String>>(mut self, lines: I) -> Self {
        self.lines = lines.into_iter().map(Into::into).collect();
        self
    }

    /// Sets the footer.
    pub fn footer(mut self, footer: impl Into<String>) -> Self {
        self.footer = footer.into();
        self
    }
}

impl From<Panel> for zot_protocol::Panel {
    fn from(p: Panel) -> Self {
        zot_protocol::Panel {
            id: p.id,
            title: p.title,
            lines: p.lines,
            footer: p.footer,
            extra: Map::new(),
        }
    }
}

/// A lifecycle event (`event`): its name and fields.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    /// `session_start`, `turn_start`, `turn_end`, `tool_call` or `assistant_message`.
    pub name: String,
    /// The event's fields (`step`; `stop`, `error`; `tool_id`, `tool_name`, `tool_args`;
    /// `text`), plus any the host adds such as `session_id`.
    pub fields: Map<String, Value>,
}

impl Event {
    /// A field's value.
    pub fn get(&self, field: &str) -> Option<&Value> {
        self.fields.get(field)
    }

    /// A string field's value.
    pub fn str(&self, field: &str) -> Option<&str> {
        self.get(field).and_then(Value::as_str)
    }
}

/// A tool call the agent is about to make, as an interceptor sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCallEvent {
    /// The agent's id for the call.
    pub tool_id: String,
    /// The tool, e.g. `bash`.
    pub tool_name: String,
    /// Its arguments (after earlier interceptors' rewrites).
    pub tool_args: Value,
}

impl ToolCallEvent {
    pub(crate) fn from_fields(fields: &Map<String, Value>) -> Self {
        let text = |key: &str| {
            fields
                .get(key)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string()
        };
        ToolCallEvent {
            tool_id: text("tool_id"),
            tool_name: text("tool_name"),
            tool_args: fields.get("tool_args").cloned().unwrap_or(json!({})),
        }
    }

    /// A string argument, e.g. `arg("command")` of a `bash` call.
    pub fn arg(&self, name: &str) -> Option<&str> {
        self.tool_args.get(name).and_then(Value::as_str)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn responses_name_their_action_and_field() {
        let frame = Response::insert("x").into_frame("1".into());
        assert_eq!(
            (frame.action.as_str(), frame.insert.as_deref()),
            ("insert", Some("x"))
        );
        let frame = Response::error("bad").into_frame("2".into());
        assert_eq!(
            (frame.action.as_str(), frame.error.as_deref()),
            ("noop", Some("bad"))
        );
        let panel = Panel::new("p", "T").lines(["a", "b"]).footer("q: quit");
        let frame = Response::open_panel(panel).into_frame("3".into());
        let open = frame.open_panel.expect("open_panel");
        assert_eq!((open.lines.len(), open.footer.as_str()), (2, "q: quit"));
    }

    #[test]
    fn tool_output_blocks_and_errors() {
        let out = ToolOutput::text("a").and_image("image/png", b"\x89PNG");
        assert_eq!(out.content()[1]["data"], "iVBORw==");
        assert!(!out.is_error());
        let failed: ToolOutput = Err::<ToolOutput, _>("boom").into();
        assert!(failed.is_error());
        assert_eq!(failed.content()[0]["text"], "boom");
        let frame = ToolOutput::text("t")
            .structured(json!({"n": 1}))
            .into_frame("9".into());
        assert_eq!(frame.extra["structured_content"], json!({"n": 1}));
    }

    #[test]
    fn verdicts_fill_exactly_their_field() {
        let allow = Verdict::Allow.into_frame("1".into());
        assert!(!allow.block && allow.reason.is_none() && allow.modified_args.is_none());
        let block = Verdict::block("no").into_frame("1".into());
        assert!(block.block && block.reason.as_deref() == Some("no"));
        let rewrite = Verdict::RewriteArgs(json!({"a": 1})).into_frame("1".into());
        assert_eq!(rewrite.modified_args, Some(json!({"a": 1})));
        let replace = Verdict::ReplaceText("t".into()).into_frame("1".into());
        assert_eq!(replace.replace_text.as_deref(), Some("t"));
    }
}
