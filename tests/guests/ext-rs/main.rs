//! `zot-test-ext`: a Rust extension used only by the integration tests.
//!
//! ```text
//! zot-test-ext [--mode full|flood] [--name NAME] [--commands a,b] [--tools a,b]
//!              [--events a,b] [--intercept a,b] [--no-ready] [--count N]
//! ```
//!
//! `full` (default): hello, register_command for `--commands` (default `rs-cmd,rs-frames`),
//! register_tool for `--tools` (default `echo,structured`, the first with
//! `output_schema`/`namespace`/`deferred`/`interactive`), subscribe to `--events` (default
//! all five) and `--intercept` (default none), ready. Every host frame is answered or
//! reported back as a notify:
//!
//! * `hello_ack` → notify `hello_ack <json>`
//! * `command_invoked` `rs-cmd`: the args pick the action: `prompt T`, `insert T`,
//!   `display T`, `panel` (open_panel), `noop`, `error T` (noop + error), anything
//!   else → display the args. `rs-frames [tool]`: sends one of every one-way frame
//!   (notify ×4 levels, open_panel, panel_render, panel_close, clear_notes, submit,
//!   a whitespace-only submit, submit_slash, call_tool for `tool` (default `echo`)
//!   and one for `no-such-tool`), then answers noop.
//! * `tool_call` (each on its own thread): `echo*` → text = JSON of the args, after
//!   `args.delay_ms`; `structured*` → a text block plus `structured_content`;
//!   `hang*` → never answers (notify `hanging <id>`); else is_error.
//! * `tool_result` (answer to our call_tool) → notify `tool_result <json>`
//! * `event` → notify `event <json>`; `panel_key`, `panel_resize`, `panel_close` →
//!   notify `<type> <json>`; `tool_cancel` → notify `cancelled <id>`
//! * `event_intercept` → `tool_call`: `tool_args.block` → block with reason
//!   `rs blocked: <block>`; `tool_args.rewrite` → modified_args = args + `{"rs":true}`;
//!   `turn_start` step 13 → block, reason `unlucky step`; `assistant_message` →
//!   replace_text = text with `foo` replaced by `bar`; else allow.
//! * `shutdown` → shutdown_ack, exit 0.
//!
//! `flood`: hello, ready, then `--count` (default 1,000,000) notifies `flood <i>` and
//! a final notify `flood done`, while still answering shutdown.

use serde_json::{json, Map, Value};
use std::io::{Read, Write};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use zot_protocol::{
    encode, CommandResponse, EventInterceptResponse, ExtFrame, HostFrame, Line, LineDecoder,
    Notify, Panel, RegisterCommand, RegisterTool, Submit, Subscribe, ToolCall, ToolResult,
};

const ALL_EVENTS: &[&str] = &[
    "session_start",
    "turn_start",
    "turn_end",
    "tool_call",
    "assistant_message",
];

#[derive(Clone)]
struct Out(Arc<Mutex<std::io::Stdout>>);

impl Out {
    fn send(&self, frame: &ExtFrame) {
        self.raw(encode(frame).as_bytes());
    }

    fn raw(&self, bytes: &[u8]) {
        let mut out = self.0.lock().unwrap();
        if out.write_all(bytes).and_then(|_| out.flush()).is_err() {
            // The host closed our output: nothing left to do.
            std::process::exit(0);
        }
    }

    fn notify(&self, level: &str, message: impl Into<String>) {
        self.send(&ExtFrame::Notify(Notify {
            level: level.into(),
            message: message.into(),
            ..Default::default()
        }));
    }
}

struct Opts {
    mode: String,
    name: String,
    commands: Vec<String>,
    tools: Vec<String>,
    events: Vec<String>,
    intercept: Vec<String>,
    ready: bool,
    count: u64,
}

fn list(v: &str) -> Vec<String> {
    v.split(',')
        .filter(|s| !s.is_empty())
        .map(String::from)
        .collect()
}

fn parse_args() -> Opts {
    let mut o = Opts {
        mode: "full".into(),
        name: "rs-ext".into(),
        commands: list("rs-cmd,rs-frames"),
        tools: list("echo,structured"),
        events: ALL_EVENTS.iter().map(|s| s.to_string()).collect(),
        intercept: Vec::new(),
        ready: true,
        count: 1_000_000,
    };
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut i = 0;
    while i < args.len() {
        let v = args.get(i + 1).cloned().unwrap_or_default();
        match args[i].as_str() {
            "--no-ready" => {
                o.ready = false;
                i += 1;
                continue;
            }
            "--mode" => o.mode = v,
            "--name" => o.name = v,
            "--commands" => o.commands = list(&v),
            "--tools" => o.tools = list(&v),
            "--events" => o.events = list(&v),
            "--intercept" => o.intercept = list(&v),
            "--count" => o.count = v.parse().unwrap_or(o.count),
            other => eprintln!("zot-test-ext: unknown option {other:?}"),
        }
        i += 2;
    }
    o
}

