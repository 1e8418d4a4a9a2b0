//! Builds the test guests (`tests/guests`, a cargo workspace of its own) and the Rust
//! examples (`examples/`, another one) with a nested cargo, as wasmtime's test-programs
//! artifacts crate does:
//!
//! 1. `cargo build --release --target wasm32-wasip2 -p reactor -p command -p future -p
//!    sdk-probe -p silent -p mcp-server`: `reactor.wasm`, `command.wasm`, `future.wasm`,
//!    `sdk-probe.wasm`, `silent.wasm` and `mcp-server.wasm`, all components;
//! 2. `cargo build --release --target wasm32-wasip1 -p command`: the same command guest
//!    as a WASI preview-1 core module (`COMMAND_P1`);
//! 3. `cargo build --release --target <TARGET> -p command -p zot-test-ext -p sdk-probe`:
//!    the same command guest and SDK probe as native stdio extensions, and the Rust test
//!    extension;
//! 4. the examples, `cargo build --release` for wasm32-wasip2 and for `<TARGET>`: each
//!    one both as a component and as a native stdio extension.
//!
//! All go to `<target>/wasm-guests`, beside (not inside) the outer build's profile
//! directories: a target directory of its own, so the nested cargo never waits for the
//! outer one's build lock. The paths are written to `$OUT_DIR/guests.rs` for `src/lib.rs`.
//!
//! The build reruns when a source of the guests, the examples, the `zot-ext` SDK, the
//! `zot-protocol` crate or the WIT package changes, or when `<target>/wasm-guests` was
//! deleted.

use std::env;
use std::ffi::{OsStr, OsString};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime};

const WASM_TARGET: &str = "wasm32-wasip2";
/// The preview-1 target the command guest is also built for (a core module).
const P1_TARGET: &str = "wasm32-wasip1";

/// The members of examples/Cargo.toml: each binary is named after its example.
const EXAMPLES: &[&str] = &["hello", "weather", "guard", "todo"];

/// Written after a successful build with an mtime in the distant past: cargo reruns this
/// script when a `rerun-if-changed` path is missing, so deleting `<target>/wasm-guests`
/// rebuilds the guests, while the stamp itself never looks newer than the last run.
const STAMP: &str = "zot-test-guests.stamp";

