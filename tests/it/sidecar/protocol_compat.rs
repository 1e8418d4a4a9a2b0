//! Protocol compatibility: published extensions and every frame type, driven through
//! `zot host` (docs/sidecar.md, PROTOCOL.md).

use crate::common::*;
use serde_json::{json, Value};
use std::time::{Duration, Instant};

const QUICK_START_PROMPT: &str = "Greet me very briefly. Add one emoji.";

// ---------------------------------------------------------------------------------------
// The published quick start

#[test]
fn quick_start_hello_py_answers_hellopy_with_prompt() {
    let mut b = HostBuilder::new();
    b.ext_path(&hello_py_example());
    let host = b.start();
    assert_eq!(host.ready(), vec!["hello-py".to_string()]);
    let data = host.ok("invoke_command", json!({"name": "hellopy", "args": ""}));
    assert_eq!(data["action"], "prompt", "{data}");
    assert_eq!(data["prompt"], QUICK_START_PROMPT, "{data}");
    assert_eq!(data["extension"], "hello-py", "{data}");
    let entry = host.entry("hello-py");
    assert_eq!(entry["state"], "ready", "{entry}");
    assert_eq!(entry["source"], "explicit", "{entry}");
    assert_eq!(str_list(&entry["commands"]), vec!["hellopy"], "{entry}");
    let took = host.shutdown();
    println!("shutdown of hello-py took {took:?}");
}

#[test]
fn quick_start_hello_py_installed_globally_is_discovered() {
    let b = HostBuilder::new();
    copy_dir(
        &hello_py_example(),
        &b.home().join("extensions").join("hello-py"),
    );
    let host = b.start();
    assert_eq!(host.ready(), vec!["hello-py".to_string()]);
    assert_eq!(host.entry("hello-py")["source"], "global");
    let data = host.ok(
        "invoke_command",
        json!({"name": "hellopy", "args": "ignored"}),
    );
    assert_eq!(data["prompt"], QUICK_START_PROMPT, "{data}");
    host.shutdown();
}

/// The quick start's session through `zot host` (loaded from the example's folder with
/// `--ext`; confined first by `zot ext confine` when `confined`): its command with and
/// without arguments, a shutdown it acknowledges; the transcript.
fn quick_start_session(label: &str, confined: bool) -> Vec<String> {
    let scratch = TempDir::new("hello-py");
    let mut b = HostBuilder::in_dir(scratch.path());
    let dir = hello_py_example();
    if confined {
        confine_dir(&b.home(), &b.cwd(), &dir, "hello-py");
    }
    b.ext_path(&dir);
    let host = b.start();
    host.set_event_filter(|v| v["type"] != "registry_changed");
    assert_eq!(host.ready(), ["hello-py"], "{}", host.diagnostics());
    let entry = host.entry("hello-py");
    assert_eq!(entry["state"], "ready", "{entry}");
    assert_eq!(entry["transport"], "stdio", "{entry}");
    let prompt = json!({"extension": "hello-py", "action": "prompt", "prompt": QUICK_START_PROMPT});
    let steps = vec![
        step("commands", json!({}), 0, json!({})),
        step(
            "invoke_command",
            json!({"name": "hellopy", "args": ""}),
            0,
            prompt.clone(),
        ),
        step(
            "invoke_command",
            json!({"name": "/hellopy", "args": "Ada"}),
            0,
            prompt,
        ),
        step("tools", json!({}), 0, json!({"tools": []})),
    ];
    let transcript = run_steps(&host, label, steps, |_, _, _| {});
    let log_path = host.home.join("logs/ext-hello-py.log");
    host.shutdown();
    let log = std::fs::read_to_string(&log_path).expect("the extension's log");
    assert!(log.contains("acknowledged shutdown"), "{log}");
    assert!(log.contains("exited with status 0"), "{log}");
    assert!(!log.contains("[stderr]"), "{log}");
    assert_eq!(
        log.contains("] info: confined: files: read only the program folders"),
        confined,
        "{log}"
    );
    transcript
}

