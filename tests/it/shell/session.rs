//! `zot ext shell`: scripted sessions (the plain transcript of --script and piped stdin)
//! and, through a pseudo-terminal, the interactive line editor.

use crate::common::*;
use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// This module's helpers on a scratch [`crate::common::Layout`].
struct Shell;
type Layout = crate::common::Layout<Shell>;

impl Layout {
    /// An explicit Python extension named `name`.
    fn py(&self, name: &str, args: &[&str]) -> PathBuf {
        write_manifest(
            &self.root().join("exts").join(name),
            &py_manifest(name, args),
        )
    }

    /// The scenario reactor component as the directory extension `guest`, asking to read
    /// the project folder.
    fn guest(&self) -> PathBuf {
        let dir = write_manifest(
            &self.root().join("exts/guest"),
            &serde_json::json!({"name": "guest", "version": "0.1.0", "wasm": "guest.wasm",
                                "permissions": {"cwd": "read"}}),
        );
        std::fs::copy(reactor(), dir.join("guest.wasm")).unwrap();
        dir
    }

    /// `zot ext shell --zot-home H --cwd C <args>` with ZOT_HOME=H, NO_COLOR, in C.
    fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_zot"));
        cmd.args(["ext", "shell", "--zot-home"])
            .arg(self.home())
            .arg("--cwd")
            .arg(self.cwd())
            .args(args)
            .current_dir(self.cwd())
            .env("ZOT_HOME", self.home())
            .env("NO_COLOR", "1");
        cmd
    }

    /// Runs a script given on stdin; its output, within a deadline.
    fn pipe(&self, args: &[&str], script: &str) -> Output {
        let mut child = self
            .command(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start zot ext shell");
        child
            .stdin
            .take()
            .unwrap()
            .write_all(script.as_bytes())
            .unwrap();
        wait_output(child, Duration::from_secs(120))
    }
}

