//! Outgoing HTTP: only the allow-list, no sockets.

use super::*;
use serde_json::{json, Value};
use zot_test_guests::{COMMAND, REACTOR};

/// The allow-list in force: (a) a listed loopback literal is reached; (b) an unlisted host
/// is refused before any lookup; (c) a listed name resolving to loopback is refused after
/// DNS; (d) an entry asked but not granted is withheld and refused. Every refusal names
/// the host in the guest's error and in the extension's log.
fn http_follows_the_allow_list(kind: Kind) {
    const BODY: &str = "hello from the local server";
    let server = LocalServer::text(BODY, 8);
    let ungranted = LocalServer::text("must not be reached", 8);
    let name = format!("http-{}", kind.label());
    let literal = format!("http://127.0.0.1:{}", server.port);
    let by_name = format!("http://localhost:{}", server.port);
    let not_granted = format!("http://127.0.0.1:{}", ungranted.port);
    let mut b = HostBuilder::new();
    b.global(
        &name,
        &component_with(
            &name,
            kind.wasm(),
            json!({"http": [literal, by_name, not_granted]}),
            json!({}),
        ),
    );
    grant(
        &b.home(),
        &name,
        kind.wasm(),
        json!({"data_dir": true, "http": [literal, by_name]}),
        None,
    );
    let host = b.start();
    host.ready();

    // (d) is visible before anything runs.
    let withheld = str_list(&host.entry(&name)["sandbox"]["withheld"]);
    assert_eq!(
        withheld,
        vec![format!("http {not_granted}: not granted")],
        "{withheld:?}"
    );

    // (a) The listed literal.
    let got = tool_ok(
        &host,
        "http_get",
        json!({"url": format!("{literal}/hello?x=1")}),
    );
    let got: Value = serde_json::from_str(&got).unwrap();
    assert_eq!(got, json!({"status": 200, "body": BODY}), "{got}");
    assert_eq!(server.hits(), 1);

    // (b) Not listed: refused before DNS.
    let err = tool_denied(
        &host,
        "http_get",
        json!({"url": "http://not-listed.invalid/x"}),
    );
    assert!(
        err.contains("not-listed.invalid") && err.contains("HttpRequestDenied"),
        "{err}"
    );
    let log = wait_log(
        &host,
        &name,
        0,
        "denied HTTP to not-listed.invalid:",
        EVENT_TIMEOUT,
    );
    println!("  {}", log_line(&log, "denied HTTP to not-listed.invalid:"));
    // The right host on another port, or https on the listed port, is not listed either.
    let other_port = format!("http://127.0.0.1:{}/", ungranted.port);
    tool_denied(&host, "http_get", json!({"url": other_port}));
    tool_denied(
        &host,
        "http_get",
        json!({"url": format!("https://127.0.0.1:{}/", server.port)}),
    );

    // (c) Listed by name, but the name resolves to loopback: refused after the lookup,
    // although 127.0.0.1 on that port is listed too (the literal entry allows requests to
    // the address, never to a name for it).
    let err = tool_denied(&host, "http_get", json!({"url": format!("{by_name}/")}));
    assert!(
        err.contains("localhost") && err.contains("DestinationIpProhibited"),
        "{err}"
    );
    let log = wait_log(&host, &name, 0, "denied HTTP to localhost:", EVENT_TIMEOUT);
    let line = log_line(&log, "denied HTTP to localhost:");
    println!("  {line}");
    assert!(line.contains("loopback"), "{line}");

    // (d) Asked, not granted: refused.
    let log = wait_log(
        &host,
        &name,
        0,
        &format!("withheld: http {not_granted}: not granted"),
        EVENT_TIMEOUT,
    );
    assert!(log.contains("withheld: http"), "{log}");
    assert_eq!(ungranted.hits(), 0, "the ungranted server was reached");
    assert_eq!(
        server.hits(),
        1,
        "only the allowed request reached the server"
    );
    assert_unharmed(&host, &name);
    host.shutdown();
}

#[test]
fn reactor_http_follows_the_allow_list() {
    http_follows_the_allow_list(Kind::Reactor);
}

#[test]
fn command_http_follows_the_allow_list() {
    http_follows_the_allow_list(Kind::Command);
}

