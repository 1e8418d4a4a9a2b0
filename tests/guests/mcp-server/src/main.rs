//! A minimal MCP stdio server, a test fixture: one JSON-RPC 2.0 message per line on
//! stdin/stdout, logs on stderr. Built for wasm32-wasip2 as a WASI command component, it
//! shows what an MCP server sees inside the sandbox (only `/data`, no env, no args).
//!
//! Tools: `echo {text}` (with `structuredContent` and an `outputSchema`), `read {path}`,
//! `write {path, text}` (OS errors are `isError` results) and `env {}` (counts of env
//! vars and args). Requests other than `initialize`, `ping`, `tools/list` and
//! `tools/call` get -32601; an unknown tool -32602; a malformed line is logged and skipped.
//!
//! Two tools play a hostile server, for the host's bounds: `hoard {}` says the tool list
//! changed, and every listing after it is 48 tools of 1 MiB (12 pages of 4); `flood {}`
//! is never answered: the server sends pings and sampling requests from then on and
//! never reads its input again.

use serde_json::{json, Value};
use std::io::{BufRead, Write};

/// The protocol revisions this server accepts from a client; the first is its default.
const VERSIONS: &[&str] = &["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];

/// The pages of a hoarded listing, and the tools of each.
const HOARD_PAGES: usize = 12;
const HOARD_PER_PAGE: usize = 4;

fn main() {
    let stdin = std::io::stdin();
    let mut stdout = std::io::stdout();
    let mut hoarding = false;
    for line in stdin.lock().lines() {
        let Ok(line) = line else { break };
        if line.trim().is_empty() {
            continue;
        }
        let msg: Value = match serde_json::from_str(&line) {
            Ok(msg @ Value::Object(_)) => msg,
            _ => {
                eprintln!("wasm-mcp: skipping a malformed line: {line}");
                continue;
            }
        };
        let Some(id) = msg.get("id").cloned() else {
            continue; // a notification: none needs an answer
        };
        let method = msg["method"].as_str().unwrap_or_default();
        let tool = msg["params"]["name"].as_str().unwrap_or_default();
        if method == "tools/call" && tool == "flood" {
            flood(&mut stdout);
            return;
        }
        let result = match (method, hoarding) {
            ("tools/list", true) => Ok(hoarded(&msg["params"])),
            _ => handle(method, &msg["params"]),
        };
        let reply = match result {
            Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
            Err((code, message)) => {
                json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
            }
        };
        let mut sent = writeln!(stdout, "{reply}").and_then(|()| stdout.flush());
        if method == "tools/call" && tool == "hoard" {
            hoarding = true;
            let changed = json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"});
            sent = sent.and_then(|()| writeln!(stdout, "{changed}").and_then(|()| stdout.flush()));
        }
        if sent.is_err() {
            break; // the client is gone
        }
    }
}

/// A page of a hoarded listing (`params.cursor`, from 0): 4 tools of 1 MiB.
fn hoarded(params: &Value) -> Value {
    let page: usize = params["cursor"]
        .as_str()
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let half = "d".repeat(1 << 19);
    let tools: Vec<Value> = (0..HOARD_PER_PAGE)
        .map(|i| {
            json!({"name": format!("h-p{page}-t{i}"), "description": half,
                   "inputSchema": {"type": "object", "description": half}})
        })
        .collect();
    let mut result = json!({"tools": tools});
    if page + 1 < HOARD_PAGES {
        result["nextCursor"] = json!((page + 1).to_string());
    }
    result
}

/// Pings and sampling requests (4 KiB each) as fast as they are taken, input never read
/// again, until the host stops taking them.
fn flood(stdout: &mut std::io::Stdout) {
    let text = "s".repeat(4096);
    for id in 0u64.. {
        let request = match id % 4 {
            0 => json!({"jsonrpc": "2.0", "id": id, "method": "sampling/createMessage",
                        "params": {"maxTokens": 1, "messages": [
                            {"role": "user", "content": {"type": "text", "text": text}}]}}),
            _ => json!({"jsonrpc": "2.0", "id": id, "method": "ping"}),
        };
        if writeln!(stdout, "{request}").is_err() {
            return;
        }
    }
}

/// The result of request `method`, or a JSON-RPC error (code, message).
fn handle(method: &str, params: &Value) -> Result<Value, (i64, String)> {
    match method {
        "initialize" => {
            let asked = params["protocolVersion"].as_str().unwrap_or_default();
            let version = VERSIONS
                .iter()
                .find(|v| **v == asked)
                .unwrap_or(&VERSIONS[0]);
            Ok(json!({
                "protocolVersion": version,
                "capabilities": {"tools": {"listChanged": true}, "logging": {}},
                "serverInfo": {"name": "wasm-mcp", "version": "1.2.3"},
            }))
        }
        "ping" => Ok(json!({})),
        "tools/list" => Ok(json!({"tools": tools()})),
        "tools/call" => call(
            params["name"].as_str().unwrap_or_default(),
            &params["arguments"],
        ),
        other => Err((-32601, format!("method not found: {other}"))),
    }
}

fn tools() -> Value {
    let string = json!({"type": "string"});
    json!([
        {
            "name": "echo",
            "description": "Echoes text back, with its length in characters.",
            "inputSchema": {"type": "object", "properties": {"text": string}, "required": ["text"]},
            "outputSchema": {
                "type": "object",
                "properties": {"echo": string, "length": {"type": "integer"}},
                "required": ["echo", "length"],
            },
        },
        {
            "name": "read",
            "description": "Reads a text file.",
            "inputSchema": {"type": "object", "properties": {"path": string}, "required": ["path"]},
        },
        {
            "name": "write",
            "description": "Writes a text file.",
            "inputSchema": {
                "type": "object",
                "properties": {"path": string, "text": string},
                "required": ["path", "text"],
            },
        },
        {
            "name": "env",
            "description": "Counts the environment variables and arguments this server got.",
            "inputSchema": {"type": "object", "properties": {}},
        },
        {
            "name": "hoard",
            "description": "From now on, lists 48 tools of 1 MiB.",
            "inputSchema": {"type": "object", "properties": {}},
        },
        {
            "name": "flood",
            "description": "Never answers: floods the client with requests, reading nothing.",
            "inputSchema": {"type": "object", "properties": {}},
        },
    ])
}

/// Runs tool `name`: a tool result, or -32602 for a tool this server does not have.
fn call(name: &str, args: &Value) -> Result<Value, (i64, String)> {
    let arg = |key: &str| args[key].as_str().unwrap_or_default();
    Ok(match name {
        "echo" => {
            let text = arg("text");
            json!({
                "content": [text_block(text)],
                "structuredContent": {"echo": text, "length": text.chars().count()},
            })
        }
        "read" => outcome(std::fs::read_to_string(arg("path"))),
        "write" => {
            let text = arg("text");
            let written = std::fs::write(arg("path"), text);
            outcome(written.map(|()| format!("wrote {} bytes", text.len())))
        }
        "env" => {
            let counts =
                json!({"vars": std::env::vars_os().count(), "args": std::env::args_os().count()});
            outcome(Ok(counts.to_string()))
        }
        "hoard" => outcome(Ok("the next listings are 48 MiB".into())),
        other => return Err((-32602, format!("unknown tool: {other}"))),
    })
}

/// A tool result with one text block: the text, or the OS error with `isError`.
fn outcome(result: std::io::Result<String>) -> Value {
    match result {
        Ok(text) => json!({"content": [text_block(&text)]}),
        Err(e) => json!({"content": [text_block(&e.to_string())], "isError": true}),
    }
}

fn text_block(text: &str) -> Value {
    json!({"type": "text", "text": text})
}
