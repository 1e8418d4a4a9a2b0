//! The sandboxed transport: WASI preview-2 components (a reactor and a command) run in
//! wasmtime inside `zot host`, driven over pipes like any agent would.
//!
//! The guests are the `scenario` test guest (tests/guests/scenario/src/lib.rs documents
//! its tools) built three ways by `zot-test-guests`: [`REACTOR`] and [`COMMAND`]
//! (components) and [`COMMAND_NATIVE`] (the same command source as a native stdio
//! extension, to compare transcripts with).
//!
//! Grants are written straight into `$ZOT_HOME/grants/<name>.json` by [`grant`]: the
//! grant of the global install `<name>`, so a test that grants, or looks at a data dir,
//! lays its extension out as a global install ([`HostBuilder::global`]).

use crate::common::*;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use zot_test_guests::{COMMAND, COMMAND_NATIVE, COMMAND_P1, REACTOR, SDK_PROBE};

// ---------------------------------------------------------------------------------------
// Helpers

/// The kinds of WebAssembly the host runs: two kinds of component, and the command guest
/// as a WASI preview-1 core module.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Reactor,
    Command,
    Preview1,
}

impl Kind {
    const BOTH: [Kind; 3] = [Kind::Reactor, Kind::Command, Kind::Preview1];

    fn wasm(self) -> &'static str {
        match self {
            Kind::Reactor => REACTOR,
            Kind::Command => COMMAND,
            Kind::Preview1 => COMMAND_P1,
        }
    }

    /// As `list` names it in `sandbox.component`.
    fn label(self) -> &'static str {
        match self {
            Kind::Reactor => "reactor",
            Kind::Command => "command",
            Kind::Preview1 => "preview1",
        }
    }
}

/// A component manifest with no permissions or limits beyond the defaults.
fn component(name: &str, wasm: &str) -> Value {
    json!({"name": name, "version": "0.1.0", "wasm": wasm, "description": "test guest"})
}

/// A component manifest asking for `permissions` within `limits`.
fn component_with(name: &str, wasm: &str, permissions: Value, limits: Value) -> Value {
    let mut m = component(name, wasm);
    m["permissions"] = permissions;
    m["limits"] = limits;
    m
}

/// The command guest built natively, as an ordinary stdio extension.
fn native(name: &str) -> Value {
    json!({"name": name, "version": "0.1.0", "exec": COMMAND_NATIVE, "description": "test guest"})
}

/// Hex SHA-256 of a file, by `sha256sum` (a grant applies only to the component whose
/// hash it records).
fn sha256_of(path: &str) -> String {
    let out = std::process::Command::new("sha256sum")
        .arg(path)
        .output()
        .expect("sha256sum runs");
    assert!(out.status.success(), "sha256sum {path}");
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .next()
        .expect("a hash")
        .to_string()
}

/// Records the user's grant for the global install `name`: `$ZOT_HOME/grants/<name>.json`.
fn grant(home: &Path, name: &str, wasm: &str, permissions: Value, memory_mb: Option<u64>) {
    let mut g = json!({"sha256": sha256_of(wasm), "permissions": permissions});
    if let Some(mb) = memory_mb {
        g["memory_mb"] = json!(mb);
    }
    let dir = home.join("grants");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join(format!("{name}.json")),
        serde_json::to_string_pretty(&g).unwrap(),
    )
    .unwrap();
}

/// The host directory the global install `name` sees as `/data`.
fn data_dir(home: &Path, name: &str) -> PathBuf {
    home.join("data").join(name)
}

/// Every file called `name` below `dir`.
fn files_named(dir: &Path, name: &str) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(files_named(&path, name));
        } else if entry.file_name() == name {
            out.push(path);
        }
    }
    out
}

/// Calls a guest tool that must succeed at the host level: (is_error, first text).
fn tool(host: &Host, name: &str, args: Value) -> (bool, String) {
    let d = host.call_tool(name, args);
    (d["is_error"] == json!(true), first_text(&d))
}

/// A guest tool result that must not be an error; returns its text.
fn tool_ok(host: &Host, name: &str, args: Value) -> String {
    let (is_error, text) = tool(host, name, args.clone());
    assert!(
        !is_error,
        "{name} {args} failed: {text}{}",
        host.diagnostics()
    );
    text
}

/// A guest tool result that must be an error (the sandbox said no); returns its text.
fn tool_denied(host: &Host, name: &str, args: Value) -> String {
    let (is_error, text) = tool(host, name, args.clone());
    assert!(
        is_error,
        "{name} {args} should have been denied, got: {}",
        &text[..text.len().min(300)]
    );
    println!("  denied {name} {args}: {text}");
    text
}

/// The host still answers, and so does the guest `name`.
fn assert_unharmed(host: &Host, name: &str) {
    assert_eq!(host.ok("ping", json!({}))["pong"], true);
    let d = host.call_tool("echo", json!({"still": "here"}));
    assert_eq!(d["extension"], name, "{d}");
    assert_eq!(d["is_error"], false, "{d}");
    let echoed: Value = serde_json::from_str(&first_text(&d)).unwrap();
    assert_eq!(echoed, json!({"still": "here"}));
    assert_eq!(host.entry(name)["state"], "ready");
}

/// Waits for `extension_exited` of `name`.
fn wait_exited(host: &Host, name: &str, timeout: Duration) -> Value {
    host.wait_event(&format!("extension_exited of {name}"), timeout, |v| {
        v["type"] == "extension_exited" && v["extension"] == name
    })
}

