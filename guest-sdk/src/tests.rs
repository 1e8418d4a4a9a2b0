//! The dispatcher against frames in memory. The real transports (stdio natively and in
//! the sandbox) are driven by the host's integration tests through the examples.

use crate::io::memory::Memory;
use crate::*;
use serde::Deserialize;
use std::cell::RefCell;
use std::rc::Rc;

/// Runs `ext` over `frames` (host → extension) and returns what it wrote.
fn session(ext: Extension, frames: &[Value]) -> Vec<Value> {
    session_with(ext, frames, &[])
}

/// As [`session`], with `during` lines that only a polling handler sees.
fn session_with(ext: Extension, frames: &[Value], during: &[Value]) -> Vec<Value> {
    let memory = Memory::default();
    let line = |v: &Value| serde_json::to_vec(v).unwrap();
    memory.input.borrow_mut().extend(frames.iter().map(line));
    memory.during.borrow_mut().extend(during.iter().map(line));
    ext.serve(Box::new(memory.clone()));
    let out = memory.output.borrow().clone();
    out
}

fn types(frames: &[Value]) -> Vec<&str> {
    frames.iter().map(|f| f["type"].as_str().unwrap()).collect()
}

fn ack() -> Value {
    json!({"type": "hello_ack", "protocol_version": 1, "zot_version": "t", "provider": "p",
           "model": "m", "cwd": "/w", "extension_dir": "/e", "data_dir": "/d"})
}

#[derive(Deserialize, JsonSchema)]
struct Add {
    /// First.
    a: i64,
    b: i64,
    /// Unused by the tool; here for its schema (an enum, inlined).
    #[serde(default)]
    #[allow(dead_code)]
    mode: Option<Mode>,
}

#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Mode {
    Exact,
}

#[test]
fn announces_hello_registrations_subscribe_ready_in_order() {
    let ext = Extension::new("x", "1.2.3")
        .command("c", "a command", |_, _| Response::noop())
        .tool("t", "a tool", json!({"type": "object"}), |_, _| "ok")
        .on("turn_end", |_, _| {})
        .on("turn_end", |_, _| {})
        .intercept_assistant_message(|_, _| Verdict::Allow)
        .on_panel_key(|_, _| {});
    let out = session(ext, &[]);
    assert_eq!(
        types(&out),
        [
            "hello",
            "register_command",
            "register_tool",
            "subscribe",
            "ready"
        ]
    );
    assert_eq!(out[0]["name"], "x");
    assert_eq!(out[0]["version"], "1.2.3");
    assert_eq!(
        out[0]["capabilities"],
        json!(["commands", "tools", "events", "panels"])
    );
    assert_eq!(out[3]["events"], json!(["turn_end"]));
    assert_eq!(out[3]["intercept"], json!(["assistant_message"]));
}

#[test]
fn no_subscribe_without_events() {
    let out = session(Extension::new("x", "1"), &[]);
    assert_eq!(types(&out), ["hello", "ready"]);
}

#[test]
fn hello_ack_reaches_on_start_and_commands_get_their_args() {
    let seen = Rc::new(RefCell::new(String::new()));
    let s = seen.clone();
    let ext = Extension::new("x", "1")
        .on_start(move |ctx| {
            *s.borrow_mut() = format!("{} {}", ctx.data_dir().display(), ctx.host().model)
        })
        .command("greet", "", |ctx, args| {
            Response::display(format!("{args} from {}", ctx.host().cwd))
        });
    let out = session(
        ext,
        &[
            ack(),
            json!({"type": "command_invoked", "id": "1", "name": "greet", "args": "bob"}),
            json!({"type": "command_invoked", "id": "2", "name": "nope", "args": ""}),
        ],
    );
    assert_eq!(*seen.borrow(), "/d m");
    assert_eq!(
        types(&out),
        [
            "hello",
            "register_command",
            "ready",
            "command_response",
            "command_response"
        ]
    );
    assert_eq!(out[3]["id"], "1");
    assert_eq!(out[3]["action"], "display");
    assert_eq!(out[3]["display"], "bob from /w");
    assert_eq!(out[4]["error"], "x: no command /nope");
}

