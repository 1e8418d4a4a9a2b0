//! The host's memory is bounded by what it holds, not by what it is sent: notifications
//! for a client that does not read, and registrations, are capped in bytes. Each test
//! floods a real `zot host` from a Python extension and reads the host's peak RSS
//! (`VmHWM`). Tests here run one at a time (`serial()`): they are heavy.

use crate::common::*;
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::{Duration, Instant};

/// Writes `script` as `dir/ext.py` and a manifest running it with `python3`.
fn python_extension(dir: &Path, name: &str, script: &str) -> PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(dir.join("ext.py"), script).unwrap();
    let manifest = json!({"name": name, "version": "1.0.0", "exec": "python3",
                          "args": [dir.join("ext.py").to_str().unwrap()]});
    write_manifest(dir, &manifest)
}

/// The frame helpers every test extension here starts with.
const PRELUDE: &str = r#"
import json, os, sys
def send(frame):
    sys.stdout.write(json.dumps(frame) + "\n")
    sys.stdout.flush()
def result(frame, text):
    send({"type": "tool_result", "id": frame["id"], "content": [{"type": "text", "text": text}]})
"#;

/// A `zot host` whose stdout the test reads only when it chooses to (the shared
/// `common::Host` always reads it).
struct Sidecar {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<std::process::ChildStdout>,
}

impl Sidecar {
    fn start(root: &Path, ext: &Path) -> Sidecar {
        let home = root.join("home");
        let cwd = root.join("cwd");
        std::fs::create_dir_all(&home).unwrap();
        std::fs::create_dir_all(&cwd).unwrap();
        let bin = std::env::var_os("ZOT_TEST_HOST_BIN")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_zot")));
        let mut child = Command::new(bin)
            .arg("host")
            .arg("--zot-home")
            .arg(&home)
            .arg("--cwd")
            .arg(&cwd)
            .arg("--ext")
            .arg(ext)
            .current_dir(&cwd)
            .env("ZOT_HOME", &home)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start zot host");
        let mut stderr = child.stderr.take().unwrap();
        std::thread::spawn(move || {
            let mut sink = Vec::new();
            let _ = stderr.read_to_end(&mut sink);
        });
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::with_capacity(1 << 20, child.stdout.take().unwrap());
        Sidecar {
            child,
            stdin,
            stdout,
        }
    }

    fn send(&mut self, request: Value) {
        writeln!(self.stdin, "{request}").unwrap();
        self.stdin.flush().unwrap();
    }

    /// The next line of stdout, parsed.
    fn next(&mut self) -> Value {
        let mut line = Vec::new();
        let n = self.stdout.read_until(b'\n', &mut line).unwrap();
        assert!(n > 0, "zot host closed its stdout");
        serde_json::from_slice(&line).expect("stdout carries JSON lines")
    }

    fn peak_kib(&self) -> u64 {
        proc_status_kib(self.child.id(), "VmHWM").expect("VmHWM of zot")
    }
}

impl Drop for Sidecar {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn a_client_that_stops_reading_loses_the_oldest_notifications_not_the_hosts_memory() {
    let _serial = serial();
    let scratch = TempDir::new("memory-notes");
    let done = scratch.path().join("flooded");
    let script = format!(
        r#"{PRELUDE}
DONE = {done:?}
send({{"type": "hello", "name": "flood", "version": "1.0.0"}})
for line in sys.stdin:
    frame = json.loads(line)
    kind = frame.get("type")
    if kind == "hello_ack":
        send({{"type": "register_tool", "name": "flood", "description": "floods", "schema": {{"type": "object"}}}})
        send({{"type": "ready"}})
    elif kind == "tool_call":
        big = "x" * (48 << 20)
        for i in range(16):
            send({{"type": "notify", "level": "info", "message": "big-%d %s" % (i, big)}})
        del big
        for i in range(3):
            send({{"type": "notify", "level": "info", "message": "tail-%d" % i}})
        result(frame, "flooded")
        open(DONE, "w").write("done")
    elif kind == "shutdown":
        break
"#
    );
    let ext = python_extension(&scratch.path().join("flood"), "flood", &script);
    let mut host = Sidecar::start(scratch.path(), &ext);
    let ready = loop {
        let line = host.next();
        if line["type"] == "host_ready" {
            break line;
        }
    };
    assert_eq!(ready["extensions"], json!(["flood"]), "{ready}");

