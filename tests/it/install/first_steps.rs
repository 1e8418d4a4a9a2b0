//! What a new user trips over (issue 17, first steps): `disable` then `enable` leaves an
//! install verified, enabling twice says so, `rm` is in the help, a text file named
//! `.wasm` is refused before anything is asked about it, and the sidecar takes a slash
//! command by the name a user types. Every test drives the real `zot` binary.

use crate::common::*;
use serde_json::json;
use std::path::Path;

/// An extension installed from a folder whose manifest is written by hand, as a person
/// writes one (its own layout, no `enabled` field).
fn installed(home: &Path, cwd: &Path, manifest: &str) -> std::path::PathBuf {
    let src = cwd.join("src-ext");
    std::fs::create_dir_all(&src).unwrap();
    std::fs::write(src.join("extension.json"), manifest).unwrap();
    let out = zot(home, cwd, &["install", src.to_str().unwrap(), "--yes"]);
    assert!(out.status.success(), "{}", text(&out));
    home.join("extensions/hand")
}

#[test]
fn disable_then_enable_leaves_the_install_as_it_was() {
    let scratch = TempDir::new("friction-enable");
    let b = HostBuilder::in_dir(scratch.path());
    let (home, cwd) = (b.home(), b.cwd());
    let manifest = format!(
        "{{\n    \"name\": \"hand\",\n    \"exec\": \"python3\",\n    \"args\": [\"{}\",   \"--name\", \"hand\"]\n}}\n",
        py_ext().display()
    );
    let dir = installed(&home, &cwd, &manifest);

    let again = zot(&home, &cwd, &["enable", "hand"]);
    assert!(again.status.success(), "{}", text(&again));
    assert!(text(&again).contains("already enabled"), "{}", text(&again));

    let off = zot(&home, &cwd, &["disable", "hand"]);
    assert!(text(&off).contains("now disabled"), "{}", text(&off));
    // The switch is zot's own, not a changed file (issue 36): verify finds nothing.
    let verify = zot(&home, &cwd, &["verify", "hand"]);
    assert!(verify.status.success(), "{}", text(&verify));
    let on = zot(&home, &cwd, &["enable", "hand"]);
    assert!(text(&on).contains("now enabled"), "{}", text(&on));
    assert_eq!(
        std::fs::read_to_string(dir.join("extension.json")).unwrap(),
        manifest,
        "the very bytes there were"
    );
    let verify = zot(&home, &cwd, &["verify", "hand"]);
    assert!(verify.status.success(), "{}", text(&verify));
}

#[test]
fn the_rm_alias_is_in_the_help() {
    let scratch = TempDir::new("friction-help");
    let b = HostBuilder::in_dir(scratch.path());
    let out = zot(&b.home(), &b.cwd(), &["--help"]);
    let help = text(&out);
    let line = help
        .lines()
        .find(|l| l.trim_start().starts_with("remove"))
        .unwrap_or_else(|| panic!("{help}"));
    assert!(line.contains("rm"), "{line}");
}

#[test]
fn a_text_file_named_wasm_is_refused_before_anything_is_asked() {
    let scratch = TempDir::new("friction-fake");
    let b = HostBuilder::in_dir(scratch.path());
    let fake = b.cwd().join("fake.wasm");
    std::fs::write(&fake, "not a component at all\n").unwrap();
    let out = zot(&b.home(), &b.cwd(), &["install", fake.to_str().unwrap()]);
    assert_ne!(out.status.code(), Some(0), "{}", text(&out));
    let said = text(&out);
    assert!(said.contains("not a WebAssembly component"), "{said}");
    assert!(
        !said.contains("It asks"),
        "nothing is asked about it: {said}"
    );
    assert!(!said.contains("sandboxed"), "{said}");
}

#[test]
fn the_sidecar_takes_a_slash_command_as_typed() {
    let mut b = HostBuilder::new();
    b.explicit("py", &py_manifest("py", &["--commands", "note"]));
    let host = b.start();
    host.ready();
    let typed = host.ok("invoke_command", json!({"name": "/note", "args": "x"}));
    let plain = host.ok("invoke_command", json!({"name": "note", "args": "x"}));
    assert_eq!(typed["extension"], "py", "{typed}");
    assert_eq!(typed, plain);
    host.shutdown();
}

