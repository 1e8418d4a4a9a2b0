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

/// Runs the attack `mode` with `amount` (MiB, or entries for `files` and `dirs`, or
/// 1 MiB slices in one vectored write for `iovecs`).
pub fn attack(mode: &str, amount: u64) -> Value {
    match mode {
        "big" => write_file("/data/big", amount, false),
        "unlinked" => write_file("/data/unlinked", amount, true),
        "sparse" => sparse(amount),
        "files" => entries(amount, |i| std::fs::write(format!("/data/many/f{i}"), b"x")),
        "dirs" => entries(amount, |i| std::fs::create_dir(format!("/data/many/d{i}"))),
        "deep" => deep(amount),
        "deep_unlinked" => deep_unlinked(amount),
        "many_unlinked" => many_unlinked(amount),
        "iovecs" => iovecs(amount),
        "raw_iovecs" => raw_iovecs(amount),
        other => json!({"error": format!("no attack {other}")}),
    }
}

/// One vectored write of `count` slices of 1 MiB (the same piece) to `/data/iovecs`: the
/// bytes written (as MiB, rounded down), and the error, if refused.
fn iovecs(count: u64) -> Value {
    let mut file = match std::fs::File::create("/data/iovecs") {
        Ok(f) => f,
        Err(e) => return report(0, kind(e)),
    };
    let piece = piece();
    let slices: Vec<std::io::IoSlice<'_>> =
        (0..count).map(|_| std::io::IoSlice::new(&piece)).collect();
    match file.write_vectored(&slices) {
        Ok(n) => report(n as u64 >> 20, None),
        Err(e) => report(0, kind(e)),
    }
}

/// Preview 1 only: one raw `fd_write` naming `count` iovecs of one byte each (std would
/// cut the list at 1024): `{"errno": the WASI errno it returned, "written": bytes}`.
#[cfg(all(target_os = "wasi", target_env = "p1"))]
fn raw_iovecs(count: u64) -> Value {
    use std::os::fd::AsRawFd;
    #[link(wasm_import_module = "wasi_snapshot_preview1")]
    extern "C" {
        fn fd_write(fd: i32, iovs: *const u32, n: i32, written: *mut u32) -> i32;
    }
    let file = match std::fs::File::create("/data/raw-iovecs") {
        Ok(f) => f,
        Err(e) => return report(0, kind(e)),
    };
    let byte = [b'r'];
    let iovs: Vec<u32> = (0..count).flat_map(|_| [byte.as_ptr() as u32, 1]).collect();
    let mut written = 0u32;
    // SAFETY: `iovs` holds `count` (pointer, length) pairs into `byte`, alive for the
    // call; `written` is a valid out-pointer.
    let errno = unsafe { fd_write(file.as_raw_fd(), iovs.as_ptr(), count as i32, &mut written) };
    json!({"errno": errno, "written": written})
}

#[cfg(not(all(target_os = "wasi", target_env = "p1")))]
fn raw_iovecs(_count: u64) -> Value {
    json!({"error": "raw_iovecs is for preview 1 only"})
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
    fill(&mut file, mb)
}

/// Writes `mb` MiB to `file`, 1 MiB at a time, until one is refused.
fn fill(file: &mut std::fs::File, mb: u64) -> Value {
    let piece = piece();
    for i in 0..mb {
        if let Err(e) = file.write_all(&piece) {
            return report(i, kind(e));
        }
    }
    report(mb, None)
}

/// `count` files in `/data`, each unlinked once opened, then written 1 MiB, all kept open:
/// `done` is how many MiB were written.
fn many_unlinked(count: u64) -> Value {
    let piece = piece();
    let mut open = Vec::new();
    for i in 0..count {
        let path = format!("/data/unlinked-{i}");
        let made = std::fs::File::create(&path).and_then(|mut file| {
            std::fs::remove_file(&path)?;
            file.write_all(&piece)?;
            Ok(file)
        });
        match made {
            Ok(file) => open.push(file),
            Err(e) => return report(i, kind(e)),
        }
    }
    report(count, None)
}

