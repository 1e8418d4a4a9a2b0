//! The seccomp half: what Landlock cannot filter. A matching call fails with `EPERM`;
//! a call of another architecture's ABI (i386 `int 0x80`) kills the process.

use super::{ConfineError, Network};
use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
};
use std::collections::BTreeMap;

/// `SOCK_PACKET`, obsolete and not in libc.
const SOCK_PACKET: i32 = 10;

/// The filter for `network`, compiled.
pub(super) fn filter(network: &Network) -> Result<BpfProgram, ConfineError> {
    let fail = |e: &dyn std::fmt::Display| ConfineError(format!("seccomp: {e}"));
    let arg = |n: u8, op: SeccompCmpOp, value: u64| {
        SeccompCondition::new(n, SeccompCmpArgLen::Dword, op, value).map_err(|e| fail(&e))
    };
    let rule =
        |conditions: Vec<SeccompCondition>| SeccompRule::new(conditions).map_err(|e| fail(&e));
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    // Another process's memory, and a kernel interface that escapes both filters.
    for call in [
        libc::SYS_ptrace,
        libc::SYS_process_vm_readv,
        libc::SYS_process_vm_writev,
        libc::SYS_io_uring_setup,
        libc::SYS_io_uring_enter,
        libc::SYS_io_uring_register,
        // A new session or process group: its children end with it (the host stops its
        // process group).
        libc::SYS_setsid,
        libc::SYS_setpgid,
    ] {
        rules.insert(call, Vec::new());
    }
    // socket(domain, type, protocol): UNIX, and IP as the network allows.
    let mut socket = vec![rule(vec![
        arg(0, SeccompCmpOp::Ne, libc::AF_UNIX as u64)?,
        arg(0, SeccompCmpOp::Ne, libc::AF_INET as u64)?,
        arg(0, SeccompCmpOp::Ne, libc::AF_INET6 as u64)?,
    ])?];
    for family in [libc::AF_INET, libc::AF_INET6] {
        match network {
            Network::Off => socket.push(rule(vec![arg(0, SeccompCmpOp::Eq, family as u64)?])?),
            Network::TcpPorts(_) => {
                // Only TCP streams, which Landlock filters by port: not UDP, not raw…
                for kind in [
                    libc::SOCK_DGRAM,
                    libc::SOCK_RAW,
                    libc::SOCK_SEQPACKET,
                    libc::SOCK_RDM,
                    SOCK_PACKET,
                ] {
                    socket.push(rule(vec![
                        arg(0, SeccompCmpOp::Eq, family as u64)?,
                        arg(1, SeccompCmpOp::MaskedEq(0xf), kind as u64)?,
                    ])?);
                }
                // …and not MPTCP or SCTP streams, which pass Landlock's TCP port rules.
                socket.push(rule(vec![
                    arg(0, SeccompCmpOp::Eq, family as u64)?,
                    arg(2, SeccompCmpOp::Ne, 0)?,
                    arg(2, SeccompCmpOp::Ne, libc::IPPROTO_TCP as u64)?,
                ])?);
            }
        }
    }
    rules.insert(libc::SYS_socket, socket);
    // Typing into the terminal of another process. (The request's type differs by
    // architecture: the cast is needed off x86_64.)
    #[allow(clippy::unnecessary_cast)]
    rules.insert(
        libc::SYS_ioctl,
        vec![
            rule(vec![arg(1, SeccompCmpOp::Eq, libc::TIOCSTI as u64)?])?,
            rule(vec![arg(1, SeccompCmpOp::Eq, libc::TIOCLINUX as u64)?])?,
        ],
    );
    let arch = TargetArch::try_from(std::env::consts::ARCH).map_err(|e| fail(&e))?;
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EPERM as u32),
        arch,
    )
    .map_err(|e| fail(&e))?;
    filter
        .try_into()
        .map_err(|e: seccompiler::BackendError| fail(&e))
}
