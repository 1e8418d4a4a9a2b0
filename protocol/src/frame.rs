//! Frame types of both directions, exactly as PROTOCOL.md names them.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::fmt;

/// Fields a frame carried that this crate does not model; written back out unchanged.
pub type Extra = Map<String, Value>;

fn empty_object() -> Value {
    Value::Object(Map::new())
}

/// `hello`: the first frame an extension sends.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Hello {
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub version: String,
    #[serde(default)]
    pub capabilities: Vec<String>,
    #[serde(flatten)]
    pub extra: Extra,
}

/// `register_command`: a slash command `/name`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RegisterCommand {
    pub name: String,
    #[serde(default)]
    pub description: String,
    #[serde(flatten)]
    pub extra: Extra,
}

/// `register_tool`: an LLM-callable tool. `extra` keeps `output_schema`, `namespace`,
/// `deferred`, `interactive` and anything newer.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RegisterTool {
    pub name: String,
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub schema: Value,
    #[serde(flatten)]
    pub extra: Extra,
}

/// `subscribe`: events to observe and events to intercept.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Subscribe {
    #[serde(default)]
    pub events: Vec<String>,
    #[serde(default)]
    pub intercept: Vec<String>,
    #[serde(flatten)]
    pub extra: Extra,
}

/// A panel as opened by `open_panel` or a command response.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Panel {
    #[serde(default)]
    pub id: String,
    #[serde(default)]
    pub title: String,
    #[serde(default)]
    pub lines: Vec<String>,
    #[serde(default)]
    pub footer: String,
    #[serde(flatten)]
    pub extra: Extra,
}

/// `command_response`: the reply to `command_invoked`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CommandResponse {
    pub id: String,
    #[serde(default)]
    pub action: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub insert: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub display: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_panel: Option<Panel>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    #[serde(flatten)]
    pub extra: Extra,
}

/// `tool_result`: the reply to `tool_call` (extension → host), or to `call_tool`
/// (host → extension, with `name`). `extra` keeps `structured_content`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ToolResult {
    pub id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Content blocks: `{"type":"text","text":…}` or `{"type":"image","mime_type":…,"data":…}`.
    #[serde(default)]
    pub content: Vec<Value>,
    #[serde(default)]
    pub is_error: bool,
    #[serde(flatten)]
    pub extra: Extra,
}

impl ToolResult {
    /// An error result with one text block.
    pub fn error(id: impl Into<String>, text: impl Into<String>) -> Self {
        ToolResult {
            id: id.into(),
            content: vec![serde_json::json!({"type": "text", "text": text.into()})],
            is_error: true,
            ..Default::default()
        }
    }
}

/// `tool_progress` (added): how a pending `tool_call` is going, sent before its
/// `tool_result`. Every field but `id` is optional: `progress` (rising) of `total`, and
/// `text` (a status line, or output so far).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ToolProgress {
    pub id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub progress: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    #[serde(flatten)]
    pub extra: Extra,
}

/// `event_intercept_response`: every field defaults to "allow, unchanged".
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct EventInterceptResponse {
    pub id: String,
    #[serde(default)]
    pub block: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub modified_args: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replace_text: Option<String>,
    #[serde(flatten)]
    pub extra: Extra,
}

/// `notify`: a one-way note for the user.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Notify {
    #[serde(default)]
    pub level: String,
    #[serde(default)]
    pub message: String,
    #[serde(flatten)]
    pub extra: Extra,
}

/// `panel_render`: redraw an open panel.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PanelRender {
    pub panel_id: String,
    #[serde(default)]
    pub title: String,
    #[serde(default)]
    pub lines: Vec<String>,
    #[serde(default)]
    pub footer: String,
    #[serde(flatten)]
    pub extra: Extra,
}

/// `panel_close` (both directions).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PanelClose {
    pub panel_id: String,
    #[serde(flatten)]
    pub extra: Extra,
}

