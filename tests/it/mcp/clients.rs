//! `zot mcp` against real MCP clients other than the SDK 1.x that tests/it/mcp/server.rs drives,
//! each pinned by `tests/mcp-client/package-lock.json` and installed with it (one
//! `npm ci`, [`client`]):
//!
//! - the MCP Inspector's CLI, `@modelcontextprotocol/inspector-cli` 1.0.3: the code
//!   `npx @modelcontextprotocol/inspector@1.0.3 --cli` runs (that package bundles the
//!   same `cli/build`), without the web UI whose package asks for Node >= 22.7.5; the
//!   CLI itself runs on Node 20;
//! - the 2.x TypeScript client, `@modelcontextprotocol/client` 2.4.0, through
//!   `tests/mcp-client/drive-v2.mjs` (which documents its steps).

use super::server::{client, first, names, py, run_client_command, Project};
use crate::common::*;
use serde_json::{json, Value};
use std::process::{Command, Output};

/// Runs the Inspector's CLI against `zot mcp --only` with the extensions of `p`:
/// `inspector-cli --cli <zot mcp …> <method_args>`.
fn inspector(p: &Project, method_args: &[&str]) -> Output {
    let cli = client().join("node_modules/@modelcontextprotocol/inspector-cli/build/cli.js");
    let mut node = Command::new("node");
    node.arg(cli)
        .arg("--cli")
        .args(p.zot_mcp(&[]))
        .args(method_args)
        // The CLI names itself from `../package.json` if that exists *relative to its
        // working directory*, else from `../../package.json` relative to its own file,
        // which exists only in the bundling `inspector` package: run it where the
        // first exists.
        .current_dir(client().join("node_modules"));
    run_client_command(node)
}

/// What the Inspector printed on stdout: the method's result as JSON. Asserts it ended
/// with 0.
fn inspected(out: &Output) -> Value {
    assert!(out.status.success(), "the inspector failed:\n{}", text(out));
    serde_json::from_str(stdout(out).trim())
        .unwrap_or_else(|e| panic!("the inspector printed no JSON ({e}):\n{}", text(out)))
}

/// A project serving the Python test extension's tools `echo_py` and `fail_py`.
fn python_project(tag: &str) -> Project {
    let mut p = Project::new(tag);
    p.ext(
        "py",
        &py_manifest("py", &["--tools", "echo_py,fail_py", "--commands", ""]),
    );
    p
}

#[test]
fn the_inspector_cli_lists_and_calls_the_tools_of_a_native_extension() {
    let p = python_project("mcp-inspector");
    let listed = inspected(&inspector(&p, &["--method", "tools/list"]));
    assert_eq!(
        names(&listed, "tools"),
        ["echo_py", "fail_py"],
        "{listed:#}"
    );
    // `k=v` pairs: a value that parses as JSON is that JSON, else a string.
    let called = inspected(&inspector(
        &p,
        &[
            "--method",
            "tools/call",
            "--tool-name",
            "echo_py",
            "--tool-arg",
            "word=hello",
            "n=3",
        ],
    ));
    assert_eq!(called["isError"], false, "{called:#}");
    let echoed: Value = serde_json::from_str(first(&called)).unwrap();
    assert_eq!(echoed, json!({"word": "hello", "n": 3}), "{called:#}");
}

#[test]
fn the_inspector_cli_gets_a_tool_error_as_an_error_result() {
    let p = python_project("mcp-inspector-error");
    let failed = inspected(&inspector(
        &p,
        &["--method", "tools/call", "--tool-name", "fail_py"],
    ));
    assert_eq!(
        (first(&failed), &failed["isError"]),
        ("failed on purpose", &json!(true)),
        "{failed:#}"
    );
    // An unknown tool is a protocol error, which the CLI reports and exits 1 for.
    let unknown = inspector(&p, &["--method", "tools/call", "--tool-name", "nope"]);
    assert_eq!(unknown.status.code(), Some(1), "{}", text(&unknown));
    assert!(
        stderr(&unknown).contains("Unknown tool: nope"),
        "{}",
        text(&unknown)
    );
}

/// The revisions `zot mcp` speaks, as docs/mcp.md lists them.
const REVISIONS: [&str; 5] = [
    "2024-11-05",
    "2025-03-26",
    "2025-06-18",
    "2025-11-25",
    "2026-07-28",
];

