//! The Rust examples (`examples/`, on the `zot-ext` SDK), each run three times through
//! the same scripted `zot host` session: as its native executable (a classic stdio
//! extension), as its wasm32-wasip2 component (sandboxed), and (Linux) as the same native
//! executable confined (`zot ext confine`, and `zot ext grant --all` where the component
//! is granted too). The transcripts (every response and event) must be identical; each
//! example's own behaviour is checked on top.
//!
//! Each run loads the example from a copy of its committed manifest
//! (`examples/<name>/native/extension.json` or `…/wasm/extension.json`) with the built
//! artifact put where that manifest names it, as `examples/build.sh` does.

use crate::common::*;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use zot_test_guests::{example, Example, EXAMPLES};

/// The two builds of one example, and the native one confined.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Build {
    Native,
    Wasm,
    /// The native build, laid out as for [`Build::Native`], then confined by `zot ext
    /// confine` (Linux).
    Confined,
}

impl Build {
    /// The published builds: each has its committed manifest.
    const PUBLISHED: [Build; 2] = [Build::Native, Build::Wasm];

    /// Every way an example is run: the published builds and the native one confined.
    #[cfg(target_os = "linux")]
    const ALL: &'static [Build] = &[Build::Native, Build::Wasm, Build::Confined];
    #[cfg(not(target_os = "linux"))]
    const ALL: &'static [Build] = &Build::PUBLISHED;

    /// The folder of its committed manifest.
    fn dir(self) -> &'static str {
        match self {
            Build::Native | Build::Confined => "native",
            Build::Wasm => "wasm",
        }
    }

    fn label(self) -> &'static str {
        match self {
            Build::Native => "native",
            Build::Wasm => "wasm",
            Build::Confined => "confined",
        }
    }

    /// The manifest's field that names the artifact.
    fn field(self) -> &'static str {
        match self {
            Build::Native | Build::Confined => "exec",
            Build::Wasm => "wasm",
        }
    }

    fn artifact(self, ex: Example) -> &'static str {
        match self {
            Build::Native | Build::Confined => ex.native,
            Build::Wasm => ex.wasm,
        }
    }
}

