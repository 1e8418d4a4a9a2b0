//! Tool-call latency: one native echo extension (the `scenario` guest's `echo` tool,
//! `--plain`) reached five ways (the library from a task and from `block_on`), `zot mcp`
//! again with the whole scenario (an interceptor and a subscriber), the same guest as
//! three kinds of component and through the published Go manager; unpinned and pinned to
//! one CPU. Then the todo example.

use crate::affinity;
use crate::event_loop::EventLoopPiped;
use crate::go_manager::GoManager;
use crate::interleave::{self, Row};
use crate::library::{Caller, InHost, OnCurrentThread, Op};
use crate::lines::{contains, sidecar, Lines, Piped};
use crate::measure::{table, target, Line};
use crate::{Bench, Placement};
use serde_json::{json, Value};
use std::path::Path;
use std::process::{Command, Stdio};
use tokio::runtime::Handle;
use zot_host::manage::identity::Identity;
use zot_host::ZotHome;
use zot_test_guests::{COMMAND, COMMAND_NATIVE, COMMAND_P1, REACTOR};

/// The tool-call table once per placement the bench was asked for (unpinned, then
/// pinned to one CPU, by default), each with a runtime and processes of its own.
pub fn tool_calls(b: &Bench) {
    let all = affinity::allowed();
    let driver = b.go.as_ref().map(|go| {
        let driver = go.build(&b.dir);
        println!(
            "published Go manager: github.com/patriceckhart/zot {} (internal/agent/extensions), \
             built with {}",
            go.commit(),
            go.go.display()
        );
        driver
    });
    if driver.is_none() {
        println!(
            "published Go manager: not measured (--go-zot DIR, a checkout of \
             github.com/patriceckhart/zot, adds it)"
        );
    }
    for &placement in &b.placements {
        let cpus = match placement {
            Placement::Unpinned if all.len() < 2 => {
                println!("\nunpinned: not measured, this process may use one CPU only");
                continue;
            }
            Placement::Unpinned => all.clone(),
            Placement::Pinned => all[..1].to_vec(),
        };
        affinity::set(&cpus);
        let rt = tokio::runtime::Runtime::new().unwrap();
        let title = match placement {
            Placement::Unpinned => format!("unpinned (CPUs {})", affinity::named(&cpus)),
            Placement::Pinned => format!("pinned to CPU {}", affinity::named(&cpus)),
        };
        table_on(b, rt.handle(), (placement, &title), driver.as_deref());
        drop(rt);
        affinity::set(&all);
    }
}

