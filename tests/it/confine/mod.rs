//! Confined classic extensions (`zot ext confine`): a hostile extension, in Python and
//! as a static Go binary (no libc, raw system calls), tries to read a planted secret,
//! `/etc/shadow`, `$ZOT_HOME/grants` and the host's environment; to write outside its
//! data dir directly, through `..`, `/proc/self/root`, a hard link to an outside file and
//! a symlink it makes, and by renaming a file out; to open UDP, TCP, netlink, packet,
//! MPTCP and SCTP sockets and `io_uring`; to copy memory with `process_vm_readv` and
//! `process_vm_writev`; to hold more descriptors than its limit; to signal and trace the
//! host and trace a sibling; and a child of it reads the secret. The Python one also types
//! into its terminal (`TIOCSTI`, `TIOCLINUX`), makes an i386 system call and reads a
//! descriptor the host left open.
//! Unconfined it can do all of it (the test proves the fence, not the absence of the
//! files), but for what this kernel or its limits refuse themselves (MPTCP turned off, no
//! SCTP, a hard limit of descriptors it cannot raise); confined, none, and its environment
//! is the documented base. A change to its files stops it from starting until it is
//! confined again, also at a `reload` of a `zot host` session, after which a confined one
//! is still confined; `unconfine` lifts it.

mod escapes;
mod grants;
mod info;
mod isolation;
mod lifecycle;
mod privilege;
mod quota;

pub(super) use crate::common::*;
use serde_json::{json, Value};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use zot_host::manage::confine::MAX_FILES;

/// What a hostile probe tries, each denied when it is confined and "ok" when not.
const ATTACKS: &[&str] = &[
    "read secret",
    "read shadow",
    "read grants",
    "read host environ",
    "write outside",
    "write via ..",
    "write via /proc/self/root",
    "hard link in",
    "symlink out",
    "rename out",
    "udp socket",
    "tcp connect",
    "io_uring",
    "netlink socket",
    "packet socket",
    "process_vm_readv",
    "process_vm_writev",
    "open files",
    "signal parent",
    "ptrace parent",
    "ptrace sibling",
    "child reads secret",
];

/// Attacks through a protocol this kernel may not have, or have turned off (MPTCP with
/// `net.mptcp.enabled=0`): unconfined, the kernel creates the socket or refuses the
/// protocol itself ([`protocol_refused`]); confined, the filter refuses it first
/// ([`permission_denied`]).
const KERNEL_MAY_LACK: &[&str] = &["mptcp socket", "sctp socket"];

/// Holding more descriptors than a confined extension may: shown unconfined only where
/// the hard limit is above [`MAX_FILES`] ([`files_limit_above_the_confined_one`]).
const OPEN_FILES: &str = "open files";

/// Whether a probe's answer is a refusal for want of permission (`EPERM`, `EACCES`), in
/// Python's words (the errno's name) or Go's.
fn permission_denied(answer: &Value) -> bool {
    [
        "denied EPERM",
        "denied EACCES",
        "denied operation not permitted",
        "denied permission denied",
    ]
    .contains(&answer.as_str().unwrap_or_default())
}

/// Whether a probe's answer is the kernel's own refusal of a protocol: one it does not
/// have (`EPROTONOSUPPORT`), has turned off (`ENOPROTOOPT`) or, before Linux 5.6, a
/// protocol number it does not know (`EINVAL`), in Python's words or Go's.
fn protocol_refused(answer: &Value) -> bool {
    [
        "denied EPROTONOSUPPORT",
        "denied ENOPROTOOPT",
        "denied EINVAL",
        "denied protocol not supported",
        "denied protocol not available",
        "denied invalid argument",
    ]
    .contains(&answer.as_str().unwrap_or_default())
}

/// Raises this process's hard limit of descriptors, which the extensions it starts
/// unconfined inherit, above [`MAX_FILES`] where it is not and may be raised
/// (`CAP_SYS_RESOURCE`), so that the unconfined probe can hold more descriptors than a
/// confined one may; where it cannot, the probe says its limit ([`assert_free`]).
fn files_limit_above_the_confined_one() {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit and setrlimit with a valid pointer to a local.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) == 0 && limit.rlim_max <= MAX_FILES {
            limit.rlim_max = MAX_FILES + 1;
            libc::setrlimit(libc::RLIMIT_NOFILE, &limit);
        }
    }
}

