//! Confined classic extensions (`zot ext confine`): a hostile Python extension tries to
//! read a planted secret and `$ZOT_HOME/grants`, to write outside its data dir, to open
//! UDP and TCP sockets, to trace a process, and a child of it reads the secret. Unconfined
//! it can do all of it (the test proves the fence, not the absence of the files);
//! confined, none, and its environment is the documented base. A change to its files
//! stops it from starting until it is confined again; `unconfine` lifts it.

use crate::common::*;
use serde_json::{json, Value};
use std::net::TcpListener;
use std::path::Path;

/// `zot ext call <dir> probe` with the planted paths; the probe's answers.
fn probe(home: &Path, cwd: &Path, dir: &Path, args: &Value) -> Result<Value, String> {
    let out = zot(
        home,
        cwd,
        &[
            "call",
            dir.to_str().unwrap(),
            "probe",
            &args.to_string(),
            "--json",
        ],
    );
    if !out.status.success() {
        return Err(text(&out));
    }
    let result: Value =
        serde_json::from_slice(&out.stdout).map_err(|e| format!("{e}: {}", text(&out)))?;
    Ok(serde_json::from_str(first_text(&result).as_str()).unwrap())
}

#[test]
fn a_confined_classic_extension_cannot_get_out_and_an_unconfined_one_can() {
    let abi = zot_host::confine::kernel_report(&Default::default()).0;
    println!("Landlock ABI of this kernel: {abi}");
    assert!(
        abi >= 6,
        "this test needs Landlock ABI 6 (this kernel: {abi})"
    );
    let scratch = TempDir::new("confine");
    let root = scratch.path();
    let (home, cwd) = (root.join("zot-home"), root.join("project"));
    for dir in [&home, &cwd, &root.join("user/.ssh"), &root.join("outside")] {
        std::fs::create_dir_all(dir).unwrap();
    }
    let secret = root.join("user/.ssh/id_rsa");
    std::fs::write(&secret, "PRIVATE KEY").unwrap();
    std::fs::create_dir_all(home.join("grants")).unwrap();
    let ext = root.join("hostile");
    copy_dir(&workspace().join("tests/extensions/hostile-py"), &ext);
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let args = json!({
        "secret": secret, "grants": home.join("grants"), "outside": root.join("outside"),
        "port": listener.local_addr().unwrap().port(),
    });

    let free = probe(&home, &cwd, &ext, &args).unwrap();
    for (what, answer) in free.as_object().unwrap() {
        if what != "env" {
            assert_eq!(answer, "ok", "unconfined, {what} works: {free}");
        }
    }

    let out = zot(&home, &cwd, &["confine", ext.to_str().unwrap()]);
    assert_ok(&out);
    let said = stdout(&out);
    println!("{said}");
    assert!(said.contains("hostile is confined"), "{said}");
    assert!(
        said.contains("NOT enforced  no connection to UNIX socket files"),
        "{said}"
    );

    let fenced = probe(&home, &cwd, &ext, &args).unwrap();
    for what in [
        "read secret",
        "read grants",
        "write outside",
        "write via ..",
        "udp socket",
        "tcp connect",
        "ptrace",
        "child reads secret",
    ] {
        let answer = fenced[what].as_str().unwrap_or_default();
        assert!(answer.starts_with("denied"), "confined, {what}: {fenced}");
    }
    for what in ["write data dir", "write temp dir"] {
        assert_eq!(fenced[what], "ok", "confined, {what}: {fenced}");
    }
    // The documented base: PATH, HOME, TMPDIR, and the locale and terminal the host has.
    let mut base = vec!["HOME", "PATH", "TMPDIR"];
    for name in ["LANG", "LC_ALL", "LC_MESSAGES", "TERM", "TZ"] {
        if std::env::var_os(name).is_some() {
            base.push(name);
        }
    }
    base.sort_unstable();
    assert_eq!(fenced["env"], json!(base), "{fenced}");

    // A change to its files: it does not start, confined or not, until confined again.
    let main = ext.join("main.py");
    let mut code = std::fs::read_to_string(&main).unwrap();
    code.push_str("\n# changed\n");
    std::fs::write(&main, code).unwrap();
    let refused = probe(&home, &cwd, &ext, &args).unwrap_err();
    assert!(
        refused.contains("not started unconfined: it changed since it was confined"),
        "{refused}"
    );
    assert_ok(&zot(&home, &cwd, &["confine", ext.to_str().unwrap()]));
    let again = probe(&home, &cwd, &ext, &args).unwrap();
    assert!(
        again["read secret"].as_str().unwrap().starts_with("denied"),
        "{again}"
    );

    let out = zot(&home, &cwd, &["unconfine", ext.to_str().unwrap()]);
    assert_ok(&out);
    assert!(
        stdout(&out).contains("no longer confined"),
        "{}",
        text(&out)
    );
    let free = probe(&home, &cwd, &ext, &args).unwrap();
    assert_eq!(free["read secret"], "ok", "{free}");
}

/// An unconfined run may have replaced its data dir by a link (to the home folder):
/// confined, it does not start, rather than be granted where the link leads.
#[test]
fn a_data_dir_replaced_by_a_link_is_refused() {
    let scratch = TempDir::new("confine-link");
    let root = scratch.path();
    let (home, cwd) = (root.join("zot-home"), root.join("project"));
    for dir in [&home, &cwd, &root.join("user")] {
        std::fs::create_dir_all(dir).unwrap();
    }
    let ext = root.join("hostile");
    copy_dir(&workspace().join("tests/extensions/hostile-py"), &ext);
    assert_ok(&zot(&home, &cwd, &["confine", ext.to_str().unwrap()]));
    let args = json!({"secret": "/nonexistent", "grants": "/nonexistent", "outside": "/nonexistent", "port": 9});
    // Its data dir, as the first start made it, replaced by a link.
    probe(&home, &cwd, &ext, &args).unwrap();
    let data = std::fs::read_dir(home.join("data/@path"))
        .unwrap()
        .next()
        .expect("the first start made its data dir")
        .unwrap()
        .path();
    std::fs::remove_dir_all(&data).unwrap();
    std::os::unix::fs::symlink(root.join("user"), &data).unwrap();
    let refused = probe(&home, &cwd, &ext, &args).unwrap_err();
    assert!(refused.contains("is not a folder of"), "{refused}");
    assert!(refused.contains(&data.display().to_string()), "{refused}");
}

#[test]
fn a_component_is_not_confined_it_is_sandboxed() {
    let scratch = TempDir::new("confine-wasm");
    let (home, cwd) = (scratch.path().join("home"), scratch.path().to_path_buf());
    std::fs::create_dir_all(&home).unwrap();
    let dir = write_manifest(
        &scratch.path().join("comp"),
        &json!({"name": "comp", "wasm": zot_test_guests::REACTOR}),
    );
    let out = zot(&home, &cwd, &["confine", dir.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        text(&out).contains("is a component: it always runs in the sandbox"),
        "{}",
        text(&out)
    );
}
