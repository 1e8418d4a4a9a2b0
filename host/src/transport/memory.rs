//! An in-process transport for tests, as lsp-server's `Connection::memory`: the host's
//! [`Connection`] and the extension's end, a [`Peer`] the test plays, joined by channels
//! (no process, no component). The core's unit tests use it; an embedder gets it with the
//! `test-support` feature, and [`launcher::Scripted`](crate::launcher::Scripted) starts
//! every extension of a [`Host`](crate::Host) as such a peer.

use super::{Connection, Control, ExitReason, Inbound, Outbound};
use std::sync::{Arc, Mutex};
use tokio::sync::{mpsc, oneshot, Notify};

/// The extension's end of an in-memory connection.
pub struct Peer {
    /// Lines "printed" by the extension.
    pub lines: mpsc::Sender<Inbound>,
    /// Frames the host sent.
    pub frames: mpsc::Receiver<Outbound>,
    exit: Arc<Mutex<Option<oneshot::Sender<ExitReason>>>>,
}

impl Peer {
    /// The extension prints `line` (one frame, without its newline). Panics once the
    /// host has dropped the connection.
    pub async fn print(&self, line: &str) {
        self.lines
            .send(Inbound::Line(line.as_bytes().to_vec(), None))
            .await
            .expect("the host dropped the connection");
    }

    /// The next frame the host sent, as JSON; `None` once the host closed the connection.
    pub async fn recv(&mut self) -> Option<serde_json::Value> {
        let frame = self.frames.recv().await?;
        Some(serde_json::from_str(frame.line.json()).expect("the host sends JSON"))
    }

    /// The next frame the host sent, as JSON. Panics if the host closed the connection.
    pub async fn next(&mut self) -> serde_json::Value {
        self.recv().await.expect("the host closed the connection")
    }

    /// The extension exits with `code`: its output closes and the exit is reported.
    pub fn exit(self, code: i32) {
        if let Some(tx) = self.exit.lock().unwrap().take() {
            let _ = tx.send(ExitReason::Exited(code));
        }
    }
}

/// Stops the extension as a signal stops a process: its output closes, its exit is
/// reported.
struct Kill {
    exit: Arc<Mutex<Option<oneshot::Sender<ExitReason>>>>,
    output: Arc<Notify>,
}

impl Control for Kill {
    fn close_input(&self) {}
    fn terminate(&self) {
        self.kill();
    }
    fn kill(&self) {
        if let Some(tx) = self.exit.lock().unwrap().take() {
            self.output.notify_one();
            let _ = tx.send(ExitReason::Signalled(9));
        }
    }
}

/// A connected pair: the host's [`Connection`] and the extension's [`Peer`], with room
/// for `queue` frames each way. Must be called inside a tokio runtime.
///
/// ```
/// use zot_host::transport::{memory, ExitReason, Inbound};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let (mut connection, peer) = memory::pair(16);
/// peer.print(r#"{"type":"ready"}"#).await;
/// let Some(Inbound::Line(line, _)) = connection.inbound.recv().await else {
///     panic!("the line reaches the host");
/// };
/// assert_eq!(line, br#"{"type":"ready"}"#);
/// peer.exit(0);
/// assert!(connection.inbound.recv().await.is_none(), "its output closed");
/// assert!(matches!(connection.exit.await, Ok(ExitReason::Exited(0))));
/// # }
/// ```
pub fn pair(queue: usize) -> (Connection, Peer) {
    let (out_tx, out_rx) = mpsc::channel(queue);
    let (in_tx, mut printed) = mpsc::channel(queue);
    let (exit_tx, exit_rx) = oneshot::channel();
    let exit = Arc::new(Mutex::new(Some(exit_tx)));
    // What the peer prints reaches the host until the peer closes it or is killed.
    let output = Arc::new(Notify::new());
    let (to_host, in_rx) = mpsc::channel(queue);
    let killed = output.clone();
    tokio::spawn(async move {
        loop {
            tokio::select! {
                line = printed.recv() => {
                    let Some(line) = line else { return };
                    if to_host.send(line).await.is_err() {
                        return;
                    }
                }
                () = killed.notified() => return,
            }
        }
    });
    (
        Connection {
            outbound: out_tx.into(),
            inbound: in_rx.into(),
            exit: exit_rx,
            control: Box::new(Kill {
                exit: exit.clone(),
                output,
            }),
        },
        Peer {
            lines: in_tx,
            frames: out_rx,
            exit,
        },
    )
}
