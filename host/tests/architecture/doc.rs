//! `docs/architecture.md` kept true: every module of the library and of the `zot`
//! command has its paragraph, and every file the page names exists — so a reader who
//! follows the page to a decision finds the file it names. And `docs/security.md`: every
//! row of its fault and escape matrix names tests that exist.

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

/// The text of the section under `heading`, to the next `## ` heading.
fn section<'a>(page: &'a str, heading: &str) -> &'a str {
    let at = page
        .find(heading)
        .unwrap_or_else(|| panic!("no {heading:?}"));
    let rest = &page[at + heading.len()..];
    &rest[..rest.find("\n## ").unwrap_or(rest.len())]
}

/// Every entry of `dir` but `skip`, as the page names it: `name/` for a folder.
fn entries(dir: &Path, skip: &str) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter_map(|path| {
            let name = path.file_name()?.to_string_lossy().into_owned();
            (name != skip).then(|| match path.is_dir() {
                true => format!("{name}/"),
                false => name,
            })
        })
        .collect();
    names.sort();
    names
}

#[test]
fn every_module_has_a_paragraph() {
    let page = page();
    for (heading, dir, skip) in [
        ("## Modules of `zot-host`", "host/src", "lib.rs"),
        ("## Modules of `zot-cli`", "host/cli/src", "main.rs"),
    ] {
        let text = section(&page, heading);
        for name in entries(&root().join(dir), skip) {
            assert!(
                text.contains(&format!("**`{name}`**")),
                "docs/architecture.md ({heading}) has no paragraph for {dir}/{name}"
            );
        }
    }
}

#[test]
fn every_file_the_page_names_exists() {
    let page = page();
    for heading in [
        "## Crates",
        "## Modules of `zot-host`",
        "## Modules of `zot-cli`",
        "## A tool call, there and back",
        "## Where each decision lives",
    ] {
        for path in paths(section(&page, heading)) {
            let bases = ["", "host/src", "host/cli/src", "host/cli"];
            assert!(
                bases.iter().any(|b| root().join(b).join(&path).exists())
                    || in_any_folder("host/src", &path)
                    || in_any_folder("host/cli/src", &path),
                "docs/architecture.md ({heading}) names {path}, which is not there"
            );
        }
    }
}

/// Whether `path` exists below some folder of `top` (`files.rs` in `transport/wasm/`).
fn in_any_folder(top: &str, path: &str) -> bool {
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
    walk(&root().join(top), path)
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
