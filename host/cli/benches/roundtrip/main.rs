//! The host's figures, all measured in one run (docs/benchmarks.md says what each means):
//!
//! * tool-call latency (`latency.rs`): the `scenario` guest's `echo` tool through a bare
//!   pipe, the library (from a task and from `block_on`), a relay, the sidecar and `zot
//!   mcp`, as three kinds of component and through the published Go manager
//!   (`go_manager.rs`, with `--go-zot`), unpinned and pinned to one CPU (`affinity.rs`);
//!   the todo example native and as a component;
//! * the interception chain with 0, 1 and 3 interceptors (`intercept.rs`);
//! * an event flood to ten subscribers and one that never reads (`fanout.rs`);
//! * start-up (`startup.rs`): a reactor component cold, from the disk cache and already
//!   loaded; 1 to 100 extensions; the memory of idle components;
//! * a big component's first compile and cached load against wasmtime's own
//!   (`big_module.rs`).
//!
//! Latency rows run interleaved (`interleave.rs`) and print p50/p99 in µs with ratios.
//! `cargo bench -p zot-cli --bench roundtrip [-- N] [--rounds R] [--only big|tool-calls]
//! [--placement unpinned|pinned|both] [--go-zot DIR [--go GO]]`: N calls per row (default
//! 2000) in R rounds (default 5); `--only big`: the big component alone
//! (`tool-calls`: the tool-call tables alone); `--placement`:
//! the tool-call table unpinned, pinned or both (the default); `--go-zot`: a checkout of
//! github.com/patriceckhart/zot whose extension manager is measured too, built with `GO`
//! (default: the pinned Go the tests install, else `go`).

mod affinity;
mod big_module;
mod event_loop;
mod fanout;
mod go_manager;
mod intercept;
mod interleave;
mod latency;
mod library;
mod lines;
mod measure;
#[path = "../../../../tests/shared/procfs.rs"]
mod procfs;
mod roles;
mod startup;

use go_manager::GoSource;
use serde_json::Value;
use std::path::PathBuf;
use std::process::ExitCode;

/// What every section shares.
pub struct Bench {
    /// Timed calls per latency row, over all rounds.
    pub n: usize,
    pub rounds: usize,
    /// The scratch folder: extension folders and ZOT_HOMEs.
    pub dir: PathBuf,
    pub rt: tokio::runtime::Runtime,
    /// Where the tool-call table runs, in order.
    pub placements: Vec<Placement>,
    /// The published Go manager to measure beside the library, if given.
    pub go: Option<GoSource>,
}

/// Where the tool-call table runs: on every CPU the bench may use, or pinned to one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placement {
    Unpinned,
    Pinned,
}

impl Bench {
    /// A folder `name` holding `manifest` as its `extension.json`.
    pub fn ext(&self, name: &str, manifest: Value) -> PathBuf {
        let d = self.dir.join("exts").join(name);
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join("extension.json"), manifest.to_string()).unwrap();
        d
    }

    /// The ZOT_HOME the latency rows share (components compile into its cache once).
    pub fn home(&self) -> PathBuf {
        self.dir.join("home")
    }

    /// The latency tables' plan: N/R calls per round, a tenth of that as warm-up.
    pub fn plan(&self) -> interleave::Plan {
        let calls = (self.n / self.rounds).max(1);
        interleave::Plan {
            rounds: self.rounds,
            calls,
            warmup: (calls / 10).max(10),
        }
    }
}

fn main() -> ExitCode {
    // An embedder of the library: components compile in a child of this program.
    if let Some(code) = zot_host::compile::child_if_asked() {
        return code;
    }
    if let Some(code) = roles::if_asked() {
        return code;
    }
    let (mut n, mut rounds, mut only) = (2000, 5, None);
    let mut placements = vec![Placement::Unpinned, Placement::Pinned];
    let (mut go_zot, mut go) = (None, None);
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        if arg == "--placement" {
            placements = match args.next().as_deref() {
                Some("unpinned") => vec![Placement::Unpinned],
                Some("pinned") => vec![Placement::Pinned],
                Some("both") => vec![Placement::Unpinned, Placement::Pinned],
                _ => panic!("--placement unpinned|pinned|both"),
            };
        } else if arg == "--go-zot" {
            go_zot = Some(PathBuf::from(args.next().expect("--go-zot DIR")));
        } else if arg == "--go" {
            go = Some(PathBuf::from(args.next().expect("--go GO")));
        } else if arg == "--only" {
            only = args.next();
            assert!(
                matches!(only.as_deref(), Some("big" | "tool-calls")),
                "--only big|tool-calls"
            );
        } else if arg == "--rounds" {
            rounds = args
                .next()
                .and_then(|r| r.parse().ok())
                .expect("--rounds R");
        } else if let Ok(calls) = arg.parse() {
            n = calls;
        }
    }
    let b = Bench {
        n,
        rounds: rounds.max(1),
        dir: std::env::temp_dir().join(format!("zot-bench-{}", std::process::id())),
        rt: tokio::runtime::Runtime::new().unwrap(),
        placements,
        go: go_zot.map(|checkout| GoSource::new(checkout, go)),
    };
    match only.as_deref() {
        Some("big") => big_module::compile_and_load(&b),
        Some(_) => latency::tool_calls(&b),
        None => {
            latency::tool_calls(&b);
            latency::todo(&b);
            intercept::overhead(&b);
            fanout::flood(&b);
            startup::reactor(&b);
            startup::many(&b);
            startup::idle_memory(&b);
            big_module::compile_and_load(&b);
        }
    }
    let _ = std::fs::remove_dir_all(&b.dir);
    ExitCode::SUCCESS
}
