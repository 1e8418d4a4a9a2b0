//! What `zot host` reads: a request line (docs/sidecar.md) and an agent event (seeds/003)
//! as the extension event it stands for. Used by the sidecar and, on its own, by the fuzz
//! target `sidecar_request` (fuzz/), which includes this file: it names nothing of the
//! crate.

use serde::Deserialize;
use serde_json::{Map, Value};
use zot_protocol::Event;

/// One request (docs/sidecar.md), by its `type`; unknown fields are ignored.
#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(super) enum Request {
    Ping,
    List,
    Tools,
    Commands,
    InvokeCommand {
        name: String,
        #[serde(default, deserialize_with = "or_default")]
        args: String,
    },
    CallTool {
        name: String,
        #[serde(default)]
        args: Value,
        #[serde(default, deserialize_with = "or_default")]
        timeout_ms: Option<u64>,
        /// Send the tool's `tool_progress` as events while it runs.
        #[serde(default, deserialize_with = "or_default")]
        progress: bool,
    },
    Emit {
        event: EventFields,
    },
    Intercept {
        /// The request's own id: not a field of the event.
        #[serde(default, rename = "id")]
        _request_id: Value,
        #[serde(flatten)]
        event: EventFields,
    },
    AgentEvent {
        event: Map<String, Value>,
    },
    PanelKey {
        extension: String,
        panel_id: String,
        #[serde(default, deserialize_with = "or_default")]
        key: String,
        #[serde(default, deserialize_with = "or_default")]
        text: String,
    },
    PanelResize {
        extension: String,
        panel_id: String,
        #[serde(default, deserialize_with = "or_default")]
        width: u32,
        #[serde(default, deserialize_with = "or_default")]
        height: u32,
    },
    PanelClose {
        extension: String,
        panel_id: String,
    },
    Reload,
    Shutdown,
}

/// An optional field read leniently: a value of another type (or null) counts as absent.
fn or_default<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: serde::Deserializer<'de>,
    T: serde::de::DeserializeOwned + Default,
{
    Ok(T::deserialize(Value::deserialize(d)?).unwrap_or_default())
}

/// `{"event": name, …fields}`: an event to emit or intercept.
#[derive(Debug, Deserialize)]
pub(super) struct EventFields {
    pub(super) event: String,
    #[serde(flatten)]
    pub(super) fields: Map<String, Value>,
}

impl From<EventFields> for Event {
    fn from(e: EventFields) -> Event {
        Event {
            id: None,
            event: e.event,
            fields: e.fields,
        }
    }
}

impl Request {
    /// Requests that only queue frames for extensions: answered in the order they are
    /// read, so their frames reach each extension in that order.
    pub(super) fn is_one_way(&self) -> bool {
        matches!(
            self,
            Request::Emit { .. }
                | Request::AgentEvent { .. }
                | Request::PanelKey { .. }
                | Request::PanelResize { .. }
                | Request::PanelClose { .. }
        )
    }
}

/// A request read from a line: its id and type as sent, and the request, or why it is
/// not one (answered with one error response).
pub(super) struct Parsed {
    pub(super) id: Value,
    pub(super) kind: String,
    pub(super) request: Result<Request, String>,
}

/// Reads one request line. `kind` is empty when the line has no string `type`.
pub(super) fn parse_request(line: &[u8]) -> Parsed {
    let failed = |id, kind, error: String| Parsed {
        id,
        kind,
        request: Err(error),
    };
    let value: Value = match serde_json::from_slice(line) {
        Ok(v) => v,
        Err(e) => {
            return failed(
                Value::Null,
                String::new(),
                format!("not a JSON request: {e}"),
            )
        }
    };
    let Value::Object(fields) = &value else {
        return failed(
            Value::Null,
            String::new(),
            "a request must be a JSON object".into(),
        );
    };
    let id = fields.get("id").cloned().unwrap_or(Value::Null);
    let Some(kind) = fields
        .get("type")
        .and_then(Value::as_str)
        .map(str::to_string)
    else {
        return failed(
            id,
            String::new(),
            "a request needs a string \"type\"".into(),
        );
    };
    let request = serde_json::from_value::<Request>(value).map_err(|e| {
        if e.to_string().starts_with("unknown variant") {
            format!("unknown request type {kind:?} (see docs/sidecar.md for the list)")
        } else {
            format!("invalid {kind:?} request: {e}")
        }
    });
    Parsed { id, kind, request }
}