    // Ask for the flood, then read nothing until the extension has written it all.
    let t = Instant::now();
    host.send(json!({"id": "f", "type": "call_tool", "name": "flood", "args": {}}));
    while !done.exists() {
        assert!(
            t.elapsed() < Duration::from_secs(240),
            "the extension did not finish its flood"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let flooded_in = t.elapsed();

    // Now read: the answer, the newest notifications, and how many were dropped.
    host.send(json!({"id": "p", "type": "ping"}));
    let (mut dropped, mut tails, mut bigs) = (0, Vec::new(), 0);
    let (mut answered, mut ponged) = (None, false);
    while answered.is_none() || !ponged || tails.len() < 3 {
        let line = host.next();
        match line["type"].as_str() {
            Some("notifications_dropped") => dropped += line["count"].as_u64().unwrap(),
            Some("notify") => {
                let message = line["message"].as_str().unwrap();
                if message.starts_with("tail-") {
                    tails.push(message.to_string());
                } else {
                    bigs += 1;
                }
            }
            Some("response") if line["id"] == "f" => answered = Some(line),
            Some("response") if line["id"] == "p" => {
                assert_eq!(line["data"], json!({"pong": true}), "{line}");
                ponged = true;
            }
            _ => {}
        }
    }
    let peak = host.peak_kib();
    println!(
        "16 notifies of 48 MiB, client not reading: flooded in {flooded_in:?}; \
         {bigs} large delivered, {dropped} reported dropped; zot VmHWM {} MiB",
        peak / 1024
    );
    let answered = answered.unwrap();
    assert_eq!(answered["success"], true, "{answered}");
    assert_eq!(
        tails,
        ["tail-0", "tail-1", "tail-2"],
        "the newest arrive in order"
    );
    assert!(dropped >= 1, "no notifications_dropped report");
    assert_eq!(
        bigs + dropped,
        16,
        "every notification is delivered or counted"
    );
    assert!(peak < 300 * 1024, "zot peaked at {peak} KiB");

    // The extension's log says how many were dropped.
    host.send(json!({"id": "l", "type": "list"}));
    let list = loop {
        let line = host.next();
        if line["id"] == "l" {
            break line;
        }
    };
    let log = list["data"]["extensions"][0]["log"].as_str().unwrap();
    let log = std::fs::read_to_string(log).unwrap();
    assert!(
        log.contains("notifications dropped"),
        "the log does not count the drops:\n{log}"
    );
    host.send(json!({"id": "s", "type": "shutdown"}));
    while host.next()["id"] != "s" {}
}

#[test]
fn registrations_are_capped_per_extension_and_the_others_still_work() {
    let _serial = serial();
    let script = format!(
        r#"{PRELUDE}
def tool(name, description):
    send({{"type": "register_tool", "name": name, "description": description,
          "schema": {{"type": "object"}}}})
send({{"type": "hello", "name": "hoarder", "version": "1.0.0"}})
for line in sys.stdin:
    frame = json.loads(line)
    kind = frame.get("type")
    if kind == "hello_ack":
        tool("early", "registered first")
        send({{"type": "register_command", "name": "early-cmd", "description": "first"}})
        send({{"type": "ready"}})
        description = "d" * (1 << 20)
        for i in range(600):
            tool("big-%d" % i, description)
        tool("late", "registered last")
        send({{"type": "notify", "level": "info", "message": "registered all"}})
    elif kind == "tool_call":
        result(frame, "called " + frame["name"])
    elif kind == "command_invoked":
        send({{"type": "command_response", "id": frame["id"], "display": "ran"}})
    elif kind == "shutdown":
        break
"#
    );
    let mut b = HostBuilder::new();
    let dir = b.scratch().join("exts").join("hoarder");
    let ext = python_extension(&dir, "hoarder", &script);
    b.ext_path(&ext);
    let host = b.start();
    assert_eq!(host.ready(), ["hoarder"]);
    // Registry changes are many: keep none.
    host.set_event_filter(|v| v["type"] != "registry_changed");
    let t = Instant::now();
    host.wait_notify_within("hoarder", "registered all", Duration::from_secs(240));
    let took = t.elapsed();
    let peak = host.vm_hwm_kib();
    println!(
        "600 register_tool of 1 MiB sent in {took:?}; zot VmHWM {} MiB",
        peak / 1024
    );

    let tools = host.request_within("tools", json!({}), Duration::from_secs(120));
    assert_eq!(tools["success"], true, "{tools}");
    let tools = &tools["data"];
    let names: Vec<&str> = tools["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    let big = names.iter().filter(|n| n.starts_with("big-")).count();
    println!("{big} of the 600 kept");
    assert!(
        names.contains(&"early") && names.contains(&"late"),
        "{names:?}"
    );
    assert!(big < 600, "every registration was kept");
    assert_eq!(
        first_text(&host.call_tool("early", json!({}))),
        "called early"
    );
    assert_eq!(
        first_text(&host.call_tool("late", json!({}))),
        "called late"
    );
    let ran = host.ok("invoke_command", json!({"name": "early-cmd", "args": ""}));
    assert_eq!(ran["display"], "ran", "{ran}");
    let log = host.log("hoarder");
    assert!(
        log.contains("registrations are capped"),
        "the log does not name the cap:\n{}",
        &log[..log.len().min(4000)]
    );
    assert!(peak < 200 * 1024, "zot peaked at {peak} KiB");
    host.shutdown();
}
