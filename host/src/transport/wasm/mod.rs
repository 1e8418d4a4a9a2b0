//! The sandboxed transport: a WASI preview-2 component run in-process by wasmtime, one
//! `Store` owned by one task. Frames travel through the `zot:extension` WIT world
//! (a *reactor*, one module per version) or through virtual stdin/stdout (a *command*,
//! `wasi:cli/run`); either way they reach the core as the same lines a subprocess would
//! print.
//!
//! A trap, a missed deadline or an exhausted memory limit ends the task and is reported
//! as the extension's exit ([`ExitReason::Trap`], [`ExitReason::DeadlineExceeded`],
//! [`ExitReason::MemoryLimit`]).

mod command;
mod disk;
mod files;
mod outgoing;
mod preview1;
mod preview1_quota;
mod preview1_stdin;
mod reactor;

use super::{
    Connection, Control, ExitReason, Inbound, LineGate, Outbound, INBOUND_QUEUE, OUTBOUND_QUEUE,
};
use crate::budget::{Budget, START_BUDGET};
use crate::component::cache::{self, Source};
use crate::component::compile::Compiler;
use crate::component::inspect::{Producer, Stdin};
use crate::component::{Code, ComponentError, World};
// Their home is the component layer; named here too for the callers that know them here.
pub use crate::component::{engine, Kind};
use crate::log::ExtLog;
use crate::sandbox::{
    HostPattern, InForce, Limit, Policy, PreparedWasi, Stdio, MAX_INSTANCES, MAX_TABLE_ELEMENTS,
};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use tokio::sync::{mpsc, oneshot, Notify};
use tokio::time::Instant;
use wasmtime::component::{ResourceTable, ResourceTableError};
use wasmtime::{Engine, ResourceLimiter, Store, UpdateDeadline};
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};
use wasmtime_wasi_http::{FieldMapError, WasiHttpCtx, WasiHttpCtxView, WasiHttpView};

/// What a loaded component runs with.
pub struct WasmSpec {
    pub policy: Policy,
    pub log: ExtLog,
    /// Whether what the guest writes (its stderr, its log lines) goes to `log`; when
    /// not, it is discarded, so it cannot fill the disk (the install probe).
    pub guest_output: bool,
    pub max_frame: usize,
}

/// A component (or preview-1 module) compiled (or taken from the cache) and checked,
/// not started yet.
pub struct Loaded {
    code: Code,
    runner: Runner,
    /// Who built it: Go's stdin is offered non-blocking, for its poller.
    producer: Producer,
    /// The SHA-256 of the component file (what a grant is pinned to).
    pub sha256: String,
}

impl Loaded {
    /// The toolchain that built a preview-1 module, as its custom sections say.
    pub fn built_with(&self) -> Option<&str> {
        self.producer.name.as_deref()
    }

    /// How a preview-1 module's stdin is served; `None` for a component.
    pub fn stdin(&self) -> Option<Stdin> {
        self.producer.stdin(self.kind())
    }

    /// A reactor, a command or a preview-1 module.
    pub fn kind(&self) -> Kind {
        self.runner.kind()
    }
}

/// Starts `wasm` with nothing granted (no data dir, no environment, no network, the
/// default memory), waits at most [`START_BUDGET`] after it was loaded for its first
/// frame, which must be `hello`, and stops it: the `(name, version)` it gave. The load
/// compiles it into the cache in `cache_dir` if needed. What the guest writes (stderr,
/// log lines) is discarded; `log` gets the host's diagnostics only. Needs a tokio
/// runtime with time enabled.
pub async fn probe_hello(
    wasm: &Path,
    cache_dir: &Path,
    compiler: &Compiler,
    log: ExtLog,
) -> Result<(String, String), String> {
    let loaded = prepare(wasm, cache_dir, compiler, None, &log).await?;
    let mut conn = start(
        loaded,
        WasmSpec {
            policy: Policy::nothing_granted(),
            log,
            guest_output: false,
            max_frame: zot_protocol::DEFAULT_MAX_FRAME,
        },
    )?;
    let first = tokio::time::timeout(START_BUDGET, async {
        loop {
            match conn.inbound.recv().await {
                Some(Inbound::Line(line, _)) => return Some(line),
                Some(Inbound::Oversize { .. }) => continue,
                None => return None,
            }
        }
    })
    .await;
    conn.control.kill();
    let line = match first {
        Err(_) => return Err(format!("no hello within {START_BUDGET:?} of its start")),
        Ok(None) => return Err("it stopped without saying hello".into()),
        Ok(Some(line)) => line,
    };
    match zot_protocol::ExtFrame::decode(&line) {
        Ok(zot_protocol::ExtFrame::Hello(h)) => Ok((h.name, h.version)),
        Ok(other) => Err(format!(
            "its first frame is {:?}, not hello",
            other.type_name()
        )),
        Err(e) => Err(format!("its first line is not a frame: {e}")),
    }
}

