//! An event flood: `Host::emit` of `turn_start` events as fast as a loop goes, to ten
//! native `scenario` guests (which read every event and answer it with a notify) and one
//! extension that never reads (`--deaf`). Each extension's one-way queue is bounded, so
//! the host's memory stays bounded and the deaf one loses only its own events.

use crate::library::{config, load};
use crate::procfs::rss_kib;
use crate::Bench;
use serde_json::json;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use zot_host::{CallError, Host, HostEvent};
use zot_protocol::Event;

const EVENTS: u64 = 100_000;
const READERS: usize = 10;

pub fn flood(b: &Bench) {
    let mut exts: Vec<PathBuf> = (0..READERS)
        .map(|i| {
            let name = format!("reader-{i}");
            b.ext(
                &name,
                json!({"name": name, "exec": zot_test_guests::COMMAND_NATIVE}),
            )
        })
        .collect();
    let me = std::env::current_exe().unwrap();
    exts.push(b.ext(
        "deaf",
        json!({"name": "deaf", "exec": me, "args": ["--deaf"]}),
    ));
    let mut config = config(&b.dir.join("flood"), &exts);
    // The deaf one never reads `shutdown`: stop it soon.
    config.timeouts.shutdown = Duration::from_millis(100);
    b.rt.block_on(async {
        let (host, mut notes) = Host::new(config);
        // Events each reader answered (its notify `event …`), by extension.
        let got: Arc<Mutex<HashMap<String, u64>>> = Arc::default();
        let counts = got.clone();
        tokio::spawn(async move {
            while let Some(note) = notes.recv().await {
                if let HostEvent::Notify { extension, frame } = note {
                    if frame.message.starts_with("event ") {
                        *counts.lock().unwrap().entry(extension).or_default() += 1;
                    }
                }
            }
        });
        load(&host, exts.len()).await;
        let rss_before = rss_kib("self");
        let mut event = Event {
            id: None,
            event: "turn_start".into(),
            fields: Default::default(),
        };
        let t = Instant::now();
        for step in 0..EVENTS {
            event.fields.insert("step".into(), step.into());
            assert_eq!(host.emit(&event), READERS + 1);
        }
        let emitting = t.elapsed();
        let rss_emitted = rss_kib("self");
        let t = Instant::now();
        let (owner, answered, refused) = call_after(&host).await;
        let last = settle(&host, &got).await;
        let settled = t.elapsed();
        let rss_end = rss_kib("self");
        let deaf_dropped = host.status("deaf").unwrap().events_dropped;
        host.shutdown().await;

        let mut got: Vec<u64> = last.iter().map(|(g, _)| *g).collect();
        got.sort();
        let accounted = last.iter().all(|(g, d)| g + d == EVENTS);
        println!(
            "\nevent fan-out: {EVENTS} turn_start events emitted to {READERS} reading \
             subscribers and 1 that never reads"
        );
        println!(
            "emitted in {:.0} ms: {:.0} events/s ({:.0} deliveries/s)",
            ms(emitting),
            EVENTS as f64 / emitting.as_secs_f64(),
            (EVENTS * (READERS as u64 + 1)) as f64 / emitting.as_secs_f64()
        );
        println!(
            "each reader handled {} to {} (median {}) of them, the rest dropped by the host \
             ({}); the deaf one: {deaf_dropped} dropped",
            got[0],
            got[READERS - 1],
            got[READERS / 2],
            if accounted {
                "every event handled or dropped"
            } else {
                "some unaccounted for"
            }
        );
        println!(
            "a tool call to {owner} right after the flood: answered after {:.1} ms, {refused} \
             tries refused first (queue full); the readers were done {:.0} ms after the flood",
            ms(answered),
            ms(settled)
        );
        println!(
            "this process's VmRSS: {rss_before} KiB before, {rss_emitted} KiB after emitting, \
             {rss_end} KiB once the readers were done"
        );
    });
}

/// A tool call (to the first reader, owner of `echo`) until it is answered: one that finds
/// the reader's queue full is refused at once, so it is tried again every millisecond.
/// Who answered, after how long, and how many tries were refused.
async fn call_after(host: &Host) -> (String, Duration, u32) {
    let t = Instant::now();
    let mut refused = 0;
    loop {
        match host
            .call_tool("echo", json!({"after": "flood"}), None)
            .await
        {
            Ok((owner, result)) => {
                assert!(!result.is_error, "{result:?}");
                return (owner, t.elapsed(), refused);
            }
            Err(CallError::QueueFull { .. }) => refused += 1,
            Err(e) => panic!("{e}"),
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

/// Each reader's (events handled, events the host dropped for it) once every event is one
/// or the other, or nothing changed for 2 s.
async fn settle(host: &Host, got: &Mutex<HashMap<String, u64>>) -> Vec<(u64, u64)> {
    let tally = || -> Vec<(u64, u64)> {
        let got = got.lock().unwrap();
        (0..READERS)
            .map(|i| {
                let reader = format!("reader-{i}");
                let status = host.status(&reader).unwrap();
                let dropped = status.events_dropped + status.notes_dropped;
                (got.get(&reader).copied().unwrap_or(0), dropped)
            })
            .collect()
    };
    let (mut last, mut still) = (tally(), Instant::now());
    while last.iter().any(|(g, d)| g + d < EVENTS) && still.elapsed() < Duration::from_secs(2) {
        tokio::time::sleep(Duration::from_millis(50)).await;
        let now = tally();
        if now != last {
            (last, still) = (now, Instant::now());
        }
    }
    last
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}
