//! `info` shows hashes and grants; one name resolution; grants only of what is asked;
//! `update --ref`; the form of errors.

use super::*;
use crate::common::{assert_ok, git, stderr, stdout};
use serde_json::{json, Value};
use std::fs;
use std::path::Path;

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
signature    none required when it was installed
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

/// Issue 36: `list`, `info`, `verify` and `check` say the same facts under the same
/// `--json` names (`scope`, `provenance`, `transport`, `confinement`), and `list --long`
/// shows how each runs in columns.
#[test]
fn list_info_verify_and_check_share_one_vocabulary() {
    let env = Env::new("cli-vocab");
    let comp = env.component_source("asker", &component_manifest("asker", "1.0.0", "{}"));
    assert_ok(&env.install(comp.to_str().unwrap()));
    let classic = env.source("plain", &manifest("plain"));
    assert_ok(&env.install(classic.to_str().unwrap()));

    let listed = list_json(&env);
    for row in &listed {
        let name = row["name"].as_str().unwrap();
        let info = info_json(&env, name);
        let out = env.zot(&["verify", name, "--json"]);
        assert_ok(&out);
        let verify: Value = serde_json::from_str(&stdout(&out)).unwrap();
        let out = env.zot(&["check", name, "--json"]);
        let check: Value = serde_json::from_str(&stdout(&out)).unwrap();
        for view in [&info, &verify, &check] {
            assert_eq!(view["scope"], "global", "{name}: {view}");
        }
        assert_eq!(
            (&row["scope"], &row["source"]),
            (&json!("global"), &json!("global"))
        );
        assert_eq!(row["provenance"], info["provenance"], "{name}");
        assert_eq!(row["transport"], info["transport"], "{name}");
        assert_eq!(row["transport"], check["transport"], "{name}");
        assert_eq!(row["confinement"], info["confinement"], "{name}");
        assert_eq!(row["confinement"], check["confinement"], "{name}");
    }

    let out = env.zot(&["list", "--long"]);
    assert_ok(&out);
    let table = stdout(&out);
    let header = table.lines().next().unwrap();
    assert!(
        header.contains("STATE    TRANSPORT  CONFINEMENT  GRANT"),
        "{table}"
    );
    let row = |name: &str| {
        let line = table.lines().find(|l| l.contains(name)).unwrap();
        line.split_whitespace()
            .map(String::from)
            .collect::<Vec<_>>()
    };
    assert_eq!(
        row("asker")[4..7],
        ["wasm", "sandbox", "granted"],
        "{table}"
    );
    assert_eq!(
        row("plain")[4..7],
        ["stdio", "none", "everything"],
        "{table}"
    );
}

/// Issue 36: `grant --json` and `trust --json` say in JSON what their text says, and
/// `trust --json` asks nothing (it trusts only with --yes).
#[test]
fn grant_and_trust_print_json() {
    let env = Env::new("cli-json");
    let src = env.component_source(
        "asker",
        &component_manifest("asker", "1.0.0", r#"{"env":["ASKER_TOKEN"]}"#),
    );
    assert_ok(&env.install(src.to_str().unwrap()));
    assert_ok(&env.zot(&["revoke", "asker"]));
    let json_of = |args: &[&str]| -> Value {
        let out = env.zot(args);
        assert_ok(&out);
        serde_json::from_str(&stdout(&out)).unwrap_or_else(|e| panic!("{e}: {}", stdout(&out)))
    };
    let shown = json_of(&["grant", "asker", "--json"]);
    assert_eq!(shown["name"], "asker", "{shown}");
    assert_eq!(shown["asks"]["env"], json!(["ASKER_TOKEN"]), "{shown}");
    assert_eq!(shown["grant_stale"], false, "{shown}");
    let granted = shown["granted"].clone();
    assert!(
        granted.is_null() || granted["permissions"]["env"].is_null(),
        "{shown}"
    );
    let shown = json_of(&["grant", "asker", "-p", "env:ASKER_TOKEN", "--json"]);
    assert_eq!(
        shown["granted"]["permissions"]["env"],
        json!(["ASKER_TOKEN"]),
        "{shown}"
    );

    let project = env.cwd().join(".zot/extensions/p");
    fs::create_dir_all(&project).unwrap();
    fs::write(project.join("extension.json"), manifest("p")).unwrap();
    fs::write(project.join("run.sh"), "#!/bin/sh\n").unwrap();
    let before = json_of(&["trust", "--json"]);
    assert_eq!(before["changed"], false, "{before}");
    assert_eq!(before["extensions"][0]["name"], "p", "{before}");
    assert_eq!(before["extensions"][0]["trusted"], false, "{before}");
    assert_eq!(
        before["extensions"][0]["untrusted"]["why"], "new",
        "{before}"
    );
    let after = json_of(&["trust", "--json", "--yes"]);
    assert_eq!(after["changed"], true, "{after}");
    assert_eq!(after["extensions"][0]["trusted"], true, "{after}");
    assert_eq!(after["extensions"][0]["untrusted"], Value::Null, "{after}");
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
         http://127.0.0.1:8766 (nearest: http://127.0.0.1:8766); nothing was granted",
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

    // Issue 36: an entry with its scheme is named as it is, not `http:http://…` (which
    // is still understood).
    let out = env.zot(&["grant", "local-http", "-p", "http://127.0.0.1:8766"]);
    assert_ok(&out);
    assert!(!stdout(&out).contains("http:http"), "{}", stdout(&out));
    assert_ok(&env.zot(&["grant", "local-http", "-p", "http:http://127.0.0.1:8766"]));
    let out = env.zot(&["grant", "local-http"]);
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
