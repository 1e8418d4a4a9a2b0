//! Containment (issue 4/5): a hostile component costs the host at most its limits. Each
//! attack drives the real `zot` binary: the host stays responsive (pings answered, another
//! extension answering) and the attacker is refused or stopped with a reason.

use crate::common::*;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};
use zot_test_guests::{COMMAND, COMMAND_P1, REACTOR};

// ---------------------------------------------------------------------------------------
// Generated components (WebAssembly binary format, written by hand: a component holding
// one core module of functions `(param i64) (result i64)`)

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

/// A command component (`wasi:cli/run`, whose `run` returns `ok`) that first makes
/// `instances` core instances of a module declaring `tables` tables and `memories`
/// memories: `instances + 1` core instances in all, with the one of `run`.
fn counted(instances: u32, tables: u32, memories: u32) -> Vec<u8> {
    use wasm_encoder::*;
    let mut filler = Module::new();
    let mut table_section = TableSection::new();
    for _ in 0..tables {
        table_section.table(TableType {
            element_type: RefType::FUNCREF,
            table64: false,
            minimum: 0,
            maximum: None,
            shared: false,
        });
    }
    let mut memory_section = MemorySection::new();
    for _ in 0..memories {
        memory_section.memory(MemoryType {
            minimum: 0,
            maximum: None,
            memory64: false,
            shared: false,
            page_size_log2: None,
        });
    }
    filler.section(&table_section).section(&memory_section);

    let mut run = Module::new();
    let mut types = TypeSection::new();
    types.ty().function([], [ValType::I32]);
    let mut funcs = FunctionSection::new();
    funcs.function(0);
    let mut exports = ExportSection::new();
    exports.export("run", ExportKind::Func, 0);
    let mut code = CodeSection::new();
    let mut ok = Function::new([]);
    ok.instructions().i32_const(0).end();
    code.function(&ok);
    run.section(&types)
        .section(&funcs)
        .section(&exports)
        .section(&code);
    command_of(Some((&filler, instances)), &run)
}

/// A command component (`wasi:cli/run`) whose `run` is the export `run` (`() -> i32`, 0
/// for `ok`) of the core module `run`, instantiated after `instances` core instances of
/// `before` if given.
fn command_of(before: Option<(&wasm_encoder::Module, u32)>, run: &wasm_encoder::Module) -> Vec<u8> {
    use wasm_encoder::*;
    let none = || std::iter::empty::<(&str, ModuleArg)>();
    let empty = Module::new();
    let (filler, instances) = before.unwrap_or((&empty, 0));
    let mut c = Component::new();
    c.section(&ModuleSection(filler))
        .section(&ModuleSection(run));
    let mut core = InstanceSection::new();
    for _ in 0..instances {
        core.instantiate(0, none());
    }
    core.instantiate(1, none());
    let mut alias = ComponentAliasSection::new();
    alias.alias(Alias::CoreInstanceExport {
        instance: instances,
        kind: ExportKind::Func,
        name: "run",
    });
    // Type 0: `result`; type 1: `func() -> result`.
    let mut ty = ComponentTypeSection::new();
    ty.defined_type().result(None, None);
    ty.function()
        .params(std::iter::empty::<(&str, ComponentValType)>())
        .result(Some(ComponentValType::Type(0)));
    let mut lift = CanonicalFunctionSection::new();
    lift.lift(0, 1, []);
    let mut instance = ComponentInstanceSection::new();
    instance.export_items([("run", ComponentExportKind::Func, 0)]);
    let mut export = ComponentExportSection::new();
    export.export("wasi:cli/run@0.2.0", ComponentExportKind::Instance, 0, None);
    c.section(&core)
        .section(&alias)
        .section(&ty)
        .section(&lift)
        .section(&instance)
        .section(&export);
    c.finish()
}

