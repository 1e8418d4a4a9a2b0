//! Behaviours of the published host

use super::*;
use serde_json::{json, Value};
use std::time::{Duration, Instant};

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
