//! Faults: crashes, hangs, garbage, huge lines, floods, stubborn processes, and many
//! concurrent calls. Tests here run one at a time (`serial()`): several are heavy and
//! several measure time.

use crate::common::*;
use serde_json::{json, Value};
use std::time::{Duration, Instant};

#[test]
fn crash_mid_tool_call_fails_fast_naming_the_exit() {
    let _serial = serial();
    let mut b = HostBuilder::new();
    b.explicit("crashy", &py_manifest("crashy", &[]));
    let host = b.start();
    host.ready();
    let t = Instant::now();
    let err = host.fails("call_tool", json!({"name": "crash", "args": {}}));
    let took = t.elapsed();
    println!("crash mid call failed after {took:?}: {err}");
    assert!(
        err.to_lowercase().contains("exit"),
        "the error mentions the exit: {err}"
    );
    assert!(
        err.contains("crashy"),
        "the error names the extension: {err}"
    );
    assert!(
        took < Duration::from_secs(5),
        "failed after {took:?}, not at once"
    );
    host.shutdown();
}

#[test]
fn crash_fails_every_pending_call_at_once() {
    let _serial = serial();
    let mut b = HostBuilder::new();
    b.explicit("crashy", &py_manifest("crashy", &[]));
    let host = b.start();
    host.ready();
    let hang = host.send("call_tool", json!({"name": "hang", "args": {}}));
    host.wait_notify("crashy", "hanging ");
    let t = Instant::now();
    let crash = host.send("call_tool", json!({"name": "crash", "args": {}}));
    for id in [&crash, &hang] {
        let r = host.wait_response(id, Duration::from_secs(10));
        assert_eq!(r["success"], false, "{r}");
        assert!(r["error"].as_str().unwrap().contains("crashy"), "{r}");
    }
    let took = t.elapsed();
    println!("both pending calls failed {took:?} after the crash");
    assert!(took < Duration::from_secs(5), "took {took:?}");
    host.shutdown();
}

#[test]
fn crashed_extension_loses_its_tools_and_the_others_go_on() {
    let _serial = serial();
    let mut b = HostBuilder::new();
    b.explicit("crashy", &py_manifest("crashy", &[]));
    b.explicit(
        "steady",
        &node_manifest("steady", &["--tools", "steady_echo"]),
    );
    let host = b.start();
    host.ready();
    host.fails("call_tool", json!({"name": "crash", "args": {}}));
    let ev = host.wait_event("extension_exited", EVENT_TIMEOUT, |v| {
        v["type"] == "extension_exited"
    });
    println!("extension_exited: {ev}");
    assert_eq!(ev["extension"], "crashy", "{ev}");
    assert_eq!(ev["code"], 3, "{ev}");
    assert!(ev["signal"].is_null(), "{ev}");
    assert_eq!(ev["stopped"], false, "it exited by itself: {ev}");
    assert!(
        ev["reason"].as_str().is_some_and(|r| r.contains('3')),
        "{ev}"
    );
    let e = host.entry("crashy");
    assert_eq!(e["state"], "exited", "{e}");
    assert!(str_list(&e["tools"]).is_empty(), "{e}");
    assert!(e["error"].as_str().is_some_and(|s| !s.is_empty()), "{e}");
    let err = host.fails("call_tool", json!({"name": "echo", "args": {}}));
    println!("after the crash: {err}");
    // Issue 36: not "no tool named": which extension is gone, and how.
    assert_eq!(
        err,
        "tool \"echo\" is not available: extension \"crashy\", which provided it, \
         is not running: exited with status 3"
    );
    let d = host.call_tool("steady_echo", json!({"still": "here"}));
    assert_eq!(d["extension"], "steady");
    // An extension the host stops (a reload) is said to be stopped.
    host.ok("reload", json!({}));
    let ev = host.wait_event("extension_exited", EVENT_TIMEOUT, |v| {
        v["type"] == "extension_exited" && v["extension"] == "steady"
    });
    assert_eq!(ev["stopped"], true, "{ev}");
    host.shutdown();
}

