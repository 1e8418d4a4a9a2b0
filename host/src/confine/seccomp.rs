//! The seccomp half: an allow-list of the system calls programs make, some only with
//! the arguments that keep them to the process itself. Anything not on it — a call
//! nobody here decided on, a newer kernel's — fails with `EPERM`; a call of another
//! architecture's ABI (i386 `int 0x80`) kills the process; `clone3`, whose flags a filter
//! cannot read, fails with `ENOSYS`, so that the C library makes `clone` instead.
//!
//! Left out, each for a reason: other processes' memory and state (`ptrace`,
//! `process_vm_*`, `process_madvise`, `kcmp`, `pidfd_getfd`, `get_robust_list`), the
//! kernel's keyrings (`keyctl`, `add_key`, `request_key`), the kernel log (`syslog`),
//! `bpf`, `perf_event_open`, `userfaultfd`, `io_uring` (which neither filter could see
//! through), namespaces (`unshare`, `setns`, namespace flags of `clone`), mounts and the
//! new mount API, modules, `kexec`, `reboot`, swap, clocks, host and domain names,
//! accounting and quotas, `open_by_handle_at`, `fanotify`, System V and POSIX message
//! IPC (objects shared by every process of the user), a new session or process group
//! (`setsid`, `setpgid`: its children end with it), I/O ports and `modify_ldt`.

use super::{ConfineError, Network};
use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
};
use std::collections::BTreeMap;

