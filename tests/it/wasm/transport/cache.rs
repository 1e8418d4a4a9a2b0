//! The compilation cache: a second start loads from it (the artifact mapped, its sum
//! beside it), a corrupt entry is recompiled.

use super::*;
use std::path::{Path, PathBuf};
use zot_test_guests::REACTOR;

/// The files under `$ZOT_HOME/cache`.
fn cache_files(home: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(home.join("cache"))
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    files.sort();
    files
}

/// Starts a host on `root` with the one reactor `name`, checks it works, returns the
/// part of its log written by this start.
fn start_and_log(root: &Path, name: &str) -> String {
    let mut b = HostBuilder::in_dir(root);
    b.explicit(name, &component(name, REACTOR));
    let host = b.start();
    let before = host.log(name).len();
    host.ready();
    assert_unharmed(&host, name);
    let log = host.log(name)[before..].to_string();
    host.shutdown();
    log
}

#[test]
fn second_start_loads_from_the_cache_and_a_corrupt_entry_is_recompiled() {
    let _serial = serial();
    let name = "cached";
    let root = TempDir::new("wasm-cache");
    let home = root.path().join("home");
    // A cache of its own, not the one the other tests share.
    std::fs::create_dir_all(home.join("cache")).unwrap();

    let cold = start_and_log(root.path(), name);
    let compiled = log_line(&cold, "compiled ");
    println!("first start: {compiled}");
    assert!(compiled.contains("(not cached)"), "log:\n{cold}");
    assert!(!cold.contains("from the compilation cache"), "log:\n{cold}");
    // One entry: the artifact (mapped when loaded) and its sum beside it.
    let files = cache_files(&home);
    assert_eq!(files.len(), 2, "one cache entry: {files:?}");
    let entry = files[0].clone();
    let sum = files[1].clone();
    assert_eq!(
        sum.file_name().unwrap().to_string_lossy(),
        format!("{}.sum", entry.file_name().unwrap().to_string_lossy())
    );
    assert_eq!(std::fs::metadata(&sum).unwrap().len(), 64);
    println!(
        "cache entry {} ({} bytes)",
        entry.display(),
        std::fs::metadata(&entry).unwrap().len()
    );

    let warm = start_and_log(root.path(), name);
    let loaded = log_line(&warm, "from the compilation cache");
    println!("second start: {loaded}");
    assert!(loaded.contains("loaded "), "log:\n{warm}");
    assert!(!warm.contains("compiled "), "log:\n{warm}");

    // Flip a byte in the middle of the entry.
    let mut bytes = std::fs::read(&entry).unwrap();
    let at = bytes.len() / 2;
    bytes[at] ^= 0xff;
    std::fs::write(&entry, &bytes).unwrap();
    let after_corruption = start_and_log(root.path(), name);
    let rejected = log_line(&after_corruption, "cache entry not used");
    println!(
        "after corrupting byte {at}: {rejected} / {}",
        log_line(&after_corruption, "compiled ")
    );
    assert!(
        rejected.contains("checksum"),
        "the corrupt entry is named and rejected:\n{after_corruption}"
    );
    assert!(
        after_corruption.contains("compiled "),
        "log:\n{after_corruption}"
    );
    assert_eq!(
        cache_files(&home),
        vec![entry.clone(), sum.clone()],
        "one entry, replaced"
    );

    // The replaced entry is good again.
    let again = start_and_log(root.path(), name);
    println!("fourth start: {}", log_line(&again, "loaded "));
    assert!(
        again.contains("from the compilation cache"),
        "log:\n{again}"
    );
}

#[test]
fn files_that_are_not_components_are_an_error_state() {
    let mut b = HostBuilder::new();
    // A text file named x.wasm (relative to the manifest dir).
    let dir = b.scratch().join("exts").join("text");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("x.wasm"), "this is not WebAssembly\n").unwrap();
    b.explicit("text", &component("text", "x.wasm"));
    // A core module that is no preview-1 command: the empty module.
    let core = b.scratch().join("core.wasm");
    std::fs::write(&core, b"\0asm\x01\0\0\0").unwrap();
    b.explicit("core", &component("core", core.to_str().unwrap()));
    // A path that does not exist.
    b.explicit(
        "missing",
        &component("missing", "/nonexistent/zot/missing.wasm"),
    );
    // And a good one, which starts regardless.
    b.explicit("good", &component("good", REACTOR));
    let host = b.start();
    let ready = host.ready();
    println!("host_ready: {ready:?}");
    assert!(ready.contains(&"good".to_string()), "{ready:?}");
    for (name, words) in [
        ("text", "not a WebAssembly component (it is a text file)"),
        // A core module runs only as a WASI preview-1 command (issue 20): this one is not.
        (
            "core",
            "a core wasm module this host cannot run: it exports no `_start`",
        ),
        ("missing", "cannot read"),
    ] {
        let e = host.entry(name);
        println!("{name}: state {} error {}", e["state"], e["error"]);
        assert_eq!(e["state"], "error", "{e}");
        let error = e["error"].as_str().unwrap_or_default();
        assert!(error.contains(words), "{name}: {error}");
        assert!(!ready.contains(&name.to_string()), "{ready:?}");
        assert!(host.log(name).contains(words), "log of {name}");
    }
    assert_unharmed(&host, "good");
    host.shutdown();
}
