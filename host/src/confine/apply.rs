//! What a confinement applies: the [`Policy`] a grant decides, built into a [`Prepared`]
//! in the host and applied in the child between fork and exec; what the kernel enforces
//! of it ([`Rule`]).

use super::{caps, landlock, seccomp};
use std::os::fd::OwnedFd;
use std::path::PathBuf;
use std::sync::Arc;

/// What a confined extension may reach.
#[derive(Clone, Debug, Default)]
pub struct Policy {
    /// Read and execute: the system, the extension's own folder, a granted project dir.
    pub read_only: Vec<PathBuf>,
    /// Everything but making device nodes: its data dir (its temp dir is inside), as a
    /// handle opened without following links, so the rule is on the folder the host
    /// checked, whatever is swapped in at its path.
    pub read_write: Vec<Arc<OwnedFd>>,
    /// Device files it may read and write (no ioctl): `/dev/null`, `/dev/urandom`, …
    pub devices: Vec<PathBuf>,
    /// The network it may use.
    pub network: Network,
    /// Its data memory (`RLIMIT_DATA`: heap and private writable mappings), MiB.
    pub memory_mb: Option<u64>,
    /// The largest file it may write (`RLIMIT_FSIZE`), MiB: its disk quota, which one
    /// file cannot outgrow even between two measurements of its data dir.
    pub file_mb: Option<u64>,
    /// Fail instead of reporting a rule this kernel cannot enforce.
    pub require: bool,
}

/// The network of a confined extension.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Network {
    /// No IP sockets at all.
    #[default]
    Off,
    /// TCP connections to these ports only (Landlock ABI 4); no UDP, no raw sockets.
    TcpPorts(Vec<u16>),
    /// A build's package fetch: TCP connections to these ports only, and UDP sockets for
    /// name lookups (no kernel interface filters UDP by port or address: any UDP).
    Fetch(Vec<u16>),
}

/// One rule and whether this kernel enforces it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rule {
    pub what: &'static str,
    /// `None`: enforced; `Some(why)`: not enforced here.
    pub not_enforced: Option<String>,
    /// Held by zot's own watch on every kernel, never by the kernel: said as not
    /// enforced, and no reason for a required confinement not to start.
    pub watched: bool,
}

/// Why confinement could not be prepared or applied.
#[derive(Debug)]
pub struct ConfineError(pub String);

impl std::fmt::Display for ConfineError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ConfineError {}

/// The devices a program needs, read and write, no ioctl.
pub const DEVICES: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/urandom",
    "/dev/random",
    "/dev/tty",
];

/// A confined start: the environment the extension gets instead of the host's, the
/// confinement applied between fork and exec, and the quota of its data dir.
#[derive(Debug)]
pub struct Confined {
    pub env: Vec<(String, String)>,
    pub prepared: Prepared,
    pub disk: Option<DiskQuota>,
    /// The project dir it may read (`read:cwd`): the only one `hello_ack` names.
    pub project: Option<PathBuf>,
}

/// A data dir measured every [`DISK_CHECK`] (`transport::disk_walk`), with the files its
/// processes hold open after unlinking them: the extension is stopped once it holds more
/// than `mb` MiB (and a slack of 1 MiB). No kernel interface open to a user enforces a
/// quota on a folder, so it is checked, not enforced (docs/sandbox.md).
#[derive(Debug)]
pub struct DiskQuota {
    /// The data dir, as the handle its rule was made from.
    pub dir: cap_std::fs::Dir,
    /// Its path, for messages.
    pub path: PathBuf,
    pub mb: u64,
}

/// How often a confined extension's disk use is measured (at least: a walk that takes
/// longer waits ten times as long).
pub const DISK_CHECK: std::time::Duration = std::time::Duration::from_millis(100);

/// The most descriptors a confined extension may hold open (`RLIMIT_NOFILE`).
pub const MAX_FILES: u64 = 4096;

/// What this kernel enforces of a confinement with `network`, and its Landlock ABI, for
/// an extension started by this process (whose capabilities decide whether the bounding
/// set can be emptied).
pub fn kernel_report(network: &Network) -> (i64, Vec<Rule>) {
    let abi = landlock::kernel_abi();
    (abi, report(abi, network, &caps::Drop::for_this_process()))
}

