//! Escapes are denied, and what is granted works: files, env, cwd, memory, the data dir.

use super::*;
use serde_json::{json, Value};
use zot_test_guests::REACTOR;

/// Every way out of the sandbox the guest can try, for one kind of component; the host
/// is unharmed afterwards.
fn escapes_are_denied(kind: Kind) {
    let name = format!("esc-{}", kind.label());
    let secret_var = "ZOT_WASM_TEST_SECRET";
    let mut b = HostBuilder::new();
    b.env(secret_var, "hunter2");
    let m = component_with(
        &name,
        kind.wasm(),
        json!({"cwd": "read", "env": [secret_var]}),
        json!({}),
    );
    let dir = b.global(&name, &m);
    let outside = b.scratch().join("outside.txt");
    std::fs::write(&outside, "outside the sandbox").unwrap();
    let project_file = b.cwd().join("project.txt");
    std::fs::write(&project_file, "project file").unwrap();
    let home = b.home();
    let host = b.start();
    host.ready();
    let ack = hello_ack(&host, &name);
    assert_eq!(ack["data_dir"], "/data", "{ack}");
    println!("{name}: hello_ack {ack}");

    // Files outside /data.
    tool_denied(&host, "fs_read", json!({"path": "/etc/passwd"}));
    tool_denied(&host, "fs_read", json!({"path": "/data/../../etc/passwd"}));
    tool_denied(
        &host,
        "fs_read",
        json!({"path": "/data/../../../../../../etc/passwd"}),
    );
    tool_denied(&host, "fs_read", json!({"path": outside.to_str().unwrap()}));
    // The project dir was asked for but not granted.
    tool_denied(
        &host,
        "fs_read",
        json!({"path": project_file.to_str().unwrap()}),
    );
    let (_, root) = tool(&host, "fs_list", json!({"path": "/"}));
    println!("  fs_list / -> {root}");

    // Symlinks out of /data: creating one may or may not be refused, following it is.
    for (target, link) in [
        ("/etc/passwd", "/data/abs-link"),
        ("../../../outside.txt", "/data/rel-link"),
        ("../../../../../../../../etc/passwd", "/data/deep-link"),
    ] {
        let (is_error, text) = tool(&host, "fs_symlink", json!({"target": target, "link": link}));
        println!("  fs_symlink {target} at {link}: is_error={is_error} {text}");
        let read = tool_denied(&host, "fs_read", json!({"path": link}));
        assert!(
            !read.contains("root:") && !read.contains("outside the sandbox"),
            "read through {link}: {read}"
        );
    }
    let rel_link = data_dir(&home, &name).join("rel-link");
    if rel_link.symlink_metadata().is_ok() {
        // The link exists on the host and resolves there, but not for the guest.
        assert_eq!(
            std::fs::read_to_string(&rel_link).unwrap(),
            "outside the sandbox"
        );
    }

    // Environment: asked but not granted, and never asked.
    for var in [secret_var, "PATH", "HOME", "ZOT_HOME"] {
        let text = tool_denied(&host, "env", json!({"name": var}));
        assert_eq!(text, "not set", "env {var}");
    }
    let log = wait_log(&host, &name, 0, "withheld: env", EVENT_TIMEOUT);
    let line = log_line(&log, "withheld: env");
    println!("  log: {line}");
    assert!(
        line.contains(&format!("withheld: env {secret_var}: not granted")),
        "{line}"
    );
    assert!(
        log.contains("withheld: cwd"),
        "the cwd is withheld too:\n{log}"
    );

    // Its own manifest and its grant file.
    let manifest_path = dir.join("extension.json");
    let manifest_before = std::fs::read_to_string(&manifest_path).unwrap();
    let grant_path = home.join("grants").join(format!("{name}.json"));
    for path in [
        manifest_path.to_str().unwrap().to_string(),
        grant_path.to_str().unwrap().to_string(),
        format!("/data/../../grants/{name}.json"),
        format!("/data/../../extensions/{name}/extension.json"),
    ] {
        tool_denied(
            &host,
            "fs_write",
            json!({"path": path, "text": "{\"granted\": \"everything\"}"}),
        );
    }
    assert_eq!(
        std::fs::read_to_string(&manifest_path).unwrap(),
        manifest_before,
        "the manifest was changed"
    );
    assert!(!grant_path.exists(), "a grant file appeared");
    assert!(
        !home.join("grants").exists(),
        "something was written to grants/"
    );

    assert_unharmed(&host, &name);
    host.shutdown();
}

#[test]
fn reactor_cannot_escape_its_sandbox() {
    escapes_are_denied(Kind::Reactor);
}

#[test]
fn command_cannot_escape_its_sandbox() {
    escapes_are_denied(Kind::Command);
}

#[test]
fn preview1_cannot_escape_its_sandbox() {
    escapes_are_denied(Kind::Preview1);
}