/// The output of `child`, killing it after `timeout`.
fn wait_output(mut child: Child, timeout: Duration) -> Output {
    let start = Instant::now();
    loop {
        if child.try_wait().unwrap().is_some() {
            return child.wait_with_output().unwrap();
        }
        if start.elapsed() > timeout {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!(
                "the shell did not end within {timeout:?}:\n{}\n{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn text(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The transcript's section for the verb line `> verb` (up to the next `> `).
fn section<'a>(transcript: &'a str, verb: &str) -> &'a str {
    let marker = format!("> {verb}\n");
    let start = transcript
        .find(&marker)
        .unwrap_or_else(|| panic!("no {marker:?} in:\n{transcript}"))
        + marker.len();
    let end = transcript[start..]
        .find("\n> ")
        .map_or(transcript.len(), |i| start + i + 1);
    &transcript[start..end]
}

fn assert_has(haystack: &str, needle: &str) {
    assert!(
        haystack.contains(needle),
        "expected {needle:?} in:\n{haystack}"
    );
}

fn reactor() -> &'static str {
    zot_test_guests::REACTOR
}

#[test]
fn a_script_runs_every_verb_and_prints_a_transcript() {
    let _serial = serial();
    let l = Layout::new("shell-verbs");
    let py = l.py("py", &[]);
    let guard = l.py("guard", &["--mode", "guard"]);
    let guest = l.guest();
    let save = l.root().join("saved");
    let script = r#"# every verb
help
list
tools
commands
/py-echo hello there
/guest-cmd prompt say hi
/guest-cmd insert some text
/guest-cmd panel
key char x
close
call echo {"a":1}
call fail
call big {"kind":"image","bytes":64}
call frames
intercept tool_call bash {"command":"rm -rf /"}
intercept tool_call rewrite_me {"a":1}
intercept turn_start
intercept assistant_message a secret plan
emit turn_end {"stop":"end_turn"}
turn echo {"x":1}
logs py 5
grant guest
grant guest --all
revoke guest
trust
reload
call echo {"after":"reload"}
teleport
quit
call echo {"never":"run"}
"#;
    let script_file = l.root().join("verbs.zsh");
    std::fs::write(&script_file, script).unwrap();
    let out = wait_output(
        l.command(&[
            "--ext",
            py.to_str().unwrap(),
            "--ext",
            guard.to_str().unwrap(),
            "--ext",
            guest.to_str().unwrap(),
            "--save",
            save.to_str().unwrap(),
            "--script",
            script_file.to_str().unwrap(),
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap(),
        Duration::from_secs(180),
    );
    let t = text(&out);
    // `teleport` failed: every verb ran, and the exit status says one failed.
    assert_eq!(out.status.code(), Some(1), "{t}");
    assert_has(&t, "loaded: py, guard, guest");
    assert_has(section(&t, "help"), "call <tool> [json]");
    let list = section(&t, "list");
    assert_has(list, "py 1.2.3 [explicit, stdio] ready");
    assert_has(list, "guest 0.1.0 [explicit, wasm] ready");
    assert_has(list, "  commands: guest-cmd");
    assert_has(
        section(&t, "tools"),
        "echo (py): py tool echo\n  schema: {\"type\":\"object\",\"properties\":{}}",
    );
    assert_has(section(&t, "commands"), "/py-echo (py): py command py-echo");
    for (verb, expected) in [
        ("/py-echo hello there", "/py-echo (py): display\n  display:\n    hello there\n"),
        ("/guest-cmd prompt say hi", "/guest-cmd (guest): prompt\n  prompt (the text that would be submitted):\n    say hi\n"),
        ("/guest-cmd insert some text", "  insert (into the input line):\n    some text\n"),
    ] {
        assert_has(section(&t, verb), expected);
    }
    let panel = section(&t, "/guest-cmd panel");
    assert_has(panel, "/guest-cmd (guest): open_panel");
    assert_has(panel, "  ┌─ Guest panel ");
    assert_has(panel, "  └─");
    // The key reaches the panel's extension, which notifies it back.
    let key = section(&t, "key char x");
    assert_has(key, "key char sent to panel guest-panel (guest)");
    assert_has(&t, "* [guest] info: panel_key {\"type\":\"panel_key\",\"panel_id\":\"guest-panel\",\"key\":\"char\",\"text\":\"x\"}");
    assert_has(section(&t, "close"), "panel guest-panel (guest) closed");
    assert_has(&t, "* [guest] info: panel_close");

    for (verb, expected) in [
        (
            "call echo {\"a\":1}",
            "echo (py): ok\n  text:\n    {\"a\":1}\n",
        ),
        (
            "call fail",
            "fail (py): is_error\n  text:\n    failed on purpose\n",
        ),
    ] {
        assert_has(section(&t, verb), expected);
    }
    let saved = save.join("big-1.png");
    assert_has(
        section(&t, "call big {\"kind\":\"image\",\"bytes\":64}"),
        &format!(
            "  image: image/png (48 bytes), saved to {}",
            saved.display()
        ),
    );
    assert_eq!(std::fs::read(&saved).unwrap().len(), 48);
    // `frames` sends one of every one-way frame: they appear as they happen.
    let frames = section(&t, "call frames");
    assert_has(frames, "frames (guest): ok");
    for kind in [
        "submit: ",
        "submit_slash: /",
        "open_panel ",
        "panel_render ",
        "clear_notes",
    ] {
        assert_has(&t, &format!("* [guest] {kind}"));
    }

    for (verb, expected) in [
        ("intercept tool_call bash {\"command\":\"rm -rf /\"}", "intercept tool_call:\n  1. guard: block: refused: matches danger pattern \"rm -rf\"\n  verdict: block: refused"),
        ("intercept tool_call rewrite_me {\"a\":1}", "  1. guard: allow, modified_args {\"a\":1,\"rewritten\":true}\n  2. guest: allow, modified_args {\"a\":1,\"rewritten\":true,\"guest\":true}\n"),
        ("intercept turn_start", "  1. guard: allow\n  2. guest: allow\n  verdict: allow\n"),
        ("intercept assistant_message a secret plan", "verdict: allow, replace_text \"a [redacted] plan\""),
        ("emit turn_end {\"stop\":\"end_turn\"}", "emit turn_end: queued for 2 subscriber(s)"),
    ] {
        assert_has(section(&t, verb), expected);
    }
    assert_has(
        &t,
        "* [py] info: event {\"type\":\"event\",\"event\":\"turn_end\",\"stop\":\"end_turn\"}",
    );
    let turn = section(&t, "turn echo {\"x\":1}");
    for step in [
        "turn 1: session_start queued for 2",
        "intercept turn_start:",
        "turn 1: turn_start queued for 2",
        "intercept tool_call:",
        "turn 1: tool_call queued for 2",
        "echo (py): ok",
        "intercept assistant_message:",
        "assistant: echo said:",
        "turn 1: assistant_message queued for 2",
        "turn 1: turn_end queued for 2",
    ] {
        assert_has(turn, step);
    }
    assert_has(
        &t,
        "* [py] info: event {\"type\":\"event\",\"event\":\"tool_call\",\"tool_id\":\"turn-1\"",
    );
    assert_has(section(&t, "logs py 5"), "ext-py.log (last ");
    assert_has(
        section(&t, "grant guest"),
        "guest asks for:\n    - read and write its own data directory (seen as /data)\n    - read (not write) the project directory",
    );
    assert_has(section(&t, "grant guest --all"), "");
    assert_has(section(&t, "revoke guest"), "revoked every permission");
    assert_has(section(&t, "trust"), "Nothing to trust");
    let reload = section(&t, "reload");
    assert_has(reload, "stopped: py, guard, guest");
    assert_has(reload, "loaded: py, guard, guest");
    for (verb, expected) in [
        ("call echo {\"after\":\"reload\"}", "{\"after\":\"reload\"}"),
        (
            "teleport",
            "error: unknown verb \"teleport\": `help` lists them",
        ),
    ] {
        assert_has(section(&t, verb), expected);
    }
    // `quit` ends the script.
    assert!(!t.contains("never"), "{t}");
}

#[test]
fn piped_verbs_go_on_after_an_extension_crashes_and_a_component_misses_its_deadline() {
    let _serial = serial();
    let l = Layout::new("shell-crash");
    let py = l.py("py", &[]);
    let out = l.pipe(
        &[
            "--ext",
            py.to_str().unwrap(),
            "--ext",
            reactor(),
            "--tool-timeout-ms",
            "1500",
        ],
        "call crash\nlist\ncall spin\ncall echo_2 {\"still\":\"here\"}\n/guest-cmd still here\n",
    );
    let t = text(&out);
    assert_eq!(out.status.code(), Some(1), "{t}");
    // The crash is reported where it happens; the shell goes on.
    assert_has(
        section(&t, "call crash"),
        "error: tool \"crash\" failed: extension \"py\" exited (exited with status 3)",
    );
    assert_has(&t, "* [py] exited: exited with status 3");
    assert_has(section(&t, "list"), "py 1.2.3 [explicit, stdio] exited");
    // The component stuck in `spin` is stopped at its deadline.
    let spin = section(&t, "call spin");
    assert_has(spin, "error: ");
    assert_has(spin, "spin");
    assert_has(&t, "* [reactor] exited: deadline exceeded");
    // py is gone: its echo_2 is no more; the component too: its command says so.
    for (verb, expected) in [
        ("call echo_2 {\"still\":\"here\"}", "error: no tool named \"echo_2\""),
        ("/guest-cmd still here", "error: command \"/guest-cmd\" failed: extension \"reactor\" exited (deadline exceeded)"),
    ] {
        assert_has(section(&t, verb), expected);
    }
}

#[test]
fn sigint_during_a_call_cancels_it_and_the_script_goes_on() {
    let _serial = serial();
    let l = Layout::new("shell-sigint");
    let py = l.py("py", &[]);
    let mut child = l
        .command(&["--ext", py.to_str().unwrap()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let mut stdin = child.stdin.take().unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel::<String>();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { return };
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    let mut seen = Vec::new();
    let wait_for = |pred: &dyn Fn(&str) -> bool, seen: &mut Vec<String>| -> String {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match rx.recv_timeout(left) {
                Ok(line) => {
                    seen.push(line.clone());
                    if pred(&line) {
                        return line;
                    }
                }
                Err(_) => panic!("not seen in time; transcript:\n{}", seen.join("\n")),
            }
        }
    };
    stdin.write_all(b"call hang\n").unwrap();
    let hanging = wait_for(&|l| l.contains("info: hanging "), &mut seen);
    let id = hanging.rsplit(' ').next().unwrap().to_string();
    let status = Command::new("kill")
        .args(["-INT", &pid.to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    wait_for(&|l| l.starts_with("cancelled (ctrl-c)"), &mut seen);
    // The extension was told: tool_cancel for that very call.
    wait_for(&|l| l == format!("* [py] info: cancelled {id}"), &mut seen);
    stdin.write_all(b"call echo {\"next\":1}\n").unwrap();
    wait_for(
        &|l| l.contains("{\"next\":1}") && !l.starts_with('>'),
        &mut seen,
    );
    drop(stdin);
    let out = wait_output(child, Duration::from_secs(30));
    // A cancelled call is not a failure.
    assert_eq!(out.status.code(), Some(0), "{}", seen.join("\n"));
}

#[test]
fn untrusted_project_extensions_are_listed_with_the_trust_command() {
    let _serial = serial();
    let l = Layout::new("shell-trust");
    write_manifest(
        &l.cwd().join(".zot/extensions/lint"),
        &py_manifest("lint", &[]),
    );
    let out = l.pipe(
        &[],
        "list\ntrust\ntrust --yes\ncall echo {\"trusted\":true}\n",
    );
    let t = text(&out);
    assert_has(&t, "untrusted: lint (");
    assert_has(
        &t,
        "untrusted project extension (not trusted yet): run `zot ext trust '",
    );
    assert_has(section(&t, "list"), "lint 1.2.3 [project, stdio] untrusted");
    // Without a terminal, `trust` shows them and does not ask: it says to pass --yes.
    let trust = section(&t, "trust");
    assert_has(trust, "lint (");
    assert_has(trust, "pass --yes");
    // `trust --yes` trusts them and reloads: lint starts.
    let yes = section(&t, "trust --yes");
    assert_has(yes, "Trusted 1 extension(s)");
    assert_has(yes, "loaded: lint");
    assert_has(
        section(&t, "call echo {\"trusted\":true}"),
        "echo (lint): ok",
    );
    assert_eq!(out.status.code(), Some(1), "the first trust failed:\n{t}");
}

#[test]
fn the_terminal_session_completes_and_shows_notifications_as_they_come() {
    use expectrl::{Eof, Expect};
    let _serial = serial();
    let l = Layout::new("shell-pty");
    let py = l.py("py", &[]);
    let mut cmd = l.command(&["--ext", py.to_str().unwrap(), "--ext", reactor()]);
    cmd.env_remove("NO_COLOR");
    let mut p = Pty::spawn(cmd, l.home());
    p.expect("loaded: py").unwrap();
    p.expect("zot> ").unwrap();
    // Completion of a verb, then of a tool name.
    p.send("ca\t").unwrap();
    p.expect("zot> call ").unwrap();
    p.send("ec\t").unwrap();
    p.expect("zot> call echo ").unwrap();
    p.send("{\"via\":\"pty\"}\r").unwrap();
    p.expect("echo (py): ok").unwrap();
    p.expect("{\"via\":\"pty\"}").unwrap();
    // No JSON: an argument prompt, pre-filled from the schema (no required field: {}).
    p.send("call sleep\r").unwrap();
    p.expect("sleep args> {}").unwrap();
    p.send("\r").unwrap();
    p.expect("slept 1000").unwrap();
    // ctrl-c during a long call cancels it; the extension is told; the shell goes on.
    p.send("call hang {}\r").unwrap();
    p.expect("info: hanging ").unwrap();
    p.send("\x03").unwrap();
    p.expect("cancelled (ctrl-c)").unwrap();
    p.expect("info: cancelled ").unwrap();
    // A notification arrives while the prompt waits: it is printed above it.
    p.send("emit turn_start {\"step\":7}\r").unwrap();
    p.expect("emit turn_start: queued for ").unwrap();
    p.expect("[py] info: event {\"type\":\"event\",\"event\":\"turn_start\",\"step\":7}")
        .unwrap();
    // A panel: drawn in a box; `focus` sends what is typed to it as keys.
    let deadline = Instant::now() + Duration::from_secs(120);
    p.set_expect_timeout(Some(Duration::from_secs(2)));
    loop {
        // The component may still be compiling: its command comes when it is ready.
        p.send("commands\r").unwrap();
        if p.expect("/guest-cmd (reactor)").is_ok() {
            break;
        }
        assert!(Instant::now() < deadline, "the component never registered");
    }
    p.set_expect_timeout(Some(Duration::from_secs(30)));
    p.send("/guest-cmd panel\r").unwrap();
    p.expect("┌─ Guest panel").unwrap();
    p.expect("`focus` sends keys to it").unwrap();
    p.send("focus\r").unwrap();
    p.expect("[panel guest-panel] keys> ").unwrap();
    p.send("x\r").unwrap();
    p.expect("\"panel_id\":\"guest-panel\",\"key\":\"char\",\"text\":\"x\"")
        .unwrap();
    p.send("esc\r").unwrap();
    p.expect("\"key\":\"escape\"").unwrap();
    p.expect("zot [panel guest-panel]> ").unwrap();
    p.send("close\r").unwrap();
    p.expect("panel guest-panel (reactor) closed").unwrap();
    p.send("quit\r").unwrap();
    p.expect(Eof).unwrap();
    let history = std::fs::read_to_string(l.home().join("shell_history")).unwrap();
    assert_has(&history, "emit turn_start {\"step\":7}");
}

#[test]
fn on_a_terminal_untrusted_project_extensions_are_offered_for_trust() {
    use expectrl::{Eof, Expect};
    let _serial = serial();
    let l = Layout::new("shell-pty-trust");
    write_manifest(
        &l.cwd().join(".zot/extensions/lint"),
        &py_manifest("lint", &[]),
    );
    let mut p = Pty::spawn(l.command(&[]), l.home());
    p.expect("untrusted: lint (").unwrap();
    p.expect("Trust the project's extensions listed above? [y/N] ")
        .unwrap();
    p.send("y\r").unwrap();
    p.expect("Trusted 1 extension(s)").unwrap();
    p.expect("loaded: lint").unwrap();
    p.expect("zot> ").unwrap();
    p.send("call echo {\"trusted\":1}\r").unwrap();
    p.expect("echo (lint): ok").unwrap();
    p.send("quit\r").unwrap();
    p.expect(Eof).unwrap();
}

#[test]
fn on_a_terminal_calling_a_tool_that_does_not_exist_asks_for_no_arguments() {
    use expectrl::{Eof, Expect};
    let _serial = serial();
    let l = Layout::new("shell-pty-nosuch");
    let py = l.py("py", &[]);
    let mut p = Pty::spawn(l.command(&["--ext", py.to_str().unwrap()]), l.home());
    p.expect("loaded: py").unwrap();
    p.expect("zot> ").unwrap();
    p.send("call nosuch\r").unwrap();
    // The call says there is no such tool, with no argument prompt before it.
    let shown = p.expect("error: ").unwrap();
    let shown = String::from_utf8_lossy(shown.before()).into_owned();
    assert!(!shown.contains("args>"), "no argument prompt: {shown}");
    p.expect("nosuch").unwrap();
    p.expect("zot> ").unwrap();
    // The next line is a verb, not the arguments of a call.
    p.send("call echo {\"after\":1}\r").unwrap();
    p.expect("echo (py): ok").unwrap();
    p.send("quit\r").unwrap();
    p.expect(Eof).unwrap();
}

#[test]
fn a_script_whose_extension_does_not_load_fails() {
    let l = Layout::new("shell-bad-ext");
    let script = l.cwd().join("script.zot");
    std::fs::write(&script, "list\n").unwrap();
    let out = l
        .command(&["--ext", "/nowhere", "--script", script.to_str().unwrap()])
        .output()
        .unwrap();
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert!(said.contains("/nowhere"), "{said}");
}
