//! The `/data` quota counts bytes, not names (issue 16): every way a component can make
//! its data directory grow is charged as it writes, and refused at the quota with
//! `insufficient-space`; the component goes on. And a directory listing is read as the
//! guest asks for it, so many listings of a large folder do not hold the host's memory.
//! Each attack drives the real `zot` binary with the real test components (reactor and
//! command), beside a healthy stdio extension.

use crate::common::*;
use serde_json::{json, Value};
use std::path::Path;
use std::time::{Duration, Instant};
use zot_test_guests::{COMMAND, COMMAND_P1, REACTOR};

const KINDS: [(&str, &str); 3] = [
    ("reactor", REACTOR),
    ("command", COMMAND),
    ("preview1", COMMAND_P1),
];
const QUOTA_MB: u64 = 16;
/// How far past the quota an attack may get: what docs/sandbox.md states.
const OVERSHOOT: u64 = 1 << 20;

/// A host with the component `name` (global, a data directory under `disk_mb`) and the
/// stdio extension `steady`.
fn host_with(name: &str, wasm: &str, disk_mb: u64) -> Host {
    let mut b = HostBuilder::new();
    let manifest = json!({"name": name, "version": "0.1.0", "wasm": wasm,
                          "permissions": {}, "limits": {"disk_mb": disk_mb}});
    b.global(name, &manifest);
    start_beside_steady(b)
}

/// Calls a guest tool whose text is JSON: `Ok(json)`, or `Err(why)` if the call failed
/// (the extension stopped mid-call) or gave an error result.
fn guest_json(host: &Host, tool: &str, args: Value) -> Result<Value, String> {
    let r = host.request_within(
        "call_tool",
        json!({"name": tool, "args": args}),
        Duration::from_secs(120),
    );
    if r["success"] != true || r["data"]["is_error"] == true {
        return Err(r.to_string());
    }
    Ok(serde_json::from_str(&first_text(&r["data"])).unwrap())
}

/// The bytes under `dir` as the quota counts them: each entry its length or its blocks,
/// in whole 4 KiB blocks, at least one; what is deeper than PATH_MAX is not seen.
fn counted(dir: &Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    let mut total = 0;
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let Ok(meta) = entry.path().symlink_metadata() else {
            continue;
        };
        total += meta.len().max(meta.blocks() * 512).div_ceil(4096).max(1) * 4096;
        if meta.is_dir() {
            total += counted(&entry.path());
        }
    }
    total
}

/// Every way to grow `/data` past a 16 MiB quota is refused with `insufficient-space`
/// (ENOSPC, `StorageFull` in Rust's std) at most 1 MiB past it, the component still
/// answers, and the host and its other extension go on: (a) a write to an opened then
/// unlinked file, (b) a write below 20 nested 250-character folders (deeper than
/// PATH_MAX), (c) a plain big write, (d) a sparse `set-size`, (e) many small files,
/// (f) many directories.
#[test]
fn every_way_past_the_disk_quota_is_refused_and_the_component_goes_on() {
    let _serial = serial();
    let attacks = [
        ("unlinked", 64),
        ("deep", 64),
        ("big", 64),
        ("sparse", 1024),
        ("files", 20_000),
        ("dirs", 20_000),
    ];
    for (kind, wasm) in KINDS {
        for (mode, amount) in attacks {
            // Below PATH_MAX needs directory handles, which preview 1's std has not (raw
            // calls do: a_preview1_module_cannot_outrun_its_quota_through_unlinked_files).
            if kind == "preview1" && mode == "deep" {
                continue;
            }
            let name = format!("quota-{kind}-{mode}");
            let host = host_with(&name, wasm, QUOTA_MB);
            let t = Instant::now();
            let said = guest_json(
                &host,
                "disk_attack",
                json!({"mode": mode, "amount": amount}),
            );
            let data = host.home.join("data").join(&name);
            let on_disk = counted(&data);
            let done = said.as_ref().map_or(0, |s| s["done"].as_u64().unwrap_or(0));
            // What the attack got to store: the unlinked file is gone from the tree once
            // closed, so its own count.
            let stored = match mode {
                "unlinked" | "deep" => on_disk.max(done << 20),
                _ => on_disk,
            };
            println!(
                "{name}: {mode} {amount}: {said:?} after {:?}; stored {:.2} MiB \
                 (quota {QUOTA_MB} MiB, overshoot {} KiB)",
                t.elapsed(),
                stored as f64 / (1 << 20) as f64,
                stored.saturating_sub(QUOTA_MB << 20) >> 10
            );
            let said = said.unwrap_or_else(|e| panic!("{name}: the attack was stopped: {e}"));
            let error = said["error"].as_str().unwrap_or_default();
            // Writes through a stream (std's `write` on wasm32-wasip2 goes through the
            // preview-1 adapter) reach the guest as EIO (`Uncategorized`): the adapter of
            // today's toolchains maps every stream error to EIO. Every other way is told
            // `insufficient-space`.
            let refused = match mode {
                "big" | "unlinked" => ["StorageFull", "Uncategorized"].contains(&error),
                "deep" => error.contains("insufficient-space"),
                _ => error == "StorageFull",
            };
            assert!(refused, "{name}: {said}");
            assert!(
                stored <= (QUOTA_MB << 20) + OVERSHOOT,
                "{name}: {stored} bytes"
            );
            // Told, not stopped: it still answers, and says so in its log once.
            assert_eq!(host.call_tool("echo", json!({"k": 1}))["is_error"], false);
            assert_eq!(host.entry(&name)["state"], "ready");
            let log = host.log(&name);
            assert_eq!(
                log.matches("disk quota (16 MiB) reached").count(),
                1,
                "{name}: {log}"
            );
            assert_steady(&host);
            host.shutdown();
        }
    }
}

