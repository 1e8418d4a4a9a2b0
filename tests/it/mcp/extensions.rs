//! MCP servers as extensions (a manifest's `"mcp"`), driven through `zot host`: the
//! official `@modelcontextprotocol/server-everything` and `server-filesystem` (pinned by
//! `tests/mcp-servers/package-lock.json`, installed once per target dir with `npm ci`),
//! the Python test server `tests/extensions/mcp-py/server.py` (cancellation, a crash
//! mid-call, `list_changed`, log messages, images, `env`), and the `wasm32-wasip2` test
//! server `tests/guests/mcp-server`, sandboxed like any component.

use crate::common::*;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// The folder with the official servers installed, and `ts2-echo.mjs` (a server of the
/// official TypeScript SDK 2.x) beside their `node_modules` (imports resolve from a
/// script's folder; copied every run so an edit counts, renamed into place so no run
/// reads half).
fn servers() -> &'static Path {
    static SERVERS: OnceLock<PathBuf> = OnceLock::new();
    SERVERS.get_or_init(|| {
        let dir = npm_installed(
            "tests/mcp-servers",
            "mcp-servers",
            "node_modules/@modelcontextprotocol/server-filesystem/package.json",
        );
        let script = "ts2-echo.mjs";
        let partial = dir.join(format!("{script}.{}", std::process::id()));
        std::fs::copy(workspace().join("tests/mcp-servers").join(script), &partial).unwrap();
        std::fs::rename(&partial, dir.join(script)).unwrap();
        dir
    })
}

/// The manifest of the official server `name` (`everything`, `filesystem`), run by node
/// with `args`.
pub(crate) fn official(ext: &str, name: &str, args: &[&str], prefix: &str) -> Value {
    let script = servers().join(format!(
        "node_modules/@modelcontextprotocol/server-{name}/dist/index.js"
    ));
    let mut argv = vec![script.to_str().unwrap().to_string()];
    argv.extend(args.iter().map(|a| a.to_string()));
    json!({"name": ext, "version": "1.0.0",
           "mcp": {"command": "node", "args": argv, "prefix": prefix}})
}

/// The manifest of the Python test server, its markers written into `markers`.
pub(crate) fn py_mcp(ext: &str, markers: &Path, extra: Value) -> Value {
    let script = workspace().join("tests/extensions/mcp-py/server.py");
    let mut mcp = json!({"command": "python3",
        "args": [script.to_str().unwrap(), "--marker-dir", markers.to_str().unwrap()]});
    for (k, v) in extra.as_object().unwrap() {
        mcp[k] = v.clone();
    }
    json!({"name": ext, "mcp": mcp})
}

/// The text of a tool result's first block.
fn first_text(result: &Value) -> &str {
    result["content"][0]["text"].as_str().unwrap_or_default()
}