/// Polls the log of `name` until it contains `needle` (the part after `from` bytes).
fn wait_log(host: &Host, name: &str, from: usize, needle: &str, timeout: Duration) -> String {
    let deadline = Instant::now() + timeout;
    loop {
        let log = host.log(name);
        let tail = log.get(from..).unwrap_or_default();
        if tail.contains(needle) {
            return tail.to_string();
        }
        if Instant::now() >= deadline {
            panic!(
                "the log of {name} has no {needle:?} within {timeout:?}:\n{tail}{}",
                host.diagnostics()
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The first line of `log` containing `needle`.
fn log_line<'a>(log: &'a str, needle: &str) -> &'a str {
    log.lines().find(|l| l.contains(needle)).unwrap_or("")
}

/// The `hello_ack` the guest reported (it notifies `hello_ack <json>`).
fn hello_ack(host: &Host, name: &str) -> Value {
    notified_json(&host.wait_notify(name, "hello_ack "))
}

// ---------------------------------------------------------------------------------------
// 1. Parity: the same scripted session, natively and as both kinds of component

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

// ---------------------------------------------------------------------------------------
// 2. Escapes are denied; what is allowed works

/// Every way out of the sandbox the guest can try, for one kind of component; the host
/// is unharmed afterwards.
fn escapes_are_denied(kind: Kind) {
    let name = format!("esc-{}", kind.label());
    let secret_var = "ZOT_WASM_TEST_SECRET";
    let mut b = HostBuilder::new();
    b.env(secret_var, "hunter2");
    let m = component_with(
        &name,
        kind.wasm(),
        json!({"cwd": "read", "env": [secret_var]}),
        json!({}),
    );
    let dir = b.global(&name, &m);
    let outside = b.scratch().join("outside.txt");
    std::fs::write(&outside, "outside the sandbox").unwrap();
    let project_file = b.cwd().join("project.txt");
    std::fs::write(&project_file, "project file").unwrap();
    let home = b.home();
    let host = b.start();
    host.ready();
    let ack = hello_ack(&host, &name);
    assert_eq!(ack["data_dir"], "/data", "{ack}");
    println!("{name}: hello_ack {ack}");

    // Files outside /data.
    tool_denied(&host, "fs_read", json!({"path": "/etc/passwd"}));
    tool_denied(&host, "fs_read", json!({"path": "/data/../../etc/passwd"}));
    tool_denied(
        &host,
        "fs_read",
        json!({"path": "/data/../../../../../../etc/passwd"}),
    );
    tool_denied(&host, "fs_read", json!({"path": outside.to_str().unwrap()}));
    // The project dir was asked for but not granted.
    tool_denied(
        &host,
        "fs_read",
        json!({"path": project_file.to_str().unwrap()}),
    );
    let (_, root) = tool(&host, "fs_list", json!({"path": "/"}));
    println!("  fs_list / -> {root}");

    // Symlinks out of /data: creating one may or may not be refused, following it is.
    for (target, link) in [
        ("/etc/passwd", "/data/abs-link"),
        ("../../../outside.txt", "/data/rel-link"),
        ("../../../../../../../../etc/passwd", "/data/deep-link"),
    ] {
        let (is_error, text) = tool(&host, "fs_symlink", json!({"target": target, "link": link}));
        println!("  fs_symlink {target} at {link}: is_error={is_error} {text}");
        let read = tool_denied(&host, "fs_read", json!({"path": link}));
        assert!(
            !read.contains("root:") && !read.contains("outside the sandbox"),
            "read through {link}: {read}"
        );
    }
    let rel_link = data_dir(&home, &name).join("rel-link");
    if rel_link.symlink_metadata().is_ok() {
        // The link exists on the host and resolves there, but not for the guest.
        assert_eq!(
            std::fs::read_to_string(&rel_link).unwrap(),
            "outside the sandbox"
        );
    }

    // Environment: asked but not granted, and never asked.
    for var in [secret_var, "PATH", "HOME", "ZOT_HOME"] {
        let text = tool_denied(&host, "env", json!({"name": var}));
        assert_eq!(text, "not set", "env {var}");
    }
    let log = wait_log(&host, &name, 0, "withheld: env", EVENT_TIMEOUT);
    let line = log_line(&log, "withheld: env");
    println!("  log: {line}");
    assert!(
        line.contains(&format!("withheld: env {secret_var}: not granted")),
        "{line}"
    );
    assert!(
        log.contains("withheld: cwd"),
        "the cwd is withheld too:\n{log}"
    );

    // Its own manifest and its grant file.
    let manifest_path = dir.join("extension.json");
    let manifest_before = std::fs::read_to_string(&manifest_path).unwrap();
    let grant_path = home.join("grants").join(format!("{name}.json"));
    for path in [
        manifest_path.to_str().unwrap().to_string(),
        grant_path.to_str().unwrap().to_string(),
        format!("/data/../../grants/{name}.json"),
        format!("/data/../../extensions/{name}/extension.json"),
    ] {
        tool_denied(
            &host,
            "fs_write",
            json!({"path": path, "text": "{\"granted\": \"everything\"}"}),
        );
    }
    assert_eq!(
        std::fs::read_to_string(&manifest_path).unwrap(),
        manifest_before,
        "the manifest was changed"
    );
    assert!(!grant_path.exists(), "a grant file appeared");
    assert!(
        !home.join("grants").exists(),
        "something was written to grants/"
    );

    assert_unharmed(&host, &name);
    host.shutdown();
}

#[test]
fn reactor_cannot_escape_its_sandbox() {
    escapes_are_denied(Kind::Reactor);
}

#[test]
fn command_cannot_escape_its_sandbox() {
    escapes_are_denied(Kind::Command);
}

#[test]
fn preview1_cannot_escape_its_sandbox() {
    escapes_are_denied(Kind::Preview1);
}

#[test]
fn data_dir_is_writable_and_survives_a_host_restart() {
    for kind in Kind::BOTH {
        let name = format!("keep-{}", kind.label());
        let root = TempDir::new("wasm-keep");
        let m = component(&name, kind.wasm());
        let text = format!("kept by {name} ✓");

        let mut b = HostBuilder::in_dir(root.path());
        b.global(&name, &m);
        let host = b.start();
        host.ready();
        let wrote = tool_ok(
            &host,
            "fs_write",
            json!({"path": "/data/note.txt", "text": text}),
        );
        assert_eq!(wrote, format!("wrote {} bytes", text.len()));
        assert_eq!(
            tool_ok(&host, "fs_read", json!({"path": "/data/note.txt"})),
            text
        );
        let host_file = data_dir(&host.home, &name).join("note.txt");
        assert_eq!(std::fs::read_to_string(&host_file).unwrap(), text);
        host.shutdown();

        // A new host on the same ZOT_HOME.
        let mut b = HostBuilder::in_dir(root.path());
        b.global(&name, &m);
        let host = b.start();
        host.ready();
        assert_eq!(
            tool_ok(&host, "fs_read", json!({"path": "/data/note.txt"})),
            text
        );
        let listed = tool_ok(&host, "fs_list", json!({"path": "/data"}));
        println!("{name}: /data after a restart: {listed}");
        let listed: Value = serde_json::from_str(&listed).unwrap();
        assert!(
            listed.as_array().unwrap().contains(&json!("note.txt")),
            "{listed}"
        );
        host.shutdown();
    }
}

#[test]
fn granted_env_cwd_and_memory_are_in_force() {
    for kind in Kind::BOTH {
        let name = format!("granted-{}", kind.label());
        let var = "ZOT_WASM_TEST_GRANTED";
        let mut b = HostBuilder::new();
        b.env(var, "granted value")
            .env("ZOT_WASM_TEST_UNASKED", "x");
        let m = component_with(
            &name,
            kind.wasm(),
            json!({"cwd": "read", "env": [var]}),
            json!({"memory_mb": 128}),
        );
        b.global(&name, &m);
        grant(
            &b.home(),
            &name,
            kind.wasm(),
            json!({"data_dir": true, "cwd": "read", "env": [var]}),
            Some(128),
        );
        let project_file = b.cwd().join("project.txt");
        std::fs::write(&project_file, "project file").unwrap();
        std::fs::write(b.scratch().join("outside.txt"), "outside the project").unwrap();
        let host = b.start();
        host.ready();
        let ack = hello_ack(&host, &name);
        let cwd = ack["cwd"].as_str().expect("hello_ack.cwd").to_string();
        println!("{name}: hello_ack.cwd {cwd}, data_dir {}", ack["data_dir"]);

        assert_eq!(tool_ok(&host, "env", json!({"name": var})), "granted value");
        tool_denied(&host, "env", json!({"name": "ZOT_WASM_TEST_UNASKED"}));

        let in_cwd = |f: &str| format!("{}/{f}", cwd.trim_end_matches('/'));
        assert_eq!(
            tool_ok(&host, "fs_read", json!({"path": in_cwd("project.txt")})),
            "project file"
        );
        let listed = tool_ok(&host, "fs_list", json!({"path": cwd}));
        assert!(listed.contains("project.txt"), "{listed}");
        // Read-only.
        tool_denied(
            &host,
            "fs_write",
            json!({"path": in_cwd("project.txt"), "text": "changed"}),
        );
        tool_denied(
            &host,
            "fs_write",
            json!({"path": in_cwd("new.txt"), "text": "new"}),
        );
        assert_eq!(
            std::fs::read_to_string(&project_file).unwrap(),
            "project file"
        );
        assert!(!host.cwd.join("new.txt").exists(), "new.txt was created");
        // Out of the project dir (the file exists beside it on the host).
        tool_denied(&host, "fs_read", json!({"path": in_cwd("../outside.txt")}));

        // 128 MiB granted: 100 MiB fit.
        let alloc = tool_ok(&host, "alloc", json!({"mb": 100}));
        assert_eq!(
            serde_json::from_str::<Value>(&alloc).unwrap()["mb"],
            100,
            "{alloc}"
        );

        let log = host.log(&name);
        assert!(!log.contains("withheld"), "nothing is withheld:\n{log}");
        assert!(
            !log.contains("changed since permissions were granted"),
            "the grant is for this very component:\n{log}"
        );
        assert_unharmed(&host, &name);
        host.shutdown();
    }
}

#[test]
fn without_the_data_dir_permission_nothing_is_mounted() {
    let name = "nodata";
    let mut b = HostBuilder::new();
    b.global(
        name,
        &component_with(name, REACTOR, json!({"data_dir": false}), json!({})),
    );
    let host = b.start();
    host.ready();
    let ack = hello_ack(&host, name);
    assert_eq!(ack["data_dir"], "", "{ack}");
    tool_denied(
        &host,
        "fs_write",
        json!({"path": "/data/x.txt", "text": "x"}),
    );
    tool_denied(&host, "fs_list", json!({"path": "/data"}));
    assert!(
        !data_dir(&host.home, name).exists(),
        "a data dir was created on the host"
    );
    assert_eq!(host.entry(name)["sandbox"]["asked"]["data_dir"], false);
    assert_unharmed(&host, name);
    host.shutdown();
}

// ---------------------------------------------------------------------------------------
// 3. Limits

/// A guest spinning in a tool call is stopped at the call's deadline; a stdio extension
/// in the same host answers throughout. `via_manifest`: the deadline comes from the
/// manifest's `limits.tool_timeout_ms`, not the request's `timeout_ms`.
fn spinning_tool_call_is_stopped(kind: Kind, via_manifest: bool) {
    let _serial = serial();
    let name = format!("spin-{}", kind.label());
    let mut b = HostBuilder::new();
    let limits = if via_manifest {
        json!({"tool_timeout_ms": 500})
    } else {
        json!({})
    };
    b.explicit(
        &name,
        &component_with(&name, kind.wasm(), json!({}), limits),
    );
    b.explicit(
        "steady",
        &rs_manifest("steady", &["--tools", "echo_rs", "--commands", ""]),
    );
    let host = b.start();
    host.ready();
    let mut fields = json!({"name": "spin", "args": {}});
    if !via_manifest {
        fields["timeout_ms"] = json!(500);
    }
    let t = Instant::now();
    let id = host.send("call_tool", fields);
    let mut during = 0;
    let mut worst = Duration::ZERO;
    let r = loop {
        if let Some(r) = host.try_wait_response(&id, Duration::from_millis(20)) {
            break r;
        }
        let p = Instant::now();
        let d = host.call_tool("echo_rs", json!({"n": during}));
        assert_eq!(d["extension"], "steady", "{d}");
        assert_eq!(host.ok("ping", json!({}))["pong"], true);
        worst = worst.max(p.elapsed());
        during += 1;
        assert!(
            t.elapsed() < Duration::from_secs(30),
            "the spinning call is still pending after 30 s{}",
            host.diagnostics()
        );
    };
    let failed_after = t.elapsed();
    assert_eq!(r["success"], false, "{r}");
    let err = r["error"].as_str().unwrap_or_default();
    assert!(err.contains(&name), "the error names the extension: {err}");
    let ev = wait_exited(&host, &name, Duration::from_secs(10));
    println!(
        "{name}: spin failed after {failed_after:?} ({err}); exited {:?} after start of call: {ev}; \
         {during} calls to the other extension meanwhile, slowest {worst:?}",
        t.elapsed()
    );
    assert_eq!(ev["reason"], "deadline exceeded", "{ev}");
    assert!(failed_after < Duration::from_secs(10), "{failed_after:?}");
    assert!(worst < Duration::from_secs(5), "{worst:?}");
    assert_eq!(host.entry(&name)["state"], "exited");
    let log = host.log(&name);
    assert!(
        log.contains("extension gone: deadline exceeded"),
        "log:\n{log}"
    );
    // The host and the other extension go on.
    for i in 0..5 {
        let d = host.call_tool("echo_rs", json!({"after": i}));
        assert_eq!(d["is_error"], false, "{d}");
    }
    host.fails("call_tool", json!({"name": "echo", "args": {}}));
    host.shutdown();
}

#[test]
fn reactor_spinning_in_a_tool_call_is_stopped_at_its_timeout() {
    spinning_tool_call_is_stopped(Kind::Reactor, false);
}

#[test]
fn command_spinning_in_a_tool_call_is_stopped_at_its_timeout() {
    spinning_tool_call_is_stopped(Kind::Command, false);
}

#[test]
fn preview1_spinning_in_a_tool_call_is_stopped_at_its_timeout() {
    spinning_tool_call_is_stopped(Kind::Preview1, false);
}

#[test]
fn manifest_tool_timeout_stops_a_spinning_call() {
    spinning_tool_call_is_stopped(Kind::Reactor, true);
}

#[test]
fn shutdown_stops_a_component_spinning_in_a_long_tool_call() {
    let _serial = serial();
    for kind in Kind::BOTH {
        let name = format!("longspin-{}", kind.label());
        let mut b = HostBuilder::new();
        b.explicit(&name, &component(&name, kind.wasm()));
        let mut host = b.start();
        host.ready();
        let id = host.send(
            "call_tool",
            json!({"name": "spin", "args": {"tell": true}, "timeout_ms": 120_000}),
        );
        // The sentinel: the call is inside the component, spinning.
        host.wait_notify(&name, "spinning");
        assert!(host.try_wait_response(&id, Duration::ZERO).is_none());
        let t = Instant::now();
        let sid = host.send("shutdown", json!({}));
        let status = host.wait_exit(Duration::from_secs(30));
        let took = t.elapsed();
        println!("{name}: shutdown while spinning: exit {status} after {took:?}");
        assert!(status.success(), "{status}{}", host.diagnostics());
        assert!(took < Duration::from_secs(15), "{took:?}");
        let r = host.try_wait_response(&sid, Duration::from_secs(1));
        assert!(r.is_some_and(|r| r["success"] == true), "shutdown answered");
        let r = host.try_wait_response(&id, Duration::from_secs(1));
        println!("  the spinning call: {r:?}");
        if let Some(r) = r {
            assert_eq!(r["success"], false, "{r}");
        }
        let log = host.log(&name);
        println!("  {}", log_line(&log, "extension gone"));
    }
}

/// A command that waits for stdin together with a 1 ms timer, is woken by the timer and
/// then spins, is still under a deadline: it is stopped (`deadline exceeded`), while a
/// stdio extension in the same host answers throughout. Once (`polls` 1), and in a loop
/// of such waits that would run far past the call's budget.
#[test]
fn command_woken_from_a_stdin_wait_by_a_timer_is_still_under_a_deadline() {
    let _serial = serial();
    for polls in [1u64, 1_000_000] {
        let name = format!("pollspin-{polls}");
        let mut b = HostBuilder::new();
        b.explicit(&name, &component(&name, COMMAND));
        b.explicit(
            "steady",
            &rs_manifest("steady", &["--tools", "echo_rs", "--commands", ""]),
        );
        let host = b.start();
        host.ready();
        let t = Instant::now();
        let id = host.send(
            "call_tool",
            json!({"name": "poll_spin", "args": {"polls": polls}, "timeout_ms": 1000}),
        );
        let mut during = 0;
        let r = loop {
            if let Some(r) = host.try_wait_response(&id, Duration::from_millis(20)) {
                break r;
            }
            let d = host.call_tool("echo_rs", json!({"n": during}));
            assert_eq!(d["extension"], "steady", "{d}");
            during += 1;
        };
        assert_eq!(r["success"], false, "{r}");
        // Before the fix, the guest spun on with no deadline: no exit at all.
        let ev = wait_exited(&host, &name, Duration::from_secs(10));
        println!(
            "{name}: exited {:?} after the call: {ev}; {during} calls to the other extension meanwhile",
            t.elapsed()
        );
        assert_eq!(ev["reason"], "deadline exceeded", "{ev}");
        assert_eq!(host.entry(&name)["state"], "exited");
        let d = host.call_tool("echo_rs", json!({"after": true}));
        assert_eq!(d["extension"], "steady", "{d}");
        assert_eq!(d["is_error"], false, "{d}");
        host.shutdown();
    }
}

#[test]
fn reload_restarts_a_stopped_component() {
    let _serial = serial();
    let name = "again";
    let mut b = HostBuilder::new();
    b.explicit(name, &component(name, REACTOR));
    let host = b.start();
    host.ready();
    host.fails(
        "call_tool",
        json!({"name": "spin", "args": {}, "timeout_ms": 300}),
    );
    let ev = wait_exited(&host, name, EVENT_TIMEOUT);
    assert_eq!(ev["reason"], "deadline exceeded", "{ev}");
    host.fails("call_tool", json!({"name": "echo", "args": {}}));
    let before = host.log(name).len();
    let report = host.ok("reload", json!({}));
    println!("reload: {report}");
    assert_eq!(report["loaded"], json!([name]), "{report}");
    assert_eq!(report["ready"], json!([name]), "{report}");
    assert_eq!(report["errors"], json!([]), "{report}");
    let log = host.log(name)[before..].to_string();
    println!("  {}", log_line(&log, "already compiled"));
    // The same process still holds the compiled component: nothing is compiled or read.
    assert!(
        log.contains("already compiled in this process"),
        "log:\n{log}"
    );
    assert!(!log.contains("not cached"), "log:\n{log}");
    assert_unharmed(&host, name);
    host.shutdown();
}

#[test]
fn spinning_at_start_is_stopped_and_host_ready_still_comes() {
    let _serial = serial();
    let mut b = HostBuilder::new();
    let names: Vec<(Kind, String)> = Kind::BOTH
        .iter()
        .map(|k| (*k, format!("startspin-{}", k.label())))
        .collect();
    for (kind, name) in &names {
        b.global(name, &component(name, kind.wasm()));
        let dir = data_dir(&b.home(), name);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("start-mode"), "spin\n").unwrap();
    }
    b.explicit(
        "steady",
        &rs_manifest("steady", &["--tools", "echo_rs", "--commands", ""]),
    );
    let host = b.start();
    let ready = host.ready_within(Duration::from_secs(15));
    let ready_after = host.started.elapsed();
    println!("host_ready after {ready_after:?}: {ready:?}");
    assert!(ready.contains(&"steady".to_string()), "{ready:?}");
    let d = host.call_tool("echo_rs", json!({"while": "spinning"}));
    assert_eq!(d["is_error"], false, "{d}");
    for (_, name) in &names {
        let ev = wait_exited(&host, name, Duration::from_secs(25));
        let after = host.started.elapsed();
        println!("{name}: exited {after:?} after the host started: {ev}");
        assert_eq!(ev["reason"], "deadline exceeded", "{ev}");
        assert!(after < Duration::from_secs(25), "{after:?}");
        assert_eq!(host.entry(name)["state"], "exited");
    }
    assert_eq!(host.ok("ping", json!({}))["pong"], true);
    let d = host.call_tool("echo_rs", json!({"after": "spinning"}));
    assert_eq!(d["is_error"], false, "{d}");
    host.shutdown();
}

#[test]
fn trapping_at_start_is_reported_and_the_host_goes_on() {
    let mut b = HostBuilder::new();
    for kind in Kind::BOTH {
        let name = format!("starttrap-{}", kind.label());
        b.global(&name, &component(&name, kind.wasm()));
        let dir = data_dir(&b.home(), &name);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("start-mode"), "trap").unwrap();
    }
    let host = b.start();
    let ready = host.ready();
    println!("host_ready after {:?}: {ready:?}", host.started.elapsed());
    for kind in Kind::BOTH {
        let name = format!("starttrap-{}", kind.label());
        let ev = wait_exited(&host, &name, EVENT_TIMEOUT);
        println!("{name}: {ev}");
        let reason = ev["reason"].as_str().unwrap_or_default();
        assert!(reason.starts_with("trap:"), "{ev}");
        let entry = host.entry(&name);
        assert_eq!(entry["state"], "exited", "{entry}");
    }
    assert_eq!(host.ok("ping", json!({}))["pong"], true);
    host.shutdown();
}

