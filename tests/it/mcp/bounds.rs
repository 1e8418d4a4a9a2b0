//! MCP peers that do not play fair, against the real `zot` binary: MCP servers run as
//! extensions (Python, written here, and the sandboxed test server,
//! `tests/guests/mcp-server`) that hoard through their tool list, flood the host with
//! requests without reading the answers, or never read their input while the host
//! sends calls; and a client of `zot mcp` that never reads its output. Each asserts that
//! the peak memory of `zot` (`VmHWM`) stays under [`PEAK_KIB`] and that the peer was cut
//! down, stopped or cut off, the reason said. Heavy: one at a time (`serial()`).

use crate::common::*;
use serde_json::{json, Value};
use std::io::{Read, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The most `zot` may hold at its peak, in KiB, whatever the peer sends.
const PEAK_KIB: u64 = 200 * 1024;

/// How long a test waits for the host to act on the peer.
const ACT_TIMEOUT: Duration = Duration::from_secs(60);

/// What every server here starts with: `send`, and the answer to `initialize`.
const PRELUDE: &str = r#"
import json, sys, time
def send(m):
    sys.stdout.write(json.dumps(m) + "\n")
    sys.stdout.flush()
def initialized(m):
    send({"jsonrpc": "2.0", "id": m["id"], "result": {"protocolVersion": "2025-11-25",
          "capabilities": {"tools": {"listChanged": True}},
          "serverInfo": {"name": "hostile", "version": "1.0.0"}}})
"#;

/// A server that answers the handshake and `tools/list` (one tool, `noop`), then runs
/// `then` without reading stdin again.
fn handshake_then(then: &str) -> String {
    format!(
        r#"{PRELUDE}
for line in sys.stdin:
    m = json.loads(line)
    if m.get("method") == "initialize":
        initialized(m)
    elif m.get("method") == "tools/list":
        send({{"jsonrpc": "2.0", "id": m["id"], "result": {{"tools": [
              {{"name": "noop", "inputSchema": {{"type": "object"}}}}]}}}})
        break
{then}
"#
    )
}

/// The manifest of an MCP server running `script` with `python3`.
fn py_server(name: &str, script: &str) -> Value {
    json!({"name": name, "mcp": {"command": "python3", "args": ["-c", script]}})
}

/// Waits until `name`'s log holds `what` `times` times; the log.
fn wait_logged(host: &Host, name: &str, what: &str, times: usize) -> String {
    let deadline = Instant::now() + ACT_TIMEOUT;
    loop {
        let log = host.log(name);
        if log.matches(what).count() >= times {
            return log;
        }
        assert!(
            Instant::now() < deadline,
            "{what:?} not {times} times in the log:\n{}",
            &log[log.len().saturating_sub(4000)..]
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Four listings (one at start, three after `list_changed`) of 48 tools of 1 MiB each,
/// in pages of 4 that rmcp would cache for a day: 192 MiB listed. The host holds at
/// most 4 MiB of a listing, says what it left out, and registers only what its core
/// takes.
#[test]
fn a_tool_list_hoarder_is_cut_to_what_the_core_takes() {
    let _serial = serial();
    let script = format!(
        r#"{PRELUDE}
LISTINGS, PAGES, PER_PAGE = 4, 12, 4
half = "d" * (1 << 19)
listing = 0
for line in sys.stdin:
    m = json.loads(line)
    if m.get("method") == "initialize":
        initialized(m)
    elif m.get("method") == "tools/list":
        page = int((m.get("params") or {{}}).get("cursor") or 0)
        tools = [{{"name": "l%d-p%d-t%d" % (listing, page, i), "description": half,
                  "inputSchema": {{"type": "object", "description": half}}}}
                 for i in range(PER_PAGE)]
        result = {{"tools": tools, "ttlMs": 86400000, "cacheScope": "public"}}
        if page + 1 < PAGES:
            result["nextCursor"] = str(page + 1)
        send({{"jsonrpc": "2.0", "id": m["id"], "result": result}})
        if page + 1 == PAGES:
            listing += 1
            if listing < LISTINGS:
                send({{"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}})
"#
    );
    let mut b = HostBuilder::new();
    b.explicit("hoard", &py_server("hoard", &script));
    let host = b.start();
    assert_eq!(host.ready(), ["hoard"]);
    let log = wait_logged(&host, "hoard", "are left out", 4);
    let peak = host.vm_hwm_kib();
    println!("4 listings of 48 MiB: zot VmHWM {} MiB", peak / 1024);
    assert!(
        log.contains("the MCP server's tools are over 4 MiB: 45 of them"),
        "{log}"
    );
    // The first listing's three fit the core; a later listing's, beside them, do not.
    let tools = host.ok("tools", json!({}));
    let names: Vec<&str> = tools["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert_eq!(names, ["l0-p0-t0", "l0-p0-t1", "l0-p0-t2"], "{names:?}");
    assert!(log.contains(r#"refused tool "l1-p0-t0""#), "{log}");
    assert!(peak < PEAK_KIB, "zot peaked at {peak} KiB");
    host.shutdown();
}

/// A server that sends pings and sampling requests (4 KiB each) as fast as it can and
/// never reads the answers: each is answered as it is read, none held, and once the
/// answers waiting for it fill the queue the server is stopped, the reason in its log.
#[test]
fn a_server_flooding_requests_without_reading_is_stopped() {
    let _serial = serial();
    let script = handshake_then(
        r#"
text = "s" * 4096
try:
    for n in range(0, 400000, 100):
        batch = []
        for i in range(n, n + 100):
            if i % 4:
                batch.append({"jsonrpc": "2.0", "id": i, "method": "ping"})
            else:
                batch.append({"jsonrpc": "2.0", "id": i, "method": "sampling/createMessage",
                    "params": {"maxTokens": 1, "messages": [
                        {"role": "user", "content": {"type": "text", "text": text}}]}})
        sys.stdout.write("".join(json.dumps(m) + "\n" for m in batch))
        sys.stdout.flush()
except BrokenPipeError:
    pass
time.sleep(120)
"#,
    );
    let mut b = HostBuilder::new();
    b.explicit("flood", &py_server("flood", &script));
    let host = b.start();
    assert_eq!(host.ready(), ["flood"]);
    let exited = host.wait_event("extension_exited", ACT_TIMEOUT, |v| {
        v["type"] == "extension_exited" && v["extension"] == "flood"
    });
    let peak = host.vm_hwm_kib();
    println!(
        "a flood of requests, answers unread: zot VmHWM {} MiB; {}",
        peak / 1024,
        exited["reason"]
    );
    assert_stopped_within_memory(host, "flood", peak);
}

/// A server that never reads its input again, while 160 calls with 1 MiB of arguments
/// each are made: once 64 MiB wait for it, it is stopped, the reason in its log, and
/// every call fails at once rather than at its timeout.
#[test]
fn a_server_that_does_not_read_its_calls_is_stopped() {
    let _serial = serial();
    let mut b = HostBuilder::new();
    b.explicit(
        "deaf",
        &py_server("deaf", &handshake_then("time.sleep(120)")),
    );
    let host = b.start();
    assert_eq!(host.ready(), ["deaf"]);
    let pad = "a".repeat(1 << 20);
    let ids: Vec<String> = (0..160)
        .map(|_| {
            host.send(
                "call_tool",
                json!({"name": "noop", "args": {"pad": pad}, "timeout_ms": 600000}),
            )
        })
        .collect();
    for id in &ids {
        let answer = host.wait_response(id, ACT_TIMEOUT);
        assert_eq!(answer["success"], false, "{answer}");
    }
    let peak = host.vm_hwm_kib();
    println!(
        "160 calls of 1 MiB, never read: zot VmHWM {} MiB",
        peak / 1024
    );
    assert_stopped_within_memory(host, "deaf", peak);
}

/// The sandboxed MCP server of the tests (`tests/guests/mcp-server`, a WASI component
/// run inside the host's own process) as extension `name`.
fn wasm_server(name: &str) -> Value {
    json!({"name": name, "mcp": {"wasm": zot_test_guests::MCP_SERVER}})
}

/// A sandboxed server whose listing, once `hoard` is called, is 48 tools of 1 MiB: the
/// host holds at most 4 MiB of it, says what it left out, and registers only what its
/// core takes.
#[test]
fn a_sandboxed_server_hoarding_its_tool_list_is_cut_to_what_the_core_takes() {
    let _serial = serial();
    let mut b = HostBuilder::new();
    b.explicit("whoard", &wasm_server("whoard"));
    let host = b.start();
    assert_eq!(host.ready(), ["whoard"]);
    assert_eq!(host.call_tool("hoard", json!({}))["is_error"], false);
    let log = wait_logged(&host, "whoard", "are left out", 1);
    let peak = host.vm_hwm_kib();
    println!(
        "a sandboxed listing of 48 MiB: zot VmHWM {} MiB",
        peak / 1024
    );
    assert!(
        log.contains("the MCP server's tools are over 4 MiB: 45 of them"),
        "{log}"
    );
    let deadline = Instant::now() + ACT_TIMEOUT;
    let names = loop {
        let tools = host.ok("tools", json!({}));
        let names: Vec<String> = tools["tools"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|t| t["name"].as_str())
            .filter(|n| n.starts_with("h-"))
            .map(String::from)
            .collect();
        // The three kept are registered one by one.
        if names.len() >= 3 || Instant::now() > deadline {
            break names;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(names, ["h-p0-t0", "h-p0-t1", "h-p0-t2"], "{names:?}");
    assert!(peak < PEAK_KIB, "zot peaked at {peak} KiB");
    host.shutdown();
}

/// A sandboxed server that, called `flood`, sends pings and sampling requests (4 KiB
/// each) as fast as the host takes them and never reads again: stopped once the answers
/// waiting for it fill the queue, the reason in its log; the call fails.
#[test]
fn a_sandboxed_server_flooding_requests_without_reading_is_stopped() {
    let _serial = serial();
    let mut b = HostBuilder::new();
    b.explicit("wflood", &wasm_server("wflood"));
    let host = b.start();
    assert_eq!(host.ready(), ["wflood"]);
    let call = host.send("call_tool", json!({"name": "flood", "args": {}}));
    let exited = host.wait_event("extension_exited", ACT_TIMEOUT, |v| {
        v["type"] == "extension_exited" && v["extension"] == "wflood"
    });
    assert_eq!(host.wait_response(&call, ACT_TIMEOUT)["success"], false);
    let peak = host.vm_hwm_kib();
    println!(
        "a sandboxed flood of requests, answers unread: zot VmHWM {} MiB; {}",
        peak / 1024,
        exited["reason"]
    );
    assert_stopped_within_memory(host, "wflood", peak);
}

/// A client of `zot mcp` that asks for 40 results of 8 MiB and never reads its stdout:
/// once 64 MiB wait unread it is cut off (said on stderr), the extensions are stopped
/// and `zot mcp` ends with status 1.
#[test]
fn a_zot_mcp_client_that_never_reads_is_cut_off() {
    let _serial = serial();
    let root = TempDir::new("mcp-unread");
    let ext = write_manifest(&root.path().join("py"), &py_manifest("py", &[]));
    let mut child = zot_mcp(root.path(), &ext);
    let pid = child.id();
    let mut stdin = child.stdin.take().unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let said = std::thread::spawn(move || {
        let mut all = String::new();
        let _ = stderr.read_to_string(&mut all);
        all
    });
    let mut lines = vec![
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "deaf", "version": "1"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    ];
    lines.extend((1..=40).map(|id| {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
               "params": {"name": "big", "arguments": {"bytes": 8 << 20}}})
    }));
    for line in lines {
        writeln!(stdin, "{line}").unwrap();
    }
    // stdout is never read; stdin stays open.
    let (mut peak, deadline) = (0, Instant::now() + ACT_TIMEOUT);
    let status = loop {
        if let Some(hwm) = proc_status_kib(pid, "VmHWM") {
            peak = peak.max(hwm);
        }
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("zot mcp did not cut its client off (VmHWM {peak} KiB)");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let said = said.join().unwrap();
    println!(
        "40 results of 8 MiB, never read: zot mcp VmHWM {} MiB",
        peak / 1024
    );
    assert_eq!(status.code(), Some(1), "{said}");
    assert!(
        said.contains("the client does not read its output") && said.contains("cut off"),
        "{said}"
    );
    assert!(peak < PEAK_KIB, "zot mcp peaked at {peak} KiB");
    drop(stdin);
}

/// `zot mcp --only --ext EXT` in `root`, its stdin, stdout and stderr piped.
fn zot_mcp(root: &Path, ext: &Path) -> std::process::Child {
    let (home, cwd) = (root.join("home"), root.join("cwd"));
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(&cwd).unwrap();
    Command::new(env!("CARGO_BIN_EXE_zot"))
        .args(["mcp", "--only", "--ready-timeout-ms", "15000"])
        .arg("--zot-home")
        .arg(&home)
        .arg("--cwd")
        .arg(&cwd)
        .arg("--ext")
        .arg(ext)
        .env("ZOT_HOME", &home)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start zot mcp")
}

/// The server `name` was stopped for not reading its input (said in its log), and `zot`
/// peaked at `peak` KiB, under [`PEAK_KIB`].
#[track_caller]
fn assert_stopped_within_memory(host: Host, name: &str, peak: u64) {
    let log = host.log(name);
    assert!(
        log.contains("the MCP server does not read its input") && log.contains("stopped"),
        "{log}"
    );
    assert!(peak < PEAK_KIB, "zot peaked at {peak} KiB");
    host.shutdown();
}
