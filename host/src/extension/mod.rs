//! One connection's protocol state: handshake, registrations, subscriptions, pending
//! calls with deadlines, the event queue, and the exit. Transport-agnostic: it only sees
//! a [`Connection`].

use crate::budget::{Budget, Timeouts};
use crate::events::{json_len, EventQueue, HostEvent, Origin};
use crate::log::{preview, ExtLog};
use crate::transport::{Connection, Control, ExitReason, Inbound, Outbound, OUTBOUND_QUEUE};
use serde_json::Value;
use std::collections::BTreeSet;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};
use tokio::sync::{mpsc, oneshot, watch, Semaphore};
use zot_protocol::{
    encode, CommandInvoked, CommandResponse, Empty, Encoded, Event, EventInterceptResponse,
    ExtFrame, HelloAck, HostFrame, RegisterCommand, RegisterTool, ToolCall, ToolCancel, ToolResult,
    EVENTS, INTERCEPTABLE,
};

/// How many one-way frames (events, panel keys, resizes, closes) may wait for one
/// extension. Beyond it the oldest waiting event is dropped; a panel frame that finds no
/// event to make room fails with [`CallError::QueueFull`].
pub const EVENT_QUEUE: usize = 1024;
/// How many bytes of one-way frames may wait for one extension in its queue, and again
/// in its transport's queue. Beyond it the oldest waiting event is dropped, as beyond
/// [`EVENT_QUEUE`]; an event larger than this alone is dropped, a panel frame refused.
pub const EVENT_QUEUE_BYTES: usize = 16 * 1024 * 1024;
/// The least a one-way frame counts for against [`EVENT_QUEUE_BYTES`] in the transport's
/// queue, so that one-way frames fill at most half of it ([`OUTBOUND_QUEUE`]).
const ONE_WAY_SHARE: usize = EVENT_QUEUE_BYTES / (OUTBOUND_QUEUE / 2);
use crate::caps::registrations::Registered;
use one_way::OneWay;
use pending::{Answered, Kind, Pending};

mod one_way;
mod pending;
/// How many of its own `call_tool` requests one extension may have waiting; beyond it
/// they are answered with an error at once.
pub const CALLS_IN_FLIGHT: usize = 64;
/// How many bytes of `hello` (as JSON) are kept for listings and `zot ext check`; of a
/// larger one only the first 256 characters of its name and version are kept.
pub const HELLO_BYTES: usize = 64 * 1024;
/// How many protocol violations are kept in [`Status::violations`] (all are logged).
pub const VIOLATIONS_KEPT: usize = 64;
/// Silence after the last frame that counts as `ready` for extensions that never send it.
pub const READY_SILENCE: Duration = Duration::from_millis(250);
/// How long a notification may wait for the application to make room before the oldest
/// are dropped.
pub const NOTE_WAIT: Duration = Duration::from_secs(1);
/// How long an extension whose output closed may take to exit before it is killed.
const EXIT_AFTER_EOF: Duration = Duration::from_millis(100);

/// Where an extension is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Spawned, not yet ready.
    Starting,
    /// Sent `ready`, or was silent for 250 ms after its last frame.
    Ready,
    /// Gone: its transport closed.
    Exited,
}

/// A call the host could not complete. Its `Display` names the extension and the target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CallError {
    /// No extension provides it.
    NotFound(String),
    /// The extension exited before answering.
    Exited {
        extension: String,
        target: String,
        reason: String,
    },
    /// No answer within the deadline.
    Timeout {
        extension: String,
        target: String,
        after: Duration,
    },
    /// The extension is not reading its input fast enough.
    QueueFull { extension: String, target: String },
    /// The request itself is wrong (e.g. tool arguments that are not an object).
    Invalid(String),
}

impl fmt::Display for CallError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CallError::NotFound(what) => write!(f, "no {what}"),
            CallError::Exited {
                extension,
                target,
                reason,
            } => write!(
                f,
                "{target} failed: extension {extension:?} exited ({reason})"
            ),
            CallError::Timeout {
                extension,
                target,
                after,
            } => write!(
                f,
                "{target} timed out after {} ms: extension {extension:?} did not answer",
                after.as_millis()
            ),
            CallError::Invalid(why) => f.write_str(why),
            CallError::QueueFull { extension, target } => write!(
                f,
                "{target} failed: extension {extension:?} is not reading its input (queue full)"
            ),
        }
    }
}

impl std::error::Error for CallError {}

/// How an extension became ready.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ReadyBy {
    /// It sent `ready`.
    Frame,
    /// It was silent for 250 ms after its last frame.
    Silence,
}

/// What is known about an extension, for listings and `zot ext check`.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct Status {
    pub hello: Option<zot_protocol::Hello>,
    pub events: BTreeSet<String>,
    pub intercept: BTreeSet<String>,
    /// Time from spawn to `hello`.
    pub hello_after: Option<Duration>,
    /// Time from spawn to ready.
    pub ready_after: Option<Duration>,
    pub ready_by: Option<ReadyBy>,
    /// Protocol violations seen (also in the log).
    pub violations: Vec<String>,
    pub exit: Option<ExitReason>,
    /// Events dropped because the extension's queue was full.
    pub events_dropped: u64,
    /// Notifications dropped because the application did not read them in time.
    pub notes_dropped: u64,
    /// Registrations refused because they were over `REGISTRATIONS` or
    /// `REGISTRATION_BYTES`.
    pub registrations_refused: u64,
    /// The signal it took to stop it (`SIGTERM`, `SIGKILL`) when it ignored `shutdown`.
    pub forced: Option<&'static str>,
}

