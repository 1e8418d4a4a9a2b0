//! The 20 extensions every host of the soak loads, each in a folder of its own under the
//! scratch directory, over every transport. Tool names are kept apart: the `scenario`
//! guest's copies take a prefix from `/data/tool-prefix`, the MCP servers from their
//! manifest's `prefix`, the Python and Node extensions from `--tools`.

use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use zot_host::manage::identity::Identity;
use zot_host::ZotHome;
use zot_test_guests::{COMMAND, COMMAND_NATIVE, COMMAND_P1, MCP_SERVER, REACTOR, TEST_EXT};

/// The extension whose manifest changes before every reload (its version).
pub const RELOADED: &str = "py";
/// The one whose `crash_now` tool exits mid-call.
pub const CRASHER: &str = "crasher";
/// The reactor whose `d.spin` runs past its deadline.
pub const DEADLINE: &str = "deadline";
/// The command component whose `q.fill_data` runs over its `/data` quota.
pub const QUOTA: &str = "quota";
/// Its quota, MiB.
pub const QUOTA_MB: u64 = 16;

/// One extension: its name, its transport (for the listing), its manifest, the prefix of
/// its scenario tools, and whether it runs confined.
struct Ext {
    name: &'static str,
    transport: &'static str,
    manifest: Value,
    /// Written to `/data/tool-prefix` in its data dir (the `scenario` guest's copies).
    prefix: Option<&'static str>,
    confined: bool,
    /// A file copied into its folder (a confined extension reads only its own folder).
    copy: Option<(PathBuf, &'static str)>,
}

/// The extensions' folders under `root`.
pub struct Fleet {
    root: PathBuf,
    exts: Vec<Ext>,
}

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)
        .expect("host/cli/ is two levels below the workspace root")
        .to_path_buf()
}

fn py_ext(name: &str, args: &[&str]) -> Value {
    let exec = workspace().join("tests/extensions/py-ext/ext.py");
    let mut argv = vec!["--name", name];
    argv.extend(args);
    json!({"name": name, "version": "1.0.0", "exec": exec, "args": argv})
}

fn scenario(name: &'static str, transport: &'static str, wasm: &str, prefix: &'static str) -> Ext {
    Ext {
        name,
        transport,
        manifest: json!({"name": name, "wasm": wasm}),
        prefix: Some(prefix),
        confined: false,
        copy: None,
    }
}

fn plain(name: &'static str, transport: &'static str, manifest: Value) -> Ext {
    Ext {
        name,
        transport,
        manifest,
        prefix: None,
        confined: false,
        copy: None,
    }
}

fn exts() -> Vec<Ext> {
    let ws = workspace();
    let mcp_py = ws.join("tests/extensions/mcp-py/server.py");
    let hello = zot_test_guests::example("hello");
    let guard = zot_test_guests::example("guard");
    let todo = zot_test_guests::example("todo");
    let mut quota = scenario(QUOTA, "command component", COMMAND, "q.");
    quota.manifest["limits"] = json!({"disk_mb": QUOTA_MB});
    vec![
        plain(
            RELOADED,
            "stdio (Python)",
            py_ext(
                RELOADED,
                &["--tools", "echo_py,sleep_py", "--commands", "py-cmd"],
            ),
        ),
        plain(
            CRASHER,
            "stdio (Python)",
            py_ext(
                CRASHER,
                &["--tools", "crash_now,echo_crasher", "--events", ""],
            ),
        ),
        plain(
            "guard-py",
            "stdio (Python)",
            py_ext("guard-py", &["--mode", "guard", "--tools", "echo_guard"]),
        ),
        plain(
            "node",
            "stdio (Node)",
            json!({"name": "node", "exec": "node",
                   "args": [ws.join("tests/extensions/node-ext/ext.js"), "--name", "node",
                            "--tools", "echo_node", "--intercept", "tool_call"]}),
        ),
        plain(
            "picker",
            "stdio (Python)",
            json!({"name": "picker", "exec": "python3",
                   "args": [ws.join("tests/extensions/panel-py/ext.py")]}),
        ),
        plain(
            "native",
            "stdio (Rust)",
            json!({"name": "native", "exec": COMMAND_NATIVE}),
        ),
        plain(
            "rs",
            "stdio (Rust)",
            json!({"name": "rs", "exec": TEST_EXT,
                   "args": ["--name", "rs", "--tools", "echo_rs", "--events", ""]}),
        ),
        plain(
            "hello",
            "stdio (zot-ext SDK)",
            json!({"name": "hello", "exec": hello.native}),
        ),
        plain(
            "rs-events",
            "stdio (Rust)",
            json!({"name": "rs-events", "exec": TEST_EXT,
                   "args": ["--name", "rs-events", "--tools", "echo_rs2", "--commands", ""]}),
        ),
        scenario("reactor", "reactor component", REACTOR, "r."),
        scenario(DEADLINE, "reactor component", REACTOR, "d."),
        scenario("command", "command component", COMMAND, "c."),
        quota,
        plain(
            "todo",
            "command component (zot-ext SDK)",
            json!({"name": "todo", "wasm": todo.wasm}),
        ),
        scenario("p1", "preview-1 module", COMMAND_P1, "p."),
        plain(
            "mcp-py",
            "MCP server (Python, stdio)",
            json!({"name": "mcp-py", "mcp": {"command": "python3", "args": [mcp_py],
                                              "prefix": "mpy."}}),
        ),
        plain(
            "mcp-wasm",
            "MCP server (component)",
            json!({"name": "mcp-wasm", "mcp": {"wasm": MCP_SERVER, "prefix": "mw."}}),
        ),
        Ext {
            copy: Some((ws.join("tests/extensions/py-ext/ext.py"), "ext.py")),
            confined: true,
            ..plain(
                "confined-py",
                "confined stdio (Python)",
                json!({"name": "confined-py", "exec": "./ext.py",
                       "args": ["--name", "confined-py", "--tools", "echo_cpy"]}),
            )
        },
        Ext {
            copy: Some((guard.native.into(), "guard")),
            confined: true,
            ..plain(
                "guard",
                "confined stdio (zot-ext SDK)",
                json!({"name": "guard", "exec": "./guard"}),
            )
        },
        Ext {
            copy: Some((ws.join("examples/hello-py/hello.py"), "hello.py")),
            confined: true,
            ..plain(
                "hello-py",
                "confined stdio (Python)",
                json!({"name": "hello-py", "exec": "./hello.py"}),
            )
        },
    ]
}

