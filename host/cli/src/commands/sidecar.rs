//! `zot host`: the whole host as a JSON-lines sidecar on stdin/stdout (docs/sidecar.md).

use crate::flags::host::HostArgs;
use crate::output::error::{CliError, Context as _};
use crate::output::outbox::Outbox;
use crate::output::std_streams::{Input, Output};
use request::{map_agent_event, parse_request, Parsed, Request};
use serde_json::{json, Map, Value};
use std::io::Write;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{mpsc, oneshot};
use zot_host::transport::{input_lines, Inbound};
use zot_host::{CallError, CallOptions, Host, HostConfig};
use zot_protocol::{encode, PanelKey, PanelResize, ToolProgress};

mod request;

/// How many requests may be answered at once; the next waits for one of them to end.
const REQUESTS_IN_FLIGHT: usize = 256;

/// How many `tool_progress` frames of one call may wait for the client; more are
/// dropped (and counted in the extension's status).
const PROGRESS_QUEUE: usize = 64;

/// Runs the sidecar until `shutdown` or end of input.
pub(crate) fn run(args: HostArgs) -> Result<ExitCode, CliError> {
    let config = args.config().context("host")?;
    let runtime = tokio::runtime::Runtime::new()
        .map_err(|e| format!("cannot start the async runtime: {e}"))
        .context("host")?;
    let restore = {
        let _in = runtime.enter();
        let (input, output, restore) = crate::output::std_streams::open();
        // On the runtime's threads, beside the tasks it talks to (`block_on` would run it
        // on this thread, a thread switch away from each of them).
        crate::output::std_streams::finish(
            runtime.block_on(runtime.spawn(serve(config, input, output))),
        );
        restore
    };
    drop(restore);
    // A stdin that is a terminal is read by a thread that may sit in a blocking read:
    // do not wait for it.
    let _ = std::io::stdout().flush();
    std::process::exit(0)
}

async fn serve(config: HostConfig, input: Input, output: Output) {
    let max_frame = config.max_frame;
    let (host, notes) = Host::new(config);
    // Responses are never dropped; notifications are taken from the host only while
    // the client keeps up (the host drops the oldest when it does not, and says so).
    let out = Arc::new(Outbox::default());
    let writer = tokio::spawn({
        let out = out.clone();
        async move { out.write_to(output).await }
    });

    let (stop_tx, stop_rx) = oneshot::channel::<()>();
    let forward = tokio::spawn(forward_notes(out.clone(), notes, stop_rx));

    let report = host.load().await;
    crate::output::report::print_problems(&report);
    out.push(encode(&json!({
        "type": "host_ready",
        "extensions": report.loaded,
        "starting": report.starting,
        "not_ready": report.not_ready,
        "errors": report.errors,
        "untrusted": report.untrusted,
        "warnings": report.warnings,
        "fail_closed": report.fail_closed,
    })));

    // Request lines, capped like extensions' lines: of a longer one no more than
    // `max_frame` bytes are held, and it is answered with one error response.
    let mut lines = input_lines(input, max_frame);
    let mut shutdown_request = None;
    // Requests being answered; at end of input they are finished before the extensions
    // stop (each has its own deadline), so input that ends right after its requests
    // still gets every answer. At most REQUESTS_IN_FLIGHT at once; and no request but
    // `shutdown` is handled while the client leaves more than OUTPUT_BYTES unread.
    let mut in_flight = tokio::task::JoinSet::new();
    loop {
        while in_flight.try_join_next().is_some() {}
        if in_flight.len() >= REQUESTS_IN_FLIGHT {
            in_flight.join_next().await;
        }
        let Some(line) = lines.recv().await else {
            while in_flight.join_next().await.is_some() {}
            break;
        };
        // A line's share of the input's byte budget is given back once it is parsed.
        let Parsed { id, kind, request } = match line {
            Inbound::Line(line, _room) => parse_request(&line),
            Inbound::Oversize { id, .. } => Parsed {
                id: id.unwrap_or(Value::Null),
                kind: String::new(),
                request: Err(format!(
                    "request line longer than {max_frame} bytes: skipped"
                )),
            },
        };
        // A request's answer waits for room; `shutdown` and the end of input do not.
        if !matches!(request, Ok(Request::Shutdown)) {
            out.room().await;
        }
        match request {
            Err(error) => out.push(encode(&respond(id, &kind, Err(error.into())))),
            Ok(Request::Shutdown) => {
                shutdown_request = Some(id);
                break;
            }
            // One-way requests are handled here, in the order they were read, so their
            // frames reach each extension in that order; the others run concurrently.
            Ok(request) if request.is_one_way() => {
                let response = respond(id, &kind, handle(&host, request, None).await);
                out.push(encode(&response));
            }
            Ok(request) => {
                let host = host.clone();
                let out = out.clone();
                in_flight.spawn(async move {
                    let events = Events { id: &id, out: &out };
                    let response = respond(
                        id.clone(),
                        &kind,
                        handle(&host, request, Some(events)).await,
                    );
                    out.push(encode(&response));
                });
            }
        }
    }

    host.shutdown().await;
    let _ = stop_tx.send(());
    let _ = forward.await;
    // Requests still in flight are answered as their extensions stop; give them a
    // moment, not forever.
    let finished = async { while in_flight.join_next().await.is_some() {} };
    let _ = tokio::time::timeout(Duration::from_secs(1), finished).await;
    if let Some(id) = shutdown_request {
        out.push(encode(&respond(id, "shutdown", Ok(json!({})))));
    }
    out.close();
    let _ = tokio::time::timeout(Duration::from_secs(1), writer).await;
}