/// Allowed with any arguments.
const ALLOWED: &[i64] = {
    use libc::*;
    &[
        // Files and folders (Landlock decides which).
        SYS_read,
        SYS_write,
        SYS_readv,
        SYS_writev,
        SYS_pread64,
        SYS_pwrite64,
        SYS_preadv,
        SYS_pwritev,
        SYS_preadv2,
        SYS_pwritev2,
        SYS_openat,
        SYS_openat2,
        SYS_close,
        SYS_close_range,
        SYS_fstat,
        SYS_newfstatat,
        SYS_statx,
        SYS_statfs,
        SYS_fstatfs,
        SYS_lseek,
        SYS_faccessat,
        SYS_faccessat2,
        SYS_pipe2,
        SYS_dup,
        SYS_dup3,
        SYS_fcntl,
        SYS_flock,
        SYS_getdents64,
        SYS_getcwd,
        SYS_chdir,
        SYS_fchdir,
        SYS_renameat2,
        SYS_mkdirat,
        SYS_linkat,
        SYS_unlinkat,
        SYS_symlinkat,
        SYS_readlinkat,
        SYS_fchmod,
        SYS_fchmodat,
        SYS_fchmodat2,
        SYS_fchown,
        SYS_fchownat,
        SYS_umask,
        SYS_truncate,
        SYS_ftruncate,
        SYS_fallocate,
        SYS_utimensat,
        SYS_mknodat,
        SYS_getxattr,
        SYS_lgetxattr,
        SYS_fgetxattr,
        SYS_listxattr,
        SYS_llistxattr,
        SYS_flistxattr,
        SYS_setxattr,
        SYS_lsetxattr,
        SYS_fsetxattr,
        SYS_removexattr,
        SYS_lremovexattr,
        SYS_fremovexattr,
        SYS_fadvise64,
        SYS_readahead,
        SYS_sync,
        SYS_syncfs,
        SYS_fsync,
        SYS_fdatasync,
        SYS_sync_file_range,
        SYS_sendfile,
        SYS_splice,
        SYS_tee,
        SYS_vmsplice,
        SYS_copy_file_range,
        SYS_inotify_init1,
        SYS_inotify_add_watch,
        SYS_inotify_rm_watch,
        SYS_memfd_create,
        SYS_io_setup,
        SYS_io_destroy,
        SYS_io_submit,
        SYS_io_cancel,
        SYS_io_getevents,
        // Waiting and time.
        SYS_ppoll,
        SYS_pselect6,
        SYS_epoll_create1,
        SYS_epoll_ctl,
        SYS_epoll_pwait,
        SYS_epoll_pwait2,
        SYS_eventfd2,
        SYS_signalfd4,
        SYS_timerfd_create,
        SYS_timerfd_settime,
        SYS_timerfd_gettime,
        SYS_timer_create,
        SYS_timer_settime,
        SYS_timer_gettime,
        SYS_timer_getoverrun,
        SYS_timer_delete,
        SYS_nanosleep,
        SYS_clock_nanosleep,
        SYS_clock_gettime,
        SYS_clock_getres,
        SYS_gettimeofday,
        SYS_getitimer,
        SYS_setitimer,
        SYS_futex,
        SYS_futex_waitv,
        SYS_set_robust_list,
        SYS_restart_syscall,
        // Memory.
        SYS_brk,
        SYS_mmap,
        SYS_munmap,
        SYS_mremap,
        SYS_mprotect,
        SYS_madvise,
        SYS_msync,
        SYS_mincore,
        SYS_mlock,
        SYS_mlock2,
        SYS_munlock,
        SYS_mlockall,
        SYS_munlockall,
        SYS_mbind,
        SYS_get_mempolicy,
        SYS_set_mempolicy,
        SYS_membarrier,
        SYS_mseal,
        SYS_pkey_alloc,
        SYS_pkey_free,
        SYS_pkey_mprotect,
        SYS_rseq,
        SYS_set_tid_address,
        // Processes: its own, and the signals Landlock keeps to its own domain.
        SYS_execve,
        SYS_execveat,
        SYS_exit,
        SYS_exit_group,
        SYS_wait4,
        SYS_waitid,
        SYS_kill,
        SYS_tkill,
        SYS_tgkill,
        SYS_rt_sigaction,
        SYS_rt_sigprocmask,
        SYS_rt_sigreturn,
        SYS_rt_sigpending,
        SYS_rt_sigtimedwait,
        SYS_rt_sigsuspend,
        SYS_rt_sigqueueinfo,
        SYS_rt_tgsigqueueinfo,
        SYS_sigaltstack,
        SYS_pidfd_open,
        SYS_pidfd_send_signal,
        SYS_getpid,
        SYS_getppid,
        SYS_gettid,
        SYS_getpgid,
        SYS_getsid,
        SYS_getuid,
        SYS_geteuid,
        SYS_getgid,
        SYS_getegid,
        SYS_getresuid,
        SYS_getresgid,
        SYS_getgroups,
        SYS_setuid,
        SYS_setgid,
        SYS_setreuid,
        SYS_setregid,
        SYS_setresuid,
        SYS_setresgid,
        SYS_setfsuid,
        SYS_setfsgid,
        SYS_setgroups,
        SYS_capget,
        SYS_capset,
        SYS_prctl,
        SYS_personality,
        SYS_getrlimit,
        SYS_setrlimit,
        SYS_getrusage,
        SYS_times,
        SYS_getpriority,
        SYS_ioprio_get,
        SYS_sched_yield,
        SYS_sched_getaffinity,
        SYS_sched_getparam,
        SYS_sched_getscheduler,
        SYS_sched_getattr,
        SYS_sched_get_priority_max,
        SYS_sched_get_priority_min,
        SYS_sched_rr_get_interval,
        SYS_getcpu,
        SYS_uname,
        SYS_sysinfo,
        SYS_getrandom,
        // Sockets: which may be opened is decided at `socket` (below).
        SYS_bind,
        SYS_listen,
        SYS_accept,
        SYS_accept4,
        SYS_connect,
        SYS_getsockname,
        SYS_getpeername,
        SYS_sendto,
        SYS_recvfrom,
        SYS_sendmsg,
        SYS_recvmsg,
        SYS_sendmmsg,
        SYS_recvmmsg,
        SYS_shutdown,
        SYS_setsockopt,
        SYS_getsockopt,
        // Sandboxing itself further.
        SYS_seccomp,
        SYS_landlock_create_ruleset,
        SYS_landlock_add_rule,
        SYS_landlock_restrict_self,
    ]
};

