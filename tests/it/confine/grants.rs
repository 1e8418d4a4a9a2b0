//! What a grant opens to a confined extension, and nothing else; the disk quota stops it.

use super::*;
use serde_json::{json, Value};
use std::net::TcpListener;
use std::time::Duration;

/// The grants a component gets, in the same words, open the same things to a confined
/// classic extension — the project read-only, a variable, TCP to the port of an HTTP
/// entry (only that port), its memory and disk — and nothing before they are granted.
/// Revoking them leaves it confined; `check` reports the rules in force.
#[test]
fn grants_open_to_a_confined_extension_what_they_name_and_nothing_else() {
    let abi = landlock_abi();
    let world = World::new("confine-grants", "hostile-py");
    let granted = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = granted.local_addr().unwrap().port();
    let other = world.args["port"].as_u64().unwrap();
    std::fs::write(world.cwd.join("notes.txt"), "project notes").unwrap();
    let manifest = world.ext.join("extension.json");
    let mut m: Value = serde_json::from_slice(&std::fs::read(&manifest).unwrap()).unwrap();
    m["permissions"] = json!({"data_dir": true, "cwd": "read", "env": ["ZOT_TEST_TOKEN"],
                              "http": [format!("http://127.0.0.1:{port}")]});
    m["limits"] = json!({"memory_mb": 128, "disk_mb": 2});
    std::fs::write(&manifest, m.to_string()).unwrap();
    let cwd = world.cwd.display().to_string();
    let args = json!({"connect": [port, other], "read": [cwd], "env": ["ZOT_TEST_TOKEN"],
                      "alloc_mb": 16});
    let ask = |alloc_mb: u64, write: Option<(u64, u64)>| {
        let mut a = args.clone();
        a["alloc_mb"] = json!(alloc_mb);
        if let Some((total, file)) = write {
            a["write_mb"] = json!(total);
            a["file_mb"] = json!(file);
        }
        reach(&world, a)
    };
    let (on_port, on_other) = (format!("connect {port}"), format!("connect {other}"));
    let read_cwd = format!("read {cwd}");

    let free = ask(256, None);
    for what in [&on_port, &on_other, &read_cwd, "alloc"] {
        assert_eq!(free[what], "ok", "unconfined, {what}: {free}");
    }
    assert_eq!(free["env ZOT_TEST_TOKEN"], "t0ken", "{free}");

    world.confine();
    let nothing = ask(16, None);
    for what in [&on_port, &on_other, &read_cwd] {
        assert!(
            nothing[what].as_str().unwrap().starts_with("denied"),
            "not granted, {what}: {nothing}"
        );
    }
    assert_eq!(nothing["env ZOT_TEST_TOKEN"], "unset", "{nothing}");
    assert_eq!(nothing["alloc"], "ok", "{nothing}");

    let out = world.zot(&["grant", world.ext.to_str().unwrap(), "--all"]);
    assert_ok(&out);
    let said = stdout(&out);
    println!("{said}");
    for words in [
        format!("open TCP connections to port {port} (asked for http://127.0.0.1:{port}: the kernel enforces the port, not the host name)"),
        "read (not write) the project directory".to_string(),
        "read the environment variable ZOT_TEST_TOKEN".to_string(),
        "use up to 128 MiB of data memory (RLIMIT_DATA)".to_string(),
        "store up to 2 MiB in its data directory".to_string(),
    ] {
        assert!(said.contains(&words), "{words:?} in {said}");
    }
    assert!(!said.contains("is not confined"), "{said}");

    let open = ask(16, Some((1, 1)));
    println!("granted: {open}");
    for what in [&on_port, &read_cwd, "alloc", "write"] {
        assert_eq!(open[what], "ok", "granted, {what}: {open}");
    }
    assert!(
        open[&on_other].as_str().unwrap().starts_with("denied"),
        "another port: {open}"
    );
    assert_eq!(open["env ZOT_TEST_TOKEN"], "t0ken", "{open}");
    // TCP open to a port, every other attack stays shut: UDP, MPTCP and SCTP too (which
    // Landlock's TCP rules would let through).
    let mut got_out = GotOut::default();
    world.check(&mut got_out, "granted", &world.probe().unwrap());
    got_out.assert_none();
    // Its memory (128 MiB of data) and its quota (one file of 3 MiB > 2 MiB).
    let over = ask(256, Some((3, 3)));
    assert_eq!(over["alloc"], "denied MemoryError", "{over}");
    assert_eq!(over["write"], "denied OSError", "{over}");

    // `check` says it is confined and which rules this kernel enforces.
    let out = world.zot(&["check", world.ext.to_str().unwrap(), "--json"]);
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let confinement = &report["confinement"];
    assert_eq!(confinement["confined"], true, "{report}");
    assert_eq!(confinement["stale"], false, "{report}");
    assert_eq!(confinement["landlock_abi"], abi, "{report}");
    let rules = confinement["rules"].as_array().unwrap();
    assert!(
        rules.iter().any(|r| r["rule"]
            .as_str()
            .unwrap()
            .starts_with("network: TCP connections to the granted ports only")
            && r["enforced"] == true),
        "{report}"
    );
    let text_report = stdout(&world.zot(&["check", world.ext.to_str().unwrap()]));
    assert!(
        text_report.contains(&format!("confined   yes (Landlock ABI {abi} here)")),
        "{text_report}"
    );

    let out = world.zot(&["revoke", world.ext.to_str().unwrap()]);
    assert_ok(&out);
    assert!(stdout(&out).contains("stays confined"), "{}", text(&out));
    let revoked = ask(16, None);
    for what in [&on_port, &read_cwd] {
        assert!(
            revoked[what].as_str().unwrap().starts_with("denied"),
            "revoked, {what}: {revoked}"
        );
    }
    assert!(world.probe().unwrap()["read secret"]
        .as_str()
        .unwrap()
        .starts_with("denied"));
}