/// Maps a raw agent event (seeds/003) to the extension event it stands for, if any.
pub(super) fn map_agent_event(mut raw: Map<String, Value>) -> Option<Event> {
    let kind = raw.shift_remove("type")?.as_str()?.to_string();
    let mut fields = Map::new();
    let mut take = |from: &str, to: &str, raw: &mut Map<String, Value>| {
        if let Some(v) = raw.shift_remove(from) {
            fields.insert(to.to_string(), v);
        }
    };
    for key in ["session_id", "agent_run_id", "cwd"] {
        take(key, key, &mut raw);
    }
    match kind.as_str() {
        "session_start" => {}
        "turn_start" => take("step", "step", &mut raw),
        "turn_end" => {
            take("stop", "stop", &mut raw);
            take("error", "error", &mut raw);
        }
        "tool_call" => {
            take("id", "tool_id", &mut raw);
            take("name", "tool_name", &mut raw);
            take("args", "tool_args", &mut raw);
        }
        "assistant_message" => {
            let text: Vec<&str> = raw
                .get("content")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
                .filter_map(|b| b.get("text").and_then(Value::as_str))
                .collect();
            fields.insert("text".into(), Value::String(text.join("\n")));
        }
        _ => return None,
    }
    Some(Event {
        id: None,
        event: kind,
        fields,
    })
}

