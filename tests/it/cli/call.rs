//! `zot ext call` and `zot ext invoke`: one extension loaded alone for one request, its
//! answer printed, the exit status from the answer.

use crate::common::{py_manifest, write_manifest, TempDir};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// `zot <args>…` with `home` as `$ZOT_HOME` and working directory.
fn zot(home: &TempDir, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_zot"))
        .args(args)
        .env("ZOT_HOME", home.path())
        .current_dir(home.path())
        .output()
        .expect("zot runs")
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The Python test extension, named `py`, in `home/py`.
fn py(home: &TempDir) -> String {
    let dir = write_manifest(&home.path().join("py"), &py_manifest("py", &[]));
    dir.to_str().unwrap().to_string()
}

/// The test reactor (hello name `guest`) in `home/guest` with a manifest.
fn guest(home: &TempDir) -> String {
    let dir = write_manifest(
        &home.path().join("guest"),
        &json!({"name": "guest", "wasm": zot_test_guests::REACTOR}),
    );
    dir.to_str().unwrap().to_string()
}

/// Issue 37: a tool's `tool_progress` is said on stderr as it comes, on one line and
/// safe for a terminal; stdout has only the result.
#[test]
fn a_tools_progress_is_said_on_stderr() {
    let home = TempDir::new("call-progress");
    let dir = write_manifest(
        &home.path().join("p"),
        &py_manifest("p", &["--tools", "progress"]),
    );
    let dir = dir.to_str().unwrap();
    let out = zot(&home, &["ext", "call", dir, "progress", r#"{"count": 2}"#]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), "progressed\n");
    let said = stderr(&out);
    assert!(
        said.contains("progress: 1/2 step 1\nprogress: 2/2 step 2\n"),
        "{said}"
    );
}

#[test]
fn a_tools_text_is_printed_and_json_has_the_sidecars_shape() {
    let home = TempDir::new("call-home");
    let py = py(&home);
    let out = zot(&home, &["ext", "call", &py, "echo", r#"{"a": 1}"#]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), "{\"a\":1}\n");

    let out = zot(&home, &["ext", "call", &py, "echo", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let r: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        r,
        json!({"content": [{"type": "text", "text": "{}"}], "is_error": false,
               "extension": "py"}),
        "the arguments default to {{}}, and no id or name"
    );
}

#[test]
fn an_error_result_goes_to_stderr_and_exits_1() {
    let home = TempDir::new("call-home");
    let py = py(&home);
    let out = zot(&home, &["ext", "call", &py, "fail"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert_eq!(stdout(&out), "");
    assert!(
        stderr(&out).contains("error: failed on purpose"),
        "{}",
        stderr(&out)
    );
    let out = zot(&home, &["ext", "call", &py, "fail", "--json"]);
    assert_eq!(out.status.code(), Some(1));
    let r: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(r["is_error"], true, "{r}");
}

#[test]
fn what_cannot_be_called_exits_2_saying_why() {
    let home = TempDir::new("call-home");
    let py = py(&home);
    let out = zot(&home, &["ext", "call", &py, "nope"]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("no tool named \"nope\"; py has tools: big, crash, echo, fail"),
        "{err}"
    );
    for bad in ["{not json", "[1, 2]"] {
        let out = zot(&home, &["ext", "call", &py, "echo", bad]);
        assert_eq!(out.status.code(), Some(2), "{bad}");
        assert!(stderr(&out).contains("arguments"), "{}", stderr(&out));
        assert_eq!(stdout(&out), "");
    }
    let out = zot(
        &home,
        &[
            "ext",
            "call",
            &py,
            "sleep",
            r#"{"ms": 5000}"#,
            "--timeout-ms",
            "200",
        ],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("timed out"), "{}", stderr(&out));
    let exits = write_manifest(
        &home.path().join("exits"),
        &py_manifest("exits", &["--mode", "exit"]),
    );
    let out = zot(&home, &["ext", "call", exits.to_str().unwrap(), "echo"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("its log:"), "{}", stderr(&out));
}

#[test]
fn an_image_is_described_and_saved_with_save() {
    let home = TempDir::new("call-home");
    let py = py(&home);
    let args = r#"{"bytes": 4000, "kind": "image"}"#;
    let out = zot(&home, &["ext", "call", &py, "big", args]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), "[image: image/png, 3000 bytes]\n");

    let saved = home.path().join("out");
    let out = zot(
        &home,
        &[
            "ext",
            "call",
            &py,
            "big",
            args,
            "--save",
            saved.to_str().unwrap(),
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let file = saved.join("1.png");
    assert!(stdout(&out).contains(&format!("saved to {}", file.display())));
    assert_eq!(std::fs::metadata(&file).unwrap().len(), 3000);
}

#[test]
fn a_command_prints_what_it_displays() {
    let home = TempDir::new("call-home");
    let py = py(&home);
    let out = zot(&home, &["ext", "invoke", &py, "/py-echo", "hello", "world"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), "hello world\n");
    let out = zot(&home, &["ext", "invoke", &py, "nope"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("no command named \"/nope\"; py has commands: /py-echo"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_component_is_called_and_each_command_action_is_printed() {
    let home = TempDir::new("call-home");
    let guest = guest(&home);
    let out = zot(&home, &["ext", "call", &guest, "echo", r#"{"x": true}"#]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), "{\"x\":true}\n");

    let invoke = |args: &[&str]| {
        let mut all = vec!["ext", "invoke", &guest, "guest-cmd"];
        all.extend(args);
        zot(&home, &all)
    };
    for (args, expected) in [
        (&["prompt", "write", "tests"][..], "prompt: write tests\n"),
        (&["insert", "x"], "insert: x\n"),
        (&["just", "words"], "just words\n"),
        (&["noop"], ""),
    ] {
        let out = invoke(args);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}", stderr(&out));
        assert_eq!(stdout(&out), expected, "{args:?}");
    }
    let out = invoke(&["panel"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        stdout(&out),
        "┌─ Guest panel ─┐\n│ line one      │\n│ line two      │\n├───────────────┤\n\
         │ q to close    │\n└───────────────┘\n"
    );
    let out = invoke(&["error", "went wrong"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("error: went wrong"),
        "{}",
        stderr(&out)
    );

    let out = zot(
        &home,
        &["ext", "invoke", &guest, "/guest-cmd", "panel", "--json"],
    );
    let r: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(r["action"], "open_panel", "{r}");
    assert_eq!(r["open_panel"]["title"], "Guest panel", "{r}");
    assert_eq!(r["extension"], "guest", "{r}");
    assert_eq!(r.get("id"), None, "{r}");
}

#[test]
fn a_bare_component_is_called_and_leaves_nothing_behind() {
    let home = TempDir::new("call-home");
    let wasm = Path::new(zot_test_guests::REACTOR).to_str().unwrap();
    let out = zot(&home, &["ext", "call", wasm, "echo", r#"{"y": 2}"#]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), "{\"y\":2}\n");
    let left: Vec<PathBuf> = std::fs::read_dir(home.path().join("extensions"))
        .map(|d| d.filter_map(Result::ok).map(|e| e.path()).collect())
        .unwrap_or_default();
    assert!(left.is_empty(), "staging left behind: {left:?}");
}

#[test]
fn an_untrusted_project_copy_named_by_its_name_is_not_started() {
    let home = TempDir::new("call-home");
    write_manifest(
        &home.path().join(".zot/extensions/local"),
        &py_manifest("local", &[]),
    );
    for args in [
        &["ext", "call", "local", "echo"][..],
        &["ext", "invoke", "local", "/py-echo"],
    ] {
        let out = zot(&home, args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = stderr(&out);
        assert!(err.contains("untrusted project extension"), "{err}");
        assert!(err.contains("run `zot ext trust '"), "{err}");
        assert_eq!(stdout(&out), "");
    }
}

#[test]
fn completions_for_bash_and_zsh_know_the_ext_subcommands() {
    let home = TempDir::new("call-home");
    for shell in ["bash", "zsh"] {
        let out = zot(&home, &["completions", shell]);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        let script = stdout(&out);
        assert!(script.contains("ext"), "{shell}: {script}");
        assert!(script.contains("invoke"), "{shell}");
    }
    let out = zot(&home, &["completions", "tcsh"]);
    assert_eq!(
        out.status.code(),
        Some(2),
        "not a shell clap_complete knows"
    );
}

#[test]
fn the_man_page_is_roff() {
    let home = TempDir::new("call-home");
    let out = zot(&home, &["man"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let page = stdout(&out);
    assert!(
        page.contains(".TH zot 1") && page.contains(".SH NAME"),
        "{page}"
    );
    assert!(page.contains("completions"), "{page}");
    assert!(!page.contains("__compile"), "{page}");
}

#[test]
fn every_subcommands_help_has_examples() {
    let home = TempDir::new("call-home");
    // Every subcommand `zot ext --help` lists, so a new one cannot be forgotten.
    let listed = stdout(&zot(&home, &["ext", "--help"]));
    let ext: Vec<String> = listed
        .split_once("Commands:\n")
        .expect("zot ext --help lists its commands")
        .1
        .lines()
        .take_while(|l| l.starts_with("  "))
        .filter(|l| !l.starts_with("   "))
        .filter_map(|l| l.split_whitespace().next().map(String::from))
        .filter(|c| c != "help")
        .collect();
    assert!(ext.len() >= 18, "{listed}");
    let mut commands: Vec<Vec<&str>> = ext.iter().map(|c| vec!["ext", c.as_str()]).collect();
    commands.extend([vec!["host"], vec!["completions"], vec!["man"]]);
    for command in commands {
        let mut args = command.clone();
        args.push("--help");
        let out = zot(&home, &args);
        assert_eq!(out.status.code(), Some(0), "{command:?}");
        let help = stdout(&out);
        let examples = help
            .split_once("Examples:\n")
            .unwrap_or_else(|| panic!("{command:?} --help has no examples:\n{help}"))
            .1;
        let shown = format!("  zot {}", command.join(" "));
        let lines: Vec<&str> = examples.lines().filter(|l| !l.is_empty()).collect();
        assert!(
            lines.len() >= 2
                && lines
                    .iter()
                    .all(|l| l.starts_with(&shown) || l.starts_with("  printf ")),
            "{command:?}:\n{examples}"
        );
    }
}
