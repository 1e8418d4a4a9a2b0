//! A small harness for driving `zot host` (docs/sidecar.md) over pipes.
//!
//! `HostBuilder` lays out a fresh scratch directory (a `ZOT_HOME`, a project `cwd`, and
//! a folder for explicit extensions), writes manifests, and starts `zot host` with piped
//! stdin/stdout/stderr. A reader thread parses every stdout line: responses are kept by
//! `id`, everything else is queued as an event. Every wait has a deadline and panics
//! with the host's stderr tail, the extension logs and the recent events.
//!
//! Only std and serde_json.

mod pty;
pub use pty::Pty;

use serde_json::{json, Map, Value};
use std::collections::{HashMap, VecDeque};
use std::io::{BufRead, BufReader, Read, Write};
use std::marker::PhantomData;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, ExitStatus, Output, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Sender};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// How long an ordinary request may take.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(20);
/// How long to wait for `host_ready` in tests that do not measure it.
pub const READY_TIMEOUT: Duration = Duration::from_secs(15);
/// The `--ready-timeout-ms` of a test's `zot host` unless it gives one: below
/// [`READY_TIMEOUT`], so `host_ready` always comes within the test's wait.
const HOST_READY_WAIT_MS: &str = "12000";
/// How long to wait for an ordinary event.
pub const EVENT_TIMEOUT: Duration = Duration::from_secs(10);

// ---------------------------------------------------------------------------------------
// Paths of the test extensions

/// The workspace root (host/cli/../..).
/// `zot ext <args>` with `ZOT_HOME=home`, in `cwd`, stdin closed (not a terminal).
pub fn zot(home: &Path, cwd: &Path, args: &[&str]) -> Output {
    let with_ext: Vec<&str> = std::iter::once("ext").chain(args.iter().copied()).collect();
    zot_top(home, cwd, &with_ext)
}

/// What a run printed on stdout.
pub fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// What a run printed on stderr.
pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The run succeeded (else both its outputs are shown).
#[track_caller]
pub fn assert_ok(out: &Output) {
    assert!(
        out.status.success(),
        "failed: {}{}",
        stdout(out),
        stderr(out)
    );
}

/// `zot <args>` (not `zot ext`), with `ZOT_HOME=home`, in `cwd`, stdin closed.
pub fn zot_top(home: &Path, cwd: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_zot"))
        .args(args)
        .env("ZOT_HOME", home)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .output()
        .expect("zot runs")
}

/// Runs `git <args>` in `dir` (as a user named `t`); it must succeed.
pub fn git(dir: &Path, args: &[&str]) {
    let out = Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@t"])
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {}", text(&out));
}

/// The host answers a ping, and the stdio extension beside a component its `echo_py`
/// tool: what a hostile component must not stop.
pub fn assert_steady(host: &Host) {
    assert_eq!(host.ok("ping", json!({}))["pong"], true);
    let d = host.call_tool("echo_py", json!({"x": 1}));
    assert_eq!(d["is_error"], false, "{d}");
}

/// What a command printed: its stdout, then its stderr.
pub fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

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