fn tool_names(host: &Host) -> Vec<String> {
    host.ok("tools", json!({}))["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str().map(str::to_string))
        .collect()
}

#[test]
fn the_official_servers_answer_as_extensions() {
    let mut b = HostBuilder::new();
    let allowed = b.scratch().join("allowed");
    std::fs::create_dir_all(&allowed).unwrap();
    std::fs::write(allowed.join("in.txt"), "inside\n").unwrap();
    std::fs::write(b.scratch().join("outside.txt"), "secret\n").unwrap();
    b.explicit(
        "everything",
        &official("everything", "everything", &["stdio"], ""),
    );
    b.explicit(
        "fs",
        &official("fs", "filesystem", &[allowed.to_str().unwrap()], "fs."),
    );
    let host = b.start();
    let ready = host.ready();
    assert!(
        ready.contains(&"everything".into()) && ready.contains(&"fs".into()),
        "{ready:?}"
    );
    let names = tool_names(&host);
    for name in [
        "echo",
        "get-structured-content",
        "fs.read_text_file",
        "fs.list_directory",
    ] {
        assert!(names.contains(&name.to_string()), "{name} in {names:?}");
    }

    let echo = host.ok(
        "call_tool",
        json!({"name": "echo", "args": {"message": "hi"}}),
    );
    assert_eq!(first_text(&echo), "Echo: hi", "{echo}");
    assert_eq!(echo["is_error"], false);
    assert_eq!(echo["extension"], "everything");

    // Structured output, and the tool's output schema, pass through.
    let shaped = host.ok(
        "call_tool",
        json!({"name": "get-structured-content", "args": {"location": "New York"}}),
    );
    assert!(shaped["structured_content"].is_object(), "{shaped}");
    let text: Value = serde_json::from_str(first_text(&shaped)).unwrap();
    assert_eq!(
        text, shaped["structured_content"],
        "the text block is the same object"
    );

    let inside = host.ok(
        "call_tool",
        json!({"name": "fs.read_text_file",
               "args": {"path": allowed.join("in.txt").to_str().unwrap()}}),
    );
    assert_eq!(inside["is_error"], false, "{inside}");
    assert_eq!(first_text(&inside), "inside\n");

    // The server refuses a path outside its roots: an error result, not a host failure.
    let outside = host.ok(
        "call_tool",
        json!({"name": "fs.read_text_file",
               "args": {"path": b_outside(&allowed).to_str().unwrap()}}),
    );
    assert_eq!(outside["is_error"], true, "{outside}");
    assert!(
        first_text(&outside).contains("outside allowed"),
        "{outside}"
    );
    host.shutdown();
}

/// The file beside `allowed`, outside it.
fn b_outside(allowed: &Path) -> PathBuf {
    allowed.parent().unwrap().join("outside.txt")
}

#[test]
fn cancel_crash_list_changed_and_logs_of_a_python_server() {
    let mut b = HostBuilder::new();
    let markers = b.scratch().join("markers");
    std::fs::create_dir_all(&markers).unwrap();
    b.explicit(
        "py",
        &py_mcp(
            "py",
            &markers,
            json!({"prefix": "py.", "env": {"ZOT_MCP_TEST": "given"}}),
        ),
    );
    let home = b.home();
    let host = b.start();
    assert_eq!(host.ready(), vec!["py".to_string()]);

    // A result's blocks: an image keeps its data and type.
    let image = host.ok("call_tool", json!({"name": "py.image", "args": {}}));
    let block = &image["content"][0];
    assert_eq!(block["type"], "image", "{image}");
    assert_eq!(block["mime_type"], "image/png", "{image}");
    assert!(
        block["data"].as_str().is_some_and(|d| !d.is_empty()),
        "{image}"
    );

    // Issue 37: audio and embedded resources (text or blob) keep their shape as zot's
    // `audio` and `resource` blocks.
    let media = host.ok("call_tool", json!({"name": "py.media", "args": {}}));
    assert_eq!(
        media["content"],
        json!([
            {"type": "audio", "mime_type": "audio/wav", "data": "UklGRg=="},
            {"type": "resource", "resource": {"uri": "file:///notes.md",
                                              "mime_type": "text/markdown", "text": "# notes"}},
            {"type": "resource", "resource": {"uri": "file:///x.bin", "blob": "AAE="}},
        ]),
        "{media}"
    );

    // Issue 37: the server's `notifications/progress` for a call (its token is the
    // call's id) reach a sidecar client that asked for progress, as `tool_progress`
    // events; one that did not ask gets none.
    let id = host.send(
        "call_tool",
        json!({"name": "py.progress", "args": {}, "progress": true}),
    );
    let done = host.wait_response(&id, REQUEST_TIMEOUT);
    assert_eq!(first_text(&done["data"]), "progressed", "{done}");
    let of = |id: &str| {
        let id = json!(id);
        host.events(move |e| e["type"] == "tool_progress" && e["request_id"] == id)
    };
    let seen: Vec<Value> = of(&id)
        .iter()
        .map(|e| json!([e["progress"], e["total"], e["text"]]))
        .collect();
    assert_eq!(
        seen,
        [
            json!([1.0, 3.0, "step 1"]),
            json!([2.0, 3.0, "step 2"]),
            json!([3.0, 3.0, "step 3"])
        ]
    );
    let quiet = host.send("call_tool", json!({"name": "py.progress", "args": {}}));
    let done = host.wait_response(&quiet, REQUEST_TIMEOUT);
    assert_eq!(
        first_text(&done["data"]),
        "progressed",
        "the server got a token: {done}"
    );
    assert!(of(&quiet).is_empty());

    // `mcp.env` reaches the server.
    let env = host.ok(
        "call_tool",
        json!({"name": "py.env", "args": {"name": "ZOT_MCP_TEST"}}),
    );
    assert_eq!(first_text(&env), "given", "{env}");

    // `isError` is `is_error`.
    let failed = host.ok("call_tool", json!({"name": "py.fail", "args": {}}));
    assert_eq!(failed["is_error"], true, "{failed}");
    assert_eq!(first_text(&failed), "it failed on purpose");

    // A log message lands in the extension's log.
    host.ok(
        "call_tool",
        json!({"name": "py.log", "args": {"message": "a note from py"}}),
    );
    let log = home.join("logs/ext-py.log");
    let logged = (0..100).any(|_| {
        std::thread::sleep(Duration::from_millis(50));
        std::fs::read_to_string(&log)
            .unwrap_or_default()
            .contains("py-mcp: a note from py")
    });
    assert!(
        logged,
        "{}",
        std::fs::read_to_string(&log).unwrap_or_default()
    );

    // `notifications/tools/list_changed`: the new tool is registered and answers.
    assert!(!tool_names(&host).contains(&"py.late".to_string()));
    host.ok("call_tool", json!({"name": "py.grow", "args": {}}));
    host.ping_until(Duration::from_secs(10), |h| {
        tool_names(h).contains(&"py.late".to_string()).then_some(())
    });
    let answer = host.ok("call_tool", json!({"name": "py.late", "args": {}}));
    assert_eq!(first_text(&answer), "late tool");

    // A timeout cancels: the server gets `notifications/cancelled` for that request.
    let slow = host.fails(
        "call_tool",
        json!({"name": "py.slow", "args": {"seconds": 30}, "timeout_ms": 500}),
    );
    assert!(
        slow.contains("timed out") || slow.contains("timeout"),
        "{slow}"
    );
    let cancelled = markers.join("cancelled-slow");
    let seen = (0..200).any(|_| {
        std::thread::sleep(Duration::from_millis(50));
        cancelled.is_file()
    });
    assert!(seen, "the server was told of the cancel");

    // A crash mid-call fails the call at once, not at its timeout.
    let started = Instant::now();
    let crash = host.fails(
        "call_tool",
        json!({"name": "py.crash", "args": {}, "timeout_ms": 60000}),
    );
    let took = started.elapsed();
    assert!(
        markers.join("crashing").is_file(),
        "the call reached the server"
    );
    assert!(crash.contains("py") && crash.contains("exited"), "{crash}");
    assert!(
        took < Duration::from_secs(20),
        "failed after {took:?}, not at its 60 s timeout"
    );
    host.wait_event("extension_exited", EVENT_TIMEOUT, |v| {
        v["extension"] == "py"
    });
    assert!(!tool_names(&host).iter().any(|t| t.starts_with("py.")));
    host.shutdown();
}

#[test]
fn a_component_mcp_server_runs_sandboxed() {
    let mut b = HostBuilder::new();
    b.explicit(
        "wmcp",
        // Prefixed: its `read` and `write` would be shadowed by the agent's built-ins.
        &json!({"name": "wmcp", "mcp": {"wasm": zot_test_guests::MCP_SERVER, "prefix": "w."}}),
    );
    let home = b.home();
    let host = b.start();
    assert_eq!(host.ready(), vec!["wmcp".to_string()]);
    let echo = host.ok(
        "call_tool",
        json!({"name": "w.echo", "args": {"text": "héllo"}}),
    );
    assert_eq!(first_text(&echo), "héllo");
    assert_eq!(
        echo["structured_content"],
        json!({"echo": "héllo", "length": 5})
    );

    // Its data dir is /data; nothing else of the host is there, nor its environment.
    let wrote = host.ok(
        "call_tool",
        json!({"name": "w.write", "args": {"path": "/data/n.txt", "text": "kept"}}),
    );
    assert_eq!(wrote["is_error"], false, "{wrote}");
    let read = host.ok(
        "call_tool",
        json!({"name": "w.read", "args": {"path": "/data/n.txt"}}),
    );
    assert_eq!(first_text(&read), "kept");
    for path in ["/etc/passwd", "/proc/self/environ", home.to_str().unwrap()] {
        let denied = host.ok(
            "call_tool",
            json!({"name": "w.read", "args": {"path": path}}),
        );
        assert_eq!(denied["is_error"], true, "{path}: {denied}");
    }
    let env = host.ok("call_tool", json!({"name": "w.env", "args": {}}));
    let seen: Value = serde_json::from_str(first_text(&env)).unwrap();
    assert_eq!(seen["vars"], 0, "{env}");
    host.shutdown();
}

#[test]
fn a_zot_component_named_as_an_mcp_server_is_refused_in_words() {
    let mut b = HostBuilder::new();
    b.explicit(
        "notmcp",
        &json!({"name": "notmcp", "mcp": {"wasm": zot_test_guests::REACTOR}}),
    );
    let host = b.start();
    let ready = host.ready_event();
    let error = ready["errors"].to_string();
    assert!(
        error.contains("not an MCP server") && error.contains("mcp.wasm"),
        "{ready}"
    );
    host.shutdown();
}

#[test]
fn a_project_mcp_server_waits_for_trust_and_installs_like_any_extension() {
    let mut b = HostBuilder::new();
    let markers = b.scratch().join("markers");
    std::fs::create_dir_all(&markers).unwrap();
    let manifest = py_mcp("pyproj", &markers, json!({"env": {"TOKEN": "a b"}}));
    let dir = b.project("pyproj", &manifest);
    let home = b.home();
    let host = b.start();
    let ready = host.ready_event();
    assert_eq!(ready["untrusted"][0]["extension"], "pyproj", "{ready}");
    assert_eq!(ready["extensions"], json!([]), "{ready}");
    let log = home.join("logs/ext-pyproj.log");
    let log = std::fs::read_to_string(log).unwrap_or_default();
    assert!(
        !log.contains("started"),
        "an untrusted project's server never starts: {log}"
    );

    // Installed from its folder: the consent names the exact command, its variables
    // included; then listed and called like any extension.
    let home = TempDir::new("mcp-install");
    let out = zot(
        home.path(),
        home.path(),
        &["install", dir.to_str().unwrap(), "--yes"],
    );
    assert_ok(&out);
    let said = stdout(&out);
    assert!(said.contains("env 'TOKEN=a b' python3 "), "{said}");
    let list = zot(home.path(), home.path(), &["list", "--json"]);
    let list: Value = serde_json::from_str(&stdout(&list)).unwrap();
    assert_eq!(list[0]["name"], "pyproj", "{list}");
    assert_eq!(list[0]["transport"], "stdio", "{list}");
    let call = zot(
        home.path(),
        home.path(),
        &["call", "pyproj", "env", r#"{"name":"TOKEN"}"#],
    );
    assert_ok(&call);
    assert_eq!(stdout(&call).trim(), "a b");
    let check = zot(home.path(), home.path(), &["check", "pyproj"]);
    assert_ok(&check);
    assert!(stdout(&check).contains("echo"), "{}", text(&check));
    // Issue 36: the header says it is spoken to in MCP.
    assert!(
        stdout(&check)
            .lines()
            .next()
            .unwrap()
            .contains(" (mcp) at "),
        "{}",
        text(&check)
    );
    // The shell drives it as any extension; its stderr is in its log.
    let script = home.path().join("script");
    std::fs::write(&script, "call echo {\"text\": \"from the shell\"}\n").unwrap();
    let script = script.to_str().unwrap();
    let shell = zot(
        home.path(),
        home.path(),
        &["shell", "--ext", dir.to_str().unwrap(), "--script", script],
    );
    assert_ok(&shell);
    assert!(
        stdout(&shell).contains("from the shell"),
        "{}",
        text(&shell)
    );
    let log = std::fs::read_to_string(home.path().join("logs/ext-pyproj.log")).unwrap();
    assert!(log.contains("[stderr] py-mcp: started"), "{log}");
    host.shutdown();
}

#[test]
fn an_oversize_answer_fails_its_call_and_a_server_speaking_no_mcp_is_logged() {
    let mut b = HostBuilder::new();
    let markers = b.scratch().join("markers");
    std::fs::create_dir_all(&markers).unwrap();
    b.explicit("py", &py_mcp("py", &markers, json!({})));
    // Prints a line that is no MCP, and exits.
    let script = "print('hello there', flush=True)";
    b.explicit(
        "nomcp",
        &json!({"name": "nomcp", "mcp": {"command": "python3", "args": ["-c", script]}}),
    );
    b.arg("--max-frame-bytes").arg("8192");
    b.arg("--ready-timeout-ms").arg("3000");
    let home = b.home();
    let host = b.start();
    host.ready_event();
    let fits = host.ok(
        "call_tool",
        json!({"name": "echo", "args": {"text": "small"}}),
    );
    assert_eq!(first_text(&fits), "small");
    // The answer holds the text twice (a block and `structuredContent`): over the cap,
    // where the request is not.
    let started = Instant::now();
    let big = host.ok(
        "call_tool",
        json!({"name": "echo", "args": {"text": "x".repeat(5_000)}, "timeout_ms": 60000}),
    );
    assert_eq!(big["is_error"], true, "{big}");
    assert!(
        first_text(&big).contains("longer than the frame size limit"),
        "{big}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "failed at once"
    );
    // The server goes on.
    let after = host.ok(
        "call_tool",
        json!({"name": "echo", "args": {"text": "again"}}),
    );
    assert_eq!(first_text(&after), "again");
    let log = home.join("logs/ext-nomcp.log");
    let said = |what: &str| {
        std::fs::read_to_string(&log)
            .unwrap_or_default()
            .contains(what)
    };
    host.wait_event("extension_exited", EVENT_TIMEOUT, |v| {
        v["extension"] == "nomcp"
    });
    assert!(said("no MCP message") && said("hello there"), "{log:?}");
    assert!(said("failed its handshake"), "{log:?}");
    host.shutdown();
}

/// A server that lists 1100 tools, in pages of 500: the first 1024 are taken and the
/// log says so; of those the host registers 1000, its cap per extension, and logs the
/// other 24 as refused.
#[test]
fn a_tool_list_past_1024_tools_is_cut_and_logged() {
    let mut b = HostBuilder::new();
    let markers = b.scratch().join("markers");
    std::fs::create_dir_all(&markers).unwrap();
    let mut manifest = py_mcp("many", &markers, json!({}));
    let args = manifest["mcp"]["args"].as_array_mut().unwrap();
    args.extend([json!("--extra-tools"), json!("1100")]);
    b.explicit("many", &manifest);
    let host = b.start();
    assert_eq!(host.ready(), ["many"]);
    let names = tool_names(&host);
    assert_eq!(names.len(), 1000, "{names:?}");
    // Its 10 own tools, then t0000 … t0989.
    assert!(names.contains(&"t0989".to_string()), "{names:?}");
    assert!(!names.contains(&"t0990".to_string()), "{names:?}");
    let log = host.log("many");
    assert!(
        log.contains("the MCP server lists more than 1024 tools: only the first 1024 are taken"),
        "{log}"
    );
    assert_eq!(log.matches("refused tool ").count(), 24, "{log}");
    assert!(log.contains(r#"refused tool "t1013""#), "{log}");
    host.shutdown();
}

/// Issue 37: the host speaks 2026-07-28 to a server that does (`server/discover`, no
/// `initialize`): `zot mcp` itself, serving a Python extension, and the Python test
/// server in its 2026-only mode (which refuses `initialize`, and says its tool list
/// changed only on a `subscriptions/listen` stream); it falls back to the 2025
/// handshake for one that does not (the Python test server answers `server/discover`
/// with "method not found"). All serve their tools; `zot mcp` hands on its tool's
/// progress through both hosts; a tool the 2026-only server adds is listed again.
#[test]
fn a_2026_server_is_discovered_and_an_older_one_handshaken() {
    let mut b = HostBuilder::new();
    let markers = b.scratch().join("markers");
    std::fs::create_dir_all(&markers).unwrap();
    let inner = write_manifest(
        &b.scratch().join("inner-ext"),
        &py_manifest("progressive", &["--tools", "progress"]),
    );
    let inner_home = b.scratch().join("inner-home");
    b.explicit(
        "modern",
        &json!({"name": "modern", "mcp": {
            "command": env!("CARGO_BIN_EXE_zot"),
            "args": ["mcp", "--ext", inner.to_str().unwrap()],
            "env": {"ZOT_HOME": inner_home.to_str().unwrap()},
            "prefix": "m."}}),
    );
    b.explicit("older", &py_mcp("older", &markers, json!({"prefix": "o."})));
    let mut only = py_mcp("only", &markers, json!({"prefix": "n."}));
    only["mcp"]["args"]
        .as_array_mut()
        .unwrap()
        .push(json!("--only-2026"));
    b.explicit("only", &only);
    let host = b.start();
    let mut ready = host.ready();
    ready.sort();
    assert_eq!(ready, ["modern", "older", "only"]);
    assert!(
        host.log("only")
            .contains(r#"MCP server "py-mcp-2026" "2.0.0" ready (protocol 2026-07-28)"#),
        "{}",
        host.log("only")
    );
    assert!(
        host.log("modern").contains("ready (protocol 2026-07-28)"),
        "{}",
        host.log("modern")
    );
    assert!(
        host.log("older").contains("ready (protocol 2025-11-25)"),
        "{}",
        host.log("older")
    );

    let id = host.send(
        "call_tool",
        json!({"name": "m.progress", "args": {"count": 2}, "progress": true}),
    );
    let done = host.wait_response(&id, REQUEST_TIMEOUT);
    assert_eq!(first_text(&done["data"]), "progressed", "{done}");
    let texts: Vec<Value> = host
        .events(|e| e["type"] == "tool_progress" && e["request_id"] == json!(id))
        .iter()
        .map(|e| e["text"].clone())
        .collect();
    assert_eq!(texts, [json!("step 1"), json!("step 2")]);
    let echo = host.ok(
        "call_tool",
        json!({"name": "o.echo", "args": {"text": "hi"}}),
    );
    assert_eq!(first_text(&echo), "hi", "{echo}");

    let echo = host.ok(
        "call_tool",
        json!({"name": "n.echo", "args": {"text": "26"}}),
    );
    assert_eq!(first_text(&echo), "26", "{echo}");
    host.ok("call_tool", json!({"name": "n.grow", "args": {}}));
    let deadline = Instant::now() + EVENT_TIMEOUT;
    while !tool_names(&host).contains(&"n.late".to_string()) {
        assert!(
            Instant::now() < deadline,
            "the tool list change on the listen stream: {}",
            host.log("only")
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let late = host.ok("call_tool", json!({"name": "n.late", "args": {}}));
    assert_eq!(first_text(&late), "late tool", "{late}");
    host.shutdown();
}

/// A server the test started in a process group of its own: SIGTERM to the group when
/// dropped, then SIGKILL if it has not gone in 10 s.
struct Served {
    child: std::process::Child,
}

impl Served {
    /// Starts `argv` with `env` in a new process group and waits until a line of its
    /// stderr contains `ready`; the line.
    fn start(argv: &[std::ffi::OsString], env: &[(&str, &str)], ready: &str) -> (Served, String) {
        use std::io::BufRead as _;
        use std::os::unix::process::CommandExt as _;
        let mut child = std::process::Command::new(&argv[0])
            .args(&argv[1..])
            .envs(env.iter().copied())
            .process_group(0)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let stderr = std::io::BufReader::new(child.stderr.take().unwrap());
        let (lines, said) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in stderr.lines().map_while(Result::ok) {
                let _ = lines.send(line);
            }
        });
        let served = Served { child };
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match said.recv_timeout(left) {
                Ok(line) if line.contains(ready) => return (served, line),
                Ok(_) => {}
                Err(e) => panic!("{argv:?} never said {ready:?}: {e}"),
            }
        }
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let group = -(self.child.id() as i32);
        unsafe { libc::kill(group, libc::SIGTERM) };
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        unsafe { libc::kill(group, libc::SIGKILL) };
        let _ = self.child.wait();
    }
}

/// A port free on 127.0.0.1 now.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The official `server-everything` serving Streamable HTTP on a free port of
/// 127.0.0.1 (at `/mcp`), and the port.
fn everything_over_http() -> (Served, u16) {
    let port = free_port();
    let script =
        servers().join("node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    let argv = [
        "node".into(),
        script.into_os_string(),
        "streamableHttp".into(),
    ];
    let (served, _) = Served::start(
        &argv,
        &[("PORT", &port.to_string())],
        "MCP Streamable HTTP Server listening on port",
    );
    (served, port)
}

/// `zot ext grant <dir> -p <permission>` in `home`, as the user would.
fn grant(home: &Path, dir: &Path, permission: &str) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_zot"))
        .args(["ext", "grant", dir.to_str().unwrap(), "-p", permission])
        .env("ZOT_HOME", home)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "grant failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The official `server-everything` over Streamable HTTP (TypeScript SDK; sessions,
/// `initialize` after the `server/discover` probe is refused) as a remote extension,
/// granted its origin with `zot ext grant`: its tools registered, `echo` called through
/// the sidecar.
#[test]
fn a_remote_server_over_http_is_an_extension_once_granted() {
    let (_server, port) = everything_over_http();
    let mut b = HostBuilder::new();
    let url = format!("http://127.0.0.1:{port}/mcp");
    let dir = b.explicit(
        "remote",
        &json!({"name": "remote", "mcp": {"url": url, "prefix": "ev."}}),
    );
    grant(&b.home(), &dir, &format!("http://127.0.0.1:{port}"));
    let host = b.start();
    let ready = host.ready();
    assert!(
        ready.contains(&"remote".into()),
        "{ready:?}\n{}",
        host.log("remote")
    );
    let names = tool_names(&host);
    assert!(names.contains(&"ev.echo".to_string()), "{names:?}");
    let echo = host.ok(
        "call_tool",
        json!({"name": "ev.echo", "args": {"message": "over http"}}),
    );
    assert_eq!(first_text(&echo), "Echo: over http", "{echo}");
    assert_eq!(echo["extension"], "remote");
    assert_eq!(host.entry("remote")["transport"], "remote");
    host.shutdown();
}

/// `zot mcp --http` (rmcp's server: MCP 2026-07-28) as a remote extension, its bearer
/// token sent from a file named in `"headers"` (expanded at launch, never logged).
#[test]
fn a_remote_server_gets_its_headers_from_a_file() {
    let mut p = super::server::Project::new("remote-headers");
    p.ext(
        "everything",
        &official("everything", "everything", &["stdio"], ""),
    );
    let token = "t0ken-of-the-remote-test";
    let token_file = p.path("token");
    std::fs::write(&token_file, format!("{token}\n")).unwrap();
    let mut argv = p.zot_mcp(&["--http", "127.0.0.1:0", "--token-file"]);
    argv.push(token_file.clone().into());
    let home = p.path("home");
    let (_server, said) = Served::start(
        &argv,
        &[("ZOT_HOME", home.to_str().unwrap())],
        "zot mcp: serving MCP at ",
    );
    let url = said
        .split("zot mcp: serving MCP at ")
        .nth(1)
        .unwrap()
        .trim()
        .to_string();
    let origin = url.trim_end_matches("/mcp").to_string();
    let mut b = HostBuilder::new();
    let dir = b.explicit(
        "zotted",
        &json!({"name": "zotted", "mcp": {"url": url,
            "headers": {"Authorization": format!("Bearer ${{file:{}}}", token_file.display())}}}),
    );
    grant(&b.home(), &dir, &origin);
    let host = b.start();
    let ready = host.ready();
    let log = host.log("zotted");
    assert!(ready.contains(&"zotted".into()), "{ready:?}\n{log}");
    assert!(log.contains("protocol 2026-07-28"), "{log}");
    assert!(!log.contains(token), "the token is never logged: {log}");
    let echo = host.ok(
        "call_tool",
        json!({"name": "echo", "args": {"message": "bearer"}}),
    );
    assert_eq!(first_text(&echo), "Echo: bearer", "{echo}");
    host.shutdown();
}

/// A remote server whose origin the user did not grant: refused before any connection
/// (the listener at its address is never reached), saying which host and the next step.
#[test]
fn a_remote_server_not_granted_is_refused_before_connecting() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let mut b = HostBuilder::new();
    b.explicit(
        "ungranted",
        &json!({"name": "ungranted", "mcp": {"url": format!("http://127.0.0.1:{port}/mcp")}}),
    );
    let host = b.start();
    let ready = host.ready_event();
    let error = ready["errors"].to_string();
    assert!(
        error.contains(&format!(
            "denied HTTP to 127.0.0.1: http://127.0.0.1:{port} is not granted"
        )) && error.contains("zot ext grant"),
        "{ready}"
    );
    let log = host.log("ungranted");
    assert!(log.contains("denied HTTP to 127.0.0.1"), "{log}");
    assert!(
        matches!(listener.accept(), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock),
        "no connection was made"
    );
    host.shutdown();
}

/// `zot ext call` of a remote server granted its origin for the run only
/// (`--allow-http`), and `zot ext check` of it: refused naming what is missing until
/// the user grants it, then its tools listed — as a user tries one before installing it.
#[test]
fn a_remote_server_is_called_with_a_grant_for_the_run_and_checked_once_granted() {
    let (_server, port) = everything_over_http();
    let scratch = TempDir::new("remote-call");
    let url = format!("http://127.0.0.1:{port}/mcp");
    let dir = write_manifest(
        &scratch.path().join("remote"),
        &json!({"name": "remote", "mcp": {"url": url}}),
    );
    let home = scratch.path().join("home");
    let origin = format!("http://127.0.0.1:{port}");
    let target = dir.to_str().unwrap();

    let out = zot(
        &home,
        scratch.path(),
        &[
            "call",
            target,
            "echo",
            r#"{"message": "hi"}"#,
            "--allow-http",
            &origin,
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(stdout(&out), "Echo: hi\n", "{}", text(&out));

    let out = zot(&home, scratch.path(), &["check", target]);
    assert_ne!(out.status.code(), Some(0), "{}", text(&out));
    let said = text(&out);
    assert!(said.contains(&format!("{origin} is not granted")), "{said}");

    grant(&home, &dir, &origin);
    let out = zot(&home, scratch.path(), &["check", target]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(stdout(&out).contains("mcp, remote"), "{}", text(&out));
    assert!(stdout(&out).contains("echo"), "{}", text(&out));
}

/// The official TypeScript server SDK 2.x over Streamable HTTP (`createMcpHandler`), as a
/// remote extension called with `zot ext call … --allow-http`: serving both revisions
/// and serving only 2026-07-28 (`legacy: 'reject'`), the host speaks 2026-07-28 to it.
#[test]
fn the_official_2026_server_sdk_over_http_is_a_remote_extension() {
    for only_2026 in [false, true] {
        let port = free_port();
        let mut argv: Vec<std::ffi::OsString> = vec![
            "node".into(),
            servers().join("ts2-echo.mjs").into_os_string(),
        ];
        if only_2026 {
            argv.push("--only-2026".into());
        }
        let (_server, _) = Served::start(
            &argv,
            &[("PORT", &port.to_string())],
            "ts2-echo listening on port",
        );
        let scratch = TempDir::new("remote-ts2");
        let url = format!("http://127.0.0.1:{port}/mcp");
        let dir = write_manifest(
            &scratch.path().join("ts2"),
            &json!({"name": "ts2", "mcp": {"url": url}}),
        );
        let home = scratch.path().join("home");
        let origin = format!("http://127.0.0.1:{port}");
        let out = zot(
            &home,
            scratch.path(),
            &[
                "call",
                dir.to_str().unwrap(),
                "echo",
                r#"{"text": "hi"}"#,
                "--allow-http",
                &origin,
            ],
        );
        assert_eq!(
            out.status.code(),
            Some(0),
            "only 2026: {only_2026}: {}",
            text(&out)
        );
        assert_eq!(stdout(&out), "echo: hi\n", "{}", text(&out));
        let log = std::fs::read_to_string(home.join("logs/ext-ts2.log")).unwrap();
        assert!(
            log.contains(r#"MCP server "ts2-echo" "2.4.0" ready (protocol 2026-07-28)"#),
            "{log}"
        );
    }
}
