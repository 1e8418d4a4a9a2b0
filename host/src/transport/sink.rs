//! Where the core puts frames for an extension: straight into a subprocess's stdin, or
//! into a queue that a transport running the extension itself reads.
//!
//! Into a pipe, the sender writes its frame itself when nothing is waiting before it and
//! the pipe takes it whole at once (the common case: a call on an idle extension costs
//! one `write`, no task in between). Otherwise the frame (or what the pipe did not take
//! of it) waits in order for the writer task, which writes as the pipe drains. Order is
//! kept by one lock: a frame is written directly only while none waits and the writer
//! is not mid-frame.

use super::{Outbound, OUTBOUND_QUEUE};

/// How many bytes of frames may wait for a subprocess to read them, beyond the one being
/// written; a frame that finds none waiting is taken whatever its size.
pub const OUTBOUND_BYTES: usize = 64 * 1024 * 1024;
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use tokio::net::unix::pipe;
use tokio::sync::mpsc::error::{SendError, TrySendError};
use tokio::sync::{mpsc, Notify};

/// Frames for one extension, in order: into a pipe, at most [`OUTBOUND_QUEUE`] frames and
/// [`OUTBOUND_BYTES`] bytes waiting (a frame alone may be larger).
#[derive(Clone)]
pub struct FrameSink(To);

#[derive(Clone)]
enum To {
    Pipe(Arc<PipeSink>),
    Queue(mpsc::Sender<Outbound>),
}

impl From<mpsc::Sender<Outbound>> for FrameSink {
    fn from(queue: mpsc::Sender<Outbound>) -> FrameSink {
        FrameSink(To::Queue(queue))
    }
}

impl From<Arc<PipeSink>> for FrameSink {
    fn from(sink: Arc<PipeSink>) -> FrameSink {
        FrameSink(To::Pipe(sink))
    }
}

impl FrameSink {
    /// Queues (or writes) `frame` without waiting; fails if the queue is full, or the
    /// extension's input is closed.
    pub fn try_send(&self, frame: Outbound) -> Result<(), TrySendError<Outbound>> {
        match &self.0 {
            To::Pipe(sink) => sink.try_send(frame),
            To::Queue(queue) => queue.try_send(frame),
        }
    }

    /// Queues (or writes) `frame`, waiting for room; fails once the input is closed.
    pub async fn send(&self, mut frame: Outbound) -> Result<(), SendError<Outbound>> {
        match &self.0 {
            To::Pipe(sink) => loop {
                let room = sink.room.notified();
                tokio::pin!(room);
                room.as_mut().enable();
                match sink.try_send(frame) {
                    Err(TrySendError::Full(back)) => frame = back,
                    Err(TrySendError::Closed(back)) => return Err(SendError(back)),
                    Ok(()) => return Ok(()),
                }
                room.await;
            },
            To::Queue(queue) => queue.send(frame).await,
        }
    }
}

/// A subprocess's stdin, written by senders directly or by [`write_queued`].
pub(crate) struct PipeSink {
    state: Mutex<State>,
    /// A frame was queued, or the input is to be closed.
    queued: Notify,
    /// A queued frame was written (or dropped): there is room.
    room: Notify,
}

struct State {
    /// `None` once closed: then nothing more is taken.
    pipe: Option<Arc<pipe::Sender>>,
    /// Frames waiting, the first possibly part-written (`written` bytes of it), and
    /// their size.
    waiting: VecDeque<Outbound>,
    written: usize,
    bytes: usize,
    /// The writer task holds a frame it took from `waiting`, writing it.
    writing: bool,
    /// Close once what waits is written.
    closing: bool,
}

