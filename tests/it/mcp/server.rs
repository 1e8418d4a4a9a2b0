//! `zot mcp` against a real MCP client: the official TypeScript SDK
//! (`@modelcontextprotocol/sdk`, pinned by `tests/mcp-client/package-lock.json`), installed
//! once per target dir with `npm ci`, spawns `zot mcp` through its `StdioClientTransport`
//! and runs the steps each test gives `tests/mcp-client/drive.mjs` (which documents them).
//! Every run also checks that the client saw no transport or protocol error: stdout
//! carries only MCP JSON-RPC.

use crate::common::*;
use serde_json::{json, Value};
use std::ffi::OsString;
use std::io::{BufRead as _, BufReader, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Output, Stdio};
use std::sync::{mpsc, OnceLock};
use std::time::{Duration, Instant};

/// How long one client run may take in all.
pub(super) const RUN_TIMEOUT: Duration = Duration::from_secs(120);

/// The folder with the pinned clients of `tests/mcp-client` installed and its driver
/// scripts beside them:
/// `<target>/tmp/mcp-client-<hash of the lockfile>`, installed by `npm ci` on first use
/// (into a folder of this process's, then renamed into place, so a concurrent run never
/// sees half an install) and reused after.
pub(crate) fn client() -> &'static Path {
    static CLIENT: OnceLock<PathBuf> = OnceLock::new();
    CLIENT.get_or_init(|| {
        let source = workspace().join("tests/mcp-client");
        let dir = npm_installed(
            "tests/mcp-client",
            "mcp-client",
            "node_modules/@modelcontextprotocol/sdk/package.json",
        );
        // The scripts beside their node_modules (imports resolve from a script's folder);
        // copied every run so an edit counts, renamed into place so no run reads half.
        for script in ["drive.mjs", "drive-v2.mjs", "steps.mjs"] {
            let partial = dir.join(format!("{script}.{}", std::process::id()));
            std::fs::copy(source.join(script), &partial).unwrap();
            std::fs::rename(&partial, dir.join(script)).unwrap();
        }
        dir
    })
}

/// A scratch project: `root/home` (ZOT_HOME), `root/cwd`, and extensions under
/// `root/exts`.
pub(crate) struct Project {
    root: TempDir,
    ext_args: Vec<String>,
}

impl Project {
    pub(crate) fn new(tag: &str) -> Project {
        let root = TempDir::new(tag);
        std::fs::create_dir_all(root.path().join("cwd")).unwrap();
        Project {
            root,
            ext_args: Vec::new(),
        }
    }

    /// Loads the extension of `manifest` with `--ext`.
    pub(crate) fn ext(&mut self, dir_name: &str, manifest: &Value) -> &mut Self {
        let dir = write_manifest(&self.root.path().join("exts").join(dir_name), manifest);
        self.ext_args.push("--ext".into());
        self.ext_args.push(dir.to_str().unwrap().into());
        self
    }

    pub(crate) fn path(&self, name: &str) -> PathBuf {
        self.root.path().join(name)
    }

    /// `zot mcp --only` with these extensions, plus `flags`: the command, then its
    /// arguments.
    pub(crate) fn zot_mcp(&self, flags: &[&str]) -> Vec<OsString> {
        let mut argv = self.zot_mcp_discovering(flags);
        argv.insert(2, "--only".into());
        argv
    }

    /// [`Project::zot_mcp`] without `--only`: the project's and the global extensions
    /// load too.
    pub(super) fn zot_mcp_discovering(&self, flags: &[&str]) -> Vec<OsString> {
        let mut argv: Vec<OsString> = vec![env!("CARGO_BIN_EXE_zot").into()];
        for arg in ["mcp", "--ready-timeout-ms", "15000", "--zot-home"] {
            argv.push(arg.into());
        }
        argv.push(self.path("home").into());
        argv.push("--cwd".into());
        argv.push(self.path("cwd").into());
        argv.extend(self.ext_args.iter().map(OsString::from));
        argv.extend(flags.iter().map(OsString::from));
        argv
    }