/// A confined extension that writes past its disk quota in many files (each within it)
/// is stopped by the watcher, with the reason in the session.
#[test]
fn a_confined_extension_past_its_disk_quota_is_stopped() {
    landlock_abi();
    let world = World::new("confine-disk", "hostile-py");
    let manifest = world.ext.join("extension.json");
    let mut m: Value = serde_json::from_slice(&std::fs::read(&manifest).unwrap()).unwrap();
    m["limits"] = json!({"disk_mb": 2});
    std::fs::write(&manifest, m.to_string()).unwrap();
    world.confine();
    let mut b = HostBuilder::in_dir(&world.root);
    b.ext_path(&world.ext);
    // The state the stop leaves is what is looked at: it is not started again.
    b.arg("--no-restart");
    let host = b.start();
    assert_eq!(host.ready_event()["extensions"], json!(["hostile"]));
    // The watcher may stop it before or after it answers: the call either wrote it all
    // or failed naming the quota.
    let r = host.request(
        "call_tool",
        json!({"name": "reach", "args": {"write_mb": 5, "file_mb": 1}}),
    );
    match r["success"].as_bool() {
        Some(true) => assert_eq!(
            serde_json::from_str::<Value>(&first_text(&r["data"])).unwrap()["write"],
            "ok",
            "{r}"
        ),
        _ => assert!(
            r["error"]
                .as_str()
                .unwrap_or_default()
                .ends_with("exited (disk quota (2 MiB) exceeded)"),
            "{r}"
        ),
    }
    let started = std::time::Instant::now();
    let entry = loop {
        let entry = host.entry("hostile");
        if entry["state"] != "ready" || started.elapsed() > Duration::from_secs(20) {
            break entry;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    println!("after {:?}: {entry}", started.elapsed());
    assert_eq!(entry["state"], "exited", "{entry}");
    assert!(
        entry["error"]
            .as_str()
            .unwrap_or_default()
            .contains("disk quota (2 MiB) exceeded"),
        "{entry}"
    );
    host.shutdown();
}
