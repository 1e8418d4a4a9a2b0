//! What `zot mcp` serves of the zot protocol, in MCP's words: a registered tool as an MCP
//! tool, a `tool_result` as MCP content, a command's response as a prompt's text, a
//! `notify` level as a log level. Used by `zot mcp` and, on its own, by the fuzz target
//! `mcp_map` (fuzz/), which includes this file: it names nothing of the crate.

use rmcp::model::{CallToolResult, ContentBlock, JsonObject, Tool};
use serde_json::{json, Map, Value};
use std::sync::Arc;
use zot_protocol::{CommandResponse, Notify, RegisterTool, ToolResult};

/// A registered tool as MCP lists it. MCP wants an object schema (`"type": "object"`);
/// the protocol's arguments are always an object, so a schema object without `type`
/// gets `"type": "object"`, and one that is absent or not about an object is served as
/// `{"type": "object"}` (the extension checks its arguments itself). `output_schema`
/// is passed on when it is an object.
pub(super) fn mcp_tool(t: RegisterTool) -> Tool {
    let input = match t.schema {
        Value::Object(mut schema) => match schema.get("type") {
            Some(Value::String(ty)) if ty == "object" => schema,
            None => {
                schema.insert("type".into(), json!("object"));
                schema
            }
            Some(_) => any_object(),
        },
        _ => any_object(),
    };
    let mut tool = Tool::new(t.name, t.description, Arc::new(input));
    if let Some(Value::Object(output)) = t.extra.get("output_schema") {
        tool.output_schema = Some(Arc::new(output.clone()));
    }
    tool
}

/// Whether `name` is a tool name MCP allows (2025-11-25, "Tool Names"): 1 to 128
/// characters, each an ASCII letter or digit, `_`, `-` or `.`.
pub(super) fn mcp_tool_name(name: &str) -> bool {
    (1..=128).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
}

fn any_object() -> JsonObject {
    Map::from_iter([("type".to_string(), json!("object"))])
}

/// A `tool_result` as MCP content: text and image blocks as they are; a block of another
/// kind as a text block holding its JSON (nothing is dropped). `structured_content` is
/// `structuredContent` when it is an object (MCP allows no other).
pub(super) fn mcp_result(result: ToolResult) -> CallToolResult {
    let content = result.content.into_iter().map(mcp_block).collect();
    let mut mcp = if result.is_error {
        CallToolResult::error(content)
    } else {
        CallToolResult::success(content)
    };
    if let Some(structured @ Value::Object(_)) = result.extra.get("structured_content") {
        mcp.structured_content = Some(structured.clone());
    }
    mcp
}

fn mcp_block(block: Value) -> ContentBlock {
    let field = |name: &str| block.get(name).and_then(Value::as_str);
    let mime = || field("mime_type").unwrap_or("application/octet-stream");
    match (field("type"), field("text"), field("data")) {
        (Some("text"), Some(text), _) => ContentBlock::text(text),
        (Some("image"), _, Some(data)) => ContentBlock::image(data, mime()),
        (Some("audio"), _, Some(data)) => ContentBlock::audio(data, mime()),
        (Some("resource"), _, _) => match embedded(&block["resource"]) {
            Some(resource) => ContentBlock::resource(resource),
            None => ContentBlock::text(block.to_string()),
        },
        _ => ContentBlock::text(block.to_string()),
    }
}

/// A zot `resource` block's `resource` (`uri`, `mime_type`, and `text` or `blob`) as
/// MCP's embedded resource; `None` when it has no `uri` or neither `text` nor `blob`.
fn embedded(resource: &Value) -> Option<rmcp::model::ResourceContents> {
    use rmcp::model::ResourceContents;
    let field = |name: &str| resource.get(name).and_then(Value::as_str).map(String::from);
    let uri = field("uri")?;
    let mime_type = field("mime_type");
    match (field("text"), field("blob")) {
        (Some(text), _) => Some(ResourceContents::TextResourceContents {
            uri,
            mime_type,
            text,
            meta: None,
        }),
        (None, Some(blob)) => Some(ResourceContents::BlobResourceContents {
            uri,
            mime_type,
            blob,
            meta: None,
        }),
        (None, None) => None,
    }
}