/// What `zot host` makes of any line: a request of the `type` the line names, with its
/// `id` (absent: `null`), or why not; an agent event maps only to an extension event of
/// its own name. Panics otherwise.
#[cfg(any(test, fuzzing))]
pub(crate) fn check(line: &[u8]) {
    let parsed = parse_request(line);
    let object = serde_json::from_slice::<Value>(line).ok();
    let object = object.as_ref().and_then(Value::as_object);
    let kind = object.and_then(|o| o.get("type")).and_then(Value::as_str);
    assert_eq!(parsed.kind, kind.unwrap_or_default());
    let id = object.and_then(|o| o.get("id")).cloned();
    assert_eq!(parsed.id, id.unwrap_or(Value::Null));
    let Ok(request) = parsed.request else {
        return;
    };
    // The variant of type `call_tool` is `CallTool`.
    let variant: String = parsed
        .kind
        .split('_')
        .flat_map(|word| {
            let mut chars = word.chars();
            chars
                .next()
                .map(|c| c.to_ascii_uppercase())
                .into_iter()
                .chain(chars)
        })
        .collect();
    assert!(
        format!("{request:?}").starts_with(&variant),
        "{request:?} for {:?}",
        parsed.kind
    );
    if let Request::AgentEvent { event } = request {
        let raw = event.get("type").cloned();
        if let Some(mapped) = map_agent_event(event) {
            assert_eq!(Some(Value::String(mapped.event.clone())), raw);
            assert!(zot_protocol::EVENTS.contains(&mapped.event.as_str()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::strategy::Strategy as _;
    use serde_json::json;

    fn map(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    fn parsed(line: &str) -> Parsed {
        parse_request(line.as_bytes())
    }

    #[test]
    fn requests_are_typed_and_bad_ones_say_why() {
        let p = parsed(r#"{"id":"1","type":"call_tool","name":"t","args":{"a":1},"extra":true}"#);
        assert_eq!((p.id, p.kind.as_str()), (json!("1"), "call_tool"));
        assert!(
            matches!(p.request, Ok(Request::CallTool { name, args, timeout_ms: None, progress: false })
            if name == "t" && args == json!({"a":1}))
        );
        let p = parsed(r#"{"id":2,"type":"intercept","event":"turn_start","step":3}"#);
        let Ok(Request::Intercept { event, .. }) = p.request else {
            panic!("{:?}", p.request)
        };
        assert_eq!(
            (event.event.as_str(), Value::Object(event.fields)),
            ("turn_start", json!({"step":3}))
        );
        // Fields of the wrong type that were always optional read as absent.
        let p = parsed(
            r#"{"id":"3","type":"panel_key","extension":"e","panel_id":"p","key":null,"text":5}"#,
        );
        assert!(
            matches!(p.request, Ok(Request::PanelKey { key, text, .. }) if key.is_empty() && text.is_empty())
        );
        let p = parsed(r#"{"id":"4","type":"teleport"}"#);
        assert_eq!(
            p.request.unwrap_err(),
            "unknown request type \"teleport\" (see docs/sidecar.md for the list)"
        );
        let p = parsed(r#"{"id":"5","type":"call_tool"}"#);
        assert!(p
            .request
            .unwrap_err()
            .starts_with("invalid \"call_tool\" request: missing field `name`"));
        // A number id is read as the closest float, so it is echoed as the value sent.
        let p = parsed(r#"{"id":2.1111111111111112e+45,"type":"ping"}"#);
        let sent: f64 = "2.1111111111111112e+45".parse().unwrap();
        assert_eq!(p.id.as_f64(), Some(sent));
        let p = parsed(r#"{"id":"6","type":7}"#);
        assert_eq!((p.id, p.kind.as_str()), (json!("6"), ""));
        assert_eq!(p.request.unwrap_err(), "a request needs a string \"type\"");
        assert!(parsed("[1]").request.is_err());
        assert!(parsed("nope")
            .request
            .unwrap_err()
            .starts_with("not a JSON request"));
    }

    #[test]
    fn agent_events_map_to_extension_events() {
        let e = map_agent_event(map(json!({"type":"tool_call","id":"c1","name":"bash",
                                             "args":{"command":"ls"}})))
        .unwrap();
        assert_eq!(e.event, "tool_call");
        assert_eq!(
            Value::Object(e.fields),
            json!({"tool_id":"c1","tool_name":"bash","tool_args":{"command":"ls"}})
        );
        let e = map_agent_event(map(json!({"type":"assistant_message","content":[
            {"type":"text","text":"a"},{"type":"tool_call","id":"x"},{"type":"text","text":"b"}]})))
        .unwrap();
        assert_eq!(e.fields["text"], "a\nb");
        let e = map_agent_event(map(
            json!({"type":"turn_end","stop":"error","error":"boom"}),
        ))
        .unwrap();
        assert_eq!(
            Value::Object(e.fields),
            json!({"stop":"error","error":"boom"})
        );
        let e = map_agent_event(map(json!({"type":"turn_start","step":2}))).unwrap();
        assert_eq!(e.fields["step"], 2);
        assert!(map_agent_event(map(json!({"type":"text_delta","delta":"x"}))).is_none());
    }

    proptest::proptest! {
        #[test]
        fn any_line_is_a_request_of_its_type_or_says_why(
            line in proptest::collection::vec(proptest::sample::select(&[
                "{", "}", "[", "]", ",", ":", "\"", "\"id\":", "1", "\"x\"", "null", "true",
                "\"type\":", "\"call_tool\"", "\"agent_event\"", "\"intercept\"", "\"emit\"",
                "\"panel_key\"", "\"name\":", "\"event\":", "\"tool_call\"", "\"args\":",
                "\"timeout_ms\":", "\"extension\":", "\"panel_id\":", "\"key\":", "{\"type\":\"turn_end\"}",
            ][..]), 0..24).prop_map(|pieces| pieces.concat()),
        ) {
            check(line.as_bytes());
        }
    }
}
