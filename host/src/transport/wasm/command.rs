//! Command components (`wasi:cli/run`): an ordinary stdio extension compiled for
//! `wasm32-wasip2`. Its stdin is fed from the frame queue and its stdout is split into
//! lines exactly like a subprocess's.
//!
//! `run` only returns at end of input, so deadlines are per stretch of work: the guest's
//! stdin knows when it has taken a frame (the frame's budget starts) and when it waits
//! for one (no deadline while it waits, if that wait ends with input). A guest that
//! spins instead of reading again is stopped when the budget of the frame it took runs
//! out; one that polls stdin together with a timer and spins once the timer fires is
//! stopped when the deadline it had before that wait runs out: the deadline is never off
//! while guest code runs.

use super::{add_wasi_to_linker, exit_for, instantiate_or_stop, Deadline, Guest, GuestData, Stop};
use crate::budget::Budget;
use crate::component::Code;
use crate::sandbox::Stdio;
use crate::transport::{pipe, ExitReason, Outbound};
use bytes::Bytes;
use std::sync::Arc;
use tokio::sync::{mpsc, Mutex};
use wasmtime::component::Linker;
use wasmtime_wasi::cli::{AsyncStdoutStream, IsTerminal, StdinStream};
use wasmtime_wasi::p2::bindings::Command;
use wasmtime_wasi::p2::{InputStream, Pollable, StreamError};

/// Pipe capacity of the guest's stdout and of its stderr.
const PIPE: usize = 64 * 1024;

/// Runs a command component (or a preview-1 module, [`super::preview1`]) until `run`
/// returns, it traps, or the host stops it.
pub(super) async fn run(mut guest: Guest, frames: mpsc::Receiver<Outbound>) -> ExitReason {
    let stop = guest.stop.clone();
    let deadline = Arc::new(Deadline::default());
    let (guest_out, host_in) = tokio::io::duplex(PIPE);
    let (exited, guest_exited) = tokio::sync::oneshot::channel();
    tokio::spawn(
        pipe::LineReader::new(host_in, guest.max_frame, Some(guest_exited))
            .forward(guest.to_host.clone()),
    );
    let stderr = guest.guest_output.then(|| {
        let (guest_err, host_err) = tokio::io::duplex(PIPE);
        tokio::spawn(guest.log.clone().copy_stderr(host_err));
        Box::new(AsyncStdoutStream::new(PIPE, guest_err)) as _
    });
    let stdin = FrameStdin::new(frames, deadline.clone(), stop.clone());
    if guest.polled_stdin {
        guest.polled = Some(stdin.clone());
    }
    guest.stdio = Stdio {
        stdin: Some(Box::new(stdin)),
        stdout: Some(Box::new(AsyncStdoutStream::new(PIPE, guest_out))),
        stderr,
    };
    let (mut store, code, log) = guest.store(deadline.clone());
    let exit = async {
        let component = match &code {
            Code::Component(component) => component,
            Code::Module(module) => {
                return super::preview1::run(&mut store, module, &deadline, &stop, &log).await
            }
        };
        let mut linker = Linker::<GuestData>::new(store.engine());
        if let Err(e) = add_wasi_to_linker(&mut linker) {
            return ExitReason::LinkFailed(format!("{e:#}"));
        }
        let started = instantiate_or_stop(&mut store, &deadline, &stop, async |store| {
            Command::instantiate_async(store, component, &linker).await
        });
        let command = match started.await {
            Ok(command) => command,
            Err(exit) => return exit,
        };
        log.info("component started (command)");
        tokio::select! {
            r = command.wasi_cli_run().call_run(&mut store) => match r {
                Ok(Ok(())) => ExitReason::Exited(0),
                Ok(Err(())) => ExitReason::Exited(1),
                Err(e) => exit_for(&store, &e),
            },
            () = stop.kill.notified() => stop.reason(),
        }
    }
    .await;
    // Dropping the store closes the guest's stdout; the reader drains what is left.
    drop(store);
    let _ = exited.send(());
    exit
}