/// What a confined probe may do.
const ALLOWED: &[&str] = &["write data dir", "write temp dir"];

/// What a planted file outside holds, and must still hold after a confined probe.
const PLANTED: &str = "planted outside\n";

/// `zot ext call <dir> probe` with the planted paths; the probe's answers.
fn probe(home: &Path, cwd: &Path, dir: &Path, args: &Value) -> Result<Value, String> {
    let out = zot(
        home,
        cwd,
        &[
            "call",
            dir.to_str().unwrap(),
            "probe",
            &args.to_string(),
            "--json",
        ],
    );
    if !out.status.success() {
        return Err(text(&out));
    }
    let result: Value =
        serde_json::from_slice(&out.stdout).map_err(|e| format!("{e}: {}", text(&out)))?;
    Ok(serde_json::from_str(first_text(&result).as_str()).unwrap())
}

/// A scratch world for a hostile extension: a `ZOT_HOME` (`home`) with a grants folder, a
/// project (`cwd`), a secret in `user/.ssh`, a folder `outside` with a planted file, a
/// TCP listener, and the extension (copied from `tests/extensions/<source>`) in
/// `hostile/`.
struct World {
    _scratch: TempDir,
    root: PathBuf,
    home: PathBuf,
    cwd: PathBuf,
    ext: PathBuf,
    _listener: TcpListener,
    args: Value,
}

impl World {
    fn new(tag: &str, source: &str) -> World {
        let scratch = TempDir::new(tag);
        let root = scratch.path().to_path_buf();
        // `home` and `cwd` as a `HostBuilder::in_dir(root)` lays them out.
        let (home, cwd) = (root.join("home"), root.join("cwd"));
        for dir in [&home, &cwd, &root.join("user/.ssh"), &root.join("outside")] {
            std::fs::create_dir_all(dir).unwrap();
        }
        let secret = root.join("user/.ssh/id_rsa");
        std::fs::write(&secret, "PRIVATE KEY").unwrap();
        std::fs::create_dir_all(home.join("grants")).unwrap();
        let ext = root.join("hostile");
        copy_dir(&workspace().join("tests/extensions").join(source), &ext);
        files_limit_above_the_confined_one();
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let args = json!({
            "secret": secret, "grants": home.join("grants"), "outside": root.join("outside"),
            "planted": root.join("outside/planted"),
            "port": listener.local_addr().unwrap().port(),
            "files": MAX_FILES + 1,
        });
        let world = World {
            _scratch: scratch,
            root,
            home,
            cwd,
            ext,
            _listener: listener,
            args,
        };
        world.reset_outside();
        world
    }

    fn probe(&self) -> Result<Value, String> {
        probe(&self.home, &self.cwd, &self.ext, &self.args)
    }

    fn zot(&self, args: &[&str]) -> std::process::Output {
        zot(&self.home, &self.cwd, args)
    }

    fn confine(&self) -> String {
        let out = self.zot(&["confine", self.ext.to_str().unwrap()]);
        assert_ok(&out);
        stdout(&out)
    }

    /// `outside` holds only the planted file, as planted; nothing escaped the data dirs'
    /// folder (`write via ..`).
    fn reset_outside(&self) {
        let outside = self.root.join("outside");
        std::fs::remove_dir_all(&outside).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(outside.join("planted"), PLANTED).unwrap();
        let _ = std::fs::remove_file(self.home.join("data/@path/escaped"));
    }

    /// Confined (`when`), every attack was denied and nothing was written outside.
    #[track_caller]
    fn check(&self, got_out: &mut GotOut, when: &str, fenced: &Value) {
        got_out.check(when, fenced);
        self.assert_outside_untouched();
    }

    /// Nothing was written outside since [`World::reset_outside`].
    fn assert_outside_untouched(&self) {
        let outside = self.root.join("outside");
        let mut names: Vec<String> = std::fs::read_dir(&outside)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort_unstable();
        assert_eq!(names, ["planted"], "written in {}", outside.display());
        assert_eq!(
            std::fs::read_to_string(outside.join("planted")).unwrap(),
            PLANTED,
            "the planted file was written"
        );
        assert!(
            !self.home.join("data/@path/escaped").exists(),
            "written beside its data dir"
        );
    }
}