fn allocating_past_the_limit_stops_the_guest(kind: Kind) {
    let _serial = serial();
    let name = format!("alloc-{}", kind.label());
    let mut b = HostBuilder::new();
    b.explicit(&name, &component(&name, kind.wasm()));
    let host = b.start();
    host.ready();
    assert_eq!(host.entry(&name)["sandbox"]["memory_mb"], 64);
    // 16 MiB fit in the default 64.
    tool_ok(&host, "alloc", json!({"mb": 16}));
    let t = Instant::now();
    let err = host.fails("call_tool", json!({"name": "alloc", "args": {"mb": 200}}));
    let ev = wait_exited(&host, &name, EVENT_TIMEOUT);
    let hwm = host.vm_hwm_kib();
    println!(
        "{name}: alloc 200 MiB failed after {:?} ({err}); {ev}; zot VmHWM {hwm} KiB",
        t.elapsed()
    );
    assert_eq!(ev["reason"], "memory limit", "{ev}");
    assert!(err.contains(&name), "{err}");
    assert!(hwm < 300 * 1024, "zot peaked at {hwm} KiB");
    assert_eq!(host.ok("ping", json!({}))["pong"], true);
    assert!(host.log(&name).contains("extension gone: memory limit"));
    host.shutdown();
}

#[test]
fn reactor_allocating_past_64_mib_exits_with_memory_limit() {
    allocating_past_the_limit_stops_the_guest(Kind::Reactor);
}

