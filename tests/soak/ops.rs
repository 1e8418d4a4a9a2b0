//! The steady load: what the clients' workers do, in turn, and what each answer must hold.
//! The library and the sidecar do every kind; the MCP client makes the calls (each of
//! which `zot mcp` intercepts and sends as an event first) and asks for a block.

use serde_json::{json, Value};

/// A 4 KiB log line (the most of an MCP server's log message the host writes): what
/// fills `mcp-py`'s log, to its cap and past it.
fn log_line(marker: &str) -> String {
    format!("{marker} {}", "l".repeat(4000))
}

/// One thing a worker does.
pub enum Op {
    /// `call_tool`: no error, and the first text block holds `expect`.
    Call {
        tool: &'static str,
        args: Value,
        expect: String,
    },
    /// `emit` of `turn_start`: delivered to at least one subscriber.
    Emit { step: u64 },
    /// `intercept` of a `tool_call` of `bash` running `rm -rf /`: blocked.
    Block,
    /// `invoke_command`: the response, as JSON, holds `expect`.
    Command {
        name: &'static str,
        args: String,
        expect: String,
    },
    /// `/pick` opens `picker`'s panel; a key redraws it, `q` closes it.
    Panel,
}

/// The `i`th op of a worker whose calls carry `marker` (unique per call).
pub fn steady(i: u64, marker: &str) -> Op {
    let echo = |tool| Op::Call {
        tool,
        args: json!({"soak": marker}),
        expect: marker.to_string(),
    };
    let text = |tool| Op::Call {
        tool,
        args: json!({"text": marker}),
        expect: marker.to_string(),
    };
    let ops = [
        "echo",
        "r.echo",
        "c.echo",
        "p.echo",
        "q.echo",
        "d.echo",
        "echo_py",
        "echo_crasher",
        "echo_guard",
        "echo_node",
        "echo_rs",
        "echo_rs2",
        "echo_cpy",
        "mpy.echo",
        "mw.echo",
        "forecast",
        "sleep_py",
        "todo",
        "mpy.log",
        "emit",
        "block",
        "guest-cmd",
        "py-cmd",
        "node-echo",
        "rs-cmd",
        "guard",
        "panel",
        "mpy.log",
        "emit",
        "mpy.log",
    ];
    let command = |name, args: &str, expect: &str| Op::Command {
        name,
        args: args.to_string(),
        expect: expect.to_string(),
    };
    match ops[(i % ops.len() as u64) as usize] {
        "mpy.echo" => text("mpy.echo"),
        "mw.echo" => text("mw.echo"),
        "forecast" => Op::Call {
            tool: "forecast",
            args: json!({"city": marker}),
            expect: marker.to_string(),
        },
        "sleep_py" => Op::Call {
            tool: "sleep_py",
            args: json!({"ms": 50}),
            expect: "slept 50".into(),
        },
        "todo" => Op::Call {
            tool: "todo",
            args: json!({"action": "list"}),
            expect: String::new(),
        },
        "mpy.log" => Op::Call {
            tool: "mpy.log",
            args: json!({"message": log_line(marker)}),
            expect: "logged".into(),
        },
        "emit" => Op::Emit { step: i },
        "block" => Op::Block,
        "guest-cmd" => command("guest-cmd", marker, marker),
        "py-cmd" => command("py-cmd", marker, marker),
        "node-echo" => command("node-echo", marker, marker),
        "rs-cmd" => command("rs-cmd", &format!("display {marker}"), marker),
        "guard" => command("guard", "", "events audited"),
        "panel" => Op::Panel,
        tool => echo(tool),
    }
}

/// The `i`th call of an MCP worker: a steady op that is a call, or (every 16th) a call
/// the `guard-py` interceptor refuses (`expect_block`).
pub fn mcp(i: u64, marker: &str) -> (&'static str, Value, String, bool) {
    if i % 16 == 15 {
        return (
            "echo",
            json!({"soak": "guard:refuse"}),
            "refused".into(),
            true,
        );
    }
    let mut n = i;
    loop {
        if let Op::Call { tool, args, expect } = steady(n, marker) {
            return (tool, args, expect, false);
        }
        n += 1;
    }
}
