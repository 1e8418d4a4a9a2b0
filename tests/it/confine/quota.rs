//! The disk quota of a confined extension: a write loop, files unlinked while open, a data
//! dir over it or holding a device node, a temp dir swapped for a link.

use super::*;
use serde_json::{json, Value};
use std::time::Duration;

/// Sets `limits.disk_mb` in the world's manifest (before it is confined).
fn disk_quota(world: &World, mb: u64) {
    let manifest = world.ext.join("extension.json");
    let mut m: Value = serde_json::from_slice(&std::fs::read(&manifest).unwrap()).unwrap();
    m["limits"] = json!({ "disk_mb": mb });
    std::fs::write(&manifest, m.to_string()).unwrap();
}

/// `fill` with `args` under a quota of 8 MiB, through `zot ext call`: it must be stopped
/// for its quota (not answer, having waited); how many MiB it wrote before (its last
/// write it said it made, from its log) is printed: the overshoot docs/sandbox.md states.
fn filled_past_the_quota(tag: &str, args: Value) {
    landlock_abi();
    let world = World::new(tag, "hostile-py");
    disk_quota(&world, 8);
    world.confine();
    let out = ext_call(&world, "fill", &args).output().unwrap();
    let said = text(&out);
    assert!(!out.status.success(), "it was not stopped: {said}");
    assert!(said.contains("disk quota (8 MiB) exceeded"), "{said}");
    let log = std::fs::read_to_string(world.home.join("logs/ext-hostile.log")).unwrap();
    let wrote: u64 = log
        .lines()
        .filter_map(|l| l.split("wrote ").nth(1)?.strip_suffix(" MiB")?.parse().ok())
        .max()
        .unwrap_or(0);
    println!("{tag}: stopped after writing {wrote} MiB under a quota of 8 MiB");
}

/// A write loop (8 MiB files, each within the quota that `RLIMIT_FSIZE` holds) is
/// stopped once its data dir is over the quota: measured every 100 ms, from the start.
#[test]
fn a_confined_write_loop_is_stopped_at_its_disk_quota() {
    for chunk_mb in [1, 8] {
        filled_past_the_quota(
            "confine-fill",
            json!({"files": 256, "mb": 8, "chunk_mb": chunk_mb, "wait": 20}),
        );
    }
}

/// Twelve files of 8 MiB, each unlinked at once and kept open: no walk of the data dir
/// finds them, the files its processes hold open after unlinking count all the same.
#[test]
fn files_unlinked_while_open_count_against_a_confined_disk_quota() {
    filled_past_the_quota(
        "confine-unlinked",
        json!({"files": 12, "mb": 8, "unlink": true, "wait": 20}),
    );
}

/// A data dir already over its quota, or holding a device node (which an earlier,
/// unconfined run as root could make, and the confined one then read the disk through),
/// is refused before the extension starts, naming why.
#[test]
fn a_data_dir_over_its_quota_or_with_a_device_node_is_refused_at_start() {
    landlock_abi();
    let world = World::new("confine-start", "hostile-py");
    disk_quota(&world, 1);
    world.confine();
    assert!(reach(&world, json!({}))
        .as_object()
        .is_some_and(|o| o.is_empty()));
    let data = world.home.join("data/@path");
    let dir = std::fs::read_dir(&data)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    std::fs::write(dir.join("big"), vec![0u8; 3 << 20]).unwrap();
    let out = ext_call(&world, "reach", &json!({})).output().unwrap();
    assert!(
        text(&out).contains("holds more than its disk quota (1 MiB)"),
        "{}",
        text(&out)
    );
    std::fs::remove_file(dir.join("big")).unwrap();
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        println!("not root: no device node can be planted");
        return;
    }
    let node = std::ffi::CString::new(dir.join("sda").to_str().unwrap()).unwrap();
    // SAFETY: a NUL-terminated path.
    let made = unsafe { libc::mknod(node.as_ptr(), libc::S_IFBLK | 0o600, libc::makedev(7, 0)) };
    assert_eq!(made, 0, "{}", std::io::Error::last_os_error());
    let out = ext_call(&world, "reach", &json!({})).output().unwrap();
    assert!(
        text(&out).contains("holds a device node (sda)"),
        "{}",
        text(&out)
    );
}

/// Two zot processes start the same confined extension at once: the first swaps its
/// temp dir for a link to a folder outside, over and over, while the second starts it
/// again and again and writes in its temp dir. The rule is on the data dir as opened, the
/// temp dir has none of its own: nothing lands outside.
#[test]
fn a_temp_dir_swapped_for_a_link_while_a_second_start_makes_it_gives_nothing_outside() {
    landlock_abi();
    let world = World::new("confine-tmp-race", "hostile-py");
    world.confine();
    let outside = world.root.join("outside");
    let swapping = ext_call(
        &world,
        "tmp_swap",
        &json!({"seconds": 6, "outside": outside}),
    )
    .stdout(std::process::Stdio::piped())
    .stderr(std::process::Stdio::piped())
    .spawn()
    .unwrap();
    let (mut wrote, mut denied, mut refused) = (0, 0, 0);
    let started = std::time::Instant::now();
    while started.elapsed() < Duration::from_secs(5) {
        let out = ext_call(&world, "write_tmp", &json!({})).output().unwrap();
        if !out.status.success() {
            refused += 1;
            println!("did not start: {}", text(&out).lines().last().unwrap_or(""));
            continue;
        }
        match answer(&out)["write"].as_str() {
            Some("ok") => wrote += 1,
            _ => denied += 1,
        }
    }
    let swapped = answer(&swapping.wait_with_output().unwrap());
    println!(
        "{swapped}; second starts: {wrote} wrote in their temp dir, {denied} were denied, \
         {refused} did not start"
    );
    assert!(swapped["swaps"].as_u64().unwrap() > 0, "{swapped}");
    world.assert_outside_untouched();
}