/// A start that fails says what to do: each case through `zot ext check DIR`.
#[test]
fn a_program_that_cannot_start_says_what_to_do() {
    use std::os::unix::fs::PermissionsExt;
    let scratch = TempDir::new("friction-start");
    let b = HostBuilder::in_dir(scratch.path());
    let (home, cwd) = (b.home(), b.cwd());
    let case = |name: &str, exec: &str, files: &[(&str, &str, u32)], hint: &str| {
        let dir = cwd.join(name);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("extension.json"),
            json!({"name": name, "exec": exec}).to_string(),
        )
        .unwrap();
        for (file, body, mode) in files {
            let path = dir.join(file);
            std::fs::write(&path, body).unwrap();
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(*mode)).unwrap();
        }
        let out = zot(
            &home,
            &cwd,
            &["check", dir.to_str().unwrap(), "--wait", "5s"],
        );
        let said = text(&out);
        assert_eq!(out.status.code(), Some(1), "{name}: {said}");
        assert!(said.contains("hint: "), "{name}: {said}");
        assert!(said.contains(hint), "{name}: wants {hint:?} in {said}");
        assert!(
            said.contains("before any frame") && !said.contains("protocol violation"),
            "{name}: a start error is not a protocol violation: {said}"
        );
        assert!(!said.contains("  hello  "), "no empty timings: {said}");
    };
    let script = "#!/usr/bin/env python3\nprint('hi')\n";
    case(
        "noshebang",
        "./run.sh",
        &[("run.sh", "echo hi\n", 0o755)],
        "#!",
    );
    case(
        "bare",
        "run.py",
        &[("run.py", script, 0o755)],
        "\"./run.py\"",
    );
    case(
        "notexec",
        "./run.py",
        &[("run.py", script, 0o644)],
        "chmod +x",
    );
    case(
        "nointerp",
        "./run.py",
        &[("run.py", "#!/nonexistent/python9\n", 0o755)],
        "not installed",
    );
    case(
        "unbuilt",
        "./target/release/unbuilt",
        &[("Cargo.toml", "[package]\nname = \"unbuilt\"\n", 0o644)],
        "cargo build",
    );
    case("nopath", "no-such-program-zot", &[], "PATH");
}

/// Manifest typos are named: a missing program with the field it was likely meant to be,
/// a field of the wrong type by its name, an unknown field near a known one as a warning
/// (in `check` and in `host_ready`).
#[test]
fn manifest_typos_are_named_with_the_field_meant() {
    let scratch = TempDir::new("friction-typos");
    let mut b = HostBuilder::in_dir(scratch.path());
    let (home, cwd) = (b.home(), b.cwd());
    let check = |name: &str, manifest: serde_json::Value| {
        let dir = cwd.join(name);
        write_manifest(&dir, &manifest);
        let out = zot(
            &home,
            &cwd,
            &["check", dir.to_str().unwrap(), "--wait", "10s"],
        );
        (out.status.code(), text(&out))
    };
    let (code, said) = check("exce", json!({"name": "exce", "exce": "python3"}));
    assert_eq!(code, Some(1), "{said}");
    assert!(said.contains("is \"exce\" a typo of \"exec\"?"), "{said}");
    let (code, said) = check(
        "args",
        json!({"name": "args", "exec": "python3", "args": "x.py"}),
    );
    assert_eq!(code, Some(1), "{said}");
    assert!(said.contains("field \"args\""), "{said}");
    let mut typo = py_manifest("typo", &[]);
    typo["enabeld"] = json!(false);
    let (code, said) = check("typo", typo.clone());
    assert_eq!(code, Some(0), "a warning, not a failure: {said}");
    assert!(
        said.contains("unknown field \"enabeld\" (a typo of \"enabled\"?)"),
        "{said}"
    );
    b.explicit("typo", &typo);
    let host = b.start();
    let ready = host.ready_event();
    assert!(ready["warnings"].to_string().contains("enabeld"), "{ready}");
    host.shutdown();
}