/// Confined (Linux: `zot ext confine`), the published quick start answers the same session
/// as it does free, line for line. Its `#!/usr/bin/env python3` then finds `python3` on
/// the base `PATH` (`/usr/local/bin:/usr/bin:/bin`), not on the user's.
#[cfg(target_os = "linux")]
#[test]
fn quick_start_hello_py_answers_the_same_confined() {
    let free = quick_start_session("hello-py", false);
    let confined = quick_start_session("hello-py confined", true);
    assert_same_transcripts(("free", &free), &[("confined", &confined)]);
}

// ---------------------------------------------------------------------------------------
// Every frame type, both ways (Rust test extension)

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

// ---------------------------------------------------------------------------------------
// Handshake and registration

#[test]
fn legacy_extension_without_ready_is_taken_as_ready() {
    let mut b = HostBuilder::new();
    b.explicit("legacy", &py_manifest("legacy", &["--mode", "legacy"]));
    let host = b.start();
    let ready = host.ready_event();
    println!(
        "host_ready with a legacy (no ready) extension after {:?}",
        host.started.elapsed()
    );
    // Silent for 250 ms after its last frame counts as ready, within the ready wait: had
    // it not, the wait would have run out with the extension still starting.
    assert_eq!(ready["extensions"], json!(["legacy"]), "{ready}");
    assert_eq!(ready["starting"], json!([]), "{ready}");
    let e = host.entry("legacy");
    assert_eq!(e["state"], "ready", "{e}");
    assert!(str_list(&e["tools"]).contains(&"echo".to_string()), "{e}");
    let d = host.call_tool("echo", json!({"legacy": true}));
    assert_eq!(d["extension"], "legacy");
    host.shutdown();
}

#[test]
fn builtin_tool_read_shadows_an_extension_tool() {
    let mut b = HostBuilder::new();
    b.explicit("node", &node_manifest("node", &["--tools", "read,echo"]));
    let host = b.start();
    host.ready();
    let e = host.entry("node");
    assert_eq!(str_list(&e["tools"]), vec!["echo"], "{e}");
    assert!(
        str_list(&e["shadowed"]).contains(&"read".to_string()),
        "{e}"
    );
    let r = host.request("call_tool", json!({"name": "read", "args": {"path": "x"}}));
    assert!(
        r["success"] == false || r["data"]["extension"] != "node",
        "the built-in read must never reach the extension: {r}"
    );
    host.shutdown();
}

#[test]
fn builtin_tools_flag_replaces_the_default_set() {
    let mut b = HostBuilder::new();
    b.explicit("node", &node_manifest("node", &["--tools", "mine,read"]));
    b.arg("--builtin-tools").arg("mine,other");
    let host = b.start();
    host.ready();
    let e = host.entry("node");
    assert_eq!(str_list(&e["tools"]), vec!["read"], "{e}");
    assert_eq!(str_list(&e["shadowed"]), vec!["mine"], "{e}");
    let d = host.call_tool("read", json!({"path": "p"}));
    assert_eq!(d["extension"], "node", "{d}");
    host.shutdown();
}

#[test]
fn builtin_commands_flag_shadows_extension_commands() {
    let mut b = HostBuilder::new();
    b.explicit(
        "node",
        &node_manifest("node", &["--commands", "help,node-echo"]),
    );
    b.arg("--builtin-commands").arg("help,model");
    let host = b.start();
    host.ready();
    let e = host.entry("node");
    assert_eq!(str_list(&e["commands"]), vec!["node-echo"], "{e}");
    assert_eq!(str_list(&e["shadowed"]), vec!["help"], "{e}");
    let d = host.ok("invoke_command", json!({"name": "node-echo", "args": "hi"}));
    assert_eq!(
        (d["action"].clone(), d["insert"].clone()),
        (json!("insert"), json!("hi")),
        "{d}"
    );
    let r = host.request("invoke_command", json!({"name": "help", "args": ""}));
    assert!(
        r["success"] == false || r["data"]["extension"] != "node",
        "a built-in command must never reach the extension: {r}"
    );
    host.shutdown();
}