    /// Runs the client with `steps` against `zot mcp --only` and these extensions, plus
    /// `flags`; returns what drive.mjs printed. Asserts the client saw no error.
    pub(super) fn drive(&self, steps: Value, flags: &[&str]) -> Value {
        self.run_client(steps, self.zot_mcp(flags))
    }

    /// Runs drive.mjs with `steps` and `target` (see drive.mjs).
    pub(super) fn run_client(&self, steps: Value, target: Vec<OsString>) -> Value {
        let mut node = Command::new("node");
        node.arg(client().join("drive.mjs"))
            .arg(steps.to_string())
            .args(target)
            .env("ZOT_HOME", self.path("home"))
            .current_dir(self.path("cwd"));
        let out = run_client_command(node);
        let printed = stdout(&out);
        let run: Value = serde_json::from_str(printed.trim())
            .unwrap_or_else(|e| panic!("drive.mjs printed no JSON ({e}):\n{}", text(&out)));
        assert_eq!(run["errors"], json!([]), "the client saw errors: {run:#}");
        run
    }
}

/// Runs a client's `command` (its stdin empty) to its end, at most [`RUN_TIMEOUT`], and
/// returns what it printed. Its output is read while it runs, so a long listing never
/// stalls it on a full pipe.
pub(crate) fn run_client_command(mut command: Command) -> Output {
    run_within(&mut command, RUN_TIMEOUT).unwrap_or_else(|said| {
        panic!(
            "the MCP client run took more than {RUN_TIMEOUT:?}: {command:?}\n{}",
            text(&said)
        )
    })
}

/// A Python test extension named `name` with `args`.
pub(crate) fn py(name: &str, args: &[&str]) -> Value {
    py_manifest(name, args)
}

/// The text of a call result's first content block.
pub(crate) fn first(result: &Value) -> &str {
    result["content"][0]["text"].as_str().unwrap_or_default()
}