#[test]
fn data_dir_is_writable_and_survives_a_host_restart() {
    for kind in Kind::BOTH {
        let name = format!("keep-{}", kind.label());
        let root = TempDir::new("wasm-keep");
        let m = component(&name, kind.wasm());
        let text = format!("kept by {name} ✓");

        let mut b = HostBuilder::in_dir(root.path());
        b.global(&name, &m);
        let host = b.start();
        host.ready();
        let wrote = tool_ok(
            &host,
            "fs_write",
            json!({"path": "/data/note.txt", "text": text}),
        );
        assert_eq!(wrote, format!("wrote {} bytes", text.len()));
        assert_eq!(
            tool_ok(&host, "fs_read", json!({"path": "/data/note.txt"})),
            text
        );
        let host_file = data_dir(&host.home, &name).join("note.txt");
        assert_eq!(std::fs::read_to_string(&host_file).unwrap(), text);
        host.shutdown();

        // A new host on the same ZOT_HOME.
        let mut b = HostBuilder::in_dir(root.path());
        b.global(&name, &m);
        let host = b.start();
        host.ready();
        assert_eq!(
            tool_ok(&host, "fs_read", json!({"path": "/data/note.txt"})),
            text
        );
        let listed = tool_ok(&host, "fs_list", json!({"path": "/data"}));
        println!("{name}: /data after a restart: {listed}");
        let listed: Value = serde_json::from_str(&listed).unwrap();
        assert!(
            listed.as_array().unwrap().contains(&json!("note.txt")),
            "{listed}"
        );
        host.shutdown();
    }
}

#[test]
fn granted_env_cwd_and_memory_are_in_force() {
    for kind in Kind::BOTH {
        let name = format!("granted-{}", kind.label());
        let var = "ZOT_WASM_TEST_GRANTED";
        let mut b = HostBuilder::new();
        b.env(var, "granted value")
            .env("ZOT_WASM_TEST_UNASKED", "x");
        let m = component_with(
            &name,
            kind.wasm(),
            json!({"cwd": "read", "env": [var]}),
            json!({"memory_mb": 128}),
        );
        b.global(&name, &m);
        grant(
            &b.home(),
            &name,
            kind.wasm(),
            json!({"data_dir": true, "cwd": "read", "env": [var]}),
            Some(128),
        );
        let project_file = b.cwd().join("project.txt");
        std::fs::write(&project_file, "project file").unwrap();
        std::fs::write(b.scratch().join("outside.txt"), "outside the project").unwrap();
        let host = b.start();
        host.ready();
        let ack = hello_ack(&host, &name);
        let cwd = ack["cwd"].as_str().expect("hello_ack.cwd").to_string();
        println!("{name}: hello_ack.cwd {cwd}, data_dir {}", ack["data_dir"]);

        assert_eq!(tool_ok(&host, "env", json!({"name": var})), "granted value");
        tool_denied(&host, "env", json!({"name": "ZOT_WASM_TEST_UNASKED"}));

        let in_cwd = |f: &str| format!("{}/{f}", cwd.trim_end_matches('/'));
        assert_eq!(
            tool_ok(&host, "fs_read", json!({"path": in_cwd("project.txt")})),
            "project file"
        );
        let listed = tool_ok(&host, "fs_list", json!({"path": cwd}));
        assert!(listed.contains("project.txt"), "{listed}");
        // Read-only.
        tool_denied(
            &host,
            "fs_write",
            json!({"path": in_cwd("project.txt"), "text": "changed"}),
        );
        tool_denied(
            &host,
            "fs_write",
            json!({"path": in_cwd("new.txt"), "text": "new"}),
        );
        assert_eq!(
            std::fs::read_to_string(&project_file).unwrap(),
            "project file"
        );
        assert!(!host.cwd.join("new.txt").exists(), "new.txt was created");
        // Out of the project dir (the file exists beside it on the host).
        tool_denied(&host, "fs_read", json!({"path": in_cwd("../outside.txt")}));

        // 128 MiB granted: 100 MiB fit.
        let alloc = tool_ok(&host, "alloc", json!({"mb": 100}));
        assert_eq!(
            serde_json::from_str::<Value>(&alloc).unwrap()["mb"],
            100,
            "{alloc}"
        );

        let log = host.log(&name);
        assert!(!log.contains("withheld"), "nothing is withheld:\n{log}");
        assert!(
            !log.contains("changed since permissions were granted"),
            "the grant is for this very component:\n{log}"
        );
        assert_unharmed(&host, &name);
        host.shutdown();
    }
}

#[test]
fn without_the_data_dir_permission_nothing_is_mounted() {
    let name = "nodata";
    let mut b = HostBuilder::new();
    b.global(
        name,
        &component_with(name, REACTOR, json!({"data_dir": false}), json!({})),
    );
    let host = b.start();
    host.ready();
    let ack = hello_ack(&host, name);
    assert_eq!(ack["data_dir"], "", "{ack}");
    tool_denied(
        &host,
        "fs_write",
        json!({"path": "/data/x.txt", "text": "x"}),
    );
    tool_denied(&host, "fs_list", json!({"path": "/data"}));
    assert!(
        !data_dir(&host.home, name).exists(),
        "a data dir was created on the host"
    );
    assert_eq!(host.entry(name)["sandbox"]["asked"]["data_dir"], false);
    assert_unharmed(&host, name);
    host.shutdown();
}
