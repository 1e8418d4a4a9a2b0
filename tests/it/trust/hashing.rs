//! What trust hashes and what the compiler compiles (issue 16, points 7 and 8): a trusted
//! project extension that gains a link to a device or a FIFO is untrusted with the
//! reason, never a hang of `zot ext list` or `zot host`; the compile child compiles the
//! very bytes the host hashed, even when the file is swapped meanwhile; a cache entry
//! compiled from another component is not used, nor for a component not the one its start
//! expected (a stale grant); a compiler killed from outside is
//! reported as killed, not as out of CPU time. Real `zot` processes, real components.

use crate::common::*;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use zot_host::compile::{CompileMode, Compiler};
use zot_host::manage::component as wasm;
use zot_host::manage::component::entry::sha256_hex;
use zot_host::manage::component::Kind;
use zot_host::manage::log::ExtLog;
use zot_test_guests::{COMMAND, REACTOR};

/// `zot ext <args>` with `ZOT_HOME=home`, in `cwd`, stdin closed: its exit code and
/// stdout (its stderr in `cwd/../zot-stderr.txt`), or a panic if it has not ended within
/// `REQUEST_TIMEOUT` (it hung).
fn zot(home: &Path, cwd: &Path, args: &[&str]) -> (Option<i32>, String) {
    let out = cwd.join("../zot-stdout.txt");
    let mut child = Command::new(env!("CARGO_BIN_EXE_zot"))
        .arg("ext")
        .args(args)
        .env("ZOT_HOME", home)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out).unwrap())
        .stderr(std::fs::File::create(cwd.join("../zot-stderr.txt")).unwrap())
        .spawn()
        .expect("zot runs");
    let deadline = Instant::now() + REQUEST_TIMEOUT;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("zot ext {args:?} hung");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let text = std::fs::read_to_string(&out).unwrap();
    std::fs::remove_file(&out).unwrap();
    (status.code(), text)
}

/// The row of the project extension `name` in `zot ext list --json`.
fn listed(home: &Path, cwd: &Path, name: &str) -> Value {
    let (code, text) = zot(home, cwd, &["list", "--json"]);
    assert_eq!(code, Some(0), "{text}");
    let rows: Value = serde_json::from_str(&text).expect("list --json is JSON");
    rows.as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == name && r["source"] == "project")
        .cloned()
        .unwrap_or_else(|| panic!("no project {name} in {rows}"))
}

fn mkfifo(path: &Path) {
    let status = Command::new("mkfifo").arg(path).status().unwrap();
    assert!(status.success(), "mkfifo {}", path.display());
}

/// A trusted project extension that later gains a link to `/dev/zero` (or to
/// `/proc/self/fd/0`), or a FIFO: `zot ext list` and `zot host` answer, and report it
/// untrusted (`unreadable`) naming the file and why; it is not started, and `zot ext
/// trust` refuses it with the reason.
#[test]
fn a_trusted_project_extension_gaining_a_device_link_or_a_fifo_is_untrusted_not_a_hang() {
    let scratch = TempDir::new("tree-special");
    let root = scratch.path();
    let home = root.join("home");
    let cwd = root.join("cwd");
    let dir = HostBuilder::in_dir(root)
        .project("linked", &py_manifest("linked", &["--tools", "linked_t"]));
    let (code, text) = zot(&home, &cwd, &["trust", "--yes"]);
    assert_eq!(code, Some(0), "{text}");
    let host = HostBuilder::in_dir(root).start();
    assert_eq!(host.ready_event()["extensions"], json!(["linked"]));
    host.shutdown();

    // The file added: a link to where, or a FIFO.
    for (name, link) in [
        ("zero.py", Some("/dev/zero")),
        ("stdin.py", Some("/proc/self/fd/0")),
        ("pipe", None),
    ] {
        let file = dir.join(name);
        let reason = match link {
            Some(target) => {
                std::os::unix::fs::symlink(target, &file).unwrap();
                format!("{name}: it is a link to {target}, which leads out")
            }
            None => {
                mkfifo(&file);
                format!("{name}: it is a FIFO, not a regular file")
            }
        };
        let reason = reason.as_str();
        let row = listed(&home, &cwd, "linked");
        assert_eq!(row["state"], "untrusted", "{row}");
        assert_eq!(row["untrusted"]["why"], "unreadable", "{row}");
        let error = row["untrusted"]["error"].as_str().unwrap_or_default();
        assert!(error.contains(reason), "{reason}: {row}");

        let (code, _) = zot(&home, &cwd, &["trust", "--yes"]);
        let said = std::fs::read_to_string(root.join("zot-stderr.txt")).unwrap();
        assert_eq!(code, Some(1), "trusted anyway: {said}");
        assert!(said.contains(reason), "{reason}: {said}");

        let host = HostBuilder::in_dir(root).start();
        let ready = host.ready_event();
        assert_eq!(ready["extensions"], json!([]), "{ready}");
        let untrusted = &ready["untrusted"][0];
        assert_eq!(untrusted["extension"], "linked", "{ready}");
        assert_eq!(untrusted["why"], "unreadable", "{ready}");
        assert!(
            untrusted["error"]
                .as_str()
                .unwrap_or_default()
                .contains(reason),
            "{reason}: {ready}"
        );
        host.shutdown();
        std::fs::remove_file(&file).unwrap();
    }
    // As it was trusted again: it runs.
    let host = HostBuilder::in_dir(root).start();
    assert_eq!(host.ready_event()["extensions"], json!(["linked"]));
    host.shutdown();
}

