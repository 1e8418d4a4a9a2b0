//! `zot ext list|install|remove|enable|disable|logs`, driving the real binary with a
//! private `ZOT_HOME` and working directory per test.

use crate::common::{assert_ok, git, stderr, stdout};
use serde_json::Value;
use std::fs;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// The scratch layout (`home`: ZOT_HOME, `cwd`, sources beside them) with this module's helpers.
struct CliExt;
type Env = crate::common::Layout<CliExt>;

impl Env {
    fn extensions(&self) -> PathBuf {
        self.home().join("extensions")
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_zot"));
        cmd.arg("ext")
            .args(args)
            .env("ZOT_HOME", self.home())
            .current_dir(self.root().join("cwd"))
            .stdin(Stdio::null());
        cmd
    }

    fn zot(&self, args: &[&str]) -> Output {
        self.command(args).output().unwrap()
    }

    /// `zot ext install <source> --yes`.
    fn install(&self, source: &str) -> Output {
        self.zot(&["install", source, "--yes"])
    }

    /// A source directory `root/<dir>` holding `extension.json` with `manifest`, and the
    /// `run.sh` that [`manifest`] names.
    fn source(&self, dir: &str, manifest: &str) -> PathBuf {
        let src = self.root().join(dir);
        fs::create_dir_all(&src).unwrap();
        fs::write(src.join("extension.json"), manifest).unwrap();
        fs::write(src.join("run.sh"), "#!/bin/sh\n").unwrap();
        src
    }

    /// A source folder holding the test component `hello.wasm` and `manifest`.
    fn component_source(&self, dir: &str, manifest: &str) -> PathBuf {
        let src = self.root().join(dir);
        fs::create_dir_all(&src).unwrap();
        fs::write(src.join("hello.wasm"), hello_wasm()).unwrap();
        fs::write(src.join("extension.json"), manifest).unwrap();
        src
    }

