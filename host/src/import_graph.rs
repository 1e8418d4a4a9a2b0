//! The crate's layering, checked: a scan of every `crate::…` path in `host/src` (code,
//! not comments or test modules) gives which top-level module uses which, and the tests
//! fail on a circle through the lower layers and on an import against the layering.
//!
//! A text scan, not the compiler's view, so it is made to fail rather than miss: a
//! `crate::` path to a name it cannot place, or a `super::` that reaches the crate root
//! (which it does not follow), fails the scan. Paths inside macros and strings are read as
//! code; a `//` inside a string hides the rest of that line (no such line names a module).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Which top-level module uses which.
type Graph = BTreeMap<String, BTreeSet<String>>;

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// Every `.rs` file under `dir`.
fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The top-level modules: `x.rs` and `x/` beside `lib.rs`.
fn modules(src: &Path) -> BTreeSet<String> {
    std::fs::read_dir(src)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir() || p.extension().is_some_and(|e| e == "rs"))
        .map(|p| p.file_stem().unwrap().to_string_lossy().into_owned())
        .filter(|m| m != "lib")
        .collect()
}

/// A file's code: without its inline test modules (from the first `#[cfg(test)]`
/// `mod … {` on) and without `//` comments.
fn code(text: &str) -> String {
    let end = text
        .match_indices("#[cfg(test)]\nmod ")
        .map(|(at, _)| at)
        .find(|at| text[*at..].lines().nth(1).is_some_and(|l| l.ends_with('{')))
        .unwrap_or(text.len());
    text[..end]
        .lines()
        .map(|line| line.split("//").next().unwrap_or_default())
        .collect::<Vec<_>>()
        .join("\n")
}

/// The first segment of every path after `prefix` in `code`, groups (`prefix{a, b::c}`)
/// taken item by item.
fn first_segments(code: &str, prefix: &str) -> Vec<String> {
    let ident = |s: &str| -> String {
        s.trim_start()
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect()
    };
    let mut out = Vec::new();
    for (at, _) in code.match_indices(prefix) {
        let rest = &code[at + prefix.len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let (mut depth, mut item) = (0usize, String::new());
            for c in group.chars() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        out.push(ident(&item));
                        item.clear();
                        continue;
                    }
                    _ => {}
                }
                item.push(c);
            }
            out.push(ident(&item));
        } else {
            out.push(ident(rest));
        }
    }
    out.retain(|s| !s.is_empty());
    out
}

/// What each name the crate root re-exports (`pub use module::…`) comes from.
fn root_names(lib: &str) -> BTreeMap<String, String> {
    let mut names = BTreeMap::new();
    for stmt in code(lib).split(';') {
        let Some(path) = stmt.trim().strip_prefix("pub use ") else {
            continue;
        };
        let (module, rest) = path.split_once("::").expect("a re-export names its module");
        let rest = rest.trim();
        let items: Vec<&str> = match rest.strip_prefix('{') {
            Some(group) => group.trim_end_matches('}').split(',').collect(),
            None => vec![rest],
        };
        for item in items {
            let name = item.trim().rsplit("::").next().unwrap_or_default();
            if !name.is_empty() {
                names.insert(name.to_string(), module.trim().to_string());
            }
        }
    }
    names
}