/// The committed manifest of `ex`'s `build`.
fn committed_manifest(ex: Example, build: Build) -> Value {
    let path = workspace()
        .join("examples")
        .join(ex.name)
        .join(build.dir())
        .join("extension.json");
    let text =
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Installs `ex`'s `build` as the global extension `<name>` (replacing what was there)
/// from its committed manifest (changed by `edit`) and the built artifact: both builds
/// installed in turn are one extension, with one grant and one data dir.
fn lay_out(b: &mut HostBuilder, ex: Example, build: Build, edit: impl Fn(&mut Value)) -> PathBuf {
    let mut manifest = committed_manifest(ex, build);
    assert_eq!(manifest["name"], ex.name, "the manifest names its example");
    let field = build.field();
    let file = manifest[field]
        .as_str()
        .unwrap_or_else(|| panic!("{} manifest of {} has no {field}", build.dir(), ex.name))
        .trim_start_matches("./")
        .to_string();
    edit(&mut manifest);
    let _ = std::fs::remove_dir_all(b.home().join("extensions").join(ex.name));
    let dir = b.global(ex.name, &manifest);
    let to = dir.join(&file);
    std::fs::copy(build.artifact(ex), &to)
        .unwrap_or_else(|e| panic!("copy {} to {}: {e}", build.artifact(ex), to.display()));
    dir
}

/// How a test changes an example's manifest, and whether it grants everything asked.
struct Setup {
    edit: Box<dyn Fn(&mut Value)>,
    grant: bool,
}

/// The committed manifest, nothing granted.
fn as_committed() -> Setup {
    Setup {
        edit: Box::new(|_| {}),
        grant: false,
    }
}

/// A host with `ex`'s `build` alone, ready (confined, for [`Build::Confined`]: its log
/// says so).
fn start(mut b: HostBuilder, ex: Example, build: Build, setup: Setup) -> Host {
    prepare(&mut b, ex, build, setup);
    start_prepared(b, ex, build)
}

/// Lays out `ex`'s `build` as `setup` says, confines it ([`Build::Confined`]) and grants
/// what it asks (`setup.grant`); its folder.
fn prepare(b: &mut HostBuilder, ex: Example, build: Build, setup: Setup) -> PathBuf {
    let dir = lay_out(b, ex, build, setup.edit);
    if build == Build::Confined {
        confine_dir(&b.home(), &b.cwd(), &dir, ex.name);
    }
    if setup.grant {
        grant_all(&b.home(), &dir);
    }
    dir
}

/// A host with `ex`'s `build` alone, as [`prepare`] left it, ready.
fn start_prepared(mut b: HostBuilder, ex: Example, build: Build) -> Host {
    b.arg("--provider").arg("test-provider");
    b.arg("--model").arg("test-model");
    let host = b.start();
    host.set_event_filter(|v| v["type"] != "registry_changed");
    assert_eq!(
        host.ready(),
        vec![ex.name.to_string()],
        "{}",
        host.diagnostics()
    );
    let entry = host.entry(ex.name);
    assert_eq!(entry["state"], "ready", "{entry}");
    let transport = match build {
        Build::Native | Build::Confined => "stdio",
        Build::Wasm => "wasm",
    };
    assert_eq!(entry["transport"], transport, "{entry}");
    if build != Build::Wasm {
        let log = host.log(ex.name);
        assert_eq!(
            log.contains("confined: files: read only the program folders"),
            build == Build::Confined,
            "{build:?}: {log}"
        );
    }
    host
}

/// `zot ext grant <dir> --all` for a component or a confined extension laid out in `dir`.
fn grant_all(home: &Path, dir: &Path) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_zot"))
        .args(["ext", "grant"])
        .arg(dir)
        .arg("--all")
        .env("ZOT_HOME", home)
        .output()
        .expect("zot runs");
    assert!(
        out.status.success(),
        "zot ext grant --all: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Runs `script` against each build of `ex` ([`Build::ALL`]: each alone in a fresh host,
/// set up by `setup`), asserts identical transcripts, and returns the transcript and, per
/// build, the host's scratch dir (`home/` is its `ZOT_HOME`; kept for inspection until
/// the returned dirs drop).
fn parity(
    ex: Example,
    script: impl Fn() -> Vec<Step>,
    setup: impl Fn(&mut HostBuilder, Build) -> Setup,
) -> (Vec<String>, Vec<(Build, TempDir)>) {
    let mut transcripts = Vec::new();
    let mut homes = Vec::new();
    for &build in Build::ALL {
        let scratch = TempDir::new(&format!("{}-{}", ex.name, build.label()));
        let mut b = HostBuilder::in_dir(scratch.path());
        // The extension's own answer to arguments its schema refuses is part of what is
        // compared: they are sent as they are, not refused by the host.
        b.arg("--no-validate");
        let setup = setup(&mut b, build);
        let started = Instant::now();
        let host = start(b, ex, build, setup);
        let label = format!("{} {}", ex.name, build.label());
        let lines = run_steps(&host, &label, script(), |_, _, _| {});
        println!("{label}: {} lines in {:?}", lines.len(), started.elapsed());
        host.shutdown();
        transcripts.push((build, lines));
        homes.push((build, scratch));
    }
    assert_all_same(transcripts.iter().map(|(b, t)| (b.label(), t.as_slice())));
    (transcripts[0].1.clone(), homes)
}

fn no_setup(_: &mut HostBuilder, _: Build) -> Setup {
    as_committed()
}

fn cmd(name: &str, args: &str) -> Value {
    json!({"name": name, "args": args})
}

fn tool(name: &str, args: Value) -> Value {
    json!({"name": name, "args": args})
}

fn text(t: &str) -> Value {
    json!([{"type": "text", "text": t}])
}

// ---------------------------------------------------------------------------------------

#[test]
fn every_example_has_a_parity_test() {
    let names: Vec<&str> = EXAMPLES.iter().map(|e| e.name).collect();
    assert_eq!(names, ["hello", "weather", "guard", "todo"]);
    for ex in EXAMPLES {
        for build in Build::PUBLISHED {
            let manifest = committed_manifest(*ex, build);
            let readme = workspace().join("examples").join(ex.name).join("README.md");
            assert!(readme.is_file(), "{} has a README", ex.name);
            assert_eq!(manifest["version"], "0.1.0", "{manifest}");
        }
        // Every way it is run (confined too) has a manifest naming its artifact, built.
        for &build in Build::ALL {
            let manifest = committed_manifest(*ex, build);
            assert!(
                manifest[build.field()].is_string(),
                "{build:?} of {}: {manifest}",
                ex.name
            );
            assert!(
                Path::new(build.artifact(*ex)).is_file(),
                "{build:?} of {}: {} is not built",
                ex.name,
                build.artifact(*ex)
            );
        }
        // The native build asks for nothing: confined, it runs as committed (weather
        // asks for its grants in the test, as the component's manifest does).
        let native = committed_manifest(*ex, Build::Native);
        assert!(native.get("permissions").is_none(), "{native}");
    }
}

#[test]
fn hello_answers_every_command_action_the_same_both_ways() {
    let ex = example("hello");
    let panel_key =
        |key: &str| json!({"extension": "hello", "panel_id": "hello", "key": key, "text": key});
    let script = || {
        vec![
            step(
                "invoke_command",
                cmd("hello", ""),
                0,
                json!({"action": "prompt", "prompt": "Greet me in one short sentence."}),
            ),
            step(
                "invoke_command",
                cmd("hello", "Ada"),
                0,
                json!({"action": "prompt", "prompt": "Greet Ada in one short sentence."}),
            ),
            step(
                "invoke_command",
                cmd("hello-insert", "Ada"),
                0,
                json!({"action": "insert", "insert": "Hello, Ada!"}),
            ),
            step(
                "invoke_command",
                cmd("hello-display", ""),
                0,
                json!({"action": "display",
                       "display": format!("Hello from zot {} (model \"test-model\" of \"test-provider\").",
                                          env!("CARGO_PKG_VERSION"))}),
            ),
            step(
                "invoke_command",
                cmd("hello-panel", ""),
                0,
                json!({"action": "open_panel", "open_panel": {"id": "hello", "title": "Hello",
                       "lines": ["Press any key; q closes."], "footer": "q: close"}}),
            ),
            step("panel_key", panel_key("j"), 1, json!({})),
            step("panel_key", panel_key("q"), 1, json!({})),
            step(
                "invoke_command",
                cmd("hello-submit", "tell me a joke"),
                1,
                json!({"action": "noop"}),
            ),
            step(
                "invoke_command",
                cmd("hello-submit", ""),
                0,
                json!({"action": "noop", "error": "usage: /hello-submit <text>"}),
            ),
            step(
                "invoke_command",
                cmd("hello-noop", ""),
                1,
                json!({"action": "noop"}),
            ),
            step(
                "invoke_command",
                cmd("hello-error", ""),
                0,
                json!({"action": "noop", "error": "hello: this command always fails"}),
            ),
        ]
    };
    let (transcript, _homes) = parity(ex, script, no_setup);
    let events: Vec<Value> = transcript
        .iter()
        .filter_map(|l| l.strip_prefix("    "))
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(
        events,
        [
            json!({"type": "panel_render", "extension": "hello", "panel_id": "hello", "title": "Hello",
                   "lines": ["You pressed \"j\" (text \"j\")."], "footer": "q: close"}),
            json!({"type": "panel_close", "extension": "hello", "panel_id": "hello"}),
            json!({"type": "submit", "extension": "hello", "text": "tell me a joke"}),
            json!({"type": "notify", "extension": "hello", "level": "info",
                   "message": "hello: nothing to do"}),
        ]
    );
}

/// A stand-in for wttr.in: `/<city>?format=j1` for Berlin and "New York", 404 otherwise.
fn weather_server() -> LocalServer {
    LocalServer::start(16, |target| {
        let report = |desc: &str, temp: &str| {
            json!({"current_condition": [{"temp_C": temp, "FeelsLikeC": "7", "humidity": "81",
                   "windspeedKmph": "13", "weatherDesc": [{"value": desc}], "unused": 1}]})
            .to_string()
        };
        match target {
            "/Berlin?format=j1" => (200, report("Light rain", "9")),
            "/New%20York?format=j1" => (200, report("Sunny", "21")),
            _ => (404, "unknown location".into()),
        }
    })
}

#[test]
fn weather_asks_its_service_the_same_way_both_ways() {
    let ex = example("weather");
    let server = weather_server();
    let base = format!("http://127.0.0.1:{}", server.port);
    let script = || {
        vec![
            step(
                "call_tool",
                tool("weather", json!({"city": "Berlin"})),
                0,
                json!({"is_error": false, "content": text(
                    "Berlin: Light rain, 9 °C (feels like 7 °C), humidity 81%, wind 13 km/h")}),
            ),
            step(
                "call_tool",
                tool("weather", json!({"city": " New York "})),
                0,
                json!({"is_error": false, "content": text(
                    "New York: Sunny, 21 °C (feels like 7 °C), humidity 81%, wind 13 km/h")}),
            ),
            step(
                "call_tool",
                tool("weather", json!({"city": "Atlantis"})),
                0,
                json!({"is_error": true, "content": text("weather: the service answered 404")}),
            ),
            step(
                "call_tool",
                tool("weather", json!({"city": ""})),
                0,
                json!({"is_error": true, "content": text("weather: name a city")}),
            ),
            step(
                "call_tool",
                tool("weather", json!({})),
                0,
                json!({"is_error": true}),
            ),
        ]
    };
    let setup = |b: &mut HostBuilder, build: Build| -> Setup {
        b.env("WEATHER_API_URL", &base);
        match build {
            Build::Native => as_committed(),
            // The sandbox reaches only what is asked and granted: the local server instead
            // of wttr.in, and the variable naming it.
            Build::Wasm => Setup {
                edit: Box::new(asks_the_local_server(&base)),
                grant: true,
            },
            // Confined, the native build reaches no more: its manifest asks what the
            // component's asks, granted (the port of the local server, the variable).
            Build::Confined => Setup {
                edit: Box::new(asks_as_the_component(&base)),
                grant: true,
            },
        }
    };
    let (transcript, _homes) = parity(ex, script, setup);
    println!("{}", transcript.join("\n"));
    let expected = [
        "/Berlin?format=j1",
        "/New%20York?format=j1",
        "/Atlantis?format=j1",
    ];
    let targets = server.targets();
    assert_eq!(
        targets,
        expected.repeat(Build::ALL.len()),
        "{:?}",
        Build::ALL
    );
}

/// The component's manifest edited to ask for the local server at `base` instead of
/// wttr.in.
fn asks_the_local_server(base: &str) -> impl Fn(&mut Value) + 'static {
    let entry = base.to_string();
    move |m: &mut Value| {
        assert_eq!(m["permissions"]["http"], json!(["wttr.in"]));
        assert_eq!(m["permissions"]["env"], json!(["WEATHER_API_URL"]));
        m["permissions"]["http"] = json!([entry]);
    }
}

/// The native manifest edited to ask what the component's asks (with the local server at
/// `base` instead of wttr.in): its permissions and its limits.
fn asks_as_the_component(base: &str) -> impl Fn(&mut Value) + 'static {
    let mut wasm = committed_manifest(example("weather"), Build::Wasm);
    asks_the_local_server(base)(&mut wasm);
    move |m: &mut Value| {
        assert!(m.get("permissions").is_none(), "{m}");
        m["permissions"] = wasm["permissions"].clone();
        m["limits"] = wasm["limits"].clone();
    }
}