/// A prompt's `arguments` as its slash command's text: `args` first, then every other
/// argument as a `name=value` word (in name order, the value quoted for a POSIX shell
/// when it is not plain), so no argument a client names is dropped. A value that is not
/// a string, or a name that is not a plain word, is refused (why).
pub(super) fn prompt_args(
    arguments: Option<&serde_json::Map<String, serde_json::Value>>,
) -> Result<String, String> {
    let mut words = Vec::new();
    let Some(arguments) = arguments else {
        return Ok(String::new());
    };
    let text = |name: &str, value: &serde_json::Value| match value {
        serde_json::Value::String(s) => Ok(s.clone()),
        other => Err(format!("argument {name:?} must be a string, not {other}")),
    };
    if let Some(args) = arguments.get(super::PROMPT_ARG) {
        let args = text(super::PROMPT_ARG, args)?;
        if !args.is_empty() {
            words.push(args);
        }
    }
    let mut named: Vec<_> = arguments
        .iter()
        .filter(|(n, _)| *n != super::PROMPT_ARG)
        .collect();
    named.sort_by_key(|(n, _)| n.as_str());
    for (name, value) in named {
        let plain = !name.is_empty()
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
        if !plain {
            return Err(format!(
                "argument name {name:?}: only letters, digits, '_', '-' and '.'"
            ));
        }
        let value = text(name, value)?;
        // Quoted as a POSIX shell reads it, the text itself kept (an extension, not a
        // terminal, reads it).
        let plain = !value.is_empty()
            && value
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "/._-+,:=@".contains(c));
        let value = match plain {
            true => value,
            false => format!("'{}'", value.replace('\'', r"'\''")),
        };
        words.push(format!("{name}={value}"));
    }
    Ok(words.join(" "))
}

/// The text a command's response stands for: its `prompt`, `insert` or `display` by its
/// action; a non-empty `error` is the error.
pub(super) fn prompt_text(r: CommandResponse) -> Result<String, String> {
    if let Some(e) = r.error.filter(|e| !e.is_empty()) {
        return Err(e);
    }
    let text = match r.action.as_str() {
        "prompt" => r.prompt,
        "insert" => r.insert,
        "display" => r.display,
        _ => None,
    };
    Ok(text.unwrap_or_default())
}

/// A `notify` level as an MCP log level: `success` is `notice`, `warn` `warning`; an
/// unknown level is `info`.
#[allow(deprecated)]
pub(super) fn log_level(n: &Notify) -> rmcp::model::LoggingLevel {
    use rmcp::model::LoggingLevel;
    match n.level.as_str() {
        "error" => LoggingLevel::Error,
        "warn" | "warning" => LoggingLevel::Warning,
        "success" => LoggingLevel::Notice,
        "debug" => LoggingLevel::Debug,
        _ => LoggingLevel::Info,
    }
}

/// A log level's severity, lowest first (RFC 5424's order, as MCP has it).
#[allow(deprecated)]
pub(super) fn level_rank(level: &rmcp::model::LoggingLevel) -> u8 {
    use rmcp::model::LoggingLevel;
    match level {
        LoggingLevel::Debug => 0,
        LoggingLevel::Info => 1,
        LoggingLevel::Notice => 2,
        LoggingLevel::Warning => 3,
        LoggingLevel::Error => 4,
        LoggingLevel::Critical => 5,
        LoggingLevel::Alert => 6,
        LoggingLevel::Emergency => 7,
    }
}

