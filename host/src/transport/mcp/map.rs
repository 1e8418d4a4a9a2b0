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

/// One MCP content block as a zot one: text and images as they are; an embedded text
/// resource as its text; anything else (audio, a binary resource, a resource link) as
/// a text block holding its JSON, so that nothing is lost.
fn block(mcp: Value) -> Value {
    let text = |t: &Value| json!({"type": "text", "text": t});
    match mcp.get("type").and_then(Value::as_str) {
        Some("text") => text(mcp.get("text").unwrap_or(&Value::Null)),
        Some("image") => json!({
            "type": "image",
            "mime_type": mcp.get("mimeType").unwrap_or(&Value::Null),
            "data": mcp.get("data").unwrap_or(&Value::Null),
        }),
        Some("resource") if mcp.pointer("/resource/text").is_some_and(Value::is_string) => {
            text(&mcp["resource"]["text"])
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
            json!({"type": "text", "text": "body"})
        );
        let audio = json!({"type": "audio", "data": "AAA=", "mimeType": "audio/wav"});
        assert_eq!(
            block(audio.clone())["text"],
            Value::String(audio.to_string())
        );
    }
}