impl Fleet {
    /// Writes every extension's folder under `root`.
    pub fn lay_out(root: &Path) -> Fleet {
        let fleet = Fleet {
            root: root.join("exts"),
            exts: exts(),
        };
        for ext in &fleet.exts {
            let dir = fleet.dir(ext.name);
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(dir.join("extension.json"), ext.manifest.to_string()).unwrap();
            if let Some((from, file)) = &ext.copy {
                std::fs::copy(from, dir.join(file)).unwrap();
            }
        }
        fleet
    }

    fn dir(&self, name: &str) -> PathBuf {
        self.root.join(name)
    }

    /// Every folder, in load order.
    pub fn dirs(&self) -> Vec<PathBuf> {
        self.exts.iter().map(|e| self.dir(e.name)).collect()
    }

    pub fn len(&self) -> usize {
        self.exts.len()
    }

    /// `name — transport` of each, for the report.
    pub fn listing(&self) -> Vec<String> {
        let confined = |e: &Ext| if e.confined { ", confined" } else { "" };
        self.exts
            .iter()
            .map(|e| format!("{} ({}{})", e.name, e.transport, confined(e)))
            .collect()
    }

    /// Readies ZOT_HOME `home` for the fleet: each scenario copy's prefix in its data dir,
    /// and `zot ext confine` of the confined ones (their grant is kept per home).
    pub fn prepare(&self, home: &Path) {
        let zot_home = ZotHome::new(home);
        for ext in &self.exts {
            let dir = self.dir(ext.name);
            if let Some(prefix) = ext.prefix {
                let data = zot_home.data_dir(&Identity::of(&dir, &zot_home));
                std::fs::create_dir_all(&data).unwrap();
                std::fs::write(data.join("tool-prefix"), prefix).unwrap();
            }
            if ext.confined {
                let out = Command::new(env!("CARGO_BIN_EXE_zot"))
                    .args(["ext", "confine"])
                    .arg(&dir)
                    .env("ZOT_HOME", home)
                    .stdin(Stdio::null())
                    .output()
                    .unwrap();
                assert!(
                    out.status.success(),
                    "zot ext confine {}: {}",
                    ext.name,
                    String::from_utf8_lossy(&out.stderr)
                );
            }
        }
    }

    /// Sets the version of [`RELOADED`]'s manifest to `1.0.<n>`: what a reload picks up.
    pub fn bump(&self, n: usize) -> String {
        let ext = self.exts.iter().find(|e| e.name == RELOADED).unwrap();
        let version = format!("1.0.{n}");
        let mut manifest = ext.manifest.clone();
        manifest["version"] = json!(version);
        let path = self.dir(RELOADED).join("extension.json");
        std::fs::write(path, manifest.to_string()).unwrap();
        version
    }
}
