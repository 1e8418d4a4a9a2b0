//! `zot ext new`: every scaffold passes `zot ext check` as generated (after its build, for
//! Rust) and works in a host: its tool answers, its command shows its args, and its
//! interceptor blocks `rm -rf /` in a bash call and allows the rest.

use crate::common::{first_text, scaffold_build_env, serial, workspace, HostBuilder, TempDir};
use serde_json::{json, Value};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

/// How long a first start may take (a component compiles first).
const SLOW_START: Duration = Duration::from_secs(120);

fn zot(args: &[&str], cwd: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_zot"))
        .args(args)
        .current_dir(cwd)
        .output()
        .expect("zot runs")
}

fn text(out: &Output) -> String {
    format!(
        "status {}\nstdout:\n{}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// `zot ext new <name> --lang <lang> [extra…]` in `parent`; must succeed. Returns the
/// new folder.
fn scaffold(parent: &Path, name: &str, lang: &str, extra: &[&str]) -> PathBuf {
    let mut args = vec!["ext", "new", name, "--lang", lang];
    args.extend(extra);
    let out = zot(&args, parent);
    let shown = text(&out);
    println!("{shown}");
    assert!(out.status.success(), "{shown}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("extension.json"), "{shown}");
    assert!(stdout.contains("README.md"), "{shown}");
    assert!(stdout.contains("zot ext check"), "{shown}");
    assert!(stdout.contains("zot ext install"), "{shown}");
    let dir = parent.join(name);
    assert!(dir.join("extension.json").is_file(), "{shown}");
    assert!(dir.join("README.md").is_file(), "{shown}");
    dir
}

/// `zot ext check <dir> --json --wait 120s` with `ZOT_HOME=home`: must pass and list the
/// scaffold's command, tool (with its schema) and interceptor.
fn check_passes(dir: &Path, home: &Path, name: &str) -> Value {
    let out = Command::new(env!("CARGO_BIN_EXE_zot"))
        .args(["ext", "check", "--json", "--wait", "120s"])
        .arg(dir)
        .env("ZOT_HOME", home)
        .output()
        .expect("zot runs");
    let shown = text(&out);
    let r: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("check did not print JSON ({e}): {shown}"));
    assert!(out.status.success(), "check failed: {shown}");
    assert_eq!(r["violations"], json!([]), "{r}");
    assert_eq!(r["name"], name, "{r}");
    assert_eq!(r["hello"]["name"], name, "{r}");
    assert_eq!(r["ready_by"], "frame", "it sends ready: {r}");
    let commands: Vec<&Value> = r["commands"].as_array().unwrap().iter().collect();
    assert_eq!(commands.len(), 1, "{r}");
    assert_eq!(commands[0]["name"], name, "{r}");
    let tools: Vec<&Value> = r["tools"].as_array().unwrap().iter().collect();
    assert_eq!(tools.len(), 1, "{r}");
    assert_eq!(tools[0]["name"], format!("{name}_echo"), "{r}");
    let schema = &tools[0]["schema"];
    assert_eq!(schema["type"], "object", "{r}");
    assert_eq!(schema["required"], json!(["text"]), "{r}");
    assert_eq!(schema["properties"]["text"]["type"], "string", "{r}");
    assert_eq!(r["intercept"], json!(["tool_call"]), "{r}");
    // A program exits by itself after `shutdown_ack`; a reactor component has nothing to
    // exit, the host stops it once it acknowledged.
    let clean = if r["sandbox"]["component"] == "reactor" {
        "stopped: its input was closed"
    } else {
        "status 0"
    };
    assert!(
        r["exit"].as_str().unwrap_or_default().contains(clean),
        "it exits cleanly on shutdown: {r}"
    );
    let log = std::fs::read_to_string(r["log"].as_str().unwrap()).unwrap_or_default();
    assert!(log.contains("acknowledged shutdown"), "{log}");
    r
}

/// Checks the scaffold, then drives it once in `zot host`: the tool, the command, and
/// the interceptor (blocks `rm -rf /` in bash, allows the rest).
fn check_and_drive(dir: &Path, name: &str) {
    let mut b = HostBuilder::new();
    // The check's compile (of a component) is cached in the host's ZOT_HOME.
    check_passes(dir, &b.home(), name);
    b.ext_path(dir)
        .arg("--ready-timeout-ms")
        .arg(&SLOW_START.as_millis().to_string());
    let host = b.start();
    assert_eq!(
        host.ready_within(SLOW_START + Duration::from_secs(10)),
        [name]
    );

    let data = host.call_tool(&format!("{name}_echo"), json!({"text": "it works"}));
    assert_eq!(first_text(&data), "echo: it works", "{data}");
    assert_ne!(data["is_error"], json!(true), "{data}");
    // A missing text: the sidecar refuses it against the schema, naming the field; sent
    // as it is (`call_tool` unchecked, as `--no-validate` does), the tool says so itself.
    let refused = host.request(
        "call_tool",
        json!({"name": format!("{name}_echo"), "args": {}}),
    );
    assert_eq!(refused["problems"][0]["field"], "text", "{refused}");
    drop(host);
    let mut b = HostBuilder::new();
    b.ext_path(dir)
        .arg("--no-validate")
        .arg("--ready-timeout-ms")
        .arg(&SLOW_START.as_millis().to_string());
    let host = b.start();
    host.ready_within(SLOW_START + Duration::from_secs(10));
    let data = host.call_tool(&format!("{name}_echo"), json!({}));
    assert_eq!(
        data["is_error"],
        json!(true),
        "a missing text is an error: {data}"
    );

    let data = host.ok("invoke_command", json!({"name": name, "args": "hi there"}));
    assert_eq!(data["action"], "display", "{data}");
    assert_eq!(data["display"], format!("{name} got: hi there"), "{data}");

    let intercept = |command: &str| {
        host.ok(
            "intercept",
            json!({"event": "tool_call", "tool_id": "t1", "tool_name": "bash",
                   "tool_args": {"command": command}}),
        )
    };
    let blocked = intercept("rm -rf /");
    assert_eq!(blocked["block"], json!(true), "{blocked}");
    assert!(
        blocked["reason"]
            .as_str()
            .unwrap_or_default()
            .contains("rm -rf /"),
        "{blocked}"
    );
    let allowed = intercept("rm -rf build");
    assert_ne!(allowed["block"], json!(true), "{allowed}");
    let other = host.ok(
        "intercept",
        json!({"event": "tool_call", "tool_id": "t2", "tool_name": "read",
               "tool_args": {"path": "/"}}),
    );
    assert_ne!(other["block"], json!(true), "{other}");
    host.shutdown();
}

#[test]
fn the_python_scaffold_passes_check_and_works() {
    let tmp = TempDir::new("new-py");
    let dir = scaffold(tmp.path(), "py-demo", "python", &[]);
    assert!(dir.join("main.py").is_file());
    let manifest: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("extension.json")).unwrap())
            .unwrap();
    assert_eq!(manifest["exec"], "python3");
    assert_eq!(manifest["args"], json!(["main.py"]));
    check_and_drive(&dir, "py-demo");
}

