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

use super::{add_wasi_to_linker, exit_for, Deadline, Guest, GuestData, Stop};
use crate::budget::Budget;
use crate::sandbox::Stdio;
use crate::transport::{pipe, ExitReason, Outbound};
use bytes::Bytes;
use std::sync::Arc;
use tokio::sync::{mpsc, Mutex, Notify};
use wasmtime::component::Linker;
use wasmtime_wasi::cli::{AsyncStdoutStream, IsTerminal, StdinStream};
use wasmtime_wasi::p2::bindings::Command;
use wasmtime_wasi::p2::{InputStream, Pollable, StreamError};

/// Pipe capacity of the guest's stdout and of its stderr.
const PIPE: usize = 64 * 1024;

/// Runs a command component until `run` returns, it traps, or the host stops it.
pub(super) async fn run(mut guest: Guest, frames: mpsc::Receiver<Outbound>) -> ExitReason {
    let stop = guest.stop.clone();
    let deadline = Arc::new(Deadline::default());
    let (guest_out, host_in) = tokio::io::duplex(PIPE);
    let exited = Arc::new(Notify::new());
    tokio::spawn(pipe::read_lines(
        host_in,
        guest.to_host.clone(),
        guest.max_frame,
        exited.clone(),
    ));
    let stderr = guest.guest_output.then(|| {
        let (guest_err, host_err) = tokio::io::duplex(PIPE);
        tokio::spawn(guest.log.clone().copy_stderr(host_err));
        Box::new(AsyncStdoutStream::new(PIPE, guest_err)) as _
    });
    guest.stdio = Stdio {
        stdin: Some(Box::new(FrameStdin::new(
            frames,
            deadline.clone(),
            stop.clone(),
        ))),
        stdout: Some(Box::new(AsyncStdoutStream::new(PIPE, guest_out))),
        stderr,
    };
    let (mut store, component, log) = guest.store(deadline.clone());
    let exit = async {
        let mut linker = Linker::<GuestData>::new(store.engine());
        if let Err(e) = add_wasi_to_linker(&mut linker) {
            return exit_for(&store, &e);
        }
        deadline.set(Budget::START);
        let command = tokio::select! {
            r = Command::instantiate_async(&mut store, &component, &linker) => match r {
                Ok(c) => c,
                Err(e) => return exit_for(&store, &e),
            },
            () = stop.kill.notified() => return stop.reason(),
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
    exited.notify_one();
    exit
}

/// The guest's stdin: frames from the host's queue, one after another. Every handle the
/// guest opens shares one state.
#[derive(Clone)]
struct FrameStdin(Arc<Mutex<StdinState>>);

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
