//! `zot host`: the whole host as a JSON-lines sidecar on stdin/stdout (docs/sidecar.md).

use serde_json::{json, Map, Value};
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::{mpsc, oneshot};
use zot_host::{Host, HostConfig};
use zot_protocol::{encode, Encoded, Event, PanelKey, PanelResize, DEFAULT_MAX_FRAME};

/// How many output lines may wait for stdout.
const OUTPUT_QUEUE: usize = 1024;

#[derive(clap::Args)]
pub(crate) struct HostArgs {
    /// The project directory: its .zot/extensions is searched, and extensions are told it.
    #[arg(long)]
    cwd: Option<PathBuf>,
    /// The state root (extensions, logs, data). Default: $ZOT_HOME or the platform default.
    #[arg(long)]
    zot_home: Option<PathBuf>,
    /// An extension directory (or its extension.json) to load before all others.
    #[arg(long = "ext", value_name = "PATH")]
    ext: Vec<PathBuf>,
    /// The provider extensions are told in hello_ack.
    #[arg(long, default_value = "")]
    provider: String,
    /// The model extensions are told in hello_ack.
    #[arg(long, default_value = "")]
    model: String,
    /// Tool names the agent owns (comma-separated); extensions cannot take them.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "read,write,edit,bash,skill"
    )]
    builtin_tools: Vec<String>,
    /// Command names the agent owns (comma-separated).
    #[arg(long, value_delimiter = ',')]
    builtin_commands: Vec<String>,
    /// The longest line accepted from an extension, in bytes.
    #[arg(long, default_value_t = DEFAULT_MAX_FRAME)]
    max_frame_bytes: usize,
    /// How long a tool call may take (a request's timeout_ms overrides it).
    #[arg(long, value_name = "MS", default_value_t = 60_000)]
    tool_timeout_ms: u64,
    /// How long a command may take.
    #[arg(long, value_name = "MS", default_value_t = 30_000)]
    command_timeout_ms: u64,
    /// How long each interceptor may take; no answer in time means allow.
    #[arg(long, value_name = "MS", default_value_t = 5_000)]
    intercept_timeout_ms: u64,
    /// How long to wait, in total, for the extensions to be ready at start and reload.
    #[arg(long, value_name = "MS", default_value_t = 3_000)]
    ready_timeout_ms: u64,
}

impl HostArgs {
    fn config(self) -> Result<HostConfig, String> {
        let home = super::zot_home(self.zot_home)?;
        let cwd = match self.cwd {
            Some(dir) => {
                std::path::absolute(&dir).map_err(|e| format!("--cwd {}: {e}", dir.display()))?
            }
            None => std::env::current_dir().map_err(|e| format!("current directory: {e}"))?,
        };
        let names = |v: Vec<String>| v.into_iter().filter(|s| !s.is_empty()).collect();
        let mut config = HostConfig::new(home, cwd);
        config.explicit = self.ext;
        config.provider = self.provider;
        config.model = self.model;
        config.builtin_tools = names(self.builtin_tools);
        config.builtin_commands = names(self.builtin_commands);
        config.max_frame = self.max_frame_bytes;
        let ms = Duration::from_millis;
        config.timeouts.tool = ms(self.tool_timeout_ms);
        config.timeouts.command = ms(self.command_timeout_ms);
        config.timeouts.intercept = ms(self.intercept_timeout_ms);
        config.timeouts.ready = ms(self.ready_timeout_ms);
        Ok(config)
    }
}

/// Runs the sidecar until `shutdown` or end of input.
pub(crate) fn run(args: HostArgs) -> ExitCode {
    let config = match args.config() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("zot: host: {e}");
            return ExitCode::FAILURE;
        }
    };
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("zot: host: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    runtime.block_on(serve(config));
    // The stdin reader may sit in a blocking read: do not wait for it.
    let _ = std::io::stdout().flush();
    std::process::exit(0)
}

/// Requests that only queue frames for extensions: answered in the order they are read.
const ONE_WAY: &[&str] = &[
    "emit",
    "agent_event",
    "panel_key",
    "panel_resize",
    "panel_close",
];

