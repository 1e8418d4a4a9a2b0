//! The requests sent to one extension and waiting for its answer, by id (as lsp-server
//! keeps its `req_queue`): each id is new, an answer goes to its waiter only if it is of
//! the kind asked, and a request leaves the table when answered, abandoned or failed at
//! the extension's exit.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use tokio::sync::{mpsc, oneshot};
use zot_protocol::{ExtFrame, ToolProgress};

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
    /// Where a tool call's `tool_progress` frames go, if its caller wants them.
    progress: Option<mpsc::Sender<ToolProgress>>,
}

/// What became of a `tool_progress` frame.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Progressed {
    /// Handed to the call's caller, or dropped because it asked for none.
    Yes,
    /// Dropped: the caller's queue is full or it stopped reading.
    Dropped,
    /// No tool call of that id waits (late, or never sent).
    NotPending,
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

    /// A new request of `kind`: its id, and where its reply will come; a tool call's
    /// progress goes to `progress`.
    pub(super) fn add(
        &self,
        kind: Kind,
        progress: Option<mpsc::Sender<ToolProgress>>,
    ) -> (String, oneshot::Receiver<ExtFrame>) {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed).to_string();
        let (reply, rx) = oneshot::channel();
        let waiting = Waiting {
            kind,
            reply,
            progress,
        };
        self.waiting.lock().unwrap().insert(id.clone(), waiting);
        (id, rx)
    }

    /// Hands `frame` to the caller of the tool call it names, without waiting.
    pub(super) fn progress(&self, frame: ToolProgress) -> Progressed {
        let waiting = self.waiting.lock().unwrap();
        match waiting.get(&frame.id) {
            Some(Waiting {
                kind: Kind::Tool,
                progress: Some(to),
                ..
            }) => match to.try_send(frame) {
                Ok(()) => Progressed::Yes,
                Err(_) => Progressed::Dropped,
            },
            Some(Waiting {
                kind: Kind::Tool,
                progress: None,
                ..
            }) => Progressed::Yes,
            Some(Waiting {
                kind: Kind::Command | Kind::Intercept,
                ..
            })
            | None => Progressed::NotPending,
        }
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
        let (command, mut command_rx) = pending.add(Kind::Command, None);
        let (tool, _tool_rx) = pending.add(Kind::Tool, None);
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
    fn progress_reaches_only_the_tool_call_it_names_and_never_waits() {
        let pending = Pending::new();
        let (to, mut from) = mpsc::channel(1);
        let (tool, _rx) = pending.add(Kind::Tool, Some(to));
        let (command, _crx) = pending.add(Kind::Command, None);
        let (quiet, _qrx) = pending.add(Kind::Tool, None);
        let of = |id: &str| ToolProgress {
            id: id.to_string(),
            progress: Some(1.0),
            ..Default::default()
        };
        assert_eq!(pending.progress(of(&tool)), Progressed::Yes);
        assert_eq!(pending.progress(of(&tool)), Progressed::Dropped, "full");
        assert_eq!(from.try_recv().unwrap().id, tool);
        assert_eq!(pending.progress(of(&command)), Progressed::NotPending);
        assert_eq!(pending.progress(of(&quiet)), Progressed::Yes);
        assert_eq!(pending.progress(of("77")), Progressed::NotPending);
        assert!(pending.forget(&tool));
        assert_eq!(pending.progress(of(&tool)), Progressed::NotPending);
    }

    #[test]
    fn failing_all_ends_every_wait() {
        let pending = Pending::new();
        let (_, mut rx) = pending.add(Kind::Intercept, None);
        pending.fail_all();
        assert!(matches!(
            rx.try_recv(),
            Err(oneshot::error::TryRecvError::Closed)
        ));
    }
}
