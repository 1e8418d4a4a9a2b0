//! Running the `zot` binary once: `zot ext …` and `zot …` with a private `ZOT_HOME` and
//! working directory, stdin closed, and what it printed; any program to its end within a
//! deadline ([`run_within`], [`exit_within`]).

use std::path::Path;
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::time::{Duration, Instant};

/// How `child` ended, if it did within `limit`; else it is killed and reaped, and `None`.
pub fn exit_within(child: &mut Child, limit: Duration) -> Option<ExitStatus> {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return Some(status);
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Runs `command` (its stdin empty) to its end, its output read while it runs so that a
/// long output never stalls it on a full pipe: `Ok` with what it printed, or, if it ran
/// past `limit` (then it was killed), `Err` with what it printed until then.
pub fn run_within(command: &mut Command, limit: Duration) -> Result<Output, Output> {
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {command:?}: {e}"));
    let read = |mut pipe: Box<dyn std::io::Read + Send>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            let _ = pipe.read_to_end(&mut bytes);
            bytes
        })
    };
    let out = read(Box::new(child.stdout.take().unwrap()));
    let err = read(Box::new(child.stderr.take().unwrap()));
    let ended = exit_within(&mut child, limit);
    let output = |status| Output {
        status,
        stdout: out.join().unwrap_or_default(),
        stderr: err.join().unwrap_or_default(),
    };
    match ended {
        Some(status) => Ok(output(status)),
        None => Err(output(child.wait().unwrap())),
    }
}

/// `zot ext <args>` with `ZOT_HOME=home`, in `cwd`, stdin closed (not a terminal).
pub fn zot(home: &Path, cwd: &Path, args: &[&str]) -> Output {
    let with_ext: Vec<&str> = std::iter::once("ext").chain(args.iter().copied()).collect();
    zot_top(home, cwd, &with_ext)
}

/// What a run printed on stdout.
pub fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// What a run printed on stderr.
pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The run succeeded (else both its outputs are shown).
#[track_caller]
pub fn assert_ok(out: &Output) {
    assert!(
        out.status.success(),
        "failed: {}{}",
        stdout(out),
        stderr(out)
    );
}

/// `zot <args>` (not `zot ext`), with `ZOT_HOME=home`, in `cwd`, stdin closed.
pub fn zot_top(home: &Path, cwd: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_zot"))
        .args(args)
        .env("ZOT_HOME", home)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .output()
        .expect("zot runs")
}

/// Runs `git <args>` in `dir` (as a user named `t`); it must succeed.
pub fn git(dir: &Path, args: &[&str]) {
    let out = Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@t"])
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {}", text(&out));
}

/// What a command printed: its stdout, then its stderr.
pub fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// `zot ext confine <dir>` with `home`, from `cwd`: it says `<name> is confined`.
#[track_caller]
pub fn confine_dir(home: &Path, cwd: &Path, dir: &Path, name: &str) {
    let out = zot(home, cwd, &["confine", dir.to_str().unwrap()]);
    assert_ok(&out);
    assert!(
        stdout(&out).contains(&format!("{name} is confined")),
        "{}",
        text(&out)
    );
}
