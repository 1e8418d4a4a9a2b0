//! The crate's layering, checked: a scan of every `crate::…` path in `host/src` (code,
//! not comments or test modules) gives which top-level module uses which, and the tests
//! fail on a circle through the lower layers and on an import against the layering. The
//! same scan, path by path (`crate::`, `super::`, `self::` and a child module's name),
//! gives which file uses which: no two files may need each other, however far apart,
//! except a file and the modules it sits in (a child module reads its parent's items).
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
pub(crate) fn root_names(lib: &str) -> BTreeMap<String, String> {
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
        // The root, and the test-only files (`host/tests.rs`).
        if parts == ["lib.rs"] || parts.last().is_some_and(|f| f == "tests.rs") {
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

/// A module's path from the crate root: `component/cache.rs` is `component::cache`,
/// `host/mod.rs` is `host`, `launcher/scripted.rs` is `launcher::scripted`.
fn module_path(rel: &Path) -> Vec<String> {
    let mut parts: Vec<String> = rel
        .iter()
        .map(|p| p.to_string_lossy().trim_end_matches(".rs").to_string())
        .collect();
    if parts.last().is_some_and(|p| p == "mod") {
        parts.pop();
    }
    parts
}

/// The file of the module at `path`, if it is one: `a/b.rs` or `a/b/mod.rs`.
fn file_of(src: &Path, path: &[String]) -> Option<PathBuf> {
    let (last, dirs) = path.split_last()?;
    let dir = dirs.iter().fold(src.to_path_buf(), |d, p| d.join(p));
    [
        dir.join(format!("{last}.rs")),
        dir.join(last).join("mod.rs"),
    ]
    .into_iter()
    .find(|f| f.is_file())
}

/// The paths a `use` tree or an expression path spells from its start in `text`:
/// `a::b::{c, d::{e, self}}` is `a::b::c`, `a::b::d::e` and `a::b::d`.
fn spelled(text: &str) -> Vec<Vec<String>> {
    fn ident(s: &str) -> (&str, &str) {
        let end = s
            .find(|c: char| !(c.is_alphanumeric() || c == '_'))
            .unwrap_or(s.len());
        (&s[..end], &s[end..])
    }
    fn tree(mut s: &str, prefix: Vec<String>, out: &mut Vec<Vec<String>>) -> usize {
        let start = s.len();
        let mut path = prefix;
        loop {
            s = s.trim_start();
            if let Some(group) = s.strip_prefix('{') {
                let mut rest = group;
                loop {
                    rest = rest.trim_start();
                    if let Some(after) = rest.strip_prefix('}') {
                        return start - after.len();
                    }
                    if rest.is_empty() {
                        return start;
                    }
                    let used = tree(rest, path.clone(), out);
                    rest = rest[used..].trim_start();
                    rest = rest.strip_prefix(',').unwrap_or(rest);
                }
            }
            let (name, after) = ident(s);
            if name.is_empty() {
                out.push(path);
                return start - s.len();
            }
            if name != "self" {
                path.push(name.to_string());
            }
            s = after;
            match s.strip_prefix("::") {
                Some(next) => s = next,
                None => {
                    out.push(path);
                    return start - s.len();
                }
            }
        }
    }
    let mut out = Vec::new();
    tree(text, Vec::new(), &mut out);
    out.retain(|p| !p.is_empty());
    out
}

/// Which file uses which (by path from `host/src`): every path in a file's code
/// resolved to the deepest module file it names. A file's uses of the modules it sits
/// in are left out: a child reads its parent's items, and the parent declares it.
fn file_graph() -> BTreeMap<PathBuf, BTreeSet<PathBuf>> {
    let src = src();
    let roots = root_names(&std::fs::read_to_string(src.join("lib.rs")).unwrap());
    let mut all = Vec::new();
    files(&src, &mut all);
    let mut graph = BTreeMap::new();
    for file in all {
        let rel = file.strip_prefix(&src).unwrap().to_path_buf();
        if rel == Path::new("lib.rs") || rel.file_name().is_some_and(|f| f == "tests.rs") {
            continue;
        }
        let here = module_path(&rel);
        let code = code(&std::fs::read_to_string(&file).unwrap());
        let children: Vec<String> = code
            .lines()
            .filter_map(|l| {
                let l = l
                    .trim()
                    .trim_start_matches("pub(crate) ")
                    .trim_start_matches("pub ");
                l.strip_prefix("mod ")?
                    .strip_suffix(';')
                    .map(str::to_string)
            })
            .collect();
        let mut named: Vec<Vec<String>> = Vec::new();
        let boundary = |at: usize| {
            let before = &code[..at];
            !before.ends_with("::")
                && !before
                    .chars()
                    .next_back()
                    .is_some_and(|c| c.is_alphanumeric() || c == '_')
        };
        for (at, _) in code
            .match_indices("crate::")
            .filter(|(at, _)| boundary(*at))
        {
            for path in spelled(&code[at + "crate::".len()..]) {
                let mut path = path;
                if file_of(&src, &path[..1]).is_none() {
                    if let Some(module) = roots.get(&path[0]) {
                        path.insert(0, module.clone());
                    }
                }
                named.push(path);
            }
        }
        for (at, _) in code
            .match_indices("super::")
            .filter(|(at, _)| boundary(*at))
        {
            let mut rest = &code[at..];
            let mut base = here.clone();
            while let Some(next) = rest.strip_prefix("super::") {
                base.pop();
                rest = next;
            }
            for path in spelled(rest) {
                named.push(base.iter().cloned().chain(path).collect());
            }
        }
        for prefix in std::iter::once("self".to_string()).chain(children.iter().cloned()) {
            let needle = format!("{prefix}::");
            for (at, _) in code.match_indices(&needle).filter(|(at, _)| boundary(*at)) {
                let start = if prefix == "self" {
                    at + needle.len()
                } else {
                    at
                };
                for path in spelled(&code[start..]) {
                    named.push(here.iter().cloned().chain(path).collect());
                }
            }
        }
        let uses: &mut BTreeSet<PathBuf> = graph.entry(rel.clone()).or_default();
        for path in named {
            let Some(target) = (1..=path.len())
                .rev()
                .find_map(|n| file_of(&src, &path[..n]))
            else {
                continue;
            };
            let target = target.strip_prefix(&src).unwrap().to_path_buf();
            let there = module_path(&target);
            // Itself, or a module it sits in.
            if here.starts_with(&there) {
                continue;
            }
            uses.insert(target);
        }
    }
    graph
}

/// A circle through `from` in `graph`, if there is one: the files in order.
fn circle_through<T: Ord + Clone>(graph: &BTreeMap<T, BTreeSet<T>>, from: &T) -> Option<Vec<T>> {
    let mut seen = BTreeSet::new();
    let mut todo = vec![vec![from.clone()]];
    while let Some(trail) = todo.pop() {
        let last = trail.last().unwrap();
        for next in graph.get(last).into_iter().flatten() {
            if next == from {
                return Some(trail);
            }
            if seen.insert(next.clone()) {
                let mut longer = trail.clone();
                longer.push(next.clone());
                todo.push(longer);
            }
        }
    }
    None
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

#[test]
fn the_file_scan_sees_paths_whole_and_the_known_uses() {
    let words = |p: &[&str]| p.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    assert_eq!(
        spelled("a::b::{c, d::{e, self}}; x"),
        [
            words(&["a", "b", "c"]),
            words(&["a", "b", "d", "e"]),
            words(&["a", "b", "d"])
        ]
    );
    assert_eq!(spelled("tree::read(x)"), [words(&["tree", "read"])]);
    assert_eq!(
        module_path(Path::new("component/mod.rs")),
        words(&["component"])
    );
    let graph = file_graph();
    let uses = |a: &str, b: &str| {
        graph
            .get(Path::new(a))
            .is_some_and(|u| u.contains(Path::new(b)))
    };
    // `super::entry::…`, `crate::tree::…`, a child module by name, `self::…`.
    assert!(
        uses("component/compile.rs", "component/entry.rs"),
        "{graph:#?}"
    );
    assert!(
        uses("component/cache.rs", "component/compile.rs"),
        "{graph:#?}"
    );
    assert!(uses("component/cache.rs", "util/tree.rs"), "{graph:#?}");
    assert!(
        uses("extension/mod.rs", "extension/pending.rs"),
        "{graph:#?}"
    );
    // A child's use of its parent is not counted.
    assert!(
        !uses("extension/pending.rs", "extension/mod.rs"),
        "{graph:#?}"
    );
    // A circle is found, and named in order.
    let mut circle = BTreeMap::new();
    circle.insert("a", BTreeSet::from(["b"]));
    circle.insert("b", BTreeSet::from(["c"]));
    circle.insert("c", BTreeSet::from(["a"]));
    assert_eq!(circle_through(&circle, &"b"), Some(vec!["b", "c", "a"]));
    circle.insert("c", BTreeSet::new());
    assert_eq!(circle_through(&circle, &"a"), None);
}

/// No two files need each other (through any others): each can be read, and moved,
/// with what it uses.
#[test]
fn no_file_is_in_an_import_circle() {
    let graph = file_graph();
    for file in graph.keys() {
        if let Some(circle) = circle_through(&graph, file) {
            let names: Vec<String> = circle.iter().map(|f| f.display().to_string()).collect();
            panic!(
                "a file circle: {} → back to {}",
                names.join(" → "),
                names[0]
            );
        }
    }
}

/// What the command module at `rel` (below `host/cli/src/commands`) names of the other
/// commands: `crate::commands::X`, or `super::X` from a command's own file (`super::super::X`
/// from a file in its folder), for every `X` but itself.
fn commands_named(rel: &Path, text: &str, commands: &BTreeSet<String>) -> BTreeSet<String> {
    let parts: Vec<String> = rel
        .components()
        .map(|c| {
            c.as_os_str()
                .to_string_lossy()
                .trim_end_matches(".rs")
                .to_string()
        })
        .collect();
    let own = parts[0].clone();
    // A folder's `mod.rs` is as deep as the folder.
    let depth = parts.len() - usize::from(parts.len() > 1 && parts[parts.len() - 1] == "mod");
    let up = "super::".repeat(depth);
    let code = code(text);
    let mut named: BTreeSet<String> = first_segments(&code, "crate::commands::")
        .into_iter()
        .collect();
    named.extend(first_segments(&code, &up));
    named.retain(|n| commands.contains(n) && *n != own);
    named
}

/// No subcommand of the `zot` command imports another: what two share is outside
/// `commands/` (the flags, the output, the CLI's side of the records), and the command
/// tree (`app.rs`) routes every verb.
#[test]
fn no_cli_subcommand_imports_another() {
    let dir = src().join("../cli/src/commands");
    let commands: BTreeSet<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().is_some_and(|n| n != "mod.rs"))
        .map(|p| p.file_stem().unwrap().to_string_lossy().into_owned())
        .collect();
    assert!(
        commands.contains("shell") && commands.contains("install"),
        "{commands:?}"
    );
    let mut all = Vec::new();
    files(&dir, &mut all);
    for file in all {
        let rel = file.strip_prefix(&dir).unwrap();
        if rel == Path::new("mod.rs") {
            continue;
        }
        let text = std::fs::read_to_string(&file).unwrap();
        let named = commands_named(rel, &text, &commands);
        assert!(
            named.is_empty(),
            "host/cli/src/commands/{} imports the commands {named:?}",
            rel.display()
        );
    }
    // The scan sees both spellings.
    let both = "use crate::commands::grant::x;\nuse super::trust::y;";
    let named = commands_named(Path::new("call.rs"), both, &commands);
    assert_eq!(named, BTreeSet::from(["grant".into(), "trust".into()]));
    let named = commands_named(
        Path::new("shell/exec.rs"),
        "use super::super::check;",
        &commands,
    );
    assert_eq!(named, BTreeSet::from(["check".into()]));
}
