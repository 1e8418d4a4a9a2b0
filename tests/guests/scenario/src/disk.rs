//! Attacks on the `/data` quota and on the host's memory through directory listings
//! (tests/quota.rs). Each attack writes until it is refused or reaches `mb` MiB (or
//! `count` entries) and reports how far it got and the error that stopped it.

use serde_json::{json, Value};
use std::io::Write;

/// One MiB of bytes to write.
fn piece() -> Vec<u8> {
    vec![b'q'; 1 << 20]
}

/// `{"done": n, "error": kind or WASI code}`.
fn report(done: u64, error: Option<String>) -> Value {
    json!({"done": done, "error": error})
}

fn kind(e: std::io::Error) -> Option<String> {
    Some(format!("{:?}", e.kind()))
}

/// Runs the attack `mode` with `amount` (MiB, or entries for `files` and `dirs`).
pub fn attack(mode: &str, amount: u64) -> Value {
    match mode {
        "big" => write_file("/data/big", amount, false),
        "unlinked" => write_file("/data/unlinked", amount, true),
        "sparse" => sparse(amount),
        "files" => entries(amount, |i| std::fs::write(format!("/data/many/f{i}"), b"x")),
        "dirs" => entries(amount, |i| std::fs::create_dir(format!("/data/many/d{i}"))),
        "deep" => deep(amount),
        other => json!({"error": format!("no attack {other}")}),
    }
}

/// Writes `mb` MiB to `path`, unlinked first if `unlink` (the file stays open).
fn write_file(path: &str, mb: u64, unlink: bool) -> Value {
    let mut file = match std::fs::File::create(path) {
        Ok(f) => f,
        Err(e) => return report(0, kind(e)),
    };
    if unlink {
        if let Err(e) = std::fs::remove_file(path) {
            return report(0, kind(e));
        }
    }
    let piece = piece();
    for i in 0..mb {
        if let Err(e) = file.write_all(&piece) {
            return report(i, kind(e));
        }
    }
    report(mb, None)
}

/// Makes `/data/sparse` `mb` MiB long without writing.
fn sparse(mb: u64) -> Value {
    let grown = std::fs::File::create("/data/sparse").and_then(|f| f.set_len(mb << 20));
    match grown {
        Ok(()) => report(mb, None),
        Err(e) => report(0, kind(e)),
    }
}

/// Makes `count` entries in `/data/many` with `make`.
fn entries(count: u64, make: impl Fn(u64) -> std::io::Result<()>) -> Value {
    if let Err(e) = std::fs::create_dir_all("/data/many") {
        return report(0, kind(e));
    }
    for i in 0..count {
        if let Err(e) = make(i) {
            return report(i, kind(e));
        }
    }
    report(count, None)
}

/// 20 nested folders of 250-character names (deeper than the host's PATH_MAX), each
/// opened from its parent's descriptor, then `mb` MiB written to a file at the bottom.
#[cfg(all(target_os = "wasi", target_env = "p2"))]
fn deep(mb: u64) -> Value {
    use wasi::filesystem::types::{DescriptorFlags, OpenFlags, PathFlags};
    let Some((mut dir, _)) = wasi::filesystem::preopens::get_directories()
        .into_iter()
        .find(|(_, path)| path == "/data")
    else {
        return json!({"error": "no /data"});
    };
    let name = "d".repeat(250);
    for _ in 0..20 {
        if let Err(e) = dir.create_directory_at(&name) {
            return report(0, Some(format!("{e:?}")));
        }
        dir = match dir.open_at(
            PathFlags::empty(),
            &name,
            OpenFlags::DIRECTORY,
            DescriptorFlags::READ | DescriptorFlags::MUTATE_DIRECTORY,
        ) {
            Ok(d) => d,
            Err(e) => return report(0, Some(format!("{e:?}"))),
        };
    }
    let file = match dir.open_at(
        PathFlags::empty(),
        "bottom",
        OpenFlags::CREATE,
        DescriptorFlags::WRITE,
    ) {
        Ok(f) => f,
        Err(e) => return report(0, Some(format!("{e:?}"))),
    };
    let piece = piece();
    for i in 0..mb {
        if let Err(e) = file.write(&piece, i << 20) {
            return report(i, Some(format!("{e:?}")));
        }
    }
    report(mb, None)
}

#[cfg(not(all(target_os = "wasi", target_env = "p2")))]
fn deep(_mb: u64) -> Value {
    json!({"error": "deep is only available in the sandbox"})
}

/// Opens `count` listings of `path`, reads one entry of each and keeps them all open
/// until it has them all: how many, and the first entry.
pub fn listings(path: &str, count: u64) -> Value {
    let mut open = Vec::new();
    let mut first = None;
    for i in 0..count {
        let mut listing = match std::fs::read_dir(path) {
            Ok(l) => l,
            Err(e) => return json!({"opened": i, "error": kind(e)}),
        };
        match listing.next() {
            Some(Ok(entry)) => {
                first.get_or_insert_with(|| entry.file_name().to_string_lossy().into_owned());
            }
            Some(Err(e)) => return json!({"opened": i, "error": kind(e)}),
            None => {}
        }
        open.push(listing);
    }
    json!({"opened": open.len(), "first": first})
}