/// RUSTSEC-2026-0570's trigger: a core module whose `run` (also exported as `_start`)
/// makes an indirect call through a table to a function of type `$b`, declared a subtype
/// of the non-final `$a` the call expects (`callee` 0), or to one of a type unrelated to
/// `$a` (`callee` 1). Either makes compiled code ask the runtime whether one type is a
/// subtype of the other, which wasmtime 47.0.0 to 48.0.8 built without its `gc` feature
/// (as zot is) answered with `unreachable!()` in an `extern "C"` function: an abort of
/// the whole process.
fn subtype_call(callee: i32) -> wasm_encoder::Module {
    use wasm_encoder::*;
    let func = |is_final: bool, supertype_idx: Option<u32>| SubType {
        is_final,
        supertype_idx,
        composite_type: CompositeType {
            inner: CompositeInnerType::Func(FuncType::new([], [ValType::I32])),
            shared: false,
            descriptor: None,
            describes: None,
        },
    };
    // Type 0: `$a`, open to subtypes; 1: `$b <: $a`; 2: a final type of its own.
    let mut types = TypeSection::new();
    types.ty().subtype(&func(false, None));
    types.ty().subtype(&func(true, Some(0)));
    types.ty().function([], [ValType::I32]);
    let mut funcs = FunctionSection::new();
    funcs.function(1).function(2).function(2);
    let mut tables = TableSection::new();
    tables.table(TableType {
        element_type: RefType::FUNCREF,
        table64: false,
        minimum: 2,
        maximum: Some(2),
        shared: false,
    });
    let mut exports = ExportSection::new();
    exports.export("run", ExportKind::Func, 2);
    exports.export("_start", ExportKind::Func, 2);
    let mut elements = ElementSection::new();
    elements.active(
        Some(0),
        &ConstExpr::i32_const(0),
        Elements::Functions([0, 1][..].into()),
    );
    let mut code = CodeSection::new();
    for value in [7, 8] {
        let mut f = Function::new([]);
        f.instructions().i32_const(value).end();
        code.function(&f);
    }
    let mut run = Function::new([]);
    run.instructions()
        .i32_const(callee)
        .call_indirect(0, 0)
        .drop()
        .i32_const(0)
        .end();
    code.function(&run);
    let mut module = Module::new();
    module
        .section(&types)
        .section(&funcs)
        .section(&tables)
        .section(&exports)
        .section(&elements)
        .section(&code);
    module
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

/// A compile of a large generated component (seconds in a debug build) shows its
/// progress on a terminal, for `check` and `install`: the step named, with its elapsed
/// time as it goes, then how long it took. Off a terminal (a pipe, a log) a step over a
/// second is named in a line of its own, then its time.
#[test]
fn a_long_compile_shows_its_progress_on_a_terminal_and_in_a_log() {
    use expectrl::{Eof, Expect, Regex};
    let scratch = TempDir::new("progress");
    let home = scratch.path().join("home");
    let ext = lay_out(scratch.path(), "big", &cost_bomb(12_000, 1_500));
    for args in [&["check"][..], &["install", "--yes"]] {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_zot"));
        cmd.arg("ext").args(&args[..1]).arg(&ext).args(&args[1..]);
        cmd.env("ZOT_HOME", &home)
            .env("ZOT_COMPILE_CPU_SECS", "600");
        // Each run compiles: the cache of the one before is gone.
        let _ = std::fs::remove_dir_all(home.join("cache"));
        let mut p = Pty::spawn(cmd, home.clone());
        p.set_expect_timeout(Some(Duration::from_secs(300)));
        p.expect(Regex(r"compiling \S*big\.wasm \d+\.\ds")).unwrap();
        let done = p
            .expect(Regex(r"compiling \S*big\.wasm: (\d+\.\d)s"))
            .unwrap();
        let took = String::from_utf8_lossy(done.get(1).unwrap()).to_string();
        println!(
            "{}: compiled in {took} s, the progress shown meanwhile",
            args[0]
        );
        p.expect(Eof).unwrap();
    }
    let _ = std::fs::remove_dir_all(home.join("cache"));
    let out = zot(
        &home,
        &[("ZOT_COMPILE_CPU_SECS", "600")],
        &["check", ext.to_str().unwrap()],
    );
    let said = String::from_utf8_lossy(&out.stderr).to_string();
    let lines: Vec<&str> = said.lines().collect();
    let begun = lines
        .iter()
        .position(|l| l.starts_with("compiling ") && l.ends_with("big.wasm…"));
    let ended = lines.iter().position(|l| {
        l.strip_prefix("compiling ")
            .and_then(|l| l.split_once("big.wasm: "))
            .is_some_and(|(_, took)| took.ends_with('s'))
    });
    assert!(
        matches!((begun, ended), (Some(b), Some(e)) if b < e),
        "{said}"
    );
    assert!(!said.contains('\r'), "no spinner off a terminal: {said:?}");
}

/// The same bomb under a lowered memory limit, then a lowered wall limit (its CPU limit
/// far above): the compile child is stopped at each, naming it. (Its compile needs more
/// than 128 MiB of address space, and more than a second.)
#[test]
fn a_compile_bomb_is_stopped_at_its_memory_and_wall_limits() {
    let scratch = TempDir::new("bomb-limits");
    let home = scratch.path().join("home");
    let ext = lay_out(scratch.path(), "bomb", &cost_bomb(40_000, 4_000));
    for (limit, said) in [
        (
            ("ZOT_COMPILE_MEMORY_MB", "128"),
            "needed more than 128 MiB of memory",
        ),
        (("ZOT_COMPILE_WALL_SECS", "1"), "took longer than 1 s"),
    ] {
        let out = zot(&home, &[limit], &["check", ext.to_str().unwrap(), "--json"]);
        assert_eq!(out.status.code(), Some(1));
        let report = check_report(&out);
        let reason = report["violations"][0].as_str().unwrap_or_default();
        assert!(reason.contains(said), "{limit:?}: {report}");
    }
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
    // The compile is still running. (The stdio extension may take longer than the 500 ms
    // wait to start on a loaded machine: it is waited for by its announcement.)
    let starting = str_list(&ready["starting"]);
    assert!(starting.contains(&"slow".to_string()), "{ready}");
    assert_eq!(host.entry("slow")["state"], "starting");
    host.wait_event("steady's registrations", READY_TIMEOUT, |v| {
        v["type"] == "registry_changed" && v["extension"] == "steady"
    });
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

// ---------------------------------------------------------------------------------------
// 2. Host-side caps (docs/sandbox.md, "Limits"): each attack runs beside a healthy stdio
// extension, with no permission beyond the defaults unless said.

const KINDS: [(&str, &str); 2] = [("reactor", REACTOR), ("command", COMMAND)];
/// The kinds whose files and descriptors are capped: the components, and the command
/// guest as a preview-1 module (which has no `wasi:http`).
const FILE_KINDS: [(&str, &str); 3] = [
    ("reactor", REACTOR),
    ("command", COMMAND),
    ("preview1", COMMAND_P1),
];

fn guest(name: &str, wasm: &str, permissions: Value, limits: Value) -> Value {
    json!({"name": name, "version": "0.1.0", "wasm": wasm,
           "permissions": permissions, "limits": limits})
}

/// A host with the guest `name` (a global extension) and the stdio extension `steady`.
fn host_with(name: &str, manifest: &Value, grant: Option<Value>) -> Host {
    let mut b = HostBuilder::new();
    b.global(name, manifest);
    if let Some(mut g) = grant {
        g["sha256"] = json!(sha256_of(manifest["wasm"].as_str().unwrap()));
        let dir = b.home().join("grants");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(format!("{name}.json")), g.to_string()).unwrap();
    }
    start_beside_steady(b)
}

fn sha256_of(path: &str) -> String {
    let out = Command::new("sha256sum").arg(path).output().unwrap();
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .next()
        .unwrap()
        .to_string()
}

/// Calls a guest tool: `Ok(text)` for a result, `Err(text)` for an error result or a
/// failed call (the extension stopped mid-call).
fn guest_tool(host: &Host, tool: &str, args: Value) -> Result<String, String> {
    let r = host.request_within(
        "call_tool",
        json!({"name": tool, "args": args}),
        Duration::from_secs(120),
    );
    if r["success"] != true {
        return Err(r["error"].as_str().unwrap_or_default().to_string());
    }
    match r["data"]["is_error"] == true {
        true => Err(first_text(&r["data"])),
        false => Ok(first_text(&r["data"])),
    }
}

fn exit_reason(host: &Host, name: &str) -> String {
    let ev = host.wait_event(&format!("{name} exits"), Duration::from_secs(30), |v| {
        v["type"] == "extension_exited" && v["extension"] == name
    });
    ev["reason"].as_str().unwrap_or_default().to_string()
}

/// The bytes of the files under `dir`.
fn tree_bytes(dir: &Path) -> u64 {
    let mut total = 0;
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let meta = entry.metadata().unwrap();
        total += match meta.is_dir() {
            true => tree_bytes(&entry.path()),
            false => meta.len(),
        };
    }
    total
}