fn main() {
    let manifest_dir =
        PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").expect("CARGO_MANIFEST_DIR"));
    let root = manifest_dir
        .parent()
        .and_then(Path::parent)
        .expect("tests/guests-build sits two levels below the workspace root")
        .to_path_buf();
    let guests = root.join("tests").join("guests");
    let examples = root.join("examples");
    let out_dir = PathBuf::from(env::var_os("OUT_DIR").expect("OUT_DIR"));
    let target_dir = outer_target_dir(&out_dir).join("wasm-guests");
    let native_target = env::var("TARGET").expect("TARGET");
    let cargo = env::var_os("CARGO").unwrap_or_else(|| "cargo".into());

    rerun_if_changed(&root, &[&guests, &examples], &target_dir);
    require_wasm_target(WASM_TARGET);
    require_wasm_target(P1_TARGET);

    let manifest = guests.join("Cargo.toml");
    let started = Instant::now();
    run(inner_cargo(&cargo)
        .args(["build", "--release", "--target", WASM_TARGET])
        .args(["-p", "reactor", "-p", "command", "-p", "future"])
        .args(["-p", "sdk-probe", "-p", "silent", "-p", "mcp-server"])
        .arg("--manifest-path")
        .arg(&manifest)
        .arg("--target-dir")
        .arg(&target_dir));
    run(inner_cargo(&cargo)
        .args(["build", "--release", "--target", P1_TARGET, "-p", "command"])
        .arg("--manifest-path")
        .arg(&manifest)
        .arg("--target-dir")
        .arg(&target_dir));
    run(inner_cargo(&cargo)
        .args([
            "build",
            "--release",
            "-p",
            "command",
            "-p",
            "zot-test-ext",
            "-p",
            "sdk-probe",
            "--target",
            &native_target,
        ])
        .arg("--manifest-path")
        .arg(&manifest)
        .arg("--target-dir")
        .arg(&target_dir));
    let examples_manifest = examples.join("Cargo.toml");
    for target in [WASM_TARGET, native_target.as_str()] {
        run(inner_cargo(&cargo)
            .args(["build", "--release", "--target", target])
            .arg("--manifest-path")
            .arg(&examples_manifest)
            .arg("--target-dir")
            .arg(&target_dir));
    }
    eprintln!("test guests and examples built in {:?}", started.elapsed());

    let wasm_dir = target_dir.join(WASM_TARGET).join("release");
    let exe = if native_target.contains("windows") {
        ".exe"
    } else {
        ""
    };
    let artifacts = [
        (
            "REACTOR",
            wasm_dir.join("reactor.wasm"),
            "the reactor component (exports `zot:extension/guest`)",
        ),
        (
            "COMMAND",
            wasm_dir.join("command.wasm"),
            "the command component (`wasi:cli/run`, frames on stdin/stdout)",
        ),
        (
            "COMMAND_P1",
            target_dir
                .join(P1_TARGET)
                .join("release")
                .join("command.wasm"),
            "the same command guest as a WASI preview-1 core module (`wasm32-wasip1`)",
        ),
        (
            "FUTURE",
            wasm_dir.join("future.wasm"),
            "a reactor of `zot:extension@0.2.0`, a version this host does not speak",
        ),
        (
            "TEST_EXT",
            target_dir
                .join(&native_target)
                .join("release")
                .join(format!("zot-test-ext{exe}")),
            "`zot-test-ext`, the Rust stdio extension of the tests (tests/guests/ext-rs)",
        ),
        (
            "SILENT",
            wasm_dir.join("silent.wasm"),
            "a command component that never says hello (tests/guests/silent)",
        ),
        (
            "MCP_SERVER",
            wasm_dir.join("mcp-server.wasm"),
            "an MCP stdio server as a command component (tests/guests/mcp-server)",
        ),
        (
            "SDK_PROBE",
            wasm_dir.join("sdk-probe.wasm"),
            "the SDK's probe (tests/guests/sdk-probe) as a component",
        ),
        (
            "SDK_PROBE_NATIVE",
            target_dir
                .join(&native_target)
                .join("release")
                .join(format!("sdk-probe{exe}")),
            "the SDK's probe built natively",
        ),
        (
            "COMMAND_NATIVE",
            target_dir
                .join(&native_target)
                .join("release")
                .join(format!("command{exe}")),
            "the command guest built natively: a classic stdio extension",
        ),
    ];
    let mut code = String::from("// Generated by tests/guests-build/build.rs.\n");
    for (name, path, doc) in &artifacts {
        let path = built(path);
        code += &format!("\n/// {doc}\npub const {name}: &str = {path:?};\n");
    }
    code += "\n/// The Rust examples (examples/), each built natively and as a component.\n";
    code += "pub const EXAMPLES: &[Example] = &[\n";
    for name in EXAMPLES {
        let native = built(
            &target_dir
                .join(&native_target)
                .join("release")
                .join(format!("{name}{exe}")),
        );
        let wasm = built(&wasm_dir.join(format!("{name}.wasm")));
        code += &format!("    Example {{ name: {name:?}, native: {native:?}, wasm: {wasm:?} }},\n");
    }
    code += "];\n";
    fs::write(out_dir.join("guests.rs"), code).expect("write guests.rs");

    let stamp = fs::File::create(target_dir.join(STAMP)).expect("write the stamp");
    stamp
        .set_modified(SystemTime::UNIX_EPOCH + Duration::from_secs(1))
        .expect("set the stamp's mtime");
}

