//! `docs/architecture.md` kept true: every module of this crate has its row in the
//! modules table, and every file the tables name exists — so a reader who follows the
//! page to a decision finds the file it names. And `docs/security.md`: every row of its
//! fault and escape matrix names tests that exist.

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn page() -> String {
    std::fs::read_to_string(root().join("docs/architecture.md")).unwrap()
}

/// The rows of the table that follows `heading`: each row's cells.
fn table(page: &str, heading: &str) -> Vec<Vec<String>> {
    let at = page
        .find(heading)
        .unwrap_or_else(|| panic!("no {heading:?}"));
    page[at..]
        .lines()
        .skip_while(|l| !l.starts_with('|'))
        .take_while(|l| l.starts_with('|'))
        .skip(2)
        .map(|l| {
            l.trim_matches('|')
                .split(" | ")
                .map(str::to_string)
                .collect()
        })
        .collect()
}

/// The `code` spans of `cell` that look like a file or folder of this repository.
fn paths(cell: &str) -> Vec<String> {
    cell.split('`')
        .skip(1)
        .step_by(2)
        .filter(|s| s.ends_with(".rs") || (s.ends_with('/') && !s.contains(' ')))
        .map(str::to_string)
        .collect()
}

/// Where a path named on the page is: `host/…` from the repository, else from `host/src`.
fn place(path: &str) -> PathBuf {
    if path.starts_with("host/") {
        root().join(path)
    } else {
        root().join("host/src").join(path)
    }
}

#[test]
fn every_module_has_a_row() {
    let rows = table(&page(), "## Modules of `zot-host`");
    let named: Vec<String> = rows.iter().map(|r| r[0].clone()).collect();
    let src = root().join("host/src");
    for entry in std::fs::read_dir(&src).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if name == "lib.rs" {
            continue;
        }
        // A folder is its module's (`host/`, `caps/`) or a file module's own (`launcher/`
        // beside `launcher.rs`).
        let spans = if path.is_dir() {
            vec![format!("`{name}/"), format!("`{name}.rs`")]
        } else {
            vec![format!("`{name}`")]
        };
        assert!(
            named
                .iter()
                .any(|cell| spans.iter().any(|s| cell.contains(s))),
            "docs/architecture.md has no row for {name}"
        );
    }
}

#[test]
fn every_file_the_page_names_exists() {
    let page = page();
    for heading in ["## Modules of `zot-host`", "## Where each decision lives"] {
        for row in table(&page, heading) {
            for cell in &row {
                for path in paths(cell) {
                    let here = place(&path);
                    // A file named inside a folder's row is that folder's.
                    let inside = paths(&row[0])
                        .iter()
                        .filter(|dir| dir.ends_with('/'))
                        .map(|dir| place(dir).join(&path))
                        .any(|p| p.exists());
                    assert!(
                        here.exists() || inside || in_any_folder(&path),
                        "docs/architecture.md ({heading}) names {path}, which is not there"
                    );
                }
            }
        }
    }
}

/// Whether `path` exists below some folder of `host/src` (`files.rs` in `transport/wasm/`).
fn in_any_folder(path: &str) -> bool {
    fn walk(dir: &Path, path: &str) -> bool {
        if dir.join(path).exists() {
            return true;
        }
        std::fs::read_dir(dir)
            .into_iter()
            .flatten()
            .filter_map(Result::ok)
            .any(|e| e.path().is_dir() && walk(&e.path(), path))
    }
    walk(&root().join("host/src"), path)
}

/// Each row of `docs/security.md`'s matrix names in its `test` cell one or more tests, a
/// `path` (from the repository) then a `fn`; each file holds that `fn`.
#[test]
fn every_security_row_names_a_test_that_exists() {
    let page = std::fs::read_to_string(root().join("docs/security.md")).unwrap();
    let header = "| attack or fault | what the host does | limit involved | test |";
    let rows: Vec<Vec<String>> = page
        .match_indices(header)
        .flat_map(|(at, _)| table(&page[at..], header))
        .collect();
    assert!(
        rows.len() >= 50,
        "docs/security.md's matrix has {} rows",
        rows.len()
    );
    for row in &rows {
        assert_eq!(row.len(), 4, "docs/security.md: {row:?} is not 4 cells");
        let spans: Vec<&str> = row[3].split('`').skip(1).step_by(2).collect();
        assert!(
            !spans.is_empty() && spans.len().is_multiple_of(2),
            "docs/security.md: the test cell of {:?} is not `path` `fn` pairs",
            row[0]
        );
        for pair in spans.chunks(2) {
            let (path, name) = (pair[0], pair[1]);
            let text = std::fs::read_to_string(root().join(path))
                .unwrap_or_else(|e| panic!("docs/security.md names {path}: {e}"));
            assert!(
                text.contains(&format!("fn {name}(")),
                "docs/security.md names {name}, which is no fn of {path}"
            );
        }
    }
}
