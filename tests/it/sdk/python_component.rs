//! The example extension written in Python (examples/hello-component-py), compiled to a
//! reactor component of the `zot:extension@0.1.0` world by componentize-py, and run through
//! the real host: `zot host` (its hello, command, tool and shutdown) and `zot ext check`.
//!
//! The component is built once per test run, by the example's own `build.sh`, into an
//! extension directory under the cargo target dir, and compiled by the host once per run
//! (the tests share a `ZOT_HOME` and so its compile cache). componentize-py, at the
//! version pinned in the example's requirements.txt, is installed by the first run with
//! `python3 -m pip install --target` into the cargo target dir, and reused after.

use crate::common::*;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// The example's folder, relative to the workspace.
const EXAMPLE: &str = "examples/hello-component-py";
/// The name in its manifest and in its `hello`.
const NAME: &str = "hello-component-py";
/// The version in its `hello`.
const VERSION: &str = "1.0.0";

/// The first load compiles the component: give it time on a small machine in debug.
const COMPILE_TIMEOUT: Duration = Duration::from_secs(180);
/// The compile's own limits, raised to match (a debug build compiles CPython slowly).
const COMPILE_LIMITS: [(&str, &str); 2] = [
    ("ZOT_COMPILE_WALL_SECS", "180"),
    ("ZOT_COMPILE_CPU_SECS", "600"),
];

/// What the tests share: the built extension, and a scratch directory whose `home/` (the
/// `ZOT_HOME` of every test here) keeps the compile cache, so that the component is
/// compiled once per test run, by whichever test loads it first.
struct Built {
    /// The example's `extension.json` and the component it names.
    ext: PathBuf,
    /// For [`HostBuilder::in_dir`]: `home/`, `cwd/`, `exts/`.
    root: PathBuf,
}

impl Built {
    fn home(&self) -> PathBuf {
        self.root.join("home")
    }
}

/// Builds the component with the example's `build.sh`, once per test run (every test
/// waits for that build), into `$CARGO_TARGET_TMPDIR/hello-component-py/`.
fn built() -> &'static Built {
    static BUILT: OnceLock<Built> = OnceLock::new();
    BUILT.get_or_init(build)
}

fn build() -> Built {
    let example = workspace().join(EXAMPLE);
    let top = Path::new(env!("CARGO_TARGET_TMPDIR")).join("hello-component-py");
    let _ = std::fs::remove_dir_all(&top);
    let (dir, root) = (top.join("ext"), top.join("host"));
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("mkdir {}: {e}", dir.display()));
    std::fs::copy(example.join("extension.json"), dir.join("extension.json"))
        .expect("copy the example's extension.json");
    let manifest: Value =
        serde_json::from_slice(&std::fs::read(dir.join("extension.json")).unwrap()).unwrap();
    let wasm = dir.join(
        manifest["wasm"]
            .as_str()
            .expect("the example's manifest names its component in \"wasm\""),
    );

    let site = componentize_py(&example.join("requirements.txt"));
    let started = Instant::now();
    let out = Command::new("bash")
        .arg(example.join("build.sh"))
        .arg(&wasm)
        .env("PYTHONPATH", &site)
        .output()
        .unwrap_or_else(|e| panic!("cannot run bash {EXAMPLE}/build.sh: {e}"));
    let took = started.elapsed();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{EXAMPLE}/build.sh failed ({}):\n{stdout}\n{stderr}",
        out.status
    );
    let size = std::fs::metadata(&wasm)
        .unwrap_or_else(|e| panic!("build.sh made no {}: {e}", wasm.display()))
        .len();
    println!(
        "built {} ({:.1} MiB) with componentize-py in {took:.1?}",
        wasm.display(),
        size as f64 / (1024.0 * 1024.0)
    );
    Built { ext: dir, root }
}

/// A folder with componentize-py at the version `requirements` pins, for `PYTHONPATH`
/// ([`pip_installed`]).
fn componentize_py(requirements: &Path) -> PathBuf {
    let text = std::fs::read_to_string(requirements)
        .unwrap_or_else(|e| panic!("read {}: {e}", requirements.display()));
    let pin = text
        .lines()
        .map(str::trim)
        .find(|l| l.starts_with("componentize-py=="))
        .unwrap_or_else(|| panic!("{} pins no componentize-py", requirements.display()));
    pip_installed(pin, "componentize_py")
}

/// The lines of a log that say how the component was loaded: `compiled … in N ms (not
/// cached)` the first time, `loaded … from the compilation cache in N µs` after, and
/// `reused … already compiled in this process` when `zot ext check` compiled it first as
/// its own step (which test runs first is not fixed).
fn load_lines(log: &str) -> Vec<&str> {
    log.lines()
        .filter(|l| {
            l.contains(".wasm in ")
                || l.contains("from the compilation cache")
                || l.contains("already compiled in this process")
        })
        .collect()
}