/// One tool-call table, every process and runtime thread started from this thread (and
/// so on its CPUs), then its targets, as issue 7/7 set them: pinned, against the floors
/// (the Go manager's figures are in the table); unpinned, where the kernel places the
/// floors too (the pipe floor measured 7.5 µs with host and extension on one CPU, 40 µs
/// apart), against the Go manager in the same run.
fn table_on(b: &Bench, rt: &Handle, (at, placement): (Placement, &str), go: Option<&Path>) {
    // Plain: no subscription, no interceptor, so every row does the same work.
    let native = b.ext(
        "echo",
        json!({"name": "echo", "exec": COMMAND_NATIVE, "args": ["--plain"]}),
    );
    // The whole scenario: it intercepts `tool_call` and subscribes to its event, which
    // `zot mcp` asks and sends before each call, as an agent does.
    let agent = b.ext("agent", json!({"name": "agent", "exec": COMMAND_NATIVE}));
    let library = |exts: &[_]| InHost::new(rt, &b.home(), exts, ECHO);
    let component = |name: &str, wasm: &str| -> Box<dyn Row> {
        Box::new(library(&[b.ext(name, json!({"name": name, "wasm": wasm}))]))
    };
    let mut rows: Vec<Box<dyn Row>> = vec![
        Box::new(Piped::new(
            extension(Command::new(COMMAND_NATIVE).arg("--plain")),
            tool_call,
            tool_result,
        )),
        Box::new(library(std::slice::from_ref(&native))),
        Box::new(library(std::slice::from_ref(&native)).called_from(Caller::BlockOn)),
        Box::new(OnCurrentThread::new(
            &b.home(),
            std::slice::from_ref(&native),
            ECHO,
        )),
        Box::new(EventLoopPiped::new(
            rt,
            COMMAND_NATIVE,
            &["--plain"],
            tool_call,
            tool_result,
        )),
        Box::new(Piped::new(
            extension(
                Command::new(std::env::current_exe().unwrap())
                    .arg("--relay")
                    .arg(COMMAND_NATIVE)
                    .arg("--plain"),
            ),
            tool_call,
            tool_result,
        )),
        Box::new(Piped::new(
            sidecar(&b.home(), std::slice::from_ref(&native)),
            sidecar_call,
            sidecar_answer,
        )),
        Box::new(Piped::new(mcp(b, &native), mcp_call, mcp_answer)),
        Box::new(Piped::new(mcp(b, &agent), mcp_call, mcp_answer)),
        component("command", COMMAND),
        component("reactor", REACTOR),
        component("preview1", COMMAND_P1),
    ];
    if let Some(driver) = go {
        rows.push(Box::new(GoManager::new(
            driver,
            &native,
            &b.dir.join("go-home"),
        )));
    }
    let plan = b.plan();
    let f = interleave::medians(&mut rows, plan);
    drop(rows);
    let mut lines = vec![
        Line::new("pipe floor (baseline)", f[0]),
        Line::new("zot-host library, from a task", f[1]).against(4),
        Line::new("zot-host library, from block_on", f[2]).against(1),
        Line::new("library, current-thread block_on", f[3]).against(1),
        Line::new("pipe floor, tokio event loop", f[4]),
        Line::new("two-hop floor (relay)", f[5]),
        Line::new("zot host sidecar", f[6]).against(5),
        Line::new("zot mcp", f[7]).against(6),
        Line::new("zot mcp, 1 interceptor + event", f[8]).against(7),
        Line::new("library: wasm command component", f[9]),
        Line::new("library: wasm reactor component", f[10]),
        Line::new("library: preview-1 module", f[11]),
    ];
    if go.is_some() {
        lines.push(Line::new("published Go manager (zot, Go)", f[12]));
    }
    table(
        &format!(
            "tool-call round trip, {placement}; the native echo extension unless named; \
             median of {} interleaved rounds of {} calls",
            plan.rounds, plan.calls
        ),
        &lines,
    );
    println!("\ntargets ({placement})");
    let floor = f[0];
    if at == Placement::Pinned {
        target(
            "library p50 ≤ 1.5× pipe floor p50",
            f[1].p50 / floor.p50,
            1.5,
        );
        target("library p99 ≤ 2× pipe floor p99", f[1].p99 / floor.p99, 2.0);
        target(
            "block_on p50 ≤ 1.5× pipe floor p50",
            f[2].p50 / floor.p50,
            1.5,
        );
        target(
            "current-thread block_on p50 ≤ 1.5× floor p50",
            f[3].p50 / floor.p50,
            1.5,
        );
        target(
            "sidecar p50 ≤ 2× two-hop floor p50",
            f[6].p50 / f[5].p50,
            2.0,
        );
        target("reactor p50 ≤ pipe floor p50", f[10].p50 / floor.p50, 1.0);
        target("mcp p50 ≤ 2× sidecar p50", f[7].p50 / f[6].p50, 2.0);
    }
    if go.is_some() && at == Placement::Unpinned {
        let go = f[12];
        let callers = [
            ("library", f[1]),
            ("block_on", f[2]),
            ("current-thread", f[3]),
        ];
        for (caller, at) in callers {
            target(
                &format!("{caller} p50 ≤ 0.8× Go manager p50"),
                at.p50 / go.p50,
                0.8,
            );
            target(
                &format!("{caller} p99 ≤ 0.8× Go manager p99"),
                at.p99 / go.p99,
                0.8,
            );
        }
    }
}

