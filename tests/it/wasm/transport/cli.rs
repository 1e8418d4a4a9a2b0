//! `zot ext list`, `run`, `grant` and `revoke` with components, and what a bare component
//! asks once installed.

use super::*;
use serde_json::{json, Value};
use std::path::Path;
use zot_test_guests::{COMMAND, REACTOR, SDK_PROBE};

#[test]
fn list_shows_transport_kind_permissions_and_limits() {
    let var = "ZOT_WASM_TEST_LISTED";
    let mut b = HostBuilder::new();
    b.env(var, "v");
    // Asks for more than the default and has no grant.
    b.global(
        "asks",
        &component_with(
            "asks",
            REACTOR,
            json!({"cwd": "read", "env": [var]}),
            json!({"memory_mb": 128}),
        ),
    );
    // The same asks, granted.
    b.global(
        "granted",
        &component_with(
            "granted",
            COMMAND,
            json!({"cwd": "read", "env": [var]}),
            json!({"memory_mb": 128}),
        ),
    );
    grant(
        &b.home(),
        "granted",
        COMMAND,
        json!({"data_dir": true, "cwd": "read", "env": [var]}),
        Some(128),
    );
    b.explicit("plain", &native("plain"));
    let host = b.start();
    host.ready();

    let asks = host.entry("asks");
    println!("asks: {asks}");
    assert_eq!(asks["transport"], "wasm", "{asks}");
    assert_eq!(asks["state"], "ready", "{asks}");
    let s = &asks["sandbox"];
    assert_eq!(s["component"], "reactor", "{s}");
    assert_eq!(s["sha256"].as_str().unwrap_or_default().len(), 64, "{s}");
    assert_eq!(s["sha256"], sha256_of(REACTOR), "{s}");
    assert_eq!(s["asked"]["cwd"], "read", "{s}");
    assert_eq!(s["asked"]["env"], json!([var]), "{s}");
    assert_eq!(s["asked"]["data_dir"], true, "{s}");
    assert!(s["granted"].is_null(), "no grant: {s}");
    let withheld = str_list(&s["withheld"]);
    assert_eq!(withheld.len(), 3, "{withheld:?}");
    assert!(
        withheld.iter().any(|w| w.starts_with("cwd")),
        "{withheld:?}"
    );
    assert!(
        withheld.contains(&format!("env {var}: not granted")),
        "{withheld:?}"
    );
    assert!(
        withheld.iter().any(|w| w.starts_with("memory 128 MiB")),
        "{withheld:?}"
    );
    assert_eq!(s["memory_mb"], 64, "{s}");

    let granted = host.entry("granted");
    println!("granted: {granted}");
    assert_eq!(granted["transport"], "wasm");
    let s = &granted["sandbox"];
    assert_eq!(s["component"], "command", "{s}");
    assert_eq!(s["granted"]["cwd"], "read", "{s}");
    assert_eq!(s["granted"]["env"], json!([var]), "{s}");
    assert_eq!(s["withheld"], json!([]), "{s}");
    assert_eq!(s["memory_mb"], 128, "{s}");

    let plain = host.entry("plain");
    assert_eq!(plain["transport"], "stdio", "{plain}");
    assert!(plain.get("sandbox").is_none(), "{plain}");
    host.shutdown();
}