/// Every rule of a confinement: Landlock's by the kernel's ABI, then what the host applies
/// itself (and checks in the child, refusing the start where it did not hold).
fn report(abi: i64, network: &Network, drop: &caps::Drop) -> Vec<Rule> {
    let mut rules = landlock::report(abi, network);
    let holds = |what| Rule {
        what,
        not_enforced: None,
        watched: false,
    };
    rules.extend([
        holds(drop.rule()),
        holds("kernel keyrings: a new empty session keyring; keyctl, add_key, request_key refused"),
        holds(
            "system calls: an allow-list (seccomp); no namespaces, mounts, bpf, perf events, \
             kernel log, System V IPC; limits, priority and CPUs of itself only",
        ),
        holds("devices: none made (no capability, Landlock) and none in its data dir at start"),
        Rule {
            what: "disk quota: its data dir and the files it holds open after unlinking them",
            not_enforced: Some(format!(
                "checked every {} ms, not enforced by the kernel: a fast writer gets past it \
                 before it is stopped (110 MiB past a quota of 8 MiB, measured: \
                 docs/sandbox.md)",
                DISK_CHECK.as_millis()
            )),
            watched: true,
        },
    ]);
    rules
}

/// A confinement ready to be applied in a child: the Landlock ruleset's descriptor and
/// the compiled seccomp programs.
pub struct Prepared {
    ruleset: Option<::landlock::RulesetCreated>,
    /// What `restrict_self` must answer: the report says what this ABI enforces, and a
    /// kernel that applied anything else refuses the start.
    expected: ::landlock::RulesetStatus,
    filters: Vec<seccompiler::BpfProgram>,
    /// `setrlimit` calls: (resource, soft and hard limit).
    rlimits: Vec<(libc::__rlimit_resource_t, u64)>,
    drop: caps::Drop,
    require: bool,
    abi: i64,
    report: Vec<Rule>,
}

impl std::fmt::Debug for Prepared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Prepared")
            .field("filters", &self.filters.len())
            .field("require", &self.require)
            .field("report", &self.report)
            .finish()
    }
}

impl Prepared {
    /// Builds the ruleset and the filters for `policy` (in the host, before the fork).
    pub fn build(policy: &Policy) -> Result<Prepared, ConfineError> {
        let abi = landlock::kernel_abi();
        let drop = caps::Drop::for_this_process();
        let report = report(abi, &policy.network, &drop);
        if policy.require {
            if let Some(rule) = report
                .iter()
                .find(|r| r.not_enforced.is_some() && !r.watched)
            {
                return Err(ConfineError(format!(
                    "confinement is required, and this kernel cannot enforce: {} ({})",
                    rule.what,
                    rule.not_enforced.as_deref().unwrap_or_default()
                )));
            }
        }
        // The kernel's support probed here, where it can be said in words (in the child a
        // failure is an errno), on a range that holds no descriptor.
        inherited_closed_at_exec(u32::MAX).map_err(|e| {
            ConfineError(format!(
                "this kernel cannot close the descriptors a confined extension would \
                 inherit (close_range with CLOSE_RANGE_CLOEXEC, Linux 5.11): {e}"
            ))
        })?;
        let ruleset = landlock::ruleset(policy)?;
        let filters = seccomp::filters(&policy.network)?;
        let mut rlimits = vec![(libc::RLIMIT_CORE, 0), (libc::RLIMIT_NOFILE, MAX_FILES)];
        if let Some(mb) = policy.memory_mb {
            rlimits.push((libc::RLIMIT_DATA, mb << 20));
        }
        if let Some(mb) = policy.file_mb {
            rlimits.push((libc::RLIMIT_FSIZE, mb << 20));
        }
        Ok(Prepared {
            ruleset: Some(ruleset),
            expected: landlock::expected_status(abi),
            filters,
            rlimits,
            drop,
            require: policy.require,
            abi,
            report,
        })
    }

    /// The rules, each enforced or not on this kernel; the child refuses to start where
    /// what it applied differs.
    pub fn report(&self) -> &[Rule] {
        &self.report
    }

    /// The Landlock ABI of this kernel.
    pub fn abi(&self) -> i64 {
        self.abi
    }