/// `prepare`, for a caller that only prints why not.
pub async fn load(
    wasm: &Path,
    cache_dir: &Path,
    compiler: &Compiler,
    log: &ExtLog,
) -> Result<Loaded, String> {
    Ok(prepare(wasm, cache_dir, compiler, None, log).await?)
}

/// Loads `wasm` (compiled by `compiler`, or from the compilation cache in `cache_dir`;
/// `expected`: the SHA-256 it should have, see [`cache::load`]) and checks that it is a
/// component this host runs; says how in `log`.
pub async fn prepare(
    wasm: &Path,
    cache_dir: &Path,
    compiler: &Compiler,
    expected: Option<&str>,
    log: &ExtLog,
) -> Result<Loaded, ComponentError> {
    let engine = engine()?;
    let loaded = cache::load(engine, wasm, cache_dir, compiler, expected).await?;
    if let Some(why) = &loaded.rejected {
        log.warn(&format!("cache entry not used: {why}"));
    }
    match loaded.source {
        Source::Shared => log.info(&format!(
            "reused {}, already compiled in this process",
            wasm.display()
        )),
        Source::Compiled(t) => log.info(&format!(
            "compiled {} in {} ms (not cached)",
            wasm.display(),
            t.as_millis()
        )),
        Source::Cached(t) => log.info(&format!(
            "loaded {} from the compilation cache in {} µs",
            wasm.display(),
            t.as_micros()
        )),
    }
    let runner = runner_of(engine, &loaded.code)?;
    Ok(Loaded {
        code: loaded.code,
        runner,
        producer: loaded.producer,
        sha256: loaded.sha256,
    })
}

/// Starts a loaded component with `spec`'s policy: the connection to it.
pub fn start(loaded: Loaded, spec: WasmSpec) -> Result<Connection, ComponentError> {
    let engine = engine()?;
    let runner = loaded.runner;
    let (out_tx, out_rx) = mpsc::channel::<Outbound>(OUTBOUND_QUEUE);
    let (in_tx, in_rx) = mpsc::channel::<Inbound>(INBOUND_QUEUE);
    let (exit_tx, exit_rx) = oneshot::channel();
    let stop = Arc::new(Stop::default());
    let wasi = spec
        .policy
        .wasi()
        .map_err(|e| ComponentError::Io(format!("cannot prepare the sandbox: {e}")))?;
    let disk = match &spec.policy.data_dir {
        None => None,
        Some(dir) => Some(
            disk::Usage::new(dir, spec.policy.limits.disk_mb, spec.log.clone())
                .map_err(|e| ComponentError::Io(format!("cannot open the data directory: {e}")))?,
        ),
    };
    let guest = Guest {
        engine: engine.clone(),
        polled_stdin: loaded.stdin() == Some(Stdin::Polled),
        polled: None,
        code: loaded.code,
        wasi,
        stdio: Stdio::default(),
        memory_bytes: spec.policy.memory_bytes,
        limits: spec.policy.limits,
        http: spec.policy.http,
        log: spec.log,
        guest_output: spec.guest_output,
        max_frame: spec.max_frame,
        to_host: in_tx,
        stop: stop.clone(),
        disk: disk.clone(),
    };
    let watched = stop.clone();
    tokio::spawn(async move {
        if let Some(disk) = disk.clone() {
            // Off the async threads: a large data directory takes a while to walk.
            let _ = tokio::task::spawn_blocking(move || disk.measure_first()).await;
        }
        let run = async {
            match runner {
                Runner::Reactor(version) => version.run(guest, out_rx).await,
                Runner::Command | Runner::Preview1 => command::run(guest, out_rx).await,
            }
        };
        // The quota watcher ends only by stopping the guest, and is dropped with it.
        let exit = match disk {
            None => run.await,
            Some(disk) => {
                tokio::select! {
                    exit = run => exit,
                    () = disk.watch(&watched) => unreachable!("the watcher never ends"),
                }
            }
        };
        let _ = exit_tx.send(exit);
    });
    Ok(Connection {
        outbound: out_tx.into(),
        inbound: in_rx.into(),
        exit: exit_rx,
        control: Box::new(StopHandle {
            stop,
            preview1: (runner.kind() == Kind::Preview1).then_some(loaded.producer),
        }),
    })
}