/// Changes `file` (a comment at its end): the extension's files are no longer those
/// confined.
fn change(file: &Path) {
    let mut code = std::fs::read_to_string(file).unwrap();
    code.push_str("\n# changed\n");
    std::fs::write(file, code).unwrap();
}

/// Unconfined, every attack works (so that a denial, confined, is the fence's), but for
/// a protocol the kernel itself refuses, and holding more descriptors where the hard
/// limit is too low to (then only the confined limit is checked, [`GotOut::check`]).
#[track_caller]
fn assert_free(free: &Value) {
    let files_limit = free["files limit"].as_u64().unwrap();
    if files_limit <= MAX_FILES {
        println!(
            "unconfined, the hard limit of descriptors ({files_limit}) cannot show \
             {OPEN_FILES:?} (no CAP_SYS_RESOURCE to raise it)"
        );
    }
    let refused: Vec<String> = ATTACKS
        .iter()
        .chain(ALLOWED)
        .filter(|what| **what != OPEN_FILES || files_limit > MAX_FILES)
        .filter(|what| free[**what] != "ok")
        .chain(
            KERNEL_MAY_LACK
                .iter()
                .filter(|what| free[**what] != "ok" && !protocol_refused(&free[**what])),
        )
        .map(|what| format!("{what}: {}", free[*what]))
        .collect();
    assert!(
        refused.is_empty(),
        "unconfined, these do not work: {refused:#?}\n{free}"
    );
}

/// The attacks that were not denied, confined: each probe's are added (and printed) as
/// it comes, so that the rest of a test still runs, and the test fails at its end with
/// all of them ([`GotOut::assert_none`]).
#[derive(Default)]
struct GotOut(Vec<String>);

impl GotOut {
    /// Confined (`when`), every attack is denied, its hard limit of descriptors is at most
    /// [`MAX_FILES`] and its own folders are writable.
    #[track_caller]
    fn check(&mut self, when: &str, fenced: &Value) {
        let denied = |what: &str| {
            if KERNEL_MAY_LACK.contains(&what) {
                permission_denied(&fenced[what])
            } else {
                fenced[what].as_str().unwrap_or("").starts_with("denied")
            }
        };
        let mut got_out: Vec<String> = ATTACKS
            .iter()
            .chain(KERNEL_MAY_LACK)
            .filter(|what| !denied(what))
            .map(|what| format!("{when}, {what}: {}", fenced[*what]))
            .collect();
        if fenced["files limit"].as_u64().is_none_or(|n| n > MAX_FILES) {
            got_out.push(format!("{when}, files limit: {}", fenced["files limit"]));
        }
        for what in got_out {
            println!("NOT DENIED: {what}");
            self.0.push(what);
        }
        for what in ALLOWED {
            assert_eq!(fenced[*what], "ok", "{when}, {what}: {fenced}");
        }
    }

    #[track_caller]
    fn assert_none(self) {
        assert!(
            self.0.is_empty(),
            "confined, these were not denied: {:#?}",
            self.0
        );
    }
}

/// The documented base: PATH, HOME, TMPDIR, and the locale and terminal the host has
/// (`LC_CTYPE` but for Python, which sets it itself).
fn base_env(with_lc_ctype: bool) -> Value {
    let mut base = vec!["HOME", "PATH", "TMPDIR"];
    let mut passed = vec!["LANG", "LC_ALL", "LC_MESSAGES", "TERM", "TZ"];
    if with_lc_ctype {
        passed.push("LC_CTYPE");
    }
    for name in passed {
        if std::env::var_os(name).is_some() {
            base.push(name);
        }
    }
    base.sort_unstable();
    json!(base)
}

/// The Landlock ABI of this kernel, printed; the tests need 6.
fn landlock_abi() -> i64 {
    let abi = zot_host::manage::confine::kernel_report(&Default::default()).0;
    println!("Landlock ABI of this kernel: {abi}");
    assert!(
        abi >= 6,
        "this test needs Landlock ABI 6 (this kernel: {abi})"
    );
    abi
}

