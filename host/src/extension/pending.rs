//! The requests sent to one extension and waiting for its answer, by id (as lsp-server
//! keeps its `req_queue`): each id is new, an answer goes to its waiter only if it is of
//! the kind asked, and a request leaves the table when answered, abandoned or failed at
//! the extension's exit.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use tokio::sync::oneshot;
use zot_protocol::ExtFrame;

/// What a request asked, and so which reply answers it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    Command,
    Tool,
    Intercept,
}

/// What became of a reply.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Answered {
    /// Handed to its waiter (who may have just stopped waiting).
    Yes,
    /// Its id waits for another kind of reply: the request still waits.
    WrongKind,
    /// No request of that id waits (late, or never sent).
    NotPending,
}

/// One waiting request.
struct Waiting {
    kind: Kind,
    reply: oneshot::Sender<ExtFrame>,
}

/// The waiting requests of one extension.
pub(super) struct Pending {
    next_id: AtomicU64,
    waiting: Mutex<HashMap<String, Waiting>>,
}

impl Pending {
    /// None waiting; the first id is `"1"`.
    pub(super) fn new() -> Pending {
        Pending {
            next_id: AtomicU64::new(1),
            waiting: Mutex::default(),
        }
    }

    /// A new request of `kind`: its id, and where its reply will come.
    pub(super) fn add(&self, kind: Kind) -> (String, oneshot::Receiver<ExtFrame>) {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed).to_string();
        let (reply, rx) = oneshot::channel();
        self.waiting
            .lock()
            .unwrap()
            .insert(id.clone(), Waiting { kind, reply });
        (id, rx)
    }

    /// Hands `frame`, a reply of `kind` for request `id`, to its waiter.
    pub(super) fn answer(&self, kind: Kind, id: &str, frame: ExtFrame) -> Answered {
        let mut waiting = self.waiting.lock().unwrap();
        match waiting.get(id) {
            Some(w) if w.kind == kind => {
                let w = waiting.remove(id).expect("just found");
                let _ = w.reply.send(frame);
                Answered::Yes
            }
            Some(_) => Answered::WrongKind,
            None => Answered::NotPending,
        }
    }

    /// Forgets request `id` (its caller stopped waiting): true if it was still waiting.
    pub(super) fn forget(&self, id: &str) -> bool {
        self.waiting.lock().unwrap().remove(id).is_some()
    }

    /// Fails every waiting request (their waiters see the sender dropped).
    pub(super) fn fail_all(&self) {
        self.waiting.lock().unwrap().clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame() -> ExtFrame {
        ExtFrame::Ready(Default::default())
    }

    #[test]
    fn a_reply_reaches_only_a_waiting_request_of_its_kind() {
        let pending = Pending::new();
        let (command, mut command_rx) = pending.add(Kind::Command);
        let (tool, _tool_rx) = pending.add(Kind::Tool);
        assert_ne!(command, tool, "ids are new");
        assert_eq!(
            pending.answer(Kind::Tool, &command, frame()),
            Answered::WrongKind
        );
        assert!(command_rx.try_recv().is_err(), "answered by the wrong kind");
        assert_eq!(
            pending.answer(Kind::Command, &command, frame()),
            Answered::Yes
        );
        assert!(command_rx.try_recv().is_ok());
        assert_eq!(
            pending.answer(Kind::Command, &command, frame()),
            Answered::NotPending,
            "answered twice"
        );
        assert!(pending.forget(&tool));
        assert!(!pending.forget(&tool));
    }

    #[test]
    fn failing_all_ends_every_wait() {
        let pending = Pending::new();
        let (_, mut rx) = pending.add(Kind::Intercept);
        pending.fail_all();
        assert!(matches!(
            rx.try_recv(),
            Err(oneshot::error::TryRecvError::Closed)
        ));
    }
}