#[test]
fn command_allocating_past_64_mib_exits_with_memory_limit() {
    allocating_past_the_limit_stops_the_guest(Kind::Command);
}

#[test]
fn preview1_allocating_past_64_mib_exits_with_memory_limit() {
    allocating_past_the_limit_stops_the_guest(Kind::Preview1);
}

fn deep_recursion_traps_cleanly(kind: Kind) {
    let name = format!("recurse-{}", kind.label());
    let mut b = HostBuilder::new();
    b.explicit(&name, &component(&name, kind.wasm()));
    let host = b.start();
    host.ready();
    assert_eq!(
        tool_ok(&host, "recurse", json!({"depth": 1000})),
        r#"{"depth":1000}"#
    );
    let t = Instant::now();
    let err = host.fails(
        "call_tool",
        json!({"name": "recurse", "args": {"depth": 1_000_000}}),
    );
    let ev = wait_exited(&host, &name, EVENT_TIMEOUT);
    println!(
        "{name}: recurse 1,000,000 failed after {:?} ({err}); {ev}",
        t.elapsed()
    );
    let reason = ev["reason"].as_str().unwrap_or_default();
    assert!(reason.starts_with("trap:"), "{ev}");
    assert_eq!(host.ok("ping", json!({}))["pong"], true);
    assert_eq!(host.entry(&name)["state"], "exited");
    host.shutdown();
}

#[test]
fn reactor_deep_recursion_traps_cleanly() {
    deep_recursion_traps_cleanly(Kind::Reactor);
}

#[test]
fn command_deep_recursion_traps_cleanly() {
    deep_recursion_traps_cleanly(Kind::Command);
}

#[test]
fn preview1_deep_recursion_traps_cleanly() {
    deep_recursion_traps_cleanly(Kind::Preview1);
}

fn notify_flood_is_delivered_in_full(kind: Kind) {
    let _serial = serial();
    const FLOOD: u64 = 1_000_000;
    let name = format!("flood-{}", kind.label());
    let mut b = HostBuilder::new();
    b.explicit(&name, &component(&name, kind.wasm()));
    let host = b.start();
    {
        let name = name.clone();
        host.set_event_filter(move |v| !is_notify(v, &name, "flood "));
    }
    host.ready();
    let t = Instant::now();
    let id = host.send(
        "call_tool",
        json!({"name": "flood", "args": {"count": FLOOD}, "timeout_ms": 600_000}),
    );
    let (r, pings, worst) = host.ping_until(Duration::from_secs(600), |host| {
        host.try_wait_response(&id, Duration::from_millis(50))
    });
    let call_took = t.elapsed();
    assert_eq!(r["success"], true, "{r}{}", host.diagnostics());
    let text = first_text(&r["data"]);
    assert_eq!(text, format!("{{\"sent\":{FLOOD}}}"));
    // The notifies may trail the response a little.
    let deadline = Instant::now() + Duration::from_secs(60);
    while host.filtered_events() < FLOOD && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let took = t.elapsed();
    let seen = host.filtered_events();
    let hwm = host.vm_hwm_kib();
    println!(
        "{name}: flood of {FLOOD} notifies in one call: call done in {call_took:?}, {seen} seen \
         in {took:?} ({:.0}/s); {pings} pings meanwhile, slowest {worst:?}; zot VmHWM {hwm} KiB",
        seen as f64 / took.as_secs_f64()
    );
    assert_eq!(seen, FLOOD, "notifies lost{}", host.diagnostics());
    assert!(worst < Duration::from_secs(5), "a ping took {worst:?}");
    assert!(hwm < 300 * 1024, "zot peaked at {hwm} KiB");
    assert_unharmed(&host, &name);
    host.shutdown();
}

#[test]
fn reactor_notify_flood_is_delivered_in_full() {
    notify_flood_is_delivered_in_full(Kind::Reactor);
}

#[test]
fn command_notify_flood_is_delivered_in_full() {
    notify_flood_is_delivered_in_full(Kind::Command);
}

#[test]
fn preview1_notify_flood_is_delivered_in_full() {
    notify_flood_is_delivered_in_full(Kind::Preview1);
}

fn twenty_mib_both_ways(kind: Kind) {
    let _serial = serial();
    const N: usize = 20 * 1024 * 1024;
    let name = format!("big-{}", kind.label());
    let mut b = HostBuilder::new();
    b.explicit(&name, &component(&name, kind.wasm()));
    let host = b.start();
    host.ready();
    let want = payload(N);

    let t = Instant::now();
    let r = host.request_within(
        "call_tool",
        json!({"name": "big", "args": {"bytes": N}}),
        Duration::from_secs(120),
    );
    let out_took = t.elapsed();
    assert_eq!(r["success"], true, "{}", host.diagnostics());
    assert_eq!(r["data"]["is_error"], false);
    let got = r["data"]["content"][0]["text"].as_str().expect("text");
    println!(
        "{name}: 20 MiB result in {out_took:?}: {} bytes, fnv {:016x} (want {:016x})",
        got.len(),
        fnv1a(got.as_bytes()),
        fnv1a(want.as_bytes())
    );
    assert_eq!(got.len(), want.len(), "length");
    assert!(got == want, "the payload arrived altered");

    let t = Instant::now();
    let r = host.request_within(
        "call_tool",
        json!({"name": "big_in", "args": {"data": want}}),
        Duration::from_secs(120),
    );
    let in_took = t.elapsed();
    assert_eq!(r["success"], true, "{r}{}", host.diagnostics());
    let text = first_text(&r["data"]);
    println!(
        "{name}: 20 MiB argument in {in_took:?}: {text}; zot VmHWM {} KiB",
        host.vm_hwm_kib()
    );
    assert_eq!(r["data"]["is_error"], false, "{text}");
    let got: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(got["len"], N, "{got}");
    assert_eq!(
        got["fnv1a"],
        format!("{:016x}", fnv1a(want.as_bytes())),
        "{got}"
    );
    assert_unharmed(&host, &name);
    host.shutdown();
}

#[test]
fn reactor_twenty_mib_both_ways_intact() {
    twenty_mib_both_ways(Kind::Reactor);
}

#[test]
fn command_twenty_mib_both_ways_intact() {
    twenty_mib_both_ways(Kind::Command);
}

#[test]
fn preview1_twenty_mib_both_ways_intact() {
    twenty_mib_both_ways(Kind::Preview1);
}

#[test]
fn oversize_frame_from_a_component_is_skipped_and_it_goes_on() {
    let _serial = serial();
    for kind in Kind::BOTH {
        let name = format!("cap-{}", kind.label());
        let mut b = HostBuilder::new();
        b.explicit(&name, &component(&name, kind.wasm()));
        let (host, d) = the_frame_cap_drops_an_oversize_result(b);
        assert_eq!(first_text(&d), payload(512 * 1024));
        let log = host.log(&name);
        println!("  {}", log_line(&log, "skipped a"));
        assert!(
            log.contains("longer than the frame size limit"),
            "log:\n{log}"
        );
        assert_unharmed(&host, &name);
        host.shutdown();
    }
}

