//! Every frame type, both ways (Rust test extension)

use super::*;
use serde_json::{json, Value};

#[test]
fn every_command_response_action_is_passed_through() {
    let mut b = HostBuilder::new();
    b.explicit("rs", &rs_manifest("rs", &[]));
    let host = b.start();
    host.ready();
    let cmd = |args: &str| host.ok("invoke_command", json!({"name": "rs-cmd", "args": args}));

    let d = cmd("prompt write a haiku");
    assert_eq!(
        (d["action"].clone(), d["prompt"].clone()),
        (json!("prompt"), json!("write a haiku")),
        "{d}"
    );
    assert_eq!(d["extension"], "rs");
    let d = cmd("insert some text");
    assert_eq!(
        (d["action"].clone(), d["insert"].clone()),
        (json!("insert"), json!("some text")),
        "{d}"
    );
    let d = cmd("display a note");
    assert_eq!(
        (d["action"].clone(), d["display"].clone()),
        (json!("display"), json!("a note")),
        "{d}"
    );
    let d = cmd("panel");
    assert_eq!(d["action"], "open_panel", "{d}");
    assert_eq!(
        d["open_panel"],
        json!({"id": "rs-panel", "title": "RS panel", "lines": ["line one", "line two"], "footer": "q to close"}),
        "{d}"
    );
    let d = cmd("noop");
    assert_eq!(d["action"], "noop", "{d}");
    // An extension's own error is a successful request carrying it.
    let d = cmd("error it broke");
    assert_eq!(d["error"], "it broke", "{d}");
    host.shutdown();
}

#[test]
fn one_way_extension_frames_become_sidecar_events() {
    let mut b = HostBuilder::new();
    b.explicit("rs", &rs_manifest("rs", &[]));
    let host = b.start();
    host.ready();
    let d = host.ok("invoke_command", json!({"name": "rs-frames", "args": ""}));
    assert_eq!(d["action"], "noop", "{d}");

    for level in ["info", "success", "warn", "error"] {
        let ev = host.wait_event(&format!("notify {level}"), EVENT_TIMEOUT, |v| {
            is_notify(v, "rs", &format!("frames {level}"))
        });
        assert_eq!(ev["level"], level, "{ev}");
        // Fields beyond those listed are passed through.
        assert_eq!(ev["x_extra"], json!({"kept": level}), "{ev}");
    }
    let ev = host.wait_event("open_panel", EVENT_TIMEOUT, |v| v["type"] == "open_panel");
    assert_eq!(ev["extension"], "rs");
    assert_eq!(
        ev["panel"],
        json!({"id": "p1", "title": "Frames", "lines": ["a", "b"], "footer": "footer"}),
        "{ev}"
    );
    let ev = host.wait_event("panel_render", EVENT_TIMEOUT, |v| {
        v["type"] == "panel_render"
    });
    assert_eq!(ev["extension"], "rs");
    assert_eq!(ev["panel_id"], "p1");
    assert_eq!(ev["title"], "Frames 2");
    assert_eq!(ev["lines"], json!(["c"]));
    assert_eq!(ev["footer"], "footer 2");
    let ev = host.wait_event("panel_close", EVENT_TIMEOUT, |v| v["type"] == "panel_close");
    assert_eq!(
        (ev["extension"].clone(), ev["panel_id"].clone()),
        (json!("rs"), json!("p1")),
        "{ev}"
    );
    let ev = host.wait_event("clear_notes", EVENT_TIMEOUT, |v| v["type"] == "clear_notes");
    assert_eq!(ev["extension"], "rs");
    let ev = host.wait_event("submit", EVENT_TIMEOUT, |v| v["type"] == "submit");
    assert_eq!(ev["text"], "hello from rs", "submit text is trimmed: {ev}");
    assert_eq!(ev["extension"], "rs");
    let ev = host.wait_event("submit_slash", EVENT_TIMEOUT, |v| {
        v["type"] == "submit_slash"
    });
    assert_eq!(ev["text"], "/rs-cmd display from slash", "{ev}");
    assert_eq!(ev["extension"], "rs");
    // The whitespace-only submit was sent before the real one, which arrived: had it been
    // passed on, it would have arrived first.
    let extra = host.events(|v| v["type"] == "submit");
    assert!(
        extra.is_empty(),
        "whitespace-only submit was sent: {extra:?}"
    );
    host.shutdown();
}

#[test]
fn extension_call_tool_gets_a_tool_result_back() {
    let mut b = HostBuilder::new();
    b.explicit("rs", &rs_manifest("rs", &[]));
    b.explicit(
        "py",
        &py_manifest("py", &["--tools", "echo_py", "--events", ""]),
    );
    let host = b.start();
    host.ready();
    host.ok(
        "invoke_command",
        json!({"name": "rs-frames", "args": "echo_py"}),
    );
    let msg = host.wait_notify(
        "rs",
        "tool_result {\"type\":\"tool_result\",\"id\":\"ct-1\"",
    );
    let r1 = notified_json(&msg);
    println!("call_tool echo_py came back as {r1}");
    assert_eq!(
        r1["name"], "echo_py",
        "the tool_result names the tool: {r1}"
    );
    if r1["is_error"] == false {
        let text = first_text(&r1);
        assert_eq!(
            serde_json::from_str::<Value>(&text).unwrap(),
            json!({"token": "via-call-tool"})
        );
    }
    let msg = host.wait_notify(
        "rs",
        "tool_result {\"type\":\"tool_result\",\"id\":\"ct-2\"",
    );
    let r2 = notified_json(&msg);
    assert_eq!(
        r2["is_error"], true,
        "an unknown tool is an error result: {r2}"
    );
    host.shutdown();
}

