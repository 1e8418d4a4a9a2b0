//! The TypeScript SDK (`guest-sdk/ts`, the npm package `@zot/ext`) through its example
//! `examples/ts-hello`, built both ways by the example's own npm scripts — `npm run
//! build` (a Node script, `dist/main.js`) and `npm run build:wasm` (a sandboxed
//! component, `ts-hello.wasm`, built with componentize-qjs) — and driven by `zot host`;
//! the Node build also confined (`zot ext confine`, Linux), with the same transcript.
//!
//! The tools (TypeScript, esbuild, componentize-qjs) are pinned by
//! `examples/ts-hello/package-lock.json` and installed once per target dir by `npm ci`
//! ([`npm_installed`]); the scripts find them on `PATH`. The SDK, the WIT package and
//! the example are copied into a scratch folder of this process's in the target dir (laid
//! out as in the repository, so `file:../../guest-sdk/ts` and `../../wit` point at the
//! copies) and built there: the source tree is never written.

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

/// The example's two builds.
#[derive(Clone, Copy, Debug)]
enum Build {
    /// `npm run build`: `node dist/main.js`, a classic stdio extension.
    Node,
    /// `npm run build:wasm`: `ts-hello.wasm`, a reactor component in the sandbox (QuickJS).
    Component,
    /// The same bundle built with componentize-js: a StarlingMonkey component.
    StarlingMonkey,
    /// The Node build confined (`zot ext confine`, Linux), from [`built_node_confinable`]:
    /// `node` is what the base `PATH` (`/usr/local/bin:/usr/bin:/bin`) finds.
    #[cfg(target_os = "linux")]
    NodeConfined,
}

const BUILDS: [Build; 3] = [Build::Node, Build::Component, Build::StarlingMonkey];

impl Build {
    fn label(self) -> &'static str {
        match self {
            Build::Node => "node",
            Build::Component => "quickjs",
            Build::StarlingMonkey => "starlingmonkey",
            #[cfg(target_os = "linux")]
            Build::NodeConfined => "node confined",
        }
    }
}

/// The example, built both ways once per test process.
struct Built {
    /// The example's folder: its `extension.json` runs `node dist/main.js`.
    node: PathBuf,
    /// A folder whose `extension.json` runs the component the example built.
    component: PathBuf,
}

fn built() -> &'static Built {
    static BUILT: OnceLock<Built> = OnceLock::new();
    BUILT.get_or_init(build)
}

/// `npm run <script>` in `dir` with the example's pinned tools first on `PATH`.
pub(crate) fn npm_run(dir: &Path, script: &str) {
    npm_run_with(&ts_tools(), dir, script);
}

