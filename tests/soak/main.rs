//! The soak: `cargo test -p zot-cli --test soak --release -- --minutes 10` (default 10;
//! not part of `cargo test --workspace`). docs/benchmarks.md#soak says what it runs and
//! checks, and one run's figures.
//!
//! Three hosts load the same 20 extensions over every transport (`fleet.rs`), each with a
//! ZOT_HOME of its own: the library in this process (`library.rs`), `zot host`
//! (`sidecar.rs`) and `zot mcp` (`mcp.rs`), each driven by [`WORKERS`] concurrent
//! workers doing the steady load of `ops.rs`: tool calls, events, interception, commands,
//! panels. Every minute the sidecar's `crasher` exits mid-call, its `deadline` component
//! runs past its deadline and then the sidecar reloads (after one manifest changed),
//! which starts them again; the library's `quota` component writes past its `/data`
//! quota. Each minute it prints the figures (`report.rs`); at the end it checks them and
//! exits 1 naming every check that failed.

mod fleet;
mod jsonl;
mod library;
mod mcp;
mod ops;
#[path = "../shared/procfs.rs"]
mod procfs;
mod report;
mod sidecar;
mod tally;
mod watch;

use fleet::Fleet;
use library::Library;
use mcp::Mcp;
use report::Fault;
use sidecar::Sidecar;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tally::{Outcome, Tally};
use tokio::time::sleep_until;
use watch::Watched;

/// Concurrent workers per client.
const WORKERS: u64 = 3;
/// Each worker's pause between two ops: a steady load that leaves the machine (2 shared
/// cores) some room.
const PAUSE: Duration = Duration::from_millis(5);

/// When in each minute each fault happens.
const CRASH_AT: Duration = Duration::from_secs(10);
const DEADLINE_AT: Duration = Duration::from_secs(15);
const QUOTA_AT: Duration = Duration::from_secs(20);
const RELOAD_AT: Duration = Duration::from_secs(40);
const MINUTE: Duration = Duration::from_secs(60);

fn main() -> ExitCode {
    // An embedder of the library: components compile in a child of this program.
    if let Some(code) = zot_host::compile::child_if_asked() {
        return code;
    }
    let mut minutes = 10;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--minutes" => {
                minutes = args
                    .next()
                    .and_then(|m| m.parse().ok())
                    .filter(|&m| m > 0)
                    .expect("--minutes N (N ≥ 1)")
            }
            other => panic!("unknown argument {other:?}: --minutes N"),
        }
    }
    let scratch = std::env::temp_dir().join(format!("zot-soak-{}", std::process::id()));
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let failed = runtime.block_on(soak(&scratch, minutes));
    if failed.is_empty() {
        let _ = std::fs::remove_dir_all(&scratch);
        return ExitCode::SUCCESS;
    }
    eprintln!(
        "soak FAILED: {} (its files: {})",
        failed.join("; "),
        scratch.display()
    );
    ExitCode::FAILURE
}

/// One of the three clients.
#[derive(Clone)]
enum Client {
    Library(Arc<Library>),
    Sidecar(Arc<Sidecar>),
    Mcp(Arc<Mcp>),
}

impl Client {
    fn name(&self) -> &'static str {
        match self {
            Client::Library(_) => library::CLIENT,
            Client::Sidecar(_) => sidecar::CLIENT,
            Client::Mcp(_) => mcp::CLIENT,
        }
    }

    /// The `i`th op of a worker; `marker` is unique to it.
    async fn step(&self, i: u64, marker: &str) -> Outcome {
        match self {
            Client::Library(l) => l.op(ops::steady(i, marker)).await,
            Client::Sidecar(s) => s.op(ops::steady(i, marker)).await,
            Client::Mcp(m) => m.op(i, marker).await,
        }
    }
}

/// A worker: ops one after the other until `running` turns false.
async fn worker(client: Client, w: u64, running: Arc<AtomicBool>, tally: Arc<Tally>) {
    // Each worker starts at another place in the mix.
    let mut i = w * 11;
    while running.load(Ordering::Relaxed) {
        let marker = format!("{}-{w}-{i}", client.name());
        tally.track(client.name(), client.step(i, &marker)).await;
        i += 1;
        tokio::time::sleep(PAUSE).await;
    }
}

