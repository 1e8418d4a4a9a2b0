//! How a caller that is not a task of the runtime waits for its reply: a thread in
//! `block_on` on a multi-thread runtime (a synchronous embedder) reads the extension's
//! pipe itself when it can ([`crate::transport::pipe::Direct`]): the reply wakes that
//! thread alone, not a runtime thread that would hand it over (one more wake-up per
//! call; on a VM tens of microseconds, on one CPU one more context switch). Otherwise
//! (another transport, or the pipe being read) it first watches for its reply for a few
//! microseconds, then parks. A task never does either (it would hold a runtime thread),
//! nor does a caller on a current-thread runtime (the reply is read on its own thread,
//! by a task that blocking would stop); one on a single CPU does not watch (it would
//! only delay the extension).
use crate::transport::pipe::Owed;
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
            // SAFETY: as in `util::cpus::of_this_thread`; CPU_SET is given CPUs below the set's size.
            unsafe {
                let mut all: libc::cpu_set_t = std::mem::zeroed();
                assert_eq!(
                    libc::sched_getaffinity(0, std::mem::size_of_val(&all), &mut all),
                    0
                );
                let mut set: libc::cpu_set_t = std::mem::zeroed();
                let allowed = (0..libc::CPU_SETSIZE as usize).filter(|&c| libc::CPU_ISSET(c, &all));
                for cpu in allowed.take(cpus) {
                    libc::CPU_SET(cpu, &mut set);
                }
                assert_eq!(
                    libc::sched_setaffinity(0, std::mem::size_of_val(&set), &set),
                    0
                );
            }
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
}
