//! One connection's protocol state: handshake, registrations, subscriptions, pending
//! calls with deadlines, the event queue, and the exit. Transport-agnostic: it only sees
//! a [`Connection`].

use crate::budget::{Budget, Timeouts};
use crate::events::{json_len, EventQueue, HostEvent, Origin};
use crate::log::{preview, ExtLog};
use crate::transport::pipe::{Direct, Turn};
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
    ExtFrame, HelloAck, HostFrame, RegisterCommand, RegisterTool, ToolCall, ToolCancel,
    ToolProgress, ToolResult, EVENTS, INTERCEPTABLE,
};

/// The most bytes of one `tool_progress` frame handed on (as JSON): past it, its `text`
/// is cut to [`PROGRESS_TEXT`] and its other fields beyond `progress` and `total` left
/// out.
pub const PROGRESS_BYTES: usize = 16 * 1024;
/// The most bytes of a cut `tool_progress` frame's `text`.
pub const PROGRESS_TEXT: usize = 4096;

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
use pending::{Kind, Pending};

mod inbound;
mod one_way;
mod pending;
#[cfg(test)]
mod tests;
mod waiting;
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
    /// What was asked is gone with the extension that provided it, which is not running
    /// (it failed to start or reload, exited, is starting, disabled or untrusted):
    /// `state` says which, as the end of a sentence (`is not running: exited with
    /// status 1`).
    NotRunning {
        extension: String,
        target: String,
        state: String,
    },
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
        /// What the transport saw it doing instead ([`Control::stalled`]).
        stalled: Option<String>,
    },
    /// The extension is not reading its input fast enough.
    QueueFull { extension: String, target: String },
    /// The request itself is wrong (e.g. tool arguments that are not an object).
    Invalid(String),
    /// The tool's arguments do not fit its schema (nothing was sent).
    Arguments {
        tool: String,
        problems: Vec<crate::schema::Problem>,
    },
}

