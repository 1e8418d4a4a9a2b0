//! How a caller waits for its reply: by reading the extension's pipe itself when it can
//! ([`crate::transport::pipe::Direct`]), instead of being handed the reply by the
//! runtime's thread that read it (one more wake-up per call: on a VM tens of
//! microseconds, on one CPU one more context switch, and the runtime's reactor turned
//! once more). A thread in `block_on` on a multi-thread runtime (a synchronous embedder)
//! blocks on the pipe for up to [`HOLD`] ([`reads_itself`]). A task, or a caller in
//! `block_on` of a current-thread runtime, may not block its thread: it takes what the
//! pipe gives right after its call is written ([`glances`]) — on one CPU at once (the
//! extension the call woke has usually answered before the write returned), on more
//! by polling for a few microseconds, as the reader would — and otherwise waits for the
//! reader. A caller that could not take the pipe (another transport, or the pipe being
//! read) and may block its thread watches for its reply for a few microseconds, then
//! parks; not on a single CPU (it would only delay the extension).
use crate::transport::pipe::Owed;
use std::cell::Cell;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::runtime::{Handle, RuntimeFlavor};
use tokio::sync::oneshot::{self, error::TryRecvError};

/// Counts a call as sent and awaiting its reply (in the transport's count, if it keeps
/// one: a pipe reader that polls while calls await, [`crate::transport::Lines::owed`])
/// for as long as it lives.
pub(super) struct Awaiting(Option<Arc<Owed>>);

impl Awaiting {
    pub(super) fn new(owed: Option<&Arc<Owed>>) -> Awaiting {
        if let Some(owed) = owed {
            owed.awaited.fetch_add(1, Ordering::SeqCst);
            owed.sent.fetch_add(1, Ordering::SeqCst);
        }
        Awaiting(owed.cloned())
    }
}

impl Drop for Awaiting {
    fn drop(&mut self) {
        if let Some(owed) = &self.0 {
            owed.awaited.fetch_sub(1, Ordering::SeqCst);
        }
    }
}

/// How long a caller outside the runtime's tasks watches for its reply before parking:
/// longer than a quick tool's round trip, short next to a slow tool's.
pub(super) const WATCH: Duration = Duration::from_micros(50);

/// The reply, if it came while this caller watched for it (`Err`: the extension is gone);
/// `None` if it did not come within [`WATCH`]. For a caller that [`watches`].
pub(super) fn watch<T>(rx: &mut oneshot::Receiver<T>) -> Option<Result<T, ()>> {
    let until = Instant::now() + WATCH;
    loop {
        for _ in 0..64 {
            match rx.try_recv() {
                Ok(reply) => return Some(Ok(reply)),
                Err(TryRecvError::Closed) => return Some(Err(())),
                Err(TryRecvError::Empty) => std::hint::spin_loop(),
            }
        }
        if Instant::now() >= until {
            return None;
        }
    }
}

/// How long a caller reads the pipe itself before it hands it back to the reader and
/// waits for its reply to be handed over: a slow tool's caller does not keep the lines
/// from the reader (nor an exit whose output still drains) for longer.
pub(super) const HOLD: Duration = Duration::from_millis(10);

/// Whether this caller may block its thread reading the pipe itself: not a task, and in
/// a multi-thread runtime, whose threads run the tasks meanwhile.
pub(super) fn reads_itself() -> bool {
    tokio::task::try_id().is_none()
        && Handle::try_current()
            .is_ok_and(|rt| matches!(rt.runtime_flavor(), RuntimeFlavor::MultiThread))
}

/// How many calls in a row a caller in `block_on` [`glances`] at most: its runtime, if
/// it has a thread of its own, runs its tasks (and reads its other pipes) only while a
/// call waits, and the next call after that many does.
pub(super) const GLANCES_IN_A_ROW: u8 = 16;

/// Whether this caller, one that may not block its thread on the pipe, takes what the
/// pipe gives without waiting right after its call is written
/// ([`crate::transport::pipe::Turn::next_now`]), rather than be woken once the reader
/// took its reply. A task so served yields once its budget is spent, as it would reading
/// a socket that always has data; a caller in `block_on` of a current-thread runtime,
/// whose budget is new each call, waits once every [`GLANCES_IN_A_ROW`] + 1 calls.
pub(super) fn glances() -> bool {
    if tokio::task::try_id().is_some() {
        return true;
    }
    thread_local! {
        static IN_A_ROW: Cell<u8> = const { Cell::new(0) };
    }
    match Handle::try_current().map(|rt| rt.runtime_flavor()) {
        // It reads the pipe itself ([`reads_itself`]) out of the reactor's sight:
        // seen, the reply would wake the runtime's thread parked on the reactor.
        Ok(RuntimeFlavor::MultiThread) => false,
        Ok(RuntimeFlavor::CurrentThread) => IN_A_ROW.with(|in_a_row| match in_a_row.get() {
            GLANCES_IN_A_ROW.. => {
                in_a_row.set(0);
                false
            }
            n => {
                in_a_row.set(n + 1);
                true
            }
        }),
        // Outside a runtime, or one of a kind not known here: no reason to.
        Ok(_) | Err(_) => false,
    }
}

