//! `zot ext dev`: a script runs while the test edits the extension's folder; the
//! transcript shows the reload, the new code's answer and its stderr, and a failed build
//! of a Rust crate leaves the old extension answering.

use crate::common::{serial, TempDir};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// How long a whole session may take.
const DEADLINE: Duration = Duration::from_secs(120);

/// A scratch folder with `home` (ZOT_HOME) and the Python scaffold `x` (`zot ext new`).
fn scaffold(tag: &str) -> (TempDir, PathBuf) {
    let dir = TempDir::new(tag);
    std::fs::create_dir_all(dir.path().join("home")).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_zot"))
        .args(["ext", "new", "x", "--lang", "python"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let ext = dir.path().join("x");
    (dir, ext)
}

/// Runs `zot ext dev <ext> --script` over `script`; once stdout shows `edit_after`, runs
/// `edit` (given the process id of `zot`). The transcript (stdout) and stderr, once the
/// session ended; asserts the script succeeded.
fn dev_session(
    dir: &Path,
    ext: &Path,
    script: &str,
    edit_after: &str,
    edit: impl FnOnce(u32),
) -> (String, String) {
    let (transcript, stderr, succeeded) = dev_run(dir, ext, script, edit_after, edit);
    assert!(succeeded, "{transcript}\n{stderr}");
    (transcript, stderr)
}

/// [`dev_session`], and whether the script succeeded.
fn dev_run(
    dir: &Path,
    ext: &Path,
    script: &str,
    edit_after: &str,
    edit: impl FnOnce(u32),
) -> (String, String, bool) {
    let script_path = dir.join("s.txt");
    std::fs::write(&script_path, script).unwrap();
    let home = dir.join("home");
    let mut child = Command::new(env!("CARGO_BIN_EXE_zot"))
        .args(["ext", "dev"])
        .arg(ext)
        .arg("--script")
        .arg(&script_path)
        .arg("--zot-home")
        .arg(&home)
        .arg("--cwd")
        .arg(dir)
        .current_dir(dir)
        .env("ZOT_HOME", &home)
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start zot ext dev");
    let (tx, rx) = mpsc::channel();
    let stdout = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { return };
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    let start = Instant::now();
    let mut transcript = String::new();
    let mut edit = Some(edit);
    loop {
        match rx.recv_timeout(Duration::from_millis(100)) {
            Ok(line) => {
                transcript.push_str(&line);
                transcript.push('\n');
                if line.contains(edit_after) {
                    if let Some(edit) = edit.take() {
                        edit(child.id());
                    }
                }
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
            Err(mpsc::RecvTimeoutError::Timeout) => {}
        }
        if start.elapsed() > DEADLINE {
            let _ = child.kill();
            panic!("zot ext dev did not end within {DEADLINE:?}:\n{transcript}");
        }
    }
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        edit.is_none(),
        "no {edit_after:?} in:\n{transcript}\n{stderr}"
    );
    (transcript, stderr, out.status.success())
}

/// Changes the scaffold's echo prefix to `prefix` and makes its tool log its arguments
/// on stderr.
fn edit_echo(main: &Path, prefix: &str) {
    let text = std::fs::read_to_string(main).unwrap();
    let edited = text
        .replace("\"echo: \" + text", &format!("\"{prefix}: \" + text"))
        .replace(
            "    text = (msg.get(\"args\") or {}).get(\"text\")\n",
            "    log(\"echo called with \" + repr(msg.get(\"args\")))\n    text = (msg.get(\"args\") or {}).get(\"text\")\n",
        );
    assert_ne!(
        edited, text,
        "the scaffold changed: edit_echo needs updating"
    );
    std::fs::write(main, edited).unwrap();
}

/// A call, then `wait reload` (no guess of how long a reload takes), then the call again.
const SCRIPT: &str =
    "call x_echo {\"text\": \"hi\"}\nwait reload 60\ncall x_echo {\"text\": \"hi\"}\n";

/// A transcript of [`SCRIPT`] in parts: before `wait reload`, after it (the reload's
/// lines, then the second call), and from the second call on.
fn parts<'t>(transcript: &'t str, shown: &str) -> (&'t str, &'t str, &'t str) {
    let (before, after) = transcript
        .split_once("> wait reload 60\n")
        .unwrap_or_else(|| panic!("{shown}"));
    let (_, second) = after
        .split_once("> call x_echo")
        .unwrap_or_else(|| panic!("{shown}"));
    (before, after, second)
}

#[test]
fn dev_reloads_the_extension_after_a_change_and_shows_its_stderr() {
    let _serial = serial();
    let (dir, ext) = scaffold("dev-reload");
    let main = ext.join("main.py");
    let (transcript, stderr) = dev_session(dir.path(), &ext, SCRIPT, "echo: hi", |_| {
        edit_echo(&main, "changed")
    });
    let shown = format!("{transcript}\n--- stderr:\n{stderr}");
    let (before, after, second) = parts(&transcript, &shown);
    assert!(before.contains("echo: hi"), "{shown}");
    assert!(
        after.contains("* reloaded x after a change to main.py\n"),
        "{shown}"
    );
    assert!(
        second.contains("changed: hi"),
        "the new code answers: {shown}"
    );
    assert!(!second.contains("echo: hi"), "{shown}");
    assert!(
        second.contains("* x stderr: echo called with {'text': 'hi'}"),
        "what the extension wrote to stderr is shown: {shown}"
    );
    // Only the one change was seen: one reload.
    assert_eq!(transcript.matches("* reloaded x").count(), 1, "{shown}");
    // Issue 36: what the start and the reload cause is not news — registrations that
    // end as they were, the old process's clean exit.
    assert!(!transcript.contains("registrations changed"), "{shown}");
    assert!(!transcript.contains("exited"), "{shown}");
}

/// Issue 36: a reload after which the extension provides other tools says which, once.
#[test]
fn a_reload_says_what_the_extension_provides_when_that_changed() {
    let _serial = serial();
    let (dir, ext) = scaffold("dev-provides");
    let main = ext.join("main.py");
    let script = "call x_echo {\"text\": \"hi\"}\nwait reload 60\n";
    let (transcript, stderr) = dev_session(dir.path(), &ext, script, "echo: hi", |_| {
        let text = std::fs::read_to_string(&main).unwrap();
        let ready = "    emit({\"type\": \"ready\"})\n";
        let more = "    emit({\"type\": \"register_tool\", \"name\": \"x_more\", \
                    \"description\": \"more\", \"schema\": {\"type\": \"object\"}})\n";
        let edited = text.replacen(ready, &format!("{more}{ready}"), 1);
        assert_ne!(
            edited, text,
            "the scaffold changed: this edit needs updating"
        );
        std::fs::write(&main, edited).unwrap();
    });
    let shown = format!("{transcript}\n--- stderr:\n{stderr}");
    assert_eq!(
        transcript
            .matches("* [x] now provides tools x_echo, x_more (were x_echo)\n")
            .count(),
        1,
        "{shown}"
    );
    assert!(!transcript.contains("registrations changed"), "{shown}");
}

#[test]
fn a_failed_build_is_reported_and_the_old_extension_keeps_answering() {
    let _serial = serial();
    let (dir, ext) = scaffold("dev-build");
    // A Cargo.toml makes it a Rust crate to build; this one fails at once.
    std::fs::write(ext.join("Cargo.toml"), "not a manifest [\n").unwrap();
    let main = ext.join("main.py");
    let (transcript, stderr, succeeded) = dev_run(dir.path(), &ext, SCRIPT, "echo: hi", |_| {
        edit_echo(&main, "changed")
    });
    let shown = format!("{transcript}\n--- stderr:\n{stderr}");
    // `wait reload` ends at the failed build, and fails the script.
    assert!(!succeeded, "{shown}");
    assert!(
        transcript.contains("error: the build failed: nothing was reloaded\n"),
        "{shown}"
    );
    // The first build, before the start, fails too: what is there starts.
    assert!(
        stderr.contains("building x: cargo build --release"),
        "{shown}"
    );
    assert!(stderr.contains("the build of x failed"), "{shown}");
    let (_, after, second) = parts(&transcript, &shown);
    assert!(
        after.contains("* main.py changed: building x: cargo build --release\n"),
        "{shown}"
    );
    assert!(
        after.contains("* the build of x failed (") && after.contains("it keeps running as it was"),
        "{shown}"
    );
    assert!(!after.contains("reloaded x"), "{shown}");
    assert!(second.contains("echo: hi"), "the old code answers: {shown}");
}

/// Issue 36: after a reload that broke the extension, a call says it is not running and
/// why (not "no tool named"), with where to look; `wait reload` outside `dev` says it
/// has nothing to wait for.
#[test]
fn a_call_after_a_reload_that_broke_the_extension_says_why() {
    let _serial = serial();
    let (dir, ext) = scaffold("dev-broken");
    let main = ext.join("main.py");
    let (transcript, stderr, succeeded) = dev_run(dir.path(), &ext, SCRIPT, "echo: hi", |_| {
        let text = std::fs::read_to_string(&main).unwrap();
        std::fs::write(&main, format!("raise SystemExit('no config here')\n{text}")).unwrap();
    });
    let shown = format!("{transcript}\n--- stderr:\n{stderr}");
    assert!(!succeeded, "the second call failed: {shown}");
    let (_, after, second) = parts(&transcript, &shown);
    assert!(
        after.contains("* reloaded x after a change to main.py\n"),
        "{shown}"
    );
    assert!(
        second.contains(
            "error: tool \"x_echo\" is not available: extension \"x\", which provided it, \
             is not running: "
        ),
        "{shown}"
    );
    assert!(!second.contains("no tool named"), "{shown}");
    assert!(
        second.contains("hint: `logs x` shows its log; fix it, then `reload`"),
        "{shown}"
    );

    // A plain shell has no watcher: `wait reload` fails at once, saying why.
    let script = dir.path().join("w.txt");
    std::fs::write(&script, "wait reload 600\n").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_zot"))
        .args(["ext", "shell", "--only", "--script"])
        .arg(&script)
        .env("ZOT_HOME", dir.path().join("home"))
        .current_dir(dir.path())
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert!(
        said.contains("error: `wait reload` is for `zot ext dev`: nothing here reloads by itself"),
        "{said}"
    );
}

/// A Rust crate (the `zot ext new --lang rust` scaffold), built with `CARGO_TARGET_DIR`
/// elsewhere: `dev` builds it before it starts, puts the binary where the manifest runs
/// it from, and after a change to `src/main.rs` rebuilds it, reloads it, and the new code
/// answers.
#[test]
fn dev_rebuilds_a_rust_crate_and_reloads_it() {
    rust_dev_session("rdev", false);
}

/// The same with `--wasm`: the component is rebuilt, put where the manifest names it,
/// and the sandboxed extension reloaded.
#[test]
fn dev_rebuilds_a_rust_component_and_reloads_it() {
    rust_dev_session("rdevw", true);
}

/// Scaffolds the Rust extension `name` (a component with `wasm`) and drives `zot ext dev`
/// over piped stdin, each verb sent once the one before it answered.
fn rust_dev_session(name: &str, wasm: bool) {
    let flags: &[&str] = if wasm { &["--wasm"] } else { &[] };
    let edit = Edit {
        file: "src/main.rs",
        from: "format!(\"echo: {text}\")",
        to: "format!(\"rebuilt: {text}\")",
    };
    let (_dir, ext) = dev_session_piped(name, "rust", flags, |_| {}, &edit);
    // Built into CARGO_TARGET_DIR, run from where the manifest says.
    let placed = if wasm {
        ext.join(format!("target/wasm32-wasip2/release/{name}.wasm"))
    } else {
        ext.join(format!("target/release/{name}"))
    };
    assert!(placed.is_file(), "{}", placed.display());
}

/// The TypeScript component scaffold: `zot ext dev --wasm` builds it with `npm run
/// build:wasm` (the pinned tools on `PATH`, the SDK linked as `npm install` links it),
/// and an edit of `src/main.ts` rebuilds the component and reloads it.
#[test]
fn dev_rebuilds_a_typescript_component_and_reloads_it() {
    let edit = Edit {
        file: "src/main.ts",
        from: "`echo: ${args.text}`",
        to: "`rebuilt: ${args.text}`",
    };
    let (_dir, ext) = dev_session_piped(
        "tsdevw",
        "typescript",
        &["--wasm"],
        |ext| {
            let scope = ext.join("node_modules/@zot");
            std::fs::create_dir_all(&scope).unwrap();
            std::os::unix::fs::symlink(
                crate::common::workspace().join("guest-sdk/ts"),
                scope.join("ext"),
            )
            .unwrap();
        },
        &edit,
    );
    assert!(ext.join("tsdevw.wasm").is_file());
}

/// A change `zot ext dev` must pick up: `from` becomes `to` in `file`.
struct Edit {
    file: &'static str,
    from: &'static str,
    to: &'static str,
}

/// Scaffolds `name` in `lang` (with `flags`, also given to `dev`), runs `prepare` on its
/// folder, and drives `zot ext dev` over piped stdin: its tool answers `echo: hi`, `edit`
/// makes it answer `rebuilt: hi` after the reload. The scratch folder, and the
/// extension's in it.
fn dev_session_piped(
    name: &str,
    lang: &str,
    flags: &[&str],
    prepare: impl FnOnce(&Path),
    edit: &Edit,
) -> (TempDir, PathBuf) {
    let _serial = serial();
    let dir = TempDir::new(name);
    let home = dir.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let mut new = vec!["ext", "new", name, "--lang", lang];
    new.extend(flags);
    let mut dev = vec!["ext", "dev"];
    dev.extend(flags);
    let out = Command::new(env!("CARGO_BIN_EXE_zot"))
        .args(&new)
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let ext = dir.path().join(name);
    prepare(&ext);
    // The npm scripts find the pinned tools (installed by the ts_sdk tests' helper) first.
    let mut path = std::ffi::OsString::new();
    if lang != "rust" {
        path.push(crate::common::ts_tools());
        path.push(":");
    }
    path.push(std::env::var_os("PATH").unwrap_or_default());
    let mut child = Command::new(env!("CARGO_BIN_EXE_zot"))
        .args(&dev)
        .arg(&ext)
        .arg("--zot-home")
        .arg(&home)
        .arg("--cwd")
        .arg(dir.path())
        .current_dir(dir.path())
        .envs(crate::common::scaffold_build_env())
        .env("PATH", path)
        .env("ZOT_HOME", &home)
        .env("NO_COLOR", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start zot ext dev");
    let mut stdin = child.stdin.take().unwrap();
    let (tx, rx) = mpsc::channel();
    let stdout = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    let mut transcript = String::new();
    // The first line holding one of `needles`: which one, and the transcript so far.
    let mut wait_for_any = |needles: &[&str], within: Duration| {
        let deadline = Instant::now() + within;
        while Instant::now() < deadline {
            if let Ok(line) = rx.recv_timeout(Duration::from_millis(100)) {
                transcript.push_str(&line);
                transcript.push('\n');
                if let Some(i) = needles.iter().position(|n| line.contains(n)) {
                    return (i, transcript.clone());
                }
            }
        }
        panic!("none of {needles:?} within {within:?}:\n{transcript}");
    };
    use std::io::Write;
    let call = format!("call {}_echo {{\"text\": \"hi\"}}", name.replace('-', "_"));
    // The first build may compile the SDK's dependencies (shared with the `cli_new` tests).
    writeln!(stdin, "{call}").unwrap();
    wait_for_any(&["echo: hi"], Duration::from_secs(600));
    let main = ext.join(edit.file);
    let text = std::fs::read_to_string(&main).unwrap();
    let edited = text.replace(edit.from, edit.to);
    assert_ne!(
        edited, text,
        "the scaffold changed: this edit needs updating"
    );
    std::fs::write(&main, edited).unwrap();
    wait_for_any(
        &[&format!("reloaded {name} after a change to {}", edit.file)],
        Duration::from_secs(300),
    );
    // A component may still be compiling when it is reloaded (a busy machine): until it
    // is ready its tool is not there, and the call is made again.
    let mut attempts = 0;
    let transcript = loop {
        writeln!(stdin, "{call}").unwrap();
        let (got, transcript) = wait_for_any(
            &["rebuilt: hi", "is still starting"],
            Duration::from_secs(120),
        );
        attempts += 1;
        if got == 0 {
            break transcript;
        }
        assert!(
            attempts < 600,
            "not back after {attempts} calls:\n{transcript}"
        );
        std::thread::sleep(Duration::from_millis(500));
    };
    writeln!(stdin, "quit").unwrap();
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    // A script whose call failed exits 1 (docs/shell.md): so does this one where a call
    // found the component still compiling, and only then.
    assert_eq!(
        out.status.code(),
        Some(if attempts > 1 { 1 } else { 0 }),
        "{attempts} calls\n{transcript}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    (dir, ext)
}

/// `count` files of a line each under `dir`, a hundred a folder.
fn many_files(dir: &Path, count: usize) {
    for i in 0..count {
        let folder = dir.join(format!("d{}", i / 100));
        if i % 100 == 0 {
            std::fs::create_dir_all(&folder).unwrap();
        }
        std::fs::write(folder.join(format!("f{i}.js")), "x\n").unwrap();
    }
}

/// The CPU time (user and system) process `pid` has used, from `/proc/<pid>/stat`.
fn cpu_time(pid: u32) -> Duration {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    // The fields after the command name (in parentheses): utime and stime are the 12th
    // and 13th, in clock ticks.
    let fields: Vec<&str> = stat[stat.rfind(')').unwrap() + 2..].split(' ').collect();
    let ticks: u64 = fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap();
    // SAFETY: sysconf has no preconditions.
    let per_second = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as u64;
    Duration::from_millis(ticks * 1000 / per_second)
}

/// A change is told by inotify, not found by walking the folder: one save is one reload,
/// and an idle session over 20,000 files under `node_modules/` and 20,000 more in a
/// watched folder uses next to no CPU (before: the watched ones were walked every 300 ms).
#[test]
fn dev_is_told_of_a_change_and_a_large_tree_costs_it_no_cpu() {
    let _serial = serial();
    let (dir, ext) = scaffold("dev-inotify");
    many_files(&ext.join("node_modules"), 20_000);
    many_files(&ext.join("assets"), 20_000);
    let main = ext.join("main.py");
    let script = "sleep 9000\ncall x_echo {\"text\": \"hi\"}\n";
    let mut idle = None;
    let (transcript, stderr) = dev_session(dir.path(), &ext, script, "> sleep 9000", |pid| {
        let before = cpu_time(pid);
        std::thread::sleep(Duration::from_secs(5));
        idle = Some(cpu_time(pid) - before);
        edit_echo(&main, "changed");
    });
    let shown = format!("{transcript}\n--- stderr:\n{stderr}");
    let idle = idle.unwrap();
    eprintln!("zot ext dev, idle over 5 s: {idle:?} of CPU");
    assert!(idle < Duration::from_secs(1), "{idle:?}: {shown}");
    assert!(!transcript.contains("inotify cannot watch"), "{shown}");
    assert!(
        transcript.contains("* reloaded x after a change to main.py\n"),
        "{shown}"
    );
    assert_eq!(transcript.matches("* reloaded x").count(), 1, "{shown}");
    let (_, second) = transcript
        .split_once("> call x_echo")
        .unwrap_or_else(|| panic!("{shown}"));
    assert!(
        second.contains("changed: hi"),
        "the new code answers: {shown}"
    );
}

/// `dev` builds the kind of artifact the manifest runs, or refuses before building:
/// a Rust crate whose manifest runs a component, without --wasm (which once built the
/// native program and copied it over the component); --wasm of one that runs a program.
#[test]
fn dev_refuses_to_build_the_other_kind_than_the_manifest_runs() {
    let dir = TempDir::new("dev-kind");
    let crate_dir = dir.path().join("c");
    std::fs::create_dir_all(&crate_dir).unwrap();
    std::fs::write(crate_dir.join("Cargo.toml"), "[package]\nname = \"c\"\n").unwrap();
    let dev = |manifest: &str, args: &[&str]| {
        std::fs::write(crate_dir.join("extension.json"), manifest).unwrap();
        let out = Command::new(env!("CARGO_BIN_EXE_zot"))
            .args(["ext", "dev"])
            .arg(&crate_dir)
            .args(args)
            .env("ZOT_HOME", dir.path().join("home"))
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1), "{out:?}");
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let said = dev(r#"{"name":"c","wasm":"c.wasm"}"#, &[]);
    assert!(
        said.contains("zot: dev: the manifest runs a component (c.wasm): add --wasm to build it"),
        "{said}"
    );
    assert!(
        !said.contains("building c"),
        "built before refusing: {said}"
    );
    assert!(!crate_dir.join("c.wasm").exists());
    let said = dev(r#"{"name":"c","exec":"./target/release/c"}"#, &["--wasm"]);
    assert!(
        said.contains("--wasm builds a component, and the manifest runs a program"),
        "{said}"
    );
}
