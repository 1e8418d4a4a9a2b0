//! Installing from git at a ref and a path, and a `.wasm`; consent, provenance, update and
//! verify.

use super::*;
use crate::common::{assert_ok, git, stderr, stdout, text};
use serde_json::Value;
use std::fs;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

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

/// Where users keep code: a bare repository on disk (no `.git` in its name) is a git
/// source, and an extension three levels down (`examples/extensions/<name>`, as the
/// published zot repository keeps them) is suggested with `--path`.
#[test]
fn a_bare_repository_is_a_git_source_and_deep_extensions_are_suggested() {
    let env = Env::new("cli-ext");
    let repo = env.root().join("work");
    let ext = repo.join("examples/extensions/guard");
    fs::create_dir_all(&ext).unwrap();
    fs::write(ext.join("extension.json"), manifest("guard")).unwrap();
    fs::write(ext.join("run.sh"), "#!/bin/sh\n").unwrap();
    git(&repo, &["init", "-q"]);
    git(&repo, &["add", "."]);
    git(&repo, &["commit", "-qm", "one"]);
    let bare = env.root().join("srv/guard");
    let out = Command::new("git")
        .args(["clone", "-q", "--bare"])
        .arg(&repo)
        .arg(&bare)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let bare = bare.to_str().unwrap();
    let out = env.zot(&["install", bare, "--yes"]);
    assert_fails_with(
        &out,
        "\nhint: install one of them with --path, e.g. --path examples/extensions/guard",
    );
    let out = env.zot(&[
        "install",
        bare,
        "--path",
        "examples/extensions/guard",
        "--yes",
    ]);
    assert_ok(&out);
    let info = info_json(&env, "guard");
    assert_eq!(info["provenance"]["kind"], "git", "{info}");
    assert_eq!(
        info["provenance"]["commit"],
        rev_parse(&repo, "HEAD").as_str()
    );
}

/// A script that is not executable would not start: install says so, with the fix,
/// before the question (and installs it: the user may fix it in place).
#[test]
fn a_program_that_is_not_executable_is_warned_about_at_install() {
    let env = Env::new("cli-ext");
    let src = env.source("plain", &manifest("plain"));
    let run = src.join("run.sh");
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(&run, fs::Permissions::from_mode(0o644)).unwrap();
    let out = env.zot(&["install", src.to_str().unwrap(), "--yes"]);
    assert_ok(&out);
    assert!(
        stderr(&out).contains(
            "warning: run.sh is not executable: it will not start. `chmod +x run.sh` in the \
             source"
        ),
        "{}",
        text(&out)
    );
    // An executable one is not warned about.
    let src = env.source("fine", &manifest("fine"));
    fs::set_permissions(src.join("run.sh"), fs::Permissions::from_mode(0o755)).unwrap();
    let out = env.zot(&["install", src.to_str().unwrap(), "--yes"]);
    assert!(!stderr(&out).contains("not executable"), "{}", text(&out));
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
    // The progress ends by clearing its line (the sequence itself, not its escaped
    // text) and names the file as the source has it, not where it was staged.
    assert!(
        shown.contains("\r\x1b[2Kcompiling hello.wasm: "),
        "{shown:?}"
    );
    assert!(
        !shown.contains("\\x0d") && !shown.contains("\\x1b"),
        "{shown:?}"
    );
    assert!(!shown.contains(".tmp-install-"), "{shown:?}");
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

/// `disable` is zot's own switch, not a changed file: `verify` finds nothing changed,
/// and an update (even with `--yes`, of a changed source) keeps it off and says so.
#[test]
fn a_disabled_extension_verifies_and_stays_disabled_through_an_update() {
    let env = Env::new("cli-ext");
    let v1 = component_manifest("switch", "1.0.0", "{}");
    let repo = repo_with(
        &env,
        "switch",
        "switch",
        &v1,
        &[("hello.wasm", &hello_wasm())],
    );
    let url = file_url(&repo);
    assert_ok(&env.zot(&["install", &url, "--path", "examples/switch", "--yes"]));
    assert_ok(&env.zot(&["disable", "switch"]));
    let out = env.zot(&["verify", "switch"]);
    assert_ok(&out);
    assert!(stdout(&out).contains("files match"), "{}", text(&out));
    let out = env.zot(&["update", "switch", "--yes"]);
    assert_ok(&out);
    assert!(stdout(&out).contains("is up to date"), "{}", text(&out));

    let v2 = component_manifest("switch", "2.0.0", "{}");
    fs::write(repo.join("examples/switch/extension.json"), &v2).unwrap();
    git(&repo, &["commit", "-q", "-am", "two"]);
    let out = env.zot(&["update", "switch", "--yes"]);
    assert_ok(&out);
    assert!(
        stdout(&out).contains("It stays disabled; turn it on with `zot ext enable switch`."),
        "{}",
        text(&out)
    );
    let info = info_json(&env, "switch");
    assert_eq!(info["version"], "2.0.0", "{info}");
    assert_eq!(info["enabled"], false, "{info}");
    assert_ok(&env.zot(&["verify", "switch"]));
    assert_ok(&env.zot(&["enable", "switch"]));
    assert_ok(&env.zot(&["verify", "switch"]));
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