#[test]
fn extension_exiting_at_startup_is_reported_with_its_status() {
    let _serial = serial();
    let mut b = HostBuilder::new();
    b.explicit(
        "quitter",
        &py_manifest("quitter", &["--mode", "exit", "--exit-code", "5"]),
    );
    b.explicit("steady", &node_manifest("steady", &[]));
    let host = b.start();
    host.ready();
    let ev = host.wait_event("extension_exited", EVENT_TIMEOUT, |v| {
        v["type"] == "extension_exited" && v["extension"] == "quitter"
    });
    assert_eq!(ev["code"], 5, "{ev}");
    assert!(
        ev["reason"].as_str().is_some_and(|r| r.contains('5')),
        "{ev}"
    );
    assert_eq!(host.entry("quitter")["state"], "exited");
    assert_eq!(host.call_tool("echo", json!({}))["extension"], "steady");
    host.shutdown();
}

/// Issue 36: `host_ready` carries the last line an extension that exited while starting
/// wrote to stderr, though the exit is seen before its stderr is read to the end (each
/// of several writes it as the very last thing before exiting).
#[test]
fn an_extension_exiting_at_start_is_reported_with_its_last_stderr_line() {
    let _serial = serial();
    let mut b = HostBuilder::new();
    let names: Vec<String> = (0..6).map(|i| format!("quits{i}")).collect();
    for name in &names {
        let script = format!(
            "import sys, time\nsys.stderr.write('starting\\n\\n'); sys.stderr.flush()\n\
             time.sleep(0.05)\nsys.stderr.write('{name}: no config here\\n'); sys.exit(1)\n"
        );
        b.explicit(name, &inline_py(name, &script));
    }
    let host = b.start();
    let ready = host.ready_event();
    let errors = ready["errors"].as_array().unwrap();
    assert_eq!(errors.len(), names.len(), "{ready}");
    for name in &names {
        let error = errors
            .iter()
            .find(|e| e["extension"] == name.as_str())
            .unwrap_or_else(|| panic!("{name} in {ready}"));
        assert_eq!(
            error["error"],
            format!(
                "exited while starting: exited with status 1 (its last stderr line: \
                 {name}: no config here)"
            ),
            "{ready}"
        );
    }
    host.shutdown();
}

#[test]
fn missing_executable_is_an_error_state_and_the_others_start() {
    let _serial = serial();
    let mut b = HostBuilder::new();
    b.explicit(
        "ghost",
        &json!({"name": "ghost", "exec": "./does-not-exist", "version": "1"}),
    );
    b.explicit("steady", &node_manifest("steady", &[]));
    let host = b.start();
    host.ready();
    let e = host.entry("ghost");
    println!("ghost: {e}");
    assert_eq!(e["state"], "error", "{e}");
    assert!(e["error"].as_str().is_some_and(|s| !s.is_empty()), "{e}");
    assert_eq!(host.call_tool("echo", json!({}))["extension"], "steady");
    host.shutdown();
}

#[test]
fn hanging_tool_call_times_out_and_the_extension_gets_tool_cancel() {
    let _serial = serial();
    let mut b = HostBuilder::new();
    b.explicit("hangs", &py_manifest("hangs", &[]));
    let host = b.start();
    host.ready();
    let t = Instant::now();
    let err = host.fails(
        "call_tool",
        json!({"name": "hang", "args": {}, "timeout_ms": 500}),
    );
    let took = t.elapsed();
    println!("hang timed out after {took:?}: {err}");
    let lower = err.to_lowercase();
    assert!(
        lower.contains("timeout") || lower.contains("timed out"),
        "{err}"
    );
    assert!(err.contains("hang"), "the error names the tool: {err}");
    assert!(
        took >= Duration::from_millis(450),
        "gave up too early: {took:?}"
    );
    assert!(
        took < Duration::from_secs(5),
        "timeout_ms ignored: {took:?}"
    );
    let hanging = host.wait_notify("hangs", "hanging ");
    let call_id = hanging.strip_prefix("hanging ").unwrap();
    let cancelled = host.wait_notify("hangs", "cancelled ");
    assert_eq!(
        cancelled,
        format!("cancelled {call_id}"),
        "tool_cancel names the call"
    );
    // The extension is still usable.
    assert_eq!(
        host.call_tool("echo", json!({"ok": 1}))["extension"],
        "hangs"
    );
    host.shutdown();
}

#[test]
fn garbage_lines_and_unknown_frames_are_skipped() {
    let _serial = serial();
    let mut b = HostBuilder::new();
    b.explicit("messy", &py_manifest("messy", &["--mode", "garbage"]));
    let host = b.start();
    assert_eq!(host.ready(), vec!["messy"]);
    let e = host.entry("messy");
    assert_eq!(e["state"], "ready", "{e}");
    assert!(str_list(&e["tools"]).contains(&"echo".to_string()), "{e}");
    let d = host.call_tool("echo", json!({"after": "garbage"}));
    assert_eq!(
        serde_json::from_str::<Value>(&first_text(&d)).unwrap(),
        json!({"after": "garbage"})
    );
    let d = host.ok(
        "invoke_command",
        json!({"name": "py-echo", "args": "still fine"}),
    );
    assert_eq!(d["display"], "still fine");
    host.shutdown();
}

