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
    // The guest is stripped: no `producers` section names its toolchain. How its stdin
    // is served is said.
    assert!(said.contains("sandbox    WASI preview-1 module,"), "{said}");
    assert!(
        said.contains("stdin blocking: it must answer each frame before reading the next"),
        "{said}"
    );
    // Its stderr is in its log, as a command's is.
    let log = std::fs::read_to_string(home.path().join("logs/ext-guest.log")).unwrap();
    assert!(log.contains("[stderr] command started"), "{log}");
    let list = zot_ext(home.path(), &["list", "--json"]);
    let list: Value = serde_json::from_str(&stdout(&list)).unwrap();
    assert_eq!(list[0]["sandbox"]["component"], "preview1", "{list}");
    assert_eq!(list[0]["sandbox"]["stdin"], "blocking", "{list}");
    assert!(list[0]["sandbox"].get("built_with").is_none(), "{list}");

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

/// The preview-1 guest with a `producers` custom section appended (a module may end with
/// custom sections) naming `tool` as what processed it: a module built by it, as far as
/// the host can tell.
fn p1_built_by(dir: &Path, tool: (&str, &str)) -> PathBuf {
    fn string(s: &str) -> Vec<u8> {
        [vec![s.len() as u8], s.as_bytes().to_vec()].concat()
    }
    let body = [
        string("producers"),
        vec![1],
        string("processed-by"),
        vec![1],
        string(tool.0),
        string(tool.1),
    ]
    .concat();
    let mut module = std::fs::read(COMMAND_P1).unwrap();
    module.push(0);
    module.push(body.len() as u8);
    module.extend(body);
    let path = dir.join("p1-named.wasm");
    std::fs::write(&path, module).unwrap();
    path
}

/// A call a preview-1 module read and left unanswered while it waits in a read of stdin
/// times out saying so, naming the toolchain its `producers` section names (as `check`
/// does); a command component's timeout (its stdin is no such read) says only that it
/// did not answer. Either goes on answering.
#[test]
fn a_call_left_unanswered_in_a_blocking_read_of_stdin_says_so_by_name() {
    let scratch = TempDir::new("p1-named");
    let named = p1_built_by(scratch.path(), ("TinyGo", "0.40.0"));
    for kind in [Kind::Preview1, Kind::Command] {
        let name = format!("mute-{}", kind.label());
        let wasm = match kind {
            Kind::Preview1 => named.to_str().unwrap(),
            Kind::Reactor | Kind::Command => kind.wasm(),
        };
        let mut b = HostBuilder::new();
        b.explicit(&name, &component(&name, wasm));
        let host = b.start();
        host.ready();
        let sandbox = &host.entry(&name)["sandbox"];
        match kind {
            Kind::Preview1 => {
                assert_eq!(sandbox["built_with"], "TinyGo 0.40.0", "{sandbox}");
                assert_eq!(sandbox["stdin"], "blocking", "{sandbox}");
            }
            Kind::Reactor | Kind::Command => {
                assert!(sandbox.get("stdin").is_none(), "{sandbox}");
            }
        }
        let r = host.request(
            "call_tool",
            json!({"name": "unanswered", "args": {}, "timeout_ms": 300}),
        );
        assert_eq!(r["success"], false, "{r}");
        let error = r["error"].as_str().unwrap_or_default();
        assert!(error.contains("timed out after 300 ms"), "{error}");
        let blocked = "the preview-1 module (built with TinyGo 0.40.0) is waiting in a read \
                       of stdin with the call unanswered";
        match kind {
            Kind::Preview1 => assert!(error.contains(blocked), "{error}"),
            Kind::Reactor | Kind::Command => {
                assert!(!error.contains("read of stdin"), "{error}")
            }
        }
        let d = host.call_tool("echo", json!({"after": 1}));
        assert_eq!(first_text(&d), r#"{"after":1}"#, "{d}");
        host.shutdown();
    }
}
