//! The `zot host` sidecar contract itself (docs/sidecar.md): requests, responses, the
//! list, start and exit.

use crate::common::*;
use serde_json::{json, Value};
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

#[test]
fn no_extensions_still_reports_host_ready() {
    let host = HostBuilder::new().start();
    assert!(host.ready().is_empty());
    assert_eq!(host.ok("ping", json!({})), json!({"pong": true}));
    let d = host.ok("list", json!({}));
    assert_eq!(d["extensions"], json!([]), "{d}");
    host.shutdown();
}

#[test]
fn ping_answers_while_a_slow_tool_call_is_in_flight() {
    let mut b = HostBuilder::new();
    b.explicit("slow", &node_manifest("slow", &[]));
    let host = b.start();
    host.ready();
    let slow = host.send("call_tool", json!({"name": "sleep", "args": {"ms": 3000}}));
    let t = Instant::now();
    let ping = host.send("ping", json!({}));
    let pong = host.wait_response(&ping, Duration::from_secs(10));
    let ping_took = t.elapsed();
    assert_eq!(pong["success"], true, "{pong}");
    // Answered while the call (read first) was still running: not queued behind it.
    assert!(
        host.try_wait_response(&slow, Duration::ZERO).is_none(),
        "the slow call finished before the ping was answered"
    );
    let done = host.wait_response(&slow, Duration::from_secs(15));
    println!("ping answered in {ping_took:?} while a 3 s tool call ran");
    assert_eq!(done["success"], true, "{done}");
    assert_eq!(first_text(&done["data"]), "slept 3000");
    assert!(
        pong["_seq"].as_u64() < done["_seq"].as_u64(),
        "pong came first"
    );
    host.shutdown();
}

#[test]
fn unknown_request_type_fails_naming_it() {
    let host = HostBuilder::new().start();
    host.ready();
    let r = host.request("teleport", json!({"to": "mars"}));
    assert_eq!(r["success"], false, "{r}");
    assert!(r["error"].as_str().unwrap().contains("teleport"), "{r}");
    host.shutdown();
}