#[test]
fn the_node_scaffold_passes_check_and_works() {
    let tmp = TempDir::new("new-node");
    let dir = scaffold(tmp.path(), "node-demo", "node", &[]);
    assert!(dir.join("index.js").is_file());
    assert!(!dir.join("package.json").exists(), "no dependencies");
    check_and_drive(&dir, "node-demo");
}

/// The TypeScript scaffold (no --wasm): the SDK, run by Node. `npm run build` bundles
/// `dist/main.js`, and the manifest runs it; the same folder builds the component too.
#[test]
fn the_typescript_scaffold_passes_check_and_works() {
    let tmp = TempDir::new("new-ts");
    let dir = scaffold(tmp.path(), "ts-demo", "typescript", &[]);
    for file in [
        "src/main.ts",
        "src/component.ts",
        "package.json",
        "tsconfig.json",
    ] {
        assert!(dir.join(file).is_file(), "{file}");
    }
    let manifest: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("extension.json")).unwrap())
            .unwrap();
    assert_eq!(manifest["exec"], "node");
    assert_eq!(manifest["args"], json!(["dist/main.js"]));
    installed_sdk(&dir);
    let tools = crate::common::ts_tools();
    crate::common::npm_run_with(&tools, &dir, "build");
    assert!(dir.join("dist/main.js").is_file());
    check_and_drive(&dir, "ts-demo");
    // Installed as the README says; node_modules is copied beside a program.
    let (_home, installed) = install_and_call(&dir, "ts-demo");
    assert!(installed
        .join("node_modules/@zot/ext/src/index.ts")
        .is_file());
    // The same folder builds the component, and with the manifest's launch switched to
    // it, the same checks pass.
    crate::common::npm_run_with(&tools, &dir, "build:wasm");
    assert!(dir.join("ts-demo.wasm").is_file());
    let mut manifest = manifest;
    let launch = manifest.as_object_mut().unwrap();
    launch.remove("exec");
    launch.remove("args");
    launch.insert("wasm".into(), json!("ts-demo.wasm"));
    std::fs::write(dir.join("extension.json"), manifest.to_string()).unwrap();
    check_and_drive(&dir, "ts-demo");
}

