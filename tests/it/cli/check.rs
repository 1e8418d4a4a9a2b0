//! `zot ext check`: one extension loaded alone, reported, and judged.

use crate::common::{hello_py_example, inline_py, py_manifest, write_manifest, TempDir};
use serde_json::{json, Value};
use std::path::Path;
use std::process::{Command, Output};

fn check(dir: &Path, home: &TempDir, json: bool) -> Output {
    check_with(dir, home, if json { &["--json"] } else { &[] })
}

/// `zot ext check <target> <extra>…` in `home` (also its working directory), with
/// Python's stdout buffered as it is by default.
fn check_with(target: &Path, home: &TempDir, extra: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_zot"))
        .args(["ext", "check"])
        .arg(target)
        .args(extra)
        .env("ZOT_HOME", home.path())
        .env_remove("PYTHONUNBUFFERED")
        .current_dir(home.path())
        .output()
        .expect("zot runs")
}

fn violations(r: &Value) -> Vec<String> {
    r["violations"]
        .as_array()
        .unwrap_or_else(|| panic!("no violations list: {r}"))
        .iter()
        .map(|v| v.as_str().unwrap().to_string())
        .collect()
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
    // Issue 36: the header has no empty version, and the timings end in one column,
    // their text after it.
    assert!(text.starts_with("hello-py 1.0.0 (stdio) at "), "{text}");
    let ends: Vec<usize> = ["  hello ", "  ready ", "  shutdown "]
        .iter()
        .map(|row| {
            let line = text.lines().find(|l| l.starts_with(row)).unwrap();
            line.find(" ms  ").unwrap_or_else(|| panic!("{line}"))
        })
        .collect();
    assert!(ends.iter().all(|&e| e == ends[0]), "{ends:?}: {text}");

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

    // Issue 36: each violation is said once, in the list; the log's tail above it does
    // not repeat it (the log keeps it).
    let out = check(&dir, &home, false);
    let text = String::from_utf8_lossy(&out.stdout);
    let first = r["violations"][0].as_str().unwrap().to_string();
    assert_eq!(
        text.matches(first.as_str()).count(),
        1,
        "{first} once in:\n{text}"
    );
    let log = std::fs::read_to_string(home.path().join("logs/ext-noisy.log")).unwrap();
    assert!(log.contains(&first), "{log}");
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
    // The test reactor's hello names it "guest".
    let dir = write_manifest(
        &home.path().join("comp"),
        &serde_json::json!({"name": "guest", "wasm": zot_test_guests::REACTOR,
                            "permissions": {"env": ["HOME"]}}),
    );
    let r = report(&check(&dir, &home, true));
    // A fresh $ZOT_HOME has nothing cached: compiling is a step of its own.
    assert_eq!(r["compile_by"], "compiled", "{r}");
    assert!(r["compile_ms"].as_f64().is_some(), "{r}");
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
    assert_eq!(r["violations"], serde_json::json!([]), "{r}");
}

#[test]
fn a_classic_extension_has_no_compile_step() {
    let home = TempDir::new("check-home");
    let r = report(&check(&hello_py_example(), &home, true));
    assert_eq!(r["compile_ms"], Value::Null, "{r}");
    assert_eq!(r["compile_by"], Value::Null, "{r}");
    // A list, always; on a busy machine Python may start slowly enough for a warning.
    let warnings = r["warnings"].as_array().expect("warnings is a list");
    assert!(
        warnings
            .iter()
            .all(|w| w.as_str().is_some_and(|w| w.starts_with("slow start:"))),
        "{r}"
    );
    assert_eq!(
        r.get("log_tail"),
        None,
        "only a failed check shows the log: {r}"
    );
}