#[test]
fn ext_run_gives_any_stdio_host_the_sandbox() {
    let _serial = serial();
    let mut b = HostBuilder::new();
    let home = b.home();
    // A classic manifest whose program is `zot ext run <component>`.
    b.explicit(
        "nested",
        &json!({"name": "nested", "exec": env!("CARGO_BIN_EXE_zot"),
                "args": ["ext", "run", "--tool-timeout-ms", "300", REACTOR]}),
    );
    let host = b.start();
    host.ready();
    assert_eq!(host.entry("nested")["transport"], "stdio");
    // hello_ack is rewritten to what the component sees.
    assert_eq!(hello_ack(&host, "nested")["data_dir"], "/data");
    assert_eq!(tool_ok(&host, "echo", json!({"x": 1})), r#"{"x":1}"#);
    tool_denied(&host, "fs_read", json!({"path": "/etc/passwd"}));
    tool_ok(
        &host,
        "fs_write",
        json!({"path": "/data/nested.txt", "text": "hi"}),
    );
    // The component file named is its identity: its data dir is that file's own.
    let written = files_named(&home.join("data"), "nested.txt");
    assert_eq!(written.len(), 1, "{written:?}");
    assert!(
        written[0].starts_with(home.join("data/@path")),
        "{written:?}"
    );
    assert_eq!(std::fs::read_to_string(&written[0]).unwrap(), "hi");
    // Its deadlines hold inside `zot ext run` too; the outer host sees a process exit.
    host.fails(
        "call_tool",
        json!({"name": "spin", "args": {}, "timeout_ms": 300}),
    );
    let ev = wait_exited(&host, "nested", EVENT_TIMEOUT);
    println!("nested spin: {ev}");
    assert_eq!(ev["code"], 1, "{ev}");
    assert!(host
        .log("nested")
        .contains("component ended: deadline exceeded"));
    host.shutdown();
}

/// Starts `zot ext run ARGS` with `ZOT_HOME` under `scratch`, every stdio piped.
fn ext_run(scratch: &Path, args: &[&str]) -> std::process::Child {
    std::process::Command::new(env!("CARGO_BIN_EXE_zot"))
        .args(["ext", "run"])
        .args(args)
        .env("ZOT_HOME", scratch.join("home"))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("zot runs")
}

/// The `tool_result` frames `zot ext run` writes on its stdout, read by a thread.
fn tool_results(child: &mut std::process::Child) -> std::sync::mpsc::Receiver<Value> {
    use std::io::BufRead;
    let (tx, rx) = std::sync::mpsc::channel::<Value>();
    let stdout = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
        {
            match serde_json::from_str::<Value>(&line) {
                Ok(v) if v["type"] == "tool_result" => {
                    let _ = tx.send(v);
                }
                _ => {}
            }
        }
    });
    rx
}

/// The next `tool_result` from `results`, which must be the one for `id`.
fn next_result(results: &std::sync::mpsc::Receiver<Value>, kind: Kind, id: &str) -> Value {
    let v = results
        .recv_timeout(REQUEST_TIMEOUT)
        .unwrap_or_else(|_| panic!("{}: no tool_result {id}", kind.label()));
    assert_eq!(v["id"], id, "{}: {v}", kind.label());
    v
}

#[test]
fn ext_run_skips_lines_that_are_not_json_and_the_component_goes_on() {
    use std::io::Write;
    for kind in Kind::BOTH {
        let scratch = TempDir::new("run-garbage");
        let mut child = ext_run(scratch.path(), &[kind.wasm()]);
        let mut stdin = child.stdin.take().unwrap();
        let results = tool_results(&mut child);
        let result = |id: &str| next_result(&results, kind, id);
        let mut input: Vec<u8> = Vec::new();
        input.extend_from_slice(b"{\"type\":\"hello_ack\",\"protocol_version\":1}\n");
        input.extend_from_slice(
            b"{\"type\":\"tool_call\",\"id\":\"1\",\"name\":\"echo\",\"args\":{}}\n",
        );
        input.extend_from_slice(b"\xff\xfe not UTF-8 \xc3\x28\n");
        input.extend_from_slice(b"{\"type\": \"tool_call\", \"id\": \xff}\n");
        input.extend_from_slice(b"{not json at all\n");
        input.extend_from_slice(b"{\"type\":\"from_the_future\",\"x\":1}\n");
        input.extend_from_slice(
            b"{\"type\":\"tool_call\",\"id\":\"2\",\"name\":\"echo\",\"args\":{\"after\":true}}\n",
        );
        stdin.write_all(&input).unwrap();
        stdin.flush().unwrap();
        assert_eq!(result("1")["content"][0]["text"], "{}", "{}", kind.label());
        assert_eq!(
            result("2")["content"][0]["text"],
            r#"{"after":true}"#,
            "{}: the component answers after the bad lines",
            kind.label()
        );
        drop(stdin);
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{}: {stderr}", kind.label());
        assert_eq!(
            stderr
                .matches("skipped an input line that is not JSON")
                .count(),
            3,
            "{}: {stderr}",
            kind.label()
        );
        assert!(!stderr.contains("panicked"), "{}: {stderr}", kind.label());
    }
}

