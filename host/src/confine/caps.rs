//! Capabilities: a confined extension holds none, in any set, and gains none at exec.
//! Run by root it would otherwise hold all of them (device nodes, the kernel log, `bpf`,
//! any file): emptied before the exec (effective, permitted, inheritable, ambient) and,
//! where the host may (`CAP_SETPCAP`, which root has), the bounding set. A host without
//! `CAP_SETPCAP` cannot empty the bounding set; with `no_new_privs` and nothing
//! permitted, an exec grants nothing from it (not even to root: the kernel keeps what
//! was permitted before), so the rule holds either way, and the report says which.

/// `CAP_SETPCAP`: the capability that empties the bounding set.
const CAP_SETPCAP: u32 = 8;
/// `_LINUX_CAPABILITY_VERSION_3`: two 32-bit words per set.
const VERSION_3: u32 = 0x2008_0522;

#[repr(C)]
struct Header {
    version: u32,
    pid: libc::c_int,
}

#[repr(C)]
#[derive(Clone, Copy, Default, PartialEq, Eq)]
struct Data {
    effective: u32,
    permitted: u32,
    inheritable: u32,
}

/// What the child drops, decided in the host.
#[derive(Debug, Clone, Copy)]
pub(super) struct Drop {
    /// The highest capability of this kernel, when the host may empty the bounding set.
    bounding_to: Option<u32>,
}

impl Drop {
    /// For an extension this process starts: the bounding set too if it holds
    /// `CAP_SETPCAP`.
    pub(super) fn for_this_process() -> Drop {
        let setpcap = get().is_some_and(|sets| {
            let (word, bit) = ((CAP_SETPCAP / 32) as usize, CAP_SETPCAP % 32);
            sets[word].effective & (1 << bit) != 0
        });
        Drop {
            bounding_to: setpcap.then(last_cap),
        }
    }

    /// The rule it makes, as it is made.
    pub(super) fn rule(&self) -> &'static str {
        match self.bounding_to {
            Some(_) => {
                "capabilities: none held, none gained at exec (every set emptied, the \
                 bounding set too)"
            }
            None => {
                "capabilities: none held, none gained at exec (no_new_privs; the bounding \
                 set, which zot cannot empty without CAP_SETPCAP, grants nothing then)"
            }
        }
    }

    /// Drops them in the calling process (after `no_new_privs`, between fork and exec:
    /// system calls only), and checks that none is left; `EPERM` if one is.
    pub(super) fn apply(&self) -> std::io::Result<()> {
        if let Some(last) = self.bounding_to {
            for cap in 0..=last {
                // SAFETY: prctl with integer arguments.
                if unsafe { libc::prctl(libc::PR_CAPBSET_DROP, cap as libc::c_ulong, 0, 0, 0) } != 0
                {
                    return Err(std::io::Error::last_os_error());
                }
            }
        }
        // SAFETY: as above. A kernel without ambient capabilities (before 4.3) has none to
        // clear: EINVAL.
        if unsafe {
            libc::prctl(
                libc::PR_CAP_AMBIENT,
                libc::PR_CAP_AMBIENT_CLEAR_ALL,
                0,
                0,
                0,
            )
        } != 0
        {
            let e = std::io::Error::last_os_error();
            if e.raw_os_error() != Some(libc::EINVAL) {
                return Err(e);
            }
        }
        let mut header = Header {
            version: VERSION_3,
            pid: 0,
        };
        let none = [Data::default(); 2];
        // SAFETY: capset reads a valid header and two data words; lowering is always
        // allowed.
        if unsafe { libc::syscall(libc::SYS_capset, &mut header, none.as_ptr()) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        let left = get().ok_or_else(std::io::Error::last_os_error)?;
        let bounding_left = self
            .bounding_to
            // SAFETY: prctl with integer arguments.
            .is_some_and(|last| {
                (0..=last).any(|cap| unsafe {
                    libc::prctl(libc::PR_CAPBSET_READ, cap as libc::c_ulong, 0, 0, 0) == 1
                })
            });
        if left != none || bounding_left {
            return Err(std::io::Error::from_raw_os_error(libc::EPERM));
        }
        Ok(())
    }
}

/// The calling thread's capability sets, or `None` if they cannot be read.
fn get() -> Option<[Data; 2]> {
    let mut header = Header {
        version: VERSION_3,
        pid: 0,
    };
    let mut sets = [Data::default(); 2];
    // SAFETY: capget writes two data words into a local of that size.
    let rc = unsafe { libc::syscall(libc::SYS_capget, &mut header, sets.as_mut_ptr()) };
    (rc == 0).then_some(sets)
}

/// The highest capability this kernel knows (`/proc/sys/kernel/cap_last_cap`), or the
/// highest of the 64 a set can hold when it cannot be read (`PR_CAPBSET_DROP` of one the
/// kernel does not know fails, and so refuses the start rather than keep one).
fn last_cap() -> u32 {
    std::fs::read_to_string("/proc/sys/kernel/cap_last_cap")
        .ok()
        .and_then(|text| text.trim().parse().ok())
        .unwrap_or(63)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::CommandExt;

    /// A child confined by the drop alone reads its sets from /proc: all empty where the
    /// host could empty the bounding set, the four others empty anyway.
    #[test]
    fn a_child_holds_no_capability_after_the_drop() {
        let drop = Drop::for_this_process();
        let mut command = std::process::Command::new("grep");
        command.args(["^Cap", "/proc/self/status"]);
        // SAFETY: `apply` only makes system calls.
        unsafe {
            command.pre_exec(move || {
                // SAFETY: prctl with constant arguments.
                if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                drop.apply()
            });
        }
        let out = command.output().unwrap();
        assert!(out.status.success(), "{out:?}");
        let text = String::from_utf8(out.stdout).unwrap();
        for set in ["CapInh", "CapPrm", "CapEff", "CapAmb"] {
            assert!(
                text.contains(&format!("{set}:\t0000000000000000")),
                "{set} not empty:\n{text}"
            );
        }
        if drop.bounding_to.is_some() {
            assert!(text.contains("CapBnd:\t0000000000000000"), "{text}");
        }
    }
}