/// The names of a `tools/list` result.
pub(crate) fn names(list: &Value, key: &str) -> Vec<String> {
    list[key]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn a_native_and_a_sandboxed_extension_are_listed_and_called() {
    let mut p = Project::new("mcp-tools");
    p.ext(
        "py",
        &py("py", &["--tools", "echo_py,fail_py", "--commands", ""]),
    );
    p.ext(
        "guest",
        &json!({"name": "guest", "version": "0.1.0", "wasm": zot_test_guests::REACTOR}),
    );
    let run = p.drive(
        json!([
            {"op": "init"},
            {"op": "tools"},
            {"op": "call", "name": "echo_py", "args": {"x": 1}},
            {"op": "call", "name": "echo", "args": {"y": "sandboxed"}},
            {"op": "call", "name": "fail_py"},
            {"op": "call", "name": "no_such_tool"},
        ]),
        &[],
    );
    let s = &run["steps"];
    assert_eq!(s[0]["server"]["name"], "zot", "{run:#}");
    assert_eq!(
        s[0]["capabilities"]["tools"]["listChanged"], true,
        "{run:#}"
    );
    let tools = names(&s[1], "tools");
    for tool in ["echo_py", "fail_py", "echo", "fs_read"] {
        assert!(tools.contains(&tool.to_string()), "{tool} in {tools:?}");
    }
    for tool in s[1]["tools"].as_array().unwrap() {
        assert_eq!(tool["inputSchema"]["type"], "object", "{tool}");
    }
    assert_eq!(
        (first(&s[2]), &s[2]["isError"]),
        (r#"{"x":1}"#, &json!(false))
    );
    assert_eq!(s[3]["isError"], false, "{run:#}");
    assert!(first(&s[3]).contains("sandboxed"), "{run:#}");
    assert_eq!(
        (first(&s[4]), &s[4]["isError"]),
        ("failed on purpose", &json!(true))
    );
    // MCP 2025-11-25: an unknown tool is a protocol error, -32602.
    assert_eq!(s[5]["code"], -32602, "{run:#}");
    assert!(s[5]["error"]
        .as_str()
        .unwrap()
        .contains("Unknown tool: no_such_tool"));
}

/// Issue 36: arguments that do not fit the tool's schema are `-32602` (invalid params)
/// with each field in `data.problems`, before an interceptor or the extension sees them,
/// as the official client reports them; `--no-validate` sends them as they are.
#[test]
fn arguments_that_do_not_fit_the_schema_are_invalid_params_naming_the_field() {
    let p = Project::new("mcp-validate");
    let dir = weather(&p.path("exts").join("wx"), "wx", "wx");
    let ext = dir.to_str().unwrap();
    let steps = json!([
        {"op": "init"},
        {"op": "call", "name": "forecast", "args": {"city": 3}},
        {"op": "call", "name": "forecast", "args": {"city": "Oslo"}},
    ]);
    let run = p.drive(steps.clone(), &["--ext", ext]);
    let s = &run["steps"];
    assert_eq!(s[1]["code"], -32602, "{run:#}");
    assert_eq!(
        s[1]["data"],
        json!({"tool": "forecast", "problems": [
            {"field": "city", "message": "argument \"city\": expected a string, got 3"}]}),
        "{run:#}"
    );
    assert!(
        s[1]["error"]
            .as_str()
            .unwrap()
            .contains("tool \"forecast\": argument \"city\": expected a string, got 3"),
        "{run:#}"
    );
    assert_eq!(first(&s[2]), r#"{"city": "Oslo"}"#, "{run:#}");
    assert_eq!(
        calls(&dir),
        [json!({"city": "Oslo"})],
        "nothing else was sent"
    );

    let run = p.drive(steps, &["--ext", ext, "--no-validate"]);
    assert_eq!(first(&run["steps"][1]), r#"{"city": 3}"#, "{run:#}");
    assert_eq!(
        calls(&dir),
        [
            json!({"city": "Oslo"}),
            json!({"city": 3}),
            json!({"city": "Oslo"})
        ]
    );
}

/// Issue 37: a guard that fails closed blocks, through `zot mcp` too, a call it does
/// not answer: the client gets the tool's error naming the guard, and the tool never
/// runs.
#[test]
fn a_guard_that_fails_closed_blocks_an_mcp_call_it_does_not_answer() {
    let mut p = Project::new("mcp-fail-closed");
    p.ext("py", &py("py", &["--tools", "echo_py", "--commands", ""]));
    p.ext(
        "mute",
        &py_manifest("mute", &["--mode", "mute", "--intercept", "tool_call"]),
    );
    let mute = p.path("exts").join("mute");
    let chose = zot(
        &p.path("home"),
        &p.path("cwd"),
        &["guard", mute.to_str().unwrap(), "--fail-closed"],
    );
    assert_ok(&chose);
    let run = p.drive(
        json!([{"op": "init"}, {"op": "call", "name": "echo_py", "args": {"x": 1}}]),
        &["--intercept-timeout-ms", "500"],
    );
    let s = &run["steps"];
    assert_eq!(s[1]["isError"], true, "{run:#}");
    assert_eq!(
        first(&s[1]),
        "guard \"mute\" fails closed: it did not answer within 500 ms",
        "{run:#}"
    );
}

/// Issue 37: audio and embedded resources from an MCP server run as an extension reach
/// an MCP client of `zot mcp` as MCP's audio and embedded resource content, through the
/// zot blocks between.
#[test]
fn audio_and_embedded_resources_are_served_as_mcp_content() {
    let mut p = Project::new("mcp-media");
    let markers = p.path("markers");
    std::fs::create_dir_all(&markers).unwrap();
    p.ext(
        "py",
        &super::extensions::py_mcp("py", &markers, json!({"prefix": "py."})),
    );
    let run = p.drive(
        json!([{"op": "init"}, {"op": "call", "name": "py.media", "args": {}}]),
        &[],
    );
    assert_eq!(
        run["steps"][1]["content"],
        json!([
            {"type": "audio", "data": "UklGRg==", "mimeType": "audio/wav"},
            {"type": "resource", "resource": {"uri": "file:///notes.md",
                                              "mimeType": "text/markdown", "text": "# notes"}},
            {"type": "resource", "resource": {"uri": "file:///x.bin", "blob": "AAE="}},
        ]),
        "{run:#}"
    );
}

/// Issue 37: a tool's progress reaches an MCP client that gave a `progressToken` as
/// `notifications/progress`, rising, `text` as `message`: a classic extension's
/// `tool_progress`, and an MCP server's own progress through the zot frame between.
/// (The tools pause 50 ms between: the official SDK handles a notification a moment
/// after reading it, and drops one that came in the same read as its call's result.)
#[test]
fn tool_progress_reaches_the_client_as_progress_notifications() {
    let mut p = Project::new("mcp-progress");
    let markers = p.path("markers");
    std::fs::create_dir_all(&markers).unwrap();
    p.ext("classic", &py_manifest("classic", &["--tools", "progress"]));
    p.ext(
        "py",
        &super::extensions::py_mcp("py", &markers, json!({"prefix": "py."})),
    );
    let run = p.drive(
        json!([
            {"op": "init"},
            {"op": "call_progress", "name": "progress", "args": {"count": 3, "gap_ms": 50}},
            {"op": "call_progress", "name": "py.progress", "args": {}},
            {"op": "call", "name": "progress", "args": {"count": 3}},
        ]),
        &[],
    );
    let s = &run["steps"];
    for step in [&s[1], &s[2]] {
        assert_eq!(first(&step["result"]), "progressed", "{run:#}");
        assert_eq!(
            step["progress"],
            json!([
                {"progress": 1, "total": 3, "message": "step 1"},
                {"progress": 2, "total": 3, "message": "step 2"},
                {"progress": 3, "total": 3, "message": "step 3"},
            ]),
            "{run:#}"
        );
    }
    assert_eq!(
        first(&s[3]),
        "progressed",
        "without a token: no progress, {run:#}"
    );
}

#[test]
fn structured_output_and_output_schema_pass_through() {
    let mut p = Project::new("mcp-structured");
    // The Rust test extension: its first tool carries `output_schema`, `structured`
    // answers with `structured_content`.
    p.ext("rs", &rs_manifest("rs", &["--tools", "typed,structured"]));
    let run = p.drive(
        json!([{"op": "tools"}, {"op": "call", "name": "structured", "args": {"q": "life"}}]),
        &[],
    );
    let s = &run["steps"];
    let tools = s[0]["tools"].as_array().unwrap();
    let typed = tools.iter().find(|t| t["name"] == "typed").unwrap();
    assert_eq!(typed["outputSchema"], json!({"type": "object"}), "{run:#}");
    assert_eq!(s[1]["isError"], false, "{run:#}");
    assert_eq!(
        s[1]["structuredContent"],
        json!({"answer": 42, "args": {"q": "life"}}),
        "{run:#}"
    );
    assert_eq!(first(&s[1]), "structured");
}

#[test]
fn a_timeout_is_a_tool_error_in_words() {
    let mut p = Project::new("mcp-timeout");
    p.ext("py", &py("py", &[]));
    let started = Instant::now();
    let run = p.drive(
        json!([{"op": "call", "name": "hang"}, {"op": "wait_log", "prefix": "cancelled "}]),
        &["--tool-timeout-ms", "500"],
    );
    let s = &run["steps"];
    assert_eq!(s[0]["isError"], true, "{run:#}");
    assert!(first(&s[0]).contains("timed out after 500 ms"), "{run:#}");
    // The extension was told to stop (its `tool_cancel` notice, as an MCP log message).
    assert_eq!(s[1]["logger"], "py", "{run:#}");
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "not the default timeout"
    );
}

#[test]
fn a_client_cancel_reaches_the_extension_as_tool_cancel() {
    let mut p = Project::new("mcp-cancel");
    p.ext("py", &py("py", &[]));
    let run = p.drive(
        json!([{"op": "call_abort", "name": "hang", "abort_on": "hanging ", "then": "cancelled "}]),
        &[],
    );
    let s = &run["steps"][0];
    assert!(
        s["error"]
            .as_str()
            .unwrap_or_default()
            .contains("the test gave up"),
        "{run:#}"
    );
    // The id the extension was called with is the one it was told to cancel.
    let id = s["started"]
        .as_str()
        .unwrap()
        .trim_start_matches("hanging ");
    assert_eq!(s["cancelled"], format!("cancelled {id}"), "{run:#}");
}

#[test]
fn an_exit_changes_the_tool_list() {
    let mut p = Project::new("mcp-exit");
    p.ext("py", &py("py", &["--tools", "echo,crash"]));
    p.ext("other", &py("other", &["--tools", "echo_other"]));
    // Restarts off: the list as the exit left it is what is looked at.
    let run = p.drive(
        json!([{"op": "call_then_list_changed", "name": "crash", "gone": "crash"}]),
        &["--no-restart"],
    );
    let s = &run["steps"][0];
    assert_eq!(s["result"]["isError"], true, "{run:#}");
    let said = first(&s["result"]);
    assert!(said.contains("exited"), "{said}");
    assert_eq!(s["tools"], json!(["echo_other"]), "{run:#}");
}

/// A crashed extension is started again: the client is told in a log message, and its
/// tools come back through `tools/list_changed` and answer.
#[test]
fn a_crashed_extension_comes_back_and_the_client_is_told() {
    let mut p = Project::new("mcp-restart");
    p.ext("py", &py("py", &["--tools", "echo,crash"]));
    let run = p.drive(
        json!([
            {"op": "call", "name": "crash"},
            {"op": "wait_log", "prefix": "extension py started again (restart 1"},
            {"op": "wait_tool", "name": "crash"},
            {"op": "call", "name": "echo", "args": {"back": true}},
        ]),
        &[],
    );
    let steps = &run["steps"];
    assert_eq!(steps[0]["isError"], true, "{run:#}");
    let said = steps[1]["data"].as_str().unwrap_or_default();
    assert!(
        said.ends_with("after: exited with status 3; its tools come back as it registers them"),
        "{run:#}"
    );
    assert_eq!(steps[2]["tools"], json!(["crash", "echo"]), "{run:#}");
    assert_eq!(steps[3]["isError"], false, "{run:#}");
}

#[test]
fn a_guard_refuses_an_mcp_call_and_rewrites_another() {
    let mut p = Project::new("mcp-guard");
    p.ext("guard", &py("guard", &["--mode", "guard"]));
    p.ext("tools", &py("tools", &["--tools", "bash,rewrite_me"]));
    let run = p.drive(
        json!([
            {"op": "call", "name": "bash", "args": {"command": "rm -rf /"}},
            {"op": "call", "name": "rewrite_me", "args": {"x": 1}},
            {"op": "wait_log", "prefix": "event {\"type\":\"event\",\"event\":\"tool_call\""},
        ]),
        &[],
    );
    let s = &run["steps"];
    assert_eq!(s[0]["isError"], true, "{run:#}");
    assert_eq!(first(&s[0]), r#"refused: matches danger pattern "rm -rf""#);
    let echoed: Value = serde_json::from_str(first(&s[1])).unwrap();
    assert_eq!(echoed, json!({"x": 1, "rewritten": true}), "{run:#}");
    // Subscribers are told of the call that ran, with its rewritten arguments; the
    // refused one was never told (nor run).
    let event = s[2]["data"].as_str().unwrap().trim_start_matches("event ");
    let event: Value = serde_json::from_str(event).unwrap();
    assert_eq!(event["tool_name"], "rewrite_me", "{run:#}");
    assert_eq!(event["tool_args"], json!({"x": 1, "rewritten": true}));
    let told_bash = run["logs"].as_array().unwrap().iter().any(|l| {
        l["data"]
            .as_str()
            .unwrap_or_default()
            .contains("\"tool_name\":\"bash\"")
    });
    assert!(!told_bash, "{run:#}");
}

#[test]
fn slash_commands_are_prompts() {
    let mut p = Project::new("mcp-prompts");
    p.ext("py", &py("py", &["--commands", "greet", "--tools", ""]));
    let run = p.drive(
        json!([
            {"op": "prompts"},
            {"op": "prompt", "name": "greet", "args": "hello world"},
            {"op": "prompt", "name": "nope"},
            // Issue 37: named arguments are never dropped: `name=value` words after `args`.
            {"op": "prompt", "name": "greet",
             "arguments": {"args": "hi", "name": "Ada", "mood": "very happy"}},
            {"op": "prompt", "name": "greet", "arguments": {"bad name": "x"}},
        ]),
        &[],
    );
    let s = &run["steps"];
    assert_eq!(names(&s[0], "prompts"), ["greet"], "{run:#}");
    assert_eq!(s[0]["prompts"][0]["description"], "py command greet");
    let message = &s[1]["messages"][0];
    assert_eq!(message["role"], "user", "{run:#}");
    assert_eq!(message["content"]["text"], "hello world", "{run:#}");
    assert_eq!(s[2]["code"], -32602, "{run:#}");
    assert_eq!(
        s[3]["messages"][0]["content"]["text"], "hi mood='very happy' name=Ada",
        "{run:#}"
    );
    assert_eq!(s[4]["code"], -32602, "{run:#}");
}

#[test]
fn closing_stdin_ends_zot_mcp_with_0_and_stops_the_extensions() {
    let mut p = Project::new("mcp-close");
    let pid_file = p.path("pid");
    p.ext("py", &py("py", &["--touch", pid_file.to_str().unwrap()]));
    let run = p.drive(
        json!([{"op": "call", "name": "echo", "args": {}}, {"op": "close"}]),
        &[],
    );
    let s = &run["steps"];
    assert_eq!(s[0]["isError"], false, "{run:#}");
    // Ended by itself within the client's 2 s grace, not by its SIGTERM.
    assert_eq!(s[1], json!({"code": 0, "signal": null}), "{run:#}");
    assert_shut_down(&p, &pid_file);
}

/// The extension `py` of `p`, whose pid is in `pid_file`, is gone, stopped by the host
/// (`shutdown`: its log says so), not left to notice its closed stdin.
pub(super) fn assert_shut_down(p: &Project, pid_file: &Path) {
    let pid: u32 = std::fs::read_to_string(pid_file).unwrap().parse().unwrap();
    assert!(
        wait_process_gone(pid, Duration::from_secs(10)),
        "the extension {pid} still runs"
    );
    let log = std::fs::read_to_string(p.path("home/logs/ext-py.log")).unwrap();
    assert!(log.contains("acknowledged shutdown"), "{log}");
}

/// The stateless revision (2026-07-28), which the TypeScript SDK 1.x does not speak: raw
/// JSON-RPC lines with the per-request `_meta` it asks for instead of `initialize`. And a
/// line longer than `--max-frame-bytes` is dropped whole; the next is answered.
#[test]
fn the_stateless_revision_discovers_and_calls_without_initialize() {
    let mut p = Project::new("mcp-stateless");
    p.ext("py", &py("py", &["--tools", "echo"]));
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"},
    });
    let requests = [
        json!({"jsonrpc": "2.0", "id": 1, "method": "server/discover",
               "params": {"_meta": meta}}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
               "params": {"name": "echo", "arguments": {"a": 1}, "_meta": meta}}),
    ];
    let mut mcp = RawMcp::start(&p, &["--max-frame-bytes", "4096"]);
    // A discover, answered before the next line is read were it read at all.
    let mut padded = meta.clone();
    padded["pad"] = json!("x".repeat(8192));
    let oversize = json!({"jsonrpc": "2.0", "id": 0, "method": "server/discover",
                          "params": {"_meta": padded}});
    mcp.send(&oversize);
    let mut answers = std::collections::HashMap::new();
    for request in &requests {
        mcp.send(request);
        while !answers.contains_key(&request["id"].to_string()) {
            let message = mcp.next();
            if let Some(id) = message.get("id") {
                answers.insert(id.to_string(), message.clone());
            }
        }
    }
    let discovered = &answers["1"]["result"];
    let versions = discovered["supportedVersions"].as_array().unwrap();
    for version in ["2025-11-25", "2026-07-28"] {
        assert!(versions.contains(&json!(version)), "{discovered}");
    }
    assert_eq!(discovered["capabilities"]["tools"]["listChanged"], true);
    let called = &answers["2"]["result"];
    assert_eq!(called["content"][0]["text"], r#"{"a":1}"#, "{called}");
    assert!(
        !answers.contains_key("0"),
        "the oversize line was read: {answers:?}"
    );
    assert_eq!(
        mcp.close().code(),
        Some(0),
        "zot mcp did not end at end of input"
    );
}

/// Tool names MCP does not allow (a space, 129 characters, a letter outside ASCII) are
/// not served: not listed, a call to one is an unknown tool (`-32602`), and the
/// extension's log says so, once per name however often the client lists.
#[test]
fn tool_names_mcp_does_not_allow_are_not_served() {
    let mut p = Project::new("mcp-names");
    let script = r#"
import json, sys
def send(f):
    sys.stdout.write(json.dumps(f) + "\n")
    sys.stdout.flush()
send({"type": "hello", "name": "names", "version": "1.0.0"})
for line in sys.stdin:
    f = json.loads(line)
    if f.get("type") == "hello_ack":
        for name in ["good.name-1_x", "bad name", "a" * 129, "caf\u00e9"]:
            send({"type": "register_tool", "name": name, "description": "d",
                  "schema": {"type": "object"}})
        send({"type": "ready"})
    elif f.get("type") == "tool_call":
        send({"type": "tool_result", "id": f["id"],
              "content": [{"type": "text", "text": "ran " + f["name"]}]})
    elif f.get("type") == "shutdown":
        break
"#;
    p.ext("names", &inline_py("names", script));
    let mut mcp = RawMcp::start(&p, &[]);
    mcp.initialize();
    let answer = |mcp: &mut RawMcp, id: u64, method: &str, params: Value| {
        mcp.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        loop {
            let message = mcp.next();
            if message["id"] == id {
                return message;
            }
        }
    };
    for id in [2, 3] {
        let listed = answer(&mut mcp, id, "tools/list", json!({}));
        assert_eq!(
            names(&listed["result"], "tools"),
            ["good.name-1_x"],
            "{listed}"
        );
    }
    for (id, name) in [(4, "bad name"), (5, "caf\u{e9}")] {
        let refused = answer(
            &mut mcp,
            id,
            "tools/call",
            json!({"name": name, "arguments": {}}),
        );
        assert_eq!(refused["error"]["code"], -32602, "{refused}");
        assert_eq!(refused["error"]["message"], format!("Unknown tool: {name}"));
    }
    let called = answer(&mut mcp, 6, "tools/call", json!({"name": "good.name-1_x"}));
    assert_eq!(first(&called["result"]), "ran good.name-1_x", "{called}");
    let log = std::fs::read_to_string(p.path("home").join("logs/ext-names.log")).unwrap();
    for name in ["bad name", "caf\u{e9}", &"a".repeat(129)] {
        let said = format!("zot mcp does not serve tool {name:?}");
        assert_eq!(log.matches(&said).count(), 1, "{said} in {log}");
    }
    assert!(
        log.contains("1 to 128 characters among A-Z a-z 0-9 _ - ."),
        "{log}"
    );
}

/// `zot mcp --only` over stdio, driven by hand: JSON-RPC lines written to its stdin, and
/// each line it writes parsed (its stdout carries only JSON-RPC).
struct RawMcp {
    child: Child,
    stdin: Option<ChildStdin>,
    said: mpsc::Receiver<Value>,
}

impl RawMcp {
    /// Starts it with `p`'s extensions, plus `flags`.
    fn start(p: &Project, flags: &[&str]) -> RawMcp {
        let argv = p.zot_mcp(flags);
        let mut child = Command::new(&argv[0])
            .args(&argv[1..])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let (tx, said) = mpsc::channel();
        std::thread::spawn(move || {
            for line in stdout.lines().map_while(Result::ok) {
                let value: Value = serde_json::from_str(&line)
                    .unwrap_or_else(|e| panic!("stdout carries only JSON-RPC ({e}): {line}"));
                if tx.send(value).is_err() {
                    return;
                }
            }
        });
        RawMcp {
            stdin: child.stdin.take(),
            child,
            said,
        }
    }

    /// Writes one message.
    fn send(&mut self, message: &Value) {
        let stdin = self.stdin.as_mut().expect("stdin is open");
        writeln!(stdin, "{message}").unwrap();
    }

    /// The next message it writes, within [`REQUEST_TIMEOUT`].
    fn next(&self) -> Value {
        self.said
            .recv_timeout(REQUEST_TIMEOUT)
            .unwrap_or_else(|e| panic!("zot mcp said nothing more: {e}"))
    }

    /// The handshake: `initialize`, its answer, `notifications/initialized`.
    fn initialize(&mut self) {
        self.send(&initialize());
        while self.next()["id"] != 1 {}
        self.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    }

    /// Closes its stdin; how it ended, within 10 s.
    fn close(mut self) -> std::process::ExitStatus {
        drop(self.stdin.take());
        exit_within(&mut self.child, Duration::from_secs(10)).expect("zot mcp ends")
    }
}

impl Drop for RawMcp {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// 256 calls at once, in all: one more is answered at once with an error in words, not
/// queued.
#[test]
fn past_256_calls_at_once_one_more_is_refused_in_words() {
    let mut p = Project::new("mcp-calls");
    p.ext("py", &py("py", &["--tools", "hang", "--commands", ""]));
    let mut mcp = RawMcp::start(&p, &["--tool-timeout-ms", "600000"]);
    mcp.initialize();
    for id in 2..259 {
        mcp.send(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                         "params": {"name": "hang", "arguments": {}}}));
    }
    let (mut hanging, mut answers) = (0, Vec::new());
    while hanging < 256 || answers.is_empty() {
        let message = mcp.next();
        if message.get("id").is_some() {
            answers.push(message);
        } else if message["params"]["data"]
            .as_str()
            .is_some_and(|d| d.starts_with("hanging "))
        {
            hanging += 1;
        }
    }
    assert_eq!(answers.len(), 1, "{answers:?}");
    let refused = &answers[0]["result"];
    assert_eq!(refused["isError"], true, "{refused}");
    assert_eq!(
        first(refused),
        "256 calls are running already: try again later"
    );
}

/// A project's own extension the user has not trusted is neither listed nor called by
/// `zot mcp`, while a global one's tools are; once trusted, it is served too.
#[test]
fn an_untrusted_project_extension_is_neither_listed_nor_called() {
    let p = Project::new("mcp-untrusted");
    let (home, cwd) = (p.path("home"), p.path("cwd"));
    let started = p.path("proj-started");
    write_manifest(
        &home.join("extensions/glob"),
        &py("glob", &["--tools", "echo_glob", "--commands", ""]),
    );
    write_manifest(
        &cwd.join(".zot/extensions/proj"),
        &py(
            "proj",
            &[
                "--tools",
                "echo_proj",
                "--commands",
                "",
                "--touch",
                started.to_str().unwrap(),
            ],
        ),
    );
    let steps = json!([
        {"op": "tools"},
        {"op": "call", "name": "echo_proj", "args": {"p": 1}},
        {"op": "call", "name": "echo_glob", "args": {"g": 1}},
    ]);
    let run = p.run_client(steps.clone(), p.zot_mcp_discovering(&[]));
    let s = &run["steps"];
    assert_eq!(names(&s[0], "tools"), ["echo_glob"], "{run:#}");
    let refused = s[1]["error"].as_str().unwrap_or_default();
    assert!(refused.contains("Unknown tool: echo_proj"), "{run:#}");
    assert_eq!(first(&s[2]), r#"{"g":1}"#, "{run:#}");
    assert!(!started.exists(), "an untrusted extension was started");

    assert_ok(&zot(&home, &cwd, &["trust", "--yes"]));
    let run = p.run_client(steps, p.zot_mcp_discovering(&[]));
    let s = &run["steps"];
    let mut listed = names(&s[0], "tools");
    listed.sort();
    assert_eq!(listed, ["echo_glob", "echo_proj"], "{run:#}");
    assert_eq!(first(&s[1]), r#"{"p":1}"#, "{run:#}");
}

/// An `initialize` request (id 1) of a client written by hand.
pub(super) fn initialize() -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "by-hand", "version": "1"}}})
}