/// Puts the SDK that `dir`'s package.json names (checked to be this workspace's) into
/// `node_modules/@zot/ext` as `npm install` does with the scaffold's `.npmrc`
/// (`install-links=true`): a copy of its package, no link out of the folder.
fn installed_sdk(dir: &Path) {
    let npmrc = std::fs::read_to_string(dir.join(".npmrc")).unwrap();
    assert!(npmrc.lines().any(|l| l == "install-links=true"), "{npmrc}");
    let package: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("package.json")).unwrap()).unwrap();
    let sdk = package["dependencies"]["@zot/ext"]
        .as_str()
        .and_then(|d| d.strip_prefix("file:"))
        .unwrap_or_else(|| panic!("the SDK by path: {package}"));
    assert_eq!(
        std::fs::canonicalize(sdk).unwrap(),
        std::fs::canonicalize(workspace().join("guest-sdk/ts")).unwrap()
    );
    let copy = dir.join("node_modules/@zot/ext");
    std::fs::create_dir_all(&copy).unwrap();
    for file in ["package.json", "README.md"] {
        std::fs::copy(Path::new(sdk).join(file), copy.join(file)).unwrap();
    }
    crate::common::copy_dir(&Path::new(sdk).join("src"), &copy.join("src"));
}

/// `zot ext install <dir> --yes` into a fresh home, then `zot ext call` of the installed
/// copy's tool; returns the installed folder (and the home that holds it).
fn install_and_call(dir: &Path, name: &str) -> (TempDir, PathBuf) {
    let home = TempDir::new("new-install");
    let run = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_zot"))
            .args(args)
            .env("ZOT_HOME", home.path())
            .current_dir(home.path())
            .output()
            .expect("zot runs");
        assert!(out.status.success(), "{args:?}: {}", text(&out));
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    run(&["ext", "install", dir.to_str().unwrap(), "--yes"]);
    let tool = format!("{name}_echo");
    let said = run(&[
        "ext",
        "call",
        name,
        &tool,
        r#"{"text": "installed"}"#,
        "--wait",
        "120s",
    ]);
    assert_eq!(said.trim(), "echo: installed");
    let installed = home.path().join("extensions").join(name);
    (home, installed)
}

/// The cargo that runs this test, else `cargo` on PATH.
fn cargo() -> OsString {
    std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into())
}

/// `cargo build --release [--target wasm32-wasip2]` of a Rust scaffold, into a target
/// directory shared by the tests (the SDK and its dependencies build once), then copies
/// the artifact where the manifest names it. Offline first: the registry copy usually
/// has every crate the SDK needs.
fn build_rust(dir: &Path, krate: &str, wasm: bool) {
    let env = scaffold_build_env();
    let target_dir = PathBuf::from(&env[0].1);
    let build = |offline: bool| {
        let mut cmd = Command::new(cargo());
        cmd.args(["build", "--release"])
            .current_dir(dir)
            .envs(env.iter().map(|(k, v)| (k, v)));
        if wasm {
            cmd.args(["--target", "wasm32-wasip2"]);
        }
        if offline {
            cmd.arg("--offline");
        }
        let started = Instant::now();
        let out = cmd.output().expect("cargo runs");
        println!(
            "cargo build (wasm: {wasm}, offline: {offline}) took {:.1?}",
            started.elapsed()
        );
        out
    };
    let mut out = build(true);
    if !out.status.success() {
        println!("offline build failed, retrying online:\n{}", text(&out));
        out = build(false);
    }
    assert!(out.status.success(), "cargo build failed:\n{}", text(&out));
    let (from, to) = if wasm {
        let rel = format!("wasm32-wasip2/release/{krate}.wasm");
        (target_dir.join(&rel), dir.join("target").join(rel))
    } else {
        let rel = format!("release/{krate}");
        (target_dir.join(&rel), dir.join("target").join(rel))
    };
    std::fs::create_dir_all(to.parent().unwrap()).unwrap();
    std::fs::copy(&from, &to)
        .unwrap_or_else(|e| panic!("copy {} to {}: {e}", from.display(), to.display()));
}

