//! The `zot-ext` SDK over its real transports, natively and in the sandbox, with the
//! probe extension `tests/guests/sdk-probe`: what the examples do not show.

use crate::common::*;
use serde_json::{json, Value};
use std::time::{Duration, Instant};
use zot_test_guests::{SDK_PROBE, SDK_PROBE_NATIVE};

const NAME: &str = "sdk-probe";

fn manifests() -> [(&'static str, Value); 2] {
    [
        (
            "native",
            json!({"name": NAME, "version": "0.1.0", "exec": SDK_PROBE_NATIVE}),
        ),
        (
            "wasm",
            json!({"name": NAME, "version": "0.1.0", "wasm": SDK_PROBE}),
        ),
    ]
}

fn start(manifest: &Value) -> Host {
    let mut b = HostBuilder::new();
    // Installed: its data dir is `$ZOT_HOME/data/<name>`.
    b.global(NAME, manifest);
    b.arg("--provider").arg("p1");
    b.arg("--model").arg("m1");
    let host = b.start();
    host.set_event_filter(|v| v["type"] != "registry_changed");
    assert_eq!(host.ready(), vec![NAME.to_string()]);
    host
}

#[test]
fn a_running_tool_sees_tool_cancel_and_stops() {
    for (label, manifest) in manifests() {
        let host = start(&manifest);
        let asked = Instant::now();
        let r = host.request(
            "call_tool",
            json!({"name": "wait", "args": {"ms": 30000}, "timeout_ms": 300}),
        );
        assert_eq!(r["success"], false, "{label}: {r}");
        // The handler saw the cancel (it says so), long before its 30 s were up.
        let said = host.wait_notify(NAME, "cancelled ");
        let took = asked.elapsed();
        println!("{label}: {said} {took:?} after the call");
        assert!(took < Duration::from_secs(10), "{label}: {took:?}");
        // Its result was dropped, and it goes on answering.
        let d = host.call_tool("wait", json!({"ms": 1}));
        assert_eq!(first_text(&d), "waited 1 ms", "{label}: {d}");
        assert_eq!(host.entry(NAME)["state"], "ready");
        host.shutdown();
    }
}

/// Frames that arrive while a tool runs (and that the SDK reads ahead while polling for
/// a cancel) are handled after it, in order; in the sandbox, reading them ahead does not
/// shorten the running call's deadline to theirs (one second).
#[test]
fn frames_read_ahead_during_a_call_are_handled_after_it() {
    for (label, manifest) in manifests() {
        let host = start(&manifest);
        let d = std::thread::scope(|scope| {
            let caller = scope.spawn(|| host.call_tool("wait", json!({"ms": 2500})));
            std::thread::sleep(Duration::from_millis(300));
            for stop in ["a", "b", "c"] {
                host.ok(
                    "emit",
                    json!({"event": {"event": "turn_end", "stop": stop}}),
                );
            }
            caller.join().unwrap()
        });
        assert_eq!(
            first_text(&d),
            "waited 2500 ms",
            "{label}: {d}{}",
            host.diagnostics()
        );
        for stop in ["a", "b", "c"] {
            host.wait_notify(NAME, &format!("event turn_end \"{stop}\""));
        }
        assert_eq!(host.entry(NAME)["state"], "ready", "{label}");
        host.shutdown();
    }
}

#[test]
fn handlers_see_the_hello_ack() {
    for (label, manifest) in manifests() {
        let host = start(&manifest);
        let info: Value =
            serde_json::from_str(&first_text(&host.call_tool("host", json!({})))).unwrap();
        assert_eq!(info["protocol_version"], 1, "{label}: {info}");
        assert_eq!(
            (info["provider"].as_str(), info["model"].as_str()),
            (Some("p1"), Some("m1"))
        );
        let data_dir = info["data_dir"].as_str().unwrap();
        if label == "wasm" {
            assert_eq!(data_dir, "/data");
        } else {
            assert_eq!(
                std::path::Path::new(data_dir),
                host.home.join("data").join(NAME)
            );
        }
        host.shutdown();
    }
}

/// A panicking handler: natively the call fails with an error result and the extension
/// goes on; in the sandbox a panic aborts the component, the call fails at once and the
/// host reports the exit (docs/writing-extensions.md says so).
#[test]
fn a_panicking_handler_fails_its_call() {
    let [(_, native), (_, wasm)] = manifests();
    let host = start(&native);
    let d = host.call_tool("panic", json!({}));
    assert_eq!(d["is_error"], true, "{d}");
    assert_eq!(first_text(&d), "tool panic failed");
    assert!(host.log(NAME).contains("the probe panicked on purpose"));
    assert_eq!(host.entry(NAME)["state"], "ready");
    host.shutdown();

    let host = start(&wasm);
    let asked = Instant::now();
    let r = host.request("call_tool", json!({"name": "panic", "args": {}}));
    assert_eq!(r["success"], false, "{r}");
    assert!(asked.elapsed() < Duration::from_secs(10));
    host.wait_event("extension_exited", EVENT_TIMEOUT, |v| {
        v["type"] == "extension_exited" && v["extension"] == NAME
    });
    assert!(host.log(NAME).contains("the probe panicked on purpose"));
    host.shutdown();
}
