//! Transports move frames and nothing else: a bounded queue of encoded frames towards the
//! extension, a bounded stream of lines from it, and an exit report when it is gone.
//! The protocol core (`crate::extension`) cannot tell transports apart; `mcp` stands
//! between it and another transport, to run an MCP server as an extension.

pub(crate) mod disk_walk;
mod exit;
#[cfg(target_os = "linux")]
mod held;
pub(crate) mod mcp;
#[cfg(any(test, feature = "test-support"))]
pub mod memory;
pub(crate) mod pipe;
#[cfg(target_os = "linux")]
pub(crate) mod sealed;
mod sink;
pub mod stdio;
pub(crate) mod wasm;

pub use exit::ExitReason;
pub use pipe::{input_lines, LineReader};
pub use sink::{FrameSink, OUTBOUND_BYTES};

use std::sync::Arc;
use tokio::sync::{mpsc, oneshot, OwnedSemaphorePermit, Semaphore};
use zot_protocol::Encoded;

/// How many encoded frames may wait for the extension to read them.
pub const OUTBOUND_QUEUE: usize = 2048;
/// How many lines from the extension may wait for the core.
pub const INBOUND_QUEUE: usize = 256;

/// How many bytes of lines from one extension may wait for the core, counting each line
/// until the core has handled it; a longer line waits until it is alone.
pub const INBOUND_BYTES: usize = 16 * 1024 * 1024;

/// One unit from the extension.
#[derive(Debug)]
pub enum Inbound {
    /// A complete line (a frame, still to be decoded), holding its share of
    /// [`INBOUND_BYTES`].
    Line(Vec<u8>, Option<OwnedSemaphorePermit>),
    /// A line over the size cap was skipped: its length, and its frame's `id` if that
    /// could be read from the part of it that was kept ([`zot_protocol::leading_id`]).
    Oversize {
        len: usize,
        id: Option<serde_json::Value>,
    },
}

/// Admits lines into the inbound queue while those waiting hold less than
/// [`INBOUND_BYTES`].
#[derive(Debug, Clone)]
pub struct LineGate {
    room: Arc<Semaphore>,
}

impl Default for LineGate {
    fn default() -> Self {
        LineGate {
            room: Arc::new(Semaphore::new(INBOUND_BYTES)),
        }
    }
}

impl LineGate {
    /// Wraps `line`, first waiting until there is room for it (a line longer than
    /// [`INBOUND_BYTES`] waits until no other is held).
    pub async fn admit(&self, line: Vec<u8>) -> Inbound {
        let share = line.len().clamp(1, INBOUND_BYTES) as u32;
        let slot = self.room.clone().acquire_many_owned(share).await.ok();
        Inbound::Line(line, slot)
    }
}

/// One encoded frame for the extension, with how long it may take to handle it (its
/// `Budget`, set by `Budget::for_frame`).
/// Transports that run the extension's code themselves enforce it; a subprocess is on its own.
#[derive(Debug)]
pub struct Outbound {
    /// The frame as one line of JSON, newline included; only the encoder makes one.
    pub line: Encoded,
    pub budget: crate::budget::Budget,
    /// The share of its connection's byte budget this frame holds until it is handled
    /// (dropped), if the sender counts it.
    pub(crate) room: Option<OwnedSemaphorePermit>,
}

/// Lines from an extension, as the core receives them: read from its pipe as they are
/// asked for (a subprocess: no task in between), or taken from a queue that a
/// transport running the extension itself fills.
pub enum Lines {
    Pipe(LineReader),
    Queue(mpsc::Receiver<Inbound>),
}

impl Lines {
    /// The next line; `None` once the extension's output is closed and drained.
    /// Cancel-safe.
    pub async fn recv(&mut self) -> Option<Inbound> {
        match self {
            Lines::Pipe(reader) => reader.recv().await,
            Lines::Queue(queue) => queue.recv().await,
        }
    }

    /// The calls owed a reply, for a reader that polls its pipe while one is
    /// ([`LineReader::pipe`]); the extension counts them.
    pub(crate) fn owed(&self) -> Option<Arc<pipe::Owed>> {
        match self {
            Lines::Pipe(reader) => reader.owed(),
            Lines::Queue(_) => None,
        }
    }

    /// The pipe as a caller outside the runtime's threads may read it itself while it
    /// waits for a reply ([`pipe::Direct`]), for a subprocess's.
    pub(crate) fn direct(&self) -> Option<pipe::Direct> {
        match self {
            Lines::Pipe(reader) => reader.direct(),
            Lines::Queue(_) => None,
        }
    }
}

impl From<mpsc::Receiver<Inbound>> for Lines {
    fn from(queue: mpsc::Receiver<Inbound>) -> Lines {
        Lines::Queue(queue)
    }
}

/// Stops an extension. Each call returns at once; the exit is reported on [`Connection::exit`].
pub trait Control: Send + Sync {
    /// Close the extension's input once the queued frames are written.
    fn close_input(&self);
    /// Ask it to stop (SIGTERM to the process group).
    fn terminate(&self);
    /// Stop it now (SIGKILL to the process group).
    fn kill(&self);
    /// Why it cannot answer now, if the transport can tell (a call that times out says
    /// it): a preview-1 module waiting in a read of stdin.
    fn stalled(&self) -> Option<String> {
        None
    }
}

/// A live transport, handed to the protocol core.
pub struct Connection {
    /// Frames to deliver, in order.
    pub outbound: FrameSink,
    /// Lines from the extension; `None` once its output is closed and drained.
    pub inbound: Lines,
    /// Resolves once the extension is gone.
    pub exit: oneshot::Receiver<ExitReason>,
    pub control: Box<dyn Control>,
}