#[test]
fn the_rust_scaffold_builds_natively_passes_check_and_works() {
    let _serial = serial();
    let tmp = TempDir::new("new-rs");
    let dir = scaffold(tmp.path(), "rs-demo", "rust", &[]);
    let cargo_toml = std::fs::read_to_string(dir.join("Cargo.toml")).unwrap();
    let sdk = std::fs::canonicalize(crate::common::workspace().join("guest-sdk")).unwrap();
    assert!(
        cargo_toml.contains(&format!("path = \"{}\"", sdk.display())),
        "the SDK path is the one zot was built from: {cargo_toml}"
    );
    let manifest: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("extension.json")).unwrap())
            .unwrap();
    assert_eq!(manifest["exec"], "target/release/rs-demo");
    build_rust(&dir, "rs-demo", false);
    check_and_drive(&dir, "rs-demo");
}

#[test]
fn the_rust_scaffold_with_wasm_builds_a_component_that_passes_check_and_works() {
    let _serial = serial();
    let tmp = TempDir::new("new-rs-wasm");
    let dir = scaffold(tmp.path(), "rs-wasm-demo", "rust", &["--wasm"]);
    let manifest: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("extension.json")).unwrap())
            .unwrap();
    assert_eq!(
        manifest["wasm"],
        "target/wasm32-wasip2/release/rs-wasm-demo.wasm"
    );
    assert!(manifest.get("exec").is_none(), "{manifest}");
    build_rust(&dir, "rs-wasm-demo", true);
    check_and_drive(&dir, "rs-wasm-demo");
}

#[test]
fn sdk_names_the_sdk_folder_and_a_wrong_one_is_refused() {
    let tmp = TempDir::new("new-sdk");
    let sdk = crate::common::workspace().join("guest-sdk");
    let dir = scaffold(
        tmp.path(),
        "with-sdk",
        "rust",
        &["--sdk", sdk.to_str().unwrap()],
    );
    let cargo_toml = std::fs::read_to_string(dir.join("Cargo.toml")).unwrap();
    let sdk = std::fs::canonicalize(sdk).unwrap();
    assert!(
        cargo_toml.contains(&format!("path = \"{}\"", sdk.display())),
        "{cargo_toml}"
    );

    let out = zot(
        &[
            "ext",
            "new",
            "no-sdk",
            "--lang",
            "rust",
            "--sdk",
            "/nonexistent",
        ],
        tmp.path(),
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("zot-ext SDK"),
        "{}",
        text(&out)
    );
    assert!(!tmp.path().join("no-sdk").exists(), "nothing written");
}

#[test]
fn a_bad_name_is_refused() {
    let tmp = TempDir::new("new-bad");
    for name in ["bad/name", ".hidden", "-dash", "sp ace"] {
        let out = zot(&["ext", "new", "--lang", "python", "--", name], tmp.path());
        assert_eq!(out.status.code(), Some(1), "{name}: {}", text(&out));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.starts_with("zot: invalid extension name"),
            "{name}: {stderr}"
        );
    }
    assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 0);
}

#[test]
fn an_existing_folder_is_refused_unless_empty() {
    let tmp = TempDir::new("new-exists");
    let taken = tmp.path().join("taken");
    std::fs::create_dir(&taken).unwrap();
    std::fs::write(taken.join("keep.txt"), "mine").unwrap();
    let out = zot(&["ext", "new", "taken", "--lang", "node"], tmp.path());
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("already exists"),
        "{}",
        text(&out)
    );
    let left: Vec<_> = std::fs::read_dir(&taken).unwrap().collect();
    assert_eq!(left.len(), 1, "nothing written into it");

    std::fs::write(tmp.path().join("file"), "x").unwrap();
    let out = zot(&["ext", "new", "file", "--lang", "node"], tmp.path());
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));

    // An empty folder is used; --dir chooses the parent.
    std::fs::create_dir(tmp.path().join("empty")).unwrap();
    scaffold(tmp.path(), "empty", "node", &[]);
    let parent = tmp.path().join("a/b");
    let out = zot(
        &["ext", "new", "deep", "--lang", "python", "--dir", "a/b"],
        tmp.path(),
    );
    assert!(out.status.success(), "{}", text(&out));
    assert!(parent.join("deep/main.py").is_file());
}

