//! Where the latency table runs: pinned to one CPU (this thread, and so every thread and
//! process it starts after) or on every CPU this process may use.

use std::mem::MaybeUninit;

/// The CPUs this thread may run on.
pub fn allowed() -> Vec<usize> {
    // SAFETY: sched_getaffinity fills the set it is given, of the size given.
    let set = unsafe {
        let mut set = MaybeUninit::<libc::cpu_set_t>::zeroed().assume_init();
        let rc = libc::sched_getaffinity(0, std::mem::size_of_val(&set), &mut set);
        assert_eq!(
            rc,
            0,
            "sched_getaffinity: {}",
            std::io::Error::last_os_error()
        );
        set
    };
    (0..libc::CPU_SETSIZE as usize)
        // SAFETY: cpu < CPU_SETSIZE, the set's size.
        .filter(|&cpu| unsafe { libc::CPU_ISSET(cpu, &set) })
        .collect()
}

/// Lets this thread run on `cpus` only; threads and processes started from it after
/// inherit the set.
pub fn set(cpus: &[usize]) {
    // SAFETY: a zeroed cpu_set_t is the empty set; CPU_SET is given CPUs below its size.
    unsafe {
        let mut set = MaybeUninit::<libc::cpu_set_t>::zeroed().assume_init();
        for &cpu in cpus {
            libc::CPU_SET(cpu, &mut set);
        }
        let rc = libc::sched_setaffinity(0, std::mem::size_of_val(&set), &set);
        assert_eq!(
            rc,
            0,
            "sched_setaffinity: {}",
            std::io::Error::last_os_error()
        );
    }
}

/// `0-1` or `3`: how `taskset` names a set of CPUs (listed in full).
pub fn named(cpus: &[usize]) -> String {
    match cpus {
        [one] => one.to_string(),
        [first, .., last] if last - first + 1 == cpus.len() => format!("{first}-{last}"),
        _ => cpus
            .iter()
            .map(usize::to_string)
            .collect::<Vec<_>>()
            .join(","),
    }
}