/// Allowed with any arguments, x86_64's older forms of the calls above.
#[cfg(target_arch = "x86_64")]
const ALLOWED_LEGACY: &[i64] = {
    use libc::*;
    &[
        SYS_open,
        SYS_creat,
        SYS_stat,
        SYS_lstat,
        SYS_access,
        SYS_pipe,
        SYS_dup2,
        SYS_poll,
        SYS_select,
        SYS_getdents,
        SYS_rename,
        SYS_renameat,
        SYS_mkdir,
        SYS_rmdir,
        SYS_link,
        SYS_unlink,
        SYS_symlink,
        SYS_readlink,
        SYS_chmod,
        SYS_chown,
        SYS_lchown,
        SYS_utime,
        SYS_utimes,
        SYS_futimesat,
        SYS_mknod,
        SYS_fork,
        SYS_vfork,
        SYS_alarm,
        SYS_pause,
        SYS_time,
        SYS_epoll_create,
        SYS_epoll_wait,
        SYS_inotify_init,
        SYS_signalfd,
        SYS_eventfd,
        SYS_arch_prctl,
        SYS_getpgrp,
    ]
};
#[cfg(not(target_arch = "x86_64"))]
const ALLOWED_LEGACY: &[i64] = &[];

/// The namespace flags of `clone`: a new namespace is refused.
const CLONE_NAMESPACES: u64 = (libc::CLONE_NEWNS
    | libc::CLONE_NEWCGROUP
    | libc::CLONE_NEWUTS
    | libc::CLONE_NEWIPC
    | libc::CLONE_NEWUSER
    | libc::CLONE_NEWPID
    | libc::CLONE_NEWNET) as u64;

/// `setpriority`'s and `ioprio_set`'s "which": a process, a process group.
const PRIO_PROCESS: u64 = 0;
const PRIO_PGRP: u64 = 1;
const IOPRIO_WHO_PROCESS: u64 = 1;
const IOPRIO_WHO_PGRP: u64 = 2;

/// The filters for `network`, compiled, in the order they are installed: the allow-list,
/// then `clone3`'s `ENOSYS` (the most recent filter's errno is the one returned).
pub(super) fn filters(network: &Network) -> Result<Vec<BpfProgram>, ConfineError> {
    let fail = |e: &dyn std::fmt::Display| ConfineError(format!("seccomp: {e}"));
    let arch = TargetArch::try_from(std::env::consts::ARCH).map_err(|e| fail(&e))?;
    let compile = |rules, mismatch, matched| {
        SeccompFilter::new(rules, mismatch, matched, arch)
            .map_err(|e| fail(&e))?
            .try_into()
            .map_err(|e: seccompiler::BackendError| fail(&e))
    };
    let allowed = compile(
        allow_list(network)?,
        SeccompAction::Errno(libc::EPERM as u32),
        SeccompAction::Allow,
    )?;
    let clone3 = compile(
        BTreeMap::from([(libc::SYS_clone3, Vec::new())]),
        SeccompAction::Allow,
        SeccompAction::Errno(libc::ENOSYS as u32),
    )?;
    Ok(vec![allowed, clone3])
}

