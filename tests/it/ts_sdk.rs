//! The TypeScript SDK (`guest-sdk/ts`, the npm package `@zot/ext`) through its example
//! `examples/ts-hello`, driven by `zot host`.
//!
//! TypeScript is pinned by `guest-sdk/ts/package-lock.json` and installed once per
//! target dir by `npm ci` ([`npm_installed`]). The SDK and the example are copied into a
//! scratch folder of this process's in the target dir (laid out as in the repository, so
//! the example's `file:../../guest-sdk/ts` dependency points at the copy) and built there
//! with that `tsc`: the source tree is never written.

use crate::common::*;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// The example's name: its folder, its manifest's `name`, the extension's `hello`.
const NAME: &str = "ts-hello";

/// The files of each package that a build reads (never `node_modules/` or `dist/`).
const SOURCES: &[&str] = &["package.json", "package-lock.json", "tsconfig.json", "src"];

/// The built example folder (`dist/main.js` beside its `extension.json`), built once per
/// test process.
fn built_example() -> &'static Path {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT.get_or_init(build)
}

/// Installs the pinned TypeScript, then builds the SDK and the example into
/// `<target>/tmp/ts-sdk-build-<pid>` (removing the folders of earlier runs that are gone).
fn build() -> PathBuf {
    let started = Instant::now();
    let typescript = npm_installed(
        "guest-sdk/ts",
        "ts-sdk-typescript",
        "node_modules/typescript/bin/tsc",
    );
    println!("npm ci (or reuse) took {:.1?}", started.elapsed());
    assert_eq!(
        pinned_typescript("examples/ts-hello"),
        pinned_typescript("guest-sdk/ts"),
        "the example builds with the TypeScript the SDK pins"
    );
    let tsc = typescript.join("node_modules/typescript/bin/tsc");

    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR"));
    remove_stale_builds(tmp);
    let root = tmp.join(format!("ts-sdk-build-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    let sdk = copy_sources("guest-sdk/ts", &root);
    let example = copy_sources("examples/ts-hello", &root);
    std::fs::copy(
        workspace().join("examples/ts-hello/extension.json"),
        example.join("extension.json"),
    )
    .unwrap();

    let t = Instant::now();
    run_tsc(&tsc, &sdk);
    println!("SDK built in {:.1?}", t.elapsed());
    for file in ["index.js", "index.d.ts", "extension.js", "stdio.js"] {
        assert!(sdk.join("dist").join(file).is_file(), "tsc emitted {file}");
    }
    // What `npm install` makes of the `file:` dependency: a link to the SDK's folder.
    let scope = example.join("node_modules/@zot");
    std::fs::create_dir_all(&scope).unwrap();
    std::os::unix::fs::symlink("../../../../guest-sdk/ts", scope.join("ext")).unwrap();
    let t = Instant::now();
    run_tsc(&tsc, &example);
    println!("example built in {:.1?}", t.elapsed());
    assert!(example.join("dist/main.js").is_file());
    example
}

/// The exact `typescript` version `folder`'s package.json pins (a bare version, no range).
fn pinned_typescript(folder: &str) -> String {
    let path = workspace().join(folder).join("package.json");
    let package: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let version = package["devDependencies"]["typescript"]
        .as_str()
        .unwrap_or_else(|| panic!("{} pins typescript", path.display()))
        .to_string();
    assert!(
        version.chars().all(|c| c.is_ascii_digit() || c == '.'),
        "{}: typescript is pinned exactly, not {version:?}",
        path.display()
    );
    version
}

/// Removes the build folders of test processes that no longer run.
fn remove_stale_builds(tmp: &Path) {
    for entry in std::fs::read_dir(tmp).into_iter().flatten().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(pid) = name.strip_prefix("ts-sdk-build-") else {
            continue;
        };
        if pid.parse().is_ok_and(process_gone) {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

/// Copies the [`SOURCES`] of the workspace folder `folder` to the same place under `root`.
fn copy_sources(folder: &str, root: &Path) -> PathBuf {
    let from = workspace().join(folder);
    let to = root.join(folder);
    std::fs::create_dir_all(&to).unwrap();
    for item in SOURCES {
        let source = from.join(item);
        if source.is_dir() {
            copy_dir(&source, &to.join(item));
        } else {
            std::fs::copy(&source, to.join(item))
                .unwrap_or_else(|e| panic!("copy {}: {e}", source.display()));
        }
    }
    to
}

/// `tsc -p <project>`, which must succeed with no diagnostics.
fn run_tsc(tsc: &Path, project: &Path) {
    let out = Command::new("node")
        .arg(tsc)
        .arg("-p")
        .arg(project)
        .output()
        .unwrap_or_else(|e| panic!("cannot run node (is it installed?): {e}"));
    assert!(
        out.status.success() && out.stdout.is_empty(),
        "tsc -p {} ({}):\n{}",
        project.display(),
        out.status,
        text(&out)
    );
}

/// A host with the built example (`--ext`), ready, and its scratch folder (which outlives
/// the host, for the log after shutdown); prints how long start to ready took.
fn start() -> (Host, TempDir) {
    let example = built_example();
    let scratch = TempDir::new(NAME);
    let mut b = HostBuilder::in_dir(scratch.path());
    b.ext_path(example);
    let host = b.start();
    host.set_event_filter(|v| v["type"] != "registry_changed");
    assert_eq!(
        host.ready(),
        vec![NAME.to_string()],
        "{}",
        host.diagnostics()
    );
    println!(
        "{NAME}: zot host start to host_ready in {:.1?}",
        host.started.elapsed()
    );
    let entry = host.entry(NAME);
    assert_eq!(entry["state"], "ready", "{entry}");
    assert_eq!(entry["transport"], "stdio", "{entry}");
    (host, scratch)
}

/// Shuts the host down; the extension acknowledged and exited by itself.
fn shut_down((host, _scratch): (Host, TempDir)) {
    let log_path = host.home.join("logs").join(format!("ext-{NAME}.log"));
    host.shutdown();
    let log = std::fs::read_to_string(&log_path).unwrap_or_default();
    assert!(log.contains("acknowledged shutdown"), "{log}");
    assert!(!log.contains("of shutdown: SIGTERM"), "{log}");
}

#[test]
fn the_example_registers_its_command_tools_and_interceptor() {
    let run = start();
    let host = &run.0;
    let entry = host.entry(NAME);
    let mut commands = str_list(&entry["commands"]);
    commands.sort();
    assert_eq!(commands, ["count", "hello"], "{entry}");
    assert_eq!(str_list(&entry["tools"]), ["shout", "slow"], "{entry}");
    assert_eq!(str_list(&entry["intercept"]), ["tool_call"], "{entry}");

    let tools = host.ok("tools", json!({}));
    let shout = tools["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "shout")
        .unwrap_or_else(|| panic!("no shout in {tools}"))
        .clone();
    assert_eq!(shout["description"], "Upper-case a text.", "{shout}");
    assert_eq!(
        shout["schema"],
        json!({"type": "object",
               "properties": {"text": {"type": "string", "description": "What to shout."}},
               "required": ["text"]}),
        "the schema as the example wrote it"
    );
    shut_down(run);
}

#[test]
fn the_command_notifies_and_answers_a_prompt() {
    let run = start();
    let host = &run.0;
    let d = host.ok("invoke_command", json!({"name": "hello", "args": "Ada"}));
    assert_eq!(d["action"], "prompt", "{d}");
    assert_eq!(
        d["prompt"], "Say hello to Ada in one short sentence.",
        "{d}"
    );
    assert_eq!(d["extension"], NAME, "{d}");
    let note = host.wait_notify_within(NAME, "ts-hello greets", EVENT_TIMEOUT);
    assert_eq!(note, "ts-hello greets Ada");
    shut_down(run);
}

#[test]
fn the_tool_answers_text_and_structured_content_and_its_errors() {
    let run = start();
    let host = &run.0;
    let d = host.call_tool("shout", json!({"text": "hi there"}));
    assert_eq!(d["is_error"], false, "{d}");
    assert_eq!(first_text(&d), "HI THERE");
    assert_eq!(d["structured_content"], json!({"length": 8}), "{d}");

    let d = host.call_tool("shout", json!({}));
    assert_eq!(d["is_error"], true, "{d}");
    assert_eq!(first_text(&d), "missing the string argument \"text\"");
    shut_down(run);
}

#[test]
fn the_interceptor_blocks_rewrites_and_allows() {
    let run = start();
    let host = &run.0;
    let ask = |command: &str| {
        host.ok(
            "intercept",
            json!({"event": "tool_call", "tool_id": "c1", "tool_name": "bash",
                   "tool_args": {"command": command}}),
        )
    };
    let d = ask("rm -rf /");
    assert_eq!(d["block"], true, "{d}");
    assert_eq!(
        d["reason"],
        "ts-hello: refused to delete the whole disk (rm -rf /)"
    );

    let d = ask("ls -la");
    assert_eq!(d["block"], false, "{d}");
    assert!(d.get("modified_args").is_none_or(Value::is_null), "{d}");

    let d = ask("sudo ls");
    assert_eq!(d["block"], false, "{d}");
    assert_eq!(d["modified_args"], json!({"command": "ls"}), "{d}");
    shut_down(run);
}

#[test]
fn a_2_mib_argument_goes_there_and_back() {
    let run = start();
    let host = &run.0;
    // Two bytes a character: lines the SDK joins from many chunks, cut inside characters.
    let text = "é".repeat(1 << 20);
    assert_eq!(text.len(), 2 << 20);
    let d = host.call_tool("shout", json!({ "text": text }));
    assert_eq!(d["is_error"], false, "is_error");
    let answer = first_text(&d);
    assert!(
        answer == "É".repeat(1 << 20),
        "the upper-cased text comes back whole"
    );
    assert_eq!(d["structured_content"], json!({"length": 1 << 20}));
    // The extension goes on.
    assert_eq!(
        first_text(&host.call_tool("shout", json!({"text": "ok"}))),
        "OK"
    );
    shut_down(run);
}

#[test]
fn tool_cancel_aborts_the_handlers_signal() {
    let run = start();
    let host = &run.0;
    // The host gives up after 300 ms and sends tool_cancel; the tool would run a minute.
    let started = Instant::now();
    let r = host.request(
        "call_tool",
        json!({"name": "slow", "args": {"ms": 60_000}, "timeout_ms": 300}),
    );
    assert_eq!(r["success"], false, "the call times out: {r}");
    let note = host.wait_notify_within(NAME, "slow: cancelled", EVENT_TIMEOUT);
    assert!(note.starts_with("slow: cancelled (call "), "{note}");
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "the signal, not the tool's minute, ended it"
    );
    // A result after the cancel is not sent, the log says so, and the extension goes on.
    let d = host.call_tool("slow", json!({"ms": 1}));
    assert_eq!(first_text(&d), "slept 1 ms");
    let log = host.log(NAME);
    assert!(
        log.contains("was cancelled; its result is not sent"),
        "{log}"
    );
    shut_down(run);
}

#[test]
fn a_panel_opens_redraws_on_a_key_and_closes() {
    let run = start();
    let host = &run.0;
    let d = host.ok("invoke_command", json!({"name": "count", "args": ""}));
    assert_eq!(d["action"], "open_panel", "{d}");
    assert_eq!(
        d["open_panel"],
        json!({"id": "count", "title": "Count", "lines": ["0"], "footer": "+ adds one, q closes"}),
        "{d}"
    );
    let key = |k: &str| {
        host.ok(
            "panel_key",
            json!({"extension": NAME, "panel_id": "count", "key": k, "text": k}),
        )
    };
    key("+");
    let ev = host.wait_event("panel_render", EVENT_TIMEOUT, |v| {
        v["type"] == "panel_render"
    });
    assert_eq!(ev["extension"], NAME, "{ev}");
    assert_eq!(ev["panel_id"], "count", "{ev}");
    assert_eq!(ev["lines"], json!(["1"]), "{ev}");
    key("q");
    let ev = host.wait_event("panel_close", EVENT_TIMEOUT, |v| v["type"] == "panel_close");
    assert_eq!(ev["panel_id"], "count", "{ev}");
    shut_down(run);
}