/// `open_panel`: open a panel at any time.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct OpenPanel {
    pub panel: Panel,
    #[serde(flatten)]
    pub extra: Extra,
}

/// `submit` / `submit_slash`: queue a prompt or run a slash command.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Submit {
    #[serde(default)]
    pub text: String,
    #[serde(flatten)]
    pub extra: Extra,
}

/// `call_tool`: an extension asks the host to run a tool; `tool_call`: the host asks an
/// extension to run one of its tools.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    /// A JSON object; `{}` when none was given.
    #[serde(default = "empty_object")]
    pub args: Value,
    #[serde(flatten)]
    pub extra: Extra,
}

/// A frame with no fields of its own (`ready`, `shutdown`, `shutdown_ack`, `clear_notes`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Empty {
    #[serde(flatten)]
    pub extra: Extra,
}

/// Extension → host.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ExtFrame {
    Hello(Hello),
    RegisterCommand(RegisterCommand),
    RegisterTool(RegisterTool),
    Subscribe(Subscribe),
    Ready(Empty),
    CommandResponse(CommandResponse),
    ToolResult(ToolResult),
    EventInterceptResponse(EventInterceptResponse),
    Notify(Notify),
    PanelRender(PanelRender),
    PanelClose(PanelClose),
    ShutdownAck(Empty),
    OpenPanel(OpenPanel),
    ClearNotes(Empty),
    Submit(Submit),
    SubmitSlash(Submit),
    CallTool(ToolCall),
    ToolProgress(ToolProgress),
}

/// The `type` of every extension → host frame.
pub const EXT_FRAME_TYPES: &[&str] = &[
    "hello",
    "register_command",
    "register_tool",
    "subscribe",
    "ready",
    "command_response",
    "tool_result",
    "event_intercept_response",
    "notify",
    "panel_render",
    "panel_close",
    "shutdown_ack",
    "open_panel",
    "clear_notes",
    "submit",
    "submit_slash",
    "call_tool",
    "tool_progress",
];

/// `hello_ack`: the host's answer to `hello`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct HelloAck {
    pub protocol_version: u32,
    #[serde(default)]
    pub zot_version: String,
    #[serde(default)]
    pub provider: String,
    #[serde(default)]
    pub model: String,
    #[serde(default)]
    pub cwd: String,
    #[serde(default)]
    pub extension_dir: String,
    #[serde(default)]
    pub data_dir: String,
    #[serde(flatten)]
    pub extra: Extra,
}

/// `command_invoked`: the user ran `/name args`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CommandInvoked {
    pub id: String,
    pub name: String,
    #[serde(default)]
    pub args: String,
    #[serde(flatten)]
    pub extra: Extra,
}

/// `event` and `event_intercept`: `event` names the lifecycle event, `fields` are its
/// payload (`step`, `stop`, `error`, `tool_id`, `tool_name`, `tool_args`, `text`, and
/// pass-through fields such as `session_id`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Event {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    pub event: String,
    #[serde(flatten)]
    pub fields: Extra,
}

/// `panel_key`: a key pressed in an open panel.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PanelKey {
    pub panel_id: String,
    #[serde(default)]
    pub key: String,
    #[serde(default)]
    pub text: String,
    #[serde(flatten)]
    pub extra: Extra,
}

/// `panel_resize`: a panel's new size.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PanelResize {
    pub panel_id: String,
    #[serde(default)]
    pub width: u32,
    #[serde(default)]
    pub height: u32,
    #[serde(flatten)]
    pub extra: Extra,
}

/// `tool_cancel`: the host abandoned tool call `id`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ToolCancel {
    pub id: String,
    #[serde(flatten)]
    pub extra: Extra,
}

/// Host → extension.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum HostFrame {
    HelloAck(HelloAck),
    CommandInvoked(CommandInvoked),
    ToolCall(ToolCall),
    Event(Event),
    EventIntercept(Event),
    PanelKey(PanelKey),
    PanelResize(PanelResize),
    PanelClose(PanelClose),
    Shutdown(Empty),
    ToolCancel(ToolCancel),
    ToolResult(ToolResult),
}