/// Whether this caller watches: one that [`reads_itself`], free to run on more than one
/// CPU.
pub(super) fn watches() -> bool {
    reads_itself() && crate::util::cpus::of_this_thread() > 1
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs `f` on a new thread allowed only `cpus` (Linux), so the test decides how many
    /// CPUs the caller has whatever the machine's count.
    #[cfg(target_os = "linux")]
    fn on_cpus<T: Send + 'static>(cpus: usize, f: impl FnOnce() -> T + Send + 'static) -> T {
        std::thread::spawn(move || {
            crate::util::cpus::limit_this_thread(cpus);
            f()
        })
        .join()
        .unwrap()
    }

    /// Whether a caller on a thread of its own, in `block_on` of a multi-thread runtime
    /// as a synchronous embedder's is, watches.
    #[cfg(target_os = "linux")]
    fn watches_in_block_on() -> bool {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .build()
            .unwrap();
        rt.block_on(async { watches() })
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_caller_outside_the_tasks_watches_for_its_reply_then_parks() {
        if std::thread::available_parallelism().map_or(1, usize::from) < 2 {
            // One CPU: the case below is `one_cpu_never_watches`.
            return assert!(!on_cpus(2, watches_in_block_on));
        }
        let outcome = on_cpus(2, || {
            let (tx, mut rx) = oneshot::channel();
            tx.send(7).unwrap();
            (watches_in_block_on(), watch(&mut rx))
        });
        assert_eq!(outcome, (true, Some(Ok(7))));
        // No reply within the watch: the caller stops watching (to park) after it, and
        // the reply that comes later is still there for the await.
        let (later, took) = on_cpus(2, || {
            let (tx, mut rx) = oneshot::channel();
            let started = Instant::now();
            let watched = watch(&mut rx);
            let took = started.elapsed();
            assert_eq!(watched, None);
            tx.send(8).unwrap();
            (rx.blocking_recv(), took)
        });
        assert_eq!(later, Ok(8));
        assert!(took >= WATCH, "stopped watching after {took:?}");
        // A sender dropped: the caller learns at once that no reply will come.
        let gone = on_cpus(2, || {
            let (tx, mut rx) = oneshot::channel::<u8>();
            drop(tx);
            watch(&mut rx)
        });
        assert_eq!(gone, Some(Err(())));
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn one_cpu_never_watches() {
        assert!(!on_cpus(1, watches_in_block_on));
    }

    #[test]
    fn a_task_and_a_current_thread_runtime_never_watch() {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .build()
            .unwrap();
        assert!(!rt.block_on(rt.spawn(async { watches() })).unwrap());
        let current = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        assert!(!current.block_on(async { watches() || reads_itself() }));
        assert!(!rt.block_on(rt.spawn(async { reads_itself() })).unwrap());
        assert!(
            rt.block_on(async { reads_itself() }),
            "block_on's own thread"
        );
    }

    /// A task glances at the pipe for its reply, always (its budget makes it yield); a
    /// caller in `block_on` of a current-thread runtime does, but waits once every
    /// `GLANCES_IN_A_ROW + 1` calls, so that the runtime's tasks run; one in `block_on`
    /// of a multi-thread runtime reads itself instead. On one CPU as on two.
    #[cfg(target_os = "linux")]
    #[test]
    fn a_caller_glances_and_lets_its_runtime_run() {
        let two = std::thread::available_parallelism().map_or(1, usize::from) >= 2;
        for cpus in [1, 2].into_iter().filter(|&cpus| cpus == 1 || two) {
            let (in_block_on, in_task, multi) = on_cpus(cpus, || {
                let current = tokio::runtime::Builder::new_current_thread()
                    .build()
                    .unwrap();
                let in_block_on: Vec<bool> = (0..3 * (GLANCES_IN_A_ROW as usize + 1))
                    .map(|_| current.block_on(async { glances() }))
                    .collect();
                let in_task = current.block_on(async {
                    let mut all = true;
                    for _ in 0..100 {
                        all &= tokio::spawn(async { glances() }).await.unwrap();
                    }
                    all
                });
                let multi = tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(1)
                    .build()
                    .unwrap();
                (in_block_on, in_task, multi.block_on(async { glances() }))
            });
            assert!(in_task, "a task on {cpus} CPUs");
            assert!(!multi, "block_on of a multi-thread runtime on {cpus} CPUs");
            let waits: Vec<usize> = (in_block_on.iter().enumerate())
                .filter(|(_, glanced)| !**glanced)
                .map(|(at, _)| at)
                .collect();
            let every = GLANCES_IN_A_ROW as usize + 1;
            assert_eq!(waits.len(), 3, "{in_block_on:?}");
            assert!(waits.windows(2).all(|w| w[1] - w[0] == every), "{waits:?}");
        }
    }
}