/// The host side that an extension reports to.
pub(crate) trait Hub: Send + Sync + 'static {
    /// A command or tool registration arrived.
    fn register(&self, ext: &Extension, registration: Registration);
    /// The extension became ready: its initial registrations are complete.
    fn ready(&self, ext: &Extension);
    /// The extension is gone: drop its registrations.
    fn exited(&self, ext: &Extension);
    /// The extension asked the host to run a tool (`call_tool`).
    fn call_tool(
        &self,
        from: &Extension,
        name: String,
        args: Value,
    ) -> Pin<Box<dyn Future<Output = Result<ToolResult, CallError>> + Send>>;
    /// The deadlines each frame's [`Budget`] is made from.
    fn timeouts(&self) -> &Timeouts;
}

/// A registration frame, as the hub receives it.
pub(crate) enum Registration {
    Command(RegisterCommand),
    Tool(RegisterTool),
}

/// A running extension. Cheap to clone; every clone is the same connection.
#[derive(Clone)]
pub struct Extension {
    inner: Arc<Inner>,
}

struct Inner {
    name: String,
    rank: usize,
    log: ExtLog,
    outbound: crate::transport::FrameSink,
    /// What each frame's [`Budget`] is made from.
    timeouts: Timeouts,
    control: Box<dyn Control>,
    pending: Pending,
    phase: watch::Sender<Phase>,
    status: Mutex<Status>,
    one_way: OneWay,
    /// Bytes of one-way frames the transport may hold ([`EVENT_QUEUE_BYTES`]).
    transport_room: Arc<Semaphore>,
    closed: AtomicBool,
    notes: EventQueue,
    me: Weak<Inner>,
    /// The size of each registration in force, by kind and name.
    registered: Mutex<Registered>,
    /// Its own `call_tool` requests waiting for an answer.
    calls: Arc<Semaphore>,
}

impl Origin for Inner {
    fn dropped(&self) {
        let n = {
            let mut st = self.status.lock().unwrap();
            st.notes_dropped += 1;
            st.notes_dropped
        };
        if n.is_power_of_two() {
            self.log.warn(&format!(
                "the application is not reading its notifications (the queue is full): \
                 {n} notifications dropped so far, the oldest first"
            ));
        }
    }
}

/// Removes a pending call when its caller stops waiting, whatever the reason.
/// A tool call abandoned this way (timeout, or the caller gave up) gets a `tool_cancel`.
struct PendingGuard<'a> {
    ext: &'a Inner,
    id: String,
    cancel_tool: bool,
    /// Its answer came: nothing is left in `pending`.
    answered: bool,
}

impl Drop for PendingGuard<'_> {
    fn drop(&mut self) {
        if self.answered {
            return;
        }
        if self.ext.pending.forget(&self.id) && self.cancel_tool {
            let cancel = HostFrame::ToolCancel(ToolCancel {
                id: std::mem::take(&mut self.id),
                extra: Default::default(),
            });
            let _ = self.ext.outbound.try_send(self.ext.outbound(&cancel, None));
        }
    }
}

impl Extension {
    /// Takes over `conn` and runs the protocol for it until it closes. `rank` is the load
    /// order (lower wins name conflicts); host notifications go to `notes`.
    pub(crate) fn start(
        name: String,
        rank: usize,
        log: ExtLog,
        conn: Connection,
        hello_ack: HelloAck,
        hub: Arc<dyn Hub>,
        notes: EventQueue,
    ) -> Extension {
        let Connection {
            outbound,
            inbound,
            exit,
            control,
        } = conn;
        let ext = Extension {
            inner: Arc::new_cyclic(|me| Inner {
                name,
                rank,
                log,
                outbound,
                timeouts: hub.timeouts().clone(),
                control,
                pending: Pending::new(),
                phase: watch::channel(Phase::Starting).0,
                status: Mutex::new(Status::default()),
                one_way: OneWay::default(),
                transport_room: Arc::new(Semaphore::new(EVENT_QUEUE_BYTES)),
                closed: AtomicBool::new(false),
                notes,
                me: me.clone(),
                registered: Mutex::new(Registered::default()),
                calls: Arc::new(Semaphore::new(CALLS_IN_FLIGHT)),
            }),
        };
        tokio::spawn(ext.clone().pump_one_way());
        tokio::spawn(ext.clone().run(inbound, exit, hello_ack, hub));
        ext
    }