impl PipeSink {
    /// A sink writing into `pipe`, and the writer task to spawn beside it.
    pub(crate) fn new(
        pipe: pipe::Sender,
    ) -> (Arc<PipeSink>, impl std::future::Future<Output = ()>) {
        let sink = Arc::new(PipeSink {
            state: Mutex::new(State {
                pipe: Some(Arc::new(pipe)),
                waiting: VecDeque::new(),
                written: 0,
                bytes: 0,
                writing: false,
                closing: false,
            }),
            queued: Notify::new(),
            room: Notify::new(),
        });
        (sink.clone(), write_queued(sink))
    }

    /// Closes the pipe once every frame taken before is written.
    pub(crate) fn close_input(&self) {
        self.state.lock().unwrap().closing = true;
        self.queued.notify_one();
    }

    fn try_send(&self, frame: Outbound) -> Result<(), TrySendError<Outbound>> {
        let mut st = self.state.lock().unwrap();
        let Some(pipe) = st.pipe.as_ref().filter(|_| !st.closing) else {
            return Err(TrySendError::Closed(frame));
        };
        if st.waiting.is_empty() && !st.writing {
            let bytes = frame.line.as_bytes();
            match pipe.try_write(bytes) {
                Ok(n) if n == bytes.len() => return Ok(()),
                Ok(n) => st.written = n,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => st.written = 0,
                Err(_) => {
                    st.pipe = None;
                    return Err(TrySendError::Closed(frame));
                }
            }
        } else if st.waiting.len() >= OUTBOUND_QUEUE
            || (!st.waiting.is_empty() && st.bytes + frame.line.as_bytes().len() > OUTBOUND_BYTES)
        {
            return Err(TrySendError::Full(frame));
        }
        st.bytes += frame.line.as_bytes().len();
        st.waiting.push_back(frame);
        drop(st);
        self.queued.notify_one();
        Ok(())
    }
}

/// Writes the frames that wait, in order, as the pipe takes them, until the input is
/// closed (after what waited is written) or a write fails; then closes the pipe.
async fn write_queued(sink: Arc<PipeSink>) {
    loop {
        let next = {
            let mut st = sink.state.lock().unwrap();
            match &st.pipe {
                Some(pipe) if !st.waiting.is_empty() => {
                    let pipe = pipe.clone();
                    st.writing = true;
                    let from = std::mem::take(&mut st.written);
                    let frame = st.waiting.pop_front();
                    if let Some(frame) = &frame {
                        st.bytes -= frame.line.as_bytes().len();
                    }
                    frame.map(|frame| (pipe, frame, from))
                }
                Some(_) if !st.closing => None,
                _ => break,
            }
        };
        let Some((pipe, frame, from)) = next else {
            sink.queued.notified().await;
            continue;
        };
        let ok = write_all(&pipe, &frame.line.as_bytes()[from..]).await;
        drop((pipe, frame));
        let mut st = sink.state.lock().unwrap();
        st.writing = false;
        if !ok {
            st.pipe = None;
        }
        drop(st);
        sink.room.notify_waiters();
    }
    let mut st = sink.state.lock().unwrap();
    st.pipe = None;
    st.waiting.clear();
    st.bytes = 0;
    drop(st);
    sink.room.notify_waiters();
}

