//! Containment (issue 4/5): a hostile component costs the host at most its limits. Each
//! attack drives the real `zot` binary: the host stays responsive (pings answered, another
//! extension answering) and the attacker is refused or stopped with a reason.

mod common;

use common::*;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

// ---------------------------------------------------------------------------------------
// Generated components (WebAssembly binary format, written by hand: a component holding
// one core module of functions `(param i64) (result i64)`)

fn leb(mut n: u64, out: &mut Vec<u8>) {
    loop {
        let byte = (n & 0x7f) as u8;
        n >>= 7;
        if n == 0 {
            out.push(byte);
            return;
        }
        out.push(byte | 0x80);
    }
}

fn sleb(mut n: i64, out: &mut Vec<u8>) {
    loop {
        let byte = (n & 0x7f) as u8;
        n >>= 7;
        if (n == 0 && byte & 0x40 == 0) || (n == -1 && byte & 0x40 != 0) {
            out.push(byte);
            return;
        }
        out.push(byte | 0x80);
    }
}

fn section(id: u8, payload: &[u8], out: &mut Vec<u8>) {
    out.push(id);
    leb(payload.len() as u64, out);
    out.extend_from_slice(payload);
}

/// A component holding one core module whose functions have the given bodies (locals
/// declarations and code).
fn component(bodies: &[Vec<u8>]) -> Vec<u8> {
    let mut module = b"\0asm\x01\0\0\0".to_vec();
    section(1, b"\x01\x60\x01\x7e\x01\x7e", &mut module);
    let mut funcs = Vec::new();
    leb(bodies.len() as u64, &mut funcs);
    funcs.extend(std::iter::repeat_n(0u8, bodies.len()));
    section(3, &funcs, &mut module);
    let mut code = Vec::new();
    leb(bodies.len() as u64, &mut code);
    for body in bodies {
        leb(body.len() as u64, &mut code);
        code.extend_from_slice(body);
    }
    section(10, &code, &mut module);
    let mut out = b"\0asm\x0d\x00\x01\x00".to_vec();
    section(1, &module, &mut out);
    out
}

/// One function with more locals than the caps allow: refused before compiling.
fn locals_bomb() -> Vec<u8> {
    let mut body = Vec::new();
    body.push(1);
    leb(20_000, &mut body);
    body.extend_from_slice(b"\x7e\x20\x00\x0b");
    component(&[body])
}

/// One function within every cap that keeps thousands of values live through a long
/// chain of multiplications: seconds of compile time (a debug build takes about 5 s of
/// CPU for `units` = 20,000, `locals` = 2,000), and more memory as it grows.
fn cost_bomb(units: u64, locals: u64) -> Vec<u8> {
    let mut body = Vec::new();
    body.push(1);
    leb(locals, &mut body);
    body.push(0x7e);
    for i in 1..=locals {
        body.extend_from_slice(b"\x20\x00\x42");
        sleb((i * 2_654_435_761 % 1_000_003) as i64, &mut body);
        body.extend_from_slice(b"\x7c\x21");
        leb(i, &mut body);
    }
    for j in 0..units {
        for (op, index) in [(0x20, 1 + j % locals), (0x20, 1 + (j * 7 + 3) % locals)] {
            body.push(op);
            leb(index, &mut body);
        }
        body.extend_from_slice(b"\x7e\x21");
        leb(1 + (j * 13 + 5) % locals, &mut body);
    }
    for i in 1..=locals {
        body.push(0x20);
        leb(i, &mut body);
        body.extend_from_slice(b"\x20\x00\x7c\x21\x00");
    }
    body.extend_from_slice(b"\x20\x00\x0b");
    component(&[body])
}

/// Writes `bytes` as `<dir>/<name>/<name>.wasm` with a manifest naming it.
fn lay_out(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let ext = write_manifest(
        &dir.join(name),
        &json!({"name": name, "version": "0.1.0", "wasm": format!("{name}.wasm")}),
    );
    std::fs::write(ext.join(format!("{name}.wasm")), bytes).unwrap();
    ext
}

/// `zot ext <args>` with `ZOT_HOME=home` and `env`, stdin closed.
fn zot(home: &Path, env: &[(&str, &str)], args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_zot"))
        .arg("ext")
        .args(args)
        .env("ZOT_HOME", home)
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .output()
        .expect("zot runs")
}

fn check_report(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}): {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

// ---------------------------------------------------------------------------------------
// 1. Compilation

/// A component over a cap is refused before any compile, by `check`, by `install` and by
/// the host, with the cap named; the host's other extension is unaffected.
#[test]
fn a_component_over_the_caps_is_refused_before_compiling() {
    let scratch = TempDir::new("caps");
    let home = scratch.path().join("home");
    let ext = lay_out(scratch.path(), "wide", &locals_bomb());
    let wasm = ext.join("wide.wasm");

    let out = zot(&home, &[], &["check", wasm.to_str().unwrap(), "--json"]);
    assert_eq!(out.status.code(), Some(1));
    let report = check_report(&out);
    let said = report["violations"][0].as_str().unwrap_or_default();
    assert!(
        said.contains("refused before compiling") && said.contains("locals"),
        "{report}"
    );

    let out = zot(&home, &[], &["install", ext.to_str().unwrap(), "--yes"]);
    assert_eq!(out.status.code(), Some(1));
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        said.contains("not installed") && said.contains("locals"),
        "{said}"
    );
    assert!(!home.join("extensions/wide").exists());

    let mut b = HostBuilder::new();
    b.ext_path(&ext);
    b.explicit("steady", &py_manifest("steady", &["--tools", "echo_py"]));
    let host = b.start();
    let ready = host.ready_event();
    assert_eq!(ready["extensions"], json!(["steady"]), "{ready}");
    let error = ready["errors"][0]["error"].as_str().unwrap_or_default();
    assert!(error.contains("locals"), "{ready}");
    assert_eq!(
        host.call_tool("echo_py", json!({"x": 1}))["is_error"],
        false
    );
    host.shutdown();
}