/// What a client is served of any registered tool and any result (their JSON): the tool
/// keeps its name and has an object schema; the result keeps its error flag and one block
/// per block: a text or image block as it is, any other as a text holding its JSON, so
/// nothing is lost; `structuredContent` only when it is an object. Panics otherwise.
#[cfg(any(test, fuzzing))]
pub(crate) fn check(tool: &[u8], result: &[u8]) {
    if let Ok(t) = serde_json::from_slice::<RegisterTool>(tool) {
        let served = mcp_tool(t.clone());
        assert_eq!(served.name, t.name);
        assert_eq!(served.input_schema.get("type"), Some(&json!("object")));
        serde_json::to_value(&served).expect("a tool encodes");
    }
    let Ok(r) = serde_json::from_slice::<ToolResult>(result) else {
        return;
    };
    let mcp = serde_json::to_value(mcp_result(r.clone())).expect("a result encodes");
    assert_eq!(mcp["isError"], json!(r.is_error));
    let served = mcp["content"].as_array().expect("content");
    assert_eq!(served.len(), r.content.len());
    for (block, served) in r.content.iter().zip(served) {
        let same = |field: &str, as_served: &str| {
            block[field].is_string() && block[field] == served[as_served]
        };
        let kept = match block["type"].as_str() {
            Some("text") => same("text", "text"),
            Some("image" | "audio") => same("data", "data"),
            Some("resource") => {
                let (r, s) = (&block["resource"], &served["resource"]);
                let kept = |field: &str| r[field].is_string() && r[field] == s[field];
                kept("uri") && (kept("text") || kept("blob"))
            }
            _ => false,
        };
        let as_json = || serde_json::from_str::<Value>(served["text"].as_str().unwrap_or_default());
        assert!(
            kept || as_json().ok().as_ref() == Some(block),
            "{block} served as {served}"
        );
    }
    let structured = r.extra.get("structured_content").filter(|v| v.is_object());
    assert_eq!(mcp.get("structuredContent"), structured);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn named_prompt_arguments_become_words_of_the_command_text() {
        let args = |v: serde_json::Value| prompt_args(v.as_object());
        assert_eq!(args(json!({"args": "hello world"})).unwrap(), "hello world");
        assert_eq!(
            args(json!({"arg1": "one", "args": "x", "arg2": "it's two"})).unwrap(),
            r"x arg1=one arg2='it'\''s two'"
        );
        assert_eq!(prompt_args(None).unwrap(), "");
        assert!(args(json!({"n": 3}))
            .unwrap_err()
            .contains("must be a string"));
        assert!(args(json!({"a b": "x"}))
            .unwrap_err()
            .contains("argument name"));
    }

    #[test]
    fn tool_names_are_held_to_mcps_rule() {
        let longest = "a".repeat(128);
        for ok in ["a", "get_weather", "fs.read-file", "A9", longest.as_str()] {
            assert!(mcp_tool_name(ok), "{ok}");
        }
        let too_long = "a".repeat(129);
        for bad in [
            "",
            "a b",
            "fs/read",
            "café",
            "a:b",
            "a\n",
            too_long.as_str(),
        ] {
            assert!(!mcp_tool_name(bad), "{bad:?}");
        }
    }

    fn tool(schema: Value) -> Value {
        let t = RegisterTool {
            name: "t".into(),
            description: "d".into(),
            schema,
            extra: Default::default(),
        };
        Value::Object((*mcp_tool(t).input_schema).clone())
    }

    #[test]
    fn every_input_schema_is_an_object_schema() {
        let kept = json!({"type": "object", "properties": {"a": {"type": "string"}}});
        assert_eq!(tool(kept.clone()), kept);
        assert_eq!(
            tool(json!({"properties": {"a": {}}})),
            json!({"properties": {"a": {}}, "type": "object"})
        );
        for other in [
            Value::Null,
            json!({"type": "string"}),
            json!([1]),
            json!("x"),
        ] {
            assert_eq!(tool(other), json!({"type": "object"}));
        }
    }

    #[test]
    fn results_map_blocks_errors_and_structured_content() {
        let mut r = ToolResult {
            content: vec![
                json!({"type": "text", "text": "hi"}),
                json!({"type": "image", "mime_type": "image/png", "data": "AAAA"}),
                json!({"type": "audio", "data": "x"}),
                json!({"type": "resource", "resource": {"uri": "file:///r", "text": "body",
                                                        "mime_type": "text/markdown"}}),
                json!({"type": "resource", "resource": {"uri": "file:///b", "blob": "AAA="}}),
                json!({"type": "video", "data": "x"}),
            ],
            is_error: true,
            ..Default::default()
        };
        r.extra
            .insert("structured_content".into(), json!({"answer": 42}));
        let mcp = serde_json::to_value(mcp_result(r.clone())).unwrap();
        assert_eq!(mcp["isError"], true);
        assert_eq!(mcp["content"][0], json!({"type": "text", "text": "hi"}));
        assert_eq!(
            mcp["content"][1],
            json!({"type": "image", "data": "AAAA", "mimeType": "image/png"})
        );
        assert_eq!(
            mcp["content"][2],
            json!({"type": "audio", "data": "x", "mimeType": "application/octet-stream"})
        );
        assert_eq!(
            mcp["content"][3],
            json!({"type": "resource", "resource": {"uri": "file:///r", "text": "body",
                                                    "mimeType": "text/markdown"}})
        );
        assert_eq!(
            mcp["content"][4],
            json!({"type": "resource", "resource": {"uri": "file:///b", "blob": "AAA="}})
        );
        assert_eq!(mcp["content"][5]["text"], r#"{"type":"video","data":"x"}"#);
        assert_eq!(mcp["structuredContent"], json!({"answer": 42}));
        // MCP's structuredContent is an object: anything else is left out.
        r.extra.insert("structured_content".into(), json!([1]));
        let mcp = serde_json::to_value(mcp_result(r)).unwrap();
        assert!(mcp.get("structuredContent").is_none(), "{mcp}");
    }

    #[test]
    fn a_command_response_is_the_text_of_its_action() {
        let response = |action: &str, error: Option<&str>| CommandResponse {
            action: action.into(),
            prompt: Some("p".into()),
            insert: Some("i".into()),
            display: Some("d".into()),
            error: error.map(str::to_string),
            ..Default::default()
        };
        assert_eq!(prompt_text(response("prompt", None)).unwrap(), "p");
        assert_eq!(prompt_text(response("insert", None)).unwrap(), "i");
        assert_eq!(prompt_text(response("display", Some(""))).unwrap(), "d");
        assert_eq!(prompt_text(response("noop", None)).unwrap(), "");
        assert_eq!(
            prompt_text(response("prompt", Some("bad"))).unwrap_err(),
            "bad"
        );
    }

    proptest::proptest! {
        #[test]
        fn every_tool_and_result_is_served_whole(
            schema in json_value(),
            blocks in proptest::collection::vec(json_value(), 0..4),
            is_error: bool,
            structured in json_value(),
        ) {
            let tool = json!({"name": "t", "description": "d", "schema": schema});
            let blocks: Vec<Value> = blocks.into_iter().enumerate().map(|(i, b)| match (i % 5, b) {
                (0, text @ Value::String(_)) => json!({"type": "text", "text": text}),
                (1, data) => json!({"type": "image", "data": data, "mime_type": "image/png"}),
                (2, data) => json!({"type": "audio", "data": data, "mime_type": "audio/wav"}),
                (3, body) => json!({"type": "resource",
                                    "resource": {"uri": "file:///r", "text": body}}),
                (_, other) => other,
            }).collect();
            let result = json!({"id": "1", "content": blocks, "is_error": is_error,
                                "structured_content": structured});
            check(tool.to_string().as_bytes(), result.to_string().as_bytes());
        }
    }

    fn json_value() -> impl proptest::strategy::Strategy<Value = Value> {
        use proptest::prelude::*;
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            ".{0,6}".prop_map(Value::from),
            Just(json!("text")),
            Just(json!("image")),
            Just(json!("audio")),
            Just(json!("resource")),
        ];
        leaf.prop_recursive(2, 12, 3, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..3).prop_map(Value::from),
                proptest::collection::vec(
                    (
                        prop_oneof![
                            Just("type".to_string()),
                            Just("text".to_string()),
                            Just("data".to_string()),
                            ".{0,3}".prop_map(String::from)
                        ],
                        inner
                    ),
                    0..3
                )
                .prop_map(|fields| Value::Object(fields.into_iter().collect())),
            ]
        })
    }
}

