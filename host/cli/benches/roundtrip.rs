//! Tool-call round trips and component start-up, measured in one run:
//!
//! * over stdio: the raw pipe (baseline, no host), the `zot-host` library, and the
//!   `zot host` sidecar, against the Rust test extension;
//! * stdio vs wasm: the same guest source (tests/guests) as a native stdio extension,
//!   a wasm command component and a wasm reactor component, through the library;
//! * an SDK example (`examples/todo`, the `zot-ext` SDK) built natively and as a
//!   component, through the library: its `todo` tool listing a three-item list, read from
//!   its data dir on every call;
//! * a component's cold start (compile) and warm starts (disk cache in a new process;
//!   already loaded in this process), and the memory an idle component adds to the host.
//!
//! Prints p50/p99 and ratios against the first row of each group.
//! `cargo bench -p zot-cli --bench roundtrip [-- N]` (N calls each, default 2000).

use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};
use zot_host::{Host, HostConfig, ZotHome};

const EXT: &str = zot_test_guests::TEST_EXT;
const ZOT: &str = env!("CARGO_BIN_EXE_zot");

fn main() -> ExitCode {
    // An embedder of the library: components compile in a child of this program.
    if let Some(code) = zot_host::compile::child_if_asked() {
        return code;
    }
    let n: usize = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(2000);
    let dir = std::env::temp_dir().join(format!("zot-bench-{}", std::process::id()));
    let guest = |name: &str, manifest: Value| {
        let d = dir.join(name);
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join("extension.json"), manifest.to_string()).unwrap();
        d
    };

    let ext_dir = guest(
        "bench",
        json!({"name": "bench", "exec": EXT, "args": ["--name", "bench"]}),
    );
    let raw = stats(raw_pipe(n));
    let lib = stats(library(n, &dir, &ext_dir));
    let sidecar = stats(sidecar(n, &dir, &ext_dir));
    table(
        &format!("tool-call round trip over stdio, {n} sequential calls each"),
        &[
            ("raw pipe (baseline)", raw),
            ("zot-host library", lib),
            ("zot host sidecar", sidecar),
        ],
    );

    let native = guest(
        "native",
        json!({"name": "native", "exec": zot_test_guests::COMMAND_NATIVE}),
    );
    let command = guest(
        "command",
        json!({"name": "command", "wasm": zot_test_guests::COMMAND}),
    );
    let reactor = guest(
        "reactor",
        json!({"name": "reactor", "wasm": zot_test_guests::REACTOR}),
    );
    let native_rt = stats(library(n, &dir, &native));
    table(
        &format!("the same guest source, stdio vs wasm, {n} sequential calls each"),
        &[
            ("native stdio (baseline)", native_rt),
            ("wasm command component", stats(library(n, &dir, &command))),
            ("wasm reactor component", stats(library(n, &dir, &reactor))),
        ],
    );

    let todo = zot_test_guests::example("todo");
    let todo_native = guest("todo-native", json!({"name": "todo", "exec": todo.native}));
    let todo_wasm = guest("todo-wasm", json!({"name": "todo", "wasm": todo.wasm}));
    let data = dir.join("home/data/todo");
    std::fs::create_dir_all(&data).unwrap();
    let items = json!([{"text": "one", "done": false}, {"text": "two", "done": true},
                       {"text": "three", "done": false}]);
    std::fs::write(data.join("todos.json"), items.to_string()).unwrap();
    let list = |_| json!({"action": "list"});
    table(
        &format!("examples/todo (zot-ext SDK), its `list` tool, {n} sequential calls each"),
        &[
            (
                "native stdio (baseline)",
                stats(library_calls(n, &dir, &todo_native, "todo", list)),
            ),
            (
                "wasm command component",
                stats(library_calls(n, &dir, &todo_wasm, "todo", list)),
            ),
        ],
    );

    let cold = stats(
        (0..5)
            .map(|i| start(&dir.join(format!("cold-{i}")), &reactor))
            .collect(),
    );
    // A new process has nothing in memory: it loads the disk cache. Its start-up is
    // measured against a sidecar with no extension.
    let warm_home = dir.join("warm");
    start(&warm_home, &reactor);
    let empty: Vec<Duration> = (0..10).map(|_| sidecar_ready(&warm_home, &[]).0).collect();
    let cached: Vec<Duration> = (0..10)
        .map(|_| sidecar_ready(&warm_home, std::slice::from_ref(&reactor)).0)
        .collect();
    let (empty, cached) = (stats(empty), stats(cached));
    let shared = stats((0..20).map(|_| start(&warm_home, &reactor)).collect());
    table(
        "reactor component start to ready",
        &[
            ("cold: compile (baseline)", cold),
            (
                "warm: disk cache, new process",
                (cached.0 - empty.0, cached.1 - empty.1),
            ),
            ("warm: loaded in this process", shared),
        ],
    );

    let idle = 20;
    let (_, base) = sidecar_ready(&dir.join("rss"), &[]);
    let many: Vec<_> = (0..idle)
        .map(|i| {
            guest(
                &format!("idle-{i}"),
                json!({"name": format!("idle-{i}"), "wasm": zot_test_guests::REACTOR}),
            )
        })
        .collect();
    start(&dir.join("rss"), &many[0]); // compiled once, then loaded from the cache
    let (_, loaded) = sidecar_ready(&dir.join("rss"), &many);
    println!(
        "\nresident memory of `zot host`: {base} KiB with no extension, {loaded} KiB with {idle} \
         idle reactor components: {:.0} KiB per idle component",
        (loaded.saturating_sub(base)) as f64 / idle as f64
    );
    let _ = std::fs::remove_dir_all(&dir);
    ExitCode::SUCCESS
}