/// Writes all of `bytes`, waiting for the pipe to take them. False if it fails.
async fn write_all(pipe: &pipe::Sender, mut bytes: &[u8]) -> bool {
    while !bytes.is_empty() {
        if pipe.writable().await.is_err() {
            return false;
        }
        match pipe.try_write(bytes) {
            Ok(n) => bytes = &bytes[n..],
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(_) => return false,
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::budget::Budget;
    use serde_json::{json, Value};
    use tokio::io::AsyncReadExt;

    fn frame(sender: usize, seq: usize, pad: usize) -> Outbound {
        Outbound {
            line: zot_protocol::encode(&json!({"s": sender, "n": seq, "pad": "x".repeat(pad)})),
            budget: Budget::ONE_WAY,
            room: None,
        }
    }

    fn sink() -> (FrameSink, Arc<PipeSink>, pipe::Receiver) {
        let (tx, rx) = pipe::pipe().unwrap();
        let (input, writer) = PipeSink::new(tx);
        tokio::spawn(writer);
        (input.clone().into(), input, rx)
    }

    /// Every line the pipe carried until its end.
    async fn lines(mut rx: pipe::Receiver) -> Vec<Value> {
        let mut all = Vec::new();
        rx.read_to_end(&mut all).await.unwrap();
        all.split(|b| *b == b'\n')
            .filter(|l| !l.is_empty())
            .map(|l| serde_json::from_slice(l).expect("a whole line"))
            .collect()
    }

    #[tokio::test]
    async fn frames_from_many_senders_arrive_whole_and_in_each_senders_order() {
        let (out, input, rx) = sink();
        let reader = tokio::spawn(lines(rx));
        // 8 senders × 100 frames of ~9 KiB: far more than the pipe holds, so most
        // frames wait, some are written part-way by a sender and finished by the writer.
        let senders: Vec<_> = (0..8)
            .map(|s| {
                let out = out.clone();
                tokio::spawn(async move {
                    for n in 0..100 {
                        out.send(frame(s, n, 9000 + n)).await.unwrap();
                    }
                })
            })
            .collect();
        for s in senders {
            s.await.unwrap();
        }
        input.close_input();
        let got = reader.await.unwrap();
        assert_eq!(got.len(), 800);
        for s in 0..8 {
            let seqs: Vec<u64> = got
                .iter()
                .filter(|v| v["s"] == s)
                .map(|v| v["n"].as_u64().unwrap())
                .collect();
            assert_eq!(seqs, (0..100).collect::<Vec<_>>(), "sender {s}");
        }
    }

    #[tokio::test]
    async fn a_sink_that_nobody_reads_holds_at_most_its_queue_then_closes_after_it() {
        let (out, input, rx) = sink();
        let mut taken = 0;
        let full = loop {
            match out.try_send(frame(0, taken, 1000)) {
                Ok(()) => taken += 1,
                Err(e) => break e,
            }
        };
        assert!(matches!(full, TrySendError::Full(_)), "{full:?}");
        // Those the pipe took (about 64 KiB of them), and the queue.
        assert!(
            (OUTBOUND_QUEUE..OUTBOUND_QUEUE + 100).contains(&taken),
            "took {taken}"
        );
        input.close_input();
        assert!(matches!(
            out.try_send(frame(0, 0, 1)),
            Err(TrySendError::Closed(_))
        ));
        // Closing writes what waited first: nothing taken is lost.
        let got = lines(rx).await;
        assert_eq!(got.len(), taken);
        assert!(got.iter().enumerate().all(|(i, v)| v["n"] == i));
    }

    #[tokio::test]
    async fn what_waits_is_bounded_in_bytes_but_a_frame_alone_is_taken() {
        let (out, _input, _rx) = sink();
        let big = OUTBOUND_BYTES / 2 + 1;
        // The pipe takes a first 64 KiB of the first frame at most: it waits, the second
        // does not fit beside it, and alone it would be taken.
        out.try_send(frame(0, 0, big)).unwrap();
        let full = out.try_send(frame(0, 1, big)).unwrap_err();
        assert!(matches!(full, TrySendError::Full(_)), "{full:?}");
        out.try_send(frame(0, 2, 1000)).unwrap();
    }

    #[tokio::test]
    async fn a_pipe_whose_reader_is_gone_closes_the_sink() {
        let (out, _input, rx) = sink();
        drop(rx);
        // Taken (tokio may not know the pipe writable yet, then it waits for the
        // writer) or refused at once; either way the sink closes.
        let _ = out.send(frame(0, 0, 10)).await;
        let closed = async {
            while !matches!(out.try_send(frame(0, 1, 10)), Err(TrySendError::Closed(_))) {
                tokio::time::sleep(std::time::Duration::from_millis(1)).await;
            }
        };
        tokio::time::timeout(std::time::Duration::from_secs(10), closed)
            .await
            .expect("the sink closed");
    }
}