/// The guest's stdin: frames from the host's queue, one after another. Every handle the
/// guest opens shares one state.
#[derive(Clone)]
pub(super) struct FrameStdin(Arc<Mutex<StdinState>>);

struct StdinState {
    frames: mpsc::Receiver<Outbound>,
    /// The rest of the frame being read.
    current: Bytes,
    /// Input was closed: what is queued is still delivered, then end of file.
    closing: bool,
    ended: bool,
    deadline: Arc<Deadline>,
    stop: Arc<Stop>,
}

impl FrameStdin {
    fn new(frames: mpsc::Receiver<Outbound>, deadline: Arc<Deadline>, stop: Arc<Stop>) -> Self {
        FrameStdin(Arc::new(Mutex::new(StdinState {
            frames,
            current: Bytes::new(),
            closing: false,
            ended: false,
            deadline,
            stop,
        })))
    }
}

impl FrameStdin {
    /// Whether a read now would not wait: a frame is being read or queued (it becomes
    /// the one being read, its budget started), or the input ended. `false` while
    /// another read holds it.
    pub(super) fn readable(&self) -> bool {
        let Ok(mut state) = self.0.try_lock() else {
            return false;
        };
        if !state.current.is_empty() || state.closing || state.ended {
            return true;
        }
        match state.frames.try_recv() {
            Ok(frame) => {
                state.take(frame);
                true
            }
            Err(mpsc::error::TryRecvError::Disconnected) => true,
            Err(mpsc::error::TryRecvError::Empty) => false,
        }
    }
}

impl StdinState {
    /// Makes `frame` the one being read: its budget starts now (after a wait for input,
    /// the deadline was cleared; while busy, it is extended, never shortened).
    fn take(&mut self, frame: Outbound) {
        self.deadline.extend(frame.budget);
        self.current = Bytes::from(frame.line.into_bytes());
    }
}

impl IsTerminal for FrameStdin {
    fn is_terminal(&self) -> bool {
        false
    }
}

impl StdinStream for FrameStdin {
    fn p2_stream(&self) -> Box<dyn InputStream> {
        Box::new(self.clone())
    }

    /// Only preview-3 guests read through this; they are not supported, so they see an
    /// empty stdin.
    fn async_stream(&self) -> Box<dyn tokio::io::AsyncRead + Send + Sync> {
        Box::new(tokio::io::empty())
    }
}

#[wasmtime_wasi::async_trait]
impl InputStream for FrameStdin {
    fn read(&mut self, size: usize) -> Result<Bytes, StreamError> {
        let Ok(mut state) = self.0.try_lock() else {
            return Err(StreamError::trap(
                "concurrent reads of stdin are not supported",
            ));
        };
        if state.current.is_empty() {
            match state.frames.try_recv() {
                Ok(frame) => state.take(frame),
                Err(mpsc::error::TryRecvError::Disconnected) => return Err(StreamError::Closed),
                Err(mpsc::error::TryRecvError::Empty) if state.closing || state.ended => {
                    state.ended = true;
                    return Err(StreamError::Closed);
                }
                Err(mpsc::error::TryRecvError::Empty) => return Ok(Bytes::new()),
            }
        }
        let n = size.min(state.current.len());
        Ok(state.current.split_to(n))
    }
}

/// How a wait for input ended.
enum Woke {
    Frame(Outbound),
    /// The host closed the input (what is queued is still delivered), or dropped it.
    Closing,
    Ended,
}

