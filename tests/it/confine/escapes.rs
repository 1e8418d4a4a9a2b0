//! Hostile extensions, in Python and as a static Go binary, confined and not: what gets out;
//! a reload, a data dir that is a link, a component (sandboxed, never confined).

use super::*;
use serde_json::{json, Value};
use std::path::Path;

#[test]
fn a_confined_classic_extension_cannot_get_out_and_an_unconfined_one_can() {
    landlock_abi();
    let world = World::new("confine", "hostile-py");

    let free = world.probe().unwrap();
    assert_free(&free);
    world.reset_outside();
    // Another extension's data, beside its own.
    let other = world.home.join("data/other/notes.txt");
    std::fs::create_dir_all(other.parent().unwrap()).unwrap();
    std::fs::write(&other, "another extension's notes").unwrap();
    let read_other = json!({"read": [other]});
    let key = format!("read {}", other.display());
    assert_eq!(reach(&world, read_other.clone())[&key], "ok");

    let said = world.confine();
    println!("{said}");
    assert!(said.contains("hostile is confined"), "{said}");
    let denied = reach(&world, read_other)[&key].clone();
    assert!(denied.as_str().unwrap().starts_with("denied"), "{denied}");
    assert!(
        said.contains(
            "NOT enforced  no connection to UNIX socket files outside its data and temp dirs"
        ),
        "{said}"
    );

    let mut got_out = GotOut::default();
    let fenced = world.probe().unwrap();
    println!("confined: {fenced}");
    world.check(&mut got_out, "confined", &fenced);
    assert_eq!(fenced["env"], base_env(false), "{fenced}");

    // A change to its files: it does not start, confined or not, until confined again.
    change(&world.ext.join("main.py"));
    let refused = world.probe().unwrap_err();
    assert!(
        refused.contains("not started unconfined: it changed since it was confined"),
        "{refused}"
    );
    world.confine();
    let again = world.probe().unwrap();
    assert!(
        again["read secret"].as_str().unwrap().starts_with("denied"),
        "{again}"
    );

    let out = world.zot(&["unconfine", world.ext.to_str().unwrap()]);
    assert_ok(&out);
    assert!(
        stdout(&out).contains("no longer confined"),
        "{}",
        text(&out)
    );
    let free = world.probe().unwrap();
    assert_eq!(free["read secret"], "ok", "{free}");
    got_out.assert_none();
}

/// `tests/extensions/hostile-go` built with the pinned Go into `dir` (a copy of the
/// folder): `dir/hostile`, a static executable (`CGO_ENABLED=0`: no libc, no loader). Its
/// source is kept `gofmt`-clean.
fn build_hostile_go(dir: &Path) {
    let started = std::time::Instant::now();
    let out = crate::common::go_command(crate::common::go())
        .args(["build", "-trimpath", "-o", "hostile", "."])
        .current_dir(dir)
        .output()
        .expect("go runs");
    assert!(
        out.status.success(),
        "go build of hostile-go failed ({}):\n{}",
        out.status,
        text(&out)
    );
    println!("built hostile-go in {:.1?}", started.elapsed());
    let gofmt = crate::common::go().with_file_name("gofmt");
    let out = crate::common::go_command(&gofmt)
        .args(["-l", "."])
        .current_dir(dir)
        .output()
        .expect("gofmt runs");
    assert!(
        out.status.success() && out.stdout.is_empty(),
        "gofmt -l: {}",
        text(&out)
    );
    let binary = std::fs::read(dir.join("hostile")).unwrap();
    assert!(binary.starts_with(b"\x7fELF"), "not an ELF executable");
    assert!(
        !binary.windows(8).any(|w| w == b"ld-linux"),
        "hostile-go is not static: it names a dynamic loader"
    );
}

/// The same attacks from a static binary that needs no libc and makes its system calls
/// itself (`syscall.RawSyscall6(SYS_PTRACE, PTRACE_SEIZE, …)`, `io_uring_setup`, …), and
/// its `power` tool's: what capabilities, keyrings and the host's limits would give.
#[test]
fn a_confined_static_go_binary_cannot_get_out_and_an_unconfined_one_can() {
    landlock_abi();
    let world = World::new("confine-go", "hostile-go");
    build_hostile_go(&world.ext);

    let free = world.probe().unwrap();
    assert_free(&free);
    world.reset_outside();
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    if root {
        assert_has(&power(&world, None), POWERS, "unconfined, Go, as root");
    }

    let said = world.confine();
    assert!(said.contains("hostile is confined"), "{said}");
    let mut got_out = GotOut::default();
    let fenced = world.probe().unwrap();
    println!("confined: {fenced}");
    world.check(&mut got_out, "confined", &fenced);
    assert_eq!(fenced["env"], base_env(true), "{fenced}");
    // The same, from raw system calls: no libc to fall back on, no clone3 to choose.
    let powers = power(&world, None);
    println!("confined, Go: {powers}");
    assert_powerless(&powers, "confined, Go");
    if root {
        assert_eq!(powers["uid"], 0);
    }

    // The binary is part of what was confined: a new build does not start.
    let binary = world.ext.join("hostile");
    let mut bytes = std::fs::read(&binary).unwrap();
    bytes.extend_from_slice(b"\0changed");
    std::fs::write(&binary, bytes).unwrap();
    let refused = world.probe().unwrap_err();
    assert!(
        refused.contains("not started unconfined: it changed since it was confined"),
        "{refused}"
    );
    got_out.assert_none();
}

/// In a `zot host` session: a confined extension is started confined again by `reload`
/// (a new process, still fenced), and one changed on disk since it was confined is not
/// started by it.
#[test]
fn a_reload_starts_a_confined_extension_confined_and_a_changed_one_not_at_all() {
    landlock_abi();
    let world = World::new("confine-reload", "hostile-py");
    let said = world.confine();
    assert!(said.contains("hostile is confined"), "{said}");
    // The session's ZOT_HOME is the world's: the grant made by `confine` is the one read.
    let mut b = HostBuilder::in_dir(&world.root);
    b.ext_path(&world.ext);
    let host = b.start();
    let ready = host.ready_event();
    assert_eq!(ready["extensions"], json!(["hostile"]), "{ready}");

    let call = |host: &Host| -> Value {
        let data = host.call_tool("probe", world.args.clone());
        serde_json::from_str(&first_text(&data)).unwrap()
    };
    let mut got_out = GotOut::default();
    let first = call(&host);
    world.check(&mut got_out, "confined, in a session", &first);

    let report = host.ok("reload", json!({}));
    println!("reload: {report}");
    assert_eq!(report["errors"], json!([]), "{report}");
    assert_eq!(report["ready"], json!(["hostile"]), "{report}");
    let second = call(&host);
    assert_ne!(first["pid"], second["pid"], "reload started it again");
    world.check(&mut got_out, "confined, after a reload", &second);

    change(&world.ext.join("main.py"));
    let report = host.ok("reload", json!({}));
    println!("reload after a change: {report}");
    let errors = report["errors"].as_array().unwrap();
    assert_eq!(errors.len(), 1, "{report}");
    assert_eq!(errors[0]["extension"], "hostile", "{report}");
    let error = errors[0]["error"].as_str().unwrap();
    assert!(
        error.contains("not started unconfined: it changed since it was confined"),
        "{report}"
    );
    let refused = host.fails("call_tool", json!({"name": "probe", "args": world.args}));
    println!("probe after it: {refused}");
    host.shutdown();
    got_out.assert_none();
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