/// Explicit beats project beats global, then directory name, however fast each one
/// registers (the winners start late on purpose).
#[test]
fn tool_shadowing_between_extensions_follows_load_order() {
    let mut b = HostBuilder::new();
    let m = |kind: &str, name: &str, tools: &'static str, delay: bool| {
        let mut a = vec!["--tools", tools, "--commands", "", "--events", ""];
        if delay {
            a.extend(["--delay-ms", "600"]);
        }
        if kind == "node" {
            node_manifest(name, &a)
        } else {
            py_manifest(name, &a)
        }
    };
    b.explicit("x-late", &m("node", "x-late", "dup_all", true));
    // Started as the published host starts them: no trust asked.
    b.arg("--trust-project");
    b.project("p-b", &m("py", "p-b", "dup_all,dup_proj", false));
    b.project("p-a", &m("node", "p-a", "dup_all,dup_proj", true));
    b.global("g-b", &m("node", "g-b", "dup_all,dup_proj,dup_glob", false));
    b.global("g-a", &m("py", "g-a", "dup_all,dup_proj,dup_glob", true));
    let host = b.start();
    let names = host.ready();
    assert_eq!(
        names,
        vec!["x-late", "p-a", "p-b", "g-a", "g-b"],
        "load order"
    );
    for (tool, owner) in [
        ("dup_all", "x-late"),
        ("dup_proj", "p-a"),
        ("dup_glob", "g-a"),
    ] {
        let d = host.call_tool(tool, json!({"who": tool}));
        assert_eq!(d["extension"], owner, "{tool} belongs to {owner}: {d}");
    }
    let e = host.entry("g-b");
    assert!(str_list(&e["tools"]).is_empty(), "{e}");
    let mut shadowed = str_list(&e["shadowed"]);
    shadowed.sort();
    assert_eq!(shadowed, vec!["dup_all", "dup_glob", "dup_proj"], "{e}");
    assert_eq!(str_list(&host.entry("p-a")["tools"]), vec!["dup_proj"]);
    assert_eq!(str_list(&host.entry("g-a")["tools"]), vec!["dup_glob"]);
    assert_eq!(host.entry("x-late")["source"], "explicit");
    assert_eq!(host.entry("p-b")["source"], "project");
    assert_eq!(host.entry("g-b")["source"], "global");
    host.shutdown();
}

#[test]
fn project_local_extension_beats_global_of_the_same_name() {
    let mut b = HostBuilder::new();
    // Started as the published host starts them: no trust asked.
    b.arg("--trust-project");
    b.project("same", &node_manifest("same", &["--tools", "from_project"]));
    b.global("same", &py_manifest("same", &["--tools", "from_global"]));
    let host = b.start();
    assert_eq!(host.ready(), vec!["same"]);
    let e = host.entry("same");
    assert_eq!(e["source"], "project", "{e}");
    let d = host.call_tool("from_project", json!({}));
    assert_eq!(d["extension"], "same");
    let err = host.fails("call_tool", json!({"name": "from_global", "args": {}}));
    assert!(err.contains("from_global"), "error names the tool: {err}");
    host.shutdown();
}

#[test]
fn disabled_manifest_is_listed_but_not_started() {
    let mut b = HostBuilder::new();
    // Each extension writes its file first thing when it starts (in a folder that outlives
    // the host's scratch).
    let files = TempDir::new("disabled-files");
    let marker = files.path().join("disabled-started");
    let mut m = py_manifest("sleepy", &["--touch", marker.to_str().unwrap()]);
    m["enabled"] = json!(false);
    b.global("sleepy", &m);
    let control = files.path().join("enabled-started");
    b.global(
        "awake",
        &py_manifest("awake", &["--touch", control.to_str().unwrap()]),
    );
    let host = b.start();
    assert_eq!(host.ready(), vec!["awake"]);
    let e = host.entry("sleepy");
    assert_eq!(e["state"], "disabled", "{e}");
    assert!(str_list(&e["tools"]).is_empty(), "{e}");
    // The host has stopped every extension it started, each after it wrote its file.
    host.shutdown();
    assert!(control.exists(), "the enabled extension wrote no file");
    assert!(!marker.exists(), "a disabled extension was started");
}