#[wasmtime_wasi::async_trait]
impl Pollable for FrameStdin {
    /// Waits for input with no deadline running. Ended by a frame, that frame's budget
    /// starts; by the end of input, [`Budget::ONE_WAY`] starts (time to finish and
    /// return). Dropped before either — the guest polled stdin together with something
    /// that was ready first, such as a timer, or only asked whether stdin is ready — the
    /// deadline from before the wait is back, the wait counted ([`Deadline::suspend`]).
    /// So only a guest with nothing to do but wait for stdin is spared a deadline.
    async fn ready(&mut self) {
        let mut state = self.0.lock().await;
        if !state.current.is_empty() || state.closing || state.ended {
            return;
        }
        let waiting = state.deadline.suspend();
        let close = state.stop.close_input.clone();
        let woke = tokio::select! {
            biased;
            frame = state.frames.recv() => frame.map_or(Woke::Ended, Woke::Frame),
            () = close.notified() => Woke::Closing,
        };
        waiting.idle();
        match woke {
            Woke::Frame(frame) => state.take(frame),
            Woke::Closing => {
                state.closing = true;
                state.deadline.extend(Budget::ONE_WAY);
            }
            Woke::Ended => {
                state.ended = true;
                state.deadline.extend(Budget::ONE_WAY);
            }
        }
    }
}

/// The per-frame deadline of a real command component (the test guest,
/// `tests/guests/command`) on tokio's paused clock. [`Deadline`] is measured on the
/// runtime's clock, so advancing the paused clock is time passing for it; the epoch
/// ticker, a real thread, only makes a running guest check it every 10 ms of real time.
/// While a guest runs, the paused clock stands still (the runtime is busy): the time a
/// guest takes on this machine never counts, only the steps the test makes.
#[cfg(test)]
mod tests {
    use super::super::{prepare, start, WasmSpec};
    use crate::budget::{Budget, Timeouts};
    use crate::component::compile::Compiler;
    use crate::log::ExtLog;
    use crate::sandbox::Policy;
    use crate::transport::{Connection, ExitReason, Inbound, Outbound};
    use serde_json::{json, Value};
    use std::future::Future;
    use std::path::{Path, PathBuf};
    use std::time::Duration;
    use tokio::sync::oneshot::error::TryRecvError;
    use tokio::time::Instant;
    use zot_protocol::{encode, HelloAck, HostFrame, ToolCall};

    /// The timeout the tool calls are sent with: their budget is this and the cancel grace.
    const CALL: Duration = Duration::from_millis(200);
    /// Far past every budget the guest was given (a call's, its start's).
    const LONG: Duration = Duration::from_secs(600);
    /// How far the paused clock moves at a time while a guest runs.
    const STEP: Duration = Duration::from_millis(100);
    /// Real time for a spinning guest to be stopped: only against a hang, never reached.
    const HANG: Duration = Duration::from_secs(60);

    /// Runs `test` on the paused clock (as `#[tokio::test(start_paused = true)]` does),
    /// with a scheduler that comes back to the test after every task it runs, not every
    /// 61: a spinning guest is polled once per epoch tick, so the test's steps of the
    /// clock come that often too.
    fn paused(test: impl Future<Output = ()>) {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .start_paused(true)
            .event_interval(1)
            .build()
            .unwrap()
            .block_on(test)
    }

    /// A folder of the test's own for the guest's log and the compilation cache.
    fn scratch(test: &str) -> PathBuf {
        std::env::temp_dir().join(format!("zot-command-{test}-{}", std::process::id()))
    }

    /// The test guest started with nothing granted, once it said `ready` and handled the
    /// `hello_ack` (a one-way frame).
    async fn started(dir: &Path) -> Connection {
        let log = ExtLog::open(&dir.join("log"));
        let wasm = Path::new(zot_test_guests::COMMAND);
        let loaded = prepare(
            wasm,
            &dir.join("cache"),
            &Compiler::in_process(),
            None,
            &log,
        )
        .await
        .unwrap();
        let spec = WasmSpec {
            policy: Policy::nothing_granted(),
            log,
            guest_output: true,
            max_frame: zot_protocol::DEFAULT_MAX_FRAME,
        };
        let mut conn = start(loaded, spec).unwrap();
        while next(&mut conn).await["type"] != "ready" {}
        let ack = HelloAck {
            protocol_version: zot_protocol::PROTOCOL_VERSION,
            ..Default::default()
        };
        assert_eq!(send(&conn, HostFrame::HelloAck(ack)).await, Budget::ONE_WAY);
        let note = next(&mut conn).await;
        assert!(
            note["message"].as_str().unwrap().starts_with("hello_ack "),
            "{note}"
        );
        conn
    }

