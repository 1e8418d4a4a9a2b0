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

mod cache;
mod cli;
mod escapes;
mod http;
mod limits;
mod parity;
mod preview1;

pub(super) use crate::common::*;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use zot_test_guests::{COMMAND, COMMAND_NATIVE, COMMAND_P1, REACTOR};

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

/// Runs `zot ext …` with `ZOT_HOME` = `home`.
fn zot_ext(home: &Path, args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_zot"))
        .arg("ext")
        .args(args)
        .env("ZOT_HOME", home)
        .output()
        .expect("zot runs")
}