#[test]
fn hello_ack_carries_protocol_version_cwd_provider_model_and_dirs() {
    let mut b = HostBuilder::new();
    let dir = b.explicit("rs", &rs_manifest("rs", &[]));
    b.arg("--provider")
        .arg("anthropic")
        .arg("--model")
        .arg("claude-test-1");
    let host = b.start();
    host.ready();
    let ack = notified_json(&host.wait_notify("rs", "hello_ack "));
    println!("hello_ack: {ack}");
    assert_eq!(ack["protocol_version"], 1, "{ack}");
    assert_eq!(ack["provider"], "anthropic", "{ack}");
    assert_eq!(ack["model"], "claude-test-1", "{ack}");
    assert!(
        !ack["zot_version"].as_str().unwrap_or("").is_empty(),
        "{ack}"
    );
    let same = |a: &str, b: &std::path::Path| {
        std::fs::canonicalize(a).ok() == std::fs::canonicalize(b).ok()
    };
    assert!(same(ack["cwd"].as_str().unwrap(), &host.cwd), "cwd {ack}");
    assert!(
        same(ack["extension_dir"].as_str().unwrap(), &dir),
        "extension_dir {ack}"
    );
    let data_dir = ack["data_dir"].as_str().unwrap();
    assert!(
        data_dir.starts_with(host.home.to_str().unwrap()) && data_dir.contains("rs"),
        "data_dir is rs's folder under ZOT_HOME: {ack}"
    );
    host.shutdown();
}

#[test]
fn tool_call_event_and_tool_result_frames_reach_the_extension() {
    let mut b = HostBuilder::new();
    b.explicit("rs", &rs_manifest("rs", &[]));
    let host = b.start();
    host.ready();
    let d = host.call_tool("echo", json!({"token": "abc"}));
    assert_eq!(d["extension"], "rs");
    assert_eq!(d["is_error"], false);
    assert_eq!(
        serde_json::from_str::<Value>(&first_text(&d)).unwrap(),
        json!({"token": "abc"})
    );
    let d = host.ok(
        "emit",
        json!({"event": {"event": "turn_end", "stop": "end_turn", "error": ""}}),
    );
    assert_eq!(d["delivered"], 1, "{d}");
    let ev = notified_json(&host.wait_notify("rs", "event "));
    assert_eq!(ev["event"], "turn_end", "{ev}");
    assert_eq!(ev["stop"], "end_turn", "{ev}");
    host.shutdown();
}

#[test]
fn panel_key_resize_and_close_requests_reach_the_extension() {
    let mut b = HostBuilder::new();
    b.explicit("rs", &rs_manifest("rs", &[]));
    let host = b.start();
    host.ready();
    let d = host.ok(
        "panel_key",
        json!({"extension": "rs", "panel_id": "rs-panel", "key": "enter", "text": "x"}),
    );
    assert!(d.is_object(), "{d}");
    let f = notified_json(&host.wait_notify("rs", "panel_key "));
    assert_eq!(f["panel_id"], "rs-panel", "{f}");
    assert_eq!(f["key"], "enter", "{f}");
    assert_eq!(f["text"], "x", "{f}");
    host.ok(
        "panel_resize",
        json!({"extension": "rs", "panel_id": "rs-panel", "width": 80, "height": 24}),
    );
    let f = notified_json(&host.wait_notify("rs", "panel_resize "));
    assert_eq!(f["panel_id"], "rs-panel", "{f}");
    assert_eq!(
        (f["width"].as_u64(), f["height"].as_u64()),
        (Some(80), Some(24)),
        "{f}"
    );
    host.ok(
        "panel_close",
        json!({"extension": "rs", "panel_id": "rs-panel"}),
    );
    let f = notified_json(&host.wait_notify("rs", "panel_close "));
    assert_eq!(f["panel_id"], "rs-panel", "{f}");
    host.shutdown();
}

#[test]
fn rust_interceptor_answers_with_block_modified_args_and_replace_text() {
    let mut b = HostBuilder::new();
    b.explicit(
        "rs",
        &rs_manifest(
            "rs",
            &["--intercept", "tool_call,turn_start,assistant_message"],
        ),
    );
    let host = b.start();
    host.ready();
    let tool = |args: Value| {
        host.ok(
            "intercept",
            json!({"event": "tool_call", "tool_id": "c1", "tool_name": "bash", "tool_args": args}),
        )
    };
    let d = tool(json!({"command": "ls", "block": "too risky"}));
    assert_eq!(d["block"], true, "{d}");
    assert_eq!(d["reason"], "rs blocked: too risky", "{d}");
    let d = tool(json!({"command": "ls", "rewrite": 1}));
    assert_eq!(d["block"], false, "{d}");
    assert_eq!(
        d["modified_args"],
        json!({"command": "ls", "rewrite": 1, "rs": true}),
        "{d}"
    );
    let d = host.ok("intercept", json!({"event": "turn_start", "step": 13}));
    assert_eq!(
        (d["block"].clone(), d["reason"].clone()),
        (json!(true), json!("unlucky step")),
        "{d}"
    );
    let d = host.ok("intercept", json!({"event": "turn_start", "step": 1}));
    assert_eq!(d["block"], false, "{d}");
    let d = host.ok(
        "intercept",
        json!({"event": "assistant_message", "text": "foo fighters"}),
    );
    assert_eq!(d["block"], false, "{d}");
    assert_eq!(d["replace_text"], "bar fighters", "{d}");
    host.shutdown();
}