/// A component within the caps whose compile costs more than its limits: stopped at the
/// limit, in a process of its own, with the reason; the host sends `host_ready` on time,
/// answers, its own memory stays small, and `check` and `install` end with the reason.
#[test]
fn a_compile_bomb_is_stopped_at_its_limits_and_the_host_goes_on() {
    let scratch = TempDir::new("bomb");
    let home = scratch.path().join("home");
    let ext = lay_out(scratch.path(), "bomb", &cost_bomb(40_000, 4_000));
    let cpu = [("ZOT_COMPILE_CPU_SECS", "1")];

    let started = Instant::now();
    let out = zot(&home, &cpu, &["check", ext.to_str().unwrap(), "--json"]);
    println!("check: {:?}", started.elapsed());
    assert_eq!(out.status.code(), Some(1));
    let report = check_report(&out);
    let said = report["violations"][0].as_str().unwrap_or_default();
    assert!(said.contains("CPU time"), "{report}");

    let out = zot(&home, &cpu, &["install", ext.to_str().unwrap(), "--yes"]);
    assert_eq!(out.status.code(), Some(1));
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        said.contains("not installed") && said.contains("CPU time"),
        "{said}"
    );

    let mut b = HostBuilder::new();
    b.env("ZOT_COMPILE_CPU_SECS", "1");
    b.ext_path(&ext);
    b.explicit("steady", &py_manifest("steady", &["--tools", "echo_py"]));
    let host = b.start();
    let ready = host.ready_event();
    println!("host_ready: {ready}");
    assert_eq!(ready["extensions"], json!(["steady"]), "{ready}");
    assert_eq!(host.ok("ping", json!({}))["pong"], true);
    assert_eq!(
        host.call_tool("echo_py", json!({"x": 1}))["is_error"],
        false
    );
    // Failed within the ready wait (in `errors`) or after it (`extension_exited`).
    let reason = match ready["errors"].as_array().and_then(|e| e.first()) {
        Some(e) => e["error"].as_str().unwrap_or_default().to_string(),
        None => {
            let ev = host.wait_event("the bomb's exit", Duration::from_secs(30), |v| {
                v["type"] == "extension_exited" && v["extension"] == "bomb"
            });
            ev["reason"].as_str().unwrap_or_default().to_string()
        }
    };
    assert!(reason.contains("CPU time"), "{reason}");
    let entry = host.entry("bomb");
    assert_eq!(entry["state"], "error", "{entry}");
    let peak = host.vm_hwm_kib();
    println!("the host's peak RSS: {} MiB", peak / 1024);
    assert!(peak < 200 * 1024, "the host grew to {peak} KiB");
    host.shutdown();
}

/// A compile longer than the ready wait delays nothing: `host_ready` comes on time with
/// the component `starting`, requests are answered meanwhile, and `shutdown` ends the
/// host (and the compile) without waiting for it.
#[test]
fn host_ready_and_shutdown_do_not_wait_for_a_compile() {
    let scratch = TempDir::new("slow-compile");
    let ext = lay_out(scratch.path(), "slow", &cost_bomb(40_000, 4_000));
    let mut b = HostBuilder::new();
    b.env("ZOT_COMPILE_CPU_SECS", "120");
    b.arg("--ready-timeout-ms").arg("500");
    b.ext_path(&ext);
    b.explicit("steady", &py_manifest("steady", &["--tools", "echo_py"]));
    let mut host = b.start();
    let ready = host.ready_event();
    println!("host_ready after {:?}: {ready}", host.started.elapsed());
    assert_eq!(ready["starting"], json!(["slow"]), "{ready}");
    assert_eq!(host.entry("slow")["state"], "starting");
    assert_eq!(
        host.call_tool("echo_py", json!({"x": 1}))["is_error"],
        false
    );
    let compiler = compiler_pids(host.pid());
    assert_eq!(
        compiler.len(),
        1,
        "one compile in its own process: {compiler:?}"
    );
    host.send("shutdown", json!({}));
    let status = host.wait_exit(Duration::from_secs(20));
    println!("exited {status:?} after {:?}", host.started.elapsed());
    assert!(
        wait_process_gone(compiler[0], Duration::from_secs(5)),
        "the compile outlived the host"
    );
}

/// The children of `pid` running `zot __compile`.
fn compiler_pids(pid: u32) -> Vec<u32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(child) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        let stat = std::fs::read_to_string(format!("/proc/{child}/stat")).unwrap_or_default();
        let parent = stat
            .rsplit(')')
            .next()
            .and_then(|rest| rest.split_whitespace().nth(1))
            .and_then(|p| p.parse::<u32>().ok());
        let cmdline = std::fs::read(format!("/proc/{child}/cmdline")).unwrap_or_default();
        if parent == Some(pid) && cmdline.split(|b| *b == 0).nth(1) == Some(b"__compile") {
            found.push(child);
        }
    }
    found
}