#[test]
fn ext_run_skips_an_input_line_over_its_cap_and_the_component_goes_on() {
    use std::io::Write;
    const CAP: usize = 1024 * 1024;
    for kind in Kind::BOTH {
        let scratch = TempDir::new("run-oversize");
        let cap = CAP.to_string();
        let mut child = ext_run(scratch.path(), &["--max-frame-bytes", &cap, kind.wasm()]);
        let mut stdin = child.stdin.take().unwrap();
        let results = tool_results(&mut child);
        let result = |id: &str| next_result(&results, kind, id);
        let call = |id: &str, args: &str| {
            format!(r#"{{"type":"tool_call","id":"{id}","name":"echo","args":{args}}}"#)
        };
        let big = call("big", &format!(r#"{{"pad":"{}"}}"#, "x".repeat(3 * CAP)));
        let mut input = String::new();
        input.push_str("{\"type\":\"hello_ack\",\"protocol_version\":1}\n");
        for line in [call("1", "{}"), big.clone(), call("2", r#"{"after":true}"#)] {
            input.push_str(&line);
            input.push('\n');
        }
        stdin.write_all(input.as_bytes()).unwrap();
        stdin.flush().unwrap();
        assert_eq!(result("1")["content"][0]["text"], "{}", "{}", kind.label());
        assert_eq!(
            result("2")["content"][0]["text"],
            r#"{"after":true}"#,
            "{}: the component answers the frame after the long line, and not that one",
            kind.label()
        );
        drop(stdin);
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{}: {stderr}", kind.label());
        let warning = format!(
            "skipped a {}-byte input line: longer than the frame size limit ({CAP} bytes)",
            big.len()
        );
        assert!(
            results.recv_timeout(REQUEST_TIMEOUT).is_err(),
            "{}: nothing answers the skipped line",
            kind.label()
        );
        println!("{}: {}", kind.label(), log_line(&stderr, "skipped a"));
        assert_eq!(
            stderr.matches(&warning).count(),
            1,
            "{}: {stderr}",
            kind.label()
        );
        assert!(!stderr.contains("panicked"), "{}: {stderr}", kind.label());
    }
}

#[test]
fn ext_run_exits_non_zero_when_the_component_dies() {
    use std::io::Write;
    for kind in Kind::BOTH {
        let scratch = TempDir::new("run-dies");
        let mut child = ext_run(scratch.path(), &["--tool-timeout-ms", "200", kind.wasm()]);
        let mut stdin = child.stdin.take().unwrap();
        stdin
            .write_all(b"{\"type\":\"tool_call\",\"id\":\"1\",\"name\":\"spin\",\"args\":{}}\n")
            .unwrap();
        stdin.flush().unwrap();
        // Input stays open: the component's death alone ends the run.
        let out = child.wait_with_output().unwrap();
        drop(stdin);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{}: {stderr}", kind.label());
        assert!(
            stderr.contains("component ended: deadline exceeded"),
            "{}: {stderr}",
            kind.label()
        );
    }
}

#[test]
fn hello_ack_tells_a_component_no_host_path_it_was_not_granted() {
    let _serial = serial();
    for kind in Kind::BOTH {
        let name = format!("paths-{}", kind.label());
        let mut b = HostBuilder::new();
        let root = b.scratch().to_path_buf();
        b.explicit(&name, &component(&name, kind.wasm()));
        // The same component through `zot ext run` inside a stdio host.
        let nested = format!("{name}-run");
        b.explicit(
            &nested,
            &json!({"name": nested, "exec": env!("CARGO_BIN_EXE_zot"),
                    "args": ["ext", "run", kind.wasm()]}),
        );
        let host = b.start();
        host.ready();
        for who in [&name, &nested] {
            let ack = hello_ack(&host, who);
            assert_eq!(ack["extension_dir"], "/", "{who}: {ack}");
            assert_eq!(ack["cwd"], "/", "{who}: {ack}");
            assert_eq!(ack["data_dir"], "/data", "{who}: {ack}");
            let text = ack.to_string();
            assert!(
                !text.contains(root.to_str().unwrap()) && !text.contains("/tmp"),
                "{who}: a host path in {ack}"
            );
        }
        host.shutdown();
    }
}

#[test]
fn grant_shows_records_and_revoke_forgets() {
    let scratch = TempDir::new("grant");
    let home = scratch.path().join("home");
    // Installed globally: its grant is `grants/asker.json`, and `revoke asker` finds it.
    let dir = write_manifest(
        &home.join("extensions").join("asker"),
        &component_with(
            "asker",
            REACTOR,
            json!({"env": ["ZOT_GRANT_A", "ZOT_GRANT_B"], "cwd": "read"}),
            json!({"memory_mb": 96}),
        ),
    );
    let dir = dir.to_str().unwrap();
    let text = |o: &std::process::Output| String::from_utf8_lossy(&o.stdout).into_owned();

    let shown = zot_ext(&home, &["grant", dir]);
    assert!(shown.status.success());
    assert!(text(&shown).contains("read the environment variable ZOT_GRANT_A"));
    assert!(text(&shown).contains("no grant recorded"));
    assert!(
        !home.join("grants/asker.json").exists(),
        "showing grants nothing"
    );

    let one = zot_ext(&home, &["grant", dir, "-p", "env:ZOT_GRANT_A"]);
    assert!(
        one.status.success(),
        "{}",
        String::from_utf8_lossy(&one.stderr)
    );
    let g: Value =
        serde_json::from_slice(&std::fs::read(home.join("grants/asker.json")).unwrap()).unwrap();
    assert_eq!(g["permissions"]["env"], json!(["ZOT_GRANT_A"]));
    assert_eq!(g["permissions"]["data_dir"], true);
    assert!(g["permissions"].get("cwd").is_none(), "{g}");
    assert_eq!(g["sha256"], sha256_of(REACTOR));

    let all = zot_ext(&home, &["grant", dir, "--all"]);
    assert!(all.status.success());
    let g: Value =
        serde_json::from_slice(&std::fs::read(home.join("grants/asker.json")).unwrap()).unwrap();
    assert_eq!(
        g["permissions"]["env"],
        json!(["ZOT_GRANT_A", "ZOT_GRANT_B"])
    );
    assert_eq!(g["permissions"]["cwd"], "read");
    assert_eq!(g["memory_mb"], 96);

    let bad = zot_ext(&home, &["grant", dir, "-p", "network"]);
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("unknown permission \"network\""));

    let classic = write_manifest(&scratch.path().join("classic"), &native("classic"));
    // A classic extension's grant is recorded, and said to apply only once confined.
    let classic_grant = zot_ext(&home, &["grant", classic.to_str().unwrap(), "--all"]);
    assert!(classic_grant.status.success(), "{}", text(&classic_grant));
    assert!(
        stdout(&classic_grant).contains(
            "is not confined: it runs with your full user permissions, and this grant \
             applies once you confine it"
        ),
        "{}",
        text(&classic_grant)
    );

    let revoked = zot_ext(&home, &["revoke", "asker"]);
    assert!(revoked.status.success());
    assert!(!home.join("grants/asker.json").exists());
    assert!(text(&zot_ext(&home, &["revoke", "asker"])).contains("had no grant"));
}

#[test]
fn a_grant_made_with_the_cli_is_in_force() {
    let _serial = serial();
    let mut b = HostBuilder::new();
    let home = b.home();
    b.env("ZOT_CLI_GRANTED", "through");
    let dir = b.explicit(
        "cligrant",
        &component_with(
            "cligrant",
            REACTOR,
            json!({"env": ["ZOT_CLI_GRANTED"]}),
            json!({}),
        ),
    );
    let out = zot_ext(&home, &["grant", dir.to_str().unwrap(), "--all"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let host = b.start();
    host.ready();
    assert_eq!(
        tool_ok(&host, "env", json!({"name": "ZOT_CLI_GRANTED"})),
        "through"
    );
    let sandbox = &host.entry("cligrant")["sandbox"];
    assert_eq!(
        sandbox["granted"]["env"],
        json!(["ZOT_CLI_GRANTED"]),
        "{sandbox}"
    );
    assert_eq!(sandbox["withheld"], json!([]), "{sandbox}");
    host.shutdown();
}

/// A component carrying its manifest (`zot_ext::embed_manifest!`): the SDK probe's asks
/// for `ZOT_SECTION_TEST`, HTTP to `api.example.com` and 96 MiB of memory. Installed as a
/// bare `.wasm` with `--yes`, exactly that is granted and in force; `zot ext info` shows
/// it.
#[test]
fn a_bare_component_gets_what_its_embedded_manifest_asks_once_installed() {
    let _serial = serial();
    let mut b = HostBuilder::new();
    let home = b.home();
    b.env("ZOT_SECTION_TEST", "from the section");
    let file = b.scratch().join("probe.wasm");
    std::fs::copy(SDK_PROBE, &file).unwrap();
    let out = zot_ext(&home, &["install", file.to_str().unwrap(), "--yes"]);
    let shown = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{shown}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for asked in [
        "read the environment variable ZOT_SECTION_TEST",
        "make HTTP requests to api.example.com",
        "use up to 96 MiB of memory",
        "Installed sdk-probe 0.1.0",
    ] {
        assert!(shown.contains(asked), "{asked}: {shown}");
    }
    let grant: Value =
        serde_json::from_slice(&std::fs::read(home.join("grants").join("sdk-probe.json")).unwrap())
            .unwrap();
    assert_eq!(
        grant["permissions"]["env"],
        json!(["ZOT_SECTION_TEST"]),
        "{grant}"
    );
    assert_eq!(
        grant["permissions"]["http"],
        json!(["api.example.com"]),
        "{grant}"
    );
    assert_eq!(grant["memory_mb"], 96, "{grant}");
    let manifest: Value = serde_json::from_slice(
        &std::fs::read(home.join("extensions/sdk-probe/extension.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(manifest["limits"], json!({"memory_mb": 96}), "{manifest}");
    assert!(manifest.get("description").is_some(), "{manifest}");

    let out = zot_ext(&home, &["info", "sdk-probe"]);
    let info = String::from_utf8_lossy(&out.stdout);
    assert!(
        info.contains("asks         read and write its own data directory"),
        "{info}"
    );
    assert!(
        info.contains("read the environment variable ZOT_SECTION_TEST"),
        "{info}"
    );
    let out = zot_ext(&home, &["info", "sdk-probe", "--json"]);
    let info: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        info["asks"]["permissions"]["env"],
        json!(["ZOT_SECTION_TEST"]),
        "{info}"
    );
    assert_eq!(info["asks"]["limits"]["memory_mb"], 96, "{info}");

    let host = b.start();
    assert_eq!(host.ready(), ["sdk-probe"]);
    assert_eq!(
        tool_ok(&host, "env", json!({"name": "ZOT_SECTION_TEST"})),
        "from the section"
    );
    let sandbox = &host.entry("sdk-probe")["sandbox"];
    assert_eq!(sandbox["withheld"], json!([]), "{sandbox}");
    assert_eq!(sandbox["memory_mb"], 96, "{sandbox}");
    host.shutdown();
}

/// `--ext file.wasm` asks what the file's embedded manifest asks: without a grant it is
/// withheld, and the component runs with the defaults.
#[test]
fn an_explicit_bare_component_asks_what_its_embedded_manifest_asks() {
    let _serial = serial();
    let mut b = HostBuilder::new();
    b.env("ZOT_SECTION_TEST", "not granted");
    let file = b.scratch().join("probe.wasm");
    std::fs::copy(SDK_PROBE, &file).unwrap();
    b.ext_path(&file);
    let host = b.start();
    assert_eq!(host.ready(), ["sdk-probe"]);
    let sandbox = &host.entry("sdk-probe")["sandbox"];
    assert_eq!(
        sandbox["asked"]["env"],
        json!(["ZOT_SECTION_TEST"]),
        "{sandbox}"
    );
    let withheld = sandbox["withheld"].to_string();
    assert!(
        withheld.contains("env ZOT_SECTION_TEST: not granted"),
        "{withheld}"
    );
    assert!(
        withheld.contains("http api.example.com: not granted"),
        "{withheld}"
    );
    assert_eq!(sandbox["memory_mb"], 64, "{sandbox}");
    assert_eq!(
        tool_ok(&host, "env", json!({"name": "ZOT_SECTION_TEST"})),
        "unset"
    );
    host.shutdown();
}
