//! What the host tells the embedding application: notes, panels, prompts, exits; and
//! the queue they wait in, bounded in bytes as well as count. The sidecar prints these as
//! id-less JSON lines (docs/sidecar.md).

use serde::Serialize;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};
use tokio::sync::{mpsc, Notify as Wake};
use zot_protocol::{Empty, Notify, OpenPanel, PanelClose, PanelRender, Submit};

/// How many notifications may wait for the application.
pub const EVENT_QUEUE: usize = 4096;
/// How many bytes of notifications (as JSON) may wait for the application. Beyond it the
/// oldest notification from an extension is dropped; one larger than this alone is
/// never queued.
pub const EVENT_QUEUE_BYTES: usize = 16 * 1024 * 1024;

/// One notification for the embedding application.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum HostEvent {
    /// A note for the user.
    Notify {
        extension: String,
        #[serde(flatten)]
        frame: Notify,
    },
    /// Open a panel.
    OpenPanel {
        extension: String,
        #[serde(flatten)]
        frame: OpenPanel,
    },
    /// Redraw an open panel.
    PanelRender {
        extension: String,
        #[serde(flatten)]
        frame: PanelRender,
    },
    /// Close a panel.
    PanelClose {
        extension: String,
        #[serde(flatten)]
        frame: PanelClose,
    },
    /// Retract every note this extension pushed.
    ClearNotes {
        extension: String,
        #[serde(flatten)]
        frame: Empty,
    },
    /// Queue a user prompt (`text` already trimmed, never empty).
    Submit {
        extension: String,
        #[serde(flatten)]
        frame: Submit,
    },
    /// Run a slash command as if typed (`text` trimmed, starts with `/`).
    SubmitSlash {
        extension: String,
        #[serde(flatten)]
        frame: Submit,
    },
    /// The extension is gone; its commands and tools were removed.
    ExtensionExited {
        extension: String,
        reason: String,
        code: Option<i32>,
        signal: Option<i32>,
        /// The host stopped it (a reload, or the host's shutdown): the exit was asked
        /// for, not a crash.
        stopped: bool,
    },
    /// The extension, gone by itself (`extension_exited` said why), was started again
    /// after `delay_ms`: restart `attempt` since it last ran stably. Its registrations
    /// come again as it registers them.
    ExtensionRestarted {
        extension: String,
        attempt: u32,
        delay_ms: u64,
        /// Why it had exited (`extension_exited`'s `reason`): a component stopped for a
        /// limit says so here too.
        after: String,
    },
    /// The extension's registrations changed (registered, shadowed, or removed).
    RegistryChanged { extension: String },
    /// The application did not read in time: this many notifications from extensions
    /// were dropped, the oldest first, since the last such report (each also counted in
    /// its extension's log). Comes before the notifications that were kept.
    NotificationsDropped { count: u64 },
}

/// The length of `value` as JSON, computed without making the text.
pub(crate) fn json_len(value: &impl Serialize) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    let _ = serde_json::to_writer(&mut count, value);
    count.0
}

/// Told when one of its notifications was dropped.
pub(crate) trait Origin: Send + Sync {
    fn dropped(&self);
}

/// The sending side of the application's notifications. Cheap to clone; the receiver
/// sees the end once every clone is dropped.
pub(crate) struct EventQueue {
    shared: Arc<Shared>,
}

struct Shared {
    state: Mutex<State>,
    wake: Wake,
    /// The pump took a notification: there may be room.
    room: Wake,
    senders: AtomicUsize,
}

#[derive(Default)]
struct State {
    items: VecDeque<Item>,
    bytes: usize,
    /// Dropped since the last report was taken.
    dropped: u64,
    /// No more senders, or the receiver is gone.
    closed: bool,
}

struct Item {
    event: HostEvent,
    weight: usize,
    /// The extension it came from; `None`: the host's own, never dropped.
    origin: Option<Weak<dyn Origin>>,
}

impl EventQueue {
    /// A queue and the stream the application reads it from. Must be called inside a
    /// tokio runtime: a task moves notifications from the queue to the stream (which
    /// holds one at a time), so what waits is bounded by the queue.
    pub(crate) fn channel() -> (EventQueue, mpsc::Receiver<HostEvent>) {
        let shared = Arc::new(Shared {
            state: Mutex::new(State::default()),
            wake: Wake::new(),
            room: Wake::new(),
            senders: AtomicUsize::new(1),
        });
        let (tx, rx) = mpsc::channel(1);
        tokio::spawn(pump(shared.clone(), tx));
        (EventQueue { shared }, rx)
    }

    /// Queues a notification from an extension. When the queue is full (in count or in
    /// bytes) this waits for room, at most `wait` (slowing only that extension); then the
    /// oldest notifications from extensions are dropped to make room. One larger than
    /// the whole queue is dropped at once.
    pub(crate) async fn push_from(
        &self,
        event: HostEvent,
        origin: Weak<dyn Origin>,
        wait: std::time::Duration,
    ) {
        let weight = json_len(&event) + 1;
        if weight <= EVENT_QUEUE_BYTES {
            self.room_for(weight, wait).await;
        }
        self.push(event, weight, Some(origin));
    }