/// A log file for a child's stderr.
fn stderr_file(scratch: &Path, name: &str) -> std::fs::File {
    std::fs::File::create(scratch.join(format!("{name}.stderr"))).unwrap()
}

/// The whole soak; the names of the checks that failed.
async fn soak(scratch: &Path, minutes: usize) -> Vec<String> {
    std::fs::create_dir_all(scratch).unwrap();
    let fleet = Fleet::lay_out(scratch);
    let homes: Vec<PathBuf> = ["library", "sidecar", "mcp"]
        .iter()
        .map(|h| scratch.join(format!("home-{h}")))
        .collect();
    for home in &homes {
        fleet.prepare(home);
    }
    let exts = fleet.dirs();
    let tally = Arc::new(Tally::default());
    let library = Arc::new(Library::start(&homes[0], &exts, tally.clone()).await);
    let sidecar = Arc::new(
        Sidecar::start(
            &homes[1],
            &exts,
            stderr_file(scratch, "zot-host"),
            tally.clone(),
        )
        .await,
    );
    let mcp = Arc::new(
        Mcp::start(
            &homes[2],
            &exts,
            &["r.echo", "c.echo", "p.echo", "mw.echo", "mpy.echo", "todo"],
            stderr_file(scratch, "zot-mcp"),
            tally.clone(),
        )
        .await,
    );
    let watched = [
        Watched {
            name: "soak (library)",
            pid: std::process::id(),
        },
        Watched {
            name: "zot host",
            pid: sidecar.pid(),
        },
        Watched {
            name: "zot mcp",
            pid: mcp.pid(),
        },
    ];
    report::start(minutes, &fleet, scratch, &watched);

    let running = Arc::new(AtomicBool::new(true));
    let clients = [
        Client::Library(library.clone()),
        Client::Sidecar(sidecar.clone()),
        Client::Mcp(mcp.clone()),
    ];
    let workers: Vec<_> = clients
        .iter()
        .flat_map(|c| (0..WORKERS).map(move |w| (c.clone(), w)))
        .map(|(c, w)| tokio::spawn(worker(c, w, running.clone(), tally.clone())))
        .collect();

    let start = tokio::time::Instant::now();
    let mut samples = Vec::new();
    let mut faults = Vec::new();
    for minute in 1..=minutes {
        let t0 = start + MINUTE * (minute as u32 - 1);
        sleep_until(t0 + CRASH_AT).await;
        faults.push(Fault::new(minute, "crash", sidecar.crash().await));
        sleep_until(t0 + DEADLINE_AT).await;
        faults.push(Fault::new(minute, "deadline", sidecar.deadline().await));
        sleep_until(t0 + QUOTA_AT).await;
        faults.push(Fault::new(minute, "disk quota", library.over_quota().await));
        sleep_until(t0 + RELOAD_AT).await;
        faults.push(Fault::new(
            minute,
            "reload",
            sidecar.reload(&fleet, minute).await,
        ));
        sleep_until(t0 + MINUTE).await;
        let sample = watch::sample(minute, &watched).await;
        report::minute(&sample, &tally.snapshot(), &faults, &watched);
        samples.push(sample);
    }

    running.store(false, Ordering::Relaxed);
    let t = Instant::now();
    for w in workers {
        w.await.unwrap();
    }
    let drained = t.elapsed();
    let zombies_at_end = watch::zombies().await;
    let below = watch::below();
    let (_, host_exit, mcp_exit) =
        tokio::join!(library.shutdown(), sidecar.shutdown(), mcp.close());
    let left = report::left_after(&below, Duration::from_secs(15)).await;
    report::summary(report::End {
        tally: tally.snapshot(),
        samples,
        faults,
        watched: &watched,
        drained,
        zombies_at_end,
        exits: [("zot host", host_exit), ("zot mcp", mcp_exit)],
        left,
        homes: &homes,
    })
}
