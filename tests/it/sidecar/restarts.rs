//! Restarts (issue 7/7): an extension that exits by itself is started again with
//! backoff, and the client is told (`extension_exited`, then `extension_restarted`); a
//! guard that fails closed blocks until it is back; the user's choice turns restarts
//! off for one extension.

use crate::common::*;
use serde_json::{json, Value};
use std::time::{Duration, Instant};

/// Waits for `extension_restarted` of `name`.
fn restarted(host: &Host, name: &str) -> Value {
    host.wait_event("extension_restarted", EVENT_TIMEOUT, |v| {
        v["type"] == "extension_restarted" && v["extension"] == name
    })
}

/// Waits until `list` says `name` is ready again.
fn ready_again(host: &Host, name: &str) {
    let deadline = Instant::now() + EVENT_TIMEOUT;
    while host.entry(name)["state"] != "ready" {
        assert!(Instant::now() < deadline, "{}", host.entry(name));
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A crash mid-call fails the call at once; the client is told it exited, then that it
/// was started again (after a wait of 0.5–1 s, the first restart); its tools answer
/// again and `list` counts the restart. A second crash waits longer.
#[test]
fn a_crashed_extension_is_started_again_and_the_client_is_told() {
    let mut b = HostBuilder::new();
    b.explicit("crashy", &py_manifest("crashy", &[]));
    let host = b.start();
    host.ready();
    let mut waits = Vec::new();
    for n in [1, 2] {
        let err = host.fails("call_tool", json!({"name": "crash", "args": {}}));
        assert!(err.contains("exited with status 3"), "{err}");
        // Told in order: its exit, then its restart.
        let life =
            |v: &Value| v["type"] == "extension_exited" || v["type"] == "extension_restarted";
        let deadline = Instant::now() + EVENT_TIMEOUT;
        let told = loop {
            let told = host.events(life);
            if told.len() == 2 || Instant::now() > deadline {
                break told;
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let types: Vec<&Value> = told.iter().map(|v| &v["type"]).collect();
        assert_eq!(
            types,
            ["extension_exited", "extension_restarted"],
            "{told:?}"
        );
        assert_eq!(told[0]["stopped"], false, "{told:?}");
        let again = restarted(&host, "crashy");
        host.wait_event("extension_exited", Duration::ZERO, |v| {
            v["type"] == "extension_exited"
        });
        assert_eq!(again["attempt"], n, "{again}");
        assert_eq!(again["after"], "exited with status 3", "{again}");
        waits.push(again["delay_ms"].as_u64().unwrap());
        ready_again(&host, "crashy");
        let d = host.call_tool("echo", json!({"back": n}));
        assert_eq!(d["extension"], "crashy", "{d}");
    }
    assert!((500..=1000).contains(&waits[0]), "{waits:?}");
    assert!((1000..=2000).contains(&waits[1]), "{waits:?}");
    let e = host.entry("crashy");
    assert_eq!(e["restarts"]["count"], 2, "{e}");
    assert_eq!(e["restarts"]["last_exit"], "exited with status 3", "{e}");
    assert_eq!(e["restarts"]["given_up"], false, "{e}");
    host.shutdown();
}

/// The user's choice in `settings.json` turns restarts off for one extension, and
/// `--no-restart` for all: the crashed one stays exited, said so in `list`.
#[test]
fn restarts_turned_off_leave_it_exited() {
    for (settings, flag) in [
        (r#"{"restart": {"crashy": false}}"#, None),
        ("{}", Some("--no-restart")),
    ] {
        let mut b = HostBuilder::new();
        b.explicit("crashy", &py_manifest("crashy", &[]));
        std::fs::create_dir_all(b.home()).unwrap();
        std::fs::write(b.home().join("settings.json"), settings).unwrap();
        if let Some(flag) = flag {
            b.arg(flag);
        }
        let host = b.start();
        host.ready();
        host.fails("call_tool", json!({"name": "crash", "args": {}}));
        host.wait_event("extension_exited", EVENT_TIMEOUT, |v| {
            v["type"] == "extension_exited"
        });
        let none = host.try_wait_event(Duration::from_secs(2), |v| {
            v["type"] == "extension_restarted"
        });
        assert!(none.is_none(), "{none:?}");
        let e = host.entry("crashy");
        assert_eq!(e["state"], "exited", "{e}");
        assert_eq!(e["restarts"]["count"], 0, "{e}");
        host.shutdown();
    }
}

/// A guard that fails closed and crashes on its first interception blocks every tool
/// call while it is down (exited, then starting again), and is asked again once it is
/// back: the restarted guard allows.
#[test]
fn a_fail_closed_guard_blocks_until_it_is_back() {
    let once = r#"import json, os, sys
def emit(o):
    sys.stdout.write(json.dumps(o) + "\n"); sys.stdout.flush()
emit({"type": "hello", "name": "once", "version": "1", "capabilities": ["events"]})
emit({"type": "subscribe", "events": [], "intercept": ["tool_call"]})
emit({"type": "ready"})
for line in sys.stdin:
    frame = json.loads(line)
    if frame["type"] == "event_intercept":
        if not os.path.exists("crashed"):
            open("crashed", "w").close()
            sys.exit(4)
        emit({"type": "event_intercept_response", "id": frame["id"]})
"#;
    let mut b = HostBuilder::new();
    let dir = b.explicit("once", &inline_py("once", once));
    let chose = zot(
        &b.home(),
        &b.cwd(),
        &["guard", dir.to_str().unwrap(), "--fail-closed"],
    );
    assert!(chose.status.success(), "{}", text(&chose));
    let host = b.start();
    assert_eq!(host.ready_event()["fail_closed"], json!(["once"]));
    let d = host.ok("intercept", bash_call("c1", "ls"));
    assert_eq!(d["block"], true, "{d}");
    assert!(
        d["reason"]
            .as_str()
            .unwrap()
            .starts_with("guard \"once\" fails closed: it exited"),
        "{d}"
    );
    // Down: blocked, whether it is still gone or starting again.
    let d = host.ok("intercept", bash_call("c2", "ls"));
    assert_eq!(d["block"], true, "{d}");
    restarted(&host, "once");
    ready_again(&host, "once");
    let d = host.ok("intercept", bash_call("c3", "ls"));
    assert_eq!(d["block"], false, "back, it allows: {d}");
    host.shutdown();
}