/// A component holding 65 core instances, one with 65 tables, one with 65 memories: each
/// stopped at its instantiation, naming the count; the same at 64 starts, and its `run`
/// returns.
#[test]
fn instances_tables_and_memories_past_64_are_refused_at_instantiation() {
    let scratch = TempDir::new("counts");
    let home = scratch.path().join("home");
    let exit = |name: &str, bytes: Vec<u8>| -> String {
        let ext = lay_out(scratch.path(), name, &bytes);
        let out = zot(&home, &[], &["check", ext.to_str().unwrap(), "--json"]);
        let report = check_report(&out);
        println!("{name}: {}", report["exit"]);
        report["exit"].as_str().unwrap_or_default().to_string()
    };
    for (what, at_cap, over) in [
        ("instance", counted(63, 0, 0), counted(64, 0, 0)),
        ("table", counted(1, 64, 0), counted(1, 65, 0)),
        ("memory", counted(1, 0, 64), counted(1, 0, 65)),
    ] {
        assert_eq!(
            exit(&format!("{what}-over"), over),
            format!("trap: resource limit exceeded: {what} count too high at 65")
        );
        assert_eq!(
            exit(&format!("{what}-at-cap"), at_cap),
            "exited with status 0"
        );
    }
}

/// RUSTSEC-2026-0570 (an abort in wasmtime builds without `gc`): a command component
/// and a preview-1 module whose indirect calls are checked against a type open to
/// subtypes are refused before compiling, by `check` and by a host, whose other
/// extension answers. (On wasmtime 48.0.8 with the GC proposal on, as it was, running
/// either aborted the `zot` process.)
#[test]
fn an_indirect_call_checked_against_a_subtype_is_refused_before_compiling() {
    let scratch = TempDir::new("subtype");
    let home = scratch.path().join("home");
    let refused = "refused before compiling: it declares a function type open to subtypes \
                   (the WebAssembly GC proposal), which this host does not run";
    for (name, bytes) in [
        ("subtype-ok", command_of(None, &subtype_call(0))),
        ("subtype-bad", command_of(None, &subtype_call(1))),
        ("subtype-p1", subtype_call(1).finish()),
    ] {
        let ext = lay_out(scratch.path(), name, &bytes);
        let out = zot(&home, &[], &["check", ext.to_str().unwrap(), "--json"]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        let tail = &stderr[stderr.len().saturating_sub(300)..];
        assert!(out.status.code().is_some(), "zot was killed: {tail}");
        let report = check_report(&out);
        assert!(
            report["violations"][0].as_str().unwrap().contains(refused),
            "{report}"
        );

        let wasm = ext.join(format!("{name}.wasm"));
        let manifest = guest(name, wasm.to_str().unwrap(), json!({}), json!({}));
        let mut b = HostBuilder::new();
        b.global(name, &manifest);
        b.explicit("steady", &py_manifest("steady", &["--tools", "echo_py"]));
        let host = b.start();
        let ready = host.ready_event();
        assert_eq!(ready["errors"][0]["extension"], name, "{ready}");
        let error = ready["errors"][0]["error"].as_str().unwrap();
        assert!(error.contains(refused), "{ready}");
        assert_steady(&host);
        host.shutdown();
    }
}

/// 16,000 `wasi:http` fields of 120 KB (what took the host to 1.9 GB): the first value is
/// over the field size limit and stops the guest; 16,000 fields of 16 KB (within it)
/// reach the resource limit. The host's peak RSS stays small.
#[test]
fn a_fields_flood_is_stopped_at_the_field_size_and_resource_limits() {
    let _serial = serial();
    for (kind, wasm) in KINDS {
        for (bytes, cap) in [
            (120_000, "HTTP field size limit (32 KiB) exceeded"),
            (16_000, "resource limit (1000 entries) exceeded"),
        ] {
            let name = format!("fields-{kind}");
            let host = host_with(&name, &guest(&name, wasm, json!({}), json!({})), None);
            assert_steady(&host);
            let t = Instant::now();
            let said = guest_tool(
                &host,
                "fields_flood",
                json!({"count": 16_000, "bytes": bytes}),
            );
            let reason = exit_reason(&host, &name);
            let peak = host.vm_hwm_kib();
            println!(
                "{name}: 16,000 x {bytes} B: {said:?} after {:?}; exited: {reason}; \
                 host peak RSS {} MiB",
                t.elapsed(),
                peak / 1024
            );
            // Looked at before it is started again (at least 500 ms after its exit).
            assert_eq!(host.entry(&name)["state"], "exited");
            assert!(said.is_err(), "{said:?}");
            assert_eq!(reason, cap);
            assert!(peak < 300 * 1024, "the host grew to {peak} KiB");
            assert_steady(&host);
            host.shutdown();
        }
    }
}

/// Opening one `/data` file 25,000 times stops the guest at the resource limit, long
/// before the process's descriptors run out: the host's open descriptors stay few, and
/// another component's file I/O works afterwards.
#[test]
fn opening_files_without_end_is_stopped_at_the_resource_limit() {
    let _serial = serial();
    for (kind, wasm) in FILE_KINDS {
        let mut b = HostBuilder::new();
        let name = format!("open-{kind}");
        b.global(&name, &guest(&name, wasm, json!({}), json!({})));
        // The bystander: another component, the other kind (its tools are shadowed by the
        // attacker's until it exits).
        let other = if wasm == REACTOR { COMMAND } else { REACTOR };
        b.global(
            "bystander",
            &guest("bystander", other, json!({}), json!({})),
        );
        b.explicit("steady", &py_manifest("steady", &["--tools", "echo_py"]));
        let host = b.start();
        assert_eq!(
            host.ready_event()["extensions"].as_array().unwrap().len(),
            3
        );
        let owner = host.call_tool("echo", json!({}))["extension"]
            .as_str()
            .unwrap()
            .to_string();
        let t = Instant::now();
        let said = guest_tool(&host, "open_many", json!({"count": 25_000}));
        let reason = exit_reason(&host, &owner);
        let fds = std::fs::read_dir(format!("/proc/{}/fd", host.pid()))
            .unwrap()
            .count();
        println!(
            "{owner} ({kind} attack): open_many 25,000: {said:?} after {:?}; exited: \
             {reason}; the host holds {fds} descriptors",
            t.elapsed()
        );
        assert!(said.is_err(), "{said:?}");
        assert_eq!(reason, "resource limit (1000 entries) exceeded");
        assert!(fds < 500, "{fds} descriptors left open");
        assert_steady(&host);
        let left = host.call_tool(
            "fs_write",
            json!({"path": "/data/after.txt", "text": "still works"}),
        );
        assert_ne!(left["extension"], json!(owner), "{left}");
        assert_eq!(left["is_error"], false, "{left}");
        let read = host.call_tool("fs_read", json!({"path": "/data/after.txt"}));
        assert_eq!(first_text(&read), "still works");
        host.shutdown();
    }
}

/// 3,000 requests at once to a server that accepts and never answers: at most
/// `limits.http_requests` (16) connections are made; the rest fail at once with
/// `ConnectionLimitReached`, logged naming the limit.
#[test]
fn outgoing_requests_in_flight_are_capped() {
    let _serial = serial();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    // The peers of the connections accepted, in order.
    let accepted = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let peers = accepted.clone();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in listener.incoming().flatten() {
            peers.lock().unwrap().push(stream.peer_addr().ok());
            held.push(stream);
        }
    });
    let url = format!("http://127.0.0.1:{port}");
    let mut total = 0;
    for (kind, wasm) in KINDS {
        let name = format!("pending-{kind}");
        let manifest = guest(&name, wasm, json!({"http": [url]}), json!({}));
        let grant = json!({"permissions": {"data_dir": true, "http": [url]}});
        let host = host_with(&name, &manifest, Some(grant));
        assert_steady(&host);
        let said = guest_tool(
            &host,
            "http_pending",
            json!({"url": format!("{url}/slow"), "count": 300}),
        )
        .unwrap();
        let report: Value = serde_json::from_str(&said).unwrap();
        // The marker: a connection of the test's own, accepted after every connection the
        // host had made when it was opened.
        let marker = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
        let marker = Some(marker.local_addr().unwrap());
        let deadline = Instant::now() + EVENT_TIMEOUT;
        let now = loop {
            if let Some(at) = accepted.lock().unwrap().iter().position(|p| *p == marker) {
                break at;
            }
            assert!(Instant::now() < deadline, "the marker was not accepted");
            std::thread::sleep(Duration::from_millis(10));
        };
        println!(
            "{name}: 300 requests: {report}; the server accepted {} connections",
            now - total
        );
        assert!(now - total <= 16, "{} connections", now - total);
        assert_eq!(report["started"], 300, "{report}");
        assert_eq!(report["failed"], 300 - 16, "{report}");
        assert_eq!(
            report["first_error"], "ErrorCode::ConnectionLimitReached",
            "{report}"
        );
        assert!(host
            .log(&name)
            .contains("concurrent HTTP request limit (16 requests) reached"));
        assert_steady(&host);
        // 3,000 at once: each kept response is a resource; the resource limit stops it.
        let said = guest_tool(
            &host,
            "http_pending",
            json!({"url": format!("{url}/slow"), "count": 3000}),
        );
        let reason = exit_reason(&host, &name);
        println!("{name}: 3,000 requests: {said:?}; exited: {reason}");
        assert_eq!(reason, "resource limit (1000 entries) exceeded");
        assert_steady(&host);
        total = accepted.lock().unwrap().len();
        host.shutdown();
    }
}

