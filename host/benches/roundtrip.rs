//! Tool-call round trip over stdio: the raw pipe (baseline, no host), the `zot-host`
//! library, and the `zot host` sidecar, measured in the same run against the same Rust
//! test extension. Prints p50/p99 and each one's ratio to the baseline.
//!
//! `cargo bench -p zot-host --bench roundtrip [-- N]` (N calls each, default 2000).

use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use zot_host::paths::ZotHome;
use zot_host::{Host, HostConfig};

const EXT: &str = env!("CARGO_BIN_EXE_zot-test-ext");
const ZOT: &str = env!("CARGO_BIN_EXE_zot");

fn main() {
    let n: usize = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(2000);
    let dir = std::env::temp_dir().join(format!("zot-bench-{}", std::process::id()));
    let ext_dir = dir.join("bench");
    std::fs::create_dir_all(&ext_dir).unwrap();
    std::fs::write(
        ext_dir.join("extension.json"),
        json!({"name": "bench", "exec": EXT, "args": ["--name", "bench"]}).to_string(),
    )
    .unwrap();

    let raw = stats(raw_pipe(n));
    let lib = stats(library(n, &dir, &ext_dir));
    let sidecar = stats(sidecar(n, &dir, &ext_dir));
    println!("tool-call round trip over stdio, {n} sequential calls each");
    println!(
        "{:<28} {:>10} {:>10} {:>12}",
        "", "p50 µs", "p99 µs", "p50 ratio"
    );
    for (label, s) in [
        ("raw pipe (baseline)", &raw),
        ("zot-host library", &lib),
        ("zot host sidecar", &sidecar),
    ] {
        println!(
            "{label:<28} {:>10.1} {:>10.1} {:>11.2}x",
            s.0,
            s.1,
            s.0 / raw.0
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
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

fn library(n: usize, home: &Path, ext_dir: &Path) -> Vec<Duration> {
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
            let (_, result) = host.call_tool("echo", json!({"i": i}), None).await.unwrap();
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