#[test]
fn wasm_is_refused_for_python_and_engine_and_sdk_where_they_do_not_apply() {
    let tmp = TempDir::new("new-wasm-refused");
    let refused = |args: &[&str], says: &str| {
        let mut all = vec!["ext", "new", "comp"];
        all.extend(args);
        let out = zot(&all, tmp.path());
        assert_eq!(out.status.code(), Some(1), "{args:?}: {}", text(&out));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(says), "{args:?}: {stderr}");
        assert!(
            !tmp.path().join("comp").exists(),
            "{args:?}: nothing written"
        );
    };
    refused(
        &["--lang", "python", "--wasm"],
        "--wasm is not supported with --lang python",
    );
    for lang in ["node", "typescript", "rust"] {
        refused(
            &["--lang", lang, "--engine", "quickjs"],
            "--engine applies to --lang typescript or node with --wasm",
        );
    }
    refused(
        &["--lang", "rust", "--wasm", "--engine", "starlingmonkey"],
        "--engine applies",
    );
    refused(
        &["--lang", "node", "--sdk", "/nowhere"],
        "--sdk applies to --lang rust and typescript, and to node with --wasm",
    );
    refused(
        &["--lang", "typescript", "--wasm", "--sdk", "/nowhere"],
        "the @zot/ext SDK is not at /nowhere/ts",
    );
}

/// `zot ext new <name> --lang <lang> --wasm [--engine …]`, its dependencies as `npm
/// install` makes them (the SDK linked where package.json names it, the pinned tools on
/// `PATH`), `npm run build`; then it passes check and works in a host.
fn component_scaffold(lang: &str, name: &str, engine: &[&str]) {
    let tmp = TempDir::new("new-component");
    let mut extra = vec!["--wasm"];
    extra.extend(engine);
    let dir = scaffold(tmp.path(), name, lang, &extra);
    let ext = if lang == "typescript" { "ts" } else { "js" };
    for file in [
        format!("src/main.{ext}"),
        format!("src/component.{ext}"),
        "wit/extension.wit".into(),
        "package.json".into(),
    ] {
        assert!(dir.join(&file).is_file(), "{file}");
    }
    assert_eq!(dir.join("tsconfig.json").is_file(), lang == "typescript");
    let manifest: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("extension.json")).unwrap())
            .unwrap();
    assert_eq!(manifest["wasm"], format!("{name}.wasm"), "{manifest}");
    let package: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("package.json")).unwrap()).unwrap();
    let wit = std::fs::read_to_string(dir.join("wit/extension.wit")).unwrap();
    assert_eq!(
        wit,
        std::fs::read_to_string(workspace().join("wit/zot-extension-0.1.0/extension.wit")).unwrap(),
        "the published WIT package, unchanged"
    );
    let tools = if engine.is_empty() {
        crate::common::ts_tools()
    } else {
        crate::common::starlingmonkey_tools()
    };
    for (tool, version) in package["devDependencies"].as_object().unwrap() {
        let installed = tools.join("..").join(tool).join("package.json");
        let installed: Value =
            serde_json::from_str(&std::fs::read_to_string(&installed).unwrap()).unwrap();
        assert_eq!(
            &installed["version"], version,
            "{tool}: the test installs the scaffold's pin"
        );
    }
    installed_sdk(&dir);
    // `npm run build` builds what the manifest runs: here the component.
    crate::common::npm_run_with(&tools, &dir, "build");
    assert!(dir.join(format!("{name}.wasm")).is_file());
    check_and_drive(&dir, name);
    // Installed as the README says: the component without the build's node_modules.
    let (_home, installed) = install_and_call(&dir, name);
    assert!(installed.join(format!("{name}.wasm")).is_file());
    assert!(!installed.join("node_modules").exists());
}

#[test]
fn the_typescript_component_scaffold_builds_passes_check_and_works() {
    component_scaffold("typescript", "ts-comp", &[]);
}

#[test]
fn the_javascript_component_scaffold_builds_passes_check_and_works() {
    component_scaffold("node", "js-comp", &[]);
}

#[test]
fn the_starlingmonkey_component_scaffold_builds_passes_check_and_works() {
    component_scaffold("typescript", "sm-comp", &["--engine", "starlingmonkey"]);
}