#[test]
fn a_hello_later_than_the_ready_wait_passes_with_a_warning_naming_its_time() {
    let home = TempDir::new("check-home");
    let dir = write_manifest(
        &home.path().join("slow"),
        &py_manifest("slow", &["--delay-ms", "5000"]),
    );
    let out = check(&dir, &home, true);
    let r = report(&out);
    assert!(out.status.success(), "{r}");
    assert_eq!(r["violations"], json!([]), "{r}");
    let hello_ms = r["hello_ms"].as_f64().unwrap();
    assert!(hello_ms >= 5000.0, "it slept 5 s before its hello: {r}");
    let warnings = r["warnings"].as_array().unwrap();
    assert_eq!(warnings.len(), 1, "{r}");
    let warning = warnings[0].as_str().unwrap();
    let time = format!("hello after {:.1} s", hello_ms / 1000.0);
    assert!(warning.contains(&time), "{warning:?} should say {time:?}");
    assert!(warning.contains("ready wait (3s)"), "{warning}");
    assert_eq!(r["commands"][0]["name"], "py-echo", "{r}");
}

#[test]
fn no_hello_within_wait_fails_with_a_hint() {
    let home = TempDir::new("check-home");
    let dir = write_manifest(
        &home.path().join("mute"),
        &py_manifest("mute", &["--mode", "nohello"]),
    );
    let out = check_with(&dir, &home, &["--wait", "2s"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(!out.status.success(), "{text}");
    assert!(text.contains("  hello              -  never\n"), "{text}");
    assert!(
        text.contains("no hello within --wait (2s): is stdout flushed"),
        "{text}"
    );
}

#[test]
fn a_hello_printed_without_flushing_is_not_seen_and_the_hint_says_why() {
    let home = TempDir::new("check-home");
    let hello = r#"{"type":"hello","name":"unflushed","version":"0.1.0","capabilities":[]}"#;
    let script = format!("import sys\nprint({hello:?})\nsys.stdin.read()\n");
    let dir = write_manifest(
        &home.path().join("unflushed"),
        &inline_py("unflushed", &script),
    );
    let out = check_with(&dir, &home, &["--wait", "2s", "--json"]);
    let r = report(&out);
    assert!(!out.status.success(), "{r}");
    assert_eq!(r["hello"], Value::Null, "{r}");
    let v = violations(&r);
    assert!(v.iter().any(|v| v.contains("is stdout flushed")), "{v:?}");
}

#[test]
fn a_crash_at_start_shows_this_runs_traceback() {
    let home = TempDir::new("check-home");
    let log = home.path().join("logs/ext-crashy.log");
    std::fs::create_dir_all(log.parent().unwrap()).unwrap();
    std::fs::write(&log, "a line from an earlier run\n").unwrap();
    let script = "import sys\nsys.stderr.write('loading config\\n')\n\
                  raise RuntimeError('boom at start')\n";
    let dir = write_manifest(&home.path().join("crashy"), &inline_py("crashy", script));
    let out = check(&dir, &home, false);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(!out.status.success(), "{text}");
    assert!(text.contains("exited while starting"), "{text}");
    // Each line of its stderr, marked as the extension's in the log.
    for shown in [
        "[stderr] loading config",
        "[stderr] Traceback (most recent call last):",
        "[stderr] RuntimeError: boom at start",
    ] {
        assert!(text.contains(shown), "{shown:?} missing:\n{text}");
    }
    assert!(!text.contains("an earlier run"), "{text}");

    let r = report(&check(&dir, &home, true));
    let tail = r["log_tail"].as_str().unwrap_or_else(|| panic!("{r}"));
    assert!(tail.contains("RuntimeError: boom at start"), "{tail}");
    assert_eq!(
        tail.matches("RuntimeError: boom at start").count(),
        1,
        "only this run's traceback: {tail}"
    );
}

#[test]
fn a_hello_naming_another_extension_is_a_violation() {
    let home = TempDir::new("check-home");
    let dir = write_manifest(
        &home.path().join("named"),
        &py_manifest("named", &["--name", "other"]),
    );
    let out = check(&dir, &home, true);
    let r = report(&out);
    assert!(!out.status.success(), "{r}");
    assert!(
        violations(&r).contains(&r#"hello names it "other" but the manifest says "named""#.into()),
        "{r}"
    );
}

#[test]
fn a_bare_component_is_checked_with_nothing_granted_and_its_compile_time() {
    let home = TempDir::new("check-home");
    let wasm = Path::new(zot_test_guests::REACTOR);
    let r = report(&check(wasm, &home, true));
    assert_eq!(r["violations"], json!([]), "{r}");
    assert_eq!(r["name"], "guest", "named by its hello: {r}");
    assert_eq!(r["transport"], "wasm", "{r}");
    assert_eq!(r["dir"], json!(wasm), "{r}");
    assert_eq!(r["sandbox"]["granted"], Value::Null, "{r}");
    assert_eq!(r["sandbox"]["withheld"], json!([]), "{r}");
    assert_eq!(r["compile_by"], "compiled", "{r}");
    assert!(r["compile_ms"].as_f64().is_some(), "{r}");
    let left: Vec<_> = std::fs::read_dir(home.path().join("extensions"))
        .map(|d| d.filter_map(Result::ok).map(|e| e.file_name()).collect())
        .unwrap_or_default();
    assert!(left.is_empty(), "staging left behind: {left:?}");

    let out = check(wasm, &home, false);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("from the compilation cache"), "{text}");
}

/// Issue 36: a text file named as the component — bare or by a manifest — is a problem
/// before any frame naming the file, not a protocol violation; the problem the log's
/// tail would repeat is said once.
#[test]
fn a_text_file_named_as_the_component_is_a_problem_naming_the_file() {
    let home = TempDir::new("check-home");
    let bare = home.path().join("notes.wasm");
    std::fs::write(&bare, "not a component\n").unwrap();
    let dir = write_manifest(
        &home.path().join("t"),
        &json!({"name": "t", "version": "1.0.0", "wasm": "t.wasm"}),
    );
    std::fs::write(dir.join("t.wasm"), "hello\n").unwrap();
    for (target, file) in [(&bare, bare.clone()), (&dir, dir.join("t.wasm"))] {
        let out = check(target, &home, false);
        let text = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(1), "{text}");
        assert!(
            text.contains(&format!(
                "1 problem(s), before any frame:\n  - cannot compile {}: not a WebAssembly \
                 component (it is a text file)\n",
                file.display()
            )),
            "{text}"
        );
        assert!(!text.contains("protocol violation"), "{text}");
    }
}

/// Issue 36: a problem of several lines (a start's error and its hint) is not repeated
/// by the log's tail above the list.
#[test]
fn a_start_error_with_its_hint_is_said_once() {
    let home = TempDir::new("check-home");
    let dir = write_manifest(
        &home.path().join("u"),
        &json!({"name": "u", "version": "1.0.0", "exec": "./nope"}),
    );
    let out = check(&dir, &home, false);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains("1 problem(s), before any frame:"), "{text}");
    assert_eq!(text.matches("cannot start ").count(), 1, "{text}");
    assert_eq!(text.matches("hint: no file").count(), 1, "{text}");
}