/// How a component runs: as a reactor of a `zot:extension` version this host speaks, or
/// as a command; a core module, as a preview-1 command.
#[derive(Clone, Copy)]
enum Runner {
    Reactor(&'static reactor::Version),
    Command,
    Preview1,
}

impl Runner {
    fn kind(self) -> Kind {
        match self {
            Runner::Reactor(_) => Kind::Reactor,
            Runner::Command => Kind::Command,
            Runner::Preview1 => Kind::Preview1,
        }
    }
}

/// Tells a reactor (and its version) from a command by its exports, and a preview-1
/// command module by its imports and exports; refuses one built for another version of
/// the `zot:extension` world, or none of them.
fn runner_of(engine: &Engine, code: &Code) -> Result<Runner, ComponentError> {
    let world = match code {
        Code::Component(component) => {
            let ty = component.component_type();
            let exports: Vec<String> = ty
                .exports(engine)
                .map(|(name, _)| name.to_string())
                .collect();
            crate::component::wit::world_of(&exports)?
        }
        Code::Module(module) => crate::component::inspect::preview1_world(
            module.exports().map(|e| e.name()),
            module.imports().map(|i| i.module()),
        )?,
    };
    Ok(match world {
        World::Reactor(wit) => Runner::Reactor(reactor::version(wit)),
        World::Command => Runner::Command,
        World::Preview1 => Runner::Preview1,
    })
}

/// What the task needs to run a guest.
struct Guest {
    engine: Engine,
    /// A preview-1 module whose runtime polls stdin (Go's): stdin says it is
    /// non-blocking, and a read with nothing queued returns `again` instead of waiting.
    polled_stdin: bool,
    /// That stdin, set by the command runner.
    polled: Option<command::FrameStdin>,
    code: Code,
    wasi: PreparedWasi,
    /// The guest's stdio, set by the kind of component that has one.
    stdio: Stdio,
    memory_bytes: usize,
    /// The host-side caps in force.
    limits: InForce,
    /// Where outgoing HTTP may go.
    http: Vec<HostPattern>,
    log: ExtLog,
    /// [`WasmSpec::guest_output`].
    guest_output: bool,
    max_frame: usize,
    to_host: mpsc::Sender<Inbound>,
    stop: Arc<Stop>,
    /// The `/data` quota's count, if it has a data directory.
    disk: Option<Arc<disk::Usage>>,
}

/// The host's requests to stop a guest, seen by the task and the epoch callback.
#[derive(Default)]
struct Stop {
    /// Input closed: finish the queued frames, then end.
    close_input: Arc<Notify>,
    /// Stop now.
    kill: Notify,
    killed: AtomicBool,
    /// A preview-1 module is in a read of stdin that waits for input.
    reading_stdin: AtomicBool,
    /// Why it is stopped (the first reason given wins); unset: [`ExitReason::StoppedByHost`].
    reason: Mutex<Option<ExitReason>>,
}

impl Stop {
    /// Stops the guest now, for `reason` unless it is already being stopped.
    fn stop_for(&self, reason: ExitReason) {
        self.reason.lock().unwrap().get_or_insert(reason);
        self.killed.store(true, Ordering::SeqCst);
        self.kill.notify_one();
    }