/// `grant` says the memory a component runs with: what it asks when that is below the
/// default, not the default.
#[test]
fn grant_says_the_memory_a_component_runs_with() {
    let scratch = TempDir::new("friction-memory");
    let b = HostBuilder::in_dir(scratch.path());
    let dir = write_manifest(
        &b.cwd().join("small"),
        &json!({"name": "small", "wasm": "small.wasm", "limits": {"memory_mb": 32}}),
    );
    std::fs::copy(zot_test_guests::REACTOR, dir.join("small.wasm")).unwrap();
    let out = zot(
        &b.home(),
        &b.cwd(),
        &["grant", dir.to_str().unwrap(), "--all"],
    );
    let said = text(&out);
    assert!(out.status.success(), "{said}");
    let granted = said
        .split("granted:")
        .nth(1)
        .unwrap_or_else(|| panic!("{said}"));
    assert!(granted.contains("use up to 32 MiB of memory"), "{said}");
    assert!(!granted.contains("64 MiB"), "{said}");
}

/// `zot ext call EXT` without a tool lists the tools there are.
#[test]
fn call_without_a_tool_lists_the_tools() {
    let scratch = TempDir::new("friction-call");
    let b = HostBuilder::in_dir(scratch.path());
    let dir = write_manifest(
        &b.cwd().join("py"),
        &py_manifest("py", &["--tools", "alpha,beta"]),
    );
    let out = zot(&b.home(), &b.cwd(), &["call", dir.to_str().unwrap()]);
    let said = text(&out);
    assert_eq!(out.status.code(), Some(2), "{said}");
    assert!(
        said.contains("name a tool to call; py has tools: alpha, beta"),
        "{said}"
    );
}

/// A local git repository takes `--ref` as a git URL does; a source with extensions in
/// folders below its top names them and the `--path` to use.
#[test]
fn install_takes_a_local_repository_at_a_ref_and_names_the_folders_to_install() {
    let scratch = TempDir::new("friction-repo");
    let b = HostBuilder::in_dir(scratch.path());
    let (home, cwd) = (b.home(), b.cwd());
    let repo = scratch.path().join("repo");
    write_manifest(&repo.join("exts/hello"), &py_manifest("hello", &[]));
    write_manifest(&repo.join("exts/other"), &py_manifest("other", &[]));
    git(&repo, &["init", "-q"]);
    git(&repo, &["add", "."]);
    git(&repo, &["commit", "-qm", "one"]);
    git(&repo, &["tag", "v1"]);

    let out = zot(&home, &cwd, &["install", repo.to_str().unwrap(), "--yes"]);
    let said = text(&out);
    assert_ne!(out.status.code(), Some(0), "{said}");
    assert!(said.contains("exts/hello, exts/other"), "{said}");
    assert!(
        said.contains("hint: install one of them with --path"),
        "{said}"
    );

    let repo_arg = repo.to_str().unwrap();
    let args = [
        "install",
        repo_arg,
        "--ref",
        "v1",
        "--path",
        "exts/hello",
        "--yes",
    ];
    let out = zot(&home, &cwd, &args);
    assert!(out.status.success(), "{}", text(&out));
    let info = zot(&home, &cwd, &["info", "hello", "--json"]);
    let info: serde_json::Value = serde_json::from_slice(&info.stdout).unwrap();
    assert_eq!(info["provenance"]["kind"], "git", "{info}");
    assert_eq!(info["provenance"]["ref"], "v1", "{info}");
}