    /// The guest's next frame.
    async fn next(conn: &mut Connection) -> Value {
        match conn.inbound.recv().await {
            Some(Inbound::Line(line, _)) => serde_json::from_slice(&line).unwrap(),
            Some(Inbound::Oversize { len, .. }) => panic!("a line of {len} bytes"),
            None => panic!("the guest is gone: {:?}", conn.exit.try_recv()),
        }
    }

    /// Sends a call of `tool` (timeout [`CALL`]).
    async fn call(conn: &Connection, id: &str, tool: &str) -> Budget {
        let frame = HostFrame::ToolCall(ToolCall {
            id: id.into(),
            name: tool.into(),
            args: json!({"id": id}),
            extra: Default::default(),
        });
        send(conn, frame).await
    }

    /// Sends `frame` with its budget, as the core does (a request's timeout: [`CALL`]).
    async fn send(conn: &Connection, frame: HostFrame) -> Budget {
        let budget = Budget::for_frame(&frame, &Timeouts::default(), Some(CALL));
        let line = encode(&frame);
        let sent = conn.outbound.send(Outbound {
            line,
            budget,
            room: None,
        });
        assert!(sent.await.is_ok(), "the guest's input is closed");
        budget
    }

    /// Calls `echo` and checks the answer.
    async fn echo(conn: &mut Connection, id: &str) {
        call(conn, id, "echo").await;
        let answer = next(conn).await;
        assert_eq!(answer["type"], "tool_result", "{answer}");
        assert_eq!(answer["id"], id, "{answer}");
        assert_eq!(answer["is_error"], false, "{answer}");
    }

    /// Calls `spin` (it never returns) and moves the clock a [`STEP`] at a time until
    /// the guest is stopped; checks it was stopped by its deadline, once the clock passed
    /// the call's budget, not before and at most a few steps after.
    async fn spin_until_stopped(conn: &mut Connection) {
        let sent = Instant::now();
        let budget = call(conn, "spin", "spin").await;
        let real = std::time::Instant::now();
        let exit = loop {
            match conn.exit.try_recv() {
                Ok(exit) => break exit,
                Err(TryRecvError::Empty) if real.elapsed() < HANG => {
                    tokio::time::advance(STEP).await
                }
                Err(e) => panic!("still running {:?} after the call: {e}", sent.elapsed()),
            }
        };
        assert_eq!(exit, ExitReason::DeadlineExceeded);
        let ran = sent.elapsed();
        assert!(ran >= budget.duration(), "stopped after {ran:?}");
        assert!(
            ran <= budget.duration() + 10 * STEP,
            "stopped after {ran:?}"
        );
    }

    #[test]
    fn a_command_waiting_for_input_runs_no_deadline_however_long_it_waits() {
        let dir = scratch("idle");
        paused(async {
            let mut conn = started(&dir).await;
            echo(&mut conn, "1").await;
            // The clock auto-advances only when no task can run: when the guest waits
            // for its next frame. Ten minutes pass, far past the budget of the frame it
            // handled and of its start.
            let waited = Instant::now();
            tokio::time::sleep(LONG).await;
            assert!(waited.elapsed() >= LONG);
            echo(&mut conn, "2").await;
            assert_eq!(conn.exit.try_recv(), Err(TryRecvError::Empty));
            // None of the wait counted: the next frame that runs on gets its whole budget.
            spin_until_stopped(&mut conn).await;
        });
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_command_running_past_its_deadline_is_stopped_when_the_clock_passes_it() {
        let dir = scratch("spin");
        paused(async {
            let mut conn = started(&dir).await;
            spin_until_stopped(&mut conn).await;
        });
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
