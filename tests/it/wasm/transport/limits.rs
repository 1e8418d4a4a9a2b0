//! Limits: deadlines, memory, recursion, floods and frame sizes stop the component; the
//! host goes on.

use super::*;
use serde_json::{json, Value};
use std::time::{Duration, Instant};
use zot_test_guests::{COMMAND, REACTOR};

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
    // Stopped for a limit, it is started again saying so; its tools answer again.
    let again = host.wait_event("extension_restarted", EVENT_TIMEOUT, |v| {
        v["type"] == "extension_restarted" && v["extension"] == name.as_str()
    });
    assert_eq!(again["after"], "deadline exceeded", "{again}");
    let log = host.log(&name);
    assert!(
        log.contains("starting it again in ") && log.contains(" after: deadline exceeded"),
        "log:\n{log}"
    );
    let back = Instant::now();
    while host.entry(&name)["state"] != "ready" {
        assert!(back.elapsed() < EVENT_TIMEOUT, "{}", host.entry(&name));
        std::thread::sleep(Duration::from_millis(20));
    }
    let d = host.call_tool("echo", json!({"back": true}));
    assert_eq!(d["extension"], name.as_str(), "{d}");
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
    // The state each stop leaves is looked at after both stopped: none is started again
    // meanwhile (a restart after a limit is `spinning_tool_call_is_stopped`'s).
    b.arg("--no-restart");
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
    // The state each trap leaves is looked at after both trapped: none is started again
    // meanwhile.
    b.arg("--no-restart");
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