/// The `echo` tool's call, as every library row of the table makes it.
const ECHO: Op = Op::Call {
    tool: "echo",
    args: |i| json!({"i": i}),
    expect: "\"i\":",
};

/// `examples/todo` (the `zot-ext` SDK) natively and as a component: its `todo` tool listing
/// a three-item list, read from its data dir on every call.
pub fn todo(b: &Bench) {
    let todo = zot_test_guests::example("todo");
    let items = json!([{"text": "one", "done": false}, {"text": "two", "done": true},
                       {"text": "three", "done": false}]);
    let row = |dir: &str, manifest: Value| -> Box<dyn Row> {
        let dir = b.ext(dir, manifest);
        // Its data dir is its identity's (its folder), as the host gives it.
        let home = ZotHome::new(b.home());
        let data = home.data_dir(&Identity::of(&dir, &home));
        std::fs::create_dir_all(&data).unwrap();
        std::fs::write(data.join("todos.json"), items.to_string()).unwrap();
        let list = Op::Call {
            tool: "todo",
            args: |_| json!({"action": "list"}),
            expect: "three",
        };
        Box::new(InHost::new(b.rt.handle(), &b.home(), &[dir], list))
    };
    let mut rows = vec![
        row("todo-native", json!({"name": "todo", "exec": todo.native})),
        row("todo-wasm", json!({"name": "todo", "wasm": todo.wasm})),
    ];
    let f = interleave::medians(&mut rows, b.plan());
    table(
        "examples/todo (zot-ext SDK), its `list` action, through the library",
        &[
            Line::new("native stdio (baseline)", f[0]),
            Line::new("wasm command component", f[1]),
        ],
    );
}

/// The extension `command` started with no host, once it said `ready`.
fn extension(command: &mut Command) -> Lines {
    let mut lines = Lines::spawn(command.stderr(Stdio::null()));
    lines.until(b"\"type\":\"ready\"");
    lines
}

fn tool_call(id: &str, i: u64) -> String {
    let call = json!({"type": "tool_call", "id": id, "name": "echo", "args": {"i": i}});
    format!("{call}\n")
}

/// A `tool_result` that is no error, checked by bytes.
fn tool_result(line: &[u8]) {
    assert!(
        contains(line, b"\"type\":\"tool_result\"") && !contains(line, b"\"is_error\":true"),
        "{}",
        String::from_utf8_lossy(line)
    );
}

fn sidecar_call(id: &str, i: u64) -> String {
    let call = json!({"id": id, "type": "call_tool", "name": "echo", "args": {"i": i}});
    format!("{call}\n")
}

fn sidecar_answer(line: &[u8]) {
    let v: Value = serde_json::from_slice(line).unwrap();
    assert!(
        v["success"] == true && v["data"]["is_error"] == false,
        "{v}"
    );
}

/// `zot mcp` serving the extension at `ext`, once initialized.
fn mcp(b: &Bench, ext: &Path) -> Lines {
    let mut mcp = Lines::spawn(
        Command::new(env!("CARGO_BIN_EXE_zot"))
            .args(["mcp", "--only", "--zot-home"])
            .arg(b.home())
            .arg("--ext")
            .arg(ext),
    );
    let params = json!({"protocolVersion": "2025-11-25", "capabilities": {},
                        "clientInfo": {"name": "zot-bench", "version": "0"}});
    let init = json!({"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": params});
    mcp.send(format!("{init}\n").as_bytes());
    mcp.until(b"\"id\":\"init\"");
    mcp.send(b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n");
    mcp
}

fn mcp_call(id: &str, i: u64) -> String {
    let params = json!({"name": "echo", "arguments": {"i": i}});
    let call = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params});
    format!("{call}\n")
}

fn mcp_answer(line: &[u8]) {
    let v: Value = serde_json::from_slice(line).unwrap();
    assert!(
        v.get("error").is_none() && v["result"]["isError"] != true,
        "{v}"
    );
}