fn big_result(kind: &str) {
    let _serial = serial();
    let mut b = HostBuilder::new();
    b.explicit("bigpy", &py_manifest("bigpy", &[]));
    let host = b.start();
    host.ready();
    let n = 20 * 1024 * 1024;
    let t = Instant::now();
    let d = host.call_tool("big", json!({"bytes": n, "kind": kind}));
    let took = t.elapsed();
    let block = &d["content"][0];
    let got = if kind == "image" {
        assert_eq!(block["type"], "image", "{}", block["type"]);
        assert_eq!(block["mime_type"], "image/png");
        block["data"].as_str().expect("image data")
    } else {
        assert_eq!(block["type"], "text");
        block["text"].as_str().expect("text")
    };
    let want = payload(n);
    println!(
        "20 MiB {kind} result in {took:?}: {} bytes, fnv {:016x} (want {:016x}); zot VmHWM {} KiB",
        got.len(),
        fnv1a(got.as_bytes()),
        fnv1a(want.as_bytes()),
        host.vm_hwm_kib()
    );
    assert_eq!(got.len(), want.len(), "length");
    assert!(got == want, "the payload arrived altered");
    host.shutdown();
}

#[test]
fn twenty_mib_text_result_is_delivered_intact() {
    big_result("text");
}

#[test]
fn twenty_mib_image_result_is_delivered_intact() {
    big_result("image");
}

#[test]
fn hundred_mib_line_is_skipped_and_the_next_frame_delivered() {
    let _serial = serial();
    let mut b = HostBuilder::new();
    b.explicit("hugepy", &py_manifest("hugepy", &[]));
    let host = b.start();
    host.ready();
    // Never keep a 100 MiB event if the host wrongly forwards it.
    host.set_event_filter(|v| v["message"].as_str().is_none_or(|m| m.len() < 1024 * 1024));
    let t = Instant::now();
    let d = host.request_within(
        "call_tool",
        json!({"name": "huge", "args": {"bytes": 100 * 1024 * 1024}}),
        Duration::from_secs(60),
    );
    assert_eq!(d["success"], true, "{d}");
    assert_eq!(first_text(&d["data"]), "huge done");
    host.wait_notify("hugepy", "after-huge");
    let hwm = host.vm_hwm_kib();
    println!(
        "100 MiB line skipped in {:?}; zot VmHWM {hwm} KiB",
        t.elapsed()
    );
    assert_eq!(host.filtered_events(), 0, "the oversize line was delivered");
    assert!(hwm < 200 * 1024, "zot peaked at {hwm} KiB");
    host.shutdown();
}

#[test]
fn max_frame_bytes_flag_lowers_the_cap() {
    let _serial = serial();
    let mut b = HostBuilder::new();
    b.explicit("bigpy", &py_manifest("bigpy", &[]));
    let (host, _) = the_frame_cap_drops_an_oversize_result(b);
    host.shutdown();
}

#[test]
fn extension_that_never_sends_hello_does_not_block_host_ready() {
    let _serial = serial();
    let mut b = HostBuilder::new();
    b.explicit("mute", &py_manifest("mute", &["--mode", "nohello"]));
    b.explicit("talker", &node_manifest("talker", &[]));
    // The default cap, which this test is about (the harness lengthens it otherwise).
    b.arg("--ready-timeout-ms").arg("3000");
    let host = b.start();
    let ready = host.wait_event("host_ready", Duration::from_secs(10), |v| {
        v["type"] == "host_ready"
    });
    let took = host.started.elapsed();
    println!("host_ready with a mute extension after {took:?}");
    // Started, but named as not ready, with why.
    assert_eq!(ready["not_ready"], json!(["mute"]), "{ready}");
    assert_eq!(
        ready["warnings"],
        json!([{"extension": "mute", "warning":
            "not ready within 3000 ms (it has not said hello): its registrations may still arrive"}]),
        "{ready}"
    );
    assert!(
        took < Duration::from_millis(5000),
        "host_ready after {took:?} (cap is 3 s)"
    );
    let d = host.call_tool("echo", json!({"n": 1}));
    assert_eq!(d["extension"], "talker");
    let e = host.entry("mute");
    println!("mute: {e}");
    assert_ne!(e["state"], "ready", "{e}");
    host.shutdown();
}