/// The `type` of every host → extension frame.
pub const HOST_FRAME_TYPES: &[&str] = &[
    "hello_ack",
    "command_invoked",
    "tool_call",
    "event",
    "event_intercept",
    "panel_key",
    "panel_resize",
    "panel_close",
    "shutdown",
    "tool_cancel",
    "tool_result",
];

/// Why a line is not a usable frame. The connection always survives it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DecodeError {
    /// Not JSON at all.
    Malformed(String),
    /// JSON, but not an object with a string `type`.
    NoType,
    /// A `type` this protocol version does not define: log and skip.
    UnknownType(String),
    /// A known `type` whose fields do not fit.
    Invalid { frame_type: String, error: String },
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DecodeError::Malformed(e) => write!(f, "malformed JSON: {e}"),
            DecodeError::NoType => f.write_str("not a JSON object with a string \"type\""),
            DecodeError::UnknownType(t) => write!(f, "unknown frame type {t:?}"),
            DecodeError::Invalid { frame_type, error } => {
                write!(f, "invalid {frame_type:?} frame: {error}")
            }
        }
    }
}

impl std::error::Error for DecodeError {}

pub(crate) fn decode<T: for<'de> Deserialize<'de>>(
    line: &[u8],
    known: &[&str],
) -> Result<T, DecodeError> {
    serde_json::from_slice::<T>(line).map_err(|error| {
        // Slow path only: find out what kind of bad line this was.
        match serde_json::from_slice::<Value>(line) {
            Err(e) => DecodeError::Malformed(e.to_string()),
            Ok(value) => match value.get("type").and_then(Value::as_str) {
                None => DecodeError::NoType,
                Some(t) if !known.contains(&t) => DecodeError::UnknownType(t.to_string()),
                Some(t) => DecodeError::Invalid {
                    frame_type: t.to_string(),
                    error: error.to_string(),
                },
            },
        }
    })
}

impl ExtFrame {
    /// The frame's `type`.
    pub fn type_name(&self) -> &'static str {
        match self {
            ExtFrame::Hello(_) => "hello",
            ExtFrame::RegisterCommand(_) => "register_command",
            ExtFrame::RegisterTool(_) => "register_tool",
            ExtFrame::Subscribe(_) => "subscribe",
            ExtFrame::Ready(_) => "ready",
            ExtFrame::CommandResponse(_) => "command_response",
            ExtFrame::ToolResult(_) => "tool_result",
            ExtFrame::EventInterceptResponse(_) => "event_intercept_response",
            ExtFrame::Notify(_) => "notify",
            ExtFrame::PanelRender(_) => "panel_render",
            ExtFrame::PanelClose(_) => "panel_close",
            ExtFrame::ShutdownAck(_) => "shutdown_ack",
            ExtFrame::OpenPanel(_) => "open_panel",
            ExtFrame::ClearNotes(_) => "clear_notes",
            ExtFrame::Submit(_) => "submit",
            ExtFrame::SubmitSlash(_) => "submit_slash",
            ExtFrame::CallTool(_) => "call_tool",
            ExtFrame::ToolProgress(_) => "tool_progress",
        }
    }

    /// Decodes one line an extension sent.
    ///
    /// The replies (the frames every call waits for) are read in one pass: a reply with
    /// no field beyond those its struct names (the common shape) straight into it, any
    /// other reply by its `type` first and then the frame itself — instead of serde's
    /// buffering of a tagged enum (the whole frame copied into an intermediate tree, then
    /// read again). The result is the same; what neither pass reads falls back to the
    /// general decoder, for the same frame or the same error.
    pub fn decode(line: &[u8]) -> Result<Self, DecodeError> {
        if let Some(frame) = plain_reply(line) {
            return Ok(frame);
        }
        let reply = match frame_type(line).as_deref() {
            Some("tool_result") => {
                untagged(line, |r: &mut ToolResult| &mut r.extra).map(ExtFrame::ToolResult)
            }
            Some("command_response") => untagged(line, |r: &mut CommandResponse| &mut r.extra)
                .map(ExtFrame::CommandResponse),
            Some("event_intercept_response") => {
                untagged(line, |r: &mut EventInterceptResponse| &mut r.extra)
                    .map(ExtFrame::EventInterceptResponse)
            }
            _ => None,
        };
        match reply {
            Some(frame) => Ok(frame),
            None => decode(line, EXT_FRAME_TYPES),
        }
    }
}