/// Writing past the `/data` quota is refused (the write fails, the guest goes on, the log
/// says so); the data dir ends at most [`DISK_OVERSHOOT`] over it. The manifest asks for a
/// quota below the default (which needs no grant) to keep the test cheap. Every other way
/// past the quota: the `quota` module.
#[test]
fn writing_past_the_disk_quota_is_refused() {
    const QUOTA_MB: u64 = 16;
    let _serial = serial();
    for (kind, wasm) in FILE_KINDS {
        let name = format!("fill-{kind}");
        let manifest = guest(&name, wasm, json!({}), json!({"disk_mb": QUOTA_MB}));
        let host = host_with(&name, &manifest, None);
        assert_eq!(host.entry(&name)["sandbox"]["caps"]["disk_mb"], QUOTA_MB);
        // Within the quota: written.
        let said = guest_tool(&host, "fill_data", json!({"mb": 8})).unwrap();
        let said: Value = serde_json::from_str(&said).unwrap();
        assert_eq!(said, json!({"error": null, "written_mb": 8}));
        let t = Instant::now();
        let said = guest_tool(&host, "fill_data", json!({"mb": 2000})).unwrap();
        let said: Value = serde_json::from_str(&said).unwrap();
        let data = host.home.join("data").join(&name);
        let used = tree_bytes(&data);
        println!(
            "{name}: fill_data 2000 MiB: {said} after {:?}; /data holds {:.1} MiB (quota \
             {QUOTA_MB} MiB)",
            t.elapsed(),
            used as f64 / (1 << 20) as f64
        );
        assert!(said["error"].is_string(), "{said}");
        assert!(
            used <= (QUOTA_MB << 20) + DISK_OVERSHOOT,
            "{used} bytes in /data"
        );
        assert!(host
            .log(&name)
            .contains(&format!("disk quota ({QUOTA_MB} MiB) reached")));
        assert_eq!(host.entry(&name)["state"], "ready");
        assert_steady(&host);
        host.shutdown();
    }
}

/// The overshoot docs/sandbox.md states for the `/data` quota.
const DISK_OVERSHOOT: u64 = 1 << 20;