/// A runtime for the library's async loads.
fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// The `zot` binary as the compiler, behind a shell script that first runs `before`.
fn compiler_behind(dir: &Path, name: &str, before: &str) -> Compiler {
    let script = dir.join(name);
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\n{before}\nexec '{}' \"$@\"\n",
            env!("CARGO_BIN_EXE_zot")
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let mut compiler = Compiler::default();
    compiler.mode = CompileMode::Program(script);
    compiler
}

/// Copies the component `from` to `dir/name`: its path.
fn component(dir: &Path, name: &str, from: &str) -> PathBuf {
    let to = dir.join(name);
    std::fs::copy(from, &to).unwrap();
    to
}

/// The component file is swapped for another between the host's hash and the compile
/// (deterministically: by the compiler program itself, before it starts compiling). What
/// is compiled, cached and loaded is what was hashed: the reactor, not the command now in
/// the file.
#[test]
fn the_compiler_compiles_the_bytes_that_were_hashed() {
    let scratch = TempDir::new("compile-swap");
    let dir = scratch.path();
    let wasm_file = component(dir, "swapped.wasm", REACTOR);
    let compiler = compiler_behind(
        dir,
        "swap.sh",
        &format!("cp '{COMMAND}' '{}'", wasm_file.display()),
    );
    let log = ExtLog::open(&dir.join("swap.log"));
    let loaded = runtime()
        .block_on(wasm::load(&wasm_file, &dir.join("cache"), &compiler, &log))
        .unwrap();
    assert_eq!(
        std::fs::read(&wasm_file).unwrap(),
        std::fs::read(COMMAND).unwrap(),
        "the file was swapped before the compile"
    );
    let reactor = sha256_hex(&std::fs::read(REACTOR).unwrap());
    assert_eq!(loaded.sha256, reactor);
    assert_eq!(loaded.kind(), Kind::Reactor, "the code is what was hashed");
    let entries: Vec<String> = std::fs::read_dir(dir.join("cache"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    // One entry (its code and its sum), named for what was hashed.
    assert!(
        entries.len() == 2 && entries.iter().all(|e| e.starts_with(&reactor)),
        "{entries:?}"
    );
}

/// A cache entry with a good checksum but compiled from another component (copied under
/// this component's key) is not used: the component is compiled again, and what runs is
/// its own code.
#[test]
fn a_cache_entry_compiled_from_another_component_is_rejected_and_recompiled() {
    let scratch = TempDir::new("compile-tampered");
    let dir = scratch.path();
    let cache = dir.join("cache");
    let compiler = compiler_behind(dir, "zot.sh", "");
    let rt = runtime();
    let reactor = component(dir, "reactor.wasm", REACTOR);
    let log = ExtLog::open(&dir.join("reactor.log"));
    let loaded = rt
        .block_on(wasm::load(&reactor, &cache, &compiler, &log))
        .unwrap();
    assert_eq!(loaded.kind(), Kind::Reactor);
    // The reactor's entry (its code and its sum) copied under the command's name.
    let command_sha = sha256_hex(&std::fs::read(COMMAND).unwrap());
    let files: Vec<String> = std::fs::read_dir(&cache)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(files.len(), 2, "{files:?}");
    for file in files {
        let planted = file.replacen(&loaded.sha256, &command_sha, 1);
        assert_ne!(planted, file);
        std::fs::copy(cache.join(&file), cache.join(&planted)).unwrap();
    }

    let command = component(dir, "command.wasm", COMMAND);
    let log_path = dir.join("command.log");
    let loaded = rt
        .block_on(wasm::load(
            &command,
            &cache,
            &compiler,
            &ExtLog::open(&log_path),
        ))
        .unwrap();
    assert_eq!(loaded.kind(), Kind::Command, "its own code runs");
    let said = std::fs::read_to_string(&log_path).unwrap();
    assert!(
        said.contains("cache entry not used") && said.contains("compiled from another component"),
        "{said}"
    );
    assert!(said.contains("compiled "), "compiled again: {said}");
}

/// A copy of the cache folder `from` at `to`: a cache this process has loaded nothing
/// from (what it loaded is shared by entry path).
fn cache_copy(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for file in std::fs::read_dir(from).unwrap() {
        let file = file.unwrap();
        std::fs::copy(file.path(), to.join(file.file_name())).unwrap();
    }
}

/// The hash a start expects (its grant's) only names the entry checked while the
/// component is read and hashed: a valid entry of the component expected is not used for
/// another one now in the file (a stale grant), nor an entry of another component planted
/// under the expected hash; the component's own code runs, and its own entry is used
/// when the hash holds. Something that is not a hash is as if nothing were expected.
#[test]
fn an_expected_hash_never_loads_the_code_of_another_component() {
    let scratch = TempDir::new("compile-expected");
    let dir = scratch.path();
    let compiler = compiler_behind(dir, "zot.sh", "");
    let rt = runtime();
    let reactor = component(dir, "reactor.wasm", REACTOR);
    let command = component(dir, "command.wasm", COMMAND);
    let command_sha = sha256_hex(&std::fs::read(COMMAND).unwrap());
    let load = |wasm: &Path, cache: &Path, expected: Option<&str>, log: &str| {
        let log_path = dir.join(log);
        let loaded = rt
            .block_on(wasm::prepare(
                wasm,
                cache,
                &compiler,
                expected,
                &ExtLog::open(&log_path),
            ))
            .unwrap();
        (loaded, std::fs::read_to_string(&log_path).unwrap())
    };
    let cache = dir.join("cache");
    let (first, said) = load(&reactor, &cache, None, "reactor.log");
    assert_eq!(first.kind(), Kind::Reactor);
    assert!(said.contains("(not cached)"), "{said}");

    // Expecting the reactor, whose entry holds, while the file is the command.
    let stale = dir.join("stale");
    cache_copy(&cache, &stale);
    let (loaded, said) = load(&command, &stale, Some(&first.sha256), "stale.log");
    assert_eq!(loaded.kind(), Kind::Command, "its own code runs: {said}");
    assert_eq!(loaded.sha256, command_sha);
    assert!(
        said.contains("(not cached)"),
        "compiled, not loaded: {said}"
    );

    // The reactor's entry planted under the command's hash, which is expected.
    let planted = dir.join("planted");
    std::fs::create_dir_all(&planted).unwrap();
    for file in std::fs::read_dir(&cache).unwrap() {
        let name = file.unwrap().file_name().to_string_lossy().into_owned();
        if name.starts_with(&first.sha256) {
            let to = name.replacen(&first.sha256, &command_sha, 1);
            std::fs::copy(cache.join(&name), planted.join(to)).unwrap();
        }
    }
    let (loaded, said) = load(&command, &planted, Some(&command_sha), "planted.log");
    assert_eq!(loaded.kind(), Kind::Command, "its own code runs: {said}");
    assert!(
        said.contains("cache entry not used") && said.contains("compiled from another component"),
        "{said}"
    );
    assert!(said.contains("(not cached)"), "compiled again: {said}");

    // The command's own entry (written above), expected: loaded from it.
    let warm = dir.join("warm");
    cache_copy(&stale, &warm);
    let (loaded, said) = load(&command, &warm, Some(&command_sha), "warm.log");
    assert_eq!(loaded.kind(), Kind::Command);
    assert!(said.contains("from the compilation cache"), "{said}");
    assert!(!said.contains("compiled "), "{said}");

    // Not a hash: as if none were expected.
    let other = dir.join("other");
    cache_copy(&cache, &other);
    let (loaded, said) = load(&reactor, &other, Some("../../etc/passwd"), "other.log");
    assert_eq!(loaded.kind(), Kind::Reactor);
    assert!(said.contains("from the compilation cache"), "{said}");
}

/// A compiler killed by SIGKILL from outside (here: at once, having used no CPU time) is
/// reported as killed by that signal, not as having used up its CPU time.
#[test]
fn a_compiler_killed_from_outside_is_reported_as_killed() {
    let scratch = TempDir::new("compile-killed");
    let dir = scratch.path();
    let compiler = compiler_behind(dir, "killed.sh", "kill -KILL $$");
    let wasm_file = component(dir, "reactor.wasm", REACTOR);
    let log = ExtLog::open(&dir.join("killed.log"));
    let error =
        match runtime().block_on(wasm::load(&wasm_file, &dir.join("cache"), &compiler, &log)) {
            Ok(_) => panic!("a killed compiler gave a component"),
            Err(e) => e,
        };
    assert!(error.contains("killed by signal 9"), "{error}");
    assert!(!error.contains("CPU"), "{error}");
}