impl fmt::Display for CallError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CallError::NotFound(what) => write!(f, "no {what}"),
            CallError::NotRunning {
                extension,
                target,
                state,
            } => write!(
                f,
                "{target} is not available: extension {extension:?}, which provided it, {state}"
            ),
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
                stalled,
            } => {
                write!(
                    f,
                    "{target} timed out after {} ms: extension {extension:?} did not answer",
                    after.as_millis()
                )?;
                stalled.as_ref().map_or(Ok(()), |why| write!(f, ": {why}"))
            }
            CallError::Invalid(why) => f.write_str(why),
            CallError::Arguments { tool, problems } => {
                let problems: Vec<&str> = problems.iter().map(|p| p.message.as_str()).collect();
                match problems.as_slice() {
                    [one] => write!(f, "tool {tool:?}: {one}"),
                    many => write!(
                        f,
                        "tool {tool:?}: the arguments do not fit its schema: {}",
                        many.join("; ")
                    ),
                }
            }
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
    /// `tool_progress` frames dropped because the call's caller did not read them in
    /// time.
    pub progress_dropped: u64,
    /// Registrations refused because they were over `REGISTRATIONS` or
    /// `REGISTRATION_BYTES`.
    pub registrations_refused: u64,
    /// The signal it took to stop it (`SIGTERM`, `SIGKILL`) when it ignored `shutdown`.
    pub forced: Option<&'static str>,
    /// The host stopped it (a reload or the host's shutdown): its exit was asked for.
    pub stopped: bool,
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
    /// Calls owed a reply, counted for a transport that polls while one is.
    owed: Option<Arc<crate::transport::pipe::Owed>>,
    /// Its pipe, for a caller that reads it itself while it waits ([`waiting`]).
    direct: Option<Direct>,
    /// What its lines are handled with, by whoever reads them.
    hub: Weak<dyn Hub>,
    /// When it was started, for [`Status::hello_after`] and [`Status::ready_after`].
    spawned: Instant,
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
        let (owed, direct) = (inbound.owed(), inbound.direct());
        let ext = Extension {
            inner: Arc::new_cyclic(|me| Inner {
                owed,
                direct,
                hub: Arc::downgrade(&hub),
                spawned: Instant::now(),
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

    /// Waits until it is gone.
    pub(crate) async fn gone(&self) {
        let mut rx = self.inner.phase.subscribe();
        let _ = rx.wait_for(|p| *p == Phase::Exited).await;
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
        match self
            .request(Kind::Command, frame, timeout, target, None)
            .await?
        {
            ExtFrame::CommandResponse(r) => Ok(r),
            _ => unreachable!("replies are matched by kind"),
        }
    }

    /// Calls one of its tools; waits at most `timeout` for the `tool_result`, and sends
    /// `tool_cancel` if none came. Its `tool_progress` frames go to `progress`, never
    /// waiting: one that finds the queue full is dropped.
    pub async fn call_tool(
        &self,
        name: &str,
        args: Value,
        timeout: Duration,
        progress: Option<mpsc::Sender<ToolProgress>>,
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
        match self
            .request(Kind::Tool, frame, timeout, target, progress)
            .await?
        {
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
        match self
            .request(Kind::Intercept, frame, timeout, target, None)
            .await
        {
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
        self.inner.status.lock().unwrap().stopped = true;
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
        progress: Option<mpsc::Sender<ToolProgress>>,
    ) -> Result<ExtFrame, CallError> {
        let inner = &*self.inner;
        if inner.closed.load(Ordering::SeqCst) {
            return Err(self.exited_error(&target()));
        }
        let (id, rx) = inner.pending.add(kind, progress);
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
        // Counted before it is sent, so a reader polling for the reply knows one is owed;
        // not a caller that reads or watches for it: two threads spinning would leave two
        // CPUs none for the extension.
        // The pipe, for a caller that reads its reply itself: taken before the write, so
        // that the reply wakes no runtime thread.
        let (turn, glancing) = if waiting::reads_itself() {
            (self.direct(Direct::take), false)
        } else if waiting::glances() {
            (self.direct(Direct::glance), true)
        } else {
            (None, false)
        };
        let watching = turn.is_none() && waiting::watches();
        let counted = turn.is_none() && !watching;
        let _awaiting = waiting::Awaiting::new(inner.owed.as_ref().filter(|_| counted));
        inner
            .outbound
            .try_send(inner.outbound(&frame(id), Some(timeout)))
            .map_err(|e| self.send_error(e, &target()))?;
        guard.cancel_tool = kind == Kind::Tool;
        let mut rx = rx;
        // What is left of the timeout once this caller stopped reading the pipe itself.
        let mut left = timeout;
        // The lines' handling is boxed: a large future, which every call would otherwise
        // carry (and copy) whether it reads or not.
        let early = match turn {
            Some((mut turn, hub)) if glancing => {
                let next = move || turn.next_now();
                Box::pin(self.read_itself(next, &hub, &mut rx)).await
            }
            Some((mut turn, hub)) => {
                let started = Instant::now();
                let until = started + timeout.min(waiting::HOLD);
                let next = move || turn.next(until);
                let read = Box::pin(self.read_itself(next, &hub, &mut rx)).await;
                left = timeout.saturating_sub(started.elapsed());
                read
            }
            None => watching.then(|| waiting::watch(&mut rx)).flatten(),
        };
        let replied = match early {
            Some(reply) => Ok(reply),
            None => tokio::time::timeout(left, rx)
                .await
                .map(|r| r.map_err(|_| ())),
        };
        match replied {
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
                    stalled: inner.control.stalled(),
                })
            }
        }
    }

    /// The pipe for this caller to read itself ([`waiting::reads_itself`],
    /// [`waiting::glances`]) as `turn` gives it, if it has one that no one reads now and
    /// its lines are handled as the reader would: once `hello` was (the reader's
    /// handshake state is then spent) and it is ready.
    fn direct<'a>(
        &'a self,
        turn: impl FnOnce(&'a Direct) -> Option<Turn<'a>>,
    ) -> Option<(Turn<'a>, Arc<dyn Hub>)> {
        let direct = self.inner.direct.as_ref()?;
        if self.phase() != Phase::Ready || self.inner.status.lock().unwrap().hello.is_none() {
            return None;
        }
        let hub = self.inner.hub.upgrade()?;
        Some((turn(direct)?, hub))
    }

    /// Handles the lines `next` gives, on this thread, until the reply to this call came
    /// (`Err`: the extension is gone; then, in a task whose budget is spent, yields: a
    /// caller whose replies are always there would otherwise keep its thread), or until
    /// `next` has none (`None`: then the reader reads again, and the reply is handed
    /// over). Every line is handled as [`Self::run`] would, in order: the reader takes
    /// none while the turn `next` holds lasts.
    async fn read_itself(
        &self,
        mut next: impl FnMut() -> Option<Option<Inbound>>,
        hub: &Arc<dyn Hub>,
        rx: &mut oneshot::Receiver<ExtFrame>,
    ) -> Option<Result<ExtFrame, ()>> {
        use oneshot::error::TryRecvError;
        let replied = loop {
            match rx.try_recv() {
                Ok(reply) => break Ok(reply),
                Err(TryRecvError::Closed) => break Err(()),
                Err(TryRecvError::Empty) => {}
            }
            // The end is the reader's to act on (it closes the connection).
            let item = next()??;
            self.take(item, &mut None, hub).await;
        };
        drop(next);
        tokio::task::consume_budget().await;
        Some(replied)
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