#[test]
fn extension_ignoring_shutdown_and_sigterm_is_killed_with_its_grandchild() {
    let _serial = serial();
    let mut b = HostBuilder::new();
    b.explicit(
        "stubborn",
        &py_manifest("stubborn", &["--mode", "stubborn"]),
    );
    let mut host = b.start();
    host.ready();
    let pids = host.wait_notify("stubborn", "pids ");
    let mut it = pids
        .split_whitespace()
        .skip(1)
        .map(|p| p.parse::<u32>().unwrap());
    let (ext_pid, grandchild) = (it.next().unwrap(), it.next().unwrap());
    assert!(!process_gone(grandchild), "the grandchild runs");
    let t = Instant::now();
    let d = host.ok("shutdown", json!({}));
    assert!(d.is_object());
    let status = host.wait_exit(Duration::from_secs(10));
    let took = t.elapsed();
    println!("shutdown with a stubborn extension took {took:?} ({status})");
    assert!(status.success(), "{status}");
    assert!(took < Duration::from_secs(8), "took {took:?}");
    assert!(
        wait_process_gone(ext_pid, Duration::from_secs(5)),
        "extension {ext_pid} survived"
    );
    assert!(
        wait_process_gone(grandchild, Duration::from_secs(5)),
        "grandchild {grandchild} survived"
    );
    host.assert_clean_stdout();
}

#[test]
fn notify_flood_keeps_the_host_responsive_with_bounded_memory() {
    let _serial = serial();
    const FLOOD: u64 = 1_000_000;
    let mut b = HostBuilder::new();
    b.explicit(
        "flood",
        &rs_manifest("flood", &["--mode", "flood", "--count", &FLOOD.to_string()]),
    );
    let host = b.start();
    host.set_event_filter(|v| !is_notify(v, "flood", "flood ") || v["message"] == "flood done");
    host.ready();
    let t = Instant::now();
    let (done, pings, worst) = host.ping_until(Duration::from_secs(300), |host| {
        host.try_wait_event(Duration::from_millis(50), |v| {
            is_notify(v, "flood", "flood done")
        })
    });
    let took = t.elapsed();
    let hwm = host.vm_hwm_kib();
    let seen = host.filtered_events();
    println!(
        "flood of {FLOOD} notifies: {seen} seen in {took:?} ({:.0}/s); {pings} pings, worst {worst:?}; zot VmHWM {hwm} KiB",
        seen as f64 / took.as_secs_f64()
    );
    assert_eq!(done["message"], "flood done");
    assert!(worst < Duration::from_secs(5), "a ping took {worst:?}");
    assert!(hwm < 200 * 1024, "zot peaked at {hwm} KiB");
    host.shutdown();
}

#[test]
fn thousand_concurrent_tool_calls_over_ten_extensions_are_matched() {
    let _serial = serial();
    let mut b = HostBuilder::new();
    for i in 0..10 {
        let name = format!("rs-{i}");
        let tool = format!("echo_{i}");
        b.explicit(
            &name,
            &rs_manifest(&name, &["--tools", &tool, "--commands", "", "--events", ""]),
        );
    }
    let host = b.start();
    assert_eq!(host.ready().len(), 10);
    let t = Instant::now();
    let calls: Vec<(String, String, usize)> = (0..1000)
        .map(|n| {
            let ext = n % 10;
            let token = format!("tok-{n}-{}", n * 7919 % 1000);
            let id = host.send(
                "call_tool",
                json!({"name": format!("echo_{ext}"), "args": {"token": token, "delay_ms": (n * 13) % 20}}),
            );
            (id, token, ext)
        })
        .collect();
    for (id, token, ext) in &calls {
        let r = host.wait_response(id, Duration::from_secs(60));
        assert_eq!(r["success"], true, "{r}");
        let d = &r["data"];
        assert_eq!(d["extension"], format!("rs-{ext}"), "{r}");
        let args: Value = serde_json::from_str(&first_text(d)).unwrap();
        assert_eq!(
            args["token"],
            json!(token),
            "result matched to the wrong call: {r}"
        );
    }
    println!(
        "1000 concurrent calls over 10 extensions answered in {:?}",
        t.elapsed()
    );
    host.shutdown();
}

