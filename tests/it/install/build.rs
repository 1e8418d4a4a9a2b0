//! Builds at install: a source whose program is not built is built — by the manifest's
//! `build`, or `go build` for a `go.mod` — after the user saw the exact commands and the
//! toolchain, confined to its copy of the source; `--wasm` builds a component and
//! installs it sandboxed; a failed build installs nothing; `update` builds again.

use crate::common::*;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// `PATH` with the pinned Go toolchain first.
/// A scratch folder for one test, its `home` (ZOT_HOME) and its `cwd` (made).
fn scratch(tag: &str) -> (TempDir, PathBuf, PathBuf) {
    let scratch = TempDir::new(tag);
    let (home, cwd) = (scratch.path().join("home"), scratch.path().join("cwd"));
    std::fs::create_dir_all(&cwd).unwrap();
    (scratch, home, cwd)
}

fn go_path() -> String {
    let bin = go().parent().unwrap().display().to_string();
    format!("{bin}:{}", std::env::var("PATH").unwrap_or_default())
}

/// `zot ext <args>` with `ZOT_HOME=home` in `cwd`, stdin closed, and `PATH` set to `path`.
fn zot_on(path: &str, home: &Path, cwd: &Path, args: &[&str]) -> Output {
    zot_env(&[("PATH", path)], home, cwd, args)
}

/// `zot ext <args>` with `ZOT_HOME=home` in `cwd`, stdin closed, and `env` set.
fn zot_env(env: &[(&str, &str)], home: &Path, cwd: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_zot"))
        .arg("ext")
        .args(args)
        .env("ZOT_HOME", home)
        .envs(env.iter().copied())
        .current_dir(cwd)
        .stdin(Stdio::null())
        .output()
        .expect("zot runs")
}

/// `repo` made a git repository of one commit: its `file://` URL.
fn committed(repo: &Path) -> String {
    git(repo, &["init", "-q"]);
    git(repo, &["add", "."]);
    git(repo, &["commit", "-qm", "the source"]);
    format!("file://{}", repo.display())
}

/// Every one of `lines` is in `said`.
#[track_caller]
fn says(said: &str, lines: &[&str]) {
    for line in lines {
        assert!(said.contains(line), "{line:?} in:\n{said}");
    }
}

/// The `list --json` entry of `name`.
fn listed(home: &Path, cwd: &Path, name: &str) -> Value {
    let list = zot(home, cwd, &["list", "--json"]);
    let list: Value = serde_json::from_str(&stdout(&list)).unwrap();
    let entry = list.as_array().unwrap().iter().find(|e| e["name"] == name);
    entry
        .cloned()
        .unwrap_or_else(|| panic!("{name} is not listed: {list}"))
}

/// A git repository in `dir/repo` holding the Go extension `tests/extensions/go-async`
/// (an extension in the zotext SDK's shape) as its source only: its `file://` URL.
fn go_repo(dir: &Path) -> (PathBuf, String) {
    let repo = dir.join("repo");
    std::fs::create_dir_all(&repo).unwrap();
    for file in ["main.go", "go.mod", "extension.json"] {
        let from = workspace().join("tests/extensions/go-async").join(file);
        std::fs::copy(from, repo.join(file)).unwrap();
    }
    let url = committed(&repo);
    (repo, url)
}

/// The install record of the global install `name`.
fn record(home: &Path, name: &str) -> Value {
    let text = std::fs::read_to_string(home.join("provenance").join(format!("{name}.json")));
    serde_json::from_str(&text.expect("an install record")).unwrap()
}

/// What `zot ext call <name> <tool> <args>` printed; it must succeed.
fn call(home: &Path, cwd: &Path, name: &str, tool: &str, args: &str) -> String {
    let out = zot(home, cwd, &["call", name, tool, args]);
    assert_ok(&out);
    stdout(&out).trim().to_string()
}

/// Nothing of a failed install is left: no extension `name`, no staging folder.
#[track_caller]
fn nothing_installed(home: &Path, name: &str) {
    let exts = home.join("extensions");
    let left: Vec<String> = std::fs::read_dir(&exts)
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    assert!(
        !left
            .iter()
            .any(|n| n == name || n.starts_with(".tmp-install-")),
        "{left:?}"
    );
    assert!(!home
        .join("provenance")
        .join(format!("{name}.json"))
        .exists());
}

