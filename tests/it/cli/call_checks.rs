//! What a new user trips over in `call`, `check` and `install --name` (issue 17): a
//! tool's arguments are checked against its schema before they are sent (`--no-validate`
//! sends them anyway), a tool whose extension crashes shows the end of its stderr, `check`
//! reports a crash once, and an extension installed under another name with `--name` is
//! checked, called and shown by that name. Every test drives the real `zot` binary and
//! real Python extensions.

use crate::common::*;
use serde_json::{json, Value};

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn arguments_that_do_not_fit_the_schema_are_not_sent() {
    let scratch = TempDir::new("callf-validate");
    let dir = weather(&scratch.path().join("wx"), "wx", "wx");
    let target = dir.to_str().unwrap();
    let home = scratch.path().join("home");

    let out = zot(
        &home,
        scratch.path(),
        &["call", target, "forecast", r#"{"city": 3}"#],
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert_eq!(
        stderr(&out),
        format!(
            "zot: call {target}: forecast: argument \"city\": expected a string, got 3\n\
             hint: make the arguments fit the tool's schema, or pass --no-validate to send \
             them as they are\n"
        )
    );
    assert!(out.stdout.is_empty(), "{}", text(&out));

    let out = zot(&home, scratch.path(), &["call", target, "forecast"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        stderr(&out).contains(": forecast: missing required field \"city\"\n"),
        "{}",
        stderr(&out)
    );

    // Several problems, one a line; a field name from outside is shown escaped.
    let args = json!({"city": "Oslo", "days": "two", "\u{1b}[2Jwipe": 1}).to_string();
    let out = zot(&home, scratch.path(), &["call", target, "forecast", &args]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let err = stderr(&out);
    assert!(
        err.contains("forecast: the arguments do not fit its schema:\n"),
        "{err}"
    );
    assert!(
        err.contains("\n  - argument \"days\": expected an integer, got \"two\"\n"),
        "{err}"
    );
    assert!(err.contains("unknown field"), "{err}");
    assert!(err.contains("\\x1b[2Jwipe"), "{err}");
    assert!(
        !err.contains('\u{1b}'),
        "no escape reaches the terminal: {err:?}"
    );
    assert_eq!(calls(&dir), Vec::<Value>::new(), "nothing was sent");

    // Arguments that fit are sent; --no-validate sends any.
    let out = zot(
        &home,
        scratch.path(),
        &["call", target, "forecast", r#"{"city": "Oslo"}"#],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let out = zot(
        &home,
        scratch.path(),
        &[
            "call",
            target,
            "forecast",
            r#"{"city": 3}"#,
            "--no-validate",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "{\"city\": 3}\n");
    assert_eq!(calls(&dir), [json!({"city": "Oslo"}), json!({"city": 3})]);
}

#[test]
fn a_schema_that_cannot_be_used_is_a_warning_and_the_call_goes_through() {
    let scratch = TempDir::new("callf-odd");
    let dir = weather(&scratch.path().join("wx"), "wx", "wx");
    let home = scratch.path().join("home");
    let out = zot(
        &home,
        scratch.path(),
        &["call", dir.to_str().unwrap(), "odd", r#"{"a": 1}"#],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let err = stderr(&out);
    assert!(
        err.contains("warning: odd: its schema cannot be used:"),
        "{err}"
    );
    assert!(err.contains("the arguments are sent unchecked"), "{err}");
    assert_eq!(calls(&dir), [json!({"a": 1})]);
}

#[test]
fn a_tool_whose_extension_crashes_shows_the_end_of_its_stderr() {
    let scratch = TempDir::new("callf-crash");
    let dir = weather(&scratch.path().join("wx"), "wx", "wx");
    let home = scratch.path().join("home");
    // A line of an earlier run is not this call's.
    std::fs::create_dir_all(home.join("logs")).unwrap();
    std::fs::write(home.join("logs/ext-wx.log"), "an earlier run\n").unwrap();
    let out = zot(
        &home,
        scratch.path(),
        &["call", dir.to_str().unwrap(), "boom"],
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let err = stderr(&out);
    assert!(
        err.contains("tool \"boom\" failed: extension \"wx\" exited (exited with status 3)"),
        "{err}"
    );
    assert!(err.contains("last lines:"), "{err}");
    assert!(err.contains("[stderr] about to fail\n"), "{err}");
    assert!(
        err.contains("[stderr] \\x1b[31mboom: the weather service is down\n"),
        "{err}"
    );
    assert!(
        !err.contains('\u{1b}'),
        "no escape reaches the terminal: {err:?}"
    );
    assert!(!err.contains("an earlier run"), "{err}");

    // An extension that exits at start shows its stderr too.
    let gone = write_manifest(
        &scratch.path().join("gone"),
        &json!({"name": "gone", "exec": "python3",
                "args": ["-c", "import sys; sys.stderr.write('no config here\\n'); sys.exit(1)"]}),
    );
    let out = zot(
        &home,
        scratch.path(),
        &["call", gone.to_str().unwrap(), "x"],
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        stderr(&out).contains("[stderr] no config here"),
        "{}",
        stderr(&out)
    );

    // A tool that is not there is no reason to show the log.
    let out = zot(
        &home,
        scratch.path(),
        &["call", dir.to_str().unwrap(), "nope"],
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(!stderr(&out).contains("last lines"), "{}", stderr(&out));
}

#[test]
fn check_reports_a_crash_once() {
    let scratch = TempDir::new("callf-check-crash");
    let home = scratch.path().join("home");
    let dir = write_manifest(
        &scratch.path().join("exits"),
        &py_manifest("exits", &["--mode", "exit"]),
    );
    let out = zot(
        &home,
        scratch.path(),
        &["check", dir.to_str().unwrap(), "--json"],
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let r: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        r["violations"],
        json!([
            "exited while starting: exited with status 2 (its last stderr line: \
                py-ext stderr: started exits)"
        ]),
        "{r}"
    );
    let out = zot(&home, scratch.path(), &["check", dir.to_str().unwrap()]);
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(shown.contains("\n1 protocol violation(s):\n"), "{shown}");
    let listed: Vec<&str> = shown.lines().filter(|l| l.starts_with("  - ")).collect();
    assert_eq!(
        listed,
        [
            "  - exited while starting: exited with status 2 (its last stderr line: py-ext \
          stderr: started exits)"
        ],
        "{shown}"
    );
}

#[test]
fn an_extension_installed_with_name_is_checked_called_and_shown_by_that_name() {
    let scratch = TempDir::new("callf-rename");
    let home = scratch.path().join("home");
    let src = weather(&scratch.path().join("src"), "wx", "wx");
    let out = zot(
        &home,
        scratch.path(),
        &["install", src.to_str().unwrap(), "--name", "wx2", "--yes"],
    );
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        text(&out).contains(
            "--name: installed as \"wx2\", the name zot uses for it (check, call, info, the \
             agent); the extension calls itself \"wx\", and its hello may still say so."
        ),
        "{}",
        text(&out)
    );

    let out = zot(&home, scratch.path(), &["check", "wx2", "--json"]);
    assert!(out.status.success(), "{}", text(&out));
    let r: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(r["name"], "wx2", "{r}");
    assert_eq!(r["violations"], json!([]), "{r}");
    assert_eq!(
        r["warnings"],
        json!([
            "hello names it \"wx\": it was installed as \"wx2\" with --name, the name zot uses"
        ]),
        "{r}"
    );
    let out = zot(
        &home,
        scratch.path(),
        &["call", "wx2", "forecast", r#"{"city": "Oslo"}"#, "--json"],
    );
    assert!(out.status.success(), "{}", text(&out));
    let r: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(r["extension"], "wx2", "{r}");
    let out = zot(&home, scratch.path(), &["info", "wx2", "--json"]);
    assert!(out.status.success(), "{}", text(&out));
    let r: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(r["provenance"]["rename"], "wx2", "{r}");

    // A folder that was not installed under another name is still held to its hello.
    let other = weather(&scratch.path().join("other"), "other", "wx");
    let out = zot(
        &home,
        scratch.path(),
        &["check", other.to_str().unwrap(), "--json"],
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let r: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        r["violations"],
        json!(["hello names it \"wx\" but the manifest says \"other\""]),
        "{r}"
    );
}

/// The shell checks a tool's arguments as `call` does: arguments that do not fit are not
/// sent (the problem names its field), `call --no-validate` sends them as they are.
#[test]
fn the_shell_checks_arguments_against_the_schema_too() {
    let scratch = TempDir::new("callf-shell");
    let dir = weather(&scratch.path().join("wx"), "wx", "wx");
    let script = scratch.path().join("script.zot");
    std::fs::write(
        &script,
        "call forecast {\"city\": 3}\n\
         call --no-validate forecast {\"city\": 3}\n\
         call forecast {\"city\": \"Oslo\"}\n",
    )
    .unwrap();
    let home = scratch.path().join("home");
    let out = zot(
        &home,
        scratch.path(),
        &[
            "shell",
            "--only",
            "--ext",
            dir.to_str().unwrap(),
            "--script",
            script.to_str().unwrap(),
        ],
    );
    let said = text(&out);
    assert!(
        said.contains("error: forecast: argument \"city\": expected a string, got 3"),
        "{said}"
    );
    assert!(
        said.contains("call --no-validate"),
        "the hint names it: {said}"
    );
    assert_eq!(
        out.status.code(),
        Some(1),
        "a refused call fails the script: {said}"
    );
    assert_eq!(calls(&dir), [json!({"city": 3}), json!({"city": "Oslo"})]);
}

/// Issue 36: the sidecar checks a call's arguments against the tool's schema as `call`
/// does, naming each field in `problems`; `zot host --no-validate` sends them as they are.
#[test]
fn the_sidecar_refuses_arguments_that_do_not_fit_naming_each_field() {
    let scratch = TempDir::new("sidecar-validate");
    let dir = weather(&scratch.path().join("wx"), "wx", "wx");
    let mut b = HostBuilder::new();
    b.ext_path(&dir);
    let host = b.start();
    let refused = host.request(
        "call_tool",
        json!({"name": "forecast", "args": {"city": 3, "extra": true}}),
    );
    assert_eq!(refused["success"], false, "{refused}");
    let mut problems = refused["problems"].as_array().unwrap().clone();
    problems.sort_by_key(|p| p["field"].to_string());
    assert_eq!(
        problems,
        [
            json!({"field": "city", "message": "argument \"city\": expected a string, got 3"}),
            json!({"field": "extra",
                   "message": "unknown field \"extra\" (the schema allows no others)"}),
        ],
        "{refused}"
    );
    let error = refused["error"].as_str().unwrap();
    assert!(
        error.starts_with("tool \"forecast\": the arguments do not fit its schema: "),
        "{error}"
    );
    let missing = host.request("call_tool", json!({"name": "forecast"}));
    assert_eq!(
        missing["problems"],
        json!([{"field": "city", "message": "missing required field \"city\""}]),
        "{missing}"
    );
    host.ok(
        "call_tool",
        json!({"name": "forecast", "args": {"city": "Oslo"}}),
    );
    assert_eq!(
        calls(&dir),
        [json!({"city": "Oslo"})],
        "nothing else was sent"
    );
    drop(host);

    let mut b = HostBuilder::new();
    b.ext_path(&dir).arg("--no-validate");
    let host = b.start();
    let sent = host.ok(
        "call_tool",
        json!({"name": "forecast", "args": {"city": 3}}),
    );
    assert_eq!(sent["content"][0]["text"], "{\"city\": 3}", "{sent}");
    assert_eq!(calls(&dir), [json!({"city": "Oslo"}), json!({"city": 3})]);
}

/// Issue 36: the arguments may come from stdin (`-`), and `--arg` sets a field as text
/// (`key=text`) or as JSON (`key:=json`); a malformed one is refused before anything
/// starts.
#[test]
fn arguments_come_from_stdin_and_arg_flags() {
    use std::io::Write as _;
    let scratch = TempDir::new("callf-stdin");
    let dir = weather(&scratch.path().join("wx"), "wx", "wx");
    let target = dir.to_str().unwrap();
    let home = scratch.path().join("home");
    let run = |args: &[&str], stdin: &str| {
        let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_zot"))
            .args(["ext", "call", target, "forecast"])
            .args(args)
            .env("ZOT_HOME", &home)
            .current_dir(scratch.path())
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(stdin.as_bytes())
            .unwrap();
        child.wait_with_output().unwrap()
    };
    let out = run(&["-"], r#"{"city": "Oslo"}"#);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let out = run(
        &["-", "--arg", "days:=3", "--arg", "city=Bergen"],
        r#"{"city": "Oslo"}"#,
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let out = run(&["--arg", "city=a=b:=c"], "");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(
        calls(&dir),
        [
            json!({"city": "Oslo"}),
            json!({"city": "Bergen", "days": 3}),
            json!({"city": "a=b:=c"})
        ]
    );
    for (bad, said) in [
        ("city", "expected KEY=TEXT or KEY:=JSON"),
        ("days:=three", "the value after := is not JSON"),
        ("=x", "the key is empty"),
    ] {
        let out = run(&["--arg", bad], "");
        assert_eq!(out.status.code(), Some(2), "{}", text(&out));
        assert!(stderr(&out).contains(said), "{bad}: {}", stderr(&out));
    }
    assert_eq!(calls(&dir).len(), 3, "nothing more was sent");
}