#[test]
fn typed_tools_derive_the_schema_and_refuse_bad_args() {
    let ext = Extension::new("x", "1").tool_typed("add", "adds", |_, a: Add| {
        ToolOutput::text((a.a + a.b).to_string())
    });
    let out = session(
        ext,
        &[
            json!({"type": "tool_call", "id": "1", "name": "add", "args": {"a": 2, "b": 3}}),
            json!({"type": "tool_call", "id": "2", "name": "add", "args": {"a": "x"}}),
            json!({"type": "tool_call", "id": "3", "name": "sub", "args": {}}),
        ],
    );
    let schema = &out[1]["schema"];
    assert_eq!(schema["type"], "object");
    assert_eq!(schema["properties"]["a"]["description"], "First.");
    assert_eq!(schema["required"], json!(["a", "b"]));
    assert!(schema.get("$schema").is_none());
    let text = schema.to_string();
    assert!(
        !text.contains("$ref") && !text.contains("$defs"),
        "inlined: {text}"
    );
    assert!(text.contains("\"exact\""), "{text}");
    assert_eq!(out[3]["content"][0]["text"], "5");
    assert_eq!(out[3]["is_error"], false);
    assert_eq!(out[4]["is_error"], true);
    let text = out[4]["content"][0]["text"].as_str().unwrap();
    assert!(text.starts_with("invalid arguments for add: "), "{text}");
    assert_eq!(out[5]["content"][0]["text"], "x: no tool sub");
}

#[test]
fn a_running_tool_sees_its_cancel_and_its_result_is_dropped() {
    let ext = Extension::new("x", "1")
        .tool("slow", "", json!({"type": "object"}), |ctx, _| {
            let id = ctx.call_id().unwrap().to_string();
            assert!(ctx.cancelled(), "the cancel is polled");
            format!("finished {id}")
        })
        .command("after", "", |_, _| Response::noop());
    let out = session_with(
        ext,
        &[json!({"type": "tool_call", "id": "7", "name": "slow", "args": {}})],
        &[
            json!({"type": "tool_cancel", "id": "7"}),
            json!({"type": "command_invoked", "id": "8", "name": "after", "args": ""}),
        ],
    );
    // No tool_result for 7; the command read while polling is still answered.
    assert_eq!(
        types(&out),
        [
            "hello",
            "register_command",
            "register_tool",
            "ready",
            "command_response"
        ]
    );
    assert_eq!(out[4]["id"], "8");
}

#[test]
fn a_call_cancelled_while_queued_is_skipped() {
    let calls = Rc::new(RefCell::new(0));
    let c = calls.clone();
    let ext = Extension::new("x", "1")
        .tool("first", "", json!({"type": "object"}), |ctx, _| {
            ctx.cancelled();
            "first"
        })
        .tool("second", "", json!({"type": "object"}), move |_, _| {
            *c.borrow_mut() += 1;
            "second"
        });
    let out = session_with(
        ext,
        &[json!({"type": "tool_call", "id": "1", "name": "first", "args": {}})],
        &[
            json!({"type": "tool_call", "id": "2", "name": "second", "args": {}}),
            json!({"type": "tool_cancel", "id": "2"}),
        ],
    );
    assert_eq!(*calls.borrow(), 0);
    let results: Vec<_> = out.iter().filter(|f| f["type"] == "tool_result").collect();
    assert_eq!(results.len(), 1);
    assert_eq!(results[0]["id"], "1");
}

