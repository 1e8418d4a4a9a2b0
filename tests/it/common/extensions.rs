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

/// A Python extension (its hello name is its first argument): the tool `forecast` takes
/// `{"city": string, "days"?: integer}` and no other field; `odd` has a schema of a draft
/// no validator knows; `boom` writes a line with an escape sequence to stderr and exits 3.
/// Every call is appended to `calls.log` in its folder, then echoed back.
const WEATHER: &str = r#"import json, sys
name = sys.argv[1] if len(sys.argv) > 1 else "wx"
def emit(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()
emit({"type": "hello", "name": name, "version": "1.0.0", "capabilities": ["tools"]})
emit({"type": "register_tool", "name": "forecast", "description": "the weather",
      "schema": {"type": "object", "required": ["city"], "additionalProperties": False,
                 "properties": {"city": {"type": "string"}, "days": {"type": "integer"}}}})
emit({"type": "register_tool", "name": "odd", "description": "an odd schema",
      "schema": {"$schema": "https://example.com/no-such-draft", "type": "object"}})
emit({"type": "register_tool", "name": "boom", "description": "crashes",
      "schema": {"type": "object"}})
emit({"type": "ready"})
for line in sys.stdin:
    msg = json.loads(line)
    if msg["type"] == "tool_call":
        with open("calls.log", "a") as f:
            f.write(json.dumps(msg["args"]) + "\n")
        if msg["name"] == "boom":
            sys.stderr.write("about to fail\n\x1b[31mboom: the weather service is down\n")
            sys.stderr.flush()
            sys.exit(3)
        emit({"type": "tool_result", "id": msg["id"], "is_error": False,
              "content": [{"type": "text", "text": json.dumps(msg["args"], sort_keys=True)}]})
    elif msg["type"] == "shutdown":
        emit({"type": "shutdown_ack"})
        break
"#;

/// Writes the weather extension into `dir`, its manifest named `name`, its hello `hello`.
pub fn weather(dir: &Path, name: &str, hello: &str) -> PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(dir.join("weather.py"), WEATHER).unwrap();
    write_manifest(
        dir,
        &json!({"name": name, "version": "1.0.0", "exec": "python3",
                "args": ["weather.py", hello]}),
    )
}

/// What the extension in `dir` was called with, one JSON object per call.
pub fn calls(dir: &Path) -> Vec<Value> {
    std::fs::read_to_string(dir.join("calls.log"))
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
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