/// `update` of an install whose files were changed by hand is not "up to date": it
/// says so and, with consent, puts back the source's files (so `verify` passes).
#[test]
fn update_puts_back_files_changed_since_install_with_consent() {
    let scratch = TempDir::new("friction-update");
    let b = HostBuilder::in_dir(scratch.path());
    let (home, cwd) = (b.home(), b.cwd());
    let manifest = format!(
        "{{\"name\": \"hand\", \"exec\": \"python3\", \"args\": [\"{}\"]}}\n",
        py_ext().display()
    );
    let dir = installed(&home, &cwd, &manifest);
    std::fs::write(dir.join("notes.txt"), "added by hand\n").unwrap();
    let verify = zot(&home, &cwd, &["verify", "hand"]);
    assert_eq!(verify.status.code(), Some(1), "{}", text(&verify));

    let refused = zot(&home, &cwd, &["update", "hand"]);
    let said = text(&refused);
    assert_ne!(
        refused.status.code(),
        Some(0),
        "no terminal, no --yes: {said}"
    );
    assert!(!said.contains("up to date"), "{said}");
    assert!(said.contains("changed since it was installed"), "{said}");
    assert!(
        dir.join("notes.txt").exists(),
        "nothing replaced without consent"
    );

    let out = zot(&home, &cwd, &["update", "hand", "--yes"]);
    assert!(out.status.success(), "{}", text(&out));
    let verify = zot(&home, &cwd, &["verify", "hand"]);
    assert!(verify.status.success(), "{}", text(&verify));
    let again = zot(&home, &cwd, &["update", "hand"]);
    assert!(text(&again).contains("up to date"), "{}", text(&again));
}

/// Installing a Rust crate does not copy its build folder: only the file the manifest
/// runs from `target/`.
#[test]
fn install_of_a_cargo_crate_leaves_its_build_folder_but_the_program() {
    use std::os::unix::fs::PermissionsExt;
    let scratch = TempDir::new("friction-cargo");
    let b = HostBuilder::in_dir(scratch.path());
    let (home, cwd) = (b.home(), b.cwd());
    let src = cwd.join("crate");
    write_manifest(
        &src,
        &json!({"name": "crate", "exec": "./target/release/crate"}),
    );
    std::fs::write(src.join("Cargo.toml"), "[package]\nname = \"crate\"\n").unwrap();
    for dir in ["target/release/deps", "target/debug"] {
        std::fs::create_dir_all(src.join(dir)).unwrap();
    }
    let program = src.join("target/release/crate");
    std::fs::write(&program, "#!/bin/sh\n").unwrap();
    std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::write(src.join("target/release/deps/libbig.rlib"), vec![0u8; 4096]).unwrap();
    std::fs::write(src.join("target/debug/crate"), vec![0u8; 4096]).unwrap();
    let out = zot(&home, &cwd, &["install", src.to_str().unwrap(), "--yes"]);
    assert!(out.status.success(), "{}", text(&out));
    let installed = home.join("extensions/crate");
    assert!(installed.join("target/release/crate").is_file());
    assert!(installed.join("Cargo.toml").is_file());
    assert!(!installed.join("target/release/deps").exists());
    assert!(!installed.join("target/debug").exists());
}

/// Installing a component built by npm does not copy its `node_modules/` (the build's
/// tools, and a link out of the folder to a path dependency): only the component.
#[test]
fn install_of_a_component_leaves_its_node_modules() {
    let scratch = TempDir::new("friction-npm");
    let b = HostBuilder::in_dir(scratch.path());
    let (home, cwd) = (b.home(), b.cwd());
    let src = cwd.join("comp");
    write_manifest(&src, &json!({"name": "comp", "wasm": "comp.wasm"}));
    std::fs::copy(zot_test_guests::REACTOR, src.join("comp.wasm")).unwrap();
    std::fs::write(src.join("package.json"), "{}").unwrap();
    std::fs::create_dir_all(src.join("node_modules/tool/bin")).unwrap();
    std::fs::write(src.join("node_modules/tool/bin/big"), vec![0u8; 4096]).unwrap();
    std::fs::create_dir_all(src.join("node_modules/@zot")).unwrap();
    std::os::unix::fs::symlink("/nowhere/guest-sdk/ts", src.join("node_modules/@zot/ext")).unwrap();
    let out = zot(&home, &cwd, &["install", src.to_str().unwrap(), "--yes"]);
    assert!(out.status.success(), "{}", text(&out));
    let installed = home.join("extensions/comp");
    assert!(installed.join("comp.wasm").is_file());
    assert!(installed.join("package.json").is_file());
    assert!(!installed.join("node_modules").exists());

    // Beside a program, node_modules is what it may run with: copied, and a link out of
    // the folder refused as ever.
    let prog = cwd.join("prog");
    write_manifest(
        &prog,
        &json!({"name": "prog", "exec": "node", "args": ["index.js"]}),
    );
    std::fs::create_dir_all(prog.join("node_modules/@zot")).unwrap();
    std::os::unix::fs::symlink("/nowhere/guest-sdk/ts", prog.join("node_modules/@zot/ext"))
        .unwrap();
    let out = zot(&home, &cwd, &["install", prog.to_str().unwrap(), "--yes"]);
    assert!(!out.status.success(), "{}", text(&out));
    assert!(
        text(&out).contains("points outside the extension"),
        "{}",
        text(&out)
    );
}