#[test]
fn weather_without_a_grant_reaches_nothing() {
    let ex = example("weather");
    let server = weather_server();
    let mut b = HostBuilder::new();
    b.env(
        "WEATHER_API_URL",
        &format!("http://127.0.0.1:{}", server.port),
    );
    let host = start(b, ex, Build::Wasm, as_committed());
    let data = host.call_tool("weather", json!({"city": "Berlin"}));
    assert_eq!(data["is_error"], true, "{data}");
    // Not granted, the variable is not even there: the component falls back to wttr.in,
    // which is asked for but not granted either.
    let said = first_text(&data);
    assert!(
        said.starts_with("weather: https://wttr.in/Berlin?format=j1: HTTP request denied: "),
        "{said}"
    );
    assert_eq!(server.hits(), 0);
    assert!(
        host.log("weather").contains("denied HTTP to wttr.in"),
        "{}",
        host.log("weather")
    );
    host.shutdown();
}

/// Confined and asking what the component asks, the native build reaches nothing until it
/// is granted: not the local server (not even with the variable naming it granted alone:
/// its port is not open), not wttr.in.
#[cfg(target_os = "linux")]
#[test]
fn weather_confined_without_a_grant_reaches_nothing() {
    let ex = example("weather");
    let server = weather_server();
    let base = format!("http://127.0.0.1:{}", server.port);
    let session = |grant: &[&str]| {
        let mut b = HostBuilder::new();
        b.env("WEATHER_API_URL", &base);
        let setup = Setup {
            edit: Box::new(asks_as_the_component(&base)),
            grant: false,
        };
        let dir = prepare(&mut b, ex, Build::Confined, setup);
        if !grant.is_empty() {
            let mut args = vec!["grant", dir.to_str().unwrap()];
            for p in grant {
                args.extend(["-p", p]);
            }
            assert_ok(&zot(&b.home(), &b.cwd(), &args));
        }
        let host = start_prepared(b, ex, Build::Confined);
        let data = host.call_tool("weather", json!({"city": "Berlin"}));
        host.shutdown();
        assert_eq!(data["is_error"], true, "{data}");
        first_text(&data)
    };
    // Nothing granted: the variable is not there (its environment is the base one), so it
    // asks wttr.in, which it cannot reach either.
    let said = session(&[]);
    println!("nothing granted: {said}");
    assert!(
        said.starts_with("weather: https://wttr.in/Berlin?format=j1: "),
        "{said}"
    );
    // The variable granted, not the port: it asks the local server, and may not even open
    // an IP socket (seccomp: EPERM).
    let said = session(&["env:WEATHER_API_URL"]);
    println!("the variable granted: {said}");
    assert!(
        said.starts_with(&format!("weather: {base}/Berlin?format=j1: "))
            && said.contains("Operation not permitted"),
        "{said}"
    );
    assert_eq!(server.hits(), 0, "{:?}", server.targets());
}