#[test]
fn interceptors_answer_each_event_and_default_to_allow() {
    let ext = Extension::new("x", "1")
        .intercept_tool_call(|_, call| match call.arg("command") {
            Some("rm -rf /") => Verdict::block("no"),
            Some(_) => Verdict::RewriteArgs(json!({"command": "ls"})),
            None => Verdict::Allow,
        })
        .intercept_assistant_message(|_, text| Verdict::ReplaceText(text.to_uppercase()));
    let out = session(
        ext,
        &[
            json!({"type": "event_intercept", "id": "1", "event": "tool_call", "tool_id": "a",
                   "tool_name": "bash", "tool_args": {"command": "rm -rf /"}}),
            json!({"type": "event_intercept", "id": "2", "event": "tool_call", "tool_id": "b",
                   "tool_name": "bash", "tool_args": {"command": "pwd"}}),
            json!({"type": "event_intercept", "id": "3", "event": "assistant_message", "text": "hi"}),
            json!({"type": "event_intercept", "id": "4", "event": "turn_start", "step": 1}),
        ],
    );
    let answers = &out[out.len() - 4..];
    assert_eq!(
        answers[0],
        json!({"type": "event_intercept_response", "id": "1", "block": true, "reason": "no"})
    );
    assert_eq!(answers[1]["modified_args"], json!({"command": "ls"}));
    assert_eq!(answers[2]["replace_text"], "HI");
    assert_eq!(
        answers[3],
        json!({"type": "event_intercept_response", "id": "4", "block": false})
    );
}

#[test]
fn events_reach_every_handler_of_their_name() {
    let seen = Rc::new(RefCell::new(Vec::new()));
    let (a, b) = (seen.clone(), seen.clone());
    let ext = Extension::new("x", "1")
        .on("tool_call", move |_, e| {
            a.borrow_mut()
                .push(format!("a:{}", e.str("tool_name").unwrap()))
        })
        .on("tool_call", move |_, e| {
            b.borrow_mut()
                .push(format!("b:{}", e.get("tool_args").unwrap()))
        })
        .on("turn_end", |_, _| panic!("not this one"));
    session(
        ext,
        &[
            json!({"type": "event", "event": "tool_call", "tool_id": "1", "tool_name": "bash",
                 "tool_args": {"command": "ls"}}),
        ],
    );
    assert_eq!(*seen.borrow(), ["a:bash", "b:{\"command\":\"ls\"}"]);
}

#[test]
fn shutdown_is_acknowledged_and_ends_the_session() {
    let stopped = Rc::new(RefCell::new(false));
    let s = stopped.clone();
    let ext = Extension::new("x", "1")
        .command("c", "", |_, _| Response::noop())
        .on_shutdown(move |_| *s.borrow_mut() = true);
    let out = session(
        ext,
        &[
            json!({"type": "shutdown"}),
            json!({"type": "command_invoked", "id": "1", "name": "c", "args": ""}),
        ],
    );
    assert!(*stopped.borrow());
    assert_eq!(out.last().unwrap()["type"], "shutdown_ack");
    assert!(!types(&out).contains(&"command_response"));
}

#[test]
fn a_panicking_handler_fails_its_call_and_the_extension_goes_on() {
    let ext = Extension::new("x", "1")
        .tool(
            "boom",
            "",
            json!({"type": "object"}),
            |_, _| -> ToolOutput { panic!("kaput") },
        )
        .command("c", "", |_, _| Response::display("still here"));
    let out = session(
        ext,
        &[
            json!({"type": "tool_call", "id": "1", "name": "boom", "args": {}}),
            json!({"type": "command_invoked", "id": "2", "name": "c", "args": ""}),
        ],
    );
    let n = out.len();
    assert_eq!(out[n - 2]["is_error"], true);
    assert_eq!(out[n - 2]["content"][0]["text"], "tool boom failed");
    assert_eq!(out[n - 1]["display"], "still here");
}