    /// Confines the calling process: every descriptor but 0, 1 and 2 closed at exec
    /// (Landlock checks a file when it is opened: one the host holds open would be read
    /// past it), its resource limits (no core file, descriptors, memory, file size), a
    /// new session keyring, `no_new_privs`, no capability, the Landlock ruleset (which
    /// must be applied as the report says), the seccomp filters. Called between fork and
    /// exec, it allocates nothing and takes no lock; an error is a raw OS error, which
    /// makes the spawn fail.
    pub fn apply_in_child(&mut self) -> std::io::Result<()> {
        inherited_closed_at_exec(3)?;
        for &(resource, value) in &self.rlimits {
            // A limit is only lowered: one the host already has below it stays.
            let mut old = libc::rlimit {
                rlim_cur: 0,
                rlim_max: 0,
            };
            // SAFETY: getrlimit/setrlimit with a valid pointer to a local.
            if unsafe { libc::getrlimit(resource, &mut old) } != 0 {
                return Err(std::io::Error::last_os_error());
            }
            let new = libc::rlimit {
                rlim_cur: old.rlim_cur.min(value),
                rlim_max: old.rlim_max.min(value),
            };
            // SAFETY: as above.
            if unsafe { libc::setrlimit(resource, &new) } != 0 {
                return Err(std::io::Error::last_os_error());
            }
        }
        join_empty_session_keyring()?;
        // SAFETY: prctl with constant arguments.
        if unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        self.drop.apply()?;
        if let Some(ruleset) = self.ruleset.take() {
            let status = ruleset
                .restrict_self()
                .map_err(|_| std::io::Error::from_raw_os_error(libc::EPERM))?;
            if status.ruleset != self.expected {
                return Err(std::io::Error::from_raw_os_error(libc::ENOTSUP));
            }
        }
        for filter in &self.filters {
            seccompiler::apply_filter(filter)
                .map_err(|_| std::io::Error::from_raw_os_error(libc::EACCES))?;
        }
        Ok(())
    }
}

/// Joins a new, empty session keyring (`KEYCTL_JOIN_SESSION_KEYRING` with no name): the
/// keys the user's session holds are not its. A kernel without keyrings (`ENOSYS`) has
/// none to keep from it.
fn join_empty_session_keyring() -> std::io::Result<()> {
    const KEYCTL_JOIN_SESSION_KEYRING: libc::c_long = 1;
    // SAFETY: keyctl with a null name makes an anonymous keyring; nothing is written to
    // memory.
    let joined = unsafe {
        libc::syscall(
            libc::SYS_keyctl,
            KEYCTL_JOIN_SESSION_KEYRING,
            std::ptr::null::<libc::c_char>(),
        )
    };
    match joined {
        -1 => match std::io::Error::last_os_error() {
            e if e.raw_os_error() == Some(libc::ENOSYS) => Ok(()),
            e => Err(e),
        },
        _ => Ok(()),
    }
}