/// `wasi:sockets` is off: a component's TCP connection to a listening port, UDP bind and
/// lookup of `localhost` are each refused by the host, and nothing reaches the listener;
/// the same guest built natively (unsandboxed) does all three.
#[test]
fn sockets_are_off_for_a_component_and_the_same_guest_natively_has_them() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let sockets = |manifest: Value| -> Value {
        let mut b = HostBuilder::new();
        b.explicit("net", &manifest);
        let host = b.start();
        host.ready();
        let said = tool_ok(&host, "sockets", json!({ "port": port }));
        host.shutdown();
        serde_json::from_str(&said).unwrap()
    };
    let free = sockets(native("net"));
    assert_eq!(
        free,
        json!({"tcp connect": "ok", "udp bind": "ok", "name lookup": "ok"})
    );
    assert!(listener.accept().is_ok(), "natively, the connection came");
    for kind in [Kind::Reactor, Kind::Command] {
        let fenced = sockets(component("net", kind.wasm()));
        assert_eq!(
            fenced,
            json!({"tcp connect": "denied access-denied", "udp bind": "denied access-denied",
                   "name lookup": "denied permanent-resolver-failure"}),
            "{kind:?}"
        );
        let came = listener.accept();
        assert!(came.is_err(), "{kind:?}: a connection came: {came:?}");
    }
}

#[test]
fn without_http_permissions_every_request_is_refused() {
    let server = LocalServer::text("must not be reached", 4);
    let name = "nohttp";
    let mut b = HostBuilder::new();
    b.explicit(name, &component(name, REACTOR));
    let host = b.start();
    host.ready();
    let url = format!("http://127.0.0.1:{}/", server.port);
    let err = tool_denied(&host, "http_get", json!({ "url": url }));
    assert!(err.contains("HttpRequestDenied"), "{err}");
    let log = wait_log(&host, name, 0, "denied HTTP to 127.0.0.1:", EVENT_TIMEOUT);
    let line = log_line(&log, "denied HTTP to 127.0.0.1:");
    assert!(line.contains("no http permission"), "{line}");
    assert_eq!(server.hits(), 0);
    assert_unharmed(&host, name);
    host.shutdown();
}

#[test]
fn a_component_of_another_wit_version_is_refused_clearly() {
    let mut b = HostBuilder::new();
    b.explicit("future", &component("future", zot_test_guests::FUTURE));
    b.explicit("steady", &component("steady", REACTOR));
    let host = b.start();
    host.ready();
    let e = host.entry("future");
    println!("future: {e}");
    assert_eq!(e["state"], "error", "{e}");
    let error = e["error"].as_str().unwrap();
    assert!(error.contains("zot:extension/guest@0.2.0"), "{error}");
    assert!(
        error.contains("this host speaks zot:extension@0.1.0"),
        "{error}"
    );
    assert_unharmed(&host, "steady");
    host.shutdown();
}

#[test]
fn ext_list_json_shows_the_component_kind_without_starting_it() {
    let scratch = TempDir::new("listkind");
    let home = scratch.path().join("home");
    for (name, wasm) in [
        ("r", REACTOR),
        ("c", COMMAND),
        ("f", zot_test_guests::FUTURE),
    ] {
        write_manifest(
            &home.join("extensions").join(name),
            &component_with(name, wasm, json!({"env": ["X"]}), json!({"memory_mb": 32})),
        );
    }
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_zot"))
        .args(["ext", "list", "--json"])
        .env("ZOT_HOME", &home)
        .current_dir(scratch.path())
        .output()
        .unwrap();
    assert!(out.status.success());
    let rows: Value = serde_json::from_slice(&out.stdout).unwrap();
    let row = |n: &str| {
        rows.as_array()
            .unwrap()
            .iter()
            .find(|r| r["name"] == n)
            .unwrap()
            .clone()
    };
    assert_eq!(row("r")["transport"], "wasm");
    assert_eq!(row("r")["sandbox"]["component"], "reactor");
    assert_eq!(row("c")["sandbox"]["component"], "command");
    assert_eq!(
        row("f")["sandbox"]["component"],
        Value::Null,
        "another WIT version"
    );
    assert_eq!(row("r")["sandbox"]["asked"]["env"], json!(["X"]));
    assert_eq!(row("r")["sandbox"]["limits"]["memory_mb"], 32);
    assert_eq!(row("r")["sandbox"]["granted"], Value::Null);
    assert!(!home.join("cache").exists(), "listing compiles nothing");
}