/// Runs drive-v2.mjs in version negotiation `mode` with `steps` against `zot mcp --only`
/// with the extensions of `p`; returns what it printed. Asserts the client saw no error
/// and negotiated a revision docs/mcp.md lists.
fn drive_v2(p: &Project, mode: &str, steps: Value) -> Value {
    let mut node = Command::new("node");
    node.arg(client().join("drive-v2.mjs"))
        .arg(mode)
        .arg(steps.to_string())
        .args(p.zot_mcp(&[]))
        .current_dir(p.path("cwd"));
    let out = run_client_command(node);
    let run: Value = serde_json::from_str(stdout(&out).trim())
        .unwrap_or_else(|e| panic!("drive-v2.mjs printed no JSON ({e}):\n{}", text(&out)));
    assert_eq!(run["errors"], json!([]), "the client saw errors: {run:#}");
    let revision = run["protocolVersion"].as_str().unwrap_or_default();
    assert!(REVISIONS.contains(&revision), "{run:#}");
    println!("@modelcontextprotocol/client 2.4.0 ({mode}) negotiated {revision}");
    run
}

/// A project serving the Python extension's tools and the sandboxed reactor component's
/// (`echo`, `fs_read`, …).
fn native_and_sandboxed_project(tag: &str) -> Project {
    let mut p = python_project(tag);
    p.ext(
        "guest",
        &json!({"name": "guest", "version": "0.1.0", "wasm": zot_test_guests::REACTOR}),
    );
    p
}

/// The steps both negotiation modes run, and what they must answer.
fn list_and_call(p: &Project, mode: &str) -> Value {
    let run = drive_v2(
        p,
        mode,
        json!([
            {"op": "tools"},
            {"op": "call", "name": "echo_py", "args": {"x": 1}},
            {"op": "call", "name": "echo", "args": {"y": "sandboxed"}},
            {"op": "call", "name": "fail_py"},
        ]),
    );
    let s = &run["steps"];
    let tools = names(&s[0], "tools");
    for tool in ["echo_py", "fail_py", "echo", "fs_read"] {
        assert!(tools.contains(&tool.to_string()), "{tool} in {run:#}");
    }
    assert_eq!(
        (first(&s[1]), &s[1]["isError"]),
        (r#"{"x":1}"#, &json!(false)),
        "{run:#}"
    );
    assert_eq!(s[2]["isError"], false, "{run:#}");
    assert!(first(&s[2]).contains("sandboxed"), "{run:#}");
    assert_eq!(
        (first(&s[3]), &s[3]["isError"]),
        ("failed on purpose", &json!(true)),
        "{run:#}"
    );
    run
}

/// Lists and calls in negotiation `mode`: the client settles on `era` and `revision`.
fn negotiates(tag: &str, mode: &str, era: &str, revision: &str) {
    let p = native_and_sandboxed_project(tag);
    let run = list_and_call(&p, mode);
    assert_eq!(run["era"], era, "{run:#}");
    assert_eq!(run["protocolVersion"], revision, "{run:#}");
    assert_eq!(run["server"]["name"], "zot", "{run:#}");
}

#[test]
fn the_2x_client_initializes_lists_and_calls_a_native_and_a_sandboxed_extension() {
    negotiates("mcp-client-v2", "legacy", "legacy", "2025-11-25");
}

/// In `auto` mode the client probes with `server/discover` (on a sibling `zot mcp` it
/// then stops) and, offered 2026-07-28, speaks the stateless revision: no `initialize`,
/// each request carrying its revision in `_meta`.
#[test]
fn the_2x_client_in_auto_mode_speaks_the_stateless_revision() {
    negotiates("mcp-client-v2-auto", "auto", "modern", "2026-07-28");
}

/// Under 2026-07-28 list changes travel on a `subscriptions/listen` stream: an
/// extension's exit reaches the 2.x client there.
#[test]
fn the_2x_client_hears_of_a_list_change_on_its_listen_stream() {
    let mut p = Project::new("mcp-client-v2-listen");
    p.ext("py", &py("py", &["--tools", "echo,crash"]));
    let run = drive_v2(
        &p,
        "auto",
        json!([{"op": "listen_then_call", "name": "crash"}]),
    );
    assert_eq!(run["protocolVersion"], "2026-07-28", "{run:#}");
    let s = &run["steps"][0];
    assert_eq!(s["honored"]["toolsListChanged"], true, "{run:#}");
    assert_eq!(s["result"]["isError"], true, "{run:#}");
    assert_eq!(s["listChanged"], true, "{run:#}");
}