/// Marks every descriptor from `first` up close-on-exec (`close_range` with
/// `CLOSE_RANGE_CLOEXEC`, Linux 5.11): marked, not closed, so that the pipe on which the
/// spawn reports a failed exec stays open until the exec. A kernel without it fails
/// (`ENOSYS`, or `EINVAL` for the flag): the start is refused, never made with the
/// host's descriptors. One system call, safe between fork and exec.
fn inherited_closed_at_exec(first: u32) -> std::io::Result<()> {
    // SAFETY: close_range takes plain integers; marking descriptors frees no memory.
    let marked = unsafe {
        libc::syscall(
            libc::SYS_close_range,
            first,
            u32::MAX,
            libc::CLOSE_RANGE_CLOEXEC,
        )
    };
    if marked != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::CommandExt;
    use std::process::Command;

    /// A scratch folder with a planted secret, a data dir and a folder outside both.
    struct Scratch(PathBuf);

    impl Scratch {
        fn new(tag: &str) -> Scratch {
            let dir = zot_test_fixtures::fresh_dir(&format!("confine-{tag}"));
            for sub in ["home/.ssh", "data", "outside", "tmp"] {
                std::fs::create_dir_all(dir.join(sub)).unwrap();
            }
            std::fs::write(dir.join("home/.ssh/id_rsa"), "SECRET").unwrap();
            std::os::unix::fs::symlink(dir.join("outside"), dir.join("data/out")).unwrap();
            Scratch(dir)
        }
        fn policy(&self, network: Network) -> Policy {
            Policy {
                read_only: ["/usr", "/lib", "/lib64", "/bin", "/etc"]
                    .into_iter()
                    .map(PathBuf::from)
                    .collect(),
                read_write: vec![Arc::new(OwnedFd::from(
                    std::fs::File::open(self.0.join("data")).unwrap(),
                ))],
                devices: vec!["/dev/null".into(), "/dev/urandom".into()],
                network,
                memory_mb: Some(256),
                file_mb: Some(1),
                require: false,
            }
        }
    }

    impl Drop for Scratch {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    /// Runs `python3 -c script` confined by `policy` (or not); its stdout.
    fn python(policy: Option<&Policy>, script: &str) -> String {
        let mut command = Command::new("python3");
        command.arg("-c").arg(script);
        if let Some(policy) = policy {
            let mut prepared = Prepared::build(policy).expect("prepared");
            // SAFETY: apply_in_child only makes system calls.
            unsafe {
                command.pre_exec(move || prepared.apply_in_child());
            }
        }
        let out = command.output().expect("python3 runs");
        assert!(out.status.success(), "{out:?}");
        String::from_utf8(out.stdout).unwrap()
    }

    const PROBE: &str = r#"
import os, socket, sys, ctypes
root = sys.argv[1] if len(sys.argv) > 1 else os.environ["ROOT"]
def tried(name, f):
    try:
        f(); print(name, "ok")
    except Exception as e:
        print(name, "denied", type(e).__name__)
tried("read-usr", lambda: open("/usr/lib/os-release").read())
tried("read-secret", lambda: open(root + "/home/.ssh/id_rsa").read())
tried("write-data", lambda: open(root + "/data/x", "w").write("x"))
tried("write-outside", lambda: open(root + "/outside/x", "w").write("x"))
tried("write-dotdot", lambda: open(root + "/data/../outside/y", "w").write("x"))
tried("write-symlink", lambda: open(root + "/data/out/z", "w").write("x"))
tried("udp", lambda: socket.socket(socket.AF_INET, socket.SOCK_DGRAM))
tried("big-file", lambda: open(root + "/data/big", "wb").write(b"x" * (2 << 20)))
tried("big-memory", lambda: bytearray(512 << 20))
tried("setsid", lambda: os.setsid())
import subprocess
sibling = subprocess.Popen(["sleep", "30"])
libc = ctypes.CDLL(None, use_errno=True)
r = libc.ptrace(16, sibling.pid, 0, 0)  # PTRACE_ATTACH a process outside the fence
print("ptrace", "ok" if r == 0 else "denied")
if r == 0:
    libc.ptrace(17, sibling.pid, 0, 0)  # PTRACE_DETACH
sibling.kill()
"#;

    fn lines(out: &str) -> Vec<&str> {
        out.lines().collect()
    }

    #[test]
    fn a_confined_child_reaches_only_what_its_policy_allows() {
        if landlock::kernel_abi() < 6 {
            panic!(
                "this test needs Landlock ABI 6; the kernel has {}",
                landlock::kernel_abi()
            );
        }
        let scratch = Scratch::new("fence");
        let root = scratch.0.display().to_string();
        let script = PROBE.replace("os.environ[\"ROOT\"]", &format!("{root:?}"));
        let free = python(None, &script);
        let fenced = python(Some(&scratch.policy(Network::Off)), &script);
        assert_eq!(
            lines(&free),
            [
                "read-usr ok",
                "read-secret ok",
                "write-data ok",
                "write-outside ok",
                "write-dotdot ok",
                "write-symlink ok",
                "udp ok",
                "big-file ok",
                "big-memory ok",
                "setsid ok",
                "ptrace ok",
            ],
            "unconfined, everything is reachable"
        );
        assert_eq!(
            lines(&fenced),
            [
                "read-usr ok",
                "read-secret denied PermissionError",
                "write-data ok",
                "write-outside denied PermissionError",
                "write-dotdot denied PermissionError",
                "write-symlink denied PermissionError",
                "udp denied PermissionError",
                "big-file denied OSError",
                "big-memory denied MemoryError",
                "setsid denied PermissionError",
                "ptrace denied",
            ]
        );
    }
}
