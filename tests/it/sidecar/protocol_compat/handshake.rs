//! Handshake and registration

use super::*;
use serde_json::json;

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
