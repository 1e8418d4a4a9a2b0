//! What the soak prints: the set-up, each minute's figures, and the end's summary and
//! checks.

use crate::fleet::Fleet;
use crate::procfs::Proc;
use crate::tally::{Counts, BOUND};
use crate::watch::{Sample, Watched};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitStatus;
use std::time::{Duration, Instant};
use zot_host::manage::log::MAX_LOG_BYTES;

/// RSS at the end may differ from RSS after the first minute by at most this much.
const RSS_TOLERANCE: f64 = 0.10;
/// Descriptors at the end may exceed those after the first minute by at most this many
/// (each figure the least of five readings 100 ms apart, see [`crate::watch`]).
const FD_SLACK: usize = 2;

/// One fault of one minute, and how it went.
pub struct Fault {
    minute: usize,
    what: &'static str,
    result: Result<String, String>,
}

impl Fault {
    pub fn new(minute: usize, what: &'static str, result: Result<String, String>) -> Fault {
        Fault {
            minute,
            what,
            result,
        }
    }
}

pub fn start(minutes: usize, fleet: &Fleet, scratch: &Path, watched: &[Watched]) {
    println!("soak: {minutes} min, scratch {}", scratch.display());
    println!(
        "{} extensions in each host: {}",
        fleet.len(),
        fleet.listing().join(", ")
    );
    let pids: Vec<String> = watched
        .iter()
        .map(|w| format!("{} {}", w.name, w.pid))
        .collect();
    println!("hosts: {}", pids.join(", "));
}

fn mib(kib: u64) -> f64 {
    kib as f64 / 1024.0
}

fn client_line(name: &str, c: &Counts) -> String {
    let reasons: Vec<String> = c.failed.iter().map(|(r, n)| format!("{r}: {n}")).collect();
    let events: u64 = c.events.values().sum();
    format!(
        "  {name:<8} {} calls: {} ok, {} failed{}, {} wrong, {} unanswered, {} without a reason; \
         {events} events",
        c.calls(),
        c.ok,
        c.failures(),
        if reasons.is_empty() {
            String::new()
        } else {
            format!(" ({})", reasons.join(", "))
        },
        c.wrong,
        c.unanswered,
        c.no_reason,
    )
}

fn processes_line(sample: &Sample, watched: &[Watched]) -> String {
    let each: Vec<String> = watched
        .iter()
        .zip(&sample.figures)
        .map(|(w, f)| {
            format!(
                "{} {:.1} MiB, {} fds, {} children",
                w.name,
                mib(f.rss_kib),
                f.fds,
                f.children
            )
        })
        .collect();
    format!("  {}; zombies: {}", each.join("; "), sample.zombies.len())
}

/// A minute's progress.
pub fn minute(
    sample: &Sample,
    tally: &BTreeMap<&'static str, Counts>,
    faults: &[Fault],
    watched: &[Watched],
) {
    println!("\nminute {}", sample.minute);
    for (name, c) in tally {
        println!("{}", client_line(name, c));
    }
    let now: Vec<String> = faults
        .iter()
        .filter(|f| f.minute == sample.minute)
        .map(|f| match &f.result {
            Ok(what) => format!("{} ok ({what})", f.what),
            Err(why) => format!("{} FAILED ({why})", f.what),
        })
        .collect();
    println!("  faults: {}", now.join("; "));
    println!("{}", processes_line(sample, watched));
}