async fn serve(config: HostConfig) {
    let (host, mut notes) = Host::new(config);
    let (out, out_rx) = mpsc::channel::<Encoded>(OUTPUT_QUEUE);
    let writer = tokio::spawn(write_stdout(out_rx));

    let (stop_tx, mut stop_rx) = oneshot::channel::<()>();
    let forward_out = out.clone();
    let forward = tokio::spawn(async move {
        loop {
            tokio::select! {
                note = notes.recv() => match note {
                    Some(note) => {
                        if forward_out.send(encode(&note)).await.is_err() {
                            return;
                        }
                    }
                    None => return,
                },
                _ = &mut stop_rx => {
                    while let Ok(note) = notes.try_recv() {
                        let _ = forward_out.send(encode(&note)).await;
                    }
                    return;
                }
            }
        }
    });

    let report = host.load().await;
    for e in &report.errors {
        eprintln!("zot: extension {}: {}", e.extension, e.error);
    }
    let _ = out
        .send(encode(&json!({
            "type": "host_ready",
            "extensions": report.loaded,
            "errors": report.errors,
        })))
        .await;

    let mut stdin = BufReader::new(tokio::io::stdin());
    let mut line = Vec::new();
    let mut shutdown_request = None;
    // Requests being answered; at end of input they are finished before the extensions
    // stop (each has its own deadline), so input that ends right after its requests
    // still gets every answer.
    let mut in_flight = tokio::task::JoinSet::new();
    loop {
        line.clear();
        while in_flight.try_join_next().is_some() {}
        match stdin.read_until(b'\n', &mut line).await {
            Ok(0) | Err(_) => {
                while in_flight.join_next().await.is_some() {}
                break;
            }
            Ok(_) => {}
        }
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        match parse_request(&line) {
            Err(response) => {
                let _ = out.send(encode(&response)).await;
            }
            Ok((id, kind, _)) if kind == "shutdown" => {
                shutdown_request = Some(id);
                break;
            }
            // One-way requests are handled here, in the order they were read, so their
            // frames reach each extension in that order; the others run concurrently.
            Ok((id, kind, fields)) if ONE_WAY.contains(&kind.as_str()) => {
                let response = respond(id, &kind, handle(&host, &kind, fields).await);
                let _ = out.send(encode(&response)).await;
            }
            Ok((id, kind, fields)) => {
                let host = host.clone();
                let out = out.clone();
                in_flight.spawn(async move {
                    let response = respond(id, &kind, handle(&host, &kind, fields).await);
                    let _ = out.send(encode(&response)).await;
                });
            }
        }
    }

    host.shutdown().await;
    let _ = stop_tx.send(());
    let _ = forward.await;
    if let Some(id) = shutdown_request {
        let _ = out
            .send(encode(&respond(id, "shutdown", Ok(json!({})))))
            .await;
    }
    drop(out);
    // Requests still in flight hold output senders; give them a moment, not forever.
    let _ = tokio::time::timeout(Duration::from_secs(1), writer).await;
}

/// Writes lines to stdout in order, flushing after each burst.
async fn write_stdout(mut rx: mpsc::Receiver<Encoded>) {
    let mut stdout = tokio::io::BufWriter::with_capacity(64 * 1024, tokio::io::stdout());
    while let Some(bytes) = rx.recv().await {
        if stdout.write_all(bytes.as_bytes()).await.is_err() {
            return;
        }
        while let Ok(bytes) = rx.try_recv() {
            if stdout.write_all(bytes.as_bytes()).await.is_err() {
                return;
            }
        }
        if stdout.flush().await.is_err() {
            return;
        }
    }
}

/// Splits a request line into id, type and the other fields; or the error response.
fn parse_request(line: &[u8]) -> Result<(Value, String, Map<String, Value>), Value> {
    let value: Value = serde_json::from_slice(line).map_err(|e| {
        json!({"type": "response", "id": null, "success": false,
               "error": format!("not a JSON request: {e}")})
    })?;
    let Value::Object(mut fields) = value else {
        return Err(json!({"type": "response", "id": null, "success": false,
                          "error": "a request must be a JSON object"}));
    };
    let id = fields.shift_remove("id").unwrap_or(Value::Null);
    match fields.shift_remove("type") {
        Some(Value::String(kind)) => Ok((id, kind, fields)),
        _ => Err(json!({"type": "response", "id": id, "success": false,
                        "error": "a request needs a string \"type\""})),
    }
}

fn respond(id: Value, kind: &str, result: Result<Value, String>) -> Value {
    match result {
        Ok(data) => {
            json!({"type": "response", "id": id, "command": kind, "success": true, "data": data})
        }
        Err(error) => {
            json!({"type": "response", "id": id, "command": kind, "success": false, "error": error})
        }
    }
}

fn str_field(fields: &Map<String, Value>, key: &str) -> Result<String, String> {
    match fields.get(key) {
        Some(Value::String(s)) => Ok(s.clone()),
        _ => Err(format!("missing string field {key:?}")),
    }
}