    /// The manifest's name.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// Whether `other` is this same connection.
    pub fn is(&self, other: &Extension) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }

    /// Load order; lower wins name conflicts.
    pub fn rank(&self) -> usize {
        self.inner.rank
    }

    /// The extension's log.
    pub fn log(&self) -> &ExtLog {
        &self.inner.log
    }

    /// Where it is in its life.
    pub fn phase(&self) -> Phase {
        *self.inner.phase.borrow()
    }

    /// A snapshot of what is known about it.
    pub fn status(&self) -> Status {
        self.inner.status.lock().unwrap().clone()
    }

    /// Whether it subscribed to `event`.
    pub fn subscribes(&self, event: &str) -> bool {
        self.inner.status.lock().unwrap().events.contains(event)
    }

    /// Whether it intercepts `event`.
    pub fn intercepts(&self, event: &str) -> bool {
        self.inner.status.lock().unwrap().intercept.contains(event)
    }

    /// Waits until it is ready or gone, at most until `deadline`.
    pub async fn wait_ready(&self, deadline: tokio::time::Instant) -> Phase {
        let mut rx = self.inner.phase.subscribe();
        let _ = tokio::time::timeout_at(deadline, rx.wait_for(|p| *p != Phase::Starting)).await;
        self.phase()
    }

    /// Waits until it is gone, at most `limit`; true if it is.
    async fn wait_exited(&self, limit: Duration) -> bool {
        let mut rx = self.inner.phase.subscribe();
        let exited = tokio::time::timeout(limit, rx.wait_for(|p| *p == Phase::Exited)).await;
        exited.is_ok()
    }

    /// Runs `/name args`; waits at most `timeout` for the `command_response`.
    pub async fn invoke_command(
        &self,
        name: &str,
        args: &str,
        timeout: Duration,
    ) -> Result<CommandResponse, CallError> {
        let target = || format!("command \"/{name}\"");
        let frame = |id| {
            HostFrame::CommandInvoked(CommandInvoked {
                id,
                name: name.to_string(),
                args: args.trim().to_string(),
                extra: Default::default(),
            })
        };
        match self.request(Kind::Command, frame, timeout, target).await? {
            ExtFrame::CommandResponse(r) => Ok(r),
            _ => unreachable!("replies are matched by kind"),
        }
    }

    /// Calls one of its tools; waits at most `timeout` for the `tool_result`, and sends
    /// `tool_cancel` if none came.
    pub async fn call_tool(
        &self,
        name: &str,
        args: Value,
        timeout: Duration,
    ) -> Result<ToolResult, CallError> {
        let target = || format!("tool \"{name}\"");
        let frame = |id| {
            HostFrame::ToolCall(ToolCall {
                id,
                name: name.to_string(),
                args,
                extra: Default::default(),
            })
        };
        match self.request(Kind::Tool, frame, timeout, target).await? {
            ExtFrame::ToolResult(r) => Ok(r),
            _ => unreachable!("replies are matched by kind"),
        }
    }

    /// Asks it to intercept `event`; `None` (allow) if it does not answer in `timeout`
    /// or cannot be asked.
    pub async fn intercept(
        &self,
        event: Event,
        timeout: Duration,
    ) -> Option<EventInterceptResponse> {
        let what = format!("intercept of \"{}\"", event.event);
        let target = || what.clone();
        let frame = |id| {
            HostFrame::EventIntercept(Event {
                id: Some(id),
                ..event
            })
        };
        match self.request(Kind::Intercept, frame, timeout, target).await {
            Ok(ExtFrame::EventInterceptResponse(r)) => Some(r),
            Ok(_) => unreachable!("replies are matched by kind"),
            Err(e) => {
                self.inner.log.warn(&format!("{e}; allowing"));
                None
            }
        }
    }

    /// Queues a one-way frame (panel key, panel close, …) behind the one-way frames and
    /// events sent before it, without waiting; fails if the extension is gone or its
    /// queue is full ([`EVENT_QUEUE`], [`EVENT_QUEUE_BYTES`]) and no event can make room.
    pub fn send(&self, frame: &HostFrame) -> Result<(), CallError> {
        let target = frame.type_name();
        if self.inner.closed.load(Ordering::SeqCst) {
            return Err(self.exited_error(target));
        }
        if self.queue_one_way(self.inner.outbound(frame, None), false) {
            Ok(())
        } else {
            Err(CallError::QueueFull {
                extension: self.inner.name.clone(),
                target: target.to_string(),
            })
        }
    }

    /// Queues the event `frame`, encoded as `line` (once for all its subscribers), for
    /// delivery without waiting, behind every one-way frame sent before it. When the
    /// queue is full the oldest waiting event (or, if none waits, this one) is dropped
    /// and counted in the log.
    pub(crate) fn deliver_encoded(&self, frame: &HostFrame, line: Encoded) {
        let frame = Outbound {
            line,
            budget: Budget::for_frame(frame, &self.inner.timeouts, None),
            room: None,
        };
        self.queue_one_way(frame, true);
    }

    /// Appends to the one-way queue, first dropping (and counting) the oldest waiting
    /// events while it is full, in count or in bytes. False when no event could make
    /// room: then nothing was queued (an event is dropped and counted instead).
    fn queue_one_way(&self, frame: Outbound, is_event: bool) -> bool {
        let (queued, dropped) = self.inner.one_way.push(frame, is_event);
        if dropped > 0 {
            let n = {
                let mut st = self.inner.status.lock().unwrap();
                st.events_dropped += dropped;
                st.events_dropped
            };
            if (n - dropped + 1..=n).any(u64::is_power_of_two) {
                self.inner.log.warn(&format!(
                    "event queue full ({EVENT_QUEUE} frames or {} MiB): dropped the oldest \
                     events ({n} dropped so far)",
                    EVENT_QUEUE_BYTES >> 20
                ));
            }
        }
        queued
    }

    /// Stops it: `shutdown`, input closed, `grace` to exit; then SIGTERM, `term_grace`;
    /// then SIGKILL. Returns once it is gone (or a last bounded wait ran out).
    pub async fn shutdown(&self, grace: Duration, term_grace: Duration) {
        if self.phase() == Phase::Exited {
            return;
        }
        let _ = self.inner.outbound.try_send(
            self.inner
                .outbound(&HostFrame::Shutdown(Empty::default()), Some(grace)),
        );
        self.inner.control.close_input();
        if self.wait_exited(grace).await {
            return;
        }
        self.inner.log.warn(&format!(
            "did not exit within {grace:?} of shutdown: SIGTERM"
        ));
        self.inner.status.lock().unwrap().forced = Some("SIGTERM");
        self.inner.control.terminate();
        if self.wait_exited(term_grace).await {
            return;
        }
        self.inner.log.warn(&format!(
            "did not exit within {term_grace:?} of SIGTERM: SIGKILL"
        ));
        self.inner.status.lock().unwrap().forced = Some("SIGKILL");
        self.inner.control.kill();
        self.wait_exited(Duration::from_secs(2)).await;
    }

    fn send_error<T>(&self, e: mpsc::error::TrySendError<T>, target: &str) -> CallError {
        match e {
            mpsc::error::TrySendError::Full(_) => CallError::QueueFull {
                extension: self.inner.name.clone(),
                target: target.to_string(),
            },
            mpsc::error::TrySendError::Closed(_) => self.exited_error(target),
        }
    }

    fn exited_error(&self, target: &str) -> CallError {
        let reason = self
            .inner
            .status
            .lock()
            .unwrap()
            .exit
            .as_ref()
            .map_or_else(|| "its input is closed".to_string(), ExitReason::to_string);
        CallError::Exited {
            extension: self.inner.name.clone(),
            target: target.to_string(),
            reason,
        }
    }

    async fn request(
        &self,
        kind: Kind,
        frame: impl FnOnce(String) -> HostFrame,
        timeout: Duration,
        target: impl Fn() -> String,
    ) -> Result<ExtFrame, CallError> {
        let inner = &*self.inner;
        if inner.closed.load(Ordering::SeqCst) {
            return Err(self.exited_error(&target()));
        }
        let (id, rx) = inner.pending.add(kind);
        let mut guard = PendingGuard {
            ext: inner,
            id: id.clone(),
            cancel_tool: false,
            answered: false,
        };
        // The exit path clears `pending` after setting `closed`; re-check so a call
        // registered in between cannot wait for its timeout.
        if inner.closed.load(Ordering::SeqCst) {
            return Err(self.exited_error(&target()));
        }
        inner
            .outbound
            .try_send(inner.outbound(&frame(id), Some(timeout)))
            .map_err(|e| self.send_error(e, &target()))?;
        guard.cancel_tool = kind == Kind::Tool;
        match tokio::time::timeout(timeout, rx).await {
            Ok(Ok(reply)) => {
                // `run` took it out of `pending` to answer it.
                guard.answered = true;
                Ok(reply)
            }
            Ok(Err(_)) => Err(self.exited_error(&target())),
            Err(_) => {
                drop(guard);
                Err(CallError::Timeout {
                    extension: inner.name.clone(),
                    target: target(),
                    after: timeout,
                })
            }
        }
    }

    /// Feeds queued one-way frames to the transport, in order, one at a time, while the
    /// transport holds less than [`EVENT_QUEUE_BYTES`] of them (each counting at least
    /// [`ONE_WAY_SHARE`]).
    async fn pump_one_way(self) {
        loop {
            match self.inner.one_way.pop() {
                Some(mut frame) => {
                    // Each counts as at least a share that keeps one-way frames to half
                    // the transport's queue: the other half is the requests', which an
                    // event flood must not refuse.
                    let size = frame
                        .line
                        .as_bytes()
                        .len()
                        .clamp(ONE_WAY_SHARE, EVENT_QUEUE_BYTES);
                    let room = self.inner.transport_room.clone();
                    let Ok(room) = room.acquire_many_owned(size as u32).await else {
                        return;
                    };
                    frame.room = Some(room);
                    if self.inner.outbound.send(frame).await.is_err() {
                        return;
                    }
                }
                None if self.inner.closed.load(Ordering::SeqCst) => return,
                None => self.inner.one_way.wait().await,
            }
        }
    }

    /// The connection's main loop: decode and handle frames until the transport closes.
    async fn run(
        self,
        mut inbound: crate::transport::Lines,
        mut exit: oneshot::Receiver<ExitReason>,
        hello_ack: HelloAck,
        hub: Arc<dyn Hub>,
    ) {
        let spawned = Instant::now();
        let mut hello_ack = Some(hello_ack);
        let silence = tokio::time::sleep(Duration::MAX);
        tokio::pin!(silence);
        // Only a starting extension can become ready by falling silent.
        let mut starting = true;
        loop {
            let item = tokio::select! {
                biased;
                item = inbound.recv() => item,
                () = &mut silence, if starting && hello_ack.is_none() => {
                    self.become_ready(spawned, ReadyBy::Silence, &hub);
                    starting = false;
                    continue;
                }
            };
            match item {
                Some(Inbound::Line(bytes, _room)) => {
                    self.handle_line(&bytes, spawned, &mut hello_ack, &hub)
                        .await;
                    if starting {
                        starting = self.phase() == Phase::Starting;
                        if starting {
                            silence
                                .as_mut()
                                .reset(tokio::time::Instant::now() + READY_SILENCE);
                        }
                    }
                }
                Some(Inbound::Oversize { len, .. }) => {
                    self.violation(format!(
                        "skipped a {len}-byte line: longer than the frame size limit"
                    ));
                }
                None => break,
            }
        }
        let exit = match tokio::time::timeout(EXIT_AFTER_EOF, &mut exit).await {
            Ok(Ok(exit)) => exit,
            _ => {
                self.inner
                    .log
                    .warn("closed its output but kept running: killing it");
                self.inner.control.kill();
                let then = tokio::time::timeout(Duration::from_secs(5), exit).await;
                ExitReason::ClosedOutput(then.ok().and_then(Result::ok).map(Box::new))
            }
        };
        self.close(exit, &hub);
    }

    /// Marks it gone: pending calls fail now, registrations go, the app is told.
    fn close(&self, exit: ExitReason, hub: &Arc<dyn Hub>) {
        let inner = &*self.inner;
        inner.log.info(&format!("extension gone: {exit}"));
        let (events, notes) = {
            let mut st = inner.status.lock().unwrap();
            st.exit = Some(exit.clone());
            (st.events_dropped, st.notes_dropped)
        };
        if events > 0 {
            inner.log.warn(&format!(
                "{events} events for it were dropped in total (its queue was full)"
            ));
        }
        if notes > 0 {
            inner.log.warn(&format!(
                "{notes} of its notifications were dropped in total (the application did not read them)"
            ));
        }
        inner.closed.store(true, Ordering::SeqCst);
        inner.pending.fail_all();
        hub.exited(self);
        inner.notes.push_own(HostEvent::ExtensionExited {
            extension: inner.name.clone(),
            reason: exit.to_string(),
            code: exit.code(),
            signal: exit.signal(),
        });
        inner.phase.send_replace(Phase::Exited);
        inner.one_way.wake();
    }

    fn become_ready(&self, spawned: Instant, by: ReadyBy, hub: &Arc<dyn Hub>) {
        if self.phase() != Phase::Starting {
            return;
        }
        {
            let mut st = self.inner.status.lock().unwrap();
            st.ready_after = Some(spawned.elapsed());
            st.ready_by = Some(by);
        }
        self.inner.phase.send_replace(Phase::Ready);
        hub.ready(self);
    }

    /// Records a protocol violation in the log, and the first [`VIOLATIONS_KEPT`] in the
    /// status.
    fn violation(&self, message: String) {
        self.inner.log.warn(&message);
        let mut st = self.inner.status.lock().unwrap();
        if st.violations.len() < VIOLATIONS_KEPT {
            st.violations.push(message);
        }
    }

    /// Whether `registration` fits this extension's caps (`registration_caps`); one that
    /// replaces a registration of the same kind and name counts instead of it. Records
    /// it if so; logs the refusal if not.
    fn admit_registration(&self, registration: &Registration) -> bool {
        let (kind, name, size) = match registration {
            Registration::Command(reg) => ("command", &reg.name, json_len(reg)),
            Registration::Tool(reg) => ("tool", &reg.name, json_len(reg)),
        };
        let admitted = self
            .inner
            .registered
            .lock()
            .unwrap()
            .admit(kind, name, size);
        let Err(refused) = admitted else {
            return true;
        };
        self.inner.status.lock().unwrap().registrations_refused += 1;
        self.inner.log.warn(&refused);
        false
    }

    async fn handle_line(
        &self,
        bytes: &[u8],
        spawned: Instant,
        hello_ack: &mut Option<HelloAck>,
        hub: &Arc<dyn Hub>,
    ) {
        let frame = match ExtFrame::decode(bytes) {
            Ok(frame) => frame,
            Err(zot_protocol::DecodeError::UnknownType(t)) => {
                self.inner
                    .log
                    .warn(&format!("skipped a frame of unknown type {t:?}"));
                return;
            }
            Err(e) => {
                self.violation(format!("skipped a line: {e}: {}", preview(bytes)));
                return;
            }
        };
        if hello_ack.is_some() && !matches!(frame, ExtFrame::Hello(_)) {
            self.violation(format!(
                "sent {:?} before hello (hello must be the first frame)",
                frame.type_name()
            ));
        }
        match frame {
            ExtFrame::Hello(mut hello) => {
                let Some(ack) = hello_ack.take() else {
                    self.violation("sent hello twice; ignored the second".into());
                    return;
                };
                let size = json_len(&hello);
                if size > HELLO_BYTES {
                    let short = |s: &str| s.chars().take(256).collect::<String>();
                    hello = zot_protocol::Hello {
                        name: short(&hello.name),
                        version: short(&hello.version),
                        ..Default::default()
                    };
                    self.inner.log.warn(&format!(
                        "hello is {size} bytes, over {} KiB: kept only the start of its name \
                         and version",
                        HELLO_BYTES >> 10
                    ));
                }
                if hello.name != self.inner.name {
                    self.inner.log.warn(&format!(
                        "hello names {:?} but the manifest says {:?}: using {:?}",
                        hello.name, self.inner.name, self.inner.name
                    ));
                }
                {
                    let mut st = self.inner.status.lock().unwrap();
                    st.hello_after = Some(spawned.elapsed());
                    st.hello = Some(hello);
                }
                if let Err(e) = self.send(&HostFrame::HelloAck(ack)) {
                    self.inner
                        .log
                        .warn(&format!("could not send hello_ack: {e}"));
                }
            }
            ExtFrame::RegisterCommand(reg) => {
                let reg = Registration::Command(reg);
                if self.admit_registration(&reg) {
                    hub.register(self, reg);
                }
            }
            ExtFrame::RegisterTool(reg) => {
                if reg.schema.is_object() {
                    let reg = Registration::Tool(reg);
                    if self.admit_registration(&reg) {
                        hub.register(self, reg);
                    }
                } else {
                    self.violation(format!(
                        "refused tool {:?}: its schema is not a JSON object",
                        reg.name
                    ));
                }
            }
            ExtFrame::Subscribe(sub) => self.subscribe(sub),
            ExtFrame::Ready(_) => self.become_ready(spawned, ReadyBy::Frame, hub),
            ExtFrame::CommandResponse(r) => {
                let id = r.id.clone();
                self.reply(Kind::Command, &id, ExtFrame::CommandResponse(r));
            }
            ExtFrame::ToolResult(r) => {
                let id = r.id.clone();
                self.reply(Kind::Tool, &id, ExtFrame::ToolResult(r));
            }
            ExtFrame::EventInterceptResponse(r) => {
                let id = r.id.clone();
                self.reply(Kind::Intercept, &id, ExtFrame::EventInterceptResponse(r));
            }
            ExtFrame::Notify(frame) => {
                self.tell_app(HostEvent::Notify {
                    extension: self.inner.name.clone(),
                    frame,
                })
                .await
            }
            ExtFrame::OpenPanel(frame) => {
                self.tell_app(HostEvent::OpenPanel {
                    extension: self.inner.name.clone(),
                    frame,
                })
                .await
            }
            ExtFrame::PanelRender(frame) => {
                self.tell_app(HostEvent::PanelRender {
                    extension: self.inner.name.clone(),
                    frame,
                })
                .await
            }
            ExtFrame::PanelClose(frame) => {
                self.tell_app(HostEvent::PanelClose {
                    extension: self.inner.name.clone(),
                    frame,
                })
                .await
            }
            ExtFrame::ClearNotes(frame) => {
                self.tell_app(HostEvent::ClearNotes {
                    extension: self.inner.name.clone(),
                    frame,
                })
                .await
            }
            ExtFrame::Submit(mut frame) => {
                frame.text = frame.text.trim().to_string();
                if !frame.text.is_empty() {
                    self.tell_app(HostEvent::Submit {
                        extension: self.inner.name.clone(),
                        frame,
                    })
                    .await
                }
            }
            ExtFrame::SubmitSlash(mut frame) => {
                frame.text = frame.text.trim().to_string();
                if frame.text.starts_with('/') {
                    self.tell_app(HostEvent::SubmitSlash {
                        extension: self.inner.name.clone(),
                        frame,
                    })
                    .await
                } else {
                    self.violation(format!(
                        "submit_slash text must start with '/': {}",
                        preview(frame.text.as_bytes())
                    ));
                }
            }
            ExtFrame::ShutdownAck(_) => self.inner.log.info("acknowledged shutdown"),
            ExtFrame::CallTool(call) => {
                let ext = self.clone();
                let Ok(slot) = self.inner.calls.clone().try_acquire_owned() else {
                    let busy = format!(
                        "call_tool {:?} refused: {CALLS_IN_FLIGHT} of its calls are still waiting",
                        call.name
                    );
                    self.inner.log.warn(&busy);
                    let mut result = ToolResult::error(call.id, busy);
                    result.name = Some(call.name);
                    if let Err(e) = self.send(&HostFrame::ToolResult(result)) {
                        self.inner
                            .log
                            .warn(&format!("could not answer call_tool: {e}"));
                    }
                    return;
                };
                let answer = hub.call_tool(self, call.name.clone(), call.args);
                tokio::spawn(async move {
                    let _slot = slot;
                    let mut result = answer
                        .await
                        .unwrap_or_else(|e| ToolResult::error(String::new(), e.to_string()));
                    result.id = call.id;
                    result.name = Some(call.name);
                    if let Err(e) = ext.send(&HostFrame::ToolResult(result)) {
                        ext.inner
                            .log
                            .warn(&format!("could not answer call_tool: {e}"));
                    }
                });
            }
        }
    }

    fn subscribe(&self, sub: zot_protocol::Subscribe) {
        let mut ignored = Vec::new();
        {
            let mut st = self.inner.status.lock().unwrap();
            for e in sub.events {
                if EVENTS.contains(&e.as_str()) {
                    st.events.insert(e);
                } else {
                    ignored.push(format!("unknown event {e:?}"));
                }
            }
            for e in sub.intercept {
                if INTERCEPTABLE.contains(&e.as_str()) {
                    st.intercept.insert(e);
                } else {
                    ignored.push(format!("{e:?} cannot be intercepted"));
                }
            }
        }
        if !ignored.is_empty() {
            self.inner
                .log
                .warn(&format!("subscribe: ignored {}", ignored.join(", ")));
        }
    }

    fn reply(&self, kind: Kind, id: &str, frame: ExtFrame) {
        let name = frame.type_name();
        match self.inner.pending.answer(kind, id, frame) {
            Answered::Yes => {}
            Answered::WrongKind => self.violation(format!(
                "{name} for id {id:?}, which is not that kind of request"
            )),
            Answered::NotPending => self.inner.log.warn(&format!(
                "{name} for id {id:?}, which is not pending (late or unknown): ignored"
            )),
        }
    }

    /// Passes a notification to the application. When the application is not keeping
    /// up this waits for room (slowing only this extension), at most [`NOTE_WAIT`]; then
    /// the oldest notifications are dropped, and counted in the log of the extension
    /// each came from.
    async fn tell_app(&self, event: HostEvent) {
        let origin: Weak<dyn Origin> = self.inner.me.clone();
        self.inner.notes.push_from(event, origin, NOTE_WAIT).await;
    }
}