#[test]
fn hello_name_mismatch_uses_the_manifest_name() {
    let mut b = HostBuilder::new();
    b.explicit(
        "real-name",
        &py_manifest("real-name", &["--name", "something-else"]),
    );
    let host = b.start();
    assert_eq!(host.ready(), vec!["real-name"]);
    let e = host.entry("real-name");
    assert_eq!(e["state"], "ready", "{e}");
    let d = host.call_tool("echo", json!({"x": 1}));
    assert_eq!(d["extension"], "real-name", "{d}");
    host.wait_notify("real-name", "started ");
    let d = host.ok("invoke_command", json!({"name": "py-echo", "args": "a b"}));
    assert_eq!(d["extension"], "real-name", "{d}");
    host.shutdown();
}

// ---------------------------------------------------------------------------------------
// Behaviours of the published host

#[test]
fn command_round_trip_echoes_args() {
    let mut b = HostBuilder::new();
    b.explicit("py", &py_manifest("py", &[]));
    let host = b.start();
    host.ready();
    let d = host.ok(
        "invoke_command",
        json!({"name": "py-echo", "args": "hello world"}),
    );
    assert_eq!(d["action"], "display", "{d}");
    assert_eq!(d["display"], "hello world", "{d}");
    assert_eq!(d["extension"], "py", "{d}");
    host.shutdown();
}

#[test]
fn tool_round_trip_returns_args_as_text() {
    let mut b = HostBuilder::new();
    b.explicit("py", &py_manifest("py", &[]));
    let host = b.start();
    host.ready();
    let args = json!({"city": "Berlin", "n": 3, "nested": {"ü": [1, 2]}});
    let d = host.call_tool("echo", args.clone());
    assert_eq!(d["is_error"], false, "{d}");
    assert_eq!(d["extension"], "py", "{d}");
    assert_eq!(
        serde_json::from_str::<Value>(&first_text(&d)).unwrap(),
        args
    );
    // No args at all: the extension gets {}.
    let d = host.ok("call_tool", json!({"name": "echo"}));
    assert_eq!(
        serde_json::from_str::<Value>(&first_text(&d)).unwrap(),
        json!({})
    );
    host.shutdown();
}

#[test]
fn extension_error_result_is_a_successful_request() {
    let mut b = HostBuilder::new();
    b.explicit("py", &py_manifest("py", &[]));
    let host = b.start();
    host.ready();
    let d = host.call_tool("fail", json!({}));
    assert_eq!(d["is_error"], true, "{d}");
    assert_eq!(first_text(&d), "failed on purpose");
    host.shutdown();
}

#[test]
fn tool_result_pass_through_fields_survive() {
    let mut b = HostBuilder::new();
    b.explicit("rs", &rs_manifest("rs", &[]));
    let host = b.start();
    host.ready();
    let d = host.call_tool("structured", json!({"q": "life"}));
    assert_eq!(
        d["structured_content"],
        json!({"answer": 42, "args": {"q": "life"}}),
        "{d}"
    );
    host.shutdown();
}

fn guard_host() -> Host {
    let mut b = HostBuilder::new();
    b.explicit("guard", &py_manifest("guard", &["--mode", "guard"]));
    let host = b.start();
    assert_eq!(host.ready(), vec!["guard"]);
    let e = host.entry("guard");
    let mut intercept = str_list(&e["intercept"]);
    intercept.sort();
    assert_eq!(
        intercept,
        vec!["assistant_message", "tool_call", "turn_start"],
        "{e}"
    );
    host
}

fn intercept_tool(host: &Host, tool: &str, args: Value) -> Value {
    host.ok(
        "intercept",
        json!({"event": "tool_call", "tool_id": "call_1", "tool_name": tool, "tool_args": args}),
    )
}

#[test]
fn guard_blocks_rm_rf_in_bash() {
    let host = guard_host();
    let d = intercept_tool(&host, "bash", json!({"command": "rm -rf /tmp/foo"}));
    assert_eq!(d["block"], true, "{d}");
    assert_eq!(
        d["reason"], "refused: matches danger pattern \"rm -rf\"",
        "{d}"
    );
    let d = intercept_tool(&host, "bash", json!({"command": "ls -la"}));
    assert_eq!(d["block"], false, "{d}");
    host.shutdown();
}

