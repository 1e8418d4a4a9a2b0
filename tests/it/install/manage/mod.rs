//! `zot ext list|install|remove|enable|disable|logs`, driving the real binary with a
//! private `ZOT_HOME` and working directory per test.

mod info;
mod signed;
mod sources;

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
/// `needle`; before it, only the progress of steps that took over a second (`<step>…`,
/// then `<step>: 1.2s`), as stderr off a terminal shows them.
#[track_caller]
fn assert_fails_with(out: &Output, needle: &str) {
    let err = stderr(out);
    assert_eq!(
        out.status.code(),
        Some(1),
        "stdout: {}\nstderr: {err}",
        stdout(out)
    );
    let all: Vec<&str> = err.trim_end().lines().collect();
    let first = all.iter().position(|l| l.starts_with("zot: "));
    let Some(first) = first else {
        panic!("no `zot: ` line: {err}")
    };
    for line in &all[..first] {
        let took = line
            .rsplit_once(": ")
            .and_then(|(_, t)| t.strip_suffix('s'))
            .is_some_and(|t| t.parse::<f64>().is_ok());
        assert!(
            line.ends_with('…') || took,
            "not a step's progress: {line:?} in {err}"
        );
    }
    // One line, and a `hint:` line where there is an obvious next step.
    let lines = &all[first..];
    assert!(
        lines.len() == 1 || lines.len() == 2 && lines[1].starts_with("hint: "),
        "{err}"
    );
    assert!(
        lines.join("\n").contains(needle),
        "expected {needle:?} in {err}"
    );
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

/// `zot ext install URL --ref v1 --path examples/<name> --yes`.
fn install_at_v1(env: &Env, url: &str, name: &str) -> Output {
    let path = format!("examples/{name}");
    env.zot(&["install", url, "--ref", "v1", "--path", &path, "--yes"])
}

fn rev_parse(repo: &Path, rev: &str) -> String {
    let out = Command::new("git")
        .args(["rev-parse", rev])
        .current_dir(repo)
        .output()
        .unwrap();
    stdout(&out).trim().to_string()
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
