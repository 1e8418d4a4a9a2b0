//! Records a project cannot forge and writes that follow no link: a provenance record
//! planted in a project is never read, `update` re-trusts a project copy only with the
//! user's consent, and no command writes through a link planted in an extension or
//! project folder. Each test drives the real `zot` binary with a private `ZOT_HOME`,
//! working directory and `GIT_TRACE` (which shows whether git was asked to fetch).

use crate::common::{assert_ok, git, stderr, stdout};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// The scratch layout (`home`: ZOT_HOME, `cwd`, sources beside them) with this module's helpers.
struct Records;
type Env = crate::common::Layout<Records>;

impl Env {
    /// `zot ext <args>` without a terminal (stdin is null).
    fn zot(&self, args: &[&str]) -> Output {
        Command::new(env!("CARGO_BIN_EXE_zot"))
            .arg("ext")
            .args(args)
            .env("ZOT_HOME", self.home())
            .env("GIT_TRACE", self.root().join("git-trace"))
            .current_dir(self.cwd())
            .stdin(Stdio::null())
            .output()
            .unwrap()
    }

    /// Whether any git command zot ran named `what`.
    fn git_saw(&self, what: &str) -> bool {
        fs::read_to_string(self.root().join("git-trace")).is_ok_and(|t| t.contains(what))
    }

    /// A git repository `root/<dir>` holding an extension `name` at `version`.
    fn repo(&self, dir: &str, name: &str, version: &str) -> PathBuf {
        let repo = self.root().join(dir);
        fs::create_dir_all(&repo).unwrap();
        write_extension(&repo, name, version);
        git(&repo, &["init", "-q", "-b", "main"]);
        git(&repo, &["add", "."]);
        git(&repo, &["commit", "-q", "-m", "one"]);
        repo
    }
}

fn write_extension(dir: &Path, name: &str, version: &str) {
    fs::create_dir_all(dir).unwrap();
    let manifest = json!({"name": name, "version": version, "exec": "./run.sh"});
    fs::write(dir.join("extension.json"), manifest.to_string()).unwrap();
    fs::write(dir.join("run.sh"), format!("#!/bin/sh\n# {version}\n")).unwrap();
}

