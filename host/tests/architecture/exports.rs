//! The crate root exports what an embedding agent needs and nothing else: each name it
//! re-exports is used where an embedder's view is written down — `tests/it/library.rs`
//! (the library driven as an agent drives it), the examples, or the crate's own example
//! (`lib.rs`'s doc). What only the `zot` command uses is under `manage`.

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Every `.rs` file below `dir`.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() && !path.ends_with("target") {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Whether `word` occurs in `text` as a whole identifier.
fn has_word(text: &str, word: &str) -> bool {
    text.match_indices(word).any(|(at, _)| {
        let ident = |c: char| c.is_alphanumeric() || c == '_';
        let before = text[..at].chars().next_back().is_none_or(|c| !ident(c));
        let after = text[at + word.len()..]
            .chars()
            .next()
            .is_none_or(|c| !ident(c));
        before && after
    })
}

#[test]
fn every_root_export_is_used_as_an_embedder_uses_it() {
    let lib = std::fs::read_to_string(root().join("host/src/lib.rs")).unwrap();
    let example: String = lib
        .lines()
        .filter_map(|l| l.trim_start().strip_prefix("//!"))
        .collect::<Vec<_>>()
        .join("\n");
    let mut views = vec![example];
    let mut files = vec![root().join("tests/it/library.rs")];
    rust_files(&root().join("examples"), &mut files);
    for file in files {
        views.push(std::fs::read_to_string(&file).unwrap());
    }
    let names = crate::imports::root_names(&lib);
    assert!(names.len() > 10, "the scan sees the re-exports: {names:?}");
    for name in names.keys() {
        assert!(
            views.iter().any(|v| has_word(v, name)),
            "zot_host::{name} is exported, and no embedder's view uses it \
             (tests/it/library.rs, examples/, lib.rs's example): move it under `manage`, \
             or show how an agent uses it"
        );
    }
}

#[test]
fn a_word_is_a_whole_identifier() {
    assert!(has_word("use zot_host::{Host, HostConfig};", "Host"));
    assert!(!has_word("HostConfig", "Host"));
    assert!(!has_word("MyHost", "Host"));
}
