//! How many CPUs this thread may run on: whether waiting by watching (spinning) can
//! pay off, since with one CPU it only keeps the awaited process from running.

/// How many CPUs this thread may run on (its affinity, which `taskset` sets).
#[cfg(target_os = "linux")]
pub fn of_this_thread() -> usize {
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

/// How many CPUs this process may use.
#[cfg(not(target_os = "linux"))]
pub fn of_this_thread() -> usize {
    static CPUS: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *CPUS.get_or_init(|| std::thread::available_parallelism().map_or(1, usize::from))
}