/// Starts `b`'s host with the Python stdio extension `steady` (its tool `echo_py`) beside
/// the one extension `b` already has, and waits until both are loaded: the extension that
/// shows that a hostile neighbour degrades only itself.
pub fn start_beside_steady(mut b: HostBuilder) -> Host {
    b.explicit("steady", &py_manifest("steady", &["--tools", "echo_py"]));
    let host = b.start();
    let ready = host.ready_event();
    assert_eq!(
        ready["extensions"].as_array().map(Vec::len),
        Some(2),
        "{ready}"
    );
    host
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

pub use zot_test_fixtures::{fnv1a, leb, payload};

/// A tool installed once per target dir: `<CARGO_TARGET_TMPDIR>/<name>`, made by
/// `install` the first time (into a fresh folder of this process's, then renamed into
/// place, so a concurrent run never sees half an install) and reused while `done` says it
/// is there.
pub fn installed_once(
    name: &str,
    done: impl Fn(&Path) -> bool,
    install: impl FnOnce(&Path),
) -> PathBuf {
    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let dir = tmp.join(name);
    if done(&dir) {
        return dir;
    }
    let partial = tmp.join(format!("{name}.{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&partial);
    let started = Instant::now();
    install(&partial);
    if std::fs::rename(&partial, &dir).is_err() {
        // Another run put it there first.
        let _ = std::fs::remove_dir_all(&partial);
    }
    println!("installed {} in {:.1?}", dir.display(), started.elapsed());
    dir
}

/// The Python package `pin` (`name==version`), installed by pip once per target dir into
/// `<target>/tmp/<name>-<version>` (see [`installed_once`]), where `marker` (a path inside
/// it) shows a finished install: a folder for `PYTHONPATH`, or for the files the package
/// brings (a toolchain).
pub fn pip_installed(pin: &str, marker: &str) -> PathBuf {
    let (package, version) = pin
        .split_once("==")
        .unwrap_or_else(|| panic!("{pin:?} is not an exact pin (name==version)"));
    installed_once(
        &format!("{package}-{version}"),
        |dir| dir.join(marker).exists(),
        |partial| {
            let mut pip = Command::new("python3");
            pip.args(["-m", "pip", "install", "--quiet"])
                .args(["--disable-pip-version-check", "--no-input", "--target"])
                .arg(partial)
                .arg(pin);
            install_step(
                pip,
                &format!("pip install {pin} into {}", partial.display()),
            );
        },
    )
}

/// Runs `cmd`, the step `what` of an install, which must succeed.
fn install_step(mut cmd: Command, what: &str) {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run {what}: {e}"));
    assert!(
        out.status.success(),
        "{what} failed ({}):\n{}",
        out.status,
        text(&out)
    );
}

/// The pinned npm packages of the workspace folder `folder` (a `package.json` and its
/// `package-lock.json`), installed by `npm ci` once per target dir and lockfile into
/// `<target>/tmp/<name>-<hash of the lockfile>`, where `marker` (a path inside it) shows
/// a finished install.
pub fn npm_installed(folder: &str, name: &str, marker: &str) -> PathBuf {
    let source = workspace().join(folder);
    let lock = std::fs::read(source.join("package-lock.json")).unwrap();
    let name = format!("{name}-{:016x}", zot_test_fixtures::fnv1a(&lock));
    installed_once(
        &name,
        |dir| dir.join(marker).exists(),
        |partial| {
            std::fs::create_dir_all(partial).unwrap();
            for file in ["package.json", "package-lock.json"] {
                std::fs::copy(source.join(file), partial.join(file)).unwrap();
            }
            let mut npm = Command::new("npm");
            npm.args(["ci", "--no-audit", "--no-fund", "--ignore-scripts"])
                .current_dir(partial);
            install_step(npm, &format!("npm ci in {}", partial.display()));
        },
    )
}

// ---------------------------------------------------------------------------------------
// Scratch directories and serialisation

/// A unique directory under the system temp dir, removed on drop.
pub struct TempDir {
    path: PathBuf,
}

impl TempDir {
    pub fn new(tag: &str) -> TempDir {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        let path = std::env::temp_dir().join(format!(
            "zot-test-{tag}-{}-{}-{nanos}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::SeqCst)
        ));
        std::fs::create_dir_all(&path).unwrap();
        TempDir { path }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

/// Runs heavy or timing-sensitive tests of one binary one at a time (the machine is
/// small). Survives a poisoned lock.
pub fn serial() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|p| p.into_inner())
}

/// True once `pid` no longer exists (or is a zombie nobody has reaped yet).
pub fn process_gone(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit_once(')')
            .map(|(_, rest)| rest.trim_start().starts_with('Z'))
            .unwrap_or(false),
    }
}

/// Polls [`process_gone`] until `timeout`.
pub fn wait_process_gone(pid: u32, timeout: Duration) -> bool {
    let deadline = Instant::now() + timeout;
    loop {
        if process_gone(pid) {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A field of `/proc/<pid>/status` in KiB (e.g. `VmHWM`, `VmRSS`).
pub fn proc_status_kib(pid: u32, field: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status.lines().find_map(|l| {
        let rest = l.strip_prefix(field)?.strip_prefix(':')?;
        rest.trim().trim_end_matches("kB").trim().parse().ok()
    })
}

// ---------------------------------------------------------------------------------------
// Starting the host

/// Lays out the scratch directory and the command line of one `zot host`.
pub struct HostBuilder {
    /// Removed with the `Host` unless the directory was lent ([`HostBuilder::in_dir`]).
    scratch: Option<TempDir>,
    root: PathBuf,
    args: Vec<String>,
    env: Vec<(String, String)>,
}

impl Default for HostBuilder {
    fn default() -> Self {
        Self::new()
    }
}

impl HostBuilder {
    pub fn new() -> HostBuilder {
        let scratch = TempDir::new("host");
        let mut b = HostBuilder::in_dir(scratch.path());
        b.scratch = Some(scratch);
        b
    }

    /// A host laid out in `root` (created if missing), which the caller owns and which
    /// outlives the host: start another host in the same directory to reuse its
    /// `ZOT_HOME` (data, logs, cache, grants). Nothing of `root` is removed.
    pub fn in_dir(root: &Path) -> HostBuilder {
        for d in ["home", "cwd", "exts"] {
            std::fs::create_dir_all(root.join(d)).unwrap();
        }
        // Compiled components are shared by every test of the run (the cache is keyed by
        // the component's hash; entries are written atomically), so each test guest is
        // compiled once, not in every test, against the host's ready wait. A test of
        // the cache itself makes `home/cache` a folder of its own first.
        let cache = root.join("home").join("cache");
        if cache.symlink_metadata().is_err() {
            let shared = Path::new(env!("CARGO_TARGET_TMPDIR")).join("zot-compile-cache");
            std::fs::create_dir_all(&shared).unwrap();
            std::os::unix::fs::symlink(&shared, &cache).unwrap();
        }
        HostBuilder {
            scratch: None,
            root: root.to_path_buf(),
            args: Vec::new(),
            env: Vec::new(),
        }
    }

    /// `ZOT_HOME` of this host.
    pub fn home(&self) -> PathBuf {
        self.root.join("home")
    }

    /// The project directory (`--cwd`, and the process's working directory).
    pub fn cwd(&self) -> PathBuf {
        self.root.join("cwd")
    }

    /// A scratch folder for anything else.
    pub fn scratch(&self) -> &Path {
        &self.root
    }

    /// Writes an extension dir outside the search paths and passes it with `--ext`.
    pub fn explicit(&mut self, dir_name: &str, manifest: &Value) -> PathBuf {
        let dir = write_manifest(&self.root.join("exts").join(dir_name), manifest);
        self.ext_path(&dir);
        dir
    }

    /// Adds `--ext PATH`.
    pub fn ext_path(&mut self, path: &Path) -> &mut Self {
        self.args.push("--ext".into());
        self.args.push(path.to_str().unwrap().into());
        self
    }

    /// Writes a global extension: `$ZOT_HOME/extensions/<dir_name>`.
    pub fn global(&mut self, dir_name: &str, manifest: &Value) -> PathBuf {
        write_manifest(&self.home().join("extensions").join(dir_name), manifest)
    }

    /// Writes a project-local extension: `<cwd>/.zot/extensions/<dir_name>`.
    pub fn project(&mut self, dir_name: &str, manifest: &Value) -> PathBuf {
        write_manifest(
            &self.cwd().join(".zot").join("extensions").join(dir_name),
            manifest,
        )
    }

    /// Sets an environment variable of the `zot` process.
    pub fn env(&mut self, key: &str, value: &str) -> &mut Self {
        self.env.push((key.into(), value.into()));
        self
    }

    /// Adds raw command-line arguments after `zot host`.
    pub fn arg(&mut self, arg: &str) -> &mut Self {
        self.args.push(arg.into());
        self
    }

    /// Starts `zot host --zot-home H --cwd C …` with ZOT_HOME=H, in C. The
    /// `ZOT_TEST_HOST_BIN` environment variable, if set, replaces the `zot` binary (to run
    /// the suite against another build or a stand-in).
    pub fn start(self) -> Host {
        let home = self.home();
        let cwd = self.cwd();
        let bin = std::env::var_os("ZOT_TEST_HOST_BIN")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_zot")));
        let mut cmd = Command::new(&bin);
        cmd.arg("host")
            .arg("--zot-home")
            .arg(&home)
            .arg("--cwd")
            .arg(&cwd)
            .args(&self.args)
            .current_dir(&cwd)
            .env("ZOT_HOME", &home)
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        // The ready wait ends as soon as every extension is ready or gone; the default
        // 3 s is too short for a Python start on a loaded 2-core machine, where a test
        // would then call a tool not yet registered. A test of the cap passes its own.
        if !self.args.iter().any(|a| a == "--ready-timeout-ms") {
            cmd.arg("--ready-timeout-ms").arg(HOST_READY_WAIT_MS);
        }
        let started = Instant::now();
        let mut child = cmd
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", bin.display()));
        let pid = child.id();

        let shared = Arc::new(Shared::default());
        let stderr_buf = Arc::new(Mutex::new(Vec::new()));

        let stdin = child.stdin.take().unwrap();
        let (tx, rx) = mpsc::channel::<WriteJob>();
        {
            let shared = shared.clone();
            std::thread::spawn(move || writer(stdin, rx, shared));
        }
        let stdout = child.stdout.take().unwrap();
        {
            let shared = shared.clone();
            std::thread::spawn(move || reader(stdout, shared));
        }
        let mut stderr = child.stderr.take().unwrap();
        {
            let buf = stderr_buf.clone();
            std::thread::spawn(move || {
                let mut chunk = [0u8; 8192];
                while let Ok(n) = stderr.read(&mut chunk) {
                    if n == 0 {
                        break;
                    }
                    let mut b = buf.lock().unwrap();
                    b.extend_from_slice(&chunk[..n]);
                    let len = b.len();
                    if len > 64 * 1024 {
                        b.drain(..len - 32 * 1024);
                    }
                }
            });
        }
        Host {
            child,
            pid,
            tx: Mutex::new(Some(tx)),
            shared,
            stderr: stderr_buf,
            next_id: AtomicU64::new(1),
            started,
            home,
            cwd,
            exit_status: None,
            _scratch: self.scratch,
        }
    }
}

#[derive(Default)]
struct Shared {
    state: Mutex<State>,
    cond: Condvar,
}

type EventFilter = Box<dyn Fn(&Value) -> bool + Send>;

#[derive(Default)]
struct State {
    responses: HashMap<String, Value>,
    events: VecDeque<Value>,
    /// Lines on stdout that were not JSON objects (the contract forbids them).
    bad_stdout: Vec<String>,
    /// Events the filter refused (counted, not kept).
    filtered: u64,
    filter: Option<EventFilter>,
    lines: u64,
    eof: bool,
    write_error: Option<String>,
}

/// Something to write to the host's stdin, in turn with the others.
type WriteJob = Box<dyn FnOnce(&mut dyn Write) -> std::io::Result<()> + Send>;

fn writer(mut stdin: ChildStdin, rx: mpsc::Receiver<WriteJob>, shared: Arc<Shared>) {
    for job in rx {
        if let Err(e) = job(&mut stdin).and_then(|_| stdin.flush()) {
            shared.state.lock().unwrap().write_error = Some(e.to_string());
            shared.cond.notify_all();
        }
    }
    // Channel closed: dropping stdin closes the host's input.
}

fn reader(stdout: impl Read, shared: Arc<Shared>) {
    let mut r = BufReader::with_capacity(1 << 20, stdout);
    let mut line = Vec::new();
    loop {
        line.clear();
        match r.read_until(b'\n', &mut line) {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        let parsed = serde_json::from_slice::<Value>(&line);
        let mut st = shared.state.lock().unwrap();
        st.lines += 1;
        let seq = st.lines;
        match parsed {
            Ok(Value::Object(mut obj)) => {
                obj.insert("_seq".into(), json!(seq));
                let v = Value::Object(obj);
                let id = v.get("id").and_then(Value::as_str).map(String::from);
                let is_response = v.get("type").and_then(Value::as_str) == Some("response");
                match id {
                    Some(id) if is_response => {
                        st.responses.insert(id, v);
                    }
                    _ => {
                        if st.filter.as_ref().is_some_and(|keep| !keep(&v)) {
                            st.filtered += 1;
                        } else {
                            st.events.push_back(v);
                        }
                    }
                }
            }
            _ => {
                let text = String::from_utf8_lossy(&line[..line.len().min(300)]).into_owned();
                st.bad_stdout.push(text);
            }
        }
        drop(st);
        shared.cond.notify_all();
    }
    shared.state.lock().unwrap().eof = true;
    shared.cond.notify_all();
}

/// A running `zot host`. Killed (with SIGKILL) on drop if still running.
pub struct Host {
    child: Child,
    pid: u32,
    tx: Mutex<Option<Sender<WriteJob>>>,
    shared: Arc<Shared>,
    stderr: Arc<Mutex<Vec<u8>>>,
    next_id: AtomicU64,
    /// When the process was spawned.
    pub started: Instant,
    pub home: PathBuf,
    pub cwd: PathBuf,
    exit_status: Option<ExitStatus>,
    _scratch: Option<TempDir>,
}

impl Drop for Host {
    fn drop(&mut self) {
        if self.exit_status.is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

impl Host {
    /// The `zot` process id.
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// Peak resident memory of the `zot` process so far, in KiB.
    pub fn vm_hwm_kib(&self) -> u64 {
        proc_status_kib(self.pid, "VmHWM").unwrap_or_else(|| {
            panic!(
                "cannot read VmHWM of zot (pid {}){}",
                self.pid,
                self.diagnostics()
            )
        })
    }

    /// Writes one raw line (a newline is appended).
    pub fn send_raw(&self, line: &str) {
        let mut bytes = line.as_bytes().to_vec();
        bytes.push(b'\n');
        self.send_with(move |stdin| stdin.write_all(&bytes));
    }

    /// Has the writer thread run `write` on the host's stdin, after what was sent
    /// before and before what is sent after: to stream input too large to hold.
    pub fn send_with(
        &self,
        write: impl FnOnce(&mut dyn Write) -> std::io::Result<()> + Send + 'static,
    ) {
        match self.tx.lock().unwrap().as_ref() {
            Some(tx) => {
                let _ = tx.send(Box::new(write));
            }
            None => panic!("send after stdin was closed"),
        }
    }

    /// Sends a request `{"id":…, "type":ty, …fields}` and returns its id.
    pub fn send(&self, ty: &str, fields: Value) -> String {
        let id = format!("t{}", self.next_id.fetch_add(1, Ordering::SeqCst));
        self.send_with_id(&id, ty, fields);
        id
    }

    /// Sends a request with a chosen id.
    pub fn send_with_id(&self, id: &str, ty: &str, fields: Value) {
        let mut obj = match fields {
            Value::Object(m) => m,
            Value::Null => Map::new(),
            other => panic!("request fields must be an object, got {other}"),
        };
        obj.insert("id".into(), json!(id));
        obj.insert("type".into(), json!(ty));
        self.send_raw(&Value::Object(obj).to_string());
    }

    /// Waits for the response to `id`.
    pub fn wait_response(&self, id: &str, timeout: Duration) -> Value {
        self.try_wait_response(id, timeout).unwrap_or_else(|| {
            panic!(
                "no response to request {id:?} within {timeout:?}{}",
                self.diagnostics()
            )
        })
    }

    /// Waits for the response to `id`; `None` at the deadline.
    pub fn try_wait_response(&self, id: &str, timeout: Duration) -> Option<Value> {
        let deadline = Instant::now() + timeout;
        let mut st = self.shared.state.lock().unwrap();
        loop {
            if let Some(v) = st.responses.remove(id) {
                return Some(v);
            }
            let now = Instant::now();
            if now >= deadline || st.eof {
                return None;
            }
            st = self.shared.cond.wait_timeout(st, deadline - now).unwrap().0;
        }
    }

    /// Sends a request and waits (REQUEST_TIMEOUT) for its whole response.
    pub fn request(&self, ty: &str, fields: Value) -> Value {
        self.request_within(ty, fields, REQUEST_TIMEOUT)
    }

    pub fn request_within(&self, ty: &str, fields: Value, timeout: Duration) -> Value {
        let id = self.send(ty, fields);
        let r = self.wait_response(&id, timeout);
        assert_eq!(r["type"], "response", "not a response: {r}");
        assert_eq!(r["id"], json!(id), "response id: {r}");
        r
    }

    /// A request that must succeed; returns its `data`.
    pub fn ok(&self, ty: &str, fields: Value) -> Value {
        let r = self.request(ty, fields);
        assert_eq!(
            r["success"],
            json!(true),
            "{ty} failed: {r}{}",
            self.diagnostics()
        );
        assert_eq!(r["command"], json!(ty), "response command: {r}");
        r.get("data").cloned().unwrap_or(Value::Null)
    }

    /// A request that must fail; returns its `error`.
    pub fn fails(&self, ty: &str, fields: Value) -> String {
        let r = self.request(ty, fields);
        assert_eq!(r["success"], json!(false), "{ty} should have failed: {r}");
        r["error"]
            .as_str()
            .unwrap_or_else(|| panic!("a failed response carries a string error: {r}"))
            .to_string()
    }

    /// Waits for the first queued event matching `pred`, removes and returns it.
    pub fn wait_event(
        &self,
        what: &str,
        timeout: Duration,
        pred: impl Fn(&Value) -> bool,
    ) -> Value {
        self.try_wait_event(timeout, pred)
            .unwrap_or_else(|| panic!("no event {what} within {timeout:?}{}", self.diagnostics()))
    }

    /// Like [`Host::wait_event`], `None` at the deadline.
    pub fn try_wait_event(
        &self,
        timeout: Duration,
        pred: impl Fn(&Value) -> bool,
    ) -> Option<Value> {
        let deadline = Instant::now() + timeout;
        let mut st = self.shared.state.lock().unwrap();
        loop {
            if let Some(pos) = st.events.iter().position(&pred) {
                return st.events.remove(pos);
            }
            let now = Instant::now();
            if now >= deadline || st.eof {
                return None;
            }
            st = self.shared.cond.wait_timeout(st, deadline - now).unwrap().0;
        }
    }

    /// Queued events matching `pred`, oldest first, left in the queue.
    pub fn events(&self, pred: impl Fn(&Value) -> bool) -> Vec<Value> {
        let st = self.shared.state.lock().unwrap();
        st.events.iter().filter(|v| pred(v)).cloned().collect()
    }

    /// Drops (and counts) future events for which `keep` is false.
    pub fn set_event_filter(&self, keep: impl Fn(&Value) -> bool + Send + 'static) {
        self.shared.state.lock().unwrap().filter = Some(Box::new(keep));
    }

    /// Pings the host until `done` gives a value (it may wait a little each time), and
    /// fails after `limit`: returns the value, how many pings were answered, and the
    /// slowest. Shows that the host stays responsive while something heavy runs.
    pub fn ping_until<T>(
        &self,
        limit: Duration,
        mut done: impl FnMut(&Host) -> Option<T>,
    ) -> (T, u32, Duration) {
        let started = Instant::now();
        let (mut pings, mut worst) = (0, Duration::ZERO);
        loop {
            if let Some(value) = done(self) {
                return (value, pings, worst);
            }
            let p = Instant::now();
            assert_eq!(self.ok("ping", json!({}))["pong"], true);
            worst = worst.max(p.elapsed());
            pings += 1;
            assert!(
                started.elapsed() < limit,
                "not done after {limit:?}: {} events filtered{}",
                self.filtered_events(),
                self.diagnostics()
            );
        }
    }

    /// How many events the filter dropped.
    pub fn filtered_events(&self) -> u64 {
        self.shared.state.lock().unwrap().filtered
    }

    /// Waits for `host_ready` (READY_TIMEOUT) and returns its extension list.
    pub fn ready(&self) -> Vec<String> {
        self.ready_within(READY_TIMEOUT)
    }

    /// Waits for `host_ready` (READY_TIMEOUT) and returns it whole.
    pub fn ready_event(&self) -> Value {
        self.wait_event("host_ready", READY_TIMEOUT, |v| v["type"] == "host_ready")
    }

    pub fn ready_within(&self, timeout: Duration) -> Vec<String> {
        let ev = self.wait_event("host_ready", timeout, |v| v["type"] == "host_ready");
        ev["extensions"]
            .as_array()
            .unwrap_or_else(|| panic!("host_ready.extensions is an array: {ev}"))
            .iter()
            .map(|v| v.as_str().expect("extension names are strings").to_string())
            .collect()
    }

    /// Waits for a `notify` from `ext` whose message starts with `prefix`; returns the
    /// message.
    pub fn wait_notify(&self, ext: &str, prefix: &str) -> String {
        self.wait_notify_within(ext, prefix, EVENT_TIMEOUT)
    }

    pub fn wait_notify_within(&self, ext: &str, prefix: &str, timeout: Duration) -> String {
        let what = format!("notify from {ext} starting with {prefix:?}");
        let ev = self.wait_event(&what, timeout, |v| is_notify(v, ext, prefix));
        ev["message"].as_str().unwrap().to_string()
    }

    /// The `list` entry of `name`.
    pub fn entry(&self, name: &str) -> Value {
        let data = self.ok("list", json!({}));
        data["extensions"]
            .as_array()
            .unwrap_or_else(|| panic!("list.extensions is an array: {data}"))
            .iter()
            .find(|e| e["name"] == name)
            .cloned()
            .unwrap_or_else(|| panic!("no extension {name:?} in list: {data}"))
    }

    /// Calls a tool that must succeed at the host level; returns `data`.
    pub fn call_tool(&self, name: &str, args: Value) -> Value {
        self.ok("call_tool", json!({"name": name, "args": args}))
    }

    /// Closes the host's stdin (end of input).
    pub fn close_stdin(&self) {
        self.tx.lock().unwrap().take();
    }

    /// Waits for the process to exit.
    pub fn wait_exit(&mut self, timeout: Duration) -> ExitStatus {
        if let Some(s) = self.exit_status {
            return s;
        }
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(status) = self.child.try_wait().expect("try_wait") {
                self.exit_status = Some(status);
                return status;
            }
            if Instant::now() >= deadline {
                panic!(
                    "zot host did not exit within {timeout:?}{}",
                    self.diagnostics()
                );
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Sends `shutdown`, checks the response, waits for exit 0 and that stdout only ever
    /// carried JSON objects. Returns how long it took.
    pub fn shutdown(mut self) -> Duration {
        let t = Instant::now();
        let data = self.ok("shutdown", json!({}));
        assert!(data.is_object(), "shutdown data is an object: {data}");
        let status = self.wait_exit(Duration::from_secs(10));
        assert!(
            status.success(),
            "zot host exited with {status}{}",
            self.diagnostics()
        );
        self.assert_clean_stdout();
        t.elapsed()
    }

    /// Every stdout line so far was a JSON object.
    pub fn assert_clean_stdout(&self) {
        let st = self.shared.state.lock().unwrap();
        assert!(
            st.bad_stdout.is_empty(),
            "stdout carried non-JSON lines: {:?}",
            st.bad_stdout
        );
    }

    /// The extension's log, `$ZOT_HOME/logs/ext-<name>.log` ("" if missing).
    pub fn log(&self, name: &str) -> String {
        std::fs::read_to_string(self.home.join("logs").join(format!("ext-{name}.log")))
            .unwrap_or_default()
    }

    /// The last bytes of the host's stderr.
    pub fn stderr_tail(&self) -> String {
        let b = self.stderr.lock().unwrap();
        let start = b.len().saturating_sub(4096);
        String::from_utf8_lossy(&b[start..]).into_owned()
    }

    /// Everything useful when a wait fails.
    pub fn diagnostics(&self) -> String {
        let mut s = format!(
            "\n--- zot host pid {} ({:?} since start) stderr tail:\n{}",
            self.pid,
            self.started.elapsed(),
            self.stderr_tail()
        );
        if let Ok(dir) = std::fs::read_dir(self.home.join("logs")) {
            for e in dir.flatten() {
                let text = std::fs::read_to_string(e.path()).unwrap_or_default();
                let start = text.len().saturating_sub(1500);
                let start = (start..text.len())
                    .find(|&i| text.is_char_boundary(i))
                    .unwrap_or(0);
                s.push_str(&format!(
                    "\n--- {} (tail):\n{}",
                    e.path().display(),
                    &text[start..]
                ));
            }
        }
        let st = self.shared.state.lock().unwrap();
        s.push_str(&format!(
            "\n--- stdout: {} lines, eof {}, write error {:?}, {} unclaimed responses, \
             {} queued events; last events:\n",
            st.lines,
            st.eof,
            st.write_error,
            st.responses.len(),
            st.events.len()
        ));
        for ev in st.events.iter().rev().take(12).rev() {
            let mut t = ev.to_string();
            if t.len() > 400 {
                let mut cut = 400;
                while !t.is_char_boundary(cut) {
                    cut -= 1;
                }
                t.truncate(cut);
                t.push('…');
            }
            s.push_str(&t);
            s.push('\n');
        }
        s
    }
}

/// Is `v` a `notify` event from `ext` whose message starts with `prefix`?
pub fn is_notify(v: &Value, ext: &str, prefix: &str) -> bool {
    v["type"] == "notify"
        && v["extension"] == ext
        && v["message"].as_str().is_some_and(|m| m.starts_with(prefix))
}

/// Parses the JSON after `"<word> "` in a notify message (the test extensions report
/// frames they received that way).
pub fn notified_json(message: &str) -> Value {
    let (_, rest) = message
        .split_once(' ')
        .unwrap_or_else(|| panic!("no JSON in {message:?}"));
    serde_json::from_str(rest).unwrap_or_else(|e| panic!("bad JSON in {message:?}: {e}"))
}

/// Parses `started pid=<pid> cwd=<cwd>` into (pid, cwd).
pub fn parse_started(message: &str) -> (u32, String) {
    let rest = message
        .strip_prefix("started pid=")
        .unwrap_or_else(|| panic!("not a started note: {message:?}"));
    let (pid, cwd) = rest.split_once(" cwd=").expect("cwd= in started note");
    (pid.parse().expect("pid"), cwd.to_string())
}

/// Starts `b` with a 1 MiB frame cap (`--max-frame-bytes`): a 2 MiB result of its tool
/// `big` is dropped, and a 512 KiB one after it arrives whole. The host and that call's
/// data, for what each kind of extension checks besides.
pub fn the_frame_cap_drops_an_oversize_result(mut b: HostBuilder) -> (Host, Value) {
    b.arg("--max-frame-bytes").arg("1048576");
    let host = b.start();
    host.ready();
    let r = host.request(
        "call_tool",
        json!({"name": "big", "args": {"bytes": 2 * 1024 * 1024}, "timeout_ms": 1500}),
    );
    assert_eq!(
        r["success"], false,
        "a 2 MiB result over a 1 MiB cap is dropped: {r}"
    );
    let d = host.call_tool("big", json!({"bytes": 512 * 1024}));
    assert_eq!(first_text(&d).len(), 512 * 1024, "{d}");
    (host, d)
}

/// The text of the first content block of a `call_tool` result.
pub fn first_text(data: &Value) -> String {
    data["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no text block in {data}"))
        .to_string()
}

/// A string array field as a Vec (missing → empty).
pub fn str_list(v: &Value) -> Vec<String> {
    v.as_array()
        .map(|a| {
            a.iter()
                .filter_map(|x| x.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default()
}

/// The request target (`/path?query`) of a request head.
fn request_target(head: &[u8]) -> String {
    let head = String::from_utf8_lossy(head);
    head.split_whitespace().nth(1).unwrap_or("").to_string()
}

/// A status code and a body.
pub type Reply = (u16, String);

/// A local HTTP server on `127.0.0.1:<ephemeral port>`: answers each connection with what
/// its handler returns for the request target, recording the targets; it stops by itself
/// after `max` connections or a minute, whichever comes first.
pub struct LocalServer {
    pub port: u16,
    targets: Arc<Mutex<Vec<String>>>,
}

impl LocalServer {
    /// Answers every request with `200` and `body`.
    pub fn text(body: &'static str, max: usize) -> LocalServer {
        LocalServer::start(max, move |_| (200, body.to_string()))
    }

    /// Answers each request with `handler(target)`.
    pub fn start(max: usize, handler: impl Fn(&str) -> Reply + Send + 'static) -> LocalServer {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let port = listener.local_addr().unwrap().port();
        let targets = Arc::new(Mutex::new(Vec::new()));
        let seen = targets.clone();
        std::thread::spawn(move || {
            let deadline = Instant::now() + Duration::from_secs(60);
            while seen.lock().unwrap().len() < max && Instant::now() < deadline {
                let mut stream = match listener.accept() {
                    Ok((stream, _)) => stream,
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                        std::thread::sleep(Duration::from_millis(10));
                        continue;
                    }
                    Err(_) => return,
                };
                let _ = stream.set_nonblocking(false);
                let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
                let mut request = Vec::new();
                let mut buf = [0u8; 1024];
                while !request.windows(4).any(|w| w == b"\r\n\r\n") {
                    match stream.read(&mut buf) {
                        Ok(0) | Err(_) => break,
                        Ok(n) => request.extend_from_slice(&buf[..n]),
                    }
                }
                let target = request_target(&request);
                let (status, body) = handler(&target);
                seen.lock().unwrap().push(target);
                let _ = write!(
                    stream,
                    "HTTP/1.1 {status} X\r\nContent-Type: text/plain\r\nContent-Length: {}\r\n\
                     Connection: close\r\n\r\n{body}",
                    body.len()
                );
            }
        });
        LocalServer { port, targets }
    }

    /// How many requests it answered.
    pub fn hits(&self) -> usize {
        self.targets.lock().unwrap().len()
    }

    /// The request targets, in order.
    pub fn targets(&self) -> Vec<String> {
        self.targets.lock().unwrap().clone()
    }
}

// ---------------------------------------------------------------------------------------
// Scripted sessions: the same requests against different builds of one extension

/// One request of a script: type, fields, how many events it causes, and a subset of
/// `data` it must answer with (`null`: no check).
pub struct Step {
    pub ty: &'static str,
    pub fields: Value,
    pub events: usize,
    pub expect: Value,
}

/// The `intercept` request of a bash tool call `id` running `command`.
pub fn bash_call(id: &str, command: &str) -> Value {
    json!({"event": "tool_call", "tool_id": id, "tool_name": "bash",
           "tool_args": {"command": command}})
}

/// `session_start` emitted, delivered to one extension, which answers with one event.
pub fn session_start_step() -> Step {
    step(
        "emit",
        json!({"event": {"event": "session_start"}}),
        1,
        json!({"delivered": 1}),
    )
}

pub fn step(ty: &'static str, fields: Value, events: usize, expect: Value) -> Step {
    Step {
        ty,
        fields,
        events,
        expect,
    }
}

/// Every key of `expect` has the same value in `data`.
pub fn assert_subset(what: &str, data: &Value, expect: &Value) {
    if let Some(obj) = expect.as_object() {
        for (k, v) in obj {
            assert_eq!(&data[k], v, "{what}: field {k} of {data}");
        }
    }
}

/// Runs `steps` (each must succeed at the host level and answer its `expect`), waiting
/// for each step's events; `check` sees them. Then pings the host: every event it wrote
/// before the answer is read by then, and one it should not have written is a stray.
/// Returns the transcript: one line per response and per event (without `_seq`).
pub fn run_steps(
    host: &Host,
    label: &str,
    steps: Vec<Step>,
    check: impl Fn(&str, &Step, &[Value]),
) -> Vec<String> {
    let mut lines = Vec::new();
    for (i, s) in steps.into_iter().enumerate() {
        let r = host.request(s.ty, s.fields.clone());
        let what = format!("{label} step {i} {} {}", s.ty, s.fields);
        assert_eq!(r["success"], true, "{what}: {r}{}", host.diagnostics());
        let data = r.get("data").cloned().unwrap_or(Value::Null);
        assert_subset(&what, &data, &s.expect);
        lines.push(format!("#{i} {} {} -> {data}", s.ty, s.fields));
        let mut events = Vec::new();
        for n in 0..s.events {
            let mut ev = host.wait_event(&format!("event {n} of {what}"), EVENT_TIMEOUT, |_| true);
            ev.as_object_mut().unwrap().remove("_seq");
            events.push(ev);
        }
        check(&what, &s, &events);
        for ev in events {
            lines.push(format!("    {ev}"));
        }
    }
    // Nothing else arrived before the marker.
    assert_eq!(host.ok("ping", json!({}))["pong"], true);
    for mut ev in host.events(|_| true) {
        ev.as_object_mut().unwrap().remove("_seq");
        lines.push(format!("    unexpected {ev}"));
    }
    lines
}

/// Panics, showing where and all of them, unless every transcript equals the first.
/// Every labelled transcript is the same as the first.
#[track_caller]
pub fn assert_all_same<'a>(transcripts: impl IntoIterator<Item = (&'a str, &'a [String])>) {
    let all: Vec<(&str, &[String])> = transcripts.into_iter().collect();
    let (first, others) = all.split_first().expect("a transcript");
    assert_same_transcripts(*first, others);
}

/// `zot ext confine <dir>` with `home`, from `cwd`: it says `<name> is confined`.
#[track_caller]
pub fn confine_dir(home: &Path, cwd: &Path, dir: &Path, name: &str) {
    let out = zot(home, cwd, &["confine", dir.to_str().unwrap()]);
    assert_ok(&out);
    assert!(
        stdout(&out).contains(&format!("{name} is confined")),
        "{}",
        text(&out)
    );
}

pub fn assert_same_transcripts(first: (&str, &[String]), others: &[(&str, &[String])]) {
    let show = |label: &str, t: &[String]| format!("--- {label}:\n{}\n", t.join("\n"));
    let (base_label, base) = first;
    let mut report = String::new();
    for (label, other) in others {
        if *other != base {
            let at = base
                .iter()
                .zip(other.iter())
                .position(|(a, b)| a != b)
                .unwrap_or(base.len().min(other.len()));
            report.push_str(&format!(
                "{label} differs from {base_label} at line {at}:\n  {base_label}: {}\n  {label}: {}\n",
                base.get(at).map_or("<end>", String::as_str),
                other.get(at).map_or("<end>", String::as_str)
            ));
        }
    }
    if !report.is_empty() {
        let all: String = std::iter::once(first)
            .chain(others.iter().copied())
            .map(|(l, t)| show(l, t))
            .collect();
        panic!("transcripts differ:\n{report}{all}");
    }
    println!(
        "{}",
        show(&format!("transcript (all {})", others.len() + 1), base)
    );
}

// ---------------------------------------------------------------------------------------
// WebAssembly binary pieces, for components written by hand

/// Appends a section: its id, the size of `payload`, then `payload`.
pub fn section(id: u8, payload: &[u8], out: &mut Vec<u8>) {
    out.push(id);
    leb(payload.len() as u64, out);
    out.extend_from_slice(payload);
}

/// The toolchain the project pins (rust-toolchain.toml): a crate outside the repository
/// (a scaffold) is built with it too, so it has the wasm32-wasip2 target the build script
/// added.
pub fn pinned_toolchain() -> String {
    let text = std::fs::read_to_string(workspace().join("rust-toolchain.toml")).unwrap();
    text.lines()
        .find_map(|l| l.trim().strip_prefix("channel = "))
        .map(|c| c.trim_matches('"').to_string())
        .expect("rust-toolchain.toml names a channel")
}

/// Where the tests build Rust scaffolds, shared so the SDK's dependencies build once, and
/// the environment that makes those release builds quicker (the artifacts land where
/// they always do).
pub fn scaffold_build_env() -> Vec<(&'static str, String)> {
    vec![
        (
            "CARGO_TARGET_DIR",
            Path::new(env!("CARGO_TARGET_TMPDIR"))
                .join("zot-new-rust")
                .display()
                .to_string(),
        ),
        ("CARGO_PROFILE_RELEASE_LTO", "false".into()),
        ("CARGO_PROFILE_RELEASE_CODEGEN_UNITS", "16".into()),
        ("RUSTUP_TOOLCHAIN", pinned_toolchain()),
    ]
}

// ---------------------------------------------------------------------------------------
// A scratch layout for tests that run the `zot` binary

/// A scratch folder laid out as [`HostBuilder::in_dir`] makes it (`home`: ZOT_HOME, with
/// the shared compile cache linked in; `cwd`: the project). A test module that adds
/// helpers of its own names a marker type for them (`struct Shell; type Layout =
/// common::Layout<Shell>;`) and writes an `impl Layout` of its own: the modules share one
/// crate, so their helpers may share a name without colliding.
pub struct Layout<Helpers> {
    dir: TempDir,
    helpers: PhantomData<Helpers>,
}

impl<Helpers> Layout<Helpers> {
    pub fn new(tag: &str) -> Self {
        let dir = TempDir::new(tag);
        let _ = HostBuilder::in_dir(dir.path());
        Layout {
            dir,
            helpers: PhantomData,
        }
    }

    /// The scratch folder itself.
    pub fn root(&self) -> &Path {
        self.dir.path()
    }

    /// `ZOT_HOME`.
    pub fn home(&self) -> PathBuf {
        self.root().join("home")
    }

    /// The current directory of the runs: a project.
    pub fn cwd(&self) -> PathBuf {
        self.root().join("cwd")
    }
}