#[test]
fn extension_closing_its_stdout_and_running_on_is_killed_at_once() {
    let _serial = serial();
    let mut b = HostBuilder::new();
    b.explicit("closer", &py_manifest("closer", &["--tools", "closeout"]));
    let host = b.start();
    host.ready();
    let (pid, _) = parse_started(&host.wait_notify("closer", "started pid="));
    let t = Instant::now();
    let err = host.fails("call_tool", json!({"name": "closeout", "args": {}}));
    let exited = host.wait_event("extension_exited", EVENT_TIMEOUT, |v| {
        v["type"] == "extension_exited" && v["extension"] == "closer"
    });
    let took = t.elapsed();
    println!("closed its stdout; gone after {took:?}: {exited}");
    let reason = "closed its output; killed by signal 9";
    assert_eq!(exited["reason"], reason, "{exited}");
    assert_eq!(exited["signal"], 9, "{exited}");
    assert!(err.contains(reason), "{err}");
    assert!(
        wait_process_gone(pid, Duration::from_secs(5)),
        "{pid} still runs"
    );
    // Its stdin stays open: only the kill ended it.
    assert!(host
        .log("closer")
        .contains("closed its output but kept running: killing it"));
    host.shutdown();
}

#[test]
fn a_grandchild_goes_with_an_extension_that_exits_on_its_own() {
    let _serial = serial();
    let mut b = HostBuilder::new();
    b.explicit(
        "parent",
        &py_manifest("parent", &["--tools", "spawn,crash"]),
    );
    let host = b.start();
    host.ready();
    let spawned = first_text(&host.call_tool("spawn", json!({})));
    let grandchild: u32 = spawned.strip_prefix("pid ").unwrap().parse().unwrap();
    assert!(!process_gone(grandchild), "the grandchild runs");
    host.fails("call_tool", json!({"name": "crash", "args": {}}));
    let exited = host.wait_event("extension_exited", EVENT_TIMEOUT, |v| {
        v["type"] == "extension_exited" && v["extension"] == "parent"
    });
    assert_eq!(exited["code"], 3, "{exited}");
    assert!(
        wait_process_gone(grandchild, Duration::from_secs(10)),
        "grandchild {grandchild} survived its parent's exit"
    );
    host.shutdown();
}

#[test]
fn an_interceptor_that_never_answers_allows_at_the_intercept_timeout() {
    let _serial = serial();
    let mut b = HostBuilder::new();
    b.explicit(
        "mute",
        &py_manifest("mute", &["--mode", "mute", "--intercept", "tool_call"]),
    );
    b.explicit("guard", &py_manifest("guard", &["--mode", "guard"]));
    b.arg("--intercept-timeout-ms").arg("500");
    let host = b.start();
    host.ready();
    for (command, block) in [("ls", false), ("rm -rf /", true)] {
        let t = Instant::now();
        let d = host.ok("intercept", bash_call("c1", command));
        let took = t.elapsed();
        println!("{command}: {d} after {took:?}");
        assert_eq!(d["block"], block, "the guard after it decides: {d}");
        host.wait_notify("mute", "ignoring ");
        assert!(took >= Duration::from_millis(450), "did not wait: {took:?}");
    }
    // The lowered timeout, not the default 5 s, allowed them.
    let log = host.log("mute");
    let allowed = r#"intercept of "tool_call" timed out after 500 ms: extension "mute" did not answer; allowing"#;
    assert_eq!(log.matches(allowed).count(), 2, "{log}");
    host.shutdown();
}

/// An extension that, when its tool `go` is called, asks the host for the tool `hang`
/// 65 times at once (`call_tool`) and answers `go` with the first `tool_result` it gets
/// back, as JSON.
const CALLER: &str = r#"import json, sys
def send(frame):
    sys.stdout.write(json.dumps(frame) + "\n")
    sys.stdout.flush()
send({"type": "hello", "name": "caller", "version": "1"})
send({"type": "register_tool", "name": "go", "description": "d", "schema": {"type": "object"}})
send({"type": "ready"})
go = None
for line in sys.stdin:
    frame = json.loads(line)
    if frame["type"] == "tool_call" and frame["name"] == "go":
        go = frame["id"]
        for i in range(65):
            send({"type": "call_tool", "id": "c%d" % i, "name": "hang", "args": {}})
    elif frame["type"] == "tool_result" and go:
        send({"type": "tool_result", "id": go,
              "content": [{"type": "text", "text": json.dumps(frame)}]})
        go = None
"#;