fn text_block(text: impl Into<String>) -> Value {
    json!({"type": "text", "text": text.into()})
}

fn main() {
    let opts = parse_args();
    let out = Out(Arc::new(Mutex::new(std::io::stdout())));
    out.send(&zot_test_fixtures::hello(&opts.name, "0.9.0"));
    eprintln!("zot-test-ext stderr: started {} ({})", opts.name, opts.mode);

    if opts.mode == "flood" {
        if opts.ready {
            out.send(&ExtFrame::Ready(Default::default()));
        }
        let count = opts.count;
        let flood_out = out.clone();
        std::thread::spawn(move || flood(&flood_out, count));
    } else {
        register(&out, &opts);
    }

    let mut dec = LineDecoder::new(usize::MAX);
    let mut stdin = std::io::stdin().lock();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = match stdin.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        let mut input = &buf[..n];
        while let Some(line) = dec.decode(&mut input) {
            if let Line::Frame(bytes) = line {
                handle(&out, &bytes);
            }
        }
    }
}

fn register(out: &Out, opts: &Opts) {
    for c in &opts.commands {
        out.send(&ExtFrame::RegisterCommand(RegisterCommand {
            name: c.clone(),
            description: format!("rs command {c}"),
            ..Default::default()
        }));
    }
    for (i, t) in opts.tools.iter().enumerate() {
        let mut extra = Map::new();
        if i == 0 {
            extra.insert("output_schema".into(), json!({"type": "object"}));
            extra.insert("namespace".into(), json!("rs"));
            extra.insert("deferred".into(), json!(false));
            extra.insert("interactive".into(), json!(false));
        }
        out.send(&ExtFrame::RegisterTool(RegisterTool {
            name: t.clone(),
            description: format!("rs tool {t}"),
            schema: json!({"type": "object", "properties": {"token": {"type": "string"}}}),
            extra,
        }));
    }
    if !opts.events.is_empty() || !opts.intercept.is_empty() {
        out.send(&ExtFrame::Subscribe(Subscribe {
            events: opts.events.clone(),
            intercept: opts.intercept.clone(),
            ..Default::default()
        }));
    }
    if opts.ready {
        out.send(&ExtFrame::Ready(Default::default()));
    }
}

fn flood(out: &Out, count: u64) {
    let mut batch = Vec::with_capacity(256 * 1024);
    for i in 0..count {
        // Written by hand: encoding a million frames through serde is slow in debug builds.
        batch.extend_from_slice(
            format!("{{\"type\":\"notify\",\"level\":\"info\",\"message\":\"flood {i}\"}}\n")
                .as_bytes(),
        );
        if batch.len() >= 240 * 1024 {
            out.raw(&batch);
            batch.clear();
        }
    }
    out.raw(&batch);
    out.notify("info", "flood done");
}

fn handle(out: &Out, bytes: &[u8]) {
    let frame = match HostFrame::decode(bytes) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("zot-test-ext: skipping a host line: {e}");
            return;
        }
    };
    let as_json = |f: &HostFrame| serde_json::to_string(f).unwrap_or_default();
    match frame {
        HostFrame::HelloAck(_) => out.notify("info", format!("hello_ack {}", as_json(&frame))),
        HostFrame::CommandInvoked(c) => {
            let out = out.clone();
            std::thread::spawn(move || command(&out, c.id, &c.name, &c.args));
        }
        HostFrame::ToolCall(call) => {
            let out = out.clone();
            std::thread::spawn(move || tool(&out, call));
        }
        HostFrame::ToolResult(_) => out.notify("info", format!("tool_result {}", as_json(&frame))),
        HostFrame::Event(_) => out.notify("info", format!("event {}", as_json(&frame))),
        HostFrame::EventIntercept(ev) => intercept(out, ev),
        HostFrame::PanelKey(_) => out.notify("info", format!("panel_key {}", as_json(&frame))),
        HostFrame::PanelResize(_) => {
            out.notify("info", format!("panel_resize {}", as_json(&frame)))
        }
        HostFrame::PanelClose(_) => out.notify("info", format!("panel_close {}", as_json(&frame))),
        HostFrame::ToolCancel(c) => out.notify("info", format!("cancelled {}", c.id)),
        HostFrame::Shutdown(_) => {
            out.send(&ExtFrame::ShutdownAck(Default::default()));
            std::process::exit(0);
        }
    }
}

