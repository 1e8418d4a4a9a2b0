//! Running the `zot` binary once: `zot ext …` and `zot …` with a private `ZOT_HOME` and
//! working directory, stdin closed, and what it printed.

use std::path::Path;
use std::process::{Command, Output, Stdio};

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
