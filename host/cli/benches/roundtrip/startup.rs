//! Start-up: `Host::load` until ready (a reactor component cold, from the disk cache and
//! already loaded; 1 to 100 extensions), and the memory idle components add to `zot host`.

use crate::interleave::{self, Plan, Row};
use crate::library::{config, host, load};
use crate::lines::sidecar;
use crate::measure::{table, Figure, Line};
use crate::procfs::rss_kib;
use crate::Bench;
use serde_json::json;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use tokio::runtime::Handle;
use zot_test_guests::{COMMAND_NATIVE, REACTOR};

/// Start-up rows: each of 5 rounds starts every row once.
const STARTS: Plan = Plan {
    rounds: 5,
    calls: 1,
    warmup: 0,
};

/// A new host with `home` loading `exts`: the time from `load` to all ready.
fn load_once(rt: &Handle, home: &Path, exts: &[PathBuf]) -> Duration {
    rt.block_on(async {
        let host = host(config(home, exts));
        let took = load(&host, exts.len()).await;
        host.shutdown().await;
        took
    })
}

/// A row of `n` starts, each by `start`.
fn starts(mut start: impl FnMut() -> Duration + 'static) -> Box<dyn Row> {
    Box::new(move |n| (0..n).map(|_| start()).collect())
}

/// Every start of each row, in round order.
fn all_starts(rows: &mut [Box<dyn Row>]) -> Vec<Vec<Duration>> {
    interleave::run(rows, STARTS)
        .into_iter()
        .map(|rounds| rounds.concat())
        .collect()
}

/// One reactor component started cold (compiled into an empty cache), by a new `zot host`
/// from the disk cache (less a `zot host` with no extension), and again in this process
/// (its compiled code shared).
pub fn reactor(b: &Bench) {
    let reactor = b.ext(
        "reactor-start",
        json!({"name": "reactor-start", "wasm": REACTOR}),
    );
    let warm = b.dir.join("warm");
    let rt = b.rt.handle();
    load_once(rt, &warm, std::slice::from_ref(&reactor));
    let (cold_rt, cold_dir, cold_ext) = (rt.clone(), b.dir.clone(), reactor.clone());
    let mut fresh = 0;
    let sidecar_start = |exts: Vec<PathBuf>| {
        let home = warm.clone();
        starts(move || {
            let t = Instant::now();
            let ready = sidecar(&home, &exts);
            let took = t.elapsed();
            drop(ready);
            took
        })
    };
    let (warm_rt, warm_home, warm_ext) = (rt.clone(), warm.clone(), reactor.clone());
    let mut rows = vec![
        starts(move || {
            fresh += 1;
            let home = cold_dir.join(format!("cold-{fresh}"));
            load_once(&cold_rt, &home, std::slice::from_ref(&cold_ext))
        }),
        sidecar_start(vec![]),
        sidecar_start(vec![reactor.clone()]),
        starts(move || load_once(&warm_rt, &warm_home, std::slice::from_ref(&warm_ext))),
    ];
    let [cold, empty, cached, shared] = <[_; 4]>::try_from(all_starts(&mut rows)).unwrap();
    // Each start with the reactor less the start without it in the same round.
    let disk = cached
        .iter()
        .zip(&empty)
        .map(|(with, without)| with.saturating_sub(*without));
    table(
        &format!(
            "reactor component start to ready, {} starts each",
            STARTS.rounds
        ),
        &[
            Line::new("cold: compile (baseline)", Figure::of(cold)),
            Line::new("warm: disk cache, new process", Figure::of(disk.collect())),
            Line::new("warm: loaded in this process", Figure::of(shared)),
        ],
    );
}

/// Start to ready of 1, 10 and 100 extensions, half native (the `scenario` guest) and half
/// reactor components (the same guest, already compiled).
pub fn many(b: &Bench) {
    let home = b.dir.join("many");
    let mixes = [(1, 0), (0, 1), (5, 5), (50, 50)];
    let mut rows: Vec<Box<dyn Row>> = mixes
        .iter()
        .map(|&(natives, reactors)| {
            let total = natives + reactors;
            let native = (0..natives).map(|i| {
                let name = format!("start{total}-native-{i}");
                b.ext(&name, json!({"name": name, "exec": COMMAND_NATIVE}))
            });
            let reactor = (0..reactors).map(|i| {
                let name = format!("start{total}-reactor-{i}");
                b.ext(&name, json!({"name": name, "wasm": REACTOR}))
            });
            let exts: Vec<PathBuf> = native.chain(reactor).collect();
            let (rt, home) = (b.rt.handle().clone(), home.clone());
            starts(move || load_once(&rt, &home, &exts))
        })
        .collect();
    // Compiled once, before any start is timed.
    let reactor = b.ext("many-warm", json!({"name": "many-warm", "wasm": REACTOR}));
    load_once(b.rt.handle(), &home, &[reactor]);
    let f: Vec<Figure> = all_starts(&mut rows).into_iter().map(Figure::of).collect();
    table(
        &format!(
            "start to ready, warm cache, {} starts each (p99: the slowest)",
            STARTS.rounds
        ),
        &[
            Line::new("1 native (baseline)", f[0]),
            Line::new("1 reactor", f[1]),
            Line::new("10: 5 native + 5 reactor", f[2]),
            Line::new("100: 50 native + 50 reactor", f[3]),
        ],
    );
}

/// VmRSS of `zot host` with no extension and with 20 idle reactor components.
pub fn idle_memory(b: &Bench) {
    const IDLE: usize = 20;
    let home = b.dir.join("rss");
    let many: Vec<_> = (0..IDLE)
        .map(|i| {
            let name = format!("idle-{i}");
            b.ext(&name, json!({"name": name, "wasm": REACTOR}))
        })
        .collect();
    // Compiled once, then loaded from the cache.
    load_once(b.rt.handle(), &home, &many[..1]);
    let rss = |exts: &[PathBuf]| {
        let ready = sidecar(&home, exts);
        std::thread::sleep(Duration::from_millis(300));
        rss_kib(&ready.pid().to_string())
    };
    let (base, loaded) = (rss(&[]), rss(&many));
    println!(
        "\nresident memory of `zot host`: {base} KiB with no extension, {loaded} KiB with {IDLE} \
         idle reactor components: {:.0} KiB per idle component",
        loaded.saturating_sub(base) as f64 / IDLE as f64
    );
}