#[test]
fn guard_rewrites_args_of_rewrite_me() {
    let host = guard_host();
    let d = intercept_tool(&host, "rewrite_me", json!({"path": "a.txt"}));
    assert_eq!(d["block"], false, "{d}");
    assert_eq!(
        d["modified_args"],
        json!({"path": "a.txt", "rewritten": true}),
        "{d}"
    );
    host.shutdown();
}

#[test]
fn guard_passes_read_unchanged() {
    let host = guard_host();
    let d = intercept_tool(&host, "read", json!({"path": "foo.go"}));
    assert_eq!(d["block"], false, "{d}");
    assert!(d.get("modified_args").is_none_or(Value::is_null), "{d}");
    assert!(d.get("replace_text").is_none_or(Value::is_null), "{d}");
    host.shutdown();
}

#[test]
fn guard_allows_turn_start() {
    let host = guard_host();
    let d = host.ok("intercept", json!({"event": "turn_start", "step": 1}));
    assert_eq!(d["block"], false, "{d}");
    host.shutdown();
}

#[test]
fn guard_redacts_secret_in_assistant_message() {
    let host = guard_host();
    let d = host.ok(
        "intercept",
        json!({"event": "assistant_message", "text": "the secret is 42"}),
    );
    assert_eq!(d["block"], false, "{d}");
    assert_eq!(d["replace_text"], "the [redacted] is 42", "{d}");
    let d = host.ok(
        "intercept",
        json!({"event": "assistant_message", "text": "nothing to hide"}),
    );
    assert!(
        d.get("replace_text")
            .is_none_or(|t| t.is_null() || t == "nothing to hide"),
        "clean text stays as it is: {d}"
    );
    host.shutdown();
}

#[test]
fn interceptors_chain_rewrites_in_load_order() {
    let mut b = HostBuilder::new();
    b.explicit("guard", &py_manifest("guard", &["--mode", "guard"]));
    b.explicit(
        "node",
        &node_manifest(
            "node",
            &["--intercept", "tool_call,assistant_message", "--events", ""],
        ),
    );
    let host = b.start();
    assert_eq!(host.ready(), vec!["guard", "node"]);
    let d = intercept_tool(&host, "rewrite_me", json!({"path": "a"}));
    assert_eq!(
        d["modified_args"],
        json!({"path": "a", "rewritten": true, "node": true}),
        "{d}"
    );
    let seen = notified_json(&host.wait_notify("node", "intercept "));
    assert_eq!(
        seen["tool_args"],
        json!({"path": "a", "rewritten": true}),
        "node sees guard's rewrite: {seen}"
    );
    let d = host.ok(
        "intercept",
        json!({"event": "assistant_message", "text": "a secret"}),
    );
    assert_eq!(d["replace_text"], "a [redacted] [node]", "{d}");
    let d = intercept_tool(&host, "bash", json!({"command": "rm -rf /"}));
    assert_eq!(d["block"], true, "the first block wins: {d}");
    assert_eq!(
        d["reason"], "refused: matches danger pattern \"rm -rf\"",
        "{d}"
    );
    host.shutdown();
}

#[test]
fn intercept_without_interceptors_allows() {
    let mut b = HostBuilder::new();
    b.explicit("py", &py_manifest("py", &[]));
    let host = b.start();
    host.ready();
    let d = intercept_tool(&host, "bash", json!({"command": "rm -rf /"}));
    assert_eq!(d["block"], false, "{d}");
    host.shutdown();
}