/// Forwards the host's notifications to the client while it keeps up; at `stop` (the
/// extensions are gone) what is still on its way.
async fn forward_notes(
    out: Arc<Outbox>,
    mut notes: tokio::sync::mpsc::Receiver<zot_host::HostEvent>,
    mut stop: oneshot::Receiver<()>,
) {
    loop {
        tokio::select! {
            note = async {
                out.room().await;
                notes.recv().await
            } => match note {
                Some(note) => out.push(encode(&note)),
                None => return,
            },
            _ = &mut stop => {
                // The extensions are gone: what they and the host said last is
                // still on its way (the host's queue hands over one at a time).
                let last = Duration::from_millis(50);
                while let Ok(Some(note)) = tokio::time::timeout(last, notes.recv()).await {
                    out.push(encode(&note));
                }
                return;
            }
        }
    }
}

/// Why a request failed: the error in words, and for a tool call whose arguments do not
/// fit the tool's schema each problem with its field.
struct Failed {
    error: String,
    problems: Vec<zot_host::schema::Problem>,
}

impl From<String> for Failed {
    fn from(error: String) -> Self {
        Failed {
            error,
            problems: Vec::new(),
        }
    }
}

/// The response to a request: `data` on success, else `error` (and `problems`, when
/// arguments did not fit a schema). `command` is the request's type (absent when it had
/// none).
fn respond(id: Value, kind: &str, result: Result<Value, Failed>) -> Value {
    let mut response = json!({"type": "response", "id": id});
    if !kind.is_empty() {
        response["command"] = json!(kind);
    }
    match result {
        Ok(data) => {
            response["success"] = json!(true);
            response["data"] = data;
        }
        Err(Failed { error, problems }) => {
            response["success"] = json!(false);
            response["error"] = json!(error);
            if !problems.is_empty() {
                response["problems"] = json!(problems);
            }
        }
    }
    response
}

/// `{key: [each registration with the extension that provides it]}`.
fn registrations(key: &str, items: Vec<(String, impl serde::Serialize)>) -> Value {
    let list = items
        .into_iter()
        .map(|(ext, item)| crate::output::json::with_extension(item, ext, &[]))
        .collect();
    Value::Object(Map::from_iter([(key.to_string(), Value::Array(list))]))
}

/// `value` as a response's `data`.
fn data(value: &impl serde::Serialize) -> Result<Value, Failed> {
    serde_json::to_value(value).map_err(|e| e.to_string().into())
}