    /// Why it was stopped.
    fn reason(&self) -> ExitReason {
        self.reason
            .lock()
            .unwrap()
            .clone()
            .unwrap_or(ExitReason::StoppedByHost)
    }
}

struct StopHandle {
    stop: Arc<Stop>,
    /// Who built a preview-1 module, named by [`Control::stalled`]; `None` for a component.
    preview1: Option<Producer>,
}

impl Control for StopHandle {
    fn close_input(&self) {
        self.stop.close_input.notify_one();
    }
    fn terminate(&self) {
        self.kill();
    }
    fn kill(&self) {
        self.stop.stop_for(ExitReason::StoppedByHost);
    }
    /// A preview-1 module waiting in a read of stdin: nothing else of it runs until a
    /// frame comes, so an answer its runtime left to another thread of its own never
    /// comes (a runtime that polls stdin, Go's, is never in such a read).
    fn stalled(&self) -> Option<String> {
        let producer = self.preview1.as_ref()?;
        if !self.stop.reading_stdin.load(Ordering::SeqCst) {
            return None;
        }
        let by = producer
            .name
            .as_deref()
            .map_or(String::new(), |name| format!(" (built with {name})"));
        Some(format!(
            "the preview-1 module{by} is waiting in a read of stdin with the call \
             unanswered; that read stops the whole module, so an answer left to another \
             goroutine or thread of its runtime never runs: answer each frame before \
             reading the next (Go's own runtime, GOOS=wasip1, is served: \
             docs/writing-extensions.md)"
        ))
    }
}

/// The deadline of the work the guest is doing now; `None` while it waits for input.
///
/// Measured on the runtime's clock (`tokio::time::Instant`): the wall clock, unless a
/// test paused it, where advancing the paused clock is time passing for the deadline.
/// The epoch ticker ([`engine`]) only makes a running guest check it, every tick.
#[derive(Default)]
struct Deadline(Mutex<Option<Instant>>);

impl Deadline {
    fn set(&self, budget: Budget) {
        *self.0.lock().unwrap() = Some(Instant::now() + budget.duration());
    }
    /// A frame taken while the guest is still busy with earlier ones (it reads ahead,
    /// e.g. to see a `tool_cancel` mid-call): the deadline becomes the later of the two,
    /// so reading ahead never cuts the work in hand short.
    fn extend(&self, budget: Budget) {
        let new = Instant::now() + budget.duration();
        let mut deadline = self.0.lock().unwrap();
        *deadline = Some(deadline.map_or(new, |d| d.max(new)));
    }
    fn clear(&self) {
        *self.0.lock().unwrap() = None;
    }
    fn passed(&self) -> bool {
        self.0.lock().unwrap().is_some_and(|d| Instant::now() >= d)
    }
    /// The guest starts waiting for input: no deadline runs until the wait ends. Unless
    /// the wait is [`Suspended::idle`] (it ended with input), dropping the guard puts
    /// back the deadline that was in force before it.
    fn suspend(self: &Arc<Self>) -> Suspended {
        let before = self.0.lock().unwrap().take();
        Suspended {
            deadline: self.clone(),
            before: Some(before),
        }
    }
}

/// A wait for input during which no deadline runs (see [`Deadline::suspend`]).
///
/// A wait that ends without input (another pollable in the same `poll` was ready first,
/// `pollable.ready()` only looked, the call was cancelled) was not idleness: the guest
/// runs on under the deadline it had before, and the time it waited counts, as any other
/// wait in the middle of work does. So waking up with a timer never runs without a
/// deadline, and a loop of such waits ends when that deadline passes.
#[must_use]
struct Suspended {
    deadline: Arc<Deadline>,
    /// The deadline to put back; `None` once the wait was idle.
    before: Option<Option<Instant>>,
}

impl Suspended {
    /// The wait ended with input: it was idle, and the deadline stays off until the
    /// input's budget starts.
    fn idle(mut self) {
        self.before = None;
    }
}

impl Drop for Suspended {
    fn drop(&mut self) {
        if let Some(before) = self.before.take() {
            *self.deadline.0.lock().unwrap() = before;
        }
    }
}

/// Memory, table and instance limits that remember a refused memory growth, so the
/// trap that follows can be reported as `memory limit`. The memory limit is for all of
/// a component's linear memories together.
struct Limiter {
    memory_bytes: usize,
    memory_used: usize,
    memory_refused: bool,
}

impl ResourceLimiter for Limiter {
    fn memory_growing(
        &mut self,
        current: usize,
        desired: usize,
        maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        // `desired` is the guest's to choose: near `usize::MAX` it is refused, not a panic.
        let total = (self.memory_used - current.min(self.memory_used)).saturating_add(desired);
        let allow = total <= self.memory_bytes && maximum.is_none_or(|m| desired <= m);
        if allow {
            self.memory_used = total;
        }
        self.memory_refused |= !allow;
        Ok(allow)
    }

    fn table_growing(
        &mut self,
        _current: usize,
        desired: usize,
        maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        Ok(desired <= MAX_TABLE_ELEMENTS && maximum.is_none_or(|m| desired <= m))
    }