#[test]
fn reload_restarts_extensions_and_re_registers() {
    let mut b = HostBuilder::new();
    b.explicit("alpha", &py_manifest("alpha", &["--tools", "alpha_tool"]));
    let home = b.home();
    let host = b.start();
    assert_eq!(host.ready(), vec!["alpha"]);
    let (old_pid, _) = parse_started(&host.wait_notify("alpha", "started "));
    // A new global extension appears; reload re-reads the manifests.
    write_manifest(
        &home.join("extensions").join("beta"),
        &node_manifest("beta", &["--tools", "beta_tool"]),
    );
    let t = Instant::now();
    let d = host.ok("reload", json!({}));
    println!("reload took {:?}: {d}", t.elapsed());
    assert_eq!(str_list(&d["stopped"]), vec!["alpha"], "{d}");
    assert_eq!(str_list(&d["loaded"]), vec!["alpha", "beta"], "{d}");
    let mut ready = str_list(&d["ready"]);
    ready.sort();
    assert_eq!(ready, vec!["alpha", "beta"], "{d}");
    assert_eq!(d["errors"], json!([]), "{d}");
    let (new_pid, _) = parse_started(&host.wait_notify("alpha", "started "));
    assert_ne!(old_pid, new_pid, "alpha was restarted");
    assert!(
        wait_process_gone(old_pid, Duration::from_secs(5)),
        "old alpha {old_pid} still runs"
    );
    assert_eq!(
        host.call_tool("alpha_tool", json!({}))["extension"],
        "alpha"
    );
    assert_eq!(host.call_tool("beta_tool", json!({}))["extension"], "beta");
    host.shutdown();
}

#[test]
fn agent_event_maps_raw_agent_events_to_lifecycle_events() {
    let mut b = HostBuilder::new();
    b.explicit("node", &node_manifest("node", &[]));
    let host = b.start();
    host.ready();
    let agent = |ev: Value| host.ok("agent_event", json!({"event": ev}))["delivered"].clone();
    let next = || notified_json(&host.wait_notify("node", "event "));

    assert_eq!(agent(json!({"type": "turn_start", "step": 2})), 1);
    let e = next();
    assert_eq!(
        (e["event"].clone(), e["step"].clone()),
        (json!("turn_start"), json!(2)),
        "{e}"
    );

    assert_eq!(
        agent(
            json!({"type": "tool_call", "id": "call_00_x", "name": "bash", "args": {"command": "uname -a"}})
        ),
        1
    );
    let e = next();
    assert_eq!(e["event"], "tool_call", "{e}");
    assert_eq!(e["tool_id"], "call_00_x", "{e}");
    assert_eq!(e["tool_name"], "bash", "{e}");
    assert_eq!(e["tool_args"], json!({"command": "uname -a"}), "{e}");

    assert_eq!(
        agent(
            json!({"type": "assistant_message", "time": "t", "content": [
                {"type": "text", "text": "Hello"},
                {"type": "tool_call", "id": "c", "name": "bash", "args": {}},
                {"type": "text", "text": "world"}
            ]})
        ),
        1
    );
    let e = next();
    assert_eq!(e["event"], "assistant_message", "{e}");
    let text = e["text"].as_str().unwrap();
    assert!(
        text.starts_with("Hello") && text.ends_with("world") && !text.contains("bash"),
        "{e}"
    );

    assert_eq!(
        agent(json!({"type": "turn_end", "stop": "error", "error": "http 401"})),
        1
    );
    let e = next();
    assert_eq!(
        (e["event"].clone(), e["stop"].clone(), e["error"].clone()),
        (json!("turn_end"), json!("error"), json!("http 401")),
        "{e}"
    );

    for ignored in [
        json!({"type": "user_message", "content": []}),
        json!({"type": "tool_use_args", "delta": "{", "id": "x"}),
        json!({"type": "done"}),
    ] {
        assert_eq!(
            agent(ignored.clone()),
            0,
            "{ignored} is not a lifecycle event"
        );
    }
    host.shutdown();
}