/// The `notifications/progress` of one call so far: MCP wants `progress` to rise with
/// each, so a frame without one, or with one not above the last, counts one more than
/// the last (the first without one is 1).
#[derive(Default)]
pub(super) struct Progress {
    last: Option<f64>,
}

impl Progress {
    /// The notification for `frame`, the next of the call whose token is `token`.
    pub(super) fn next(
        &mut self,
        token: rmcp::model::ProgressToken,
        frame: zot_protocol::ToolProgress,
    ) -> rmcp::model::ProgressNotificationParam {
        let above = |p: &f64| p.is_finite() && self.last.is_none_or(|last| *p > last);
        let progress = match frame.progress.filter(above) {
            Some(p) => p,
            None => self.last.unwrap_or(0.0) + 1.0,
        };
        self.last = Some(progress);
        let mut note = rmcp::model::ProgressNotificationParam::new(token, progress);
        note.total = frame.total.filter(|t| t.is_finite());
        note.message = frame.text;
        note
    }
}

#[cfg(test)]
mod progress_tests {
    use super::Progress;
    use rmcp::model::{NumberOrString, ProgressToken};
    use zot_protocol::ToolProgress;

    #[test]
    fn progress_always_rises() {
        let token = ProgressToken(NumberOrString::Number(7));
        let frame = |progress: Option<f64>, text: &str| ToolProgress {
            progress,
            total: Some(100.0),
            text: Some(text.into()),
            ..Default::default()
        };
        let mut said = Progress::default();
        let seen: Vec<f64> = [
            frame(Some(0.0), "a"),
            frame(Some(50.0), "b"),
            frame(Some(50.0), "c"),
            frame(None, "d"),
            frame(Some(f64::NAN), "e"),
            frame(Some(100.0), "f"),
        ]
        .into_iter()
        .map(|f| said.next(token.clone(), f).progress)
        .collect();
        assert_eq!(seen, [0.0, 50.0, 51.0, 52.0, 53.0, 100.0]);
        let mut texts = Progress::default();
        let note = texts.next(token, frame(None, "line"));
        assert_eq!(
            (note.progress, note.message.as_deref()),
            (1.0, Some("line"))
        );
    }
}