impl Inner {
    /// `frame` for the transport, with its [`Budget`] (`call`: the request's timeout,
    /// or `shutdown`'s grace).
    fn outbound(&self, frame: &HostFrame, call: Option<Duration>) -> Outbound {
        Outbound {
            line: encode(frame),
            budget: Budget::for_frame(frame, &self.timeouts, call),
            room: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::caps::registrations::{REGISTRATIONS, REGISTRATION_BYTES};
    use crate::transport::memory::{pair, Peer};
    use serde_json::json;

    struct NoHub(Timeouts);

    impl Hub for NoHub {
        fn register(&self, _: &Extension, _: Registration) {}
        fn ready(&self, _: &Extension) {}
        fn exited(&self, _: &Extension) {}
        fn call_tool(
            &self,
            _: &Extension,
            name: String,
            _: Value,
        ) -> Pin<Box<dyn Future<Output = Result<ToolResult, CallError>> + Send>> {
            Box::pin(async move { Err(CallError::NotFound(format!("tool named {name:?}"))) })
        }
        fn timeouts(&self) -> &Timeouts {
            &self.0
        }
    }

    /// Starts the extension `t` on `conn`, telling `notes`.
    fn start_t(conn: Connection, notes: EventQueue) -> Extension {
        let log = ExtLog::open(&std::env::temp_dir().join("zot-unit-ext.log"));
        Extension::start(
            "t".into(),
            0,
            log,
            conn,
            HelloAck::default(),
            Arc::new(NoHub(Timeouts::default())),
            notes,
        )
    }

    async fn started(queue: usize) -> (Extension, Peer, mpsc::Receiver<HostEvent>) {
        let (conn, mut peer) = pair(queue);
        let (notes, notes_rx) = EventQueue::channel();
        let ext = start_t(conn, notes);
        peer.print(r#"{"type":"hello","name":"t","version":"1"}"#)
            .await;
        assert_eq!(peer.next().await["type"], "hello_ack");
        (ext, peer, notes_rx)
    }

    #[tokio::test]
    async fn pending_calls_fail_the_moment_the_extension_exits() {
        let (ext, mut peer, _notes) = started(16).await;
        let call = tokio::spawn({
            let ext = ext.clone();
            async move { ext.call_tool("x", json!({}), Duration::from_secs(60)).await }
        });
        assert_eq!(peer.next().await["type"], "tool_call");
        let started = Instant::now();
        peer.exit(3);
        let err = call.await.unwrap().unwrap_err();
        assert!(
            matches!(err, CallError::Exited { ref reason, .. } if reason == "exited with status 3")
        );
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "waited for the timeout"
        );
        assert_eq!(ext.phase(), Phase::Exited);
    }

    #[tokio::test]
    async fn a_timed_out_tool_call_is_cancelled_and_its_late_answer_ignored() {
        let (ext, mut peer, _notes) = started(16).await;
        let err = ext
            .call_tool("x", json!({}), Duration::from_millis(20))
            .await
            .unwrap_err();
        assert!(matches!(err, CallError::Timeout { .. }));
        let call = peer.next().await;
        let cancel = peer.next().await;
        assert_eq!(cancel, json!({"type": "tool_cancel", "id": call["id"]}));
        peer.print(&format!(
            r#"{{"type":"tool_result","id":{},"content":[]}}"#,
            call["id"]
        ))
        .await;
        // The connection is still fine: the next call gets a fresh id and its answer.
        let next = tokio::spawn({
            let ext = ext.clone();
            async move { ext.call_tool("x", json!({}), Duration::from_secs(5)).await }
        });
        let call2 = peer.next().await;
        assert_ne!(call2["id"], call["id"]);
        peer.print(&format!(
            r#"{{"type":"tool_result","id":{},"content":[]}}"#,
            call2["id"]
        ))
        .await;
        assert!(next.await.unwrap().is_ok());
    }

    /// The budget rule on every send path (on tokio's paused clock): a request's frame
    /// carries its timeout and the cancel grace, and the caller's wait ends at the
    /// timeout itself; its `tool_cancel`, an event and a one-way frame carry the one-way
    /// budget; `shutdown` its grace.
    #[tokio::test(start_paused = true)]
    async fn every_frame_carries_the_budget_of_the_budget_rule() {
        use crate::budget::{Budget, CANCEL_GRACE};
        let (ext, mut peer, _notes) = started(16).await;
        let timeout = Duration::from_millis(200);
        let asked = tokio::time::Instant::now();
        let err = ext.call_tool("x", json!({}), timeout).await.unwrap_err();
        assert!(matches!(err, CallError::Timeout { .. }));
        assert_eq!(
            asked.elapsed(),
            timeout,
            "the caller waits the timeout, not the grace"
        );
        let call = peer.frames.recv().await.unwrap();
        assert_eq!(call.budget.duration(), timeout + CANCEL_GRACE);
        let cancel = peer.frames.recv().await.unwrap();
        assert!(cancel.line.json().contains("tool_cancel"));
        assert_eq!(cancel.budget, Budget::ONE_WAY);
        ext.deliver_event(&turn(1));
        assert_eq!(peer.frames.recv().await.unwrap().budget, Budget::ONE_WAY);
        ext.send(&key("a")).unwrap();
        assert_eq!(peer.frames.recv().await.unwrap().budget, Budget::ONE_WAY);
        let grace = Duration::from_millis(300);
        let stopping = tokio::spawn({
            let ext = ext.clone();
            async move { ext.shutdown(grace, grace).await }
        });
        let shutdown = peer.frames.recv().await.unwrap();
        assert!(shutdown.line.json().contains("shutdown"));
        assert_eq!(shutdown.budget.duration(), grace);
        peer.exit(0);
        stopping.await.unwrap();
    }

    #[tokio::test]
    async fn a_tool_call_whose_caller_gives_up_is_cancelled() {
        let (ext, mut peer, _notes) = started(16).await;
        let call = tokio::spawn({
            let ext = ext.clone();
            async move { ext.call_tool("x", json!({}), Duration::from_secs(60)).await }
        });
        let sent = peer.next().await;
        call.abort();
        let cancel = peer.next().await;
        assert_eq!(cancel, json!({"type": "tool_cancel", "id": sent["id"]}));
    }

    #[tokio::test]
    async fn an_oversize_hello_is_not_kept_whole() {
        let (conn, mut peer) = pair(16);
        let (notes, _notes) = EventQueue::channel();
        let ext = start_t(conn, notes);
        let pad = "p".repeat(HELLO_BYTES);
        peer.print(&format!(
            r#"{{"type":"hello","name":"t","version":"1","pad":"{pad}"}}"#
        ))
        .await;
        assert_eq!(peer.next().await["type"], "hello_ack");
        let hello = ext.status().hello.unwrap();
        assert_eq!((hello.name.as_str(), hello.version.as_str()), ("t", "1"));
        assert!(hello.extra.is_empty());
    }

    /// A second `hello` gets no `hello_ack` and changes nothing; a `tool_result` for a
    /// pending command's id answers nothing. Both are violations, and the command still
    /// takes its own answer.
    #[tokio::test]
    async fn a_second_hello_and_a_reply_of_the_wrong_kind_are_violations() {
        let (ext, mut peer, _notes) = started(16).await;
        peer.print(r#"{"type":"hello","name":"other","version":"2"}"#)
            .await;
        let command = tokio::spawn({
            let ext = ext.clone();
            async move { ext.invoke_command("c", "", Duration::from_secs(60)).await }
        });
        let invoked = peer.next().await;
        assert_eq!(invoked["type"], "command_invoked", "{invoked}");
        let id = &invoked["id"];
        peer.print(&format!(
            r#"{{"type":"tool_result","id":{id},"content":[]}}"#
        ))
        .await;
        peer.print(&format!(
            r#"{{"type":"command_response","id":{id},"action":"display","display":"mine"}}"#
        ))
        .await;
        let response = command.await.unwrap().unwrap();
        assert_eq!(response.display.as_deref(), Some("mine"));
        // A hello_ack would be queued before this event: the event comes first.
        ext.deliver_event(&turn(1));
        assert_eq!(peer.next().await["type"], "event");
        let status = ext.status();
        let hello = status.hello.unwrap();
        assert_eq!((hello.name.as_str(), hello.version.as_str()), ("t", "1"));
        assert_eq!(
            status.violations,
            [
                "sent hello twice; ignored the second".to_string(),
                format!("tool_result for id {id}, which is not that kind of request"),
            ]
        );
    }

    #[tokio::test]
    async fn silence_after_hello_counts_as_ready() {
        let (ext, _peer, _notes) = started(16).await;
        let phase = ext
            .wait_ready(tokio::time::Instant::now() + Duration::from_secs(3))
            .await;
        assert_eq!(phase, Phase::Ready);
        assert_eq!(ext.status().ready_by, Some(ReadyBy::Silence));
    }

    impl Extension {
        fn deliver_event(&self, event: &Event) {
            let frame = HostFrame::Event(event.clone());
            self.deliver_encoded(&frame, encode(&frame));
        }
    }

    fn turn(step: usize) -> Event {
        Event {
            id: None,
            event: "turn_start".into(),
            fields: json!({"step": step}).as_object().unwrap().clone(),
        }
    }

    fn key(text: &str) -> HostFrame {
        HostFrame::PanelKey(zot_protocol::PanelKey {
            panel_id: "p".into(),
            key: "char".into(),
            text: text.into(),
            extra: Default::default(),
        })
    }

    #[tokio::test]
    async fn one_way_frames_arrive_in_the_order_sent() {
        let (ext, mut peer, _notes) = started(4).await;
        for i in 0..50 {
            if i % 3 == 0 {
                ext.send(&key(&i.to_string())).unwrap();
            } else {
                ext.deliver_event(&turn(i));
            }
        }
        for i in 0..50 {
            let frame = peer.next().await;
            if i % 3 == 0 {
                assert_eq!(frame["text"], i.to_string(), "{frame}");
            } else {
                assert_eq!(frame["step"], i, "{frame}");
            }
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_full_queue_makes_room_for_a_panel_frame_by_dropping_an_event() {
        // Nobody reads: the pump holds one frame, the queue fills up behind it.
        let (ext, _peer, _notes) = started(1).await;
        for step in 0..EVENT_QUEUE {
            ext.deliver_event(&turn(step));
        }
        // Let the pump take what it can (the clock is paused: the sleep ends once every
        // task waits), then fill the queue to the brim.
        tokio::time::sleep(Duration::from_millis(20)).await;
        for step in 0..EVENT_QUEUE {
            ext.deliver_event(&turn(step));
        }
        let before = ext.status().events_dropped;
        ext.send(&key("k")).expect("an event makes room");
        assert_eq!(ext.status().events_dropped, before + 1);
        // Full of panel frames alone: the next one is refused, not queued.
        let refused = (0..=EVENT_QUEUE)
            .map(|_| ext.send(&key("k")))
            .find_map(Result::err);
        assert!(
            matches!(refused, Some(CallError::QueueFull { .. })),
            "{refused:?}"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn the_one_way_queue_is_bounded_in_bytes() {
        // Nobody reads: the transport's budget and then the queue's fill with 1 MiB events.
        let (ext, _peer, _notes) = started(EVENT_QUEUE).await;
        let big = |step: usize| Event {
            id: None,
            event: "turn_start".into(),
            fields: json!({"step": step, "pad": "x".repeat(1 << 20)})
                .as_object()
                .unwrap()
                .clone(),
        };
        for step in 0..100 {
            ext.deliver_event(&big(step));
            tokio::task::yield_now().await;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
        let held = ext.inner.one_way.bytes();
        assert!(held <= EVENT_QUEUE_BYTES, "{held} bytes queued");
        let dropped = ext.status().events_dropped;
        assert!((55..=75).contains(&dropped), "dropped {dropped}");
        // An event larger than the whole queue is dropped; a panel frame refused.
        let before = ext.status().events_dropped;
        ext.deliver_event(&Event {
            id: None,
            event: "turn_start".into(),
            fields: json!({"pad": "x".repeat(EVENT_QUEUE_BYTES)})
                .as_object()
                .unwrap()
                .clone(),
        });
        assert_eq!(ext.status().events_dropped, before + 1);
        let refused = ext.send(&key(&"k".repeat(EVENT_QUEUE_BYTES)));
        assert!(
            matches!(refused, Err(CallError::QueueFull { .. })),
            "{refused:?}"
        );
    }

    #[tokio::test]
    async fn registrations_over_the_caps_are_refused_and_a_replacement_counts_once() {
        let (ext, _peer, _notes) = started(16).await;
        let tool = |name: &str, size: usize| {
            Registration::Tool(RegisterTool {
                name: name.into(),
                description: "d".repeat(size),
                schema: json!({"type": "object"}),
                extra: Default::default(),
            })
        };
        let third = REGISTRATION_BYTES / 3;
        assert!(ext.admit_registration(&tool("a", third)));
        assert!(ext.admit_registration(&tool("b", third)));
        // Replacing "b" with a same-size one fits; a third one of that size does not.
        assert!(ext.admit_registration(&tool("b", third)));
        assert!(!ext.admit_registration(&tool("c", third)));
        assert!(ext.admit_registration(&tool("c", 10)));
        assert_eq!(ext.status().registrations_refused, 1);
        for i in 3..REGISTRATIONS {
            assert!(ext.admit_registration(&tool(&format!("t{i}"), 1)), "{i}");
        }
        assert!(!ext.admit_registration(&tool("one-too-many", 1)));
        assert!(
            ext.admit_registration(&tool("a", 1)),
            "a replacement is no new name"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn an_event_flood_leaves_room_for_a_call() {
        // A transport queue as the real ones, which nobody reads: the events fill what
        // they may of it, and a call still finds room (it waits for its answer, which
        // never comes, instead of being refused).
        let (ext, _peer, _notes) = started(OUTBOUND_QUEUE).await;
        for step in 0..(2 * EVENT_QUEUE) {
            ext.deliver_event(&turn(step));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
        let err = ext
            .call_tool("x", json!({}), Duration::from_millis(100))
            .await
            .unwrap_err();
        assert!(matches!(err, CallError::Timeout { .. }), "{err}");
    }

    #[tokio::test(start_paused = true)]
    async fn a_full_event_queue_drops_the_oldest_and_counts() {
        // An outbound queue of 1 that nobody reads: the pump holds one event, the
        // queue fills up behind it.
        let (ext, _peer, _notes) = started(1).await;
        for step in 0..(EVENT_QUEUE + 10) {
            ext.deliver_event(&Event {
                id: None,
                event: "turn_start".into(),
                fields: json!({"step": step}).as_object().unwrap().clone(),
            });
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
        let dropped = ext.status().events_dropped;
        assert!((9..=11).contains(&dropped), "dropped {dropped}");
    }
}
