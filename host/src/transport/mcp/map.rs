//! MCP's tool and result shapes in the zot protocol's words.

use rmcp::model::{CallToolResult, Tool};
use rmcp::service::ServiceError;
use serde_json::{json, Map, Value};
use zot_protocol::{RegisterTool, ToolResult};

/// The `register_tool` of MCP tool `tool`, its name after `prefix`.
pub(crate) fn register(tool: &Tool, prefix: &str) -> RegisterTool {
    let mut extra = Map::new();
    if let Some(output) = &tool.output_schema {
        extra.insert("output_schema".into(), Value::Object((**output).clone()));
    }
    RegisterTool {
        name: format!("{prefix}{}", tool.name),
        description: tool.description.as_deref().unwrap_or_default().to_string(),
        schema: Value::Object((*tool.input_schema).clone()),
        extra,
    }
}

/// The `tool_result` for call `id` of what the server answered; `None` when the
/// connection to it is gone (the core fails the call with the server's exit).
pub(crate) fn result(
    id: String,
    answer: Result<CallToolResult, ServiceError>,
) -> Option<ToolResult> {
    let answer = match answer {
        Ok(answer) => answer,
        Err(ServiceError::McpError(e)) => {
            let why = format!(
                "the MCP server refused the call: {} (error {})",
                e.message, e.code.0
            );
            return Some(ToolResult::error(id, why));
        }
        Err(ServiceError::TransportClosed | ServiceError::TransportSend(_)) => return None,
        Err(e) => {
            return Some(ToolResult::error(
                id,
                format!("the MCP server did not answer: {e}"),
            ))
        }
    };
    let mut extra = Map::new();
    if let Some(structured) = answer.structured_content {
        extra.insert("structured_content".into(), structured);
    }
    let content = serde_json::to_value(&answer.content)
        .ok()
        .and_then(|v| v.as_array().cloned())
        .unwrap_or_default()
        .into_iter()
        .map(block)
        .collect();
    Some(ToolResult {
        id,
        name: None,
        content,
        is_error: answer.is_error.unwrap_or(false),
        extra,
    })
}

/// One MCP content block as a zot one: text, images and audio as they are; an embedded
/// resource (text or blob) as a zot `resource` block; anything else (a resource link) as
/// a text block holding its JSON, so that nothing is lost.
fn block(mcp: Value) -> Value {
    let text = |t: &Value| json!({"type": "text", "text": t});
    let kind = mcp.get("type").and_then(Value::as_str);
    match kind {
        Some("text") => text(mcp.get("text").unwrap_or(&Value::Null)),
        Some(media @ ("image" | "audio")) => json!({
            "type": media,
            "mime_type": mcp.get("mimeType").unwrap_or(&Value::Null),
            "data": mcp.get("data").unwrap_or(&Value::Null),
        }),
        Some("resource")
            if mcp.pointer("/resource/uri").is_some_and(Value::is_string)
                && ["/resource/text", "/resource/blob"]
                    .iter()
                    .any(|p| mcp.pointer(p).is_some_and(Value::is_string)) =>
        {
            let r = &mcp["resource"];
            let mut resource = json!({"uri": r["uri"]});
            for (from, to) in [
                ("mimeType", "mime_type"),
                ("text", "text"),
                ("blob", "blob"),
            ] {
                if let Some(v) = r.get(from).filter(|v| v.is_string()) {
                    resource[to] = v.clone();
                }
            }
            json!({"type": "resource", "resource": resource})
        }
        _ => text(&Value::String(mcp.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_map_and_nothing_is_lost() {
        assert_eq!(
            block(json!({"type": "text", "text": "hi"})),
            json!({"type": "text", "text": "hi"})
        );
        assert_eq!(
            block(json!({"type": "image", "data": "AAA=", "mimeType": "image/png"})),
            json!({"type": "image", "mime_type": "image/png", "data": "AAA="})
        );
        assert_eq!(
            block(json!({"type": "resource", "resource": {"uri": "file:///a", "text": "body"}})),
            json!({"type": "resource", "resource": {"uri": "file:///a", "text": "body"}})
        );
        assert_eq!(
            block(json!({"type": "resource", "resource": {"uri": "file:///b",
                          "mimeType": "application/pdf", "blob": "AAA="}})),
            json!({"type": "resource", "resource": {"uri": "file:///b",
                   "mime_type": "application/pdf", "blob": "AAA="}})
        );
        assert_eq!(
            block(json!({"type": "audio", "data": "AAA=", "mimeType": "audio/wav"})),
            json!({"type": "audio", "mime_type": "audio/wav", "data": "AAA="})
        );
        let link = json!({"type": "resource_link", "uri": "file:///c", "name": "c"});
        assert_eq!(block(link.clone())["text"], Value::String(link.to_string()));
    }
}