    /// Waits until a notification of `weight` bytes fits, at most `wait`.
    async fn room_for(&self, weight: usize, wait: std::time::Duration) {
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            let room = self.shared.room.notified();
            tokio::pin!(room);
            room.as_mut().enable();
            {
                let st = self.shared.state.lock().unwrap();
                if st.closed || fits(&st, weight) {
                    return;
                }
            }
            if tokio::time::timeout_at(deadline, room).await.is_err() {
                return;
            }
        }
    }

    /// Queues one of the host's own notifications (exits, registry changes): never
    /// dropped; a `registry_changed` already waiting is not queued twice.
    pub(crate) fn push_own(&self, event: HostEvent) {
        let weight = json_len(&event) + 1;
        self.push(event, weight, None);
    }

    fn push(&self, event: HostEvent, weight: usize, origin: Option<Weak<dyn Origin>>) {
        let mut dropped = Vec::new();
        {
            let mut st = self.shared.state.lock().unwrap();
            if st.closed {
                return;
            }
            if origin.is_none() && st.items.iter().any(|i| i.event == event) {
                return;
            }
            match origin {
                Some(origin) if weight > EVENT_QUEUE_BYTES => dropped.push(origin),
                origin => {
                    let droppable = origin.is_some();
                    while droppable && !fits(&st, weight) {
                        let Some(at) = st.items.iter().position(|i| i.origin.is_some()) else {
                            break;
                        };
                        let old = st.items.remove(at).expect("position is in the queue");
                        st.bytes -= old.weight;
                        dropped.extend(old.origin);
                    }
                    if !droppable || fits(&st, weight) {
                        st.bytes += weight;
                        st.items.push_back(Item {
                            event,
                            weight,
                            origin,
                        });
                    } else {
                        dropped.extend(origin);
                    }
                }
            }
            st.dropped += dropped.len() as u64;
        }
        self.shared.wake.notify_one();
        for origin in dropped.iter().filter_map(Weak::upgrade) {
            origin.dropped();
        }
    }
}

impl Clone for EventQueue {
    fn clone(&self) -> Self {
        self.shared.senders.fetch_add(1, Ordering::SeqCst);
        EventQueue {
            shared: self.shared.clone(),
        }
    }
}

impl Drop for EventQueue {
    fn drop(&mut self) {
        if self.shared.senders.fetch_sub(1, Ordering::SeqCst) == 1 {
            self.shared.state.lock().unwrap().closed = true;
            self.shared.wake.notify_one();
        }
    }
}

/// Moves notifications to the application, a drop report first when some were dropped,
/// until every sender is gone (then what waits is still moved) or the receiver is.
async fn pump(shared: Arc<Shared>, tx: mpsc::Sender<HostEvent>) {
    loop {
        let next = {
            let mut st = shared.state.lock().unwrap();
            if st.dropped > 0 {
                let count = std::mem::take(&mut st.dropped);
                Some(HostEvent::NotificationsDropped { count })
            } else if let Some(item) = st.items.pop_front() {
                st.bytes -= item.weight;
                shared.room.notify_waiters();
                Some(item.event)
            } else if st.closed {
                return;
            } else {
                None
            }
        };
        match next {
            Some(event) => {
                if tx.send(event).await.is_err() {
                    close(&shared);
                    return;
                }
            }
            None => {
                tokio::select! {
                    () = shared.wake.notified() => {}
                    () = tx.closed() => {
                        close(&shared);
                        return;
                    }
                }
            }
        }
    }
}

/// Whether a notification of `weight` bytes fits in the queue as it is.
fn fits(st: &State, weight: usize) -> bool {
    st.items.len() < EVENT_QUEUE && st.bytes + weight <= EVENT_QUEUE_BYTES
}

/// The receiver is gone: nothing more is kept.
fn close(shared: &Shared) {
    let mut st = shared.state.lock().unwrap();
    st.closed = true;
    st.items.clear();
    st.bytes = 0;
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicU64;
    use std::time::Duration;

    #[derive(Default)]
    struct Counted(AtomicU64);

    impl Origin for Counted {
        fn dropped(&self) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    fn note(message: &str) -> HostEvent {
        HostEvent::Notify {
            extension: "e".into(),
            frame: Notify {
                level: "info".into(),
                message: message.into(),
                extra: Default::default(),
            },
        }
    }

    #[tokio::test]
    async fn the_oldest_notifications_are_dropped_and_reported_first() {
        let (queue, mut rx) = EventQueue::channel();
        let origin = Arc::new(Counted::default());
        let weak = || Arc::downgrade(&origin) as Weak<dyn Origin>;
        let third = "x".repeat(EVENT_QUEUE_BYTES / 3);
        // The pump takes the first one and holds it; the queue then fits two more.
        for i in 0..6 {
            queue
                .push_from(note(&format!("{i}{third}")), weak(), Duration::ZERO)
                .await;
            tokio::task::yield_now().await;
        }
        queue.push_own(HostEvent::RegistryChanged {
            extension: "e".into(),
        });
        queue.push_own(HostEvent::RegistryChanged {
            extension: "e".into(),
        });
        // Larger than the whole queue: dropped at once.
        queue
            .push_from(note(&"x".repeat(EVENT_QUEUE_BYTES)), weak(), Duration::ZERO)
            .await;
        drop(queue);
        let mut got = Vec::new();
        while let Some(event) = rx.recv().await {
            got.push(match event {
                HostEvent::Notify { frame, .. } => frame.message[..1].to_string(),
                HostEvent::NotificationsDropped { count } => format!("dropped {count}"),
                HostEvent::RegistryChanged { .. } => "changed".into(),
                other => panic!("{other:?}"),
            });
        }
        let dropped = origin.0.load(Ordering::SeqCst);
        assert!(got.contains(&"5".to_string()), "{got:?}");
        assert!(got.iter().any(|g| g.starts_with("dropped")), "{got:?}");
        assert_eq!(got.iter().filter(|g| *g == "changed").count(), 1, "{got:?}");
        let delivered = got.iter().filter(|g| g.len() == 1).count() as u64;
        assert_eq!(delivered + dropped, 7, "{got:?}");
    }
}