    /// Names in the extensions directory (staging folders included).
    fn installed(&self) -> Vec<String> {
        let mut names: Vec<String> = fs::read_dir(self.extensions())
            .map(|d| {
                d.map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default();
        names.sort();
        names
    }
}

fn manifest(name: &str) -> String {
    format!(r#"{{"name":"{name}","version":"1.2.3","exec":"./run.sh","description":"says hi"}}"#)
}

/// Exit 1 with one `zot: …` line on stderr (and a `hint: …` line, if any) containing
/// `needle`.
#[track_caller]
fn assert_fails_with(out: &Output, needle: &str) {
    let err = stderr(out);
    assert_eq!(
        out.status.code(),
        Some(1),
        "stdout: {}\nstderr: {err}",
        stdout(out)
    );
    assert!(err.starts_with("zot: "), "{err}");
    // One line, and a `hint:` line where there is an obvious next step.
    let lines: Vec<&str> = err.trim_end().lines().collect();
    assert!(
        lines.len() == 1 || lines.len() == 2 && lines[1].starts_with("hint: "),
        "{err}"
    );
    assert!(err.contains(needle), "expected {needle:?} in {err}");
}

fn file_url(path: &Path) -> String {
    format!("file://{}", path.display())
}

fn list_json(env: &Env) -> Vec<Value> {
    let out = env.zot(&["list", "--json"]);
    assert_ok(&out);
    serde_json::from_str::<Value>(&stdout(&out))
        .unwrap()
        .as_array()
        .unwrap()
        .clone()
}

#[test]
fn install_from_a_local_path() {
    let env = Env::new("cli-ext");
    let src = env.source("hello-src", &manifest("hello"));
    fs::write(src.join("run.sh"), "#!/bin/sh\n").unwrap();
    fs::create_dir_all(src.join("lib/.git")).unwrap();
    fs::write(src.join("lib/util.txt"), "util").unwrap();
    fs::create_dir_all(src.join(".git")).unwrap();
    fs::write(src.join(".git/HEAD"), "ref").unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(src.join("run.sh"), fs::Permissions::from_mode(0o755)).unwrap();
        std::os::unix::fs::symlink("lib/util.txt", src.join("link")).unwrap();
    }

    let out = env.install(src.to_str().unwrap());
    assert_ok(&out);
    let dest = env.extensions().join("hello");
    assert!(
        stdout(&out).contains("Installed hello 1.2.3"),
        "{}",
        stdout(&out)
    );
    assert!(stdout(&out).contains(&dest.display().to_string()));
    assert!(
        stderr(&out).contains("full user permissions"),
        "{}",
        stderr(&out)
    );
    assert_eq!(env.installed(), ["hello"]);
    assert_eq!(
        fs::read_to_string(dest.join("lib/util.txt")).unwrap(),
        "util"
    );
    assert!(!dest.join(".git").exists() && !dest.join("lib/.git").exists());
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = fs::metadata(dest.join("run.sh"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o111, 0o111, "exec bits kept");
        assert_eq!(
            fs::read_link(dest.join("link")).unwrap(),
            Path::new("lib/util.txt")
        );
    }
}

#[test]
fn install_from_a_git_repository() {
    let env = Env::new("cli-ext");
    let repo = env.source("some-repo", &manifest("from-git"));
    fs::write(repo.join("run.sh"), "#!/bin/sh\n").unwrap();
    git(&repo, &["init", "-q"]);
    git(&repo, &["add", "."]);
    git(&repo, &["commit", "-q", "-m", "init"]);

    let out = env.install(&file_url(&repo));
    assert_ok(&out);
    let dest = env.extensions().join("from-git");
    assert_eq!(env.installed(), ["from-git"], "named after the manifest");
    assert!(dest.join("run.sh").is_file());
    assert!(!dest.join(".git").exists());
}

#[test]
fn a_source_without_manifest_leaves_nothing_behind() {
    let env = Env::new("cli-ext");
    let dir = env.root().join("empty");
    fs::create_dir_all(&dir).unwrap();
    fs::write(dir.join("README"), "no manifest").unwrap();
    assert_fails_with(&env.install(dir.to_str().unwrap()), "no extension.json");
    assert_eq!(env.installed(), Vec::<String>::new());

    git(&dir, &["init", "-q"]);
    git(&dir, &["add", "."]);
    git(&dir, &["commit", "-q", "-m", "init"]);
    let out = env.install(&file_url(&dir));
    assert_fails_with(&out, "no extension.json");
    assert_eq!(env.installed(), Vec::<String>::new(), "staging rolled back");

    let bad = env.source("bad", r#"{"name":"bad"}"#);
    let out = env.install(bad.to_str().unwrap());
    assert_fails_with(
        &out,
        "field \"exec\" (a program to run) or \"wasm\" (a component) is required",
    );
    assert_eq!(env.installed(), Vec::<String>::new());

    let missing = env.root().join("missing.git");
    let out = env.install(&file_url(&missing));
    assert_fails_with(&out, "git clone failed");
    assert_eq!(env.installed(), Vec::<String>::new());
}

#[test]
fn an_existing_destination_is_refused() {
    let env = Env::new("cli-ext");
    let first = env.source("first", &manifest("dup"));
    assert_ok(&env.install(first.to_str().unwrap()));
    let second = env.source("second", &manifest("dup"));
    fs::write(second.join("marker"), "second").unwrap();
    let out = env.install(second.to_str().unwrap());
    assert_fails_with(&out, "already installed");
    assert!(stderr(&out).contains("--force"));
    assert_eq!(env.installed(), ["dup"]);
    assert!(!env.extensions().join("dup/marker").exists());
}

#[test]
fn a_manifest_name_escaping_the_folder_is_refused() {
    let env = Env::new("cli-ext");
    let src = env.source("evil", r#"{"name":"../evil","exec":"./x"}"#);
    assert_fails_with(&env.install(src.to_str().unwrap()), "\"name\"");
    assert_eq!(env.installed(), Vec::<String>::new());
    assert!(!env.home().join("evil").exists());
}

#[cfg(unix)]
#[test]
fn a_symlink_out_of_the_source_is_refused() {
    let env = Env::new("cli-ext");
    let src = env.source("linky", &manifest("linky"));
    std::os::unix::fs::symlink("/etc/passwd", src.join("passwd")).unwrap();
    let out = env.install(src.to_str().unwrap());
    assert_fails_with(&out, "symlink passwd -> /etc/passwd points outside");
    assert_eq!(env.installed(), Vec::<String>::new());

    fs::remove_file(src.join("passwd")).unwrap();
    std::os::unix::fs::symlink("../../etc", src.join("up")).unwrap();
    assert_fails_with(&env.install(src.to_str().unwrap()), "up -> ../../etc");
    assert_eq!(env.installed(), Vec::<String>::new());
}

#[test]
fn enable_and_disable_keep_other_fields_and_their_order() {
    let env = Env::new("cli-ext");
    let text = r#"{"zeta":1,"name":"tog","exec":"./run.sh","custom":{"b":[1,2],"a":null},"enabled":true,"version":"0.1"}"#;
    let src = env.source("tog", text);
    assert_ok(&env.install(src.to_str().unwrap()));
    let path = env.extensions().join("tog/extension.json");
    let read = || serde_json::from_str::<Value>(&fs::read_to_string(&path).unwrap()).unwrap();
    let keys = |v: &Value| v.as_object().unwrap().keys().cloned().collect::<Vec<_>>();
    let original = read();

    let out = env.zot(&["disable", "tog"]);
    assert_ok(&out);
    assert!(
        stdout(&out).contains("tog is now disabled"),
        "{}",
        stdout(&out)
    );
    let disabled = read();
    assert_eq!(keys(&disabled), keys(&original));
    assert_eq!(disabled["enabled"], false);
    assert_eq!(disabled["custom"], original["custom"]);
    assert_eq!(disabled["zeta"], 1);
    assert_eq!(list_json(&env)[0]["state"], "disabled");

    assert_ok(&env.zot(&["enable", "tog"]));
    assert_eq!(read(), original);
    assert_eq!(list_json(&env)[0]["enabled"], true);

    assert_fails_with(&env.zot(&["enable", "nope"]), "zot ext list");
}

#[test]
fn enable_prefers_the_project_local_extension() {
    let env = Env::new("cli-ext");
    let src = env.source("g", &manifest("both"));
    assert_ok(&env.install(src.to_str().unwrap()));
    let local = env.root().join("cwd/.zot/extensions/both");
    fs::create_dir_all(&local).unwrap();
    fs::write(local.join("extension.json"), manifest("both")).unwrap();
    // Trusted, the project copy is the one that loads.
    assert_ok(&env.zot(&["trust", "--yes"]));

    assert_ok(&env.zot(&["disable", "both"]));
    let enabled = |dir: &Path| {
        let text = fs::read_to_string(dir.join("extension.json")).unwrap();
        serde_json::from_str::<Value>(&text).unwrap()["enabled"].clone()
    };
    assert_eq!(enabled(&local), false);
    assert_eq!(enabled(&env.extensions().join("both")), Value::Null);
}

#[test]
fn remove_with_yes() {
    let env = Env::new("cli-ext");
    let src = env.source("src", &manifest("gone"));
    assert_ok(&env.install(src.to_str().unwrap()));
    let out = env.zot(&["remove", "gone", "--yes"]);
    assert_ok(&out);
    assert!(stdout(&out).contains("Removed gone"));
    assert_eq!(env.installed(), Vec::<String>::new());
    assert!(
        src.join("extension.json").exists(),
        "the source is untouched"
    );

    assert_ok(&env.install(src.to_str().unwrap()));
    assert_ok(&env.zot(&["rm", "-y", "gone"]));
    assert_eq!(env.installed(), Vec::<String>::new());
}

#[test]
fn remove_without_yes_needs_a_terminal() {
    let env = Env::new("cli-ext");
    let src = env.source("src", &manifest("kept"));
    assert_ok(&env.install(src.to_str().unwrap()));
    assert_fails_with(&env.zot(&["remove", "kept"]), "pass --yes");
    assert_eq!(env.installed(), ["kept"]);

    assert_fails_with(&env.zot(&["remove", "other", "--yes"]), "zot ext list");
    assert_fails_with(
        &env.zot(&["remove", "..", "--yes"]),
        "not an extension name",
    );
    assert!(env.extensions().exists());
}

#[test]
fn list_as_text_and_json() {
    let env = Env::new("cli-ext");
    let empty = env.zot(&["list"]);
    assert_ok(&empty);
    assert!(
        stdout(&empty).contains("zot ext install"),
        "{}",
        stdout(&empty)
    );
    assert_eq!(stdout(&env.zot(&["list", "--json"])).trim(), "[]");

    let src = env.source("src", &manifest("alpha"));
    assert_ok(&env.install(src.to_str().unwrap()));
    let shadowed = env.source("src2", &manifest("local"));
    assert_ok(&env.install(shadowed.to_str().unwrap()));
    let local = env.root().join("cwd/.zot/extensions/local");
    fs::create_dir_all(&local).unwrap();
    fs::write(
        local.join("extension.json"),
        r#"{"name":"local","exec":"./x","enabled":false}"#,
    )
    .unwrap();
    let broken = env.extensions().join("broken");
    fs::create_dir_all(&broken).unwrap();
    fs::write(broken.join("extension.json"), r#"{"name":"broken"}"#).unwrap();
    // Written by hand into the project: listed as untrusted until trusted.
    let rows = list_json(&env);
    let untrusted = rows.last().unwrap();
    assert_eq!(
        (&untrusted["name"], &untrusted["state"]),
        (&serde_json::json!("local"), &serde_json::json!("untrusted")),
        "{rows:?}"
    );
    assert_ok(&env.zot(&["trust", "--yes"]));

    let rows = list_json(&env);
    let names: Vec<&str> = rows.iter().map(|r| r["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["local", "alpha", "broken"]);
    assert_eq!(rows[0]["source"], "project");
    assert_eq!(rows[0]["state"], "disabled");
    assert_eq!(rows[0]["enabled"], false);
    let alpha = &rows[1];
    assert_eq!(alpha["source"], "global");
    assert_eq!(alpha["version"], "1.2.3");
    assert_eq!(alpha["description"], "says hi");
    assert_eq!(alpha["transport"], "stdio");
    assert_eq!(alpha["state"], "enabled");
    assert_eq!(alpha["enabled"], true);
    assert_eq!(
        alpha["dir"],
        env.extensions().join("alpha").display().to_string()
    );
    assert!(alpha.get("error").is_none());
    assert_eq!(rows[2]["state"], "error");
    assert!(rows[2]["error"].as_str().unwrap().contains("\"exec\""));

    let text = stdout(&env.zot(&["list"]));
    assert!(text.starts_with("SOURCE"), "{text}");
    for needle in [
        "local",
        "alpha",
        "1.2.3",
        "says hi",
        "disabled",
        "error:",
        "shadowed: local",
    ] {
        assert!(text.contains(needle), "{needle:?} missing in {text}");
    }
}

#[test]
fn logs_print_the_log() {
    let env = Env::new("cli-ext");
    assert_fails_with(&env.zot(&["logs", "quiet"]), "no log at");
    fs::create_dir_all(env.home().join("logs")).unwrap();
    let log = env.home().join("logs/ext-chatty.log");
    fs::write(&log, "line one\nline two\n").unwrap();
    let out = env.zot(&["logs", "chatty"]);
    assert_ok(&out);
    assert_eq!(stdout(&out), "line one\nline two\n");
}

#[test]
fn logs_follow_prints_appended_bytes() {
    let env = Env::new("cli-ext");
    fs::create_dir_all(env.home().join("logs")).unwrap();
    let log = env.home().join("logs/ext-tail.log");
    fs::write(&log, "first\n").unwrap();
    let mut child = env
        .command(&["logs", "tail", "-f"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut pipe = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut buf = [0; 256];
        while let Ok(n @ 1..) = pipe.read(&mut buf) {
            let _ = tx.send(buf[..n].to_vec());
        }
    });
    let mut seen = Vec::new();
    let mut wait_for = |needle: &str| {
        let deadline = Instant::now() + Duration::from_secs(10);
        while !String::from_utf8_lossy(&seen).contains(needle) {
            let left = deadline.saturating_duration_since(Instant::now());
            seen.extend(
                rx.recv_timeout(left)
                    .expect("zot ext logs -f printed too little"),
            );
        }
    };
    wait_for("first\n");
    fs::OpenOptions::new()
        .append(true)
        .open(&log)
        .unwrap()
        .write_all(b"second\n")
        .unwrap();
    wait_for("first\nsecond\n");
    fs::write(&log, "new\n").unwrap();
    wait_for("second\nnew\n");
    child.kill().unwrap();
    child.wait().unwrap();
}

// ---------------------------------------------------------------------------------------
// Install from git at a ref and path, .wasm, consent, provenance, update, verify

/// Runs `zot ext <args>` on a pseudo-terminal (by python3's `pty`), answering `answer`
/// to the first `[y/N]` question; returns the exit code and everything it printed.
fn on_terminal(env: &Env, args: &[&str], answer: &str) -> (i32, String) {
    const SCRIPT: &str = r#"
import os, pty, sys
zot, answer, args = sys.argv[1], sys.argv[2], sys.argv[3:]
pid, fd = pty.fork()
if pid == 0:
    os.execv(zot, [zot, "ext"] + args)
out, answered = b"", False
while True:
    try:
        data = os.read(fd, 4096)
    except OSError:
        break
    if not data:
        break
    out += data
    if not answered and b"[y/N]" in out:
        os.write(fd, answer.encode() + b"\n")
        answered = True
_, status = os.waitpid(pid, 0)
sys.stdout.write(out.decode(errors="replace"))
sys.exit(os.waitstatus_to_exitcode(status))
"#;
    let out = Command::new("python3")
        .arg("-c")
        .arg(SCRIPT)
        .arg(env!("CARGO_BIN_EXE_zot"))
        .arg(answer)
        .args(args)
        .env("ZOT_HOME", env.home())
        .current_dir(env.root().join("cwd"))
        .output()
        .expect("python3 runs");
    (out.status.code().unwrap_or(-1), stdout(&out))
}

/// A git repository `root/<dir>` whose `examples/<ext>` holds `manifest` (plus `run.sh`
/// and whatever `files` says), committed; returns its path.
fn repo_with(env: &Env, dir: &str, ext: &str, manifest: &str, files: &[(&str, &[u8])]) -> PathBuf {
    let repo = env.root().join(dir);
    let sub = repo.join("examples").join(ext);
    fs::create_dir_all(&sub).unwrap();
    fs::write(repo.join("README.md"), "a monorepo").unwrap();
    fs::write(sub.join("extension.json"), manifest).unwrap();
    fs::write(sub.join("run.sh"), "#!/bin/sh\n").unwrap();
    for (name, bytes) in files {
        fs::write(sub.join(name), bytes).unwrap();
    }
    git(&repo, &["init", "-q", "-b", "main"]);
    git(&repo, &["add", "."]);
    git(&repo, &["commit", "-q", "-m", "one"]);
    repo
}

fn rev_parse(repo: &Path, rev: &str) -> String {
    let out = Command::new("git")
        .args(["rev-parse", rev])
        .current_dir(repo)
        .output()
        .unwrap();
    stdout(&out).trim().to_string()
}

fn info_json(env: &Env, name: &str) -> Value {
    let out = env.zot(&["info", name, "--json"]);
    assert_ok(&out);
    serde_json::from_str(&stdout(&out)).unwrap()
}

/// A component manifest for the `hello` example's component, asking `permissions`.
fn component_manifest(name: &str, version: &str, permissions: &str) -> String {
    format!(
        r#"{{"name":"{name}","version":"{version}","wasm":"hello.wasm","permissions":{permissions}}}"#
    )
}

fn hello_wasm() -> Vec<u8> {
    fs::read(zot_test_guests::example("hello").wasm).unwrap()
}

/// `zot ext install URL --ref v1 --path examples/<name> --yes`.
fn install_at_v1(env: &Env, url: &str, name: &str) -> Output {
    let path = format!("examples/{name}");
    env.zot(&["install", url, "--ref", "v1", "--path", &path, "--yes"])
}

/// A git repo holding `examples/<name>`: version 1.0.0 tagged `v1`, then a commit with
/// version 2.0.0.
fn repo_at_v1_then_v2(env: &Env, repo: &str, name: &str) -> PathBuf {
    let manifest = |v: &str| format!(r#"{{"name":"{name}","version":"{v}","exec":"./run.sh"}}"#);
    let repo = repo_with(env, repo, name, &manifest("1.0.0"), &[]);
    git(&repo, &["tag", "v1"]);
    let at = repo.join("examples").join(name).join("extension.json");
    fs::write(at, manifest("2.0.0")).unwrap();
    git(&repo, &["commit", "-q", "-am", "two"]);
    repo
}

#[test]
fn install_from_git_at_a_ref_and_a_path_records_where_it_came_from() {
    let env = Env::new("cli-ext");
    let repo = repo_at_v1_then_v2(&env, "mono", "guard");
    let first = rev_parse(&repo, "v1");

    let url = file_url(&repo);
    let out = install_at_v1(&env, &url, "guard");
    assert_ok(&out);
    assert!(
        stdout(&out).contains("Installed guard 1.0.0"),
        "{}",
        stdout(&out)
    );
    let dest = env.extensions().join("guard");
    assert!(dest.join("run.sh").is_file());
    assert!(!dest.join("README.md").exists(), "only --path is installed");
    assert!(!dest.join(".git").exists());
    let info = info_json(&env, "guard");
    let p = &info["provenance"];
    assert_eq!(p["kind"], "git", "{info}");
    assert_eq!(p["source"], url.as_str());
    assert_eq!(
        (p["ref"].as_str(), p["path"].as_str()),
        (Some("v1"), Some("examples/guard"))
    );
    assert_eq!(p["commit"], first.as_str());
    assert!(p["installed_at"].as_str().unwrap().ends_with('Z'), "{p}");
    assert_eq!(p["files"].as_object().unwrap().len(), 2, "{p}");
    let listed = list_json(&env);
    assert_eq!(listed[0]["installed_from"]["commit"], first.as_str());

    // A commit as --ref (not a branch or tag: a full clone), under another name.
    let out = env.zot(&[
        "install",
        &url,
        "--ref",
        &first[..10],
        "--path",
        "examples/guard",
        "--name",
        "guard-old",
        "--yes",
    ]);
    assert_ok(&out);
    let old = info_json(&env, "guard-old");
    assert_eq!(
        (old["name"].as_str(), old["version"].as_str()),
        (Some("guard-old"), Some("1.0.0"))
    );
    assert_eq!(old["provenance"]["commit"], first.as_str());

    // The default branch, and --force replaces the install in place.
    let out = env.zot(&["install", &url, "--path", "examples/guard", "--yes"]);
    assert_fails_with(&out, "already installed");
    let out = env.zot(&[
        "install",
        &url,
        "--path",
        "examples/guard",
        "--yes",
        "--force",
    ]);
    assert_ok(&out);
    assert_eq!(info_json(&env, "guard")["version"], "2.0.0");
    assert_eq!(env.installed(), ["guard", "guard-old"], "no staging left");
}

#[test]
fn bad_sources_are_refused_and_leave_nothing_behind() {
    let env = Env::new("cli-ext");
    let repo = repo_with(&env, "mono", "guard", &manifest("guard"), &[]);
    let url = file_url(&repo);
    let out = env.zot(&["install", &url, "--path", "examples/missing", "--yes"]);
    assert_fails_with(&out, "no directory at --path examples/missing");
    let out = env.zot(&["install", &url, "--yes"]);
    assert_fails_with(&out, "no extension.json at the top");
    assert_fails_with(
        &out,
        "\nhint: install one of them with --path, e.g. --path examples/guard",
    );
    let out = env.zot(&["install", &url, "--path", "../..", "--yes"]);
    assert_fails_with(&out, "without `..`");
    let out = env.zot(&["install", &url, "--ref", "no-such-tag", "--yes"]);
    assert_fails_with(&out, "git clone failed");
    let out = env.zot(&[
        "install",
        &url,
        "--path",
        "examples/guard",
        "--name",
        "../evil",
        "--yes",
    ]);
    assert_fails_with(&out, "--name");

    #[cfg(unix)]
    {
        let sub = repo.join("examples/guard");
        std::os::unix::fs::symlink("/etc/passwd", sub.join("passwd")).unwrap();
        git(&repo, &["add", "."]);
        git(&repo, &["commit", "-q", "-m", "link"]);
        let out = env.zot(&["install", &url, "--path", "examples/guard", "--yes"]);
        assert_fails_with(
            &out,
            "symlink passwd -> /etc/passwd points outside the extension",
        );
    }
    let evil = repo_with(
        &env,
        "evil",
        "x",
        r#"{"name":"../evil","exec":"./run.sh"}"#,
        &[],
    );
    let out = env.zot(&["install", &file_url(&evil), "--path", "examples/x", "--yes"]);
    assert_fails_with(&out, "\"name\"");

    let no_program = env.source("noprog", r#"{"name":"noprog","exec":"./bin/noprog"}"#);
    assert_fails_with(
        &env.install(no_program.to_str().unwrap()),
        "names bin/noprog, which is not in the source",
    );

    assert_eq!(env.installed(), Vec::<String>::new());
    assert!(!env.root().join("evil-escape").exists() && !env.home().join("evil").exists());
    assert!(!env.home().join("provenance").exists(), "nothing recorded");
}

#[test]
fn a_bare_component_is_installed_under_the_name_its_hello_gives() {
    let env = Env::new("cli-ext");
    let file = env.root().join("some-file-name.wasm");
    fs::write(&file, hello_wasm()).unwrap();
    let out = env.install(file.to_str().unwrap());
    assert_ok(&out);
    assert!(
        stdout(&out).contains("Installed hello 0.1.0"),
        "{}",
        stdout(&out)
    );
    assert!(
        !stderr(&out).contains("to read its hello"),
        "no progress when piped"
    );
    let dest = env.extensions().join("hello");
    let m: Value =
        serde_json::from_str(&fs::read_to_string(dest.join("extension.json")).unwrap()).unwrap();
    assert_eq!(m["wasm"], "hello.wasm");
    assert_eq!(m["version"], "0.1.0");
    assert_eq!(fs::read(dest.join("hello.wasm")).unwrap(), hello_wasm());
    let info = info_json(&env, "hello");
    assert_eq!(info["transport"], "wasm");
    assert_eq!(info["provenance"]["kind"], "wasm");
    assert_eq!(info["grant"]["permissions"]["data_dir"], true, "{info}");
    // It runs.
    let check = Command::new(env!("CARGO_BIN_EXE_zot"))
        .args(["ext", "check"])
        .arg(&dest)
        .env("ZOT_HOME", env.home())
        .output()
        .unwrap();
    assert_ok(&check);

    // On a terminal the slow step (compiling and starting it) shows progress.
    let args = ["install", file.to_str().unwrap(), "--name", "hello2"];
    let (code, shown) = on_terminal(&env, &args, "y");
    assert_eq!(code, 0, "{shown}");
    assert!(
        shown.contains("with no permissions to read its hello"),
        "{shown}"
    );
    assert_eq!(info_json(&env, "hello2")["name"], "hello2");

    // One that never says hello is refused at the start deadline, and not a component
    // at all straight away.
    let t = Instant::now();
    let out = env.install(zot_test_guests::SILENT);
    assert_fails_with(&out, "refused: no hello within 10s");
    println!("silent component refused after {:?}", t.elapsed());
    let junk = env.root().join("junk.wasm");
    fs::write(&junk, b"\0asm not really").unwrap();
    assert_fails_with(&env.install(junk.to_str().unwrap()), "junk.wasm");
    assert_eq!(env.installed(), ["hello", "hello2"]);
}

/// A component that carries its manifest (the SDK probe, `zot_ext::embed_manifest!`)
/// asks what it says before anything runs: without a terminal nor `--yes` it is refused
/// and nothing is recorded; `zot ext check` shows the same asks, withheld.
#[test]
fn a_bare_component_asks_what_its_embedded_manifest_asks() {
    let env = Env::new("cli-ext");
    let file = env.root().join("probe.wasm");
    fs::copy(zot_test_guests::SDK_PROBE, &file).unwrap();
    let file = file.to_str().unwrap();
    let out = env.zot(&["install", file]);
    assert_fails_with(
        &out,
        "Grant this and install sdk-probe?\" cannot be asked: pass --yes",
    );
    for asked in [
        "It is a sandboxed WebAssembly component. It asks to:",
        "read the environment variable ZOT_SECTION_TEST",
        "make HTTP requests to api.example.com",
        "use up to 96 MiB of memory",
    ] {
        assert!(stdout(&out).contains(asked), "{asked}: {}", stdout(&out));
    }
    assert_eq!(env.installed(), Vec::<String>::new());
    assert!(!env.home().join("grants").exists(), "no grant recorded");
    assert!(!env.home().join("provenance").exists(), "nothing recorded");

    let out = env.zot(&["check", file, "--json"]);
    assert_ok(&out);
    let report: Value = serde_json::from_str(&stdout(&out)).unwrap();
    let sandbox = &report["sandbox"];
    assert_eq!(
        sandbox["asked"]["http"],
        serde_json::json!(["api.example.com"]),
        "{report}"
    );
    assert!(
        sandbox["withheld"]
            .to_string()
            .contains("env ZOT_SECTION_TEST: not granted"),
        "{report}"
    );

    // A malformed embedded manifest is refused, naming the section.
    let bad = env.root().join("bad.wasm");
    fs::write(
        &bad,
        with_section(&hello_wasm(), br#"{"limits":{"memory_mb":0}}"#),
    )
    .unwrap();
    assert_fails_with(
        &env.install(bad.to_str().unwrap()),
        "its embedded manifest (section \"zot:manifest\"): field \"limits.memory_mb\"",
    );
    assert_eq!(env.installed(), Vec::<String>::new());
}

/// `component` with a `zot:manifest` custom section holding `content` appended at its
/// top level.
fn with_section(component: &[u8], content: &[u8]) -> Vec<u8> {
    let name = b"zot:manifest";
    let mut body = Vec::new();
    crate::common::leb(name.len() as u64, &mut body);
    body.extend_from_slice(name);
    body.extend_from_slice(content);
    let mut out = component.to_vec();
    crate::common::section(0, &body, &mut out);
    out
}

#[test]
fn an_install_killed_midway_leaves_nothing_behind() {
    let env = Env::new("cli-ext");
    // The silent component keeps the install busy (waiting for its hello) for 10 s.
    let mut child = env
        .command(&["install", zot_test_guests::SILENT, "--yes"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while !env
        .installed()
        .iter()
        .any(|n| n.starts_with(".tmp-install-"))
    {
        assert!(Instant::now() < deadline, "no staging folder appeared");
        std::thread::sleep(Duration::from_millis(10));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    // The next zot run sweeps what the killed one left.
    assert_ok(&env.zot(&["list"]));
    assert_eq!(env.installed(), Vec::<String>::new());
}

#[test]
fn consent_is_asked_on_a_terminal_and_required_without_one() {
    let env = Env::new("cli-ext");
    let asks = r#"{"data_dir":true,"env":["ASKER_TOKEN"],"http":["api.example.com"],"cwd":"read"}"#;
    let src = env.component_source("asker", &component_manifest("asker", "1.0.0", asks));
    let src = src.to_str().unwrap();

    // Not a terminal, no --yes: refused, saying how to proceed.
    let out = env.zot(&["install", src]);
    assert_fails_with(&out, "pass --yes");
    assert!(
        stdout(&out).contains("make HTTP requests to api.example.com"),
        "{}",
        stdout(&out)
    );
    assert_eq!(env.installed(), Vec::<String>::new());

    // Refused on the terminal.
    let (code, shown) = on_terminal(&env, &["install", src], "n");
    assert_eq!(code, 1, "{shown}");
    assert!(
        shown.contains("read the environment variable ASKER_TOKEN"),
        "{shown}"
    );
    assert!(
        shown.contains("read (not write) the project directory"),
        "{shown}"
    );
    assert!(
        shown.contains("Grant this and install asker? [y/N]"),
        "{shown}"
    );
    assert!(shown.contains("not confirmed"), "{shown}");
    assert_eq!(env.installed(), Vec::<String>::new());
    assert!(!env.home().join("grants/asker.json").exists());

    // Accepted: installed, and what it asked for is granted.
    let (code, shown) = on_terminal(&env, &["install", src], "y");
    assert_eq!(code, 0, "{shown}");
    assert_eq!(env.installed(), ["asker"]);
    let grant: Value =
        serde_json::from_str(&fs::read_to_string(env.home().join("grants/asker.json")).unwrap())
            .unwrap();
    assert_eq!(
        grant["permissions"]["env"],
        serde_json::json!(["ASKER_TOKEN"])
    );
    assert_eq!(
        grant["permissions"]["http"],
        serde_json::json!(["api.example.com"])
    );
    assert_eq!(grant["permissions"]["cwd"], "read");

    // A classic extension: a warning, and the same question.
    let classic = env.source("classic", &manifest("classic"));
    let (code, shown) = on_terminal(&env, &["install", classic.to_str().unwrap()], "y");
    assert_eq!(code, 0, "{shown}");
    assert!(shown.contains("full user permissions"), "{shown}");
    assert!(shown.contains("Install classic? [y/N]"), "{shown}");
}

#[test]
fn update_fetches_again_and_asks_when_permissions_grow() {
    let env = Env::new("cli-ext");
    let wasm = hello_wasm();
    let v1 = component_manifest("grower", "1.0.0", r#"{"http":["a.example.com"]}"#);
    let repo = repo_with(&env, "grower", "grower", &v1, &[("hello.wasm", &wasm)]);
    let url = file_url(&repo);
    assert_ok(&env.zot(&["install", &url, "--path", "examples/grower", "--yes"]));
    let out = env.zot(&["update", "grower"]);
    assert_ok(&out);
    assert!(
        stdout(&out).contains("grower is up to date"),
        "{}",
        stdout(&out)
    );

    // A new version asking for no more: updated without a question; grant re-pinned.
    let v2 = component_manifest("grower", "2.0.0", r#"{"http":["a.example.com"]}"#);
    fs::write(repo.join("examples/grower/extension.json"), &v2).unwrap();
    git(&repo, &["commit", "-q", "-am", "two"]);
    let out = env.zot(&["update", "grower"]);
    assert_ok(&out);
    assert!(
        stdout(&out).contains("version  1.0.0 -> 2.0.0"),
        "{}",
        stdout(&out)
    );
    assert!(
        stdout(&out).contains("asks for nothing more"),
        "{}",
        stdout(&out)
    );
    assert_eq!(info_json(&env, "grower")["version"], "2.0.0");

    // Asking for more: refused without a terminal, granted when the user says yes.
    let v3 = component_manifest(
        "grower",
        "3.0.0",
        r#"{"http":["a.example.com","b.example.com"],"env":["GROW"]}"#,
    );
    fs::write(repo.join("examples/grower/extension.json"), &v3).unwrap();
    git(&repo, &["commit", "-q", "-am", "three"]);
    let out = env.zot(&["update", "grower"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stdout(&out).contains("make HTTP requests to b.example.com"),
        "{}",
        stdout(&out)
    );
    assert!(stderr(&out).contains("pass --yes"), "{}", stderr(&out));
    assert_eq!(info_json(&env, "grower")["version"], "2.0.0", "unchanged");
    let (code, shown) = on_terminal(&env, &["update", "grower"], "y");
    assert_eq!(code, 0, "{shown}");
    assert!(
        shown.contains("read the environment variable GROW"),
        "{shown}"
    );
    let info = info_json(&env, "grower");
    assert_eq!(info["version"], "3.0.0");
    assert_eq!(
        info["provenance"]["commit"],
        rev_parse(&repo, "HEAD").as_str()
    );
    assert_eq!(
        info["grant"]["permissions"]["env"],
        serde_json::json!(["GROW"]),
        "{info}"
    );
    assert_eq!(env.installed(), ["grower"]);
}

#[test]
fn verify_reports_files_changed_since_install() {
    let env = Env::new("cli-ext");
    let src = env.source("v", &manifest("verified"));
    fs::write(src.join("data.txt"), "original").unwrap();
    assert_ok(&env.install(src.to_str().unwrap()));
    let out = env.zot(&["verify", "verified"]);
    assert_ok(&out);
    assert!(
        stdout(&out).contains("all 3 files match"),
        "{}",
        stdout(&out)
    );

    let dest = env.extensions().join("verified");
    fs::write(dest.join("data.txt"), "tampered").unwrap();
    fs::write(dest.join("extra.sh"), "new").unwrap();
    fs::remove_file(dest.join("run.sh")).unwrap();
    let out = env.zot(&["verify", "verified"]);
    assert_fails_with(&out, "3 file(s) changed since it was installed");
    let shown = stdout(&out);
    for line in ["modified data.txt", "added    extra.sh", "removed  run.sh"] {
        assert!(shown.contains(line), "{line:?} in {shown}");
    }
    let out = env.zot(&["verify", "verified", "--json"]);
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(v["ok"], false);
    assert_eq!(
        v["changes"][0],
        serde_json::json!({"change": "modified", "path": "data.txt"})
    );
}

#[test]
fn project_installs_go_to_the_project() {
    let env = Env::new("cli-ext");
    let src = env.source("p", &manifest("local"));
    assert_ok(&env.zot(&["install", src.to_str().unwrap(), "--project", "--yes"]));
    let cwd = env.root().join("cwd");
    assert!(cwd.join(".zot/extensions/local/extension.json").is_file());
    // Its record is under $ZOT_HOME, keyed by the project, never in the project.
    assert!(!cwd.join(".zot/provenance").exists());
    let records = env.home().join("provenance/@project");
    let keys: Vec<_> = fs::read_dir(&records)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(keys.len(), 1, "{keys:?}");
    assert!(keys[0].join("local.json").is_file());
    assert_eq!(env.installed(), Vec::<String>::new());
    let info = info_json(&env, "local");
    assert_eq!(info["scope"], "project");
    assert_ok(&env.zot(&["verify", "local"]));
    // Removing a global install forgets its record too.
    assert_ok(&env.install(src.to_str().unwrap()));
    assert!(env.home().join("provenance/local.json").is_file());
    assert_ok(&env.zot(&["remove", "local", "--global", "--yes"]));
    assert!(!env.home().join("provenance/local.json").exists());
}

// ---------------------------------------------------------------------------------------
// info shows hashes and grants, one name resolution, grants only of what is asked,
// update --ref, the form of errors

#[test]
fn info_shows_the_recorded_hash_and_the_grant_in_plain_words() {
    let env = Env::new("cli-ext");
    let src = env.component_source(
        "asker",
        r#"{"name":"asker","version":"1.0.0","description":"asks for things","wasm":"hello.wasm",
            "permissions":{"env":["ASKER_TOKEN"],"http":["api.example.com"]},"limits":{"memory_mb":96}}"#,
    );
    assert_ok(&env.install(src.to_str().unwrap()));

    let info = info_json(&env, "asker");
    let sha = info["provenance"]["files"]["hello.wasm"].as_str().unwrap();
    assert_eq!(sha.len(), 64, "{info}");
    assert_eq!(
        info["program"],
        serde_json::json!({"path": "hello.wasm", "sha256": sha})
    );
    let out = env.zot(&["info", "asker"]);
    assert_ok(&out);
    let expected = format!(
        "\
name         asker
version      1.0.0
description  asks for things
directory    {dir} (global copy)
transport    wasm
enabled      yes
source       {src} (directory)
installed at {time}
files        2 recorded (`zot ext verify asker` checks them)
component    hello.wasm, sha256 {sha} (as installed)
asks         read and write its own data directory (seen as /data)
             read the environment variable ASKER_TOKEN
             make HTTP requests to api.example.com
             use up to 96 MiB of memory
granted      read and write its own data directory (seen as /data)
             read the environment variable ASKER_TOKEN
             make HTTP requests to api.example.com
             use up to 96 MiB of memory
",
        dir = env.extensions().join("asker").display(),
        src = src.canonicalize().unwrap().display(),
        time = info["provenance"]["installed_at"].as_str().unwrap(),
    );
    assert_eq!(stdout(&out), expected);

    // After a revoke: its data dir only.
    assert_ok(&env.zot(&["revoke", "asker"]));
    let shown = stdout(&env.zot(&["info", "asker"]));
    assert!(
        shown.ends_with("granted      nothing beyond its data dir (no grant recorded)\n"),
        "{shown}"
    );

    // A classic extension: the program's hash (a script run by an interpreter counts),
    // and no sandbox.
    let py = env.source(
        "py",
        r#"{"name":"py","exec":"python3","args":["main.py"],"description":"d"}"#,
    );
    fs::write(py.join("main.py"), "print('hi')\n").unwrap();
    assert_ok(&env.install(py.to_str().unwrap()));
    let info = info_json(&env, "py");
    let sha = info["provenance"]["files"]["main.py"].as_str().unwrap();
    assert_eq!(info["program"]["path"], "main.py", "{info}");
    assert_eq!(info["program"]["sha256"], sha);
    let shown = stdout(&env.zot(&["info", "py"]));
    assert!(
        shown.ends_with(&format!(
            "program      main.py, sha256 {sha} (as installed)\n\
             confined     no: it runs with your full user permissions (`zot ext confine py`; \
             Landlock ABI {} here)\n\
             granted      everything you can: a classic extension runs with your full user \
             permissions\n",
            zot_host::manage::confine::kernel_report(&Default::default()).0
        )),
        "{shown}"
    );
    assert!(!shown.contains("zot ext grant"), "{shown}");
}

#[test]
fn a_name_means_the_project_copy_first_and_flags_choose() {
    let env = Env::new("cli-ext");
    let src = env.source("both-src", &manifest("both"));
    let src = src.to_str().unwrap();
    assert_ok(&env.install(src));
    assert_ok(&env.zot(&["install", src, "--project", "--yes"]));
    let local = env.root().join("cwd/.zot/extensions/both");
    let global = env.extensions().join("both");
    let project_copy = format!("project copy at {}", local.display());
    let global_copy = format!("global copy at {}", global.display());

    let shown = stdout(&env.zot(&["info", "both"]));
    assert!(
        shown.contains(&format!("{} (project copy)", local.display())),
        "{shown}"
    );
    assert_eq!(info_json(&env, "both")["scope"], "project");
    let out = env.zot(&["info", "both", "--global", "--json"]);
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(
        (v["scope"].as_str(), v["dir"].as_str()),
        (Some("global"), global.to_str())
    );
    let out = env.zot(&["verify", "both"]);
    assert!(stdout(&out).contains(&project_copy), "{}", stdout(&out));

    let out = env.zot(&["disable", "both", "--global"]);
    assert!(stdout(&out).contains(&global_copy), "{}", stdout(&out));
    let enabled = |dir: &Path| {
        let text = fs::read_to_string(dir.join("extension.json")).unwrap();
        serde_json::from_str::<Value>(&text).unwrap()["enabled"].clone()
    };
    assert_eq!(enabled(&global), false);
    assert_eq!(
        enabled(&local),
        Value::Null,
        "the project copy is untouched"
    );

    // `remove` acts on the copy that loads (the project's) and says so.
    let out = env.zot(&["remove", "both", "--yes"]);
    assert_ok(&out);
    assert_eq!(
        stdout(&out),
        format!("Removed both ({project_copy}), its install record and its grant\n")
    );
    assert!(!local.exists() && global.exists());
    assert!(!env.root().join("cwd/.zot/provenance/both.json").exists());
    assert!(env.home().join("provenance/both.json").is_file());
    assert_fails_with(
        &env.zot(&["info", "both", "--project"]),
        &format!(
            "info both: no extension named \"both\" in {}",
            env.root().join("cwd/.zot/extensions").display()
        ),
    );

    // `--global` chooses the global copy even when a project copy would load.
    assert_ok(&env.zot(&["install", src, "--project", "--yes"]));
    let out = env.zot(&["remove", "both", "--global", "--yes"]);
    assert_ok(&out);
    assert_eq!(
        stdout(&out),
        format!("Removed both ({global_copy}), its install record and its grant\n")
    );
    assert!(local.exists() && !global.exists());
    assert_eq!(
        env.zot(&["info", "both", "--project", "--global"])
            .status
            .code(),
        Some(2)
    );
}

#[test]
fn grant_refuses_a_permission_the_manifest_does_not_ask() {
    let env = Env::new("cli-ext");
    let src = env.component_source(
        "local-http",
        &component_manifest(
            "local-http",
            "1.0.0",
            r#"{"http":["http://127.0.0.1:8766"],"env":["LOCAL_TOKEN"]}"#,
        ),
    );
    assert_ok(&env.zot(&["install", src.to_str().unwrap(), "--project", "--yes"]));
    assert_ok(&env.zot(&["revoke", "local-http"]));

    let out = env.zot(&["grant", "local-http", "-p", "http:127.0.0.1:8766"]);
    assert_fails_with(
        &out,
        "grant local-http: its manifest does not ask for http:127.0.0.1:8766, so granting it \
         would have no effect; it asks for: data_dir, env:LOCAL_TOKEN, \
         http:http://127.0.0.1:8766 (nearest: http:http://127.0.0.1:8766); nothing was granted",
    );
    assert!(!env.home().join("grants/local-http.json").exists());
    // One refused permission refuses the whole command.
    let out = env.zot(&[
        "grant",
        "local-http",
        "-p",
        "env:LOCAL_TOKEN",
        "-p",
        "env:LOCAL_TOKN",
    ]);
    assert_fails_with(&out, "(nearest: env:LOCAL_TOKEN)");
    assert!(!env.home().join("grants/local-http.json").exists());

    let out = env.zot(&["grant", "local-http", "-p", "http:http://127.0.0.1:8766"]);
    assert_ok(&out);
    assert!(
        stdout(&out).contains("local-http (project copy at "),
        "{}",
        stdout(&out)
    );
    let granted = list_json(&env)[0]["grant"]["permissions"].clone();
    assert_eq!(
        granted["http"],
        serde_json::json!(["http://127.0.0.1:8766"]),
        "{granted}"
    );

    // A bare component's generated manifest asks for nothing but its data dir.
    let file = env.root().join("hello.wasm");
    fs::write(&file, hello_wasm()).unwrap();
    assert_ok(&env.install(file.to_str().unwrap()));
    let before = fs::read(env.home().join("grants/hello.json")).unwrap();
    let out = env.zot(&["grant", "hello", "-p", "env:X"]);
    assert_fails_with(
        &out,
        "grant hello: its manifest does not ask for env:X, so granting it would have no \
         effect; it asks for: data_dir; nothing was granted",
    );
    assert_eq!(
        fs::read(env.home().join("grants/hello.json")).unwrap(),
        before
    );
    assert_fails_with(
        &env.zot(&["grant", "hello", "-p", "memory:128"]),
        "does not ask for memory:128",
    );
}

#[test]
fn update_moves_a_git_install_to_another_ref() {
    let env = Env::new("cli-ext");
    let repo = repo_at_v1_then_v2(&env, "mover-repo", "mover");
    git(&repo, &["tag", "v2"]);
    let url = file_url(&repo);

    let out = install_at_v1(&env, &url, "mover");
    assert_ok(&out);
    let at_v1 = rev_parse(&repo, "v1");
    assert!(
        stdout(&out).starts_with(&format!(
            "mover 1.0.0 from {url} (--ref v1, --path examples/mover) at {}\n",
            &at_v1[..12]
        )),
        "the header names the ref: {}",
        stdout(&out)
    );

    let out = env.zot(&["update", "mover", "--ref", "v2", "--yes"]);
    assert_ok(&out);
    let shown = stdout(&out);
    for line in [
        "(--ref v2, --path examples/mover)",
        "  ref      v1 -> v2",
        "  version  1.0.0 -> 2.0.0",
    ] {
        assert!(shown.contains(line), "{line:?} in {shown}");
    }
    let info = info_json(&env, "mover");
    assert_eq!(info["version"], "2.0.0");
    assert_eq!(info["provenance"]["ref"], "v2");
    assert_eq!(
        info["provenance"]["commit"],
        rev_parse(&repo, "v2").as_str()
    );

    // The new ref stays: a later commit on the branch is not picked up.
    let v3 = r#"{"name":"mover","version":"3.0.0","exec":"./run.sh"}"#;
    fs::write(repo.join("examples/mover/extension.json"), v3).unwrap();
    git(&repo, &["commit", "-q", "-am", "three"]);
    let out = env.zot(&["update", "mover"]);
    assert!(
        stdout(&out).contains("mover is up to date"),
        "{}",
        stdout(&out)
    );

    // Another ref with the same files is still recorded.
    git(&repo, &["tag", "also-v2", "v2"]);
    assert_ok(&env.zot(&["update", "mover", "--ref", "also-v2"]));
    assert_eq!(info_json(&env, "mover")["provenance"]["ref"], "also-v2");

    let src = env.source("plain", &manifest("plain"));
    assert_ok(&env.install(src.to_str().unwrap()));
    assert_fails_with(
        &env.zot(&["update", "plain", "--ref", "v2"]),
        "update plain: --ref needs a git URL",
    );
    assert_eq!(
        env.zot(&["update", "--all", "--ref", "v2"]).status.code(),
        Some(2)
    );
}

#[test]
fn errors_are_one_line_naming_what_failed_without_colour() {
    let env = Env::new("cli-ext");
    let text = env.root().join("notes.wasm");
    fs::write(&text, "just some notes\n").unwrap();
    let out = env.install(text.to_str().unwrap());
    assert_fails_with(&out, "");
    assert_eq!(
        stderr(&out),
        format!(
            "zot: install {}: not a WebAssembly component (it is a text file)\n",
            text.display()
        )
    );
    let module = env.root().join("module.wasm");
    fs::write(&module, b"\0asm\x01\0\0\0").unwrap();
    assert_fails_with(
        &env.install(module.to_str().unwrap()),
        "module.wasm: a core wasm module this host cannot run: it exports no `_start`: build it as a WASI preview-1 command",
    );
    assert_fails_with(
        &env.zot(&["info", "nope"]),
        "zot: info nope: no extension named \"nope\"",
    );
    assert_fails_with(
        &env.zot(&["grant", "nope"]),
        "zot: grant nope: no extension named \"nope\"",
    );
    assert_fails_with(&env.zot(&["revoke", "../x"]), "zot: revoke ../x: ");

    // Diagnostics carry no colour codes when stderr is not a terminal: a log that cannot
    // be opened is warned about on stderr.
    fs::write(env.home().join("logs"), "a file where the log folder goes").unwrap();
    let file = env.root().join("hello.wasm");
    fs::write(&file, hello_wasm()).unwrap();
    let out = env.install(file.to_str().unwrap());
    assert_ok(&out);
    assert!(stderr(&out).contains("cannot open log"), "{}", stderr(&out));
    for out in [&out, &env.zot(&["info", "nope"])] {
        assert!(!out.stderr.contains(&0x1b), "{:?}", stderr(out));
    }
}

// Install copies only what it can prove: links resolved, --path through the source's
// handle, link targets verified, no setuid, the probe's output discarded

#[cfg(unix)]
#[test]
fn symlinks_whose_text_stays_inside_but_that_resolve_outside_are_refused() {
    use std::os::unix::fs::symlink;
    let env = Env::new("cli-ext");
    let attacks: [(&[(&str, &str)], &str); 4] = [
        (
            &[("top", "../../..")],
            "symlink top -> ../../.. points outside",
        ),
        (
            &[("top", "sub/../../../.."), ("x", "top/../../../etc/passwd")],
            "-> ",
        ),
        (
            &[("a", "b"), ("b", "../outside.txt")],
            "points outside the extension",
        ),
        (&[("l1", "l2"), ("l2", "l1")], "is a loop of links"),
    ];
    fs::write(env.root().join("outside.txt"), "secret").unwrap();
    for (i, (links, needle)) in attacks.iter().enumerate() {
        let src = env.source(&format!("attack{i}"), &manifest("attack"));
        fs::create_dir_all(src.join("sub")).unwrap();
        for (link, target) in *links {
            symlink(target, src.join(link)).unwrap();
        }
        let out = env.install(src.to_str().unwrap());
        assert_fails_with(&out, needle);
        assert_eq!(env.installed(), Vec::<String>::new(), "{links:?}");
        assert!(!env.home().join("provenance").exists(), "nothing recorded");
    }
    // `x -> top/../../../etc/passwd` alone, where `top` stays inside by its text.
    let src = env.source("attack-x", &manifest("attack"));
    fs::create_dir_all(src.join("d/e")).unwrap();
    symlink("../..", src.join("d/e/top")).unwrap();
    symlink("d/e/top/../../../etc/passwd", src.join("x")).unwrap();
    let out = env.install(src.to_str().unwrap());
    assert_fails_with(
        &out,
        "symlink x -> d/e/top/../../../etc/passwd points outside",
    );
    assert_eq!(env.installed(), Vec::<String>::new());

    // A link that really stays inside, through another link, is kept.
    let src = env.source("fine", &manifest("fine"));
    fs::create_dir_all(src.join("lib")).unwrap();
    fs::write(src.join("lib/util.txt"), "util").unwrap();
    symlink("../lib", src.join("lib/self")).unwrap();
    symlink("lib/self/util.txt", src.join("util")).unwrap();
    assert_ok(&env.install(src.to_str().unwrap()));
    let dest = env.extensions().join("fine");
    assert_eq!(fs::read_to_string(dest.join("util")).unwrap(), "util");
}

#[cfg(unix)]
#[test]
fn verify_reports_a_link_whose_target_was_swapped() {
    let env = Env::new("cli-ext");
    let src = env.source("swap", &manifest("swapped"));
    fs::write(src.join("data.txt"), "original").unwrap();
    std::os::unix::fs::symlink("data.txt", src.join("link")).unwrap();
    assert_ok(&env.install(src.to_str().unwrap()));
    assert_ok(&env.zot(&["verify", "swapped"]));
    let record = info_json(&env, "swapped");
    assert!(record.to_string().contains("\"targets\""), "{record}");

    // The link's text is the same; what it names is another file.
    let dest = env.extensions().join("swapped");
    fs::remove_file(dest.join("data.txt")).unwrap();
    fs::write(dest.join("other.txt"), "evil").unwrap();
    std::os::unix::fs::symlink("other.txt", dest.join("data.txt")).unwrap();
    let out = env.zot(&["verify", "swapped"]);
    let shown = stdout(&out);
    assert!(shown.contains("modified link"), "{shown}");

    // Pointed out of the extension, with the same content: still modified.
    fs::write(env.root().join("evil.txt"), "original").unwrap();
    fs::remove_file(dest.join("data.txt")).unwrap();
    fs::remove_file(dest.join("other.txt")).unwrap();
    std::os::unix::fs::symlink(env.root().join("evil.txt"), dest.join("data.txt")).unwrap();
    let out = env.zot(&["verify", "swapped"]);
    assert!(stdout(&out).contains("modified link"), "{}", stdout(&out));
}

#[cfg(unix)]
#[test]
fn a_path_through_a_symlink_out_of_the_clone_is_refused() {
    let env = Env::new("cli-ext");
    let outside = env.source("outside-ext", &manifest("outside"));
    let repo = repo_with(&env, "mono", "guard", &manifest("guard"), &[]);
    std::os::unix::fs::symlink(&outside, repo.join("examples/out")).unwrap();
    std::os::unix::fs::symlink("../..", repo.join("examples/up")).unwrap();
    git(&repo, &["add", "."]);
    git(&repo, &["commit", "-q", "-m", "links"]);
    let url = file_url(&repo);
    for path in ["examples/out", "examples/up/outside-ext"] {
        let out = env.zot(&["install", &url, "--path", path, "--yes"]);
        assert_fails_with(&out, &format!("--path {path} leads out of the source"));
    }
    let out = env.zot(&[
        "install",
        repo.to_str().unwrap(),
        "--path",
        "examples/out",
        "--yes",
    ]);
    assert_fails_with(&out, "--path examples/out leads out of the source");
    assert_eq!(env.installed(), Vec::<String>::new());
    assert!(!env.home().join("provenance").exists(), "nothing recorded");
}

#[cfg(unix)]
#[test]
fn setuid_setgid_and_sticky_bits_are_dropped() {
    use std::os::unix::fs::PermissionsExt;
    let env = Env::new("cli-ext");
    let src = env.source("suid", &manifest("suid"));
    fs::set_permissions(src.join("run.sh"), fs::Permissions::from_mode(0o4755)).unwrap();
    fs::write(src.join("g"), "g").unwrap();
    fs::set_permissions(src.join("g"), fs::Permissions::from_mode(0o2644)).unwrap();
    fs::write(src.join("s"), "s").unwrap();
    fs::set_permissions(src.join("s"), fs::Permissions::from_mode(0o1644)).unwrap();
    assert_ne!(
        fs::metadata(src.join("run.sh"))
            .unwrap()
            .permissions()
            .mode()
            & 0o4000,
        0,
        "the test can set setuid"
    );
    fs::create_dir(src.join("d")).unwrap();
    fs::set_permissions(src.join("d"), fs::Permissions::from_mode(0o3755)).unwrap();
    assert_ok(&env.install(src.to_str().unwrap()));
    let dest = env.extensions().join("suid");
    let dir_mode = fs::metadata(dest.join("d")).unwrap().permissions().mode();
    assert_eq!(dir_mode & 0o7000, 0, "no setgid or sticky on a directory");
    for (file, mode) in [("run.sh", 0o755), ("g", 0o644), ("s", 0o644)] {
        let got = fs::metadata(dest.join(file)).unwrap().permissions().mode() & 0o7777;
        assert_eq!(got, mode, "{file}");
    }
}

#[test]
fn what_a_probed_component_writes_is_discarded() {
    let env = Env::new("cli-ext");
    // The command guest writes "command started" to stderr before its hello.
    let out = env
        .command(&["install", zot_test_guests::COMMAND, "--yes"])
        .output()
        .unwrap();
    assert_ok(&out);
    let log = fs::read_to_string(env.home().join("logs/install.log")).unwrap_or_default();
    assert!(!log.contains("command started"), "{log}");
    assert!(log.len() < 4096, "{log}");
}