/// Every file and link below `dir` (links by their text, never followed), by path.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    fn walk(dir: &Path, base: &Path, out: &mut BTreeMap<PathBuf, Vec<u8>>) {
        let Ok(entries) = fs::read_dir(dir) else {
            return;
        };
        for entry in entries.map(Result::unwrap) {
            let path = entry.path();
            let rel = path.strip_prefix(base).unwrap().to_path_buf();
            let kind = entry.file_type().unwrap();
            if kind.is_symlink() {
                let text = fs::read_link(&path).unwrap();
                out.insert(rel, text.into_os_string().into_encoded_bytes());
            } else if kind.is_dir() {
                out.insert(rel, b"<dir>".to_vec());
                walk(&path, base, out);
            } else {
                out.insert(rel, fs::read(&path).unwrap());
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

/// The install records kept for project copies: every file below
/// `$ZOT_HOME/provenance/@project`.
fn project_records(env: &Env) -> Vec<PathBuf> {
    snapshot(&env.home().join("provenance/@project"))
        .into_iter()
        .filter(|(p, b)| p.extension().is_some_and(|e| e == "json") && b != b"<dir>")
        .map(|(p, _)| p)
        .collect()
}

/// A project extension written by hand (as a `git pull` would bring it), with an install
/// record beside it in `./.zot/provenance` pointing at `attacker`'s repository.
fn plant_extension_and_record(env: &Env, attacker: &Path) -> PathBuf {
    let ext = env.cwd().join(".zot/extensions/victim");
    write_extension(&ext, "victim", "1.0.0");
    let record = json!({
        "name": "victim", "kind": "git", "source": format!("file://{}", attacker.display()),
        "installed_at": "2026-01-01T00:00:00Z",
        "files": {"extension.json": "0".repeat(64), "run.sh": "0".repeat(64)},
    });
    let dir = env.cwd().join(".zot/provenance");
    fs::create_dir_all(&dir).unwrap();
    fs::write(dir.join("victim.json"), record.to_string()).unwrap();
    ext
}

#[test]
fn a_record_planted_in_the_project_is_never_read() {
    let env = Env::new("records");
    let attacker = env.repo("attacker", "victim", "6.6.6");
    plant_extension_and_record(&env, &attacker);
    let zot_dir = env.cwd().join(".zot");
    let before = snapshot(&zot_dir);

    // Never trusted: `update NAME` refuses and says what to do; `--all` leaves it.
    let out = env.zot(&["update", "victim"]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}{}",
        stdout(&out),
        stderr(&out)
    );
    assert!(
        stderr(&out).contains("zot ext install --project"),
        "{}",
        stderr(&out)
    );
    let _ = env.zot(&["update", "--all"]);
    assert_eq!(snapshot(&zot_dir), before, "the project is unchanged");
    assert!(!env.home().join("trust").exists(), "no trust recorded");
    assert!(!env.git_saw("attacker"), "the attacker's repo was fetched");

    // Trusted as it is (the user reviewed these files); the record still steers nothing.
    assert_ok(&env.zot(&["trust", "--yes"]));
    let trusted = snapshot(&env.home().join("trust"));
    for args in [&["update", "--all"][..], &["update", "victim"]] {
        let out = env.zot(args);
        if args[1] == "victim" {
            assert!(!out.status.success(), "{args:?}: {}", stdout(&out));
        }
        assert_eq!(
            snapshot(&zot_dir),
            before,
            "{args:?}: the project is unchanged"
        );
        assert_eq!(snapshot(&env.home().join("trust")), trusted, "{args:?}");
        assert!(
            !env.git_saw("attacker"),
            "{args:?}: the attacker's repo was fetched"
        );
    }
    // `info` and `verify` do not read it either.
    let out = env.zot(&["info", "victim", "--json"]);
    assert_ok(&out);
    let info: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(info["provenance"], Value::Null, "{info}");
    let out = env.zot(&["verify", "victim"]);
    assert!(
        stderr(&out).contains("no install record"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_project_copy_is_updated_only_with_consent_after_its_review() {
    let env = Env::new("records");
    let repo = env.repo("kept-src", "kept", "1.0.0");
    let url = format!("file://{}", repo.display());
    assert_ok(&env.zot(&["install", &url, "--project", "--yes"]));
    assert!(
        !env.cwd().join(".zot/provenance").exists(),
        "no record in the project"
    );
    assert_eq!(
        project_records(&env).len(),
        1,
        "{:?}",
        project_records(&env)
    );
    assert!(project_records(&env)[0].ends_with("kept.json"));
    let out = env.zot(&["info", "kept", "--json"]);
    let info: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(info["provenance"]["source"], url.as_str(), "{info}");
    assert_ok(&env.zot(&["verify", "kept"]));

    write_extension(&repo, "kept", "2.0.0");
    git(&repo, &["commit", "-q", "-am", "two"]);
    let ext = env.cwd().join(".zot/extensions/kept");
    let (before, trusted) = (snapshot(&ext), snapshot(&env.home().join("trust")));
    for args in [&["update", "kept"][..], &["update", "--all"]] {
        let out = env.zot(args);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {}", stdout(&out));
        assert!(stderr(&out).contains("pass --yes"), "{}", stderr(&out));
        assert_eq!(snapshot(&ext), before, "{args:?}: the copy is unchanged");
        assert_eq!(snapshot(&env.home().join("trust")), trusted, "{args:?}");
    }

    // With --yes, the review `zot ext trust` gives is shown before it is replaced.
    let out = env.zot(&["update", "kept", "--yes"]);
    assert_ok(&out);
    let shown = stdout(&out);
    let review = shown.find("full user permissions").expect(&shown);
    let updated = shown.find("Updated kept").expect(&shown);
    assert!(review < updated, "{shown}");
    let out = env.zot(&["info", "kept", "--json"]);
    let info: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(info["version"], "2.0.0", "{info}");
    let out = env.zot(&["list", "--json"]);
    let rows: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(rows[0]["state"], "enabled", "trusted again: {rows}");
    assert_eq!(rows[0]["installed_from"]["source"], url.as_str(), "{rows}");

    // `remove` forgets the record under $ZOT_HOME.
    assert_ok(&env.zot(&["remove", "kept", "--yes"]));
    assert_eq!(project_records(&env), Vec::<PathBuf>::new());
}

#[test]
fn enable_and_disable_never_write_through_a_planted_temp_link() {
    let env = Env::new("records");
    let victim = env.root().join("bashrc");
    fs::write(&victim, "precious\n").unwrap();
    let src = env.root().join("src");
    write_extension(&src, "plain", "1.0.0");
    let src = src.to_str().unwrap();
    assert_ok(&env.zot(&["install", src, "--yes"]));
    assert_ok(&env.zot(&["install", src, "--project", "--yes"]));
    for dir in [
        env.home().join("extensions/plain"),
        env.cwd().join(".zot/extensions/plain"),
    ] {
        symlink(&victim, dir.join(".extension.json.tmp")).unwrap();
    }
    for scope in ["--global", "--project"] {
        for verb in ["disable", "enable"] {
            let _ = env.zot(&[verb, "plain", scope]);
            assert_eq!(fs::read(&victim).unwrap(), b"precious\n", "{verb} {scope}");
        }
    }
}

#[test]
fn install_update_and_remove_never_follow_a_planted_project_link() {
    let env = Env::new("records");
    let src = env.root().join("src");
    write_extension(&src, "plain", "1.0.0");
    let src = src.to_str().unwrap();
    let elsewhere = env.root().join("elsewhere");
    fs::create_dir_all(&elsewhere).unwrap();
    let zot_dir = env.cwd().join(".zot");

    // `.zot` itself a link.
    symlink(&elsewhere, &zot_dir).unwrap();
    let out = env.zot(&["install", src, "--project", "--yes"]);
    assert!(!out.status.success(), "{}", stdout(&out));
    assert!(stderr(&out).contains(".zot"), "{}", stderr(&out));
    assert_eq!(snapshot(&elsewhere), BTreeMap::new());

    // `.zot/extensions` a link.
    fs::remove_file(&zot_dir).unwrap();
    fs::create_dir_all(&zot_dir).unwrap();
    symlink(&elsewhere, zot_dir.join("extensions")).unwrap();
    let out = env.zot(&["install", src, "--project", "--yes"]);
    assert!(!out.status.success(), "{}", stdout(&out));
    assert!(stderr(&out).contains("extensions"), "{}", stderr(&out));
    assert_eq!(snapshot(&elsewhere), BTreeMap::new());

    // An extension reached through that link is neither removed nor disabled there.
    write_extension(&elsewhere.join("plain"), "plain", "1.0.0");
    let before = snapshot(&elsewhere);
    let _ = env.zot(&["remove", "plain", "--project", "--yes"]);
    let _ = env.zot(&["disable", "plain", "--project"]);
    let _ = env.zot(&["update", "plain", "--project", "--yes"]);
    assert_eq!(snapshot(&elsewhere), before);
}

#[test]
fn new_refuses_a_link_to_an_empty_folder() {
    let env = Env::new("records");
    let elsewhere = env.root().join("elsewhere");
    fs::create_dir_all(&elsewhere).unwrap();
    symlink(&elsewhere, env.cwd().join("fresh")).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_zot"))
        .args(["ext", "new", "fresh", "--lang", "python"])
        .current_dir(env.cwd())
        .env("ZOT_HOME", env.home())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    assert!(stderr(&out).contains("link"), "{}", stderr(&out));
    assert_eq!(snapshot(&elsewhere), BTreeMap::new());
}