fn command(out: &Out, id: String, name: &str, args: &str) {
    if name == "rs-frames" {
        frames(out, args.trim());
        let r = CommandResponse {
            id,
            action: "noop".into(),
            ..Default::default()
        };
        out.send(&ExtFrame::CommandResponse(r));
        return;
    }
    let panel = Panel {
        id: "rs-panel".into(),
        title: "RS panel".into(),
        lines: vec!["line one".into(), "line two".into()],
        footer: "q to close".into(),
        ..Default::default()
    };
    out.send(&ExtFrame::CommandResponse(
        zot_test_fixtures::command_response(id, args, panel),
    ));
}

/// One of every one-way extension → host frame.
fn frames(out: &Out, tool: &str) {
    for level in ["info", "success", "warn", "error"] {
        let mut extra = Map::new();
        extra.insert("x_extra".into(), json!({"kept": level}));
        out.send(&ExtFrame::Notify(Notify {
            level: level.into(),
            message: format!("frames {level}"),
            extra,
        }));
    }
    for frame in zot_test_fixtures::panel_frames("p1") {
        out.send(&frame);
    }
    out.send(&ExtFrame::ClearNotes(Default::default()));
    out.send(&ExtFrame::Submit(Submit {
        text: "   \n\t ".into(),
        ..Default::default()
    }));
    out.send(&ExtFrame::Submit(Submit {
        text: "  hello from rs  ".into(),
        ..Default::default()
    }));
    out.send(&ExtFrame::SubmitSlash(Submit {
        text: "/rs-cmd display from slash".into(),
        ..Default::default()
    }));
    let tool = if tool.is_empty() { "echo" } else { tool };
    out.send(&ExtFrame::CallTool(ToolCall {
        id: "ct-1".into(),
        name: tool.into(),
        args: json!({"token": "via-call-tool"}),
        ..Default::default()
    }));
    out.send(&ExtFrame::CallTool(ToolCall {
        id: "ct-2".into(),
        name: "no-such-tool".into(),
        args: json!({}),
        ..Default::default()
    }));
}

fn tool(out: &Out, call: ToolCall) {
    let args = if call.args.is_object() {
        call.args.clone()
    } else {
        json!({})
    };
    let mut r = ToolResult {
        id: call.id.clone(),
        ..Default::default()
    };
    if call.name.starts_with("echo") {
        if let Some(ms) = args.get("delay_ms").and_then(Value::as_u64) {
            std::thread::sleep(Duration::from_millis(ms));
        }
        r.content = vec![text_block(args.to_string())];
    } else if call.name.starts_with("structured") {
        r.content = vec![text_block("structured")];
        r.extra.insert(
            "structured_content".into(),
            json!({"answer": 42, "args": args}),
        );
    } else if call.name.starts_with("hang") {
        out.notify("info", format!("hanging {}", call.id));
        return;
    } else {
        r = ToolResult::error(call.id, format!("zot-test-ext: no tool {}", call.name));
    }
    out.send(&ExtFrame::ToolResult(r));
}

fn intercept(out: &Out, ev: zot_protocol::Event) {
    let mut r = EventInterceptResponse {
        id: ev.id.clone().unwrap_or_default(),
        ..Default::default()
    };
    let f = &ev.fields;
    match ev.event.as_str() {
        "tool_call" => {
            let args = f.get("tool_args").cloned().unwrap_or_else(|| json!({}));
            if let Some(why) = args.get("block") {
                r.block = true;
                r.reason = Some(format!(
                    "rs blocked: {}",
                    why.as_str().unwrap_or("no reason")
                ));
            } else if args.get("rewrite").is_some() {
                let mut m = args.as_object().cloned().unwrap_or_default();
                m.insert("rs".into(), json!(true));
                r.modified_args = Some(Value::Object(m));
            }
        }
        "turn_start" if f.get("step").and_then(Value::as_u64) == Some(13) => {
            r.block = true;
            r.reason = Some("unlucky step".into());
        }
        "assistant_message" => {
            let text = f.get("text").and_then(Value::as_str).unwrap_or_default();
            r.replace_text = Some(text.replace("foo", "bar"));
        }
        _ => {}
    }
    out.send(&ExtFrame::EventInterceptResponse(r));
}