/// Checks the pins, copies the SDK, the WIT package and the example into
/// `<target>/tmp/ts-sdk-build-<pid>` (removing the folders of earlier runs that are
/// gone), builds the SDK (`tsc`) and the example both ways.
fn build() -> Built {
    for folder in ["guest-sdk/ts", "examples/ts-hello"] {
        let version = pinned(folder, "typescript");
        assert_eq!(
            version,
            pinned("examples/ts-hello", "typescript"),
            "{folder}"
        );
    }
    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR"));
    remove_stale_builds(tmp);
    let root = tmp.join(format!("ts-sdk-build-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    let sdk = copy_sources("guest-sdk/ts", &root);
    copy_dir(
        &workspace().join("wit/zot-extension-0.1.0"),
        &root.join("wit/zot-extension-0.1.0"),
    );
    let example = copy_sources("examples/ts-hello", &root);
    std::fs::copy(
        workspace().join("examples/ts-hello/extension.json"),
        example.join("extension.json"),
    )
    .unwrap();

    // The SDK as a library (dist/ with its declarations), as its README builds it.
    npm_run(&sdk, "build");
    for file in [
        "index.js",
        "index.d.ts",
        "extension.js",
        "stdio.js",
        "component.js",
    ] {
        assert!(sdk.join("dist").join(file).is_file(), "tsc emitted {file}");
    }
    // What `npm install` makes of the `file:` dependency: a link to the SDK's folder.
    let scope = example.join("node_modules/@zot");
    std::fs::create_dir_all(&scope).unwrap();
    std::os::unix::fs::symlink("../../../../guest-sdk/ts", scope.join("ext")).unwrap();
    npm_run(&example, "build");
    assert!(example.join("dist/main.js").is_file());
    npm_run(&example, "build:wasm");
    let wasm = example.join("ts-hello.wasm");
    let size = std::fs::metadata(&wasm)
        .expect("build:wasm wrote ts-hello.wasm")
        .len();
    println!("{NAME}.wasm: {:.2} MB", size as f64 / 1e6);

    Built {
        component: manifest_for(&wasm),
        node: example,
    }
}

/// A folder beside `wasm` whose `extension.json` runs it.
fn manifest_for(wasm: &Path) -> PathBuf {
    let dir = wasm.with_extension("d");
    std::fs::create_dir_all(&dir).unwrap();
    let manifest = json!({"name": NAME, "version": "0.1.0", "wasm": wasm.to_str().unwrap()});
    std::fs::write(dir.join("extension.json"), manifest.to_string()).unwrap();
    dir
}

/// The example's bundle (`dist/component.js` of `npm run build:wasm`) built with
/// StarlingMonkey, as `zot ext new --engine starlingmonkey` builds: once per process.
fn built_starlingmonkey() -> &'static Path {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT.get_or_init(|| {
        let tools = starlingmonkey_tools();
        let example = &built().node;
        let wasm = example.join("ts-hello-sm.wasm");
        let started = Instant::now();
        let out = Command::new(tools.join("componentize-js"))
            .args([
                "dist/component.js",
                "--wit",
                "../../wit/zot-extension-0.1.0",
            ])
            .args([
                "--world-name",
                "extension",
                "--disable",
                "http",
                "fetch-event",
                "-o",
            ])
            .arg(&wasm)
            .current_dir(example)
            .output()
            .expect("componentize-js runs");
        assert!(out.status.success(), "componentize-js: {}", text(&out));
        let size = std::fs::metadata(&wasm).unwrap().len();
        println!(
            "{NAME}-sm.wasm: {:.2} MB, built with StarlingMonkey in {:.1?}",
            size as f64 / 1e6,
            started.elapsed()
        );
        manifest_for(&wasm)
    })
}

/// The example's folder as the Node build leaves it, with npm's link for the `file:`
/// dependency (`node_modules/@zot/ext -> ../../../../guest-sdk/ts`) replaced by a copy of
/// the SDK's folder, once per process: `zot ext confine` refuses the folder itself, as
/// `zot ext install` does, since that link leads out of it ("replace the link with a copy
/// of what it points to"). The bundle `dist/main.js` does not read it; the components
/// are left out.
#[cfg(target_os = "linux")]
fn built_node_confinable() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let node = &built().node;
        let dir = node.with_file_name("ts-hello-confinable");
        let _ = std::fs::remove_dir_all(&dir);
        for item in SOURCES.iter().chain(&["extension.json", "dist"]) {
            let source = node.join(item);
            if source.is_dir() {
                copy_dir(&source, &dir.join(item));
            } else {
                std::fs::create_dir_all(&dir).unwrap();
                std::fs::copy(&source, dir.join(item))
                    .unwrap_or_else(|e| panic!("copy {}: {e}", source.display()));
            }
        }
        let sdk = std::fs::canonicalize(node.join("node_modules/@zot/ext")).unwrap();
        copy_dir(&sdk, &dir.join("node_modules/@zot/ext"));
        dir
    })
}