// ---------------------------------------------------------------------------------------
// 4. The compilation cache

/// The files under `$ZOT_HOME/cache`.
fn cache_files(home: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(home.join("cache"))
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    files.sort();
    files
}

/// Starts a host on `root` with the one reactor `name`, checks it works, returns the
/// part of its log written by this start.
fn start_and_log(root: &Path, name: &str) -> String {
    let mut b = HostBuilder::in_dir(root);
    b.explicit(name, &component(name, REACTOR));
    let host = b.start();
    let before = host.log(name).len();
    host.ready();
    assert_unharmed(&host, name);
    let log = host.log(name)[before..].to_string();
    host.shutdown();
    log
}

#[test]
fn second_start_loads_from_the_cache_and_a_corrupt_entry_is_recompiled() {
    let _serial = serial();
    let name = "cached";
    let root = TempDir::new("wasm-cache");
    let home = root.path().join("home");
    // A cache of its own, not the one the other tests share.
    std::fs::create_dir_all(home.join("cache")).unwrap();

    let cold = start_and_log(root.path(), name);
    let compiled = log_line(&cold, "compiled ");
    println!("first start: {compiled}");
    assert!(compiled.contains("(not cached)"), "log:\n{cold}");
    assert!(!cold.contains("from the compilation cache"), "log:\n{cold}");
    let files = cache_files(&home);
    assert_eq!(files.len(), 1, "one cache entry: {files:?}");
    let entry = files[0].clone();
    println!(
        "cache entry {} ({} bytes)",
        entry.display(),
        std::fs::metadata(&entry).unwrap().len()
    );

    let warm = start_and_log(root.path(), name);
    let loaded = log_line(&warm, "from the compilation cache");
    println!("second start: {loaded}");
    assert!(loaded.contains("loaded "), "log:\n{warm}");
    assert!(!warm.contains("compiled "), "log:\n{warm}");

    // Flip a byte in the middle of the entry.
    let mut bytes = std::fs::read(&entry).unwrap();
    let at = bytes.len() / 2;
    bytes[at] ^= 0xff;
    std::fs::write(&entry, &bytes).unwrap();
    let after_corruption = start_and_log(root.path(), name);
    let rejected = log_line(&after_corruption, "cache entry not used");
    println!(
        "after corrupting byte {at}: {rejected} / {}",
        log_line(&after_corruption, "compiled ")
    );
    assert!(
        rejected.contains("checksum"),
        "the corrupt entry is named and rejected:\n{after_corruption}"
    );
    assert!(
        after_corruption.contains("compiled "),
        "log:\n{after_corruption}"
    );
    assert_eq!(
        cache_files(&home),
        vec![entry.clone()],
        "one entry, replaced"
    );

    // The replaced entry is good again.
    let again = start_and_log(root.path(), name);
    println!("fourth start: {}", log_line(&again, "loaded "));
    assert!(
        again.contains("from the compilation cache"),
        "log:\n{again}"
    );
}

#[test]
fn files_that_are_not_components_are_an_error_state() {
    let mut b = HostBuilder::new();
    // A text file named x.wasm (relative to the manifest dir).
    let dir = b.scratch().join("exts").join("text");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("x.wasm"), "this is not WebAssembly\n").unwrap();
    b.explicit("text", &component("text", "x.wasm"));
    // A core module that is no preview-1 command: the empty module.
    let core = b.scratch().join("core.wasm");
    std::fs::write(&core, b"\0asm\x01\0\0\0").unwrap();
    b.explicit("core", &component("core", core.to_str().unwrap()));
    // A path that does not exist.
    b.explicit(
        "missing",
        &component("missing", "/nonexistent/zot/missing.wasm"),
    );
    // And a good one, which starts regardless.
    b.explicit("good", &component("good", REACTOR));
    let host = b.start();
    let ready = host.ready();
    println!("host_ready: {ready:?}");
    assert!(ready.contains(&"good".to_string()), "{ready:?}");
    for (name, words) in [
        ("text", "not a WebAssembly component (it is a text file)"),
        // A core module runs only as a WASI preview-1 command (issue 20): this one is not.
        (
            "core",
            "a core wasm module this host cannot run: it exports no `_start`",
        ),
        ("missing", "cannot read"),
    ] {
        let e = host.entry(name);
        println!("{name}: state {} error {}", e["state"], e["error"]);
        assert_eq!(e["state"], "error", "{e}");
        let error = e["error"].as_str().unwrap_or_default();
        assert!(error.contains(words), "{name}: {error}");
        assert!(!ready.contains(&name.to_string()), "{ready:?}");
        assert!(host.log(name).contains(words), "log of {name}");
    }
    assert_unharmed(&host, "good");
    host.shutdown();
}

// ---------------------------------------------------------------------------------------
// 5. `list`

#[test]
fn list_shows_transport_kind_permissions_and_limits() {
    let var = "ZOT_WASM_TEST_LISTED";
    let mut b = HostBuilder::new();
    b.env(var, "v");
    // Asks for more than the default and has no grant.
    b.global(
        "asks",
        &component_with(
            "asks",
            REACTOR,
            json!({"cwd": "read", "env": [var]}),
            json!({"memory_mb": 128}),
        ),
    );
    // The same asks, granted.
    b.global(
        "granted",
        &component_with(
            "granted",
            COMMAND,
            json!({"cwd": "read", "env": [var]}),
            json!({"memory_mb": 128}),
        ),
    );
    grant(
        &b.home(),
        "granted",
        COMMAND,
        json!({"data_dir": true, "cwd": "read", "env": [var]}),
        Some(128),
    );
    b.explicit("plain", &native("plain"));
    let host = b.start();
    host.ready();

    let asks = host.entry("asks");
    println!("asks: {asks}");
    assert_eq!(asks["transport"], "wasm", "{asks}");
    assert_eq!(asks["state"], "ready", "{asks}");
    let s = &asks["sandbox"];
    assert_eq!(s["component"], "reactor", "{s}");
    assert_eq!(s["sha256"].as_str().unwrap_or_default().len(), 64, "{s}");
    assert_eq!(s["sha256"], sha256_of(REACTOR), "{s}");
    assert_eq!(s["asked"]["cwd"], "read", "{s}");
    assert_eq!(s["asked"]["env"], json!([var]), "{s}");
    assert_eq!(s["asked"]["data_dir"], true, "{s}");
    assert!(s["granted"].is_null(), "no grant: {s}");
    let withheld = str_list(&s["withheld"]);
    assert_eq!(withheld.len(), 3, "{withheld:?}");
    assert!(
        withheld.iter().any(|w| w.starts_with("cwd")),
        "{withheld:?}"
    );
    assert!(
        withheld.contains(&format!("env {var}: not granted")),
        "{withheld:?}"
    );
    assert!(
        withheld.iter().any(|w| w.starts_with("memory 128 MiB")),
        "{withheld:?}"
    );
    assert_eq!(s["memory_mb"], 64, "{s}");

    let granted = host.entry("granted");
    println!("granted: {granted}");
    assert_eq!(granted["transport"], "wasm");
    let s = &granted["sandbox"];
    assert_eq!(s["component"], "command", "{s}");
    assert_eq!(s["granted"]["cwd"], "read", "{s}");
    assert_eq!(s["granted"]["env"], json!([var]), "{s}");
    assert_eq!(s["withheld"], json!([]), "{s}");
    assert_eq!(s["memory_mb"], 128, "{s}");

    let plain = host.entry("plain");
    assert_eq!(plain["transport"], "stdio", "{plain}");
    assert!(plain.get("sandbox").is_none(), "{plain}");
    host.shutdown();
}

// ---------------------------------------------------------------------------------------
// 6. `zot ext run` and `zot ext grant` / `revoke`

/// Runs `zot ext …` with `ZOT_HOME` = `home`.
fn zot_ext(home: &Path, args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_zot"))
        .arg("ext")
        .args(args)
        .env("ZOT_HOME", home)
        .output()
        .expect("zot runs")
}