/// The extension's answer, from the output of an [`ext_call`] that succeeded.
#[track_caller]
fn answer(out: &std::process::Output) -> Value {
    assert_ok(out);
    let result: Value = serde_json::from_slice(&out.stdout).unwrap();
    serde_json::from_str(&first_text(&result)).unwrap()
}

/// `zot ext call <ext> <tool> <args> --json` in the world, to be run.
fn ext_call(world: &World, tool: &str, args: &Value) -> std::process::Command {
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_zot"));
    command
        .args(["ext", "call", world.ext.to_str().unwrap(), tool])
        .arg(args.to_string())
        .arg("--json")
        .env("ZOT_HOME", &world.home)
        .current_dir(&world.cwd)
        .stdin(std::process::Stdio::null());
    command
}

/// `zot ext call <dir> reach <args>` with `ZOT_TEST_TOKEN` set in the host's
/// environment; what the extension reached.
fn reach(world: &World, args: Value) -> Value {
    let out = ext_call(world, "reach", &args)
        .env("ZOT_TEST_TOKEN", "t0ken")
        .output()
        .unwrap();
    answer(&out)
}

/// `zot ext call <target> probe` with the world's planted paths.
fn probe_target(world: &World, target: &str) -> Result<Value, String> {
    probe(&world.home, &world.cwd, Path::new(target), &world.args)
}

fn fenced(answers: &Value) -> bool {
    answers["read secret"]
        .as_str()
        .is_some_and(|a| a.starts_with("denied"))
}

/// Each of `powers` is "ok" in `answers`, and those a confined one may still do.
#[track_caller]
fn assert_has(answers: &Value, powers: &[&str], when: &str) {
    let missing: Vec<String> = powers
        .iter()
        .chain(OWN)
        .filter(|what| !answers[**what].as_str().unwrap_or("").starts_with("ok"))
        .map(|what| format!("{what}: {}", answers[*what]))
        .collect();
    assert!(
        missing.is_empty(),
        "{when}, these do not work: {missing:#?}"
    );
}

/// Confined, none of [`POWERS`] is left, and it may still do [`OWN`].
#[track_caller]
fn assert_powerless(answers: &Value, when: &str) {
    let kept: Vec<String> = POWERS
        .iter()
        .filter(|what| !answers[**what].as_str().unwrap_or("").starts_with("denied"))
        .map(|what| format!("{what}: {}", answers[*what]))
        .collect();
    assert!(kept.is_empty(), "{when}, these were not denied: {kept:#?}");
    assert_has(answers, &[], when);
}

/// The regular files of `/etc` (two levels deep) that a confined extension must not read.
fn etc_left_out() -> Vec<PathBuf> {
    let mut left_out = Vec::new();
    let mut dirs = vec![(PathBuf::from("/etc"), 0)];
    while let Some((dir, depth)) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let path = entry.path();
            match entry.file_type() {
                Ok(t) if t.is_dir() && depth < 1 => dirs.push((path, depth + 1)),
                Ok(t) if t.is_file() && !zot_host::manage::confine::etc_allows(&path) => {
                    left_out.push(path)
                }
                _ => {}
            }
        }
    }
    assert!(!left_out.is_empty(), "nothing in /etc is left out");
    left_out
}

/// `zot ext call <dir> power` (as `uid`, when given); its answers.
fn power(world: &World, uid: Option<u32>) -> Value {
    use std::os::unix::process::CommandExt;
    let mut command = ext_call(world, "power", &json!({ "etc": etc_left_out() }));
    if let Some(uid) = uid {
        command.uid(uid).gid(uid);
    }
    answer(&command.output().expect("zot runs"))
}

/// What root's capabilities, the user's kernel keyring and another process's limits and
/// priority would give the `power` tool of hostile-py.
const POWERS: &[&str] = &[
    "capabilities",
    "make a character device",
    "make a block device",
    "read the kernel log",
    "make a bpf map",
    "find the user keyring",
    "add a key",
    "set the host's limits",
    "set the host's priority",
    "set the host's CPUs",
    "set the host's I/O priority",
    "make a user namespace",
    "make System V shared memory",
    "read /etc beyond the list",
];

/// What a confined extension may still do to itself.
const OWN: &[&str] = &["own limits", "own priority", "own thread"];
