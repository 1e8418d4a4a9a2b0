//! A `zot host` driven over pipes (docs/sidecar.md): [`HostBuilder`] lays out a fresh
//! scratch directory (a `ZOT_HOME`, a project `cwd`, and a folder for explicit
//! extensions), writes manifests, and starts it with piped stdin/stdout/stderr. A reader
//! thread parses every stdout line: responses are kept by `id`, everything else is queued
//! as an event. Every wait has a deadline and panics with the host's stderr tail, the
//! extension logs and the recent events.

use super::*;
use serde_json::{json, Map, Value};
use std::collections::{HashMap, VecDeque};
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Sender};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// The `--ready-timeout-ms` of a test's `zot host` unless it gives one: below
/// [`READY_TIMEOUT`], so `host_ready` always comes within the test's wait.
const HOST_READY_WAIT_MS: &str = "12000";

/// The host answers a ping, and the stdio extension beside a component its `echo_py`
/// tool: what a hostile component must not stop.
pub fn assert_steady(host: &Host) {
    assert_eq!(host.ok("ping", json!({}))["pong"], true);
    let d = host.call_tool("echo_py", json!({"x": 1}));
    assert_eq!(d["is_error"], false, "{d}");
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
