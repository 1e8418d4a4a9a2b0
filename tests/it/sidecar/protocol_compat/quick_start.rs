//! The published quick start

use super::*;
use serde_json::json;

#[test]
fn quick_start_hello_py_answers_hellopy_with_prompt() {
    let mut b = HostBuilder::new();
    b.ext_path(&hello_py_example());
    let host = b.start();
    assert_eq!(host.ready(), vec!["hello-py".to_string()]);
    let data = host.ok("invoke_command", json!({"name": "hellopy", "args": ""}));
    assert_eq!(data["action"], "prompt", "{data}");
    assert_eq!(data["prompt"], QUICK_START_PROMPT, "{data}");
    assert_eq!(data["extension"], "hello-py", "{data}");
    let entry = host.entry("hello-py");
    assert_eq!(entry["state"], "ready", "{entry}");
    assert_eq!(entry["source"], "explicit", "{entry}");
    assert_eq!(str_list(&entry["commands"]), vec!["hellopy"], "{entry}");
    let took = host.shutdown();
    println!("shutdown of hello-py took {took:?}");
}

#[test]
fn quick_start_hello_py_installed_globally_is_discovered() {
    let b = HostBuilder::new();
    copy_dir(
        &hello_py_example(),
        &b.home().join("extensions").join("hello-py"),
    );
    let host = b.start();
    assert_eq!(host.ready(), vec!["hello-py".to_string()]);
    assert_eq!(host.entry("hello-py")["source"], "global");
    let data = host.ok(
        "invoke_command",
        json!({"name": "hellopy", "args": "ignored"}),
    );
    assert_eq!(data["prompt"], QUICK_START_PROMPT, "{data}");
    host.shutdown();
}

/// The quick start's session through `zot host` (loaded from the example's folder with
/// `--ext`; confined first by `zot ext confine` when `confined`): its command with and
/// without arguments, a shutdown it acknowledges; the transcript.
fn quick_start_session(label: &str, confined: bool) -> Vec<String> {
    let scratch = TempDir::new("hello-py");
    let mut b = HostBuilder::in_dir(scratch.path());
    let dir = hello_py_example();
    if confined {
        confine_dir(&b.home(), &b.cwd(), &dir, "hello-py");
    }
    b.ext_path(&dir);
    let host = b.start();
    host.set_event_filter(|v| v["type"] != "registry_changed");
    assert_eq!(host.ready(), ["hello-py"], "{}", host.diagnostics());
    let entry = host.entry("hello-py");
    assert_eq!(entry["state"], "ready", "{entry}");
    assert_eq!(entry["transport"], "stdio", "{entry}");
    let prompt = json!({"extension": "hello-py", "action": "prompt", "prompt": QUICK_START_PROMPT});
    let steps = vec![
        step("commands", json!({}), 0, json!({})),
        step(
            "invoke_command",
            json!({"name": "hellopy", "args": ""}),
            0,
            prompt.clone(),
        ),
        step(
            "invoke_command",
            json!({"name": "/hellopy", "args": "Ada"}),
            0,
            prompt,
        ),
        step("tools", json!({}), 0, json!({"tools": []})),
    ];
    let transcript = run_steps(&host, label, steps, |_, _, _| {});
    let log_path = host.home.join("logs/ext-hello-py.log");
    host.shutdown();
    let log = std::fs::read_to_string(&log_path).expect("the extension's log");
    assert!(log.contains("acknowledged shutdown"), "{log}");
    assert!(log.contains("exited with status 0"), "{log}");
    assert!(!log.contains("[stderr]"), "{log}");
    assert_eq!(
        log.contains("] info: confined: files: read only the program folders"),
        confined,
        "{log}"
    );
    transcript
}

/// Confined (Linux: `zot ext confine`), the published quick start answers the same session
/// as it does free, line for line. Its `#!/usr/bin/env python3` then finds `python3` on
/// the base `PATH` (`/usr/local/bin:/usr/bin:/bin`), not on the user's.
#[cfg(target_os = "linux")]
#[test]
fn quick_start_hello_py_answers_the_same_confined() {
    let free = quick_start_session("hello-py", false);
    let confined = quick_start_session("hello-py confined", true);
    assert_same_transcripts(("free", &free), &[("confined", &confined)]);
}