#[test]
fn guard_audits_events_and_refuses_dangerous_commands_the_same_both_ways() {
    let ex = example("guard");
    let bash = |id: &str, command: &str| {
        json!({"event": "tool_call", "tool_id": id, "tool_name": "bash",
               "tool_args": {"command": command}})
    };
    let refused =
        |why: &str| json!({"block": true, "reason": format!("guard: refused to run {why}")});
    let allowed = json!({"block": false});
    let script = || {
        let emit = |event: Value| step("emit", json!({"event": event}), 0, json!({"delivered": 1}));
        let mut steps = vec![
            emit(json!({"event": "session_start"})),
            emit(json!({"event": "turn_start", "step": 1})),
            emit(
                json!({"event": "tool_call", "tool_id": "t1", "tool_name": "bash",
                        "tool_args": {"command": "ls"}}),
            ),
            emit(json!({"event": "assistant_message", "text": "done"})),
            emit(json!({"event": "turn_end", "stop": "end_turn"})),
        ];
        for (i, (command, verdict)) in [
            ("rm -rf /", refused("rm -rf")),
            (
                "cd /tmp && sudo reboot",
                refused("a command as root (sudo)"),
            ),
            (
                "dd if=/dev/zero of=/dev/sda",
                refused("dd writing to an absolute path"),
            ),
            ("mkfs.ext4 /dev/sdb1", refused("mkfs")),
            (":(){ :|:& };:", refused("a fork bomb")),
            ("chmod -R 777 /", refused("chmod -R 777")),
            ("ls -la", allowed.clone()),
            ("rm -r build", allowed.clone()),
            ("cargo test", allowed.clone()),
        ]
        .into_iter()
        .enumerate()
        {
            steps.push(step(
                "intercept",
                bash(&format!("i{i}"), command),
                0,
                verdict,
            ));
        }
        steps.push(step(
            "intercept",
            json!({"event": "tool_call", "tool_id": "r", "tool_name": "read",
                   "tool_args": {"path": "rm -rf /"}}),
            0,
            allowed.clone(),
        ));
        steps
    };
    let (transcript, homes) = parity(ex, script, no_setup);
    // Allowed calls come back unchanged: no rewritten arguments anywhere.
    assert!(
        !transcript.iter().any(|l| l.contains("modified_args")),
        "{transcript:?}"
    );

    // One audit line per event and per verdict, the same every way (confined, in its data
    // dir too). Events travel on their own queue, so only the order among events and
    // among verdicts is fixed.
    let audits: Vec<(Vec<Value>, Vec<Value>)> = homes
        .iter()
        .map(|(build, scratch)| {
            let log = wait_audit(scratch.path(), 15);
            println!("{build:?} audit.log:\n{log}");
            log.lines()
                .map(|l| serde_json::from_str::<Value>(l).unwrap())
                .partition(|l| l.get("event").is_some())
        })
        .collect();
    for ((build, _), audit) in homes.iter().zip(&audits).skip(1) {
        assert_eq!(&audits[0], audit, "native and {build:?} audit logs");
    }
    let (events, verdicts) = &audits[0];
    let names: Vec<&str> = events.iter().filter_map(|l| l["event"].as_str()).collect();
    assert_eq!(
        names,
        [
            "session_start",
            "turn_start",
            "tool_call",
            "assistant_message",
            "turn_end"
        ]
    );
    assert_eq!(events[2]["tool_args"], json!({"command": "ls"}));
    let blocks = |v: &str| verdicts.iter().filter(|l| l["verdict"] == v).count();
    assert_eq!((blocks("block"), blocks("allow")), (6, 4), "{verdicts:?}");
}