/// `path` as a string, which the build must have produced.
fn built(path: &Path) -> String {
    assert!(
        path.is_file(),
        "the guest build did not produce {}",
        path.display()
    );
    path.to_str()
        .expect("the target directory's path is UTF-8")
        .to_string()
}

/// The outer build's target directory: `CARGO_TARGET_DIR` when set to an absolute path,
/// else found from `OUT_DIR` = `<target>[/<triple>]/<profile>/build/<pkg>-<hash>/out`.
fn outer_target_dir(out_dir: &Path) -> PathBuf {
    if let Some(dir) = env::var_os("CARGO_TARGET_DIR").map(PathBuf::from) {
        if dir.is_absolute() {
            return dir;
        }
        // Relative to wherever cargo was started, which a build script cannot know; the
        // walk below finds the same directory.
    }
    // Cargo marks the root of every target (and build) directory with CACHEDIR.TAG.
    if let Some(dir) = out_dir
        .ancestors()
        .find(|d| d.join("CACHEDIR.TAG").is_file())
    {
        return dir.to_path_buf();
    }
    // <pkg>-<hash>/out → build → <profile> → its parent (<target>, or <target>/<triple>).
    let build = out_dir
        .ancestors()
        .find(|d| d.file_name() == Some(OsStr::new("build")))
        .unwrap_or_else(|| panic!("no `build` directory above OUT_DIR {}", out_dir.display()));
    build
        .parent()
        .and_then(Path::parent)
        .expect("OUT_DIR has a target directory")
        .to_path_buf()
}

/// A cargo command with none of the outer build's settings: those cargo reads from the
/// environment (flags, target, target dir, profiles, wrappers such as clippy's) and those
/// it sets for build scripts (`CARGO_CFG_*`, `CARGO_FEATURE_*` would otherwise reach the
/// guests' own build scripts and describe the wrong target). Kept: `CARGO_HOME`,
/// `RUSTUP_TOOLCHAIN`, `RUSTC` (the same compiler), `RUSTC_WRAPPER` (e.g. sccache), and
/// `CARGO_MAKEFLAGS`, so the nested build takes its jobs from the outer jobserver.
fn inner_cargo(cargo: &OsStr) -> Command {
    const REMOVE: &[&str] = &[
        "RUSTFLAGS",
        "RUSTDOCFLAGS",
        "CARGO_ENCODED_RUSTFLAGS",
        "CARGO_ENCODED_RUSTDOCFLAGS",
        "CARGO_TARGET_DIR",
        "CARGO_BUILD_TARGET",
        "CARGO_BUILD_TARGET_DIR",
        "CARGO_BUILD_BUILD_DIR",
        "CARGO_BUILD_RUSTFLAGS",
        "CARGO_BUILD_RUSTDOCFLAGS",
        "CARGO_BUILD_RUSTC_WORKSPACE_WRAPPER",
        "CARGO_BUILD_INCREMENTAL",
        "CARGO_INCREMENTAL",
        "RUSTC_WORKSPACE_WRAPPER",
        "CLIPPY_ARGS",
        "CLIPPY_CONF_DIR",
        "RUSTC_LINKER",
        "OUT_DIR",
        "TARGET",
        "HOST",
        "PROFILE",
        "OPT_LEVEL",
        "DEBUG",
        "NUM_JOBS",
    ];
    const REMOVE_PREFIX: &[&str] = &[
        "CARGO_PROFILE_",
        "CARGO_CFG_",
        "CARGO_FEATURE_",
        "CARGO_PKG_",
        "CARGO_MANIFEST_",
        "DEP_",
    ];
    let mut cmd = Command::new(cargo);
    for (key, _) in env::vars_os() {
        let Some(k) = key.to_str() else { continue };
        let per_target_flags = k.starts_with("CARGO_TARGET_")
            && (k.ends_with("_RUSTFLAGS") || k.ends_with("_RUSTDOCFLAGS"));
        if REMOVE.contains(&k) || REMOVE_PREFIX.iter().any(|p| k.starts_with(p)) || per_target_flags
        {
            cmd.env_remove(&key);
        }
    }
    // Keep our stdout for `cargo:` directives only.
    cmd.stdout(Stdio::from(std::io::stderr()));
    cmd
}

