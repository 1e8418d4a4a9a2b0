//! One extension's one-way frames (events, panel keys, resizes, closes) in the order
//! they were sent, bounded by [`EVENT_QUEUE`] frames and [`EVENT_QUEUE_BYTES`]: past
//! either, the oldest waiting event makes room; a frame that finds none is not queued.

use super::{EVENT_QUEUE, EVENT_QUEUE_BYTES};
use crate::transport::Outbound;
use std::collections::VecDeque;
use std::sync::Mutex;
use tokio::sync::Notify;

/// The frames waiting, and their bytes; `true` marks an event (droppable).
#[derive(Default)]
struct Frames {
    frames: VecDeque<(Outbound, bool)>,
    bytes: usize,
}

/// The queue, and the wake-up of the task that feeds it to the transport.
#[derive(Default)]
pub(super) struct OneWay {
    queue: Mutex<Frames>,
    ready: Notify,
}

impl OneWay {
    /// Queues `frame` (`is_event`: droppable), dropping the oldest events while it does
    /// not fit: whether it was queued, and how many events were dropped (it too, if it
    /// is an event that was not queued).
    pub(super) fn push(&self, frame: Outbound, is_event: bool) -> (bool, u64) {
        let size = frame.line.as_bytes().len();
        let (queued, dropped) = {
            let mut q = self.queue.lock().unwrap();
            let mut dropped = 0;
            let full =
                |q: &Frames| q.frames.len() >= EVENT_QUEUE || q.bytes + size > EVENT_QUEUE_BYTES;
            while size <= EVENT_QUEUE_BYTES && full(&q) {
                let Some(oldest_event) = q.frames.iter().position(|(_, event)| *event) else {
                    break;
                };
                let (old, _) = q.frames.remove(oldest_event).expect("found above");
                q.bytes -= old.line.as_bytes().len();
                dropped += 1;
            }
            if size <= EVENT_QUEUE_BYTES && !full(&q) {
                q.bytes += size;
                q.frames.push_back((frame, is_event));
                (true, dropped)
            } else {
                (false, dropped + u64::from(is_event))
            }
        };
        if queued {
            self.ready.notify_one();
        }
        (queued, dropped)
    }

    /// The oldest frame waiting, if any.
    pub(super) fn pop(&self) -> Option<Outbound> {
        let mut q = self.queue.lock().unwrap();
        let (frame, _) = q.frames.pop_front()?;
        q.bytes -= frame.line.as_bytes().len();
        Some(frame)
    }

    /// Waits until a frame is queued or [`OneWay::wake`] is called.
    pub(super) async fn wait(&self) {
        self.ready.notified().await;
    }

    /// Wakes the waiter (the extension closed).
    pub(super) fn wake(&self) {
        self.ready.notify_one();
    }

    /// The bytes waiting.
    #[cfg(test)]
    pub(super) fn bytes(&self) -> usize {
        self.queue.lock().unwrap().bytes
    }
}