#[test]
fn unknown_and_malformed_lines_are_skipped() {
    let ext = Extension::new("x", "1").command("c", "", |_, _| Response::noop());
    let memory = Memory::default();
    memory.input.borrow_mut().extend([
        b"not json".to_vec(),
        br#"{"type":"brand_new","x":1}"#.to_vec(),
        br#"{"type":"command_invoked","id":"1","name":"c","args":"","later":true}"#.to_vec(),
    ]);
    ext.serve(Box::new(memory.clone()));
    let out = memory.output.borrow();
    assert_eq!(out.last().unwrap()["type"], "command_response");
}

#[test]
fn panels_and_notes_go_out_as_frames() {
    let ext = Extension::new("x", "1").on_panel_key(|ctx, key| {
        if key.key == "q" {
            ctx.close_panel(&key.panel_id);
        } else {
            ctx.render_panel(Panel::new(&key.panel_id, "T").lines([key.key.as_str()]));
            ctx.notify(Level::Success, "pressed");
            ctx.submit("go");
            ctx.submit_slash("/x");
            ctx.clear_notes();
            ctx.open_panel(Panel::new("other", "O").footer("f"));
        }
    });
    let out = session(
        ext,
        &[
            json!({"type": "panel_key", "panel_id": "p", "key": "j", "text": ""}),
            json!({"type": "panel_key", "panel_id": "p", "key": "q", "text": ""}),
        ],
    );
    let tail: Vec<_> = out[2..].to_vec();
    assert_eq!(
        types(&tail),
        [
            "panel_render",
            "notify",
            "submit",
            "submit_slash",
            "clear_notes",
            "open_panel",
            "panel_close"
        ]
    );
    assert_eq!(tail[0]["lines"], json!(["j"]));
    assert_eq!(tail[1]["level"], "success");
    assert_eq!(tail[5]["panel"]["footer"], "f");
}

// A native build embeds nothing, and needs no `cfg` from the author: the macro expands to
// an item that only checks the file is there.
crate::embed_manifest!("Cargo.toml");

#[test]
fn the_manifest_section_is_named_as_documented() {
    assert_eq!(crate::MANIFEST_SECTION, "zot:manifest");
}

#[test]
fn a_tool_output_carries_audio_and_embedded_resources() {
    use crate::ToolOutput;
    let out = ToolOutput::text("see below")
        .and_audio("audio/wav", b"RIFF")
        .and_resource_text("file:///notes.md", Some("text/markdown"), "# notes")
        .and_resource_blob("file:///x.bin", None, &[0, 1]);
    assert_eq!(
        out.content(),
        [
            serde_json::json!({"type": "text", "text": "see below"}),
            serde_json::json!({"type": "audio", "mime_type": "audio/wav", "data": "UklGRg=="}),
            serde_json::json!({"type": "resource", "resource": {"uri": "file:///notes.md",
                               "mime_type": "text/markdown", "text": "# notes"}}),
            serde_json::json!({"type": "resource", "resource": {"uri": "file:///x.bin",
                               "blob": "AAE="}}),
        ]
    );
}

#[test]
fn a_tool_says_its_progress_with_its_call_id_and_only_inside_a_call() {
    let ext = Extension::new("x", "1")
        .on_start(|ctx| ctx.progress(Some(1.0), None, Some("not in a call")))
        .tool("long", "", json!({"type": "object"}), |ctx, _| {
            ctx.progress(Some(50.0), Some(100.0), Some("half"));
            ctx.progress(None, None, None);
            "done"
        });
    let out = session(
        ext,
        &[json!({"type": "tool_call", "id": "9", "name": "long", "args": {}})],
    );
    let progress: Vec<&Value> = out
        .iter()
        .filter(|f| f["type"] == "tool_progress")
        .collect();
    assert_eq!(
        progress,
        [
            &json!({"type": "tool_progress", "id": "9", "progress": 50.0, "total": 100.0, "text": "half"}),
            &json!({"type": "tool_progress", "id": "9"}),
        ]
    );
    assert_eq!(out.last().unwrap()["type"], "tool_result");
}