fn run(cmd: &mut Command) {
    let args: Vec<_> = cmd.get_args().map(|a| a.to_string_lossy()).collect();
    eprintln!(
        "running: {} {}",
        cmd.get_program().to_string_lossy(),
        args.join(" ")
    );
    let status = cmd
        .status()
        .unwrap_or_else(|e| panic!("could not run {:?}: {e}", cmd.get_program()));
    if !status.success() {
        panic!("building the test guests failed ({status}); the cargo output is above");
    }
}

/// Makes sure the wasm32-wasip2 standard library is installed: rust-toolchain.toml lists
/// the target, so rustup installs it with the toolchain; where rustup does not install
/// on use (`RUSTUP_AUTO_INSTALL=0`, or the toolchain was already there), it is added
/// here with `rustup target add`. Fails the build, clearly, if it still is not there.
fn require_wasm_target(target: &str) {
    if has_wasm_std(target) {
        return;
    }
    eprintln!("the Rust target {target} is not installed: running rustup target add {target}");
    // RUSTUP_TOOLCHAIN, set by rustup's proxy for this build, names the toolchain.
    let added = Command::new("rustup")
        .args(["target", "add", target])
        .stdout(Stdio::from(std::io::stderr()))
        .status();
    if added.as_ref().is_ok_and(|s| s.success()) && has_wasm_std(target) {
        return;
    }
    eprintln!(
        "\nerror: the Rust target {target} is not installed and could not be added \
         ({added:?}); the test guests (tests/guests) are built for it.\n\n    \
         rustup target add {target}\n"
    );
    std::process::exit(1);
}

/// Whether the compiler has the standard library of `target`.
fn has_wasm_std(target: &str) -> bool {
    let rustc = env::var_os("RUSTC").unwrap_or_else(|| OsString::from("rustc"));
    let libdir = Command::new(&rustc)
        .args(["--print", "target-libdir", "--target", target])
        .stderr(Stdio::null())
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()));
    libdir
        .as_deref()
        .and_then(|dir| fs::read_dir(dir).ok())
        .is_some_and(|entries| {
            entries
                .flatten()
                .any(|e| e.file_name().to_string_lossy().starts_with("libstd-"))
        })
}

/// `rerun-if-changed` for every input of the guests and examples: their sources,
/// manifests and lock files (not their `target/`, nor artifacts copied beside the
/// examples' manifests), the crates they depend on (`zot-ext`, `zot-protocol`), the
/// workspace manifest those inherit from, and the WIT package.
fn rerun_if_changed(root: &Path, workspaces: &[&Path], target_dir: &Path) {
    fn walk(dir: &Path) {
        let mut entries: Vec<_> = fs::read_dir(dir)
            .unwrap_or_else(|e| panic!("read {}: {e}", dir.display()))
            .flatten()
            .collect();
        entries.sort_by_key(|e| e.file_name());
        for entry in entries {
            let name = entry.file_name();
            let name = name.to_string_lossy();
            if name == "target" || name.starts_with('.') {
                continue;
            }
            let path = entry.path();
            if path.is_dir() {
                walk(&path);
            } else if [".rs", ".toml", ".lock", ".json", ".wit"]
                .iter()
                .any(|ext| name.ends_with(ext))
            {
                println!("cargo:rerun-if-changed={}", path.display());
            }
        }
    }
    for dir in workspaces {
        walk(dir);
    }
    walk(&root.join("guest-sdk"));
    for path in ["protocol/Cargo.toml", "protocol/src", "Cargo.toml", "wit"] {
        println!("cargo:rerun-if-changed={}", root.join(path).display());
    }
    println!(
        "cargo:rerun-if-changed={}",
        target_dir.join(STAMP).display()
    );
}
