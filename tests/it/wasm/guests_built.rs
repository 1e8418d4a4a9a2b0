//! The test guests (tests/guests, built by the `zot-test-guests` crate) exist: two
//! components and a native stdio extension that speaks the protocol.

use serde_json::Value;
use std::io::{Read, Write};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;
use zot_test_guests::{COMMAND, COMMAND_NATIVE, REACTOR};

/// `\0asm`, then the component-model version and layer (a core module has `01 00 00 00`).
const COMPONENT_MAGIC: [u8; 8] = [0x00, 0x61, 0x73, 0x6d, 0x0d, 0x00, 0x01, 0x00];

#[test]
fn the_guests_are_components() {
    for path in [REACTOR, COMMAND] {
        let mut head = [0u8; 8];
        std::fs::File::open(path)
            .and_then(|mut f| f.read_exact(&mut head))
            .unwrap_or_else(|e| panic!("{path}: {e}"));
        assert_eq!(head, COMPONENT_MAGIC, "{path} is not a component");
    }
    assert!(
        std::path::Path::new(COMMAND_NATIVE).is_file(),
        "{COMMAND_NATIVE} is missing"
    );
}

#[test]
fn the_native_command_guest_speaks_the_protocol() {
    let mut child = Command::new(COMMAND_NATIVE)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{COMMAND_NATIVE}: {e}"));
    child
        .stdin
        .take()
        .unwrap()
        .write_all(
            b"{\"type\":\"hello_ack\",\"protocol_version\":1,\"zot_version\":\"0.1.0\"}\n\
              {\"type\":\"shutdown\"}\n",
        )
        .unwrap();

    // Read stdout and stderr to the end on another thread, so a full pipe cannot stall
    // the guest; give up after a while rather than hang the test run.
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || tx.send(child.wait_with_output()));
    let output = rx
        .recv_timeout(Duration::from_secs(20))
        .expect("the command guest did not exit after shutdown")
        .unwrap();
    assert!(output.status.success(), "{:?}", output.status);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("command started"), "stderr: {stderr}");

    let frames: Vec<Value> = String::from_utf8(output.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l:?}: {e}")))
        .collect();
    let types: Vec<&str> = frames.iter().filter_map(|f| f["type"].as_str()).collect();
    assert_eq!(types.first(), Some(&"hello"), "{types:?}");
    assert_eq!(frames[0]["name"], "guest");
    assert!(types.contains(&"ready"), "{types:?}");
    assert!(
        frames.iter().any(|f| f["type"] == "notify"
            && f["message"]
                .as_str()
                .unwrap_or("")
                .starts_with("hello_ack ")),
        "{frames:?}"
    );
    assert_eq!(types.last(), Some(&"shutdown_ack"), "{types:?}");
}
