//! Logs a person can trust: an extension's stderr is marked as its own and cannot pass
//! for the host, `zot ext logs` escapes control characters, and a flood of stderr is
//! held to the cap with one rotated file while the host stays responsive.

use crate::common::*;
use serde_json::{json, Value};
use std::io::{Read, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The log cap (`zot_host::manage::log::MAX_LOG_BYTES`).
const CAP: u64 = 10 << 20;

/// Writes to stderr what `$1` says (`forge` or `flood`), then runs the Python test
/// extension with the remaining arguments. The flood comes from a child process in the
/// extension's group, so the extension itself answers the host meanwhile.
const WRAPPER: &str = r#"
import os, subprocess, sys
if sys.argv[1] == "forge":
    sys.stderr.write("2026-01-01T00:00:00.000Z [zot] warn: forged\n\x1b[2J\x1b]0;title\x07\rmore\x9b\n")
    sys.stderr.flush()
else:
    subprocess.Popen([sys.executable, "-c", (
        "import sys\n"
        "chunk = (b'z' * 1023 + b'\\n') * 1024\n"
        "for _ in range(100): sys.stderr.buffer.write(chunk)\n"
        "sys.stderr.buffer.write(b'flood done\\n')\n"
        "sys.stderr.buffer.flush()\n")])
os.execv(sys.executable, [sys.executable] + sys.argv[2:])
"#;

/// A host with the extension `name` run through [`WRAPPER`] in `mode`, and the scratch
/// folder that outlives it (its `ZOT_HOME` is `home` there).
fn host_with(name: &str, mode: &str) -> (Host, TempDir) {
    let scratch = TempDir::new("logs");
    let mut b = HostBuilder::in_dir(scratch.path());
    let wrapper = b.scratch().join("wrapper.py");
    std::fs::write(&wrapper, WRAPPER).unwrap();
    let mut manifest = py_manifest(name, &[]);
    let mut args = vec![json!(wrapper), json!(mode), manifest["exec"].clone()];
    args.extend(manifest["args"].as_array().unwrap().iter().cloned());
    manifest["exec"] = json!("python3");
    manifest["args"] = Value::Array(args);
    b.explicit(name, &manifest);
    (b.start(), scratch)
}

/// `zot ext logs NAME [-f]` under `home`.
fn logs_command(home: &Path, name: &str) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_zot"));
    cmd.args(["ext", "logs", name]).env("ZOT_HOME", home);
    cmd
}

#[test]
fn stderr_is_marked_as_the_extensions_and_logs_escape_control_characters() {
    let _serial = serial();
    let (host, scratch) = host_with("forger", "forge");
    let home = scratch.path().join("home");
    host.ready();
    let (log, ..) = host.ping_until(Duration::from_secs(10), |h| {
        Some(h.log("forger")).filter(|l| l.contains("more"))
    });
    host.shutdown();
    println!("{log}");
    let forged = log.lines().find(|l| l.contains("forged")).unwrap();
    assert!(
        forged.ends_with("Z [stderr] 2026-01-01T00:00:00.000Z [zot] warn: forged"),
        "{forged}"
    );
    assert!(!log.lines().any(|l| l.starts_with("2026-01-01")), "{log}");
    assert!(
        log.contains("[stderr] \\x1b[2J\\x1b]0;title\\x07\\x0dmore\\u{9b}"),
        "{log}"
    );
    assert!(!log.contains('\x1b'), "a raw ESC in the log:\n{log}");

    // A log written some other way still prints escaped, in both modes.
    let path = home.join("logs/ext-forger.log");
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap();
    file.write_all(b"raw \x1b[31mred\r\n").unwrap();
    let out = logs_command(&home, "forger").output().unwrap();
    assert!(out.status.success());
    let printed = String::from_utf8_lossy(&out.stdout);
    assert!(!out.stdout.contains(&0x1b), "{printed}");
    assert!(printed.contains("[stderr] 2026-01-01T00:00:00.000Z [zot] warn: forged"));
    assert!(printed.ends_with("raw \\x1b[31mred\\x0d\n"), "{printed}");

    let mut follow = logs_command(&home, "forger")
        .arg("-f")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdout = follow.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut seen = Vec::new();
        let mut buf = [0; 4096];
        while let Ok(n @ 1..) = stdout.read(&mut buf) {
            seen.extend_from_slice(&buf[..n]);
            if seen.ends_with(b"red\\x0d\n") {
                break;
            }
        }
        seen
    });
    let deadline = Instant::now() + Duration::from_secs(10);
    while !reader.is_finished() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    follow.kill().unwrap();
    follow.wait().unwrap();
    let seen = reader.join().unwrap();
    assert!(seen.ends_with(b"raw \\x1b[31mred\\x0d\n"), "{seen:?}");
    assert!(!seen.contains(&0x1b));
}