fn table(title: &str, rows: &[(&str, (f64, f64))]) {
    println!("\n{title}");
    println!(
        "{:<32} {:>10} {:>10} {:>10}",
        "", "p50 µs", "p99 µs", "p50 ratio"
    );
    let base = rows[0].1 .0;
    for (label, (p50, p99)) in rows {
        println!("{label:<32} {p50:>10.1} {p99:>10.1} {:>9.2}x", p50 / base);
    }
}

/// Time from `load` to ready for one extension, with `home` as ZOT_HOME.
fn start(home: &Path, ext_dir: &Path) -> Duration {
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let mut config = HostConfig::new(ZotHome::new(home), home.to_path_buf());
        config.explicit = vec![ext_dir.to_path_buf()];
        config.installed = false;
        let (host, _notes) = Host::new(config);
        let t = Instant::now();
        let report = host.load().await;
        let took = t.elapsed();
        assert_eq!(report.ready.len(), 1, "{report:?}");
        host.shutdown().await;
        took
    })
}

/// Time from spawning a `zot host` sidecar with `exts` to its `host_ready`, and its VmRSS
/// (KiB) once ready.
fn sidecar_ready(home: &Path, exts: &[std::path::PathBuf]) -> (Duration, u64) {
    let mut cmd = Command::new(ZOT);
    cmd.arg("host").arg("--zot-home").arg(home);
    for e in exts {
        cmd.arg("--ext").arg(e);
    }
    let t = Instant::now();
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    read_until(&mut out, |v| v["type"] == "host_ready");
    let ready = t.elapsed();
    std::thread::sleep(Duration::from_millis(300));
    let status = std::fs::read_to_string(format!("/proc/{}/status", child.id())).unwrap();
    let rss = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap();
    drop(child.stdin.take());
    let _ = child.wait();
    (ready, rss)
}

/// p50 and p99 in microseconds.
fn stats(mut samples: Vec<Duration>) -> (f64, f64) {
    samples.sort();
    let at = |q: f64| samples[((samples.len() - 1) as f64 * q) as usize].as_secs_f64() * 1e6;
    (at(0.50), at(0.99))
}

/// Reads lines until one satisfies `done`.
fn read_until(out: &mut impl BufRead, done: impl Fn(&Value) -> bool) -> Value {
    let mut line = String::new();
    loop {
        line.clear();
        assert!(
            out.read_line(&mut line).unwrap() > 0,
            "unexpected end of output"
        );
        let v: Value = serde_json::from_str(&line).unwrap();
        if done(&v) {
            return v;
        }
    }
}

/// Round trips over a child's stdin/stdout: waits for a line of type `ready`, then
/// sends `request(i, id)` and waits for the line `is_answer(line, id)`, `n` times.
fn over_pipe(
    command: &mut Command,
    n: usize,
    ready: &str,
    request: impl Fn(usize, &str) -> Value,
    is_answer: impl Fn(&Value, &str) -> bool,
) -> Vec<Duration> {
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    read_until(&mut out, |v| v["type"] == ready);
    let mut samples = Vec::with_capacity(n);
    for i in 0..n {
        let id = i.to_string();
        let t = Instant::now();
        writeln!(stdin, "{}", request(i, &id)).unwrap();
        let answer = read_until(&mut out, |v| is_answer(v, &id));
        samples.push(t.elapsed());
        assert!(
            answer.get("success") != Some(&Value::Bool(false)),
            "{answer}"
        );
    }
    drop(stdin);
    let _ = child.kill();
    let _ = child.wait();
    samples
}

/// The baseline: frames written straight to the extension's stdin, no host.
fn raw_pipe(n: usize) -> Vec<Duration> {
    over_pipe(
        Command::new(EXT).args(["--name", "bench"]),
        n,
        "ready",
        |i, id| json!({"type": "tool_call", "id": id, "name": "echo", "args": {"i": i}}),
        |v, id| v["type"] == "tool_result" && v["id"] == id,
    )
}

/// `n` sequential calls of the test guests' `echo` tool through the library.
fn library(n: usize, home: &Path, ext_dir: &Path) -> Vec<Duration> {
    library_calls(n, home, ext_dir, "echo", |i| json!({"i": i}))
}

/// `n` sequential calls of `tool` (with `args(i)`) through the library.
fn library_calls(
    n: usize,
    home: &Path,
    ext_dir: &Path,
    tool: &str,
    args: impl Fn(usize) -> Value,
) -> Vec<Duration> {
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let mut config = HostConfig::new(ZotHome::new(home.join("home")), home.to_path_buf());
        config.explicit = vec![ext_dir.to_path_buf()];
        config.installed = false;
        let (host, mut notes) = Host::new(config);
        tokio::spawn(async move { while notes.recv().await.is_some() {} });
        host.load().await;
        let mut samples = Vec::with_capacity(n);
        for i in 0..n {
            let t = Instant::now();
            let (_, result) = host.call_tool(tool, args(i), None).await.unwrap();
            samples.push(t.elapsed());
            assert!(!result.is_error);
        }
        host.shutdown().await;
        samples
    })
}

fn sidecar(n: usize, home: &Path, ext_dir: &Path) -> Vec<Duration> {
    over_pipe(
        Command::new(ZOT)
            .arg("host")
            .arg("--zot-home")
            .arg(home.join("home"))
            .arg("--ext")
            .arg(ext_dir),
        n,
        "host_ready",
        |i, id| json!({"id": id, "type": "call_tool", "name": "echo", "args": {"i": i}}),
        |v, id| v["type"] == "response" && v["id"] == id,
    )
}