/// The guard's audit log under the scratch dir `root`, once it has `lines` lines (or
/// after 10 s).
fn wait_audit(root: &Path, lines: usize) -> String {
    let path = root.join("home/data/guard/audit.log");
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let log = std::fs::read_to_string(&path).unwrap_or_default();
        if log.lines().count() >= lines || Instant::now() > deadline {
            return log;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn guard_command_counts_what_it_audited() {
    let ex = example("guard");
    for &build in Build::ALL {
        let scratch = TempDir::new("guard-count");
        let host = start(
            HostBuilder::in_dir(scratch.path()),
            ex,
            build,
            as_committed(),
        );
        host.ok("emit", json!({"event": {"event": "turn_start", "step": 1}}));
        let blocked = host.ok(
            "intercept",
            json!({"event": "tool_call", "tool_id": "x", "tool_name": "bash",
                   "tool_args": {"command": "sudo rm -rf /"}}),
        );
        assert_eq!(blocked["block"], true);
        wait_audit(scratch.path(), 2);
        let data = host.ok("invoke_command", cmd("guard", ""));
        assert_eq!(
            data["display"], "guard: 1 events audited, 1 tool calls blocked",
            "{build:?}: {data}"
        );
        host.shutdown();
    }
}

#[test]
fn todo_keeps_its_list_the_same_both_ways() {
    let ex = example("todo");
    let key = |k: &str| json!({"extension": "todo", "panel_id": "todo", "key": k, "text": ""});
    let script = || {
        vec![
            step(
                "call_tool",
                tool("todo", json!({"action": "list"})),
                0,
                json!({"is_error": false, "content": text("The todo list is empty.")}),
            ),
            step(
                "call_tool",
                tool("todo", json!({"action": "add", "text": "buy milk"})),
                0,
                json!({"is_error": false}),
            ),
            step(
                "call_tool",
                tool("todo", json!({"action": "add", "text": "write tests"})),
                0,
                json!({"is_error": false}),
            ),
            step(
                "call_tool",
                tool("todo", json!({"action": "add"})),
                0,
                json!({"is_error": true, "content": text("todo: `add` needs `text`")}),
            ),
            step(
                "call_tool",
                tool("todo", json!({"action": "done", "index": 1})),
                0,
                json!({"is_error": false}),
            ),
            step(
                "call_tool",
                tool("todo", json!({"action": "done", "index": 5})),
                0,
                json!({"is_error": true, "content": text("todo: there is no item 5 (the list has 2)")}),
            ),
            step(
                "call_tool",
                tool("todo", json!({"action": "fly"})),
                0,
                json!({"is_error": true}),
            ),
            step(
                "call_tool",
                tool("todo", json!({"action": "list"})),
                0,
                json!({"is_error": false, "content": text("1. [x] buy milk\n2. [ ] write tests")}),
            ),
            step(
                "invoke_command",
                cmd("todo", "call mum"),
                0,
                json!({"action": "open_panel", "open_panel": {"id": "todo", "title": "Todo (2 open)",
                       "lines": ["> [x] buy milk", "  [ ] write tests", "  [ ] call mum"],
                       "footer": "j/k move · space toggle · d remove · q close"}}),
            ),
            step("panel_key", key("j"), 1, json!({})),
            step("panel_key", key("space"), 1, json!({})),
            step("panel_key", key("j"), 1, json!({})),
            step("panel_key", key("d"), 1, json!({})),
            step("panel_key", key("q"), 1, json!({})),
            step(
                "call_tool",
                tool("todo", json!({"action": "list"})),
                0,
                json!({"is_error": false, "content": text("1. [x] buy milk\n2. [x] write tests")}),
            ),
        ]
    };
    let (transcript, homes) = parity(ex, script, no_setup);
    let renders: Vec<Value> = transcript
        .iter()
        .filter_map(|l| l.strip_prefix("    "))
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(
        renders[1]["lines"],
        json!(["  [x] buy milk", "> [x] write tests", "  [ ] call mum"])
    );
    assert_eq!(
        renders[3]["lines"],
        json!(["  [x] buy milk", "> [x] write tests"])
    );
    assert_eq!(renders[4]["type"], "panel_close");
    // The list is a file in the data dir, where the host put it for every build: confined,
    // the one folder it may write (with its private temp dir, `.tmp`).
    for (build, scratch) in &homes {
        let data = scratch.path().join("home/data/todo");
        let saved = std::fs::read_to_string(data.join("todos.json"))
            .unwrap_or_else(|e| panic!("{build:?}: todos.json: {e}"));
        let items: Value = serde_json::from_str(&saved).unwrap();
        assert_eq!(
            items.as_array().map(Vec::len),
            Some(2),
            "{build:?}: {saved}"
        );
        assert_eq!(
            data.join(".tmp").is_dir(),
            *build == Build::Confined,
            "{build:?}: the private temp dir"
        );
    }
}

/// One list in one data dir, whichever build runs: native, the component, native again,
/// and native confined.
#[test]
fn todo_list_survives_a_restart_and_is_shared_by_both_builds() {
    let ex = example("todo");
    let scratch = TempDir::new("todo-restart");
    let list = |host: &Host| first_text(&host.call_tool("todo", json!({"action": "list"})));
    let host = start(
        HostBuilder::in_dir(scratch.path()),
        ex,
        Build::Native,
        as_committed(),
    );
    let added = host.call_tool("todo", json!({"action": "add", "text": "from native"}));
    assert_eq!(added["is_error"], false, "{added}");
    host.shutdown();
    let saved = scratch.path().join("home/data/todo/todos.json");
    assert!(saved.is_file(), "the native build saved no list");
    // The component sees the same data dir as `/data`.
    let host = start(
        HostBuilder::in_dir(scratch.path()),
        ex,
        Build::Wasm,
        as_committed(),
    );
    let listed = list(&host);
    assert_eq!(
        listed,
        "1. [ ] from native",
        "{}\n{}",
        host.entry("todo"),
        host.diagnostics()
    );
    host.call_tool("todo", json!({"action": "add", "text": "from wasm"}));
    host.shutdown();
    let host = start(
        HostBuilder::in_dir(scratch.path()),
        ex,
        Build::Native,
        as_committed(),
    );
    assert_eq!(list(&host), "1. [ ] from native\n2. [ ] from wasm");
    host.shutdown();
    // Confined (Linux), it keeps the same list in the same data dir.
    if Build::ALL.contains(&Build::Confined) {
        let host = start(
            HostBuilder::in_dir(scratch.path()),
            ex,
            Build::Confined,
            as_committed(),
        );
        assert_eq!(list(&host), "1. [ ] from native\n2. [ ] from wasm");
        let added = host.call_tool("todo", json!({"action": "add", "text": "from confined"}));
        assert_eq!(added["is_error"], false, "{added}");
        host.shutdown();
        let items: Value = serde_json::from_slice(&std::fs::read(&saved).unwrap()).unwrap();
        assert_eq!(items.as_array().map(Vec::len), Some(3), "{items}");
    }
}

#[test]
fn tool_schemas_are_derived_from_the_argument_types() {
    let host = start(
        HostBuilder::new(),
        example("todo"),
        Build::Wasm,
        as_committed(),
    );
    let tools = host.ok("tools", json!({}));
    let schema = &tools["tools"][0]["schema"];
    assert_eq!(schema["type"], "object", "{schema}");
    assert_eq!(schema["required"], json!(["action"]), "{schema}");
    assert_eq!(
        schema["properties"]["action"]["enum"],
        json!(["add", "done", "undo", "remove", "list"]),
        "{schema}"
    );
    assert!(!schema.to_string().contains("$ref"), "{schema}");
    assert_eq!(
        schema["properties"]["index"]["description"],
        "The item's number as `list` shows it, from 1."
    );
    host.shutdown();
}

/// The README's first command ends in `zot ext shell` running examples/demo.zot with hello
/// (native) and guard (a component) loaded: the tour runs through and exits 0, each verb
/// answered by the extension it is meant for.
#[test]
fn the_readme_demo_tour_runs_with_both_transports() {
    let mut b = HostBuilder::new();
    lay_out(&mut b, example("hello"), Build::Native, |_| {});
    lay_out(&mut b, example("guard"), Build::Wasm, |_| {});
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_zot"))
        .args(["ext", "shell", "--script"])
        .arg(workspace().join("examples/demo.zot"))
        .env("ZOT_HOME", b.home())
        .current_dir(b.cwd())
        .stdin(std::process::Stdio::null())
        .output()
        .expect("zot runs");
    let transcript = String::from_utf8_lossy(&out.stdout);
    println!("{transcript}");
    assert!(
        out.status.success(),
        "{transcript}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for needle in [
        "hello 0.1.0 [global, stdio] ready",
        "guard 0.1.0 [global, wasm] ready",
        "Greet Ada in one short sentence.",
        "│ Press any key; q closes. │",
        "1. guard: allow",
        "1. guard: block: guard: refused to run a command as root (sudo)",
        "tool calls blocked",
    ] {
        assert!(
            transcript.contains(needle),
            "{needle:?} not in:\n{transcript}"
        );
    }
}