#[test]
fn events_reach_only_subscribers_in_emit_order() {
    let mut b = HostBuilder::new();
    b.explicit(
        "turns",
        &node_manifest(
            "turns",
            &[
                "--events",
                "session_start,turn_start",
                "--tools",
                "mark_turns",
            ],
        ),
    );
    b.explicit(
        "tools",
        &node_manifest("tools", &["--events", "tool_call", "--tools", "mark_tools"]),
    );
    let host = b.start();
    host.ready();
    let d = host.ok("emit", json!({"event": {"event": "session_start"}}));
    assert_eq!(d["delivered"], 1, "{d}");
    for step in 1..=100 {
        let d = host.ok(
            "emit",
            json!({"event": {"event": "turn_start", "step": step}}),
        );
        assert_eq!(d["delivered"], 1, "{d}");
    }
    let d = host.ok(
        "emit",
        json!({"event": {"event": "tool_call", "tool_id": "t", "tool_name": "read", "tool_args": {"path": "x"}}}),
    );
    assert_eq!(d["delivered"], 1, "{d}");
    let d = host.ok(
        "emit",
        json!({"event": {"event": "turn_end", "stop": "end_turn"}}),
    );
    assert_eq!(d["delivered"], 0, "nobody subscribed to turn_end: {d}");

    let first = notified_json(&host.wait_notify("turns", "event "));
    assert_eq!(first["event"], "session_start", "{first}");
    for step in 1..=100 {
        let e = notified_json(&host.wait_notify("turns", "event "));
        assert_eq!(e["event"], "turn_start", "{e}");
        assert_eq!(e["step"], step, "events arrive in emit order: {e}");
    }
    let e = notified_json(&host.wait_notify("tools", "event "));
    assert_eq!(e["event"], "tool_call", "{e}");
    // The markers: each extension answers a tool call after the frames sent before it.
    for tool in ["mark_turns", "mark_tools"] {
        assert_eq!(host.call_tool(tool, json!({}))["is_error"], false);
    }
    assert!(
        host.events(|v| is_notify(v, "turns", "event ")).is_empty(),
        "turns got extra events"
    );
    assert!(
        host.events(|v| is_notify(v, "tools", "event ")).is_empty(),
        "tools got extra events"
    );
    host.shutdown();
}

#[test]
fn event_pass_through_fields_reach_the_extension() {
    let mut b = HostBuilder::new();
    b.explicit("rs", &rs_manifest("rs", &[]));
    let host = b.start();
    host.ready();
    host.ok(
        "emit",
        json!({"event": {"event": "turn_start", "step": 4, "session_id": "s-1", "agent_run_id": "r-9", "cwd": "/w"}}),
    );
    let e = notified_json(&host.wait_notify("rs", "event "));
    assert_eq!(e["step"], 4, "{e}");
    assert_eq!(e["session_id"], "s-1", "{e}");
    assert_eq!(e["agent_run_id"], "r-9", "{e}");
    assert_eq!(e["cwd"], "/w", "{e}");
    host.shutdown();
}

#[test]
fn extension_runs_in_its_directory_and_its_stderr_goes_to_its_log() {
    let mut b = HostBuilder::new();
    let dir = b.explicit("py", &py_manifest("py", &[]));
    let host = b.start();
    host.ready();
    let (_, cwd) = parse_started(&host.wait_notify("py", "started "));
    assert_eq!(
        std::fs::canonicalize(&cwd).unwrap(),
        std::fs::canonicalize(&dir).unwrap(),
        "the extension's working directory is its folder"
    );
    let e = host.entry("py");
    let log = host.home.join("logs").join("ext-py.log");
    assert_eq!(e["log"], json!(log.to_str().unwrap()), "{e}");
    let deadline = Instant::now() + EVENT_TIMEOUT;
    while !host.log("py").contains("py-ext stderr: started py") {
        assert!(
            Instant::now() < deadline,
            "stderr not in the log: {:?}",
            host.log("py")
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    host.shutdown();
}

#[test]
fn initial_registrations_are_announced_once() {
    let mut b = HostBuilder::new();
    b.explicit("rs", &rs_manifest("rs", &[]));
    let host = b.start();
    host.ready();
    // Announced once: the first arrives (it may follow host_ready), no second one.
    let is_change = |v: &Value| v["type"] == "registry_changed" && v["extension"] == "rs";
    host.wait_event("registry_changed of rs", EVENT_TIMEOUT, is_change);
    // The marker: the extension answers a call after its registrations and `ready`.
    assert_eq!(host.call_tool("echo", json!({}))["is_error"], false);
    let more = host.events(is_change);
    assert!(more.is_empty(), "announced again: {more:?}");
    host.shutdown();
}