/// Which of `below` (pids) still exist after `within`.
pub async fn left_after(below: &[Proc], within: Duration) -> Vec<Proc> {
    let t = Instant::now();
    loop {
        let left: Vec<Proc> = below
            .iter()
            .filter(|p| Path::new(&format!("/proc/{}", p.pid)).exists())
            .cloned()
            .collect();
        if left.is_empty() || t.elapsed() > within {
            return left;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// What the end is judged on.
pub struct End<'a> {
    pub tally: BTreeMap<&'static str, Counts>,
    pub samples: Vec<Sample>,
    pub faults: Vec<Fault>,
    pub watched: &'a [Watched],
    /// How long the last calls took to finish once the workers were told to stop.
    pub drained: Duration,
    pub zombies_at_end: Vec<Proc>,
    pub exits: [(&'static str, ExitStatus); 2],
    /// Processes below the soak before the hosts stopped that still exist after.
    pub left: Vec<Proc>,
    pub homes: &'a [PathBuf],
}

/// Every extension log of `homes`: (path, bytes).
fn logs(homes: &[PathBuf]) -> Vec<(PathBuf, u64)> {
    let mut all = Vec::new();
    for home in homes {
        let Ok(dir) = std::fs::read_dir(home.join("logs")) else {
            continue;
        };
        for entry in dir.flatten() {
            let len = entry.metadata().map_or(0, |m| m.len());
            all.push((entry.path(), len));
        }
    }
    all.sort_by_key(|(_, len)| std::cmp::Reverse(*len));
    all
}

/// Prints the summary and the checks; the names of those that failed.
pub fn summary(end: End) -> Vec<String> {
    println!("\nsummary");
    for (name, c) in &end.tally {
        println!("{}", client_line(name, c));
        let events: Vec<String> = c.events.iter().map(|(e, n)| format!("{e} {n}")).collect();
        println!("    events: {}", events.join(", "));
        let exits: Vec<String> = c.exits.iter().map(|(e, n)| format!("{e} ×{n}")).collect();
        println!("    exits: {}", exits.join(", "));
        for (reason, error) in &c.failed_seen {
            println!("    {reason}, e.g.: {error}");
        }
        for wrong in &c.wrong_seen {
            println!("    wrong: {wrong}");
        }
    }
    println!(
        "  the last calls finished {} ms after the workers were told to stop",
        end.drained.as_millis()
    );
    println!("  per minute (RSS MiB / fds / children):");
    for s in &end.samples {
        let each: Vec<String> = s
            .figures
            .iter()
            .map(|f| format!("{:.1} / {} / {}", mib(f.rss_kib), f.fds, f.children))
            .collect();
        println!("    {:>2}: {}", s.minute, each.join("   "));
    }
    let logs = logs(end.homes);
    let rotated = logs
        .iter()
        .filter(|(p, _)| p.extension().is_some_and(|e| e == "1"));
    let rotated: Vec<String> = rotated
        .map(|(p, _)| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    if let Some((path, len)) = logs.first() {
        println!(
            "  logs: {} files, the largest {:.2} MiB ({}), rotated: {}",
            logs.len(),
            *len as f64 / (1 << 20) as f64,
            path.display(),
            if rotated.is_empty() {
                "none".into()
            } else {
                rotated.join(", ")
            }
        );
    }

    let mut checks: Vec<(String, bool, String)> = Vec::new();
    let mut check = |name: &str, ok: bool, detail: String| checks.push((name.into(), ok, detail));
    let all = |f: fn(&Counts) -> u64| end.tally.values().map(f).sum::<u64>();
    check(
        "every call answered or failed with a reason",
        all(|c| c.unanswered + c.no_reason) == 0,
        format!(
            "{} calls, {} unanswered in {BOUND:?}, {} failed without a reason",
            all(Counts::calls),
            all(|c| c.unanswered),
            all(|c| c.no_reason)
        ),
    );
    check(
        "every answer as the extension gives it",
        all(|c| c.wrong) == 0,
        format!("{} wrong", all(|c| c.wrong)),
    );
    let quiet: u64 = ["library", "mcp"]
        .iter()
        .filter_map(|c| end.tally.get(c))
        .map(Counts::failures)
        .sum();
    check(
        "no failure where no fault was aimed (library, mcp)",
        quiet == 0,
        format!("{quiet} failed"),
    );
    let missed: Vec<String> = end
        .faults
        .iter()
        .filter_map(|f| {
            f.result
                .as_ref()
                .err()
                .map(|e| format!("minute {} {}: {e}", f.minute, f.what))
        })
        .collect();
    check(
        "every fault happened as planned",
        missed.is_empty(),
        if missed.is_empty() {
            format!("{} faults", end.faults.len())
        } else {
            missed.join("; ")
        },
    );
    let zombies: Vec<String> = end
        .samples
        .iter()
        .flat_map(|s| &s.zombies)
        .chain(&end.zombies_at_end)
        .map(|p| format!("{} ({}) of {}", p.pid, p.comm, p.ppid))
        .collect();
    check(
        "no zombie processes",
        zombies.is_empty(),
        zombies.join(", "),
    );
    let left: Vec<String> = end
        .left
        .iter()
        .map(|p| format!("{} ({})", p.pid, p.comm))
        .collect();
    check(
        "no process left once the hosts stopped",
        left.is_empty(),
        left.join(", "),
    );
    let statuses: Vec<String> = end.exits.iter().map(|(n, s)| format!("{n}: {s}")).collect();
    check(
        "zot host and zot mcp exit 0",
        end.exits.iter().all(|(_, s)| s.success()),
        statuses.join(", "),
    );
    let (first, last) = (&end.samples[0], &end.samples[end.samples.len() - 1]);
    for (i, w) in end.watched.iter().enumerate() {
        let (a, b) = (&first.figures[i], &last.figures[i]);
        check(
            &format!("{}: no leaked descriptors", w.name),
            b.fds <= a.fds + FD_SLACK,
            format!("{} after minute 1, {} at the end", a.fds, b.fds),
        );
        let change = b.rss_kib as f64 / a.rss_kib as f64 - 1.0;
        check(
            &format!("{}: RSS within 10 % of minute 1's", w.name),
            change.abs() <= RSS_TOLERANCE,
            format!(
                "{:.1} MiB after minute 1, {:.1} MiB at the end ({:+.1} %)",
                mib(a.rss_kib),
                mib(b.rss_kib),
                change * 100.0
            ),
        );
    }
    let over: Vec<String> = logs
        .iter()
        .filter(|(_, len)| *len > MAX_LOG_BYTES)
        .map(|(p, len)| format!("{} ({len} bytes)", p.display()))
        .collect();
    check(
        "logs within their cap (10 MiB, one rotation)",
        over.is_empty(),
        if over.is_empty() {
            format!("{} files", logs.len())
        } else {
            over.join(", ")
        },
    );

    println!("\nchecks");
    let mut failed = Vec::new();
    for (name, ok, detail) in checks {
        println!("{}  {name}: {detail}", if ok { "PASS" } else { "FAIL" });
        if !ok {
            failed.push(name);
        }
    }
    failed
}