/// The graph of `host/src`.
fn graph() -> Graph {
    let src = src();
    let modules = modules(&src);
    let roots = root_names(&std::fs::read_to_string(src.join("lib.rs")).unwrap());
    let mut all = Vec::new();
    files(&src, &mut all);
    let mut graph = Graph::new();
    for file in all {
        let rel = file.strip_prefix(&src).unwrap();
        let parts: Vec<String> = rel
            .iter()
            .map(|p| p.to_string_lossy().into_owned())
            .collect();
        // The root, and the test-only files (this one, `host/tests.rs`).
        let this = Path::new(file!()).file_name().unwrap().to_string_lossy();
        if parts == ["lib.rs"] || parts.last().is_some_and(|f| f == "tests.rs" || *f == this) {
            continue;
        }
        let top = parts[0].trim_end_matches(".rs").to_string();
        let code = code(&std::fs::read_to_string(&file).unwrap());
        let at_root = parts.len() == 1 || (parts.len() == 2 && parts[1] == "mod.rs");
        assert!(
            !(at_root && code.contains("super::")),
            "{}: a `super::` path that reaches the crate root: write `crate::`",
            rel.display()
        );
        let uses = graph.entry(top.clone()).or_default();
        for name in first_segments(&code, "crate::") {
            let module = if modules.contains(&name) {
                name
            } else {
                roots.get(&name).cloned().unwrap_or_else(|| {
                    panic!(
                        "{}: crate::{name} is no module the scan knows",
                        rel.display()
                    )
                })
            };
            if module != top {
                uses.insert(module);
            }
        }
    }
    graph
}

/// The modules `from` reaches through the graph.
fn reach(graph: &Graph, from: &str) -> BTreeSet<String> {
    let mut seen = BTreeSet::new();
    let mut todo = vec![from.to_string()];
    while let Some(m) = todo.pop() {
        for next in graph.get(&m).into_iter().flatten() {
            if seen.insert(next.clone()) {
                todo.push(next.clone());
            }
        }
    }
    seen
}

/// The lower layers: none of them is in an import circle, and none uses what is above it.
const LAYERS: &[(&str, &[&str])] = &[
    (
        "component",
        &[
            "transport",
            "launcher",
            "manage",
            "host",
            "extension",
            "manifest",
            "sandbox",
        ],
    ),
    (
        "budget",
        &["transport", "extension", "host", "launcher", "manage"],
    ),
    ("transport", &["extension", "launcher", "host", "manage"]),
    // Starting an extension takes a `LaunchContext`, not the core's `HostConfig`.
    ("launcher", &["host", "extension", "manage"]),
];

#[test]
fn the_scan_sees_the_known_imports() {
    let graph = graph();
    let uses = |a: &str, b: &str| graph.get(a).is_some_and(|u| u.contains(b));
    assert!(uses("launcher", "component"), "{graph:?}");
    assert!(uses("manage", "component"), "{graph:?}");
    assert!(uses("extension", "budget"), "{graph:?}");
    assert!(uses("transport", "component"), "{graph:?}");
    assert_eq!(
        first_segments("use crate::{a::b, c, d::{e, f}};", "crate::"),
        ["a", "c", "d"]
    );
    let roots = root_names("pub use a::{B, c::D};\n// pub use x::Y;\npub use e::F;");
    let names: Vec<_> = roots.iter().map(|(n, m)| format!("{n}:{m}")).collect();
    assert_eq!(names, ["B:a", "D:a", "F:e"]);
}

#[test]
fn no_lower_layer_is_in_an_import_circle_or_imports_upward() {
    let graph = graph();
    for (layer, above) in LAYERS {
        let reached = reach(&graph, layer);
        assert!(
            !reached.contains(*layer),
            "{layer} is in an import circle: {graph:#?}"
        );
        for m in *above {
            assert!(
                !reached.contains(*m),
                "{layer} reaches {m}, a layer above it: {graph:#?}"
            );
        }
    }
}

/// The whole library: no module reaches itself, so each can be read (and moved) with
/// what it uses below it.
#[test]
fn no_module_is_in_an_import_circle() {
    let graph = graph();
    for module in graph.keys() {
        assert!(
            !reach(&graph, module).contains(module),
            "{module} is in an import circle: {graph:#?}"
        );
    }
}

#[test]
fn the_wasm_command_transport_does_not_import_the_protocol_core() {
    let text = std::fs::read_to_string(src().join("transport/wasm/command.rs")).unwrap();
    assert!(!first_segments(&code(&text), "crate::").contains(&"extension".to_string()));
}
