//! An in-process transport for unit tests of the protocol core: the test plays the
//! extension through a [`Peer`].

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
    /// The extension prints `line`.
    pub async fn print(&self, line: &str) {
        self.lines
            .send(Inbound::Line(line.as_bytes().to_vec(), None))
            .await
            .unwrap();
    }

    /// The next frame the host sent, as JSON.
    pub async fn next(&mut self) -> serde_json::Value {
        let bytes = self
            .frames
            .recv()
            .await
            .expect("the host closed the connection");
        serde_json::from_str(bytes.line.json()).unwrap()
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

/// A connected pair: the host's [`Connection`] and the extension's [`Peer`].
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
            outbound: out_tx,
            inbound: in_rx,
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
