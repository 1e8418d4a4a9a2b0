//! The test extensions and their manifests (Python, Node, Rust; `tests/extensions`),
//! and WebAssembly pieces for components written by hand.

use super::*;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

/// The workspace root (host/cli/../..).
pub fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)
        .expect("host/cli/ is two levels below the workspace root")
        .to_path_buf()
}

/// `tests/extensions/py-ext/ext.py` (executable, python3 shebang).
pub fn py_ext() -> PathBuf {
    workspace().join("tests/extensions/py-ext/ext.py")
}

/// `tests/extensions/node-ext/ext.js`.
pub fn node_ext() -> PathBuf {
    workspace().join("tests/extensions/node-ext/ext.js")
}

/// The Rust test extension binary.
pub fn rs_ext() -> PathBuf {
    PathBuf::from(zot_test_guests::TEST_EXT)
}

/// `examples/hello-py`: the published quick start.
pub fn hello_py_example() -> PathBuf {
    workspace().join("examples/hello-py")
}

fn strings(args: &[&str]) -> Vec<Value> {
    args.iter().map(|a| json!(a)).collect()
}

/// A manifest running the Python test extension (exec = absolute path of ext.py).
/// `--name <name>` is passed first so the hello name matches; later args may override.
pub fn py_manifest(name: &str, args: &[&str]) -> Value {
    let mut argv = strings(&["--name", name]);
    argv.extend(strings(args));
    json!({"name": name, "version": "1.2.3", "exec": py_ext().to_str().unwrap(),
           "args": argv, "language": "python", "description": "py test extension"})
}

/// A manifest running the Node test extension (exec = bare `node`, looked up on PATH).
pub fn node_manifest(name: &str, args: &[&str]) -> Value {
    let mut argv = strings(&[node_ext().to_str().unwrap(), "--name", name]);
    argv.extend(strings(args));
    json!({"name": name, "version": "0.4.0", "exec": "node", "args": argv,
           "language": "typescript", "description": "node test extension"})
}

/// A manifest running the Rust test extension (exec = absolute path of the binary).
pub fn rs_manifest(name: &str, args: &[&str]) -> Value {
    let mut argv = strings(&["--name", name]);
    argv.extend(strings(args));
    json!({"name": name, "version": "0.9.0", "exec": rs_ext().to_str().unwrap(),
           "args": argv, "language": "rust", "description": "rust test extension"})
}

/// A manifest running `python3 -c script`.
pub fn inline_py(name: &str, script: &str) -> Value {
    json!({"name": name, "version": "0.1.0", "exec": "python3", "args": ["-c", script]})
}

/// Writes `dir/extension.json` (creating `dir`) and returns `dir`.
pub fn write_manifest(dir: &Path, manifest: &Value) -> PathBuf {
    std::fs::create_dir_all(dir).unwrap_or_else(|e| panic!("mkdir {}: {e}", dir.display()));
    let text = serde_json::to_string_pretty(manifest).unwrap();
    std::fs::write(dir.join("extension.json"), text)
        .unwrap_or_else(|e| panic!("write manifest in {}: {e}", dir.display()));
    dir.to_path_buf()
}

/// Copies a directory tree (file modes included).
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// Appends a section: its id, the size of `payload`, then `payload`.
pub fn section(id: u8, payload: &[u8], out: &mut Vec<u8>) {
    out.push(id);
    leb(payload.len() as u64, out);
    out.extend_from_slice(payload);
}