/// From a folder inside a project, its extensions are found as from its root (as git
/// finds `.git`), and `list` says which project.
#[test]
fn a_project_is_found_from_its_subfolders() {
    let scratch = TempDir::new("friction-walk");
    let mut b = HostBuilder::in_dir(scratch.path());
    let (home, cwd) = (b.home(), b.cwd());
    b.project("lint", &py_manifest("lint", &[]));
    let deep = cwd.join("src/deep");
    std::fs::create_dir_all(&deep).unwrap();

    let list = zot(&home, &deep, &["list"]);
    let said = text(&list);
    assert!(said.contains("lint"), "{said}");
    assert!(said.contains("untrusted"), "{said}");
    let root = std::fs::canonicalize(&cwd).unwrap();
    assert!(
        said.contains(&format!("Project {} (found from", root.display())),
        "{said}"
    );
    let trusted = zot(&home, &deep, &["trust", "--yes"]);
    assert!(trusted.status.success(), "{}", text(&trusted));
    assert!(text(&trusted).contains(&root.display().to_string()));
    // Trusted from below, it runs from the root and from below.
    let rows = zot(&home, &cwd, &["list", "--json"]);
    let rows: serde_json::Value = serde_json::from_slice(&rows.stdout).unwrap();
    assert_eq!(rows[0]["state"], "enabled", "{rows}");
}

/// Issue 36: the README's quick start for someone who installed `zot` works as written,
/// from an empty folder: each line of its `## Using zot` block is run as it is (the
/// install, which asks, is answered with `--yes`: there is no terminal to ask on).
#[test]
fn the_readmes_quick_start_for_an_installed_zot_works_as_written() {
    let readme = std::fs::read_to_string(workspace().join("README.md")).unwrap();
    let section = readme
        .split_once("## Using zot\n")
        .expect("the README has a `## Using zot` section")
        .1;
    let block = section
        .split_once("```sh\n")
        .and_then(|(_, rest)| rest.split_once("```"))
        .expect("a sh block in it")
        .0;
    let lines: Vec<Vec<String>> = block
        .lines()
        .map(|l| l.split('#').next().unwrap().trim())
        .filter(|l| !l.is_empty())
        .map(|l| l.split_whitespace().map(String::from).collect())
        .collect();
    assert!(lines.len() >= 3, "{block}");
    let scratch = TempDir::new("readme-quick-start");
    let (home, cwd) = (scratch.path().join("home"), scratch.path().join("work"));
    std::fs::create_dir_all(&cwd).unwrap();
    for words in lines {
        assert_eq!(words[0], "zot", "{words:?}");
        let mut args: Vec<&str> = words[2..].iter().map(String::as_str).collect();
        if words[1..3] == ["ext".to_string(), "install".to_string()] {
            args.push("--yes");
        }
        assert_eq!(words[1], "ext", "{words:?}");
        let out = zot(&home, &cwd, &args);
        assert!(out.status.success(), "{words:?}: {}", text(&out));
    }
    let listed = zot(&home, &cwd, &["list"]);
    assert!(stdout(&listed).contains("hi"), "{}", text(&listed));
}