#[test]
fn malformed_request_lines_get_error_responses() {
    let host = HostBuilder::new().start();
    host.ready();
    // Not JSON at all: an error response without an id.
    host.send_raw("this is not json");
    let r = host.wait_event("id-less error response", EVENT_TIMEOUT, |v| {
        v["type"] == "response"
    });
    assert_eq!(r["success"], false, "{r}");
    assert!(r["error"].as_str().is_some_and(|e| !e.is_empty()), "{r}");
    // JSON, but no string type: the id is echoed.
    host.send_raw(r#"{"id":"m1","no_type":true}"#);
    host.send_raw(r#"{"id":"m2","type":7}"#);
    for id in ["m1", "m2"] {
        let r = host.wait_response(id, REQUEST_TIMEOUT);
        assert_eq!(r["success"], false, "{r}");
    }
    // Not an object.
    host.send_raw("[1,2,3]");
    let r = host.wait_event("error response for an array", EVENT_TIMEOUT, |v| {
        v["type"] == "response"
    });
    assert_eq!(r["success"], false, "{r}");
    // The connection survives.
    assert_eq!(host.ok("ping", json!({}))["pong"], true);
    host.shutdown();
}

/// `{"id":"<id>","type":"ping","pad":"xxx…"}` of exactly `len` bytes (newline excluded).
fn padded_ping(id: &str, len: usize) -> String {
    let mut line = format!(r#"{{"id":"{id}","type":"ping","pad":""#);
    let pad = len - line.len() - 2;
    line.extend(std::iter::repeat_n('x', pad));
    line.push_str(r#""}"#);
    line
}

#[test]
fn a_request_line_over_the_cap_is_answered_with_an_error_and_never_held() {
    const CAP: usize = 1024 * 1024;
    const HUGE: usize = 300 * 1000 * 1000;
    let mut b = HostBuilder::new();
    b.arg("--max-frame-bytes").arg(&CAP.to_string());
    let host = b.start();
    host.ready();
    let error = format!("request line longer than {CAP} bytes: skipped");

    // The cap itself is accepted; one byte more is not.
    host.send_raw(&padded_ping("at-cap", CAP));
    assert_eq!(
        host.wait_response("at-cap", REQUEST_TIMEOUT)["success"],
        true
    );
    host.send_raw(&padded_ping("over-cap", CAP + 1));
    let r = host.wait_response("over-cap", REQUEST_TIMEOUT);
    assert_eq!(
        (&r["success"], &r["error"]),
        (&json!(false), &json!(error)),
        "{r}"
    );

    // 300 MB, written 1 MiB at a time: answered without ever being held whole.
    let hwm_before = host.vm_hwm_kib();
    let t = Instant::now();
    host.send_with(|stdin| {
        let head = br#"{"id":"big","type":"ping","pad":""#;
        let tail = b"\"}\n";
        stdin.write_all(head)?;
        let chunk = vec![b'x'; 1 << 20];
        let mut left = HUGE - head.len() - tail.len();
        while left > 0 {
            let n = left.min(chunk.len());
            stdin.write_all(&chunk[..n])?;
            left -= n;
        }
        stdin.write_all(tail)
    });
    host.send_raw(r#"{"id":"after","type":"ping"}"#);
    let r = host.wait_response("big", Duration::from_secs(120));
    let took = t.elapsed();
    let mut fields: Vec<&str> = r.as_object().unwrap().keys().map(String::as_str).collect();
    fields.sort_unstable();
    assert_eq!(fields, ["_seq", "error", "id", "success", "type"], "{r}");
    assert_eq!(
        (&r["type"], &r["id"], &r["success"], &r["error"]),
        (
            &json!("response"),
            &json!("big"),
            &json!(false),
            &json!(error)
        ),
        "{r}"
    );
    assert_eq!(host.ok("ping", json!({}))["pong"], true);
    let pong = host.wait_response("after", REQUEST_TIMEOUT);
    assert_eq!(
        pong["data"]["pong"], true,
        "the next line is read as usual: {pong}"
    );
    let peak = host.vm_hwm_kib();
    println!(
        "a {HUGE}-byte request line over a {CAP}-byte cap: answered in {took:?}; \
         zot VmHWM {hwm_before} KiB before, {peak} KiB after"
    );
    assert!(
        peak < 150 * 1024,
        "zot peaked at {peak} KiB for a {HUGE}-byte line{}",
        host.diagnostics()
    );

    // An id past the kept head cannot be read: the error has a null id.
    let late = format!(
        r#"{{"type":"ping","pad":"{}","id":"late"}}"#,
        "x".repeat(2 * CAP)
    );
    host.send_raw(&late);
    let r = host.wait_event("id-less error response", EVENT_TIMEOUT, |v| {
        v["type"] == "response"
    });
    assert_eq!(
        (&r["id"], &r["error"]),
        (&Value::Null, &json!(error)),
        "{r}"
    );
    assert!(host.try_wait_response("late", Duration::ZERO).is_none());
    assert_eq!(host.ok("ping", json!({}))["pong"], true);
    host.shutdown();
}

#[test]
fn unknown_tool_and_command_fail_naming_them() {
    let mut b = HostBuilder::new();
    b.explicit("py", &py_manifest("py", &[]));
    let host = b.start();
    host.ready();
    let err = host.fails("call_tool", json!({"name": "nope", "args": {}}));
    assert!(err.contains("nope"), "{err}");
    let err = host.fails("invoke_command", json!({"name": "nada", "args": ""}));
    assert!(err.contains("nada"), "{err}");
    host.shutdown();
}

#[test]
fn list_reports_every_field() {
    let mut b = HostBuilder::new();
    let dir = b.explicit(
        "lister",
        &node_manifest(
            "lister",
            &[
                "--tools",
                "l_tool,read",
                "--commands",
                "l_cmd",
                "--events",
                "turn_start,tool_call",
                "--intercept",
                "tool_call",
            ],
        ),
    );
    let host = b.start();
    host.ready();
    let e = host.entry("lister");
    println!("list entry: {e}");
    assert_eq!(e["version"], "0.4.0", "{e}");
    assert_eq!(e["source"], "explicit", "{e}");
    assert_eq!(e["transport"], "stdio", "{e}");
    assert_eq!(e["state"], "ready", "{e}");
    assert_eq!(
        std::fs::canonicalize(e["dir"].as_str().unwrap()).unwrap(),
        std::fs::canonicalize(&dir).unwrap(),
        "{e}"
    );
    let log = e["log"].as_str().unwrap();
    assert!(
        log.starts_with('/') && log.ends_with("ext-lister.log"),
        "{e}"
    );
    assert_eq!(str_list(&e["commands"]), vec!["l_cmd"], "{e}");
    assert_eq!(str_list(&e["tools"]), vec!["l_tool"], "{e}");
    assert_eq!(str_list(&e["shadowed"]), vec!["read"], "{e}");
    let mut events = str_list(&e["events"]);
    events.sort();
    assert_eq!(events, vec!["tool_call", "turn_start"], "{e}");
    assert_eq!(str_list(&e["intercept"]), vec!["tool_call"], "{e}");
    assert!(
        e.get("error").is_none_or(Value::is_null),
        "no error while ready: {e}"
    );
    host.shutdown();
}

#[test]
fn host_ready_lists_started_extensions_in_load_order() {
    let mut b = HostBuilder::new();
    b.explicit("zeta", &py_manifest("zeta", &["--events", ""]));
    b.explicit("alpha", &node_manifest("alpha", &["--events", ""]));
    // Started as the published host starts them: no trust asked.
    b.arg("--trust-project");
    b.project("proj-b", &node_manifest("proj-b", &["--events", ""]));
    b.project("proj-a", &py_manifest("proj-a", &["--events", ""]));
    b.global("glob", &node_manifest("glob", &["--events", ""]));
    let mut off = py_manifest("off", &[]);
    off["enabled"] = json!(false);
    b.global("off", &off);
    let host = b.start();
    assert_eq!(
        host.ready(),
        vec!["zeta", "alpha", "proj-a", "proj-b", "glob"]
    );
    let listed: Vec<String> = host.ok("list", json!({}))["extensions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["name"].as_str().unwrap().to_string())
        .collect();
    assert!(
        listed.contains(&"off".to_string()),
        "disabled ones are listed: {listed:?}"
    );
    host.shutdown();
}

#[test]
fn requests_sent_before_host_ready_are_answered_after_it() {
    let mut b = HostBuilder::new();
    b.explicit("late", &py_manifest("late", &["--delay-ms", "800"]));
    let host = b.start();
    let ping = host.send("ping", json!({}));
    let call = host.send(
        "call_tool",
        json!({"name": "echo", "args": {"early": true}}),
    );
    let ready = host.wait_event("host_ready", READY_TIMEOUT, |v| v["type"] == "host_ready");
    let pong = host.wait_response(&ping, REQUEST_TIMEOUT);
    let res = host.wait_response(&call, REQUEST_TIMEOUT);
    assert_eq!(pong["success"], true, "{pong}");
    assert_eq!(
        res["success"], true,
        "the tool registered before ready is callable: {res}"
    );
    assert_eq!(res["data"]["extension"], "late");
    assert!(
        ready["_seq"].as_u64() < pong["_seq"].as_u64(),
        "answered after host_ready"
    );
    assert!(
        ready["_seq"].as_u64() < res["_seq"].as_u64(),
        "answered after host_ready"
    );
    host.shutdown();
}

#[test]
fn emit_counts_subscribers() {
    let mut b = HostBuilder::new();
    b.explicit("a", &node_manifest("a", &["--events", "turn_start"]));
    b.explicit("b", &py_manifest("b", &["--events", "turn_start,turn_end"]));
    let host = b.start();
    host.ready();
    let d = host.ok("emit", json!({"event": {"event": "turn_start", "step": 1}}));
    assert_eq!(d["delivered"], 2, "{d}");
    let d = host.ok(
        "emit",
        json!({"event": {"event": "turn_end", "stop": "end_turn"}}),
    );
    assert_eq!(d["delivered"], 1, "{d}");
    let d = host.ok("emit", json!({"event": {"event": "session_start"}}));
    assert_eq!(d["delivered"], 0, "{d}");
    host.shutdown();
}

#[test]
fn end_of_stdin_exits_cleanly() {
    let mut b = HostBuilder::new();
    b.explicit("py", &py_manifest("py", &[]));
    b.explicit("node", &node_manifest("node", &[]));
    let mut host = b.start();
    host.ready();
    let (py_pid, _) = parse_started(&host.wait_notify("py", "started "));
    let (node_pid, _) = parse_started(&host.wait_notify("node", "started "));
    let t = Instant::now();
    host.close_stdin();
    let status = host.wait_exit(Duration::from_secs(10));
    println!("exit after EOF took {:?}", t.elapsed());
    assert_eq!(status.code(), Some(0), "{status}");
    assert!(
        wait_process_gone(py_pid, Duration::from_secs(5)),
        "py survived"
    );
    assert!(
        wait_process_gone(node_pid, Duration::from_secs(5)),
        "node survived"
    );
    host.assert_clean_stdout();
}

/// Input that ends right after its requests (`printf … | zot host`) still gets every
/// answer: the requests in flight finish before the extensions stop.
#[test]
fn end_of_stdin_answers_the_requests_in_flight_first() {
    let mut b = HostBuilder::new();
    b.explicit("py", &py_manifest("py", &[]));
    let mut host = b.start();
    host.ready();
    host.send_with_id(
        "slow",
        "call_tool",
        json!({"name": "sleep", "args": {"ms": 400}}),
    );
    host.send_with_id(
        "fast",
        "call_tool",
        json!({"name": "echo", "args": {"x": 1}}),
    );
    host.close_stdin();
    let status = host.wait_exit(Duration::from_secs(10));
    assert_eq!(status.code(), Some(0), "{status}");
    let slow = host.wait_response("slow", EVENT_TIMEOUT);
    assert_eq!(slow["success"], true, "{slow}");
    assert_eq!(first_text(&slow["data"]), "slept 400");
    let fast = host.wait_response("fast", EVENT_TIMEOUT);
    assert_eq!(fast["success"], true, "{fast}");
}

#[test]
fn shutdown_request_responds_then_exits_zero() {
    let mut b = HostBuilder::new();
    b.explicit("rs", &rs_manifest("rs", &[]));
    b.explicit("py", &py_manifest("py", &[]));
    let mut host = b.start();
    host.ready();
    let (py_pid, _) = parse_started(&host.wait_notify("py", "started "));
    let t = Instant::now();
    let r = host.request("shutdown", json!({}));
    assert_eq!(r["success"], true, "{r}");
    assert_eq!(r["command"], "shutdown", "{r}");
    assert_eq!(r["data"], json!({}), "{r}");
    let status = host.wait_exit(Duration::from_secs(10));
    let took = t.elapsed();
    println!("shutdown of two well-behaved extensions took {took:?}");
    assert_eq!(status.code(), Some(0), "{status}");
    // Well-behaved extensions acknowledge and exit: none waits out its grace and gets a
    // signal.
    for name in ["rs", "py"] {
        let log = host.log(name);
        assert!(log.contains("acknowledged shutdown"), "{name}:\n{log}");
        assert!(!log.contains("of shutdown: SIGTERM"), "{name}:\n{log}");
    }
    assert!(
        wait_process_gone(py_pid, Duration::from_secs(5)),
        "py survived"
    );
    host.assert_clean_stdout();
}

#[test]
fn concurrent_requests_each_get_exactly_one_response() {
    let mut b = HostBuilder::new();
    b.explicit("node", &node_manifest("node", &[]));
    let host = b.start();
    host.ready();
    let ids: Vec<String> = (0..50)
        .map(|i| match i % 3 {
            0 => host.send("ping", json!({})),
            1 => host.send(
                "call_tool",
                json!({"name": "sleep", "args": {"ms": (i * 7) % 100}}),
            ),
            _ => host.send("list", json!({})),
        })
        .collect();
    for id in &ids {
        let r = host.wait_response(id, REQUEST_TIMEOUT);
        assert_eq!(r["success"], true, "{r}");
    }
    // The marker: a call the extension answers after every sleep above (its timers run
    // in order), then a ping.
    let d = host.call_tool("sleep", json!({"ms": 100}));
    assert_eq!(first_text(&d), "slept 100");
    assert_eq!(host.ok("ping", json!({}))["pong"], true);
    for id in &ids {
        assert!(
            host.try_wait_response(id, Duration::ZERO).is_none(),
            "second response to {id}"
        );
    }
    host.shutdown();
}

/// Sends `requests` to the host in one write, as an agent in a hurry would.
fn burst(host: &Host, requests: &[Value]) {
    let lines: Vec<String> = requests.iter().map(Value::to_string).collect();
    host.send_raw(&lines.join("\n"));
}

#[test]
fn a_burst_of_emits_reaches_the_subscriber_in_order_and_whole() {
    const N: u64 = 2000;
    let mut b = HostBuilder::new();
    b.explicit("sub", &py_manifest("sub", &["--events", "turn_start"]));
    let host = b.start();
    assert_eq!(host.ready(), ["sub"]);
    let requests: Vec<Value> = (1..=N)
        .map(|step| {
            json!({"id": format!("e{step}"), "type": "emit",
                   "event": {"event": "turn_start", "step": step}})
        })
        .collect();
    burst(&host, &requests);
    for step in 1..=N {
        let r = host.wait_response(&format!("e{step}"), REQUEST_TIMEOUT);
        assert_eq!(r["data"]["delivered"], 1, "{r}");
    }
    let steps: Vec<u64> = (0..N)
        .map(|_| {
            notified_json(&host.wait_notify("sub", "event "))["step"]
                .as_u64()
                .unwrap()
        })
        .collect();
    let out_of_order = steps.windows(2).find(|w| w[0] >= w[1]);
    assert_eq!(out_of_order, None, "steps not strictly increasing");
    assert_eq!(steps, (1..=N).collect::<Vec<_>>(), "every step, once");
    assert_eq!(host.entry("sub")["state"], "ready");
    host.shutdown();
}

#[test]
fn panel_frames_typed_fast_arrive_in_the_order_sent_among_events() {
    let mut b = HostBuilder::new();
    b.explicit("panel", &py_manifest("panel", &["--events", "turn_end"]));
    let host = b.start();
    assert_eq!(host.ready(), ["panel"]);
    host.wait_notify("panel", "started");
    // Keys, a resize every 50 keys and an event every 7, then the close: each becomes one
    // notify from the extension, in the order it received them.
    let mut requests = Vec::new();
    let mut expected = Vec::new();
    for i in 0..400 {
        let id = format!("k{i}");
        if i % 50 == 49 {
            requests.push(
                json!({"id": id, "type": "panel_resize", "extension": "panel",
                                 "panel_id": "p", "width": i, "height": 10}),
            );
            expected.push(format!("panel_resize {i}"));
        } else if i % 7 == 6 {
            requests.push(json!({"id": id, "type": "emit",
                                 "event": {"event": "turn_end", "n": i}}));
            expected.push(format!("event {i}"));
        } else {
            requests.push(json!({"id": id, "type": "panel_key", "extension": "panel",
                                 "panel_id": "p", "key": "char", "text": i.to_string()}));
            expected.push(format!("panel_key {i}"));
        }
    }
    requests.push(
        json!({"id": "close", "type": "panel_close", "extension": "panel",
                         "panel_id": "p"}),
    );
    expected.push("panel_close p".into());
    burst(&host, &requests);
    for r in &requests {
        let r = host.wait_response(r["id"].as_str().unwrap(), REQUEST_TIMEOUT);
        assert_eq!(r["success"], true, "{r}");
    }
    let got: Vec<String> = expected
        .iter()
        .map(|_| {
            let msg = host.wait_notify("panel", "");
            let frame = notified_json(&msg);
            let kind = msg.split(' ').next().unwrap().to_string();
            let what = match kind.as_str() {
                "panel_key" => frame["text"].as_str().unwrap().to_string(),
                "panel_resize" => frame["width"].to_string(),
                "event" => frame["n"].to_string(),
                _ => frame["panel_id"].as_str().unwrap().to_string(),
            };
            format!("{kind} {what}")
        })
        .collect();
    assert_eq!(got, expected);
    host.shutdown();
}

#[test]
fn extensions_that_fail_to_load_are_reported_on_stderr_and_in_host_ready() {
    let scratch = TempDir::new("load-errors");
    let junk = scratch.path().join("junk.wasm");
    std::fs::write(&junk, "not a component").unwrap();
    let notes = scratch.path().join("notes.txt");
    std::fs::write(&notes, "# my notes\n").unwrap();
    let mut b = HostBuilder::new();
    b.ext_path(Path::new("/nonexistent/ext"));
    b.ext_path(&junk);
    b.ext_path(&notes);
    b.explicit("crasher", &py_manifest("crasher", &["--mode", "exit"]));
    b.explicit("fine", &py_manifest("fine", &[]));
    // `fine` must be ready after the reload below: a ready wait far longer than a start
    // on a loaded machine (it ends as soon as every extension is ready or gone).
    b.arg("--ready-timeout-ms").arg("30000");
    let host = b.start();
    let ready = host.wait_event("host_ready", READY_TIMEOUT, |v| v["type"] == "host_ready");
    let errors: Vec<(String, String)> = ready["errors"]
        .as_array()
        .unwrap_or_else(|| panic!("host_ready has errors: {ready}"))
        .iter()
        .map(|e| {
            (
                e["extension"].as_str().unwrap().into(),
                e["error"].as_str().unwrap().into(),
            )
        })
        .collect();
    let names: Vec<&str> = errors.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["ext", "junk", "notes", "crasher"], "{ready}");
    // A folder that is not there is said so, not as a file that cannot be read.
    assert_eq!(
        errors[0].1, "/nonexistent/ext: no such directory",
        "{errors:?}"
    );
    assert!(
        errors[1]
            .1
            .contains("junk.wasm: not a WebAssembly component (it is a text file)"),
        "{errors:?}"
    );
    assert!(
        errors[2]
            .1
            .contains("notes.txt: not a WebAssembly component (it is a text file)"),
        "{errors:?}"
    );
    assert!(
        errors[3]
            .1
            .starts_with("exited while starting: exited with status 2"),
        "{errors:?}"
    );
    assert!(host.ok("ping", json!({}))["pong"] == true);
    for (name, error) in &errors {
        // Printed before host_ready; its reader thread may lag behind stdout's.
        let line = format!("zot: extension {name}: {error}");
        let deadline = Instant::now() + EVENT_TIMEOUT;
        while !host.stderr_tail().contains(&line) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(
            host.stderr_tail().contains(&line),
            "{line:?} not in stderr{}",
            host.diagnostics()
        );
    }
    // A reload reports the same, in its response.
    let reload = host.ok("reload", json!({}));
    let again: Vec<&str> = reload["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["extension"].as_str().unwrap())
        .collect();
    assert_eq!(again, ["ext", "junk", "notes", "crasher"], "{reload}");
    assert!(
        str_list(&reload["ready"]).contains(&"fine".to_string()),
        "{reload}"
    );
    host.shutdown();
}

#[test]
fn a_bare_component_given_with_ext_runs_named_after_its_file() {
    let scratch = TempDir::new("bare-ext");
    let wasm = scratch.path().join("probe.wasm");
    std::fs::copy(zot_test_guests::COMMAND, &wasm).unwrap();
    let mut b = HostBuilder::new();
    b.ext_path(&wasm);
    let host = b.start();
    let ready = host.wait_event("host_ready", READY_TIMEOUT, |v| v["type"] == "host_ready");
    assert_eq!(ready["extensions"], json!(["probe"]), "{ready}");
    assert_eq!(ready["errors"], json!([]), "{ready}");
    let entry = host.entry("probe");
    assert_eq!(entry["transport"], "wasm", "{entry}");
    host.shutdown();
}

#[test]
fn past_256_requests_in_flight_the_next_is_read_when_one_ends() {
    let mut b = HostBuilder::new();
    b.explicit("hangs", &py_manifest("hangs", &["--tools", "hang"]));
    b.explicit("victim", &py_manifest("victim", &["--tools", "hang_v"]));
    let host = b.start();
    host.ready();
    let (victim, _) = parse_started(&host.wait_notify("victim", "started pid="));
    let hang = |name: &str| {
        host.send(
            "call_tool",
            json!({"name": name, "args": {}, "timeout_ms": 600000}),
        )
    };
    for _ in 0..255 {
        hang("hang");
    }
    let freed = hang("hang_v");
    for _ in 0..255 {
        host.wait_notify("hangs", "hanging ");
    }
    host.wait_notify("victim", "hanging ");
    // 256 requests in flight: the next is not read, so not answered.
    let ping = host.send("ping", json!({}));
    assert_eq!(host.try_wait_response(&ping, Duration::from_secs(1)), None);
    // One of them ends: the ping is read and answered after it.
    assert!(Command::new("kill")
        .args(["-KILL", &victim.to_string()])
        .status()
        .unwrap()
        .success());
    let ended = host.wait_response(&freed, REQUEST_TIMEOUT);
    assert_eq!(ended["success"], false, "{ended}");
    let pong = host.wait_response(&ping, REQUEST_TIMEOUT);
    assert_eq!(pong["data"]["pong"], true, "{pong}");
    assert!(
        ended["_seq"].as_u64() < pong["_seq"].as_u64(),
        "{ended} {pong}"
    );
    host.shutdown();
}

/// Issue 37: a tool's `tool_progress` reaches a `call_tool` that asked for it, as events
/// carrying the request's id, all before the response; a frame over 16 KiB is cut; a
/// flood the client cannot take in time is dropped and counted, never held or waited
/// for; and a call that did not ask gets none.
#[test]
fn a_tools_progress_reaches_the_call_that_asked_for_it_cut_and_bounded() {
    let mut b = HostBuilder::new();
    b.explicit("p", &py_manifest("p", &["--tools", "progress"]));
    let host = b.start();
    assert_eq!(host.ready(), ["p"]);
    let progress_of = |id: &str| {
        let id = json!(id);
        host.events(move |e| e["type"] == "tool_progress" && e["request_id"] == id)
    };

    let asked = host.send(
        "call_tool",
        json!({"name": "progress", "args": {"count": 3}, "progress": true}),
    );
    let done = host.wait_response(&asked, REQUEST_TIMEOUT);
    assert_eq!(done["data"]["content"][0]["text"], "progressed", "{done}");
    let seen = progress_of(&asked);
    assert_eq!(
        seen.iter()
            .map(|e| {
                let mut e = e.clone();
                e.as_object_mut().unwrap().remove("_seq");
                e
            })
            .collect::<Vec<_>>(),
        [1, 2, 3].map(|i| json!({"type": "tool_progress", "request_id": asked,
            "progress": i as f64, "total": 3.0, "text": format!("step {i}")})),
        "every frame, in order"
    );
    assert!(
        seen.iter()
            .all(|e| e["_seq"].as_u64() < done["_seq"].as_u64()),
        "all before the response: {seen:?} {done}"
    );

    let quiet = host.send(
        "call_tool",
        json!({"name": "progress", "args": {"count": 3}}),
    );
    host.wait_response(&quiet, REQUEST_TIMEOUT);
    assert!(progress_of(&quiet).is_empty());

    // 300 frames of 40 KB each: each cut to 4 KiB of text; what does not fit the
    // caller's queue of 64 is dropped at once (the tool is not slowed: it answers).
    let flood = host.send(
        "call_tool",
        json!({"name": "progress", "args": {"count": 300, "pad": 40000}, "progress": true}),
    );
    let done = host.wait_response(&flood, REQUEST_TIMEOUT);
    assert_eq!(done["data"]["content"][0]["text"], "progressed", "{done}");
    let seen = progress_of(&flood);
    assert!(!seen.is_empty() && seen.len() <= 300, "{}", seen.len());
    for e in &seen {
        let text = e["text"].as_str().unwrap();
        assert!(text.len() <= 4096 + " [cut]".len(), "{}", text.len());
        assert!(text.ends_with(" [cut]"), "{}", &text[..40]);
    }
    if seen.len() < 300 {
        let log = host.log("p");
        assert!(
            log.contains("tool_progress dropped: the caller is not reading it"),
            "{log}"
        );
    }
    host.shutdown();
}