/// Every allowed call, and the conditions of those allowed only with some arguments.
fn allow_list(network: &Network) -> Result<BTreeMap<i64, Vec<SeccompRule>>, ConfineError> {
    let fail = |e: &dyn std::fmt::Display| ConfineError(format!("seccomp: {e}"));
    let arg = |n: u8, op: SeccompCmpOp, value: u64| {
        SeccompCondition::new(n, SeccompCmpArgLen::Dword, op, value).map_err(|e| fail(&e))
    };
    let rule =
        |conditions: Vec<SeccompCondition>| SeccompRule::new(conditions).map_err(|e| fail(&e));
    let eq = |n: u8, value: u64| arg(n, SeccompCmpOp::Eq, value);
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = ALLOWED
        .iter()
        .chain(ALLOWED_LEGACY)
        .map(|&call| (call, Vec::new()))
        .collect();
    // A process of its own: no namespace.
    rules.insert(
        libc::SYS_clone,
        vec![rule(vec![arg(
            0,
            SeccompCmpOp::MaskedEq(CLONE_NAMESPACES),
            0,
        )?])?],
    );
    rules.insert(libc::SYS_clone3, Vec::new()); // ENOSYS, by the second filter.
                                                // Limits, priorities and CPUs of itself only (pid 0), never another process's.
    for call in [
        libc::SYS_prlimit64,
        libc::SYS_sched_setaffinity,
        libc::SYS_sched_setparam,
        libc::SYS_sched_setscheduler,
        libc::SYS_sched_setattr,
    ] {
        rules.insert(call, vec![rule(vec![eq(0, 0)?])?]);
    }
    rules.insert(
        libc::SYS_setpriority,
        vec![
            rule(vec![eq(0, PRIO_PROCESS)?, eq(1, 0)?])?,
            rule(vec![eq(0, PRIO_PGRP)?, eq(1, 0)?])?,
        ],
    );
    rules.insert(
        libc::SYS_ioprio_set,
        vec![
            rule(vec![eq(0, IOPRIO_WHO_PROCESS)?, eq(1, 0)?])?,
            rule(vec![eq(0, IOPRIO_WHO_PGRP)?, eq(1, 0)?])?,
        ],
    );
    // Sockets: UNIX ones; and TCP streams where the network is granted, which Landlock
    // filters by port (not UDP, raw or packet sockets; not MPTCP or SCTP streams, which
    // would pass its TCP rules).
    // A fetch also opens UDP sockets (datagrams, protocol 0 or UDP): name lookups.
    let mut socket = vec![rule(vec![eq(0, libc::AF_UNIX as u64)?])?];
    let kinds: &[(libc::c_int, libc::c_int)] = match network {
        Network::Off => &[],
        Network::TcpPorts(_) => &[(libc::SOCK_STREAM, libc::IPPROTO_TCP)],
        Network::Fetch(_) => &[
            (libc::SOCK_STREAM, libc::IPPROTO_TCP),
            (libc::SOCK_DGRAM, libc::IPPROTO_UDP),
        ],
    };
    for &(kind, named) in kinds {
        for family in [libc::AF_INET, libc::AF_INET6] {
            for protocol in [0, named] {
                socket.push(rule(vec![
                    eq(0, family as u64)?,
                    arg(1, SeccompCmpOp::MaskedEq(0xf), kind as u64)?,
                    eq(2, protocol as u64)?,
                ])?);
            }
        }
    }
    rules.insert(libc::SYS_socket, socket);
    rules.insert(
        libc::SYS_socketpair,
        vec![rule(vec![eq(0, libc::AF_UNIX as u64)?])?],
    );
    // Any request but typing into a terminal. (The request's type differs by
    // architecture: the cast is needed off x86_64.)
    #[allow(clippy::unnecessary_cast)]
    rules.insert(
        libc::SYS_ioctl,
        vec![rule(vec![
            arg(1, SeccompCmpOp::Ne, libc::TIOCSTI as u64)?,
            arg(1, SeccompCmpOp::Ne, libc::TIOCLINUX as u64)?,
        ])?],
    );
    Ok(rules)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_allow_list_compiles_within_the_kernel_s_length_both_ways() {
        for network in [
            Network::Off,
            Network::TcpPorts(vec![443]),
            Network::Fetch(vec![443]),
        ] {
            let filters = filters(&network).unwrap();
            assert_eq!(filters.len(), 2);
            assert!(filters[0].len() < 4096, "{}", filters[0].len());
        }
    }

    #[test]
    fn what_reaches_other_processes_or_the_kernel_is_not_on_the_list() {
        let rules = allow_list(&Network::Off).unwrap();
        for call in [
            libc::SYS_ptrace,
            libc::SYS_process_vm_readv,
            libc::SYS_process_vm_writev,
            libc::SYS_keyctl,
            libc::SYS_add_key,
            libc::SYS_request_key,
            libc::SYS_syslog,
            libc::SYS_bpf,
            libc::SYS_perf_event_open,
            libc::SYS_userfaultfd,
            libc::SYS_io_uring_setup,
            libc::SYS_unshare,
            libc::SYS_setns,
            libc::SYS_mount,
            libc::SYS_setsid,
            libc::SYS_setpgid,
            libc::SYS_kcmp,
            libc::SYS_pidfd_getfd,
            libc::SYS_open_by_handle_at,
            libc::SYS_shmget,
            libc::SYS_msgget,
            libc::SYS_semget,
            libc::SYS_mq_open,
        ] {
            assert!(!rules.contains_key(&call), "{call} is allowed");
        }
    }
}