/// One command from a Go source in git to a working extension, natively and as a
/// sandboxed component: both are built with the toolchain named at the prompt, answer a
/// tool call in a goroutine, keep a data dir, and record what was built; `verify`
/// checks the built file.
#[test]
fn a_go_source_from_git_is_built_at_install_natively_and_for_the_sandbox() {
    let (scratch, home, cwd) = scratch("build-go");
    let (_repo, url) = go_repo(scratch.path());
    let path = go_path();

    let out = zot_on(&path, &home, &cwd, &["install", &url, "--yes"]);
    assert_ok(&out);
    let said = stdout(&out);
    says(
        &said,
        &[
            "It is not built: go-async is not in the source. zot builds it with go version go1.27.3 ",
            "/go build -trimpath -buildvcs=false -o go-async .",
            "The build runs confined (Landlock and seccomp), in a copy of the source:",
            "  - network: none",
            "Built go-async.",
            "It runs (from its folder's copy):",
        ],
    );
    let out = zot_on(
        &path,
        &home,
        &cwd,
        &[
            "install",
            &url,
            "--wasm",
            "--yes",
            "--name",
            "go-async-wasm",
        ],
    );
    assert_ok(&out);
    let said = stdout(&out);
    says(
        &said,
        &[
            "GOOS=wasip1 GOARCH=wasm ",
            "/go build -trimpath -buildvcs=false -o go-async.wasm .",
            "Built go-async.wasm.",
            "It is a sandboxed WebAssembly component. It asks to:",
        ],
    );
    let m: Value = serde_json::from_str(
        &std::fs::read_to_string(home.join("extensions/go-async-wasm/extension.json")).unwrap(),
    )
    .unwrap();
    // Named as the source names it (`--name` names the install).
    assert_eq!(m["wasm"], "go-async.wasm", "{m}");
    assert!(m.get("exec").is_none(), "{m}");

    // Both answer alike, each with its own data dir.
    for name in ["go-async", "go-async-wasm"] {
        assert_eq!(
            call(&home, &cwd, name, "go_count", "{}"),
            "call 1",
            "{name}"
        );
        assert_eq!(
            call(&home, &cwd, name, "go_count", "{}"),
            "call 2",
            "{name}"
        );
        let waited = call(&home, &cwd, name, "go_wait", r#"{"ms":20}"#);
        assert_eq!(waited, "waited 20 ms", "{name}");
    }
    let wasm = listed(&home, &cwd, "go-async-wasm");
    assert_eq!(wasm["sandbox"]["stdin"], "polled", "{wasm}");

    for (name, target, output) in [
        ("go-async", "native", "go-async"),
        ("go-async-wasm", "wasm", "go-async.wasm"),
    ] {
        let r = record(&home, name);
        let build = &r["build"];
        assert_eq!(build["recipe"], "go", "{r}");
        assert_eq!(build["target"], target, "{r}");
        assert!(
            build["toolchain"]
                .as_str()
                .unwrap()
                .starts_with("go version go1.27.3 "),
            "{r}"
        );
        assert_eq!(build["outputs"][output], r["files"][output], "{r}");
        assert!(
            build["outputs"][output].as_str().unwrap().len() == 64,
            "{r}"
        );
        assert_ok(&zot(&home, &cwd, &["verify", name]));
    }
    // A built file changed after install is what `verify` reports.
    let program = home.join("extensions/go-async/go-async");
    let mut bytes = std::fs::read(&program).unwrap();
    bytes.push(0);
    std::fs::write(&program, bytes).unwrap();
    let out = zot(&home, &cwd, &["verify", "go-async"]);
    assert!(!out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("go-async"), "{}", text(&out));
}

/// A source whose manifest says how to build it (`build`, argv), in a folder.
fn build_source(dir: &Path, build: Value) -> PathBuf {
    let src = dir.join("src");
    std::fs::create_dir_all(&src).unwrap();
    let m = json!({"name": "built", "version": "1.0.0", "exec": "./built", "build": build});
    std::fs::write(src.join("extension.json"), m.to_string()).unwrap();
    src
}

/// The build runs confined to its copy: one that writes outside it, or connects to an
/// address (none is allowed to a build step that does not fetch), fails, installs
/// nothing and shows its log's tail; the same build without the escape installs.
#[test]
fn a_build_that_writes_outside_its_copy_or_connects_out_fails_and_installs_nothing() {
    let (scratch, home, cwd) = scratch("build-fence");
    let outside = scratch.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    let marker = outside.join("marker");
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let path = std::env::var("PATH").unwrap();
    let install = |src: &Path| {
        zot_on(
            &path,
            &home,
            &cwd,
            &["install", src.to_str().unwrap(), "--yes"],
        )
    };
    let escapes = [
        (
            "a write outside",
            json!([
                "sh",
                "-c",
                format!("touch '{}' && cp /bin/true built", marker.display())
            ]),
            "Permission denied",
        ),
        (
            "a connection",
            json!([
                "/usr/bin/python3",
                "-c",
                format!(
                    "import socket, shutil\nsocket.create_connection(('127.0.0.1', {port}), 5)\n\
                 shutil.copy('/bin/true', 'built')"
                )
            ]),
            "PermissionError",
        ),
    ];
    for (what, build, said) in escapes {
        let src = build_source(&scratch.path().join(what.replace(' ', "-")), build);
        let out = install(&src);
        assert!(!out.status.success(), "{what}: {}", text(&out));
        let err = stderr(&out);
        assert!(err.contains("the build failed: `"), "{what}: {err}");
        assert!(
            err.contains("nothing was installed (log: "),
            "{what}: {err}"
        );
        assert!(err.contains(said), "{what}: the log's tail: {err}");
        nothing_installed(&home, "built");
    }
    assert!(!marker.exists(), "the build wrote outside its copy");
    assert!(
        listener.accept().is_err(),
        "the build connected to 127.0.0.1:{port}"
    );
    // What a build leaves is checked as a source is: a link out of the copy is refused,
    // a setuid bit dropped.
    let src = build_source(
        &scratch.path().join("link"),
        json!(["sh", "-c", "cp /bin/true built && ln -s /etc/passwd leak"]),
    );
    let out = install(&src);
    assert!(!out.status.success(), "{}", text(&out));
    assert!(stderr(&out).contains("leak"), "{}", text(&out));
    nothing_installed(&home, "built");
    let src = build_source(
        &scratch.path().join("setuid"),
        json!(["sh", "-c", "cp /bin/true built && chmod 4755 built"]),
    );
    let out = install(&src);
    assert_ok(&out);
    let mode = std::fs::metadata(home.join("extensions/built/built")).unwrap();
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(
        mode.permissions().mode() & 0o7777,
        0o755,
        "the setuid bit is kept"
    );
    assert_ok(&zot(&home, &cwd, &["remove", "built", "--yes"]));
    // The same build without the escape: installed, and it runs what it built.
    let src = build_source(
        &scratch.path().join("plain"),
        json!(["cp", "/bin/true", "built"]),
    );
    let out = install(&src);
    assert_ok(&out);
    assert!(
        stdout(&out).contains("  cp /bin/true built"),
        "{}",
        text(&out)
    );
    assert!(home.join("extensions/built/built").is_file());
    assert_eq!(record(&home, "built")["build"]["recipe"], "manifest");
}

/// A build whose toolchain is missing says which and how to get it; one with no
/// recipe says how to give one; a shell string is no `build`.
#[test]
fn a_source_that_cannot_be_built_here_says_what_is_missing() {
    let (scratch, home, cwd) = scratch("build-missing");
    let empty = scratch.path().join("empty-path");
    std::fs::create_dir_all(&empty).unwrap();
    let go_src = scratch.path().join("go-src");
    std::fs::create_dir_all(&go_src).unwrap();
    for file in ["main.go", "go.mod", "extension.json"] {
        let from = workspace().join("tests/extensions/go-async").join(file);
        std::fs::copy(from, go_src.join(file)).unwrap();
    }
    // The same source without its module: nothing says how to build it.
    let no_recipe = scratch.path().join("no-recipe");
    std::fs::create_dir_all(&no_recipe).unwrap();
    for file in ["main.go", "extension.json"] {
        std::fs::copy(go_src.join(file), no_recipe.join(file)).unwrap();
    }
    let cases = [
        (
            go_src,
            "building it needs go, which is not found: install Go 1.21 or later \
             (https://go.dev/dl/) and put its `bin` on PATH",
        ),
        (
            build_source(&scratch.path().join("b"), json!(["no-such-builder", "x"])),
            "building it needs the manifest's build program, which is not found",
        ),
        (
            no_recipe,
            "nothing says how to build it: build it first, or add a \"build\"",
        ),
        (
            build_source(&scratch.path().join("shell"), json!("make ext")),
            "not a shell string",
        ),
    ];
    for (src, said) in cases {
        let args = ["install", src.to_str().unwrap(), "--yes"];
        let out = zot_on(empty.to_str().unwrap(), &home, &cwd, &args);
        assert!(!out.status.success(), "{}", text(&out));
        assert!(stderr(&out).contains(said), "{said:?} in: {}", text(&out));
        nothing_installed(&home, "go-async");
    }
}

/// A project's copy of an extension with a build recipe is never built by loading it:
/// not before the project is trusted, nor after (a build runs only at install).
#[test]
fn a_build_recipe_in_a_project_copy_is_not_run_by_loading_it() {
    let scratch = TempDir::new("build-project");
    let home = scratch.path().join("home");
    let project = scratch.path().join("project");
    let marker = scratch.path().join("built-marker");
    let ext = project.join(".zot/extensions/built");
    std::fs::create_dir_all(&ext).unwrap();
    let build = json!(["sh", "-c", format!("touch '{}'", marker.display())]);
    let m = json!({"name": "built", "version": "1.0.0", "exec": "./built", "build": build});
    std::fs::write(ext.join("extension.json"), m.to_string()).unwrap();
    let _ = zot(&home, &project, &["list"]);
    let _ = zot(&home, &project, &["check", "built"]);
    assert_ok(&zot(&home, &project, &["trust", ".", "--yes"]));
    let out = zot(&home, &project, &["check", "built"]);
    assert!(!out.status.success(), "{}", text(&out));
    assert!(!marker.exists(), "loading the project ran its build recipe");
}

/// `update` builds the new source again, as it was built at install; the same source
/// built again is the same file (up to date).
#[test]
fn update_builds_the_new_source_again() {
    let (scratch, home, cwd) = scratch("build-update");
    let (repo, url) = go_repo(scratch.path());
    let path = go_path();
    assert_ok(&zot_on(&path, &home, &cwd, &["install", &url, "--yes"]));
    let before = record(&home, "go-async")["build"]["outputs"]["go-async"].clone();
    let out = zot_on(&path, &home, &cwd, &["update", "go-async", "--yes"]);
    assert_ok(&out);
    assert!(stdout(&out).contains("is up to date"), "{}", text(&out));

    let main = repo.join("main.go");
    let source = std::fs::read_to_string(&main).unwrap();
    std::fs::write(
        &main,
        source.replace("Hello from a goroutine", "Hello again"),
    )
    .unwrap();
    git(&repo, &["commit", "-qam", "a new greeting"]);
    let out = zot_on(&path, &home, &cwd, &["update", "go-async", "--yes"]);
    assert_ok(&out);
    let after = record(&home, "go-async");
    assert_ne!(after["build"]["outputs"]["go-async"], before, "{after}");
    assert_eq!(
        after["build"]["outputs"]["go-async"],
        after["files"]["go-async"]
    );
    assert_ok(&zot(&home, &cwd, &["verify", "go-async"]));
    let out = zot(&home, &cwd, &["check", "go-async"]);
    assert_ok(&out);
}

/// A Rust source (the standard library only) in git: `cargo build --release` natively,
/// for `wasm32-wasip2` with `--wasm` (a command component, installed sandboxed); both
/// answer alike, each with its own data dir, and record the build.
#[test]
fn a_rust_source_from_git_is_built_at_install_natively_and_for_the_sandbox() {
    let (scratch, home, cwd) = scratch("build-rust");
    let repo = scratch.path().join("repo");
    std::fs::create_dir_all(repo.join("src")).unwrap();
    let source = workspace().join("tests/extensions/rs-plain");
    for file in ["Cargo.toml", "extension.json", "src/main.rs"] {
        std::fs::copy(source.join(file), repo.join(file)).unwrap();
    }
    let url = committed(&repo);
    let toolchain = pinned_toolchain();
    let rust = |args: &[&str]| {
        let out = zot_env(&[("RUSTUP_TOOLCHAIN", &toolchain)], &home, &cwd, args);
        assert_ok(&out);
        stdout(&out)
    };
    let native = rust(&["install", &url, "--yes"]);
    let version = format!("zot builds it with cargo {}", pinned_toolchain());
    says(
        &native,
        &[
            "It is not built: target/release/rs-plain is not in the source.",
            version.as_str(),
            "/cargo build --release --offline --bin rs-plain",
            "Built target/release/rs-plain.",
        ],
    );
    let wasm = rust(&["install", &url, "--wasm", "--yes", "--name", "rs-wasm"]);
    says(
        &wasm,
        &[
            "/cargo build --release --offline --target wasm32-wasip2 --bin rs-plain",
            "Built rs-plain.wasm.",
            "It is a sandboxed WebAssembly component. It asks to:",
        ],
    );
    for (name, target) in [("rs-plain", "native"), ("rs-wasm", "wasm")] {
        let first = call(&home, &cwd, name, "rs_count", "{}");
        let log = std::fs::read_to_string(home.join(format!("logs/ext-{name}.log")));
        assert_eq!(first, "call 1", "{name}: {log:?}");
        assert_eq!(
            call(&home, &cwd, name, "rs_count", "{}"),
            "call 2",
            "{name}"
        );
        let r = record(&home, name);
        assert_eq!(r["build"]["recipe"], "cargo", "{r}");
        assert_eq!(r["build"]["target"], target, "{r}");
        assert_ok(&zot(&home, &cwd, &["verify", name]));
    }
    let component = listed(&home, &cwd, "rs-wasm");
    assert_eq!(component["sandbox"]["component"], "command", "{component}");
}

/// A step that fetches packages may reach HTTPS only: `go mod download` told (by the
/// user's `GOPROXY`) to fetch from a local port fails without connecting, and the
/// prompt said what the fetch may reach.
#[test]
fn a_fetch_step_may_connect_to_https_only() {
    let (scratch, home, cwd) = scratch("build-fetch");
    let src = scratch.path().join("src");
    std::fs::create_dir_all(&src).unwrap();
    for file in ["main.go", "extension.json"] {
        let from = workspace().join("tests/extensions/go-async").join(file);
        std::fs::copy(from, src.join(file)).unwrap();
    }
    std::fs::write(
        src.join("go.mod"),
        "module example.com/fetch\n\ngo 1.21\n\nrequire example.com/dep v1.0.0\n",
    )
    .unwrap();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let proxy = format!("http://127.0.0.1:{}", listener.local_addr().unwrap().port());
    let env = [
        ("PATH", go_path()),
        ("GOPROXY", proxy),
        ("GOSUMDB", "off".to_string()),
    ];
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let out = zot_env(
        &env,
        &home,
        &cwd,
        &["install", src.to_str().unwrap(), "--yes"],
    );
    assert!(!out.status.success(), "{}", text(&out));
    let said = stdout(&out);
    assert!(
        said.contains("go mod download` (TCP port 443, and UDP for name lookups)"),
        "{said}"
    );
    // It failed at the connection, which the kernel refused.
    assert!(
        stderr(&out).contains("go mod download`: it ended with exit status: 1"),
        "{}",
        text(&out)
    );
    assert!(
        stderr(&out).contains("connect: permission denied"),
        "{}",
        text(&out)
    );
    assert!(
        listener.accept().is_err(),
        "the fetch connected to the proxy"
    );
    nothing_installed(&home, "go-async");
}

/// A Node source whose `package.json` has a `build` script: `npm run build` makes the
/// script the manifest runs with `node` (`node dist/main.js`); `--wasm` of it, with no
/// `build:wasm` script, says no recipe builds a component of it.
#[test]
fn a_node_source_is_built_by_its_build_script() {
    let (scratch, home, cwd) = scratch("build-npm");
    let repo = scratch.path().join("repo");
    std::fs::create_dir_all(&repo).unwrap();
    let source = workspace().join("tests/extensions/js-plain");
    for file in ["package.json", "build.js", "src.js", "extension.json"] {
        std::fs::copy(source.join(file), repo.join(file)).unwrap();
    }
    let url = committed(&repo);
    let out = zot(&home, &cwd, &["install", &url, "--wasm", "--yes"]);
    assert!(!out.status.success(), "{}", text(&out));
    assert!(
        stderr(&out).contains("--wasm: no recipe builds a component of it"),
        "{}",
        text(&out)
    );
    nothing_installed(&home, "js-plain");
    let out = zot(&home, &cwd, &["install", &url, "--yes"]);
    assert_ok(&out);
    // The build's own output is streamed (on stderr, with the progress).
    let said = text(&out);
    says(
        &said,
        &[
            "It is not built: dist/main.js is not in the source. zot builds it with node v",
            "/npm run build",
            "  built dist/main.js",
            "Built dist/main.js.",
        ],
    );
    assert_eq!(
        call(&home, &cwd, "js-plain", "js_echo", r#"{"a":1}"#),
        r#"{"a":1}"#
    );
    assert_eq!(record(&home, "js-plain")["build"]["recipe"], "npm");
    assert_ok(&zot(&home, &cwd, &["verify", "js-plain"]));
}

/// A TypeScript source on the `@zot/ext` SDK in a monorepo — the SDK (`file:` dependency)
/// and the WIT package beside it, as in this repository — installed from git with
/// `--path`: built in the whole source (`npm ci` fetching its pinned tools over HTTPS,
/// then `npm run build`, or `build:wasm` with `--wasm`, a component installed
/// sandboxed); both answer alike.
#[test]
fn a_typescript_source_in_a_monorepo_is_built_natively_and_for_the_sandbox() {
    let (scratch, home, cwd) = scratch("build-ts");
    let repo = scratch.path().join("repo");
    std::fs::create_dir_all(&repo).unwrap();
    // The committed files only (no `node_modules/`, no build).
    let archive = Command::new("git")
        .args([
            "archive",
            "--format=tar",
            "HEAD",
            "wit",
            "guest-sdk/ts",
            "examples/ts-hello",
        ])
        .current_dir(workspace())
        .output()
        .unwrap();
    assert!(archive.status.success(), "{}", text(&archive));
    let mut tar = Command::new("tar")
        .args(["-x", "-C"])
        .arg(&repo)
        .stdin(Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(tar.stdin.as_mut().unwrap(), &archive.stdout).unwrap();
    assert!(tar.wait().unwrap().success());
    let url = committed(&repo);
    let install = |extra: &[&str]| {
        let mut args = vec![
            "install",
            url.as_str(),
            "--path",
            "examples/ts-hello",
            "--yes",
        ];
        args.extend(extra);
        let out = zot(&home, &cwd, &args);
        assert_ok(&out);
        text(&out)
    };
    let native = install(&[]);
    says(
        &native,
        &[
            "It is not built: dist/main.js is not in the source. zot builds it with node v",
            "/npm ci\n",
            "/npm run build\n",
            "network: only `",
            "Built dist/main.js.",
        ],
    );
    let wasm = install(&["--wasm", "--name", "ts-hello-wasm"]);
    says(
        &wasm,
        &[
            "/npm run build:wasm\n",
            "Built ts-hello.wasm.",
            "It is a sandboxed WebAssembly component. It asks to:",
        ],
    );
    let shout = |name: &str| call(&home, &cwd, name, "shout", r#"{"text":"hi"}"#);
    assert_eq!(shout("ts-hello"), shout("ts-hello-wasm"));
    for (name, target) in [("ts-hello", "native"), ("ts-hello-wasm", "wasm")] {
        let r = record(&home, name);
        assert_eq!(r["build"]["recipe"], "npm", "{r}");
        assert_eq!(r["build"]["target"], target, "{r}");
        assert_ok(&zot(&home, &cwd, &["verify", name]));
    }
}

/// A folder of a local source, with its Go module at the top (`--path ext`): built in a
/// copy of the whole source (the module is found above the folder), never in the
/// user's folder, which is left as it was.
#[test]
fn a_folder_of_a_local_module_is_built_in_a_copy_of_the_whole_source() {
    let (scratch, home, cwd) = scratch("build-mono");
    let src = scratch.path().join("src");
    std::fs::create_dir_all(src.join("ext")).unwrap();
    for file in ["main.go", "extension.json"] {
        let from = workspace().join("tests/extensions/go-async").join(file);
        std::fs::copy(from, src.join("ext").join(file)).unwrap();
    }
    std::fs::write(src.join("go.mod"), "module example.com/mono\n\ngo 1.21\n").unwrap();
    let before: Vec<_> = std::fs::read_dir(src.join("ext"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    let args = ["install", src.to_str().unwrap(), "--path", "ext", "--yes"];
    let out = zot_on(&go_path(), &home, &cwd, &args);
    assert_ok(&out);
    assert!(stdout(&out).contains("Built go-async."), "{}", text(&out));
    assert_eq!(call(&home, &cwd, "go-async", "go_count", "{}"), "call 1");
    let after: Vec<_> = std::fs::read_dir(src.join("ext"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(before, after, "the build wrote in the user's folder");
    assert!(!src.join("ext/go-async").exists());
}