#[test]
fn a_stderr_flood_is_held_to_the_cap_and_the_host_stays_responsive() {
    let _serial = serial();
    let (host, scratch) = host_with("flood", "flood");
    let home = scratch.path().join("home");
    host.ready();
    let (_, pings, worst) = host.ping_until(Duration::from_secs(120), |h| {
        h.log("flood").contains("[stderr] flood done").then_some(())
    });
    println!("{pings} pings answered during the flood, the slowest in {worst:?}");
    assert_eq!(host.call_tool("echo", json!({}))["extension"], "flood");
    host.shutdown();
    let logs = home.join("logs");
    let mut files: Vec<String> = std::fs::read_dir(&logs)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|f| f.starts_with("ext-flood"))
        .collect();
    files.sort();
    assert_eq!(files, ["ext-flood.log", "ext-flood.log.1"]);
    let size = |f: &str| std::fs::metadata(logs.join(f)).unwrap().len();
    let line = 2048;
    assert!(
        size("ext-flood.log") <= CAP + line,
        "{}",
        size("ext-flood.log")
    );
    assert!(
        size("ext-flood.log.1") <= CAP,
        "{}",
        size("ext-flood.log.1")
    );
}

/// Issue 36: `-n N` prints the last N lines, `--since` those written since a time ago or
/// a moment, `--json` each line in its parts; a bad `--since` is refused with what it
/// takes.
#[test]
fn logs_prints_the_last_lines_those_since_a_time_and_json() {
    let scratch = TempDir::new("logs-select");
    let home = scratch.path().join("home");
    std::fs::create_dir_all(home.join("logs")).unwrap();
    let now = humantime::format_rfc3339_millis(std::time::SystemTime::now()).to_string();
    std::fs::write(
        home.join("logs/ext-wx.log"),
        format!(
            "2020-01-01T00:00:00.000Z [zot] info: started python3 (stdio)\n\
             2020-01-01T00:00:01.000Z [stderr] old trouble: \x1b[31mred\n\
             {now} [zot] warn: not enforced: x\n\
             {now} [stderr] Traceback: line 3\n"
        ),
    )
    .unwrap();
    let run = |args: &[&str]| {
        let out = logs_command(&home, "wx").args(args).output().unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (code, out, _) = run(&["-n", "2"]);
    assert_eq!(code, Some(0));
    assert_eq!(
        out,
        format!("{now} [zot] warn: not enforced: x\n{now} [stderr] Traceback: line 3\n")
    );
    let (_, out, _) = run(&["--since", "1h"]);
    assert_eq!(out.lines().count(), 2, "{out}");
    let (_, out, _) = run(&["--since", "2020-01-01T00:00:01Z"]);
    assert_eq!(out.lines().count(), 3, "{out}");
    assert!(out.contains("old trouble: \\x1b[31mred"), "escaped: {out}");
    let (_, out, _) = run(&["--json", "-n", "3"]);
    let lines: Vec<Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(
        lines[0],
        json!({"time": "2020-01-01T00:00:01.000Z", "source": "stderr", "level": null,
               "message": "old trouble: \u{1b}[31mred"})
    );
    assert_eq!(
        lines[1],
        json!({"time": now, "source": "zot", "level": "warn", "message": "not enforced: x"})
    );
    let (code, _, err) = run(&["--since", "yesterday-ish"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("neither a time ago (10m, 2h) nor a moment"),
        "{err}"
    );
}