/// Where a request's events go (a tool's progress): to the client, tagged with the
/// request's id.
struct Events<'a> {
    id: &'a Value,
    out: &'a Arc<Outbox>,
}

impl Events<'_> {
    /// A channel for a call's `tool_progress`, and the task that writes each as a
    /// `tool_progress` event while the client reads (one that finds no room in the
    /// channel meanwhile is dropped by the library); the task ends with the call.
    fn progress(&self) -> (mpsc::Sender<ToolProgress>, tokio::task::JoinHandle<()>) {
        let (to, mut from) = mpsc::channel::<ToolProgress>(PROGRESS_QUEUE);
        let (id, out) = (self.id.clone(), self.out.clone());
        let writer = tokio::spawn(async move {
            while let Some(frame) = from.recv().await {
                out.room().await;
                let mut event = json!({"type": "tool_progress", "request_id": id});
                if let Ok(Value::Object(fields)) = serde_json::to_value(&frame) {
                    for (k, v) in fields.into_iter().filter(|(k, _)| k != "id") {
                        event[k] = v;
                    }
                }
                out.push(encode(&event));
            }
        });
        (to, writer)
    }
}

/// Answers every request but `shutdown` (which ends the read loop); `events` is where
/// a request's events go (none for a one-way request).
async fn handle(
    host: &Host,
    request: Request,
    events: Option<Events<'_>>,
) -> Result<Value, Failed> {
    match request {
        Request::Ping => Ok(json!({"pong": true})),
        Request::List => Ok(json!({"extensions": host.extensions()})),
        Request::Tools => Ok(registrations("tools", host.tools())),
        Request::Commands => Ok(registrations("commands", host.commands())),
        Request::InvokeCommand { name, args } => {
            let (ext, response) = host
                .invoke_command(&name, &args)
                .await
                .map_err(|e| e.to_string())?;
            Ok(crate::output::json::with_extension(response, ext, &["id"]))
        }
        Request::CallTool {
            name,
            args,
            timeout_ms,
            progress,
        } => {
            let mut options = CallOptions::default().timeout(timeout_ms.map(Duration::from_millis));
            let mut writer = None;
            if let (true, Some(events)) = (progress, &events) {
                let (to, task) = events.progress();
                options = options.progress(to);
                writer = Some(task);
            }
            let answer = host.call_tool_with(&name, args, options).await;
            // The progress written before the response (the call's end closed it).
            if let Some(writer) = writer {
                let _ = writer.await;
            }
            let (ext, result) = answer.map_err(|e| {
                let error = e.to_string();
                match e {
                    CallError::Arguments { problems, .. } => Failed { error, problems },
                    _ => error.into(),
                }
            })?;
            Ok(crate::output::json::with_extension(
                result,
                ext,
                &["id", "name"],
            ))
        }
        Request::Emit { event } => Ok(json!({"delivered": host.emit(&event.into())})),
        Request::Intercept { event, .. } => data(&host.intercept(event.into()).await),
        Request::AgentEvent { event } => {
            let delivered = map_agent_event(event).map_or(0, |event| host.emit(&event));
            Ok(json!({"delivered": delivered}))
        }
        Request::PanelKey {
            extension,
            panel_id,
            key,
            text,
        } => {
            let key = PanelKey {
                panel_id,
                key,
                text,
                extra: Map::new(),
            };
            host.panel_key(&extension, key).map_err(|e| e.to_string())?;
            Ok(json!({}))
        }
        Request::PanelResize {
            extension,
            panel_id,
            width,
            height,
        } => {
            let resize = PanelResize {
                panel_id,
                width,
                height,
                extra: Map::new(),
            };
            host.panel_resize(&extension, resize)
                .map_err(|e| e.to_string())?;
            Ok(json!({}))
        }
        Request::PanelClose {
            extension,
            panel_id,
        } => {
            host.panel_close(&extension, panel_id)
                .map_err(|e| e.to_string())?;
            Ok(json!({}))
        }
        Request::Reload => data(&host.reload().await),
        Request::Shutdown => Ok(json!({})),
    }
}