/// The exact version of `package` that `folder`'s package.json pins (a bare version, no
/// range).
pub(crate) fn pinned(folder: &str, package: &str) -> String {
    let path = workspace().join(folder).join("package.json");
    let manifest: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let version = manifest["devDependencies"][package]
        .as_str()
        .unwrap_or_else(|| panic!("{} pins {package}", path.display()))
        .to_string();
    assert!(
        version.chars().all(|c| c.is_ascii_digit() || c == '.'),
        "{}: {package} is pinned exactly, not {version:?}",
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

/// A host with the example built `build` (`--ext`), ready, and its scratch folder (which
/// outlives the host, for the log after shutdown); prints how long start to ready took.
fn start(build: Build) -> (Host, TempDir) {
    let (dir, transport) = match build {
        Build::Node => (built().node.as_path(), "stdio"),
        Build::Component => (built().component.as_path(), "wasm"),
        Build::StarlingMonkey => (built_starlingmonkey(), "wasm"),
        #[cfg(target_os = "linux")]
        Build::NodeConfined => (built_node_confinable(), "stdio"),
    };
    let scratch = TempDir::new(NAME);
    let mut b = HostBuilder::in_dir(scratch.path());
    // A missing argument is sent as it is, to see the tool's own error.
    b.arg("--no-validate");
    #[cfg(target_os = "linux")]
    if let Build::NodeConfined = build {
        confine_dir(&b.home(), &b.cwd(), dir, "ts-hello");
    }
    // The first start of a StarlingMonkey component compiles 12 MB (then it is cached).
    b.ext_path(dir).arg("--ready-timeout-ms").arg("120000");
    let host = b.start();
    host.set_event_filter(|v| v["type"] != "registry_changed");
    assert_eq!(
        host.ready_within(Duration::from_secs(130)),
        vec![NAME.to_string()],
        "{build:?}: {}",
        host.diagnostics()
    );
    println!(
        "{NAME} ({build:?}): zot host start to host_ready in {:.1?}",
        host.started.elapsed()
    );
    let entry = host.entry(NAME);
    assert_eq!(entry["state"], "ready", "{entry}");
    assert_eq!(entry["transport"], transport, "{entry}");
    if transport == "stdio" {
        let log = host.log(NAME);
        let confined = !matches!(build, Build::Node);
        assert_eq!(
            log.contains("] info: confined: files: read only the program folders"),
            confined,
            "{build:?}: {log}"
        );
    }
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
    for build in BUILDS {
        let run = start(build);
        let host = &run.0;
        let entry = host.entry(NAME);
        let mut commands = str_list(&entry["commands"]);
        commands.sort();
        assert_eq!(commands, ["count", "hello"], "{entry}");
        assert_eq!(str_list(&entry["tools"]), ["shout", "slow"], "{entry}");
        let mut intercept = str_list(&entry["intercept"]);
        intercept.sort();
        assert_eq!(intercept, ["assistant_message", "tool_call"], "{entry}");
        assert_eq!(str_list(&entry["events"]), ["session_start"], "{entry}");

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
}

#[test]
fn the_command_notifies_and_answers_a_prompt() {
    for build in BUILDS {
        let run = start(build);
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
}

#[test]
fn the_tool_answers_text_and_structured_content_and_its_errors() {
    for build in BUILDS {
        let run = start(build);
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
}

#[test]
fn the_interceptor_blocks_rewrites_and_allows() {
    for build in BUILDS {
        let run = start(build);
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
}

/// A 2 MiB argument (1 MiB for StarlingMonkey, whose engine needs more than the default
/// 64 MiB for a 2 MiB text: measured, it ends with `memory limit`) comes back whole.
#[test]
fn a_2_mib_argument_goes_there_and_back() {
    for build in BUILDS {
        let run = start(build);
        let host = &run.0;
        let chars = match build {
            Build::Node | Build::Component => 1 << 20,
            #[cfg(target_os = "linux")]
            Build::NodeConfined => 1 << 20,
            Build::StarlingMonkey => 1 << 19,
        };
        // Two bytes a character: lines the SDK joins from many chunks, cut inside characters.
        let text = "é".repeat(chars);
        let d = host.call_tool("shout", json!({ "text": text }));
        assert_eq!(d["is_error"], false, "is_error");
        let answer = first_text(&d);
        assert!(
            answer == "É".repeat(chars),
            "{build:?}: the upper-cased text comes back whole"
        );
        assert_eq!(d["structured_content"], json!({ "length": chars }));
        // The extension goes on.
        assert_eq!(
            first_text(&host.call_tool("shout", json!({"text": "ok"}))),
            "OK"
        );
        shut_down(run);
    }
}

#[test]
fn tool_cancel_aborts_the_handlers_signal() {
    let run = start(Build::Node);
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
    for build in BUILDS {
        let run = start(build);
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
}

/// The session every build must answer alike: an event (its note), the command (its
/// note), the tool (text, structured content, an error), the interceptors (block,
/// rewrite, allow; a replaced text) and the panel.
fn script() -> Vec<Step> {
    let bash = bash_call;
    let key = |k: &str| json!({"extension": NAME, "panel_id": "count", "key": k, "text": k});
    let said = |text: &str| json!({"event": "assistant_message", "text": text});
    vec![
        session_start_step(),
        step(
            "invoke_command",
            json!({"name": "hello", "args": "Ada"}),
            1,
            json!({"action": "prompt", "prompt": "Say hello to Ada in one short sentence."}),
        ),
        step(
            "call_tool",
            json!({"name": "shout", "args": {"text": "héllo ✓ \"q\" \\"}}),
            0,
            json!({"is_error": false, "structured_content": {"length": 13}}),
        ),
        step(
            "call_tool",
            json!({"name": "shout", "args": {}}),
            0,
            json!({"is_error": true}),
        ),
        step(
            "intercept",
            bash("c1", "rm -rf /"),
            0,
            json!({"block": true}),
        ),
        step(
            "intercept",
            bash("c2", "sudo ls"),
            0,
            json!({"block": false, "modified_args": {"command": "ls"}}),
        ),
        step(
            "intercept",
            bash("c3", "ls -la"),
            0,
            json!({"block": false}),
        ),
        step(
            "intercept",
            said("Done.\nThe password is hunter2.\nBye"),
            0,
            json!({"block": false, "replace_text": "Done.\n[redacted by ts-hello]\nBye"}),
        ),
        step("intercept", said("All good"), 0, json!({"block": false})),
        step(
            "invoke_command",
            json!({"name": "count", "args": ""}),
            0,
            json!({"action": "open_panel"}),
        ),
        step("panel_key", key("+"), 1, json!({})),
        step("panel_key", key("q"), 1, json!({})),
    ]
}

/// The same TypeScript source, built for Node (run free and, on Linux, confined) and as a
/// component with each engine, answers the session with the same transcript.
#[test]
fn the_component_build_answers_as_the_node_build_does() {
    let mut transcripts = Vec::new();
    #[cfg(target_os = "linux")]
    let builds = [BUILDS.as_slice(), &[Build::NodeConfined]].concat();
    #[cfg(not(target_os = "linux"))]
    let builds = BUILDS;
    for build in builds {
        let run = start(build);
        let label = format!("{NAME} {build:?}");
        let transcript = run_steps(&run.0, &label, script(), |what, s, events| {
            if s.ty == "emit" {
                assert!(
                    is_notify(&events[0], NAME, "ts-hello is ready (data dir: yes)"),
                    "{what}: {events:?}"
                );
            }
        });
        println!("{}", transcript.join("\n"));
        transcripts.push((build, transcript));
        shut_down(run);
    }
    assert_all_same(transcripts.iter().map(|(b, t)| (b.label(), t.as_slice())));
}

/// StarlingMonkey has an event loop: the async `slow` tool (a timer) answers, from inside
/// the host's call.
#[test]
fn in_the_starlingmonkey_component_an_async_handler_runs_to_its_end() {
    let run = start(Build::StarlingMonkey);
    let d = run.0.call_tool("slow", json!({"ms": 200}));
    assert_eq!(d["is_error"], false, "{d}");
    assert_eq!(first_text(&d), "slept 200 ms");
    shut_down(run);
}

/// QuickJS runs no promise callbacks and has no timers once `handle` returns: the async
/// `slow` tool fails at once, saying why, instead of never answering; the component goes
/// on.
#[test]
fn in_the_quickjs_component_an_async_handler_fails_at_once_saying_why() {
    let run = start(Build::Component);
    let host = &run.0;
    let started = Instant::now();
    let r = host.request(
        "call_tool",
        json!({"name": "slow", "args": {"ms": 1}, "timeout_ms": 60_000}),
    );
    let took = started.elapsed();
    assert_eq!(r["success"], true, "answered, not timed out: {r}");
    let d = &r["data"];
    assert_eq!(d["is_error"], true, "{d}");
    let why = first_text(d);
    assert!(
        why.contains("returned a promise") && why.contains("make the handler synchronous"),
        "{why}"
    );
    assert!(took < Duration::from_secs(30), "answered in {took:?}");
    assert_eq!(
        first_text(&host.call_tool("shout", json!({"text": "on"}))),
        "ON"
    );
    shut_down(run);
}