/// `zot --version` says the commit it was built from and where `zot ext new` finds the
/// SDK; `-V` stays one short line.
#[test]
fn version_names_the_commit_and_the_sdk() {
    let version = |flag: &str| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_zot"))
            .arg(flag)
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let said = version("--version");
    let commit = said
        .split("(commit ")
        .nth(1)
        .and_then(|rest| rest.split(')').next())
        .unwrap_or_default();
    let hex = commit.len() == 12 && commit.chars().all(|c| c.is_ascii_hexdigit());
    assert!(hex || commit == "unknown", "{said}");
    let sdk = workspace().join("guest-sdk").canonicalize().unwrap();
    assert!(
        said.contains(&format!("\nSDK: {}\n", sdk.display())),
        "{said}"
    );
    assert_eq!(
        version("-V"),
        format!("zot {}\n", env!("CARGO_PKG_VERSION"))
    );
}

/// Issue 36: `zot doctor` says what this machine has of what zot and extensions use, and
/// for what is missing how to get it; it fails only when zot itself cannot work (its
/// state folder unwritable).
#[test]
fn doctor_says_what_is_here_and_how_to_get_what_is_not() {
    let scratch = TempDir::new("doctor");
    let home = scratch.path().join("home");
    let doctor = |path: &str, home: &Path, json: bool| {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_zot"));
        cmd.arg("doctor")
            .env("PATH", path)
            .env("ZOT_HOME", home)
            .current_dir(scratch.path());
        if json {
            cmd.arg("--json");
        }
        cmd.output().unwrap()
    };
    let here = std::env::var("PATH").unwrap_or_default();
    let out = doctor(&here, &home, false);
    let said = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{said}");
    for what in [
        "ZOT_HOME",
        "SDK zot-ext (Rust)",
        "python3",
        "cargo",
        "git",
        "confinement",
    ] {
        assert!(said.contains(what), "{what} in {said}");
    }
    assert!(said.contains("ok       ZOT_HOME"), "{said}");

    // Nothing on PATH: every toolchain missing, each with how to get it; zot still works.
    let out = doctor("/nonexistent", &home, true);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let found: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    for what in ["python3", "node, npm", "go", "cargo", "git"] {
        let f = found.iter().find(|f| f["what"] == what).unwrap();
        assert_eq!(f["ok"], false, "{f}");
        assert!(f["get"].as_str().unwrap().contains("install"), "{f}");
    }
    let sdk = found
        .iter()
        .find(|f| f["what"] == "SDK zot-ext (Rust)")
        .unwrap();
    assert_eq!(sdk["ok"], true, "the SDK of these sources: {sdk}");

    // A state folder zot cannot write to: it fails, saying so.
    let file = scratch.path().join("a-file");
    std::fs::write(&file, "").unwrap();
    let out = doctor(&here, &file, false);
    let said = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert!(said.contains("missing  ZOT_HOME"), "{said}");
}

/// Issue 36: `--lang go` writes a Go extension on the standard library only; built as
/// its README says with the pinned Go, natively and (`--wasm`) as a WASI preview-1
/// module, it is `gofmt`- and `go vet`-clean, passes `check` and works through the host
/// either way.
#[test]
fn the_go_scaffold_builds_natively_and_for_the_sandbox_and_works() {
    for (name, extra, env, out) in [
        ("go-demo", &[][..], &[][..], "go-demo"),
        (
            "go-wasm",
            &["--wasm"][..],
            &[("GOOS", "wasip1"), ("GOARCH", "wasm")][..],
            "go-wasm.wasm",
        ),
    ] {
        let tmp = TempDir::new(name);
        let dir = scaffold(tmp.path(), name, "go", extra);
        assert!(dir.join("main.go").is_file() && dir.join("go.mod").is_file());
        let readme = std::fs::read_to_string(dir.join("README.md")).unwrap();
        let build = format!(
            "{}go build -o {out} .",
            env.iter()
                .map(|(k, v)| format!("{k}={v} "))
                .collect::<String>()
        );
        assert!(readme.contains(&build), "the README says {build}: {readme}");
        let mut go = crate::common::go_command(crate::common::go());
        go.args(["build", "-o", out, "."])
            .envs(env.iter().copied())
            .current_dir(&dir);
        let built = go.output().unwrap();
        assert!(built.status.success(), "{}", text(&built));
        for (tool, args) in [("gofmt", &["-l", "."][..]), ("go", &["vet", "."][..])] {
            let program = crate::common::go().with_file_name(tool);
            let out = crate::common::go_command(&program)
                .args(args)
                .current_dir(&dir)
                .output()
                .unwrap();
            assert!(out.status.success(), "{tool}: {}", text(&out));
            assert!(out.stdout.is_empty(), "{tool}: {}", text(&out));
        }
        check_and_drive(&dir, name);
    }
}