/// A `tool_result` or an `event_intercept_response` with no field but those its struct
/// names (and `type`), in one pass; `None` for anything else. The mirrors below have
/// [`ToolResult`]'s and [`EventInterceptResponse`]'s fields and defaults, less `extra`
/// (which is then empty); a `type` of another kind stops the pass at once.
fn plain_reply(line: &[u8]) -> Option<ExtFrame> {
    #[derive(Deserialize)]
    enum ToolResultType {
        #[serde(rename = "tool_result")]
        Is,
    }
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct PlainToolResult {
        #[serde(rename = "type")]
        _type: ToolResultType,
        id: String,
        #[serde(default)]
        name: Option<String>,
        #[serde(default)]
        content: Vec<Value>,
        #[serde(default)]
        is_error: bool,
    }
    #[derive(Deserialize)]
    enum InterceptType {
        #[serde(rename = "event_intercept_response")]
        Is,
    }
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct PlainIntercept {
        #[serde(rename = "type")]
        _type: InterceptType,
        id: String,
        #[serde(default)]
        block: bool,
        #[serde(default)]
        reason: Option<String>,
        #[serde(default)]
        modified_args: Option<Value>,
        #[serde(default)]
        replace_text: Option<String>,
    }
    if let Ok(r) = serde_json::from_slice::<PlainToolResult>(line) {
        return Some(ExtFrame::ToolResult(ToolResult {
            id: r.id,
            name: r.name,
            content: r.content,
            is_error: r.is_error,
            extra: Extra::new(),
        }));
    }
    let r = serde_json::from_slice::<PlainIntercept>(line).ok()?;
    Some(ExtFrame::EventInterceptResponse(EventInterceptResponse {
        id: r.id,
        block: r.block,
        reason: r.reason,
        modified_args: r.modified_args,
        replace_text: r.replace_text,
        extra: Extra::new(),
    }))
}

/// The `type` of the frame on `line`, read without copying the rest; `None` if it is
/// no JSON object with exactly one string `type`.
fn frame_type(line: &[u8]) -> Option<std::borrow::Cow<'_, str>> {
    #[derive(Deserialize)]
    struct Tag<'a> {
        #[serde(rename = "type", borrow)]
        kind: std::borrow::Cow<'a, str>,
    }
    serde_json::from_slice::<Tag>(line).ok().map(|tag| tag.kind)
}

/// The frame on `line` read as `T`, a variant's own struct, without its `type` (which
/// its flattened `extra` would otherwise keep). `None` if it does not read.
fn untagged<T: for<'de> Deserialize<'de>>(
    line: &[u8],
    extra: impl Fn(&mut T) -> &mut Extra,
) -> Option<T> {
    let mut frame = serde_json::from_slice::<T>(line).ok()?;
    extra(&mut frame).shift_remove("type");
    Some(frame)
}

