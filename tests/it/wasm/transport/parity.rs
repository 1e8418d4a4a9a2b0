//! Parity: the same scripted session, natively and as both kinds of component

use super::*;
use serde_json::{json, Value};
use std::time::Instant;
use zot_test_guests::{COMMAND, COMMAND_P1, REACTOR};

fn parity_script(name: &str) -> Vec<Step> {
    let cmd = |args: &str| json!({"name": "guest-cmd", "args": args});
    let intercept = |fields: Value| fields;
    vec![
        step(
            "invoke_command",
            cmd("prompt write a haiku"),
            0,
            json!({"action": "prompt", "prompt": "write a haiku"}),
        ),
        step(
            "invoke_command",
            cmd("insert some text"),
            0,
            json!({"action": "insert", "insert": "some text"}),
        ),
        step(
            "invoke_command",
            cmd("show this note"),
            0,
            json!({"action": "display", "display": "show this note"}),
        ),
        step(
            "invoke_command",
            cmd("panel"),
            0,
            json!({"action": "open_panel"}),
        ),
        step("invoke_command", cmd("noop"), 0, json!({"action": "noop"})),
        step(
            "invoke_command",
            cmd("error it broke"),
            0,
            json!({"action": "noop", "error": "it broke"}),
        ),
        step(
            "call_tool",
            json!({"name": "echo", "args": {"a": 1, "b": [true, null, "x"], "u": "héllo ✓"}}),
            0,
            json!({"is_error": false}),
        ),
        // 4 notifies, open_panel, panel_render, panel_close, clear_notes, submit,
        // submit_slash, and the notify of the tool_result of its call_tool.
        step(
            "call_tool",
            json!({"name": "frames", "args": {}}),
            11,
            json!({"is_error": false}),
        ),
        step(
            "emit",
            json!({"event": {"event": "session_start"}}),
            1,
            json!({"delivered": 1}),
        ),
        step(
            "emit",
            json!({"event": {"event": "turn_start", "step": 1}}),
            1,
            json!({"delivered": 1}),
        ),
        step(
            "emit",
            json!({"event": {"event": "tool_call", "tool_id": "tc-1", "tool_name": "read",
                              "tool_args": {"path": "a.txt"}}}),
            1,
            json!({"delivered": 1}),
        ),
        step(
            "emit",
            json!({"event": {"event": "assistant_message", "text": "all done"}}),
            1,
            json!({"delivered": 1}),
        ),
        step(
            "emit",
            json!({"event": {"event": "turn_end", "stop": "end_turn"}}),
            1,
            json!({"delivered": 1}),
        ),
        step(
            "intercept",
            intercept(
                json!({"event": "tool_call", "tool_id": "i-1", "tool_name": "bash",
                             "tool_args": {"command": "rm -rf /"}}),
            ),
            0,
            json!({"block": true, "reason": "guest blocked rm -rf"}),
        ),
        step(
            "intercept",
            intercept(
                json!({"event": "tool_call", "tool_id": "i-2", "tool_name": "rewrite_me",
                             "tool_args": {"x": 1}}),
            ),
            0,
            json!({"block": false, "modified_args": {"x": 1, "guest": true}}),
        ),
        step(
            "intercept",
            intercept(
                json!({"event": "tool_call", "tool_id": "i-3", "tool_name": "read",
                             "tool_args": {"path": "a.txt"}}),
            ),
            0,
            json!({"block": false}),
        ),
        step(
            "intercept",
            intercept(json!({"event": "turn_start", "step": 2})),
            0,
            json!({"block": false}),
        ),
        step(
            "intercept",
            intercept(json!({"event": "assistant_message", "text": "the secret is out"})),
            0,
            json!({"block": false, "replace_text": "the [redacted] is out"}),
        ),
        step(
            "panel_key",
            json!({"extension": name, "panel_id": "guest-panel", "key": "down", "text": "j"}),
            1,
            json!({}),
        ),
        step(
            "panel_resize",
            json!({"extension": name, "panel_id": "guest-panel", "width": 80, "height": 24}),
            1,
            json!({}),
        ),
        step(
            "panel_close",
            json!({"extension": name, "panel_id": "guest-panel"}),
            1,
            json!({}),
        ),
    ]
}

/// Runs the parity script against one extension alone in its own host; returns the
/// normalised transcript, one line per response or event.
fn transcript(label: &str, manifest: impl Fn(&str) -> Value) -> Vec<String> {
    let name = format!("par-{label}");
    let mut b = HostBuilder::new();
    b.explicit(&name, &manifest(&name));
    let host = b.start();
    host.set_event_filter(|v| v["type"] != "registry_changed");
    assert_eq!(host.ready(), vec![name.clone()]);
    let mut lines = Vec::new();

    let mut ack = hello_ack(&host, &name);
    if label != "native" {
        assert_eq!(ack["data_dir"], "/data", "{ack}");
    }
    for field in ["cwd", "extension_dir", "data_dir"] {
        assert!(ack[field].is_string(), "hello_ack.{field}: {ack}");
        ack[field] = json!(format!("<{field}>"));
    }
    lines.push(format!("hello_ack {ack}"));

    lines.extend(run_steps(
        &host,
        label,
        parity_script(&name),
        |what, s, events| {
            match s.ty {
                // The guest reports each event it got: one, this one.
                "emit" => {
                    let got = notified_json(events[0]["message"].as_str().unwrap_or_default());
                    assert_eq!(got["type"], "event", "{what}: {got}");
                    assert_eq!(got["event"], s.fields["event"]["event"], "{what}: {got}");
                }
                "panel_key" | "panel_resize" | "panel_close" => {
                    let msg = events[0]["message"].as_str().unwrap_or_default();
                    assert!(msg.starts_with(s.ty), "{what}: {msg}");
                }
                _ => {}
            }
        },
    ));
    host.shutdown();
    lines
        .into_iter()
        .map(|l| l.replace(&name, "<ext>"))
        .collect()
}

#[test]
fn native_command_reactor_and_preview1_give_identical_transcripts() {
    let _serial = serial();
    let t = Instant::now();
    let native_t = transcript("native", native);
    let command_t = transcript("command", |n| component(n, COMMAND));
    let reactor_t = transcript("reactor", |n| component(n, REACTOR));
    let preview1_t = transcript("preview1", |n| component(n, COMMAND_P1));
    println!(
        "four parity sessions ({} lines each) in {:?}",
        native_t.len(),
        t.elapsed()
    );
    assert_same_transcripts(
        ("native", &native_t),
        &[
            ("command", &command_t),
            ("reactor", &reactor_t),
            ("preview1", &preview1_t),
        ],
    );
}