fn opt_str(fields: &Map<String, Value>, key: &str) -> String {
    fields
        .get(key)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

/// `value` as an object without `remove` keys, plus `extension`.
fn with_extension(value: impl serde::Serialize, extension: String, remove: &[&str]) -> Value {
    let mut value = serde_json::to_value(value).expect("frames serialise");
    if let Some(map) = value.as_object_mut() {
        for key in remove {
            map.shift_remove(*key);
        }
        map.insert("extension".into(), Value::String(extension));
    }
    value
}

async fn handle(host: &Host, kind: &str, mut fields: Map<String, Value>) -> Result<Value, String> {
    match kind {
        "ping" => Ok(json!({"pong": true})),
        "list" => Ok(json!({"extensions": host.extensions()})),
        "tools" => {
            let tools: Vec<Value> = host
                .tools()
                .into_iter()
                .map(|(ext, tool)| with_extension(tool, ext, &[]))
                .collect();
            Ok(json!({"tools": tools}))
        }
        "commands" => {
            let commands: Vec<Value> = host
                .commands()
                .into_iter()
                .map(|(ext, command)| with_extension(command, ext, &[]))
                .collect();
            Ok(json!({"commands": commands}))
        }
        "invoke_command" => {
            let name = str_field(&fields, "name")?;
            let (ext, response) = host
                .invoke_command(&name, &opt_str(&fields, "args"))
                .await
                .map_err(|e| e.to_string())?;
            Ok(with_extension(response, ext, &["id"]))
        }
        "call_tool" => {
            let name = str_field(&fields, "name")?;
            let args = fields.shift_remove("args").unwrap_or(Value::Null);
            let timeout = fields
                .get("timeout_ms")
                .and_then(Value::as_u64)
                .map(Duration::from_millis);
            let (ext, result) = host
                .call_tool(&name, args, timeout)
                .await
                .map_err(|e| e.to_string())?;
            Ok(with_extension(result, ext, &["id", "name"]))
        }
        "emit" => {
            let event = match fields.shift_remove("event") {
                Some(Value::Object(event)) => to_event(event)?,
                _ => return Err("\"event\" must be an object with a string \"event\"".into()),
            };
            Ok(json!({"delivered": host.emit(&event)}))
        }
        "intercept" => {
            let event = to_event(fields)?;
            Ok(serde_json::to_value(host.intercept(event).await).expect("verdict serialises"))
        }
        "agent_event" => {
            let raw = match fields.shift_remove("event") {
                Some(Value::Object(raw)) => raw,
                _ => return Err("\"event\" must be a raw agent event object".into()),
            };
            let delivered = map_agent_event(raw).map_or(0, |event| host.emit(&event));
            Ok(json!({"delivered": delivered}))
        }
        "panel_key" => {
            let extension = str_field(&fields, "extension")?;
            let key = PanelKey {
                panel_id: str_field(&fields, "panel_id")?,
                key: opt_str(&fields, "key"),
                text: opt_str(&fields, "text"),
                extra: Map::new(),
            };
            host.panel_key(&extension, key).map_err(|e| e.to_string())?;
            Ok(json!({}))
        }
        "panel_resize" => {
            let extension = str_field(&fields, "extension")?;
            let size = |key| fields.get(key).and_then(Value::as_u64).unwrap_or(0) as u32;
            let resize = PanelResize {
                panel_id: str_field(&fields, "panel_id")?,
                width: size("width"),
                height: size("height"),
                extra: Map::new(),
            };
            host.panel_resize(&extension, resize)
                .map_err(|e| e.to_string())?;
            Ok(json!({}))
        }
        "panel_close" => {
            let extension = str_field(&fields, "extension")?;
            host.panel_close(&extension, str_field(&fields, "panel_id")?)
                .map_err(|e| e.to_string())?;
            Ok(json!({}))
        }
        "reload" => Ok(serde_json::to_value(host.reload().await).expect("report serialises")),
        other => Err(format!(
            "unknown request type {other:?} (see docs/sidecar.md for the list)"
        )),
    }
}

/// `{"event": name, …fields}` as an event.
fn to_event(mut fields: Map<String, Value>) -> Result<Event, String> {
    match fields.shift_remove("event") {
        Some(Value::String(event)) => Ok(Event {
            id: None,
            event,
            fields,
        }),
        _ => Err("missing string field \"event\" (the event's name)".into()),
    }
}

/// Maps a raw agent event (seeds/003) to the extension event it stands for, if any.
fn map_agent_event(mut raw: Map<String, Value>) -> Option<Event> {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn map(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
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
}