impl HostFrame {
    /// The frame's `type`.
    pub fn type_name(&self) -> &'static str {
        match self {
            HostFrame::HelloAck(_) => "hello_ack",
            HostFrame::CommandInvoked(_) => "command_invoked",
            HostFrame::ToolCall(_) => "tool_call",
            HostFrame::Event(_) => "event",
            HostFrame::EventIntercept(_) => "event_intercept",
            HostFrame::PanelKey(_) => "panel_key",
            HostFrame::PanelResize(_) => "panel_resize",
            HostFrame::PanelClose(_) => "panel_close",
            HostFrame::Shutdown(_) => "shutdown",
            HostFrame::ToolCancel(_) => "tool_cancel",
            HostFrame::ToolResult(_) => "tool_result",
        }
    }

    /// Decodes one line the host sent (used by guests and tests).
    pub fn decode(line: &[u8]) -> Result<Self, DecodeError> {
        decode(line, HOST_FRAME_TYPES)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn roundtrip_ext(v: Value) {
        let frame = ExtFrame::decode(v.to_string().as_bytes()).unwrap();
        assert_eq!(serde_json::to_value(&frame).unwrap(), v, "{frame:?}");
    }

    fn roundtrip_host(v: Value) {
        let frame = HostFrame::decode(v.to_string().as_bytes()).unwrap();
        assert_eq!(serde_json::to_value(&frame).unwrap(), v, "{frame:?}");
    }

    /// The replies' one-pass decoding gives what the tagged enum gives, or its error.
    #[test]
    fn replies_decode_in_one_pass_as_the_tagged_enum_does() {
        for line in [
            r#"{"type":"tool_result","id":"2","content":[{"type":"text","text":"x"}],"x":{"type":1}}"#,
            r#"{"id":"2","content":[],"is_error":true,"type":"tool_result","structured_content":{}}"#,
            r#"{"type":"tool_\u0072esult","id":"2","content":[]}"#,
            r#"{"type":"command_response","id":"1","action":"prompt","prompt":"p","y":null}"#,
            r#"{"type":"event_intercept_response","id":"3","block":true,"reason":"r"}"#,
            r#"{"type":"tool_result","type":"tool_result","id":"2","content":[]}"#,
            r#"{"type":"tool_result","id":2,"content":[]}"#,
            r#"{"type":"tool_result","content":[]}"#,
            r#"{"type":"event_intercept_response","id":"3","block":"yes"}"#,
            r#"{"type":"tool_result","id":"2","content":[]} trailing"#,
            r#"{"type":"tool_result","id":"2","content":[{"type":"text","text":"x"}],"is_error":false}"#,
            r#"{"id":"2","type":"tool_result","name":null,"is_error":true}"#,
            r#"{"type":"tool_result","id":"2","reason":null}"#,
            r#"{"type":"tool_result","id":"2","content":null}"#,
            r#"{"type":"event_intercept_response","id":"3","name":null}"#,
            r#"{"type":"event_intercept_response","id":"3","modified_args":null,"replace_text":"t"}"#,
            r#"{"type":"event_intercept_response","id":"3","block":true,"block":false}"#,
            r#"{"type":"notify","id":"3","message":"m","level":"info"}"#,
        ] {
            let tagged = decode::<ExtFrame>(line.as_bytes(), EXT_FRAME_TYPES);
            let one_pass = ExtFrame::decode(line.as_bytes());
            assert_eq!(format!("{one_pass:?}"), format!("{tagged:?}"), "{line}");
        }
    }

    #[test]
    fn every_extension_frame_roundtrips_with_extra_fields() {
        for v in [
            json!({"type":"hello","name":"w","version":"1","capabilities":["tools"],"x":1}),
            json!({"type":"register_command","name":"c","description":"d"}),
            json!({"type":"register_tool","name":"t","description":"d","schema":{"type":"object"},
                   "output_schema":{"type":"object"},"namespace":"n","deferred":true,"interactive":false}),
            json!({"type":"subscribe","events":["turn_start"],"intercept":["tool_call"]}),
            json!({"type":"ready"}),
            json!({"type":"command_response","id":"1","action":"open_panel",
                   "open_panel":{"id":"p","title":"T","lines":["a"],"footer":"f"},"error":"e"}),
            json!({"type":"command_response","id":"1","action":"prompt","prompt":"p"}),
            json!({"type":"tool_result","id":"2","content":[{"type":"text","text":"x"}],"is_error":false,
                   "structured_content":{"a":1}}),
            json!({"type":"event_intercept_response","id":"3","block":true,"reason":"r",
                   "modified_args":{"a":1},"replace_text":"t"}),
            json!({"type":"notify","level":"info","message":"m"}),
            json!({"type":"panel_render","panel_id":"p","title":"t","lines":["l"],"footer":"f"}),
            json!({"type":"panel_close","panel_id":"p"}),
            json!({"type":"shutdown_ack"}),
            json!({"type":"open_panel","panel":{"id":"p","title":"t","lines":[],"footer":""}}),
            json!({"type":"clear_notes"}),
            json!({"type":"submit","text":"go"}),
            json!({"type":"submit_slash","text":"/x"}),
            json!({"type":"call_tool","id":"4","name":"read","args":{"path":"a"}}),
        ] {
            roundtrip_ext(v);
        }
    }

    #[test]
    fn every_host_frame_roundtrips() {
        for v in [
            json!({"type":"hello_ack","protocol_version":1,"zot_version":"0.1.0","provider":"p","model":"m",
                   "cwd":"/","extension_dir":"/e","data_dir":"/d"}),
            json!({"type":"command_invoked","id":"1","name":"c","args":"a b"}),
            json!({"type":"tool_call","id":"2","name":"t","args":{}}),
            json!({"type":"event","event":"turn_start","step":1,"session_id":"s"}),
            json!({"type":"event_intercept","id":"3","event":"tool_call","tool_id":"t","tool_name":"bash",
                   "tool_args":{"command":"ls"}}),
            json!({"type":"panel_key","panel_id":"p","key":"enter","text":""}),
            json!({"type":"panel_resize","panel_id":"p","width":80,"height":24}),
            json!({"type":"panel_close","panel_id":"p"}),
            json!({"type":"shutdown"}),
            json!({"type":"tool_cancel","id":"2"}),
            json!({"type":"tool_result","id":"4","name":"read","content":[],"is_error":true}),
        ] {
            roundtrip_host(v);
        }
    }

    #[test]
    fn missing_args_default_to_empty_object() {
        let f = ExtFrame::decode(br#"{"type":"call_tool","id":"1","name":"t"}"#).unwrap();
        let ExtFrame::CallTool(call) = f else {
            panic!()
        };
        assert_eq!(call.args, json!({}));
    }

    #[test]
    fn bad_lines_are_classified() {
        assert!(matches!(
            ExtFrame::decode(b"not json"),
            Err(DecodeError::Malformed(_))
        ));
        assert_eq!(ExtFrame::decode(b"[1]"), Err(DecodeError::NoType));
        assert_eq!(ExtFrame::decode(br#"{"type":7}"#), Err(DecodeError::NoType));
        assert_eq!(
            ExtFrame::decode(br#"{"type":"teleport"}"#),
            Err(DecodeError::UnknownType("teleport".into()))
        );
        assert!(matches!(
            ExtFrame::decode(br#"{"type":"tool_result"}"#),
            Err(DecodeError::Invalid { .. })
        ));
    }

    #[test]
    fn type_names_match_the_wire() {
        for t in EXT_FRAME_TYPES {
            let line =
                format!(r#"{{"type":"{t}","id":"1","name":"n","panel_id":"p","panel":{{}}}}"#);
            let frame = ExtFrame::decode(line.as_bytes()).unwrap();
            assert_eq!(frame.type_name(), *t);
            assert_eq!(serde_json::to_value(&frame).unwrap()["type"], *t);
        }
        for t in HOST_FRAME_TYPES {
            let line = format!(
                r#"{{"type":"{t}","id":"1","name":"n","panel_id":"p","event":"e","protocol_version":1}}"#
            );
            let frame = HostFrame::decode(line.as_bytes()).unwrap();
            assert_eq!(frame.type_name(), *t);
        }
    }
}