#[test]
fn the_python_component_says_hello_answers_its_command_and_tool_and_shuts_down() {
    let built = built();
    let _serial = serial();
    let log_path = built.home().join("logs").join(format!("ext-{NAME}.log"));
    // Where this host's lines start (an earlier test may have written the log).
    let log_from = std::fs::metadata(&log_path).map_or(0, |m| m.len() as usize);
    let mut b = HostBuilder::in_dir(&built.root);
    // A missing argument is sent as it is, to see the tool's own error.
    b.ext_path(&built.ext).arg("--no-validate");
    // The first load of the run compiles the component: slow in a debug build, so the
    // ready wait (which a compile counts against) and the compile's limits are raised.
    b.arg("--ready-timeout-ms")
        .arg(&COMPILE_TIMEOUT.as_millis().to_string());
    for (var, value) in COMPILE_LIMITS {
        b.env(var, value);
    }
    let host = b.start();

    let started = Instant::now();
    let ready = host.ready_within(COMPILE_TIMEOUT);
    println!("host_ready after {:.1?}", started.elapsed());
    assert_eq!(ready, [NAME], "{}", host.diagnostics());

    let entry = host.entry(NAME);
    assert_eq!(entry["state"], "ready", "{entry}");
    assert_eq!(entry["transport"], "wasm", "{entry}");
    assert_eq!(entry["version"], VERSION, "{entry}");
    assert_eq!(entry["sandbox"]["component"], "reactor", "{entry}");
    assert_eq!(entry["commands"], json!(["hellocomp"]), "{entry}");
    assert_eq!(entry["tools"], json!(["shout"]), "{entry}");

    let log = host.log(NAME).split_off(log_from);
    assert_eq!(load_lines(&log).len(), 1, "{log}");
    println!("{}", load_lines(&log)[0]);
    assert!(
        log.contains("[guest] info: hello-component-py started"),
        "{log}"
    );
    // A hello naming another extension than the manifest is logged as a warning.
    assert!(!log.contains("hello names"), "{log}");

    // The tool, as the model sees it.
    let tools = host.ok("tools", json!({}));
    let shout = &tools["tools"][0];
    assert_eq!(shout["name"], "shout", "{tools}");
    assert_eq!(shout["extension"], NAME, "{tools}");
    assert_eq!(shout["schema"]["required"], json!(["text"]), "{tools}");

    // The command: a name → a note for the user; no args → the quick start's prompt.
    let d = host.ok(
        "invoke_command",
        json!({"name": "hellocomp", "args": "Ada"}),
    );
    assert_eq!(d["extension"], NAME, "{d}");
    assert_eq!(d["action"], "display", "{d}");
    assert_eq!(d["display"], "Hello, Ada! (from a Python component)", "{d}");
    let d = host.ok("invoke_command", json!({"name": "hellocomp", "args": ""}));
    assert_eq!(d["action"], "prompt", "{d}");
    assert_eq!(d["prompt"], "Greet me very briefly. Add one emoji.", "{d}");

    // The tool: upper-cased text; a missing argument is the tool's own error.
    let d = host.call_tool("shout", json!({"text": "hello, wasm ✓ ß"}));
    assert_eq!(d["extension"], NAME, "{d}");
    assert_eq!(d["is_error"], false, "{d}");
    assert_eq!(first_text(&d), "HELLO, WASM ✓ SS");
    let d = host.call_tool("shout", json!({}));
    assert_eq!(d["is_error"], true, "{d}");
    assert!(first_text(&d).contains("text"), "{d}");

    // Shutdown: the component acknowledges it, the host exits 0, and nothing trapped.
    let took = host.shutdown();
    println!("shutdown in {took:.1?}");
    let log = std::fs::read_to_string(&log_path)
        .expect("the extension's log")
        .split_off(log_from);
    assert!(log.contains("acknowledged shutdown"), "{log}");
    for bad in [
        "trap",
        "deadline exceeded",
        "memory limit",
        "] warn: ",
        "] error: ",
    ] {
        assert!(!log.contains(bad), "{bad:?} in the log:\n{log}");
    }
}

#[test]
fn zot_ext_check_passes_the_python_component() {
    let built = built();
    let _serial = serial();
    let home = built.home();
    std::fs::create_dir_all(&home).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_zot"))
        .args(["ext", "check", "--json"])
        .arg(&built.ext)
        .env("ZOT_HOME", &home)
        .envs(COMPILE_LIMITS)
        .output()
        .expect("zot runs");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "zot ext check failed ({}):\n{text}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let r: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"));
    assert_eq!(r["transport"], "wasm", "{r}");
    assert_eq!(r["sandbox"]["component"], "reactor", "{r}");
    assert_eq!(r["hello"]["name"], NAME, "{r}");
    assert_eq!(r["hello"]["version"], VERSION, "{r}");
    assert_eq!(r["ready_by"], "frame", "{r}");
    assert_eq!(r["commands"][0]["name"], "hellocomp", "{r}");
    assert_eq!(r["tools"][0]["name"], "shout", "{r}");
    assert_eq!(r["violations"], json!([]), "{r}");
    let log = std::fs::read_to_string(r["log"].as_str().expect("a log path")).unwrap();
    println!(
        "{}",
        load_lines(&log).last().expect("a load line in the log")
    );
}