    fn instances(&self) -> usize {
        MAX_INSTANCES
    }
    fn tables(&self) -> usize {
        MAX_INSTANCES
    }
    fn memories(&self) -> usize {
        MAX_INSTANCES
    }
}

/// Everything a guest's store holds.
struct GuestData {
    /// The WASI context (empty for a preview-1 module, which has [`GuestData::p1`]).
    wasi: WasiCtx,
    /// A preview-1 module's WASI context.
    p1: Option<wasmtime_wasi::p1::WasiP1Ctx>,
    /// Which of a preview-1 module's descriptors are still its stdio.
    p1_stdio: preview1_quota::Stdio,
    /// The trampoline to a preview-1 module's original functions (`preview1_quota`).
    p1_trampoline: Option<wasmtime::Instance>,
    /// A preview-1 module's stdin when its runtime polls it ([`Guest::polled_stdin`]).
    p1_polled_stdin: Option<command::FrameStdin>,
    table: ResourceTable,
    http: WasiHttpCtx,
    http_gate: outgoing::HttpGate,
    /// The resource-table capacity (`limits.resources`), to name it when it is reached.
    resources: u64,
    /// The size of one fields resource (`limits.field_kib`), to name it when it is reached.
    field_kib: u64,
    limiter: Limiter,
    deadline: Arc<Deadline>,
    stop: Arc<Stop>,
    log: ExtLog,
    /// [`WasmSpec::guest_output`].
    guest_output: bool,
    max_frame: usize,
    gate: LineGate,
    to_host: mpsc::Sender<Inbound>,
    /// [`Guest::disk`].
    disk: Option<Arc<disk::Usage>>,
}

impl WasiView for GuestData {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

/// `wasi:http` is linked for every component, whatever it was granted: with no entry in
/// force every request is refused (and logged) by [`outgoing::HttpGate`], so a component
/// that merely imports `wasi:http` still starts.
impl WasiHttpView for GuestData {
    fn http(&mut self) -> WasiHttpCtxView<'_> {
        WasiHttpCtxView {
            ctx: &mut self.http,
            table: &mut self.table,
            hooks: &mut self.http_gate,
        }
    }
}

/// The WASI preview-2 interfaces, `wasi:filesystem/types` charged to the quota
/// (`files.rs`), and `wasi:http` (outgoing only), async.
fn add_wasi_to_linker(linker: &mut wasmtime::component::Linker<GuestData>) -> wasmtime::Result<()> {
    wasmtime_wasi::p2::add_to_linker_async(linker)?;
    files::add_to_linker(linker, |d| files::Files {
        fs: wasmtime_wasi::filesystem::WasiFilesystemCtxView {
            ctx: d.wasi.filesystem(),
            table: &mut d.table,
        },
        usage: d.disk.as_ref(),
    })?;
    wasmtime_wasi_http::p2::add_only_http_to_linker_async(linker)
}

impl GuestData {
    /// A frame from the guest enters the same path a subprocess's stdout feeds.
    async fn frame_to_host(&mut self, frame: Vec<u8>) -> wasmtime::Result<()> {
        let item = if frame.len() > self.max_frame {
            Inbound::Oversize {
                len: frame.len(),
                id: zot_protocol::leading_id(&frame[..self.max_frame]),
            }
        } else {
            self.gate.admit(frame).await
        };
        self.to_host
            .send(item)
            .await
            .map_err(|_| wasmtime::Error::msg("the host closed the connection"))
    }
}

impl Guest {
    /// A store with the sandbox's WASI context, limits and deadline callback.
    fn store(self, deadline: Arc<Deadline>) -> (Store<GuestData>, Code, ExtLog) {
        let mut table = ResourceTable::new();
        table.set_max_capacity(self.limits.resources as usize);
        let mut http = WasiHttpCtx::new();
        http.set_field_size_limit((self.limits.field_kib as usize) << 10);
        let (wasi, p1) = match self.code {
            Code::Component(_) => (self.wasi.build(self.stdio), None),
            Code::Module(_) => {
                let mut p1 = self.wasi.build_p1(self.stdio);
                // Its descriptors are resources of its own table: the same cap.
                p1.ctx()
                    .table
                    .set_max_capacity(self.limits.resources as usize);
                (WasiCtx::builder().build(), Some(p1))
            }
        };
        let data = GuestData {
            wasi,
            p1,
            p1_stdio: preview1_quota::Stdio::default(),
            p1_trampoline: None,
            p1_polled_stdin: self.polled.clone(),
            table,
            http,
            http_gate: outgoing::HttpGate::new(
                self.http,
                self.log.clone(),
                self.limits.http_requests as usize,
            ),
            resources: self.limits.resources,
            field_kib: self.limits.field_kib,
            limiter: Limiter {
                memory_bytes: self.memory_bytes,
                memory_used: 0,
                memory_refused: false,
            },
            deadline,
            stop: self.stop,
            log: self.log.clone(),
            guest_output: self.guest_output,
            max_frame: self.max_frame,
            gate: LineGate::default(),
            to_host: self.to_host,
            disk: self.disk,
        };
        let mut store = Store::new(&self.engine, data);
        store.limiter(|d| &mut d.limiter);
        store.set_epoch_deadline(1);
        store.epoch_deadline_callback(|ctx| {
            let data = ctx.data();
            if data.stop.killed.load(Ordering::SeqCst) {
                return Err(wasmtime::Error::msg(data.stop.reason()));
            }
            if data.deadline.passed() {
                return Err(wasmtime::Error::msg(ExitReason::DeadlineExceeded));
            }
            Ok(UpdateDeadline::Yield(1))
        });
        (store, self.code, self.log)
    }
}

/// Instantiates the guest (`instantiate`, given the store) under the start budget
/// ([`Budget::START`]), or stops with it: the instance, or why the guest did not start.
async fn instantiate_or_stop<T>(
    store: &mut Store<GuestData>,
    deadline: &Deadline,
    stop: &Stop,
    instantiate: impl AsyncFnOnce(&mut Store<GuestData>) -> wasmtime::Result<T>,
) -> Result<T, ExitReason> {
    deadline.set(Budget::START);
    let started = tokio::select! {
        r = instantiate(&mut *store) => r,
        () = stop.kill.notified() => return Err(stop.reason()),
    };
    started.map_err(|e| exit_for(store, &e))
}

/// The exit report for a guest call that failed with `error`: the guest's exit status,
/// the host's reason for stopping it (raised by the epoch callback), or a trap, reported
/// as `memory limit` if it followed a refused memory growth, and as the limit exceeded
/// if the host could not add to its full resource table or to a full `wasi:http` fields
/// resource (wasmtime-wasi traps on both).
fn exit_for(store: &Store<GuestData>, error: &wasmtime::Error) -> ExitReason {
    let table_full = error.chain().any(|e| {
        matches!(
            e.downcast_ref::<ResourceTableError>(),
            Some(ResourceTableError::Full)
        )
    });
    let fields_full = error.chain().any(|e| {
        matches!(
            e.downcast_ref::<FieldMapError>(),
            Some(FieldMapError::TotalSizeTooBig | FieldMapError::TooManyFields)
        )
    });
    if let Some(exit) = error.downcast_ref::<wasmtime_wasi::I32Exit>() {
        ExitReason::Exited(exit.0)
    } else if let Some(stopped) = error.downcast_ref::<ExitReason>() {
        stopped.clone()
    } else if table_full {
        ExitReason::LimitExceeded(Limit::Resources.named(store.data().resources))
    } else if fields_full {
        ExitReason::LimitExceeded(Limit::FieldKib.named(store.data().field_kib))
    } else if store.data().limiter.memory_refused {
        ExitReason::MemoryLimit
    } else if let Some(trap) = error.downcast_ref::<wasmtime::Trap>() {
        ExitReason::Trap(trap.to_string())
    } else {
        ExitReason::Trap(format!("{error:#}"))
    }
}

/// Writes the guest's own log lines.
fn guest_log(log: &ExtLog, level: &str, message: &str) {
    let level = match level {
        "debug" | "info" | "warn" | "error" => level,
        _ => "info",
    };
    log.guest(level, message);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_memory_growth_to_any_size_is_refused_not_a_panic() {
        let mut limiter = Limiter {
            memory_bytes: 64 << 20,
            memory_used: 1 << 20,
            memory_refused: false,
        };
        assert!(!limiter.memory_growing(0, usize::MAX, None).unwrap());
        assert!(limiter.memory_refused);
        assert!(limiter.memory_growing(1 << 20, 2 << 20, None).unwrap());
        assert_eq!(limiter.memory_used, 2 << 20);
    }

    #[test]
    fn a_wait_for_input_suspends_the_deadline_and_puts_it_back_unless_input_ended_it() {
        let deadline = Arc::new(Deadline::default());
        deadline.set(Budget::SPENT);
        let before = *deadline.0.lock().unwrap();
        let waiting = deadline.suspend();
        assert!(!deadline.passed(), "no deadline runs while it waits");
        // Something else ended the wait: the old deadline is back, the wait counted.
        drop(waiting);
        assert_eq!(*deadline.0.lock().unwrap(), before);
        assert!(deadline.passed());
        // Input ended it: off until the input's budget starts.
        deadline.suspend().idle();
        assert_eq!(*deadline.0.lock().unwrap(), None);
    }
}