/// Preview 1's path functions on a directory descriptor, which std does not offer.
#[cfg(all(target_os = "wasi", target_env = "p1"))]
mod p1 {
    use std::fs::File;
    use std::os::fd::{AsRawFd, FromRawFd};

    #[link(wasm_import_module = "wasi_snapshot_preview1")]
    extern "C" {
        fn path_create_directory(fd: i32, path: *const u8, len: usize) -> i32;
        fn path_open(
            fd: i32,
            dirflags: i32,
            path: *const u8,
            len: usize,
            oflags: i32,
            rights: u64,
            inheriting: u64,
            fdflags: i32,
            opened: *mut i32,
        ) -> i32;
        fn path_unlink_file(fd: i32, path: *const u8, len: usize) -> i32;
    }
    /// `oflags::creat`, `oflags::directory`; `rights::fd_read`, `rights::fd_write`.
    const CREAT: i32 = 1;
    const DIRECTORY: i32 = 2;
    const READ: u64 = 1 << 1;
    const WRITE: u64 = 1 << 6;

    /// A WASI errno, as text.
    fn failed(call: &str, errno: i32) -> Result<(), String> {
        match errno {
            0 => Ok(()),
            e => Err(format!("{call}: errno {e}")),
        }
    }

    /// Makes the folder `name` in `dir`.
    pub fn mkdir(dir: &File, name: &str) -> Result<(), String> {
        // SAFETY: `name` is valid for `name.len()` bytes during the call.
        let errno = unsafe { path_create_directory(dir.as_raw_fd(), name.as_ptr(), name.len()) };
        failed("path_create_directory", errno)
    }

    /// Opens the folder `name` in `dir`.
    pub fn open_dir(dir: &File, name: &str) -> Result<File, String> {
        open(dir, name, DIRECTORY, READ)
    }

    /// Creates (or opens) the file `name` in `dir`, to write.
    pub fn create(dir: &File, name: &str) -> Result<File, String> {
        open(dir, name, CREAT, READ | WRITE)
    }

    fn open(dir: &File, name: &str, oflags: i32, rights: u64) -> Result<File, String> {
        let mut fd = -1;
        // SAFETY: `name` is valid for `name.len()` bytes, `fd` is a valid out-pointer.
        let errno = unsafe {
            path_open(
                dir.as_raw_fd(),
                0,
                name.as_ptr(),
                name.len(),
                oflags,
                rights,
                rights,
                0,
                &mut fd,
            )
        };
        failed("path_open", errno)?;
        // SAFETY: preview 1 just opened `fd`; nothing else owns it.
        Ok(unsafe { File::from_raw_fd(fd) })
    }

    /// Unlinks the file `name` in `dir`.
    pub fn unlink(dir: &File, name: &str) -> Result<(), String> {
        // SAFETY: `name` is valid for `name.len()` bytes during the call.
        let errno = unsafe { path_unlink_file(dir.as_raw_fd(), name.as_ptr(), name.len()) };
        failed("path_unlink_file", errno)
    }
}

/// Preview 1 only: 20 nested folders of 250-character names (deeper than the host's
/// PATH_MAX), each made and opened from its parent's descriptor, then a file at the
/// bottom opened, unlinked, and `mb` MiB written to it.
#[cfg(all(target_os = "wasi", target_env = "p1"))]
fn deep_unlinked(mb: u64) -> Value {
    let made = (|| {
        let name = "d".repeat(250);
        let mut dir = std::fs::File::open("/data").map_err(|e| format!("/data: {e}"))?;
        for _ in 0..20 {
            p1::mkdir(&dir, &name)?;
            dir = p1::open_dir(&dir, &name)?;
        }
        let file = p1::create(&dir, "bottom")?;
        p1::unlink(&dir, "bottom")?;
        Ok::<_, String>(file)
    })();
    match made {
        Ok(mut file) => fill(&mut file, mb),
        Err(e) => report(0, Some(e)),
    }
}

#[cfg(not(all(target_os = "wasi", target_env = "p1")))]
fn deep_unlinked(_mb: u64) -> Value {
    json!({"error": "deep_unlinked is for preview 1 only"})
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
