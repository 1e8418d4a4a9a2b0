//! WASI preview-1 modules: installed and checked bare; one asking for HTTP is refused.

use super::*;
use serde_json::{json, Value};
use zot_test_guests::COMMAND_P1;

/// A bare preview-1 module installs (named by its hello), checks and lists as one; a
/// preview-1 module whose manifest asks for HTTP does not start, and says why.
#[test]
fn a_bare_preview1_module_installs_and_checks_and_one_asking_for_http_is_refused() {
    let home = TempDir::new("wasm-p1");
    let bare = home.path().join("p1guest.wasm");
    std::fs::copy(COMMAND_P1, &bare).unwrap();
    let out = zot_ext(home.path(), &["install", bare.to_str().unwrap(), "--yes"]);
    assert!(out.status.success(), "{}", text(&out));
    let check = zot_ext(home.path(), &["check", "guest"]);
    let said = stdout(&check);
    assert!(check.status.success(), "{}", text(&check));
    assert!(said.contains("sandbox    WASI preview-1 module"), "{said}");
    // Its stderr is in its log, as a command's is.
    let log = std::fs::read_to_string(home.path().join("logs/ext-guest.log")).unwrap();
    assert!(log.contains("[stderr] command started"), "{log}");
    let list = zot_ext(home.path(), &["list", "--json"]);
    let list: Value = serde_json::from_str(&stdout(&list)).unwrap();
    assert_eq!(list[0]["sandbox"]["component"], "preview1", "{list}");

    let mut b = HostBuilder::new();
    b.explicit(
        "p1http",
        &component_with(
            "p1http",
            COMMAND_P1,
            json!({"http": ["example.com"]}),
            json!({}),
        ),
    );
    let host = b.start();
    host.ready_event();
    let e = host.entry("p1http");
    assert_eq!(e["state"], "error", "{e}");
    let error = e["error"].as_str().unwrap_or_default();
    assert!(error.contains("WASI preview 1 has no network"), "{error}");
    host.shutdown();
}