#[test]
fn ext_run_gives_any_stdio_host_the_sandbox() {
    let _serial = serial();
    let mut b = HostBuilder::new();
    let home = b.home();
    // A classic manifest whose program is `zot ext run <component>`.
    b.explicit(
        "nested",
        &json!({"name": "nested", "exec": env!("CARGO_BIN_EXE_zot"),
                "args": ["ext", "run", "--tool-timeout-ms", "300", REACTOR]}),
    );
    let host = b.start();
    host.ready();
    assert_eq!(host.entry("nested")["transport"], "stdio");
    // hello_ack is rewritten to what the component sees.
    assert_eq!(hello_ack(&host, "nested")["data_dir"], "/data");
    assert_eq!(tool_ok(&host, "echo", json!({"x": 1})), r#"{"x":1}"#);
    tool_denied(&host, "fs_read", json!({"path": "/etc/passwd"}));
    tool_ok(
        &host,
        "fs_write",
        json!({"path": "/data/nested.txt", "text": "hi"}),
    );
    // The component file named is its identity: its data dir is that file's own.
    let written = files_named(&home.join("data"), "nested.txt");
    assert_eq!(written.len(), 1, "{written:?}");
    assert!(
        written[0].starts_with(home.join("data/@path")),
        "{written:?}"
    );
    assert_eq!(std::fs::read_to_string(&written[0]).unwrap(), "hi");
    // Its deadlines hold inside `zot ext run` too; the outer host sees a process exit.
    host.fails(
        "call_tool",
        json!({"name": "spin", "args": {}, "timeout_ms": 300}),
    );
    let ev = wait_exited(&host, "nested", EVENT_TIMEOUT);
    println!("nested spin: {ev}");
    assert_eq!(ev["code"], 1, "{ev}");
    assert!(host
        .log("nested")
        .contains("component ended: deadline exceeded"));
    host.shutdown();
}

/// Starts `zot ext run ARGS` with `ZOT_HOME` under `scratch`, every stdio piped.
fn ext_run(scratch: &Path, args: &[&str]) -> std::process::Child {
    std::process::Command::new(env!("CARGO_BIN_EXE_zot"))
        .args(["ext", "run"])
        .args(args)
        .env("ZOT_HOME", scratch.join("home"))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("zot runs")
}

/// The `tool_result` frames `zot ext run` writes on its stdout, read by a thread.
fn tool_results(child: &mut std::process::Child) -> std::sync::mpsc::Receiver<Value> {
    use std::io::BufRead;
    let (tx, rx) = std::sync::mpsc::channel::<Value>();
    let stdout = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
        {
            match serde_json::from_str::<Value>(&line) {
                Ok(v) if v["type"] == "tool_result" => {
                    let _ = tx.send(v);
                }
                _ => {}
            }
        }
    });
    rx
}

/// The next `tool_result` from `results`, which must be the one for `id`.
fn next_result(results: &std::sync::mpsc::Receiver<Value>, kind: Kind, id: &str) -> Value {
    let v = results
        .recv_timeout(REQUEST_TIMEOUT)
        .unwrap_or_else(|_| panic!("{}: no tool_result {id}", kind.label()));
    assert_eq!(v["id"], id, "{}: {v}", kind.label());
    v
}

#[test]
fn ext_run_skips_lines_that_are_not_json_and_the_component_goes_on() {
    use std::io::Write;
    for kind in Kind::BOTH {
        let scratch = TempDir::new("run-garbage");
        let mut child = ext_run(scratch.path(), &[kind.wasm()]);
        let mut stdin = child.stdin.take().unwrap();
        let results = tool_results(&mut child);
        let result = |id: &str| next_result(&results, kind, id);
        let mut input: Vec<u8> = Vec::new();
        input.extend_from_slice(b"{\"type\":\"hello_ack\",\"protocol_version\":1}\n");
        input.extend_from_slice(
            b"{\"type\":\"tool_call\",\"id\":\"1\",\"name\":\"echo\",\"args\":{}}\n",
        );
        input.extend_from_slice(b"\xff\xfe not UTF-8 \xc3\x28\n");
        input.extend_from_slice(b"{\"type\": \"tool_call\", \"id\": \xff}\n");
        input.extend_from_slice(b"{not json at all\n");
        input.extend_from_slice(b"{\"type\":\"from_the_future\",\"x\":1}\n");
        input.extend_from_slice(
            b"{\"type\":\"tool_call\",\"id\":\"2\",\"name\":\"echo\",\"args\":{\"after\":true}}\n",
        );
        stdin.write_all(&input).unwrap();
        stdin.flush().unwrap();
        assert_eq!(result("1")["content"][0]["text"], "{}", "{}", kind.label());
        assert_eq!(
            result("2")["content"][0]["text"],
            r#"{"after":true}"#,
            "{}: the component answers after the bad lines",
            kind.label()
        );
        drop(stdin);
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{}: {stderr}", kind.label());
        assert_eq!(
            stderr
                .matches("skipped an input line that is not JSON")
                .count(),
            3,
            "{}: {stderr}",
            kind.label()
        );
        assert!(!stderr.contains("panicked"), "{}: {stderr}", kind.label());
    }
}