#[test]
fn an_extensions_own_calls_past_64_are_refused_at_once() {
    let _serial = serial();
    let mut b = HostBuilder::new();
    b.explicit("caller", &inline_py("caller", CALLER));
    b.explicit("hangs", &py_manifest("hangs", &["--tools", "hang"]));
    // The 64 calls it waits for stay pending throughout.
    b.arg("--tool-timeout-ms").arg("600000");
    let host = b.start();
    host.ready();
    let d = host.ok(
        "call_tool",
        json!({"name": "go", "args": {}, "timeout_ms": 60000}),
    );
    let refused: Value = serde_json::from_str(&first_text(&d)).unwrap();
    assert_eq!(refused["id"], "c64", "{refused}");
    assert_eq!(refused["is_error"], true, "{refused}");
    assert_eq!(
        first_text(&refused),
        r#"call_tool "hang" refused: 64 of its calls are still waiting"#
    );
    for _ in 0..64 {
        host.wait_notify("hangs", "hanging ");
    }
    host.shutdown();
}

/// Issue 37: a guard the user makes fail closed (`zot ext guard DIR --fail-closed`)
/// blocks a `tool_call` it does not answer in time, one after it crashed, and every one
/// while it is not running, each with a reason naming it; `host_ready` lists it. Made
/// to fail open again, it allows, as the protocol says by default.
#[test]
fn a_guard_that_fails_closed_blocks_what_it_cannot_answer() {
    let _serial = serial();
    let crasher = r#"import json, sys
def emit(o):
    sys.stdout.write(json.dumps(o) + "\n"); sys.stdout.flush()
emit({"type": "hello", "name": "crasher", "version": "1", "capabilities": ["events"]})
emit({"type": "subscribe", "events": [], "intercept": ["tool_call"]})
emit({"type": "ready"})
for line in sys.stdin:
    if json.loads(line)["type"] == "event_intercept":
        sys.exit(4)
"#;
    // What each of two tool calls in a row is told.
    let cases: [(&str, Value, [&str; 2]); 3] = [
        (
            "mute",
            py_manifest("mute", &["--mode", "mute", "--intercept", "tool_call"]),
            ["guard \"mute\" fails closed: it did not answer within 500 ms"; 2],
        ),
        (
            "crasher",
            inline_py("crasher", crasher),
            [
                "guard \"crasher\" fails closed: it exited (exited with status 4)",
                "guard \"crasher\" fails closed: it is not running (exited with status 4)",
            ],
        ),
        (
            "missing",
            json!({"name": "missing", "version": "1", "exec": "./no-such-program"}),
            ["guard \"missing\" fails closed: it is not running ("; 2],
        ),
    ];
    for (name, manifest, reasons) in cases {
        let mut b = HostBuilder::new();
        let dir = b.explicit(name, &manifest);
        b.arg("--intercept-timeout-ms").arg("500");
        let target = dir.to_str().unwrap();
        let chose = zot(&b.home(), &b.cwd(), &["guard", target, "--fail-closed"]);
        assert!(chose.status.success(), "{}", text(&chose));
        assert!(stdout(&chose).contains("fails closed"), "{}", text(&chose));
        let host = b.start();
        let ready = host.ready_event();
        assert_eq!(ready["fail_closed"], json!([name]), "{ready}");
        for (id, reason) in ["c1", "c2"].into_iter().zip(reasons) {
            let d = host.ok("intercept", bash_call(id, "ls"));
            assert_eq!(d["block"], true, "{name}: {d}");
            let said = d["reason"].as_str().unwrap_or_default();
            assert!(said.starts_with(reason), "{name}: {said}");
        }
        host.shutdown();
    }

    // Failing open again (the default), a guard that does not answer allows.
    let mut b = HostBuilder::new();
    let dir = b.explicit(
        "mute",
        &py_manifest("mute", &["--mode", "mute", "--intercept", "tool_call"]),
    );
    b.arg("--intercept-timeout-ms").arg("500");
    let target = dir.to_str().unwrap();
    for flag in ["--fail-closed", "--fail-open"] {
        let chose = zot(&b.home(), &b.cwd(), &["guard", target, flag]);
        assert!(chose.status.success(), "{}", text(&chose));
    }
    let host = b.start();
    assert_eq!(host.ready_event()["fail_closed"], json!([]));
    let d = host.ok("intercept", bash_call("c1", "ls"));
    assert_eq!(d["block"], false, "{d}");
    host.shutdown();
}
