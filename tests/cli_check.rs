//! `zot ext check`: one extension loaded alone, reported, and judged.

mod common;

use common::{hello_py_example, py_manifest, write_manifest, TempDir};
use serde_json::Value;
use std::process::{Command, Output};

fn check(dir: &std::path::Path, home: &TempDir, json: bool) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_zot"));
    cmd.args(["ext", "check"])
        .arg(dir)
        .env("ZOT_HOME", home.path());
    if json {
        cmd.arg("--json");
    }
    cmd.output().expect("zot runs")
}

fn report(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}): {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

#[test]
fn the_quick_start_passes_and_its_command_and_timings_are_shown() {
    let home = TempDir::new("check-home");
    let out = check(&hello_py_example(), &home, false);
    let text = String::from_utf8_lossy(&out.stdout);
    println!("{text}");
    assert!(out.status.success(), "{text}");
    assert!(text.contains("/hellopy - say hi (python)"), "{text}");
    assert!(text.contains("silent for 250 ms"), "{text}");
    assert!(text.contains("ok: no protocol violations"), "{text}");

    let r = report(&check(&hello_py_example(), &home, true));
    assert_eq!(r["name"], "hello-py");
    assert_eq!(r["transport"], "stdio");
    assert_eq!(r["hello"]["version"], "1.0.0");
    assert_eq!(r["ready_by"], "silence");
    assert!(
        r["hello_ms"].as_f64().is_some() && r["ready_ms"].as_f64().is_some(),
        "{r}"
    );
    assert_eq!(r["commands"][0]["name"], "hellopy");
    assert_eq!(r["violations"], serde_json::json!([]));
}

#[test]
fn garbage_on_stdout_is_a_violation() {
    let home = TempDir::new("check-home");
    let dir = write_manifest(
        &home.path().join("noisy"),
        &py_manifest("noisy", &["--mode", "garbage"]),
    );
    let out = check(&dir, &home, true);
    let r = report(&out);
    assert!(!out.status.success(), "{r}");
    let violations = r["violations"].as_array().unwrap();
    assert!(
        violations
            .iter()
            .any(|v| v.as_str().unwrap().contains("malformed JSON")),
        "{r}"
    );
    // The extension itself still worked: it said hello and registered its tools.
    assert_eq!(r["hello"]["name"], "noisy");
    assert!(!r["tools"].as_array().unwrap().is_empty(), "{r}");
}

#[test]
fn an_extension_that_ignores_shutdown_is_a_violation() {
    let home = TempDir::new("check-home");
    let dir = write_manifest(
        &home.path().join("stubborn"),
        &py_manifest("stubborn", &["--mode", "stubborn"]),
    );
    let out = check(&dir, &home, true);
    let r = report(&out);
    assert!(!out.status.success(), "{r}");
    assert!(
        r["violations"]
            .as_array()
            .unwrap()
            .iter()
            .any(|v| v.as_str().unwrap().contains("stopped with SIG")),
        "{r}"
    );
}

#[test]
fn a_missing_manifest_is_reported() {
    let home = TempDir::new("check-home");
    let out = check(home.path(), &home, false);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(!out.status.success(), "{text}");
    assert!(text.contains("extension.json"), "{text}");
}

#[test]
fn a_component_is_checked_with_its_sandbox() {
    let home = TempDir::new("check-home");
    let dir = write_manifest(
        &home.path().join("comp"),
        &serde_json::json!({"name": "comp", "wasm": zot_test_guests::REACTOR,
                            "permissions": {"env": ["HOME"]}}),
    );
    let r = report(&check(&dir, &home, true));
    assert_eq!(r["transport"], "wasm", "{r}");
    assert_eq!(r["sandbox"]["component"], "reactor", "{r}");
    assert_eq!(
        r["sandbox"]["asked"]["env"],
        serde_json::json!(["HOME"]),
        "{r}"
    );
    assert_eq!(r["sandbox"]["granted"], serde_json::Value::Null, "{r}");
    assert_eq!(
        r["sandbox"]["withheld"],
        serde_json::json!(["env HOME: not granted"]),
        "{r}"
    );
    assert_eq!(r["sandbox"]["memory_mb"], 64, "{r}");
    assert_eq!(r["ready_by"], "frame", "{r}");
    // The guest names itself "guest": a warning, not a violation.
    assert_eq!(r["violations"], serde_json::json!([]), "{r}");
}