#[test]
fn ext_run_skips_an_input_line_over_its_cap_and_the_component_goes_on() {
    use std::io::Write;
    const CAP: usize = 1024 * 1024;
    for kind in Kind::BOTH {
        let scratch = TempDir::new("run-oversize");
        let cap = CAP.to_string();
        let mut child = ext_run(scratch.path(), &["--max-frame-bytes", &cap, kind.wasm()]);
        let mut stdin = child.stdin.take().unwrap();
        let results = tool_results(&mut child);
        let result = |id: &str| next_result(&results, kind, id);
        let call = |id: &str, args: &str| {
            format!(r#"{{"type":"tool_call","id":"{id}","name":"echo","args":{args}}}"#)
        };
        let big = call("big", &format!(r#"{{"pad":"{}"}}"#, "x".repeat(3 * CAP)));
        let mut input = String::new();
        input.push_str("{\"type\":\"hello_ack\",\"protocol_version\":1}\n");
        for line in [call("1", "{}"), big.clone(), call("2", r#"{"after":true}"#)] {
            input.push_str(&line);
            input.push('\n');
        }
        stdin.write_all(input.as_bytes()).unwrap();
        stdin.flush().unwrap();
        assert_eq!(result("1")["content"][0]["text"], "{}", "{}", kind.label());
        assert_eq!(
            result("2")["content"][0]["text"],
            r#"{"after":true}"#,
            "{}: the component answers the frame after the long line, and not that one",
            kind.label()
        );
        drop(stdin);
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{}: {stderr}", kind.label());
        let warning = format!(
            "skipped a {}-byte input line: longer than the frame size limit ({CAP} bytes)",
            big.len()
        );
        assert!(
            results.recv_timeout(REQUEST_TIMEOUT).is_err(),
            "{}: nothing answers the skipped line",
            kind.label()
        );
        println!("{}: {}", kind.label(), log_line(&stderr, "skipped a"));
        assert_eq!(
            stderr.matches(&warning).count(),
            1,
            "{}: {stderr}",
            kind.label()
        );
        assert!(!stderr.contains("panicked"), "{}: {stderr}", kind.label());
    }
}

#[test]
fn ext_run_exits_non_zero_when_the_component_dies() {
    use std::io::Write;
    for kind in Kind::BOTH {
        let scratch = TempDir::new("run-dies");
        let mut child = ext_run(scratch.path(), &["--tool-timeout-ms", "200", kind.wasm()]);
        let mut stdin = child.stdin.take().unwrap();
        stdin
            .write_all(b"{\"type\":\"tool_call\",\"id\":\"1\",\"name\":\"spin\",\"args\":{}}\n")
            .unwrap();
        stdin.flush().unwrap();
        // Input stays open: the component's death alone ends the run.
        let out = child.wait_with_output().unwrap();
        drop(stdin);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{}: {stderr}", kind.label());
        assert!(
            stderr.contains("component ended: deadline exceeded"),
            "{}: {stderr}",
            kind.label()
        );
    }
}

#[test]
fn hello_ack_tells_a_component_no_host_path_it_was_not_granted() {
    let _serial = serial();
    for kind in Kind::BOTH {
        let name = format!("paths-{}", kind.label());
        let mut b = HostBuilder::new();
        let root = b.scratch().to_path_buf();
        b.explicit(&name, &component(&name, kind.wasm()));
        // The same component through `zot ext run` inside a stdio host.
        let nested = format!("{name}-run");
        b.explicit(
            &nested,
            &json!({"name": nested, "exec": env!("CARGO_BIN_EXE_zot"),
                    "args": ["ext", "run", kind.wasm()]}),
        );
        let host = b.start();
        host.ready();
        for who in [&name, &nested] {
            let ack = hello_ack(&host, who);
            assert_eq!(ack["extension_dir"], "/", "{who}: {ack}");
            assert_eq!(ack["cwd"], "/", "{who}: {ack}");
            assert_eq!(ack["data_dir"], "/data", "{who}: {ack}");
            let text = ack.to_string();
            assert!(
                !text.contains(root.to_str().unwrap()) && !text.contains("/tmp"),
                "{who}: a host path in {ack}"
            );
        }
        host.shutdown();
    }
}

#[test]
fn grant_shows_records_and_revoke_forgets() {
    let scratch = TempDir::new("grant");
    let home = scratch.path().join("home");
    // Installed globally: its grant is `grants/asker.json`, and `revoke asker` finds it.
    let dir = write_manifest(
        &home.join("extensions").join("asker"),
        &component_with(
            "asker",
            REACTOR,
            json!({"env": ["ZOT_GRANT_A", "ZOT_GRANT_B"], "cwd": "read"}),
            json!({"memory_mb": 96}),
        ),
    );
    let dir = dir.to_str().unwrap();
    let text = |o: &std::process::Output| String::from_utf8_lossy(&o.stdout).into_owned();

    let shown = zot_ext(&home, &["grant", dir]);
    assert!(shown.status.success());
    assert!(text(&shown).contains("read the environment variable ZOT_GRANT_A"));
    assert!(text(&shown).contains("no grant recorded"));
    assert!(
        !home.join("grants/asker.json").exists(),
        "showing grants nothing"
    );

    let one = zot_ext(&home, &["grant", dir, "-p", "env:ZOT_GRANT_A"]);
    assert!(
        one.status.success(),
        "{}",
        String::from_utf8_lossy(&one.stderr)
    );
    let g: Value =
        serde_json::from_slice(&std::fs::read(home.join("grants/asker.json")).unwrap()).unwrap();
    assert_eq!(g["permissions"]["env"], json!(["ZOT_GRANT_A"]));
    assert_eq!(g["permissions"]["data_dir"], true);
    assert!(g["permissions"].get("cwd").is_none(), "{g}");
    assert_eq!(g["sha256"], sha256_of(REACTOR));

    let all = zot_ext(&home, &["grant", dir, "--all"]);
    assert!(all.status.success());
    let g: Value =
        serde_json::from_slice(&std::fs::read(home.join("grants/asker.json")).unwrap()).unwrap();
    assert_eq!(
        g["permissions"]["env"],
        json!(["ZOT_GRANT_A", "ZOT_GRANT_B"])
    );
    assert_eq!(g["permissions"]["cwd"], "read");
    assert_eq!(g["memory_mb"], 96);

    let bad = zot_ext(&home, &["grant", dir, "-p", "network"]);
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("unknown permission \"network\""));

    let classic = write_manifest(&scratch.path().join("classic"), &native("classic"));
    // A classic extension's grant is recorded, and said to apply only once confined.
    let classic_grant = zot_ext(&home, &["grant", classic.to_str().unwrap(), "--all"]);
    assert!(classic_grant.status.success(), "{}", text(&classic_grant));
    assert!(
        stdout(&classic_grant).contains(
            "is not confined: it runs with your full user permissions, and this grant \
             applies once you confine it"
        ),
        "{}",
        text(&classic_grant)
    );

    let revoked = zot_ext(&home, &["revoke", "asker"]);
    assert!(revoked.status.success());
    assert!(!home.join("grants/asker.json").exists());
    assert!(text(&zot_ext(&home, &["revoke", "asker"])).contains("had no grant"));
}

#[test]
fn a_grant_made_with_the_cli_is_in_force() {
    let _serial = serial();
    let mut b = HostBuilder::new();
    let home = b.home();
    b.env("ZOT_CLI_GRANTED", "through");
    let dir = b.explicit(
        "cligrant",
        &component_with(
            "cligrant",
            REACTOR,
            json!({"env": ["ZOT_CLI_GRANTED"]}),
            json!({}),
        ),
    );
    let out = zot_ext(&home, &["grant", dir.to_str().unwrap(), "--all"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let host = b.start();
    host.ready();
    assert_eq!(
        tool_ok(&host, "env", json!({"name": "ZOT_CLI_GRANTED"})),
        "through"
    );
    let sandbox = &host.entry("cligrant")["sandbox"];
    assert_eq!(
        sandbox["granted"]["env"],
        json!(["ZOT_CLI_GRANTED"]),
        "{sandbox}"
    );
    assert_eq!(sandbox["withheld"], json!([]), "{sandbox}");
    host.shutdown();
}

/// A component carrying its manifest (`zot_ext::embed_manifest!`): the SDK probe's asks
/// for `ZOT_SECTION_TEST`, HTTP to `api.example.com` and 96 MiB of memory. Installed as a
/// bare `.wasm` with `--yes`, exactly that is granted and in force; `zot ext info` shows
/// it.
#[test]
fn a_bare_component_gets_what_its_embedded_manifest_asks_once_installed() {
    let _serial = serial();
    let mut b = HostBuilder::new();
    let home = b.home();
    b.env("ZOT_SECTION_TEST", "from the section");
    let file = b.scratch().join("probe.wasm");
    std::fs::copy(SDK_PROBE, &file).unwrap();
    let out = zot_ext(&home, &["install", file.to_str().unwrap(), "--yes"]);
    let shown = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{shown}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for asked in [
        "read the environment variable ZOT_SECTION_TEST",
        "make HTTP requests to api.example.com",
        "use up to 96 MiB of memory",
        "Installed sdk-probe 0.1.0",
    ] {
        assert!(shown.contains(asked), "{asked}: {shown}");
    }
    let grant: Value =
        serde_json::from_slice(&std::fs::read(home.join("grants").join("sdk-probe.json")).unwrap())
            .unwrap();
    assert_eq!(
        grant["permissions"]["env"],
        json!(["ZOT_SECTION_TEST"]),
        "{grant}"
    );
    assert_eq!(
        grant["permissions"]["http"],
        json!(["api.example.com"]),
        "{grant}"
    );
    assert_eq!(grant["memory_mb"], 96, "{grant}");
    let manifest: Value = serde_json::from_slice(
        &std::fs::read(home.join("extensions/sdk-probe/extension.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(manifest["limits"], json!({"memory_mb": 96}), "{manifest}");
    assert!(manifest.get("description").is_some(), "{manifest}");

    let out = zot_ext(&home, &["info", "sdk-probe"]);
    let info = String::from_utf8_lossy(&out.stdout);
    assert!(
        info.contains("asks         read and write its own data directory"),
        "{info}"
    );
    assert!(
        info.contains("read the environment variable ZOT_SECTION_TEST"),
        "{info}"
    );
    let out = zot_ext(&home, &["info", "sdk-probe", "--json"]);
    let info: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        info["asks"]["permissions"]["env"],
        json!(["ZOT_SECTION_TEST"]),
        "{info}"
    );
    assert_eq!(info["asks"]["limits"]["memory_mb"], 96, "{info}");

    let host = b.start();
    assert_eq!(host.ready(), ["sdk-probe"]);
    assert_eq!(
        tool_ok(&host, "env", json!({"name": "ZOT_SECTION_TEST"})),
        "from the section"
    );
    let sandbox = &host.entry("sdk-probe")["sandbox"];
    assert_eq!(sandbox["withheld"], json!([]), "{sandbox}");
    assert_eq!(sandbox["memory_mb"], 96, "{sandbox}");
    host.shutdown();
}

/// `--ext file.wasm` asks what the file's embedded manifest asks: without a grant it is
/// withheld, and the component runs with the defaults.
#[test]
fn an_explicit_bare_component_asks_what_its_embedded_manifest_asks() {
    let _serial = serial();
    let mut b = HostBuilder::new();
    b.env("ZOT_SECTION_TEST", "not granted");
    let file = b.scratch().join("probe.wasm");
    std::fs::copy(SDK_PROBE, &file).unwrap();
    b.ext_path(&file);
    let host = b.start();
    assert_eq!(host.ready(), ["sdk-probe"]);
    let sandbox = &host.entry("sdk-probe")["sandbox"];
    assert_eq!(
        sandbox["asked"]["env"],
        json!(["ZOT_SECTION_TEST"]),
        "{sandbox}"
    );
    let withheld = sandbox["withheld"].to_string();
    assert!(
        withheld.contains("env ZOT_SECTION_TEST: not granted"),
        "{withheld}"
    );
    assert!(
        withheld.contains("http api.example.com: not granted"),
        "{withheld}"
    );
    assert_eq!(sandbox["memory_mb"], 64, "{sandbox}");
    assert_eq!(
        tool_ok(&host, "env", json!({"name": "ZOT_SECTION_TEST"})),
        "unset"
    );
    host.shutdown();
}

// ---------------------------------------------------------------------------------------
// Outgoing HTTP

/// The allow-list in force: (a) a listed loopback literal is reached; (b) an unlisted host
/// is refused before any lookup; (c) a listed name resolving to loopback is refused after
/// DNS; (d) an entry asked but not granted is withheld and refused. Every refusal names
/// the host in the guest's error and in the extension's log.
fn http_follows_the_allow_list(kind: Kind) {
    const BODY: &str = "hello from the local server";
    let server = LocalServer::text(BODY, 8);
    let ungranted = LocalServer::text("must not be reached", 8);
    let name = format!("http-{}", kind.label());
    let literal = format!("http://127.0.0.1:{}", server.port);
    let by_name = format!("http://localhost:{}", server.port);
    let not_granted = format!("http://127.0.0.1:{}", ungranted.port);
    let mut b = HostBuilder::new();
    b.global(
        &name,
        &component_with(
            &name,
            kind.wasm(),
            json!({"http": [literal, by_name, not_granted]}),
            json!({}),
        ),
    );
    grant(
        &b.home(),
        &name,
        kind.wasm(),
        json!({"data_dir": true, "http": [literal, by_name]}),
        None,
    );
    let host = b.start();
    host.ready();

    // (d) is visible before anything runs.
    let withheld = str_list(&host.entry(&name)["sandbox"]["withheld"]);
    assert_eq!(
        withheld,
        vec![format!("http {not_granted}: not granted")],
        "{withheld:?}"
    );

    // (a) The listed literal.
    let got = tool_ok(
        &host,
        "http_get",
        json!({"url": format!("{literal}/hello?x=1")}),
    );
    let got: Value = serde_json::from_str(&got).unwrap();
    assert_eq!(got, json!({"status": 200, "body": BODY}), "{got}");
    assert_eq!(server.hits(), 1);

    // (b) Not listed: refused before DNS.
    let err = tool_denied(
        &host,
        "http_get",
        json!({"url": "http://not-listed.invalid/x"}),
    );
    assert!(
        err.contains("not-listed.invalid") && err.contains("HttpRequestDenied"),
        "{err}"
    );
    let log = wait_log(
        &host,
        &name,
        0,
        "denied HTTP to not-listed.invalid:",
        EVENT_TIMEOUT,
    );
    println!("  {}", log_line(&log, "denied HTTP to not-listed.invalid:"));
    // The right host on another port, or https on the listed port, is not listed either.
    let other_port = format!("http://127.0.0.1:{}/", ungranted.port);
    tool_denied(&host, "http_get", json!({"url": other_port}));
    tool_denied(
        &host,
        "http_get",
        json!({"url": format!("https://127.0.0.1:{}/", server.port)}),
    );

    // (c) Listed by name, but the name resolves to loopback: refused after the lookup,
    // although 127.0.0.1 on that port is listed too (the literal entry allows requests to
    // the address, never to a name for it).
    let err = tool_denied(&host, "http_get", json!({"url": format!("{by_name}/")}));
    assert!(
        err.contains("localhost") && err.contains("DestinationIpProhibited"),
        "{err}"
    );
    let log = wait_log(&host, &name, 0, "denied HTTP to localhost:", EVENT_TIMEOUT);
    let line = log_line(&log, "denied HTTP to localhost:");
    println!("  {line}");
    assert!(line.contains("loopback"), "{line}");

    // (d) Asked, not granted: refused.
    let log = wait_log(
        &host,
        &name,
        0,
        &format!("withheld: http {not_granted}: not granted"),
        EVENT_TIMEOUT,
    );
    assert!(log.contains("withheld: http"), "{log}");
    assert_eq!(ungranted.hits(), 0, "the ungranted server was reached");
    assert_eq!(
        server.hits(),
        1,
        "only the allowed request reached the server"
    );
    assert_unharmed(&host, &name);
    host.shutdown();
}

#[test]
fn reactor_http_follows_the_allow_list() {
    http_follows_the_allow_list(Kind::Reactor);
}

#[test]
fn command_http_follows_the_allow_list() {
    http_follows_the_allow_list(Kind::Command);
}

/// `wasi:sockets` is off: a component's TCP connection to a listening port, UDP bind and
/// lookup of `localhost` are each refused by the host, and nothing reaches the listener;
/// the same guest built natively (unsandboxed) does all three.
#[test]
fn sockets_are_off_for_a_component_and_the_same_guest_natively_has_them() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let sockets = |manifest: Value| -> Value {
        let mut b = HostBuilder::new();
        b.explicit("net", &manifest);
        let host = b.start();
        host.ready();
        let said = tool_ok(&host, "sockets", json!({ "port": port }));
        host.shutdown();
        serde_json::from_str(&said).unwrap()
    };
    let free = sockets(native("net"));
    assert_eq!(
        free,
        json!({"tcp connect": "ok", "udp bind": "ok", "name lookup": "ok"})
    );
    assert!(listener.accept().is_ok(), "natively, the connection came");
    for kind in [Kind::Reactor, Kind::Command] {
        let fenced = sockets(component("net", kind.wasm()));
        assert_eq!(
            fenced,
            json!({"tcp connect": "denied access-denied", "udp bind": "denied access-denied",
                   "name lookup": "denied permanent-resolver-failure"}),
            "{kind:?}"
        );
        let came = listener.accept();
        assert!(came.is_err(), "{kind:?}: a connection came: {came:?}");
    }
}

#[test]
fn without_http_permissions_every_request_is_refused() {
    let server = LocalServer::text("must not be reached", 4);
    let name = "nohttp";
    let mut b = HostBuilder::new();
    b.explicit(name, &component(name, REACTOR));
    let host = b.start();
    host.ready();
    let url = format!("http://127.0.0.1:{}/", server.port);
    let err = tool_denied(&host, "http_get", json!({ "url": url }));
    assert!(err.contains("HttpRequestDenied"), "{err}");
    let log = wait_log(&host, name, 0, "denied HTTP to 127.0.0.1:", EVENT_TIMEOUT);
    let line = log_line(&log, "denied HTTP to 127.0.0.1:");
    assert!(line.contains("no http permission"), "{line}");
    assert_eq!(server.hits(), 0);
    assert_unharmed(&host, name);
    host.shutdown();
}

#[test]
fn a_component_of_another_wit_version_is_refused_clearly() {
    let mut b = HostBuilder::new();
    b.explicit("future", &component("future", zot_test_guests::FUTURE));
    b.explicit("steady", &component("steady", REACTOR));
    let host = b.start();
    host.ready();
    let e = host.entry("future");
    println!("future: {e}");
    assert_eq!(e["state"], "error", "{e}");
    let error = e["error"].as_str().unwrap();
    assert!(error.contains("zot:extension/guest@0.2.0"), "{error}");
    assert!(
        error.contains("this host speaks zot:extension@0.1.0"),
        "{error}"
    );
    assert_unharmed(&host, "steady");
    host.shutdown();
}

#[test]
fn ext_list_json_shows_the_component_kind_without_starting_it() {
    let scratch = TempDir::new("listkind");
    let home = scratch.path().join("home");
    for (name, wasm) in [
        ("r", REACTOR),
        ("c", COMMAND),
        ("f", zot_test_guests::FUTURE),
    ] {
        write_manifest(
            &home.join("extensions").join(name),
            &component_with(name, wasm, json!({"env": ["X"]}), json!({"memory_mb": 32})),
        );
    }
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_zot"))
        .args(["ext", "list", "--json"])
        .env("ZOT_HOME", &home)
        .current_dir(scratch.path())
        .output()
        .unwrap();
    assert!(out.status.success());
    let rows: Value = serde_json::from_slice(&out.stdout).unwrap();
    let row = |n: &str| {
        rows.as_array()
            .unwrap()
            .iter()
            .find(|r| r["name"] == n)
            .unwrap()
            .clone()
    };
    assert_eq!(row("r")["transport"], "wasm");
    assert_eq!(row("r")["sandbox"]["component"], "reactor");
    assert_eq!(row("c")["sandbox"]["component"], "command");
    assert_eq!(
        row("f")["sandbox"]["component"],
        Value::Null,
        "another WIT version"
    );
    assert_eq!(row("r")["sandbox"]["asked"]["env"], json!(["X"]));
    assert_eq!(row("r")["sandbox"]["limits"]["memory_mb"], 32);
    assert_eq!(row("r")["sandbox"]["granted"], Value::Null);
    assert!(!home.join("cache").exists(), "listing compiles nothing");
}

// ---------------------------------------------------------------------------------------
// WASI preview-1 modules

/// A bare preview-1 module installs (named by its hello), checks and lists as one; a
/// preview-1 module whose manifest asks for HTTP does not start, and says why.
#[test]
fn a_bare_preview1_module_installs_and_checks_and_one_asking_for_http_is_refused() {
    let home = TempDir::new("wasm-p1");
    let bare = home.path().join("p1guest.wasm");
    std::fs::copy(COMMAND_P1, &bare).unwrap();
    let out = zot_ext(home.path(), &["install", bare.to_str().unwrap(), "--yes"]);
    assert!(out.status.success(), "{}", text(&out));
    let check = zot_ext(home.path(), &["check", "guest"]);
    let said = stdout(&check);
    assert!(check.status.success(), "{}", text(&check));
    assert!(said.contains("sandbox    WASI preview-1 module"), "{said}");
    // Its stderr is in its log, as a command's is.
    let log = std::fs::read_to_string(home.path().join("logs/ext-guest.log")).unwrap();
    assert!(log.contains("[stderr] command started"), "{log}");
    let list = zot_ext(home.path(), &["list", "--json"]);
    let list: Value = serde_json::from_str(&stdout(&list)).unwrap();
    assert_eq!(list[0]["sandbox"]["component"], "preview1", "{list}");

    let mut b = HostBuilder::new();
    b.explicit(
        "p1http",
        &component_with(
            "p1http",
            COMMAND_P1,
            json!({"http": ["example.com"]}),
            json!({}),
        ),
    );
    let host = b.start();
    host.ready_event();
    let e = host.entry("p1http");
    assert_eq!(e["state"], "error", "{e}");
    let error = e["error"].as_str().unwrap_or_default();
    assert!(error.contains("WASI preview 1 has no network"), "{error}");
    host.shutdown();
}
