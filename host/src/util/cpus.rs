//! How many CPUs this thread may run on: whether waiting by watching (spinning) can
//! pay off, since with one CPU it only keeps the awaited process from running.

/// How long a thread's count is used before the kernel is asked again: an affinity
/// changed meanwhile (`taskset -p`) counts within that.
#[cfg(target_os = "linux")]
const FRESH: std::time::Duration = std::time::Duration::from_millis(100);

#[cfg(target_os = "linux")]
thread_local! {
    /// This thread's count, and when it was asked.
    static KNOWN: std::cell::Cell<Option<(usize, std::time::Instant)>> =
        const { std::cell::Cell::new(None) };
}

/// How many CPUs this thread may run on (its affinity, which `taskset` sets), asked of
/// the kernel at most every [`FRESH`] per thread: the hot path asks once a call.
#[cfg(target_os = "linux")]
pub fn of_this_thread() -> usize {
    KNOWN.with(|known| match known.get() {
        Some((count, at)) if at.elapsed() < FRESH => count,
        _ => {
            let count = asked();
            known.set(Some((count, std::time::Instant::now())));
            count
        }
    })
}

/// The count, from the kernel.
#[cfg(target_os = "linux")]
fn asked() -> usize {
    // SAFETY: sched_getaffinity fills the set it is given, of the size given; a zeroed
    // cpu_set_t is a valid (empty) set.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of_val(&set), &mut set) != 0 {
            return 1;
        }
        libc::CPU_COUNT(&set) as usize
    }
}

/// Limits this thread (and what it starts afterwards) to the first `cpus` of the CPUs
/// it may use now, so a test decides how many CPUs a caller has whatever the machine's
/// count (a count kept already stays for up to [`FRESH`]).
#[cfg(all(test, target_os = "linux"))]
pub(crate) fn limit_this_thread(cpus: usize) {
    // SAFETY: sched_{get,set}affinity of this thread with sets of their own size; a
    // zeroed cpu_set_t is the empty set, and CPU_SET is given CPUs below its size.
    unsafe {
        let mut all: libc::cpu_set_t = std::mem::zeroed();
        assert_eq!(libc::sched_getaffinity(0, size_of_val(&all), &mut all), 0);
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        let allowed = (0..libc::CPU_SETSIZE as usize).filter(|&c| libc::CPU_ISSET(c, &all));
        for cpu in allowed.take(cpus) {
            libc::CPU_SET(cpu, &mut set);
        }
        assert_eq!(libc::sched_setaffinity(0, size_of_val(&set), &set), 0);
    }
}

/// How many CPUs this process may use.
#[cfg(not(target_os = "linux"))]
pub fn of_this_thread() -> usize {
    static CPUS: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *CPUS.get_or_init(|| std::thread::available_parallelism().map_or(1, usize::from))
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    /// A thread's affinity narrowed to one CPU is what it counts once [`FRESH`] passed.
    #[test]
    fn a_changed_affinity_counts_once_fresh_passed() {
        let counted = std::thread::spawn(|| {
            let before = of_this_thread();
            limit_this_thread(1);
            std::thread::sleep(FRESH);
            (before, of_this_thread())
        })
        .join()
        .unwrap();
        assert!(counted.0 >= 1, "{counted:?}");
        assert_eq!(counted.1, 1, "{counted:?}");
    }
}