/// A 50,000-entry folder (inside the quota) listed by 120 listings open at once: the host
/// reads each as the guest asks, so its peak RSS stays far below what holding every
/// listing whole took (1.7 GiB in the review).
#[test]
fn listings_of_a_big_folder_do_not_hold_the_hosts_memory() {
    let _serial = serial();
    for (kind, wasm) in KINDS {
        let name = format!("listings-{kind}");
        let host = host_with(&name, wasm, 256);
        let big = host.home.join("data").join(&name).join("big");
        std::fs::create_dir_all(&big).unwrap();
        for i in 0..50_000 {
            std::fs::File::create(big.join(format!("entry-{i:05}"))).unwrap();
        }
        let before = host.vm_hwm_kib();
        let t = Instant::now();
        let said = guest_json(
            &host,
            "listings",
            json!({"path": "/data/big", "count": 120}),
        );
        let peak = host.vm_hwm_kib();
        println!(
            "{name}: 120 listings of 50,000 entries: {said:?} after {:?}; host peak RSS \
             {} MiB (before: {} MiB)",
            t.elapsed(),
            peak / 1024,
            before / 1024
        );
        let said = said.unwrap();
        assert_eq!(said["opened"], 120, "{said}");
        assert!(peak < 100 * 1024, "the host grew to {peak} KiB");
        assert_steady(&host);
        host.shutdown();
    }
}

/// A preview-1 module's write is charged the length of all its iovecs (what the host can
/// see of it): a raw `fd_write` naming more than `IOV_MAX` (1024) of them is refused with
/// `inval` (28), as POSIX's `writev` does, and writes nothing, while 1024 are taken;
/// std's vectored write of 2000 × 1 MiB (which it cuts at 1024) past a 16 MiB quota is
/// refused whole.
#[test]
fn a_preview1_write_of_many_iovecs_is_bounded() {
    let _serial = serial();
    let name = "quota-iovecs";
    let host = host_with(name, COMMAND_P1, QUOTA_MB);
    let attack = |mode: &str, amount: u64| {
        guest_json(
            &host,
            "disk_attack",
            json!({"mode": mode, "amount": amount}),
        )
        .unwrap_or_else(|e| panic!("{name}: {mode}: {e}"))
    };
    let said = attack("raw_iovecs", 2000);
    assert_eq!(said, json!({"errno": 28, "written": 0}), "{said}");
    // 1024 are taken (wasmtime-wasi's preview 1 writes the first non-empty one per call).
    let said = attack("raw_iovecs", 1024);
    assert_eq!(said, json!({"errno": 0, "written": 1}), "{said}");
    let said = attack("iovecs", 2000);
    assert_eq!(said["error"], "StorageFull", "{said}");
    let stored = counted(&host.home.join("data").join(name));
    assert!(stored <= 16 * 4096, "{stored} bytes stored");
    assert_steady(&host);
    host.shutdown();
}

/// A preview-1 module's files are counted by their handles, not found by their names
/// (the issue: "a preview-1 module outruns its quota through a file deeper than PATH_MAX
/// that it unlinked"; the host looked its unlinked files up in `/proc/self/fd`, whose
/// names stop at PATH_MAX, so that file was never counted). Past an 8 MiB quota, 64 MiB
/// written (1) to a file below 20 nested 250-character folders, unlinked while open, and
/// (2) to 64 files, each unlinked while open and all kept open, are refused with
/// `insufficient-space` (`StorageFull`) at most 1 MiB past the quota (what docs/sandbox.md
/// states), and the module goes on.
#[test]
fn a_preview1_module_cannot_outrun_its_quota_through_unlinked_files() {
    let _serial = serial();
    const QUOTA_MB: u64 = 8;
    for mode in ["deep_unlinked", "many_unlinked"] {
        let name = format!("quota-p1-{mode}");
        let host = host_with(&name, COMMAND_P1, QUOTA_MB);
        let said = guest_json(&host, "disk_attack", json!({"mode": mode, "amount": 64}));
        // The unlinked files are out of the tree: what was written to them, and the tree.
        let done = said.as_ref().map_or(0, |s| s["done"].as_u64().unwrap_or(0));
        let stored = (done << 20) + counted(&host.home.join("data").join(&name));
        println!(
            "{name}: {said:?}; stored {:.2} MiB, {} KiB past the {QUOTA_MB} MiB quota",
            stored as f64 / (1 << 20) as f64,
            stored.saturating_sub(QUOTA_MB << 20) >> 10
        );
        let said = said.unwrap_or_else(|e| panic!("{name}: the attack was stopped: {e}"));
        assert_eq!(said["error"], "StorageFull", "{name}: {said}");
        assert!(
            stored <= (QUOTA_MB << 20) + OVERSHOOT,
            "{name}: {stored} bytes"
        );
        assert_eq!(host.call_tool("echo", json!({"k": 1}))["is_error"], false);
        assert_eq!(host.entry(&name)["state"], "ready");
        assert_steady(&host);
        host.shutdown();
    }
}