#[test]
fn an_argument_that_is_no_path_nor_installed_name_is_refused_in_one_line() {
    let home = TempDir::new("check-home");
    let out = check_with(Path::new("no-such-extension"), &home, &[]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    assert!(
        stderr
            .starts_with("zot: check no-such-extension: no extension named \"no-such-extension\""),
        "{stderr}"
    );
    assert!(
        stderr
            .contains("(and it is not an extension directory, an extension.json or a .wasm file)"),
        "{stderr}"
    );
    let out = check_with(Path::new("not/a/name"), &home, &[]);
    assert_eq!(
        String::from_utf8_lossy(&out.stderr).trim(),
        "zot: check not/a/name: not an extension directory, an extension.json, a .wasm file \
         or the name of an installed extension",
    );
}

#[test]
fn an_installed_name_checks_the_copy_that_loads_unless_told() {
    let home = TempDir::new("check-home");
    let copy = |dir: &Path, version: &str| {
        let mut m = py_manifest("named", &["--name", "named"]);
        m["version"] = json!(version);
        write_manifest(&dir.join("named"), &m);
    };
    copy(&home.path().join(".zot/extensions"), "1.0.0-project");
    copy(&home.path().join("extensions"), "1.0.0-global");
    // Not trusted yet: the global copy is the one that loads, and the project's, asked
    // for, is not run; the report says how to trust it.
    let loads = check_with(Path::new("named"), &home, &["--json"]);
    assert!(loads.status.success());
    assert_eq!(report(&loads)["version"], "1.0.0-global");
    let untrusted = check_with(Path::new("named"), &home, &["--json", "--project"]);
    assert_eq!(untrusted.status.code(), Some(1));
    let r = report(&untrusted);
    assert!(
        r["untrusted"]["command"]
            .as_str()
            .is_some_and(|c| c.starts_with("zot ext trust '")),
        "{r}"
    );
    let trusted = Command::new(env!("CARGO_BIN_EXE_zot"))
        .args(["ext", "trust", "--yes"])
        .env("ZOT_HOME", home.path())
        .current_dir(home.path())
        .output()
        .expect("zot runs");
    assert!(trusted.status.success());
    let project = check_with(Path::new("named"), &home, &["--json"]);
    let stderr = String::from_utf8_lossy(&project.stderr);
    assert!(project.status.success(), "{stderr}");
    assert!(stderr.contains("checking the project copy at"), "{stderr}");
    assert_eq!(report(&project)["version"], "1.0.0-project");
    let global = check_with(Path::new("named"), &home, &["--json", "--global"]);
    let stderr = String::from_utf8_lossy(&global.stderr);
    assert!(global.status.success(), "{stderr}");
    assert!(stderr.contains("checking the global copy at"), "{stderr}");
    assert_eq!(report(&global)["version"], "1.0.0-global");
}

#[test]
fn a_start_using_more_than_half_the_ready_wait_is_warned_about() {
    let home = TempDir::new("check-home");
    let dir = write_manifest(
        &home.path().join("slowish"),
        &py_manifest("slowish", &["--delay-ms", "2000"]),
    );
    let out = check(&dir, &home, true);
    let r = report(&out);
    assert!(out.status.success(), "{r}");
    let warnings = r["warnings"].to_string();
    assert!(
        warnings.contains("more than half of zot host's ready wait (3s)")
            || warnings.contains("later than zot host's ready wait"),
        "{r}"
    );
}

#[test]
fn a_second_hello_and_a_tool_schema_that_is_no_object_are_violations() {
    let home = TempDir::new("check-home");
    let script = r#"import json, sys
def send(frame):
    sys.stdout.write(json.dumps(frame) + "\n")
    sys.stdout.flush()
send({"type": "hello", "name": "schemas", "version": "1"})
send({"type": "hello", "name": "impostor", "version": "2"})
for name, schema in [("text", "a string"), ("list", [1]), ("none", None)]:
    send({"type": "register_tool", "name": name, "description": "d", "schema": schema})
send({"type": "register_tool", "name": "good", "description": "d", "schema": {"type": "object"}})
send({"type": "ready"})
sys.stdin.read()
"#;
    let dir = write_manifest(&home.path().join("schemas"), &inline_py("schemas", script));
    let out = check(&dir, &home, true);
    let r = report(&out);
    assert!(!out.status.success(), "{r}");
    assert_eq!(r["hello"]["name"], "schemas", "the first hello stays: {r}");
    let tools: Vec<&str> = r["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(tools, ["good"], "{r}");
    let mut expected = vec!["sent hello twice; ignored the second".to_string()];
    for name in ["text", "list", "none"] {
        expected.push(format!(
            "refused tool {name:?}: its schema is not a JSON object"
        ));
    }
    assert_eq!(violations(&r), expected, "{r}");
}
