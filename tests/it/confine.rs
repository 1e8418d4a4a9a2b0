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

use crate::common::*;
use serde_json::{json, Value};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::time::Duration;
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

#[test]
fn a_confined_classic_extension_cannot_get_out_and_an_unconfined_one_can() {
    landlock_abi();
    let world = World::new("confine", "hostile-py");

    let free = world.probe().unwrap();
    assert_free(&free);
    world.reset_outside();
    // Another extension's data, beside its own.
    let other = world.home.join("data/other/notes.txt");
    std::fs::create_dir_all(other.parent().unwrap()).unwrap();
    std::fs::write(&other, "another extension's notes").unwrap();
    let read_other = json!({"read": [other]});
    let key = format!("read {}", other.display());
    assert_eq!(reach(&world, read_other.clone())[&key], "ok");

    let said = world.confine();
    println!("{said}");
    assert!(said.contains("hostile is confined"), "{said}");
    let denied = reach(&world, read_other)[&key].clone();
    assert!(denied.as_str().unwrap().starts_with("denied"), "{denied}");
    assert!(
        said.contains(
            "NOT enforced  no connection to UNIX socket files outside its data and temp dirs"
        ),
        "{said}"
    );

    let mut got_out = GotOut::default();
    let fenced = world.probe().unwrap();
    println!("confined: {fenced}");
    world.check(&mut got_out, "confined", &fenced);
    assert_eq!(fenced["env"], base_env(false), "{fenced}");

    // A change to its files: it does not start, confined or not, until confined again.
    change(&world.ext.join("main.py"));
    let refused = world.probe().unwrap_err();
    assert!(
        refused.contains("not started unconfined: it changed since it was confined"),
        "{refused}"
    );
    world.confine();
    let again = world.probe().unwrap();
    assert!(
        again["read secret"].as_str().unwrap().starts_with("denied"),
        "{again}"
    );

    let out = world.zot(&["unconfine", world.ext.to_str().unwrap()]);
    assert_ok(&out);
    assert!(
        stdout(&out).contains("no longer confined"),
        "{}",
        text(&out)
    );
    let free = world.probe().unwrap();
    assert_eq!(free["read secret"], "ok", "{free}");
    got_out.assert_none();
}

/// `tests/extensions/hostile-go` built with the pinned Go into `dir` (a copy of the
/// folder): `dir/hostile`, a static executable (`CGO_ENABLED=0`: no libc, no loader). Its
/// source is kept `gofmt`-clean.
fn build_hostile_go(dir: &Path) {
    let started = std::time::Instant::now();
    let out = crate::common::go_command(crate::common::go())
        .args(["build", "-trimpath", "-o", "hostile", "."])
        .current_dir(dir)
        .output()
        .expect("go runs");
    assert!(
        out.status.success(),
        "go build of hostile-go failed ({}):\n{}",
        out.status,
        text(&out)
    );
    println!("built hostile-go in {:.1?}", started.elapsed());
    let gofmt = crate::common::go().with_file_name("gofmt");
    let out = crate::common::go_command(&gofmt)
        .args(["-l", "."])
        .current_dir(dir)
        .output()
        .expect("gofmt runs");
    assert!(
        out.status.success() && out.stdout.is_empty(),
        "gofmt -l: {}",
        text(&out)
    );
    let binary = std::fs::read(dir.join("hostile")).unwrap();
    assert!(binary.starts_with(b"\x7fELF"), "not an ELF executable");
    assert!(
        !binary.windows(8).any(|w| w == b"ld-linux"),
        "hostile-go is not static: it names a dynamic loader"
    );
}

/// The same attacks from a static binary that needs no libc and makes its system calls
/// itself (`syscall.RawSyscall6(SYS_PTRACE, PTRACE_SEIZE, …)`, `io_uring_setup`, …), and
/// its `power` tool's: what capabilities, keyrings and the host's limits would give.
#[test]
fn a_confined_static_go_binary_cannot_get_out_and_an_unconfined_one_can() {
    landlock_abi();
    let world = World::new("confine-go", "hostile-go");
    build_hostile_go(&world.ext);

    let free = world.probe().unwrap();
    assert_free(&free);
    world.reset_outside();
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    if root {
        assert_has(&power(&world, None), POWERS, "unconfined, Go, as root");
    }

    let said = world.confine();
    assert!(said.contains("hostile is confined"), "{said}");
    let mut got_out = GotOut::default();
    let fenced = world.probe().unwrap();
    println!("confined: {fenced}");
    world.check(&mut got_out, "confined", &fenced);
    assert_eq!(fenced["env"], base_env(true), "{fenced}");
    // The same, from raw system calls: no libc to fall back on, no clone3 to choose.
    let powers = power(&world, None);
    println!("confined, Go: {powers}");
    assert_powerless(&powers, "confined, Go");
    if root {
        assert_eq!(powers["uid"], 0);
    }

    // The binary is part of what was confined: a new build does not start.
    let binary = world.ext.join("hostile");
    let mut bytes = std::fs::read(&binary).unwrap();
    bytes.extend_from_slice(b"\0changed");
    std::fs::write(&binary, bytes).unwrap();
    let refused = world.probe().unwrap_err();
    assert!(
        refused.contains("not started unconfined: it changed since it was confined"),
        "{refused}"
    );
    got_out.assert_none();
}

/// In a `zot host` session: a confined extension is started confined again by `reload`
/// (a new process, still fenced), and one changed on disk since it was confined is not
/// started by it.
#[test]
fn a_reload_starts_a_confined_extension_confined_and_a_changed_one_not_at_all() {
    landlock_abi();
    let world = World::new("confine-reload", "hostile-py");
    let said = world.confine();
    assert!(said.contains("hostile is confined"), "{said}");
    // The session's ZOT_HOME is the world's: the grant made by `confine` is the one read.
    let mut b = HostBuilder::in_dir(&world.root);
    b.ext_path(&world.ext);
    let host = b.start();
    let ready = host.ready_event();
    assert_eq!(ready["extensions"], json!(["hostile"]), "{ready}");

    let call = |host: &Host| -> Value {
        let data = host.call_tool("probe", world.args.clone());
        serde_json::from_str(&first_text(&data)).unwrap()
    };
    let mut got_out = GotOut::default();
    let first = call(&host);
    world.check(&mut got_out, "confined, in a session", &first);

    let report = host.ok("reload", json!({}));
    println!("reload: {report}");
    assert_eq!(report["errors"], json!([]), "{report}");
    assert_eq!(report["ready"], json!(["hostile"]), "{report}");
    let second = call(&host);
    assert_ne!(first["pid"], second["pid"], "reload started it again");
    world.check(&mut got_out, "confined, after a reload", &second);

    change(&world.ext.join("main.py"));
    let report = host.ok("reload", json!({}));
    println!("reload after a change: {report}");
    let errors = report["errors"].as_array().unwrap();
    assert_eq!(errors.len(), 1, "{report}");
    assert_eq!(errors[0]["extension"], "hostile", "{report}");
    let error = errors[0]["error"].as_str().unwrap();
    assert!(
        error.contains("not started unconfined: it changed since it was confined"),
        "{report}"
    );
    let refused = host.fails("call_tool", json!({"name": "probe", "args": world.args}));
    println!("probe after it: {refused}");
    host.shutdown();
    got_out.assert_none();
}

/// An unconfined run may have replaced its data dir by a link (to the home folder):
/// confined, it does not start, rather than be granted where the link leads.
#[test]
fn a_data_dir_replaced_by_a_link_is_refused() {
    let scratch = TempDir::new("confine-link");
    let root = scratch.path();
    let (home, cwd) = (root.join("zot-home"), root.join("project"));
    for dir in [&home, &cwd, &root.join("user")] {
        std::fs::create_dir_all(dir).unwrap();
    }
    let ext = root.join("hostile");
    copy_dir(&workspace().join("tests/extensions/hostile-py"), &ext);
    assert_ok(&zot(&home, &cwd, &["confine", ext.to_str().unwrap()]));
    let args = json!({"secret": "/nonexistent", "grants": "/nonexistent", "outside": "/nonexistent", "port": 9});
    // Its data dir, as the first start made it, replaced by a link.
    probe(&home, &cwd, &ext, &args).unwrap();
    let data = std::fs::read_dir(home.join("data/@path"))
        .unwrap()
        .next()
        .expect("the first start made its data dir")
        .unwrap()
        .path();
    std::fs::remove_dir_all(&data).unwrap();
    std::os::unix::fs::symlink(root.join("user"), &data).unwrap();
    let refused = probe(&home, &cwd, &ext, &args).unwrap_err();
    assert!(refused.contains("is not a folder of"), "{refused}");
    assert!(refused.contains(&data.display().to_string()), "{refused}");
}

#[test]
fn a_component_is_not_confined_it_is_sandboxed() {
    let scratch = TempDir::new("confine-wasm");
    let (home, cwd) = (scratch.path().join("home"), scratch.path().to_path_buf());
    std::fs::create_dir_all(&home).unwrap();
    let dir = write_manifest(
        &scratch.path().join("comp"),
        &json!({"name": "comp", "wasm": zot_test_guests::REACTOR}),
    );
    let out = zot(&home, &cwd, &["confine", dir.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        text(&out).contains("is a component: it always runs in the sandbox"),
        "{}",
        text(&out)
    );
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

/// The extension's answer, from the output of an [`ext_call`] that succeeded.
#[track_caller]
fn answer(out: &std::process::Output) -> Value {
    assert_ok(out);
    let result: Value = serde_json::from_slice(&out.stdout).unwrap();
    serde_json::from_str(&first_text(&result)).unwrap()
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

/// The grants a component gets, in the same words, open the same things to a confined
/// classic extension — the project read-only, a variable, TCP to the port of an HTTP
/// entry (only that port), its memory and disk — and nothing before they are granted.
/// Revoking them leaves it confined; `check` reports the rules in force.
#[test]
fn grants_open_to_a_confined_extension_what_they_name_and_nothing_else() {
    let abi = landlock_abi();
    let world = World::new("confine-grants", "hostile-py");
    let granted = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = granted.local_addr().unwrap().port();
    let other = world.args["port"].as_u64().unwrap();
    std::fs::write(world.cwd.join("notes.txt"), "project notes").unwrap();
    let manifest = world.ext.join("extension.json");
    let mut m: Value = serde_json::from_slice(&std::fs::read(&manifest).unwrap()).unwrap();
    m["permissions"] = json!({"data_dir": true, "cwd": "read", "env": ["ZOT_TEST_TOKEN"],
                              "http": [format!("http://127.0.0.1:{port}")]});
    m["limits"] = json!({"memory_mb": 128, "disk_mb": 2});
    std::fs::write(&manifest, m.to_string()).unwrap();
    let cwd = world.cwd.display().to_string();
    let args = json!({"connect": [port, other], "read": [cwd], "env": ["ZOT_TEST_TOKEN"],
                      "alloc_mb": 16});
    let ask = |alloc_mb: u64, write: Option<(u64, u64)>| {
        let mut a = args.clone();
        a["alloc_mb"] = json!(alloc_mb);
        if let Some((total, file)) = write {
            a["write_mb"] = json!(total);
            a["file_mb"] = json!(file);
        }
        reach(&world, a)
    };
    let (on_port, on_other) = (format!("connect {port}"), format!("connect {other}"));
    let read_cwd = format!("read {cwd}");

    let free = ask(256, None);
    for what in [&on_port, &on_other, &read_cwd, "alloc"] {
        assert_eq!(free[what], "ok", "unconfined, {what}: {free}");
    }
    assert_eq!(free["env ZOT_TEST_TOKEN"], "t0ken", "{free}");

    world.confine();
    let nothing = ask(16, None);
    for what in [&on_port, &on_other, &read_cwd] {
        assert!(
            nothing[what].as_str().unwrap().starts_with("denied"),
            "not granted, {what}: {nothing}"
        );
    }
    assert_eq!(nothing["env ZOT_TEST_TOKEN"], "unset", "{nothing}");
    assert_eq!(nothing["alloc"], "ok", "{nothing}");

    let out = world.zot(&["grant", world.ext.to_str().unwrap(), "--all"]);
    assert_ok(&out);
    let said = stdout(&out);
    println!("{said}");
    for words in [
        format!("open TCP connections to port {port} (asked for http://127.0.0.1:{port}: the kernel enforces the port, not the host name)"),
        "read (not write) the project directory".to_string(),
        "read the environment variable ZOT_TEST_TOKEN".to_string(),
        "use up to 128 MiB of data memory (RLIMIT_DATA)".to_string(),
        "store up to 2 MiB in its data directory".to_string(),
    ] {
        assert!(said.contains(&words), "{words:?} in {said}");
    }
    assert!(!said.contains("is not confined"), "{said}");

    let open = ask(16, Some((1, 1)));
    println!("granted: {open}");
    for what in [&on_port, &read_cwd, "alloc", "write"] {
        assert_eq!(open[what], "ok", "granted, {what}: {open}");
    }
    assert!(
        open[&on_other].as_str().unwrap().starts_with("denied"),
        "another port: {open}"
    );
    assert_eq!(open["env ZOT_TEST_TOKEN"], "t0ken", "{open}");
    // TCP open to a port, every other attack stays shut: UDP, MPTCP and SCTP too (which
    // Landlock's TCP rules would let through).
    let mut got_out = GotOut::default();
    world.check(&mut got_out, "granted", &world.probe().unwrap());
    got_out.assert_none();
    // Its memory (128 MiB of data) and its quota (one file of 3 MiB > 2 MiB).
    let over = ask(256, Some((3, 3)));
    assert_eq!(over["alloc"], "denied MemoryError", "{over}");
    assert_eq!(over["write"], "denied OSError", "{over}");

    // `check` says it is confined and which rules this kernel enforces.
    let out = world.zot(&["check", world.ext.to_str().unwrap(), "--json"]);
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let confinement = &report["confinement"];
    assert_eq!(confinement["confined"], true, "{report}");
    assert_eq!(confinement["stale"], false, "{report}");
    assert_eq!(confinement["landlock_abi"], abi, "{report}");
    let rules = confinement["rules"].as_array().unwrap();
    assert!(
        rules.iter().any(|r| r["rule"]
            .as_str()
            .unwrap()
            .starts_with("network: TCP connections to the granted ports only")
            && r["enforced"] == true),
        "{report}"
    );
    let text_report = stdout(&world.zot(&["check", world.ext.to_str().unwrap()]));
    assert!(
        text_report.contains(&format!("confined   yes (Landlock ABI {abi} here)")),
        "{text_report}"
    );

    let out = world.zot(&["revoke", world.ext.to_str().unwrap()]);
    assert_ok(&out);
    assert!(stdout(&out).contains("stays confined"), "{}", text(&out));
    let revoked = ask(16, None);
    for what in [&on_port, &read_cwd] {
        assert!(
            revoked[what].as_str().unwrap().starts_with("denied"),
            "revoked, {what}: {revoked}"
        );
    }
    assert!(world.probe().unwrap()["read secret"]
        .as_str()
        .unwrap()
        .starts_with("denied"));
}

/// A confined extension that writes past its disk quota in many files (each within it)
/// is stopped by the watcher, with the reason in the session.
#[test]
fn a_confined_extension_past_its_disk_quota_is_stopped() {
    landlock_abi();
    let world = World::new("confine-disk", "hostile-py");
    let manifest = world.ext.join("extension.json");
    let mut m: Value = serde_json::from_slice(&std::fs::read(&manifest).unwrap()).unwrap();
    m["limits"] = json!({"disk_mb": 2});
    std::fs::write(&manifest, m.to_string()).unwrap();
    world.confine();
    let mut b = HostBuilder::in_dir(&world.root);
    b.ext_path(&world.ext);
    let host = b.start();
    assert_eq!(host.ready_event()["extensions"], json!(["hostile"]));
    let data = host.call_tool("reach", json!({"write_mb": 5, "file_mb": 1}));
    assert_eq!(
        serde_json::from_str::<Value>(&first_text(&data)).unwrap()["write"],
        "ok"
    );
    let started = std::time::Instant::now();
    let entry = loop {
        let entry = host.entry("hostile");
        if entry["state"] != "ready" || started.elapsed() > Duration::from_secs(20) {
            break entry;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    println!("after {:?}: {entry}", started.elapsed());
    assert_eq!(entry["state"], "exited", "{entry}");
    assert!(
        entry["error"]
            .as_str()
            .unwrap_or_default()
            .contains("disk quota (2 MiB) exceeded"),
        "{entry}"
    );
    host.shutdown();
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

/// `install --confine` records the decision with what it asks, consented to; `info`
/// and `list --json` report it; a component cannot be confined; an update of a confined
/// extension asks again and moves the confinement to the new files.
#[test]
fn install_confine_and_update_keep_it_confined() {
    let abi = landlock_abi();
    let world = World::new("confine-install", "hostile-py");
    let source = world.ext.to_str().unwrap();
    let out = world.zot(&["install", source, "--confine", "--yes"]);
    assert_ok(&out);
    let said = stdout(&out);
    assert!(
        said.contains("to run confined (Landlock and seccomp)"),
        "{said}"
    );
    assert!(
        said.contains("use up to 1024 MiB of data memory (RLIMIT_DATA)"),
        "{said}"
    );
    assert!(said.contains("It runs confined."), "{said}");
    assert!(fenced(&probe_target(&world, "hostile").unwrap()));

    let info = stdout(&world.zot(&["info", "hostile"]));
    assert!(
        info.contains(&format!("confined     yes (Landlock ABI {abi} here)")),
        "{info}"
    );
    assert!(
        info.contains("enforced      files: read only the program folders"),
        "{info}"
    );
    let json: Value =
        serde_json::from_slice(&world.zot(&["info", "hostile", "--json"]).stdout).unwrap();
    assert_eq!(json["confinement"]["confined"], true, "{json}");
    assert_eq!(json["confinement"]["by_default"], false, "{json}");
    let list: Value = serde_json::from_slice(&world.zot(&["list", "--json"]).stdout).unwrap();
    let row = &list[0];
    assert_eq!(row["name"], "hostile", "{list}");
    assert_eq!(row["confinement"]["confined"], true, "{list}");

    // An update changes its files: asked again (no terminal, no --yes: refused, nothing
    // changed), then moved to the new files with the user's yes.
    std::fs::write(world.ext.join("NEWS"), "a change\n").unwrap();
    let refused = world.zot(&["update", "hostile"]);
    assert!(!refused.status.success(), "{}", text(&refused));
    assert!(
        text(&refused).contains("Update hostile and run the new files confined?"),
        "{}",
        text(&refused)
    );
    assert!(!world.home.join("extensions/hostile/NEWS").exists());
    let out = world.zot(&["update", "hostile", "--yes"]);
    assert_ok(&out);
    assert!(
        stdout(&out).contains("confined yes: the new files run confined"),
        "{}",
        text(&out)
    );
    assert!(world.home.join("extensions/hostile/NEWS").exists());
    assert!(
        fenced(&probe_target(&world, "hostile").unwrap()),
        "still confined, and started"
    );

    let wasm = write_manifest(
        &world.root.join("comp"),
        &json!({"name": "comp", "wasm": zot_test_guests::REACTOR}),
    );
    let out = world.zot(&["install", wasm.to_str().unwrap(), "--confine", "--yes"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        text(&out).contains("--confine: comp is a component"),
        "{}",
        text(&out)
    );
}

/// `confine --default` confines every classic extension the user did not unconfine;
/// `unconfine NAME` exempts it as its files are (a change confines it again); a
/// settings file that cannot be read refuses the start rather than run it unconfined.
#[test]
fn confining_by_default_spares_only_what_the_user_unconfined_as_it_is() {
    landlock_abi();
    let world = World::new("confine-default", "hostile-py");
    let out = world.zot(&["confine", "--default"]);
    assert_ok(&out);
    assert!(
        stdout(&out).contains("Every classic extension runs confined"),
        "{}",
        text(&out)
    );
    let source = world.ext.to_str().unwrap();
    let out = world.zot(&["install", source, "--yes"]);
    assert_ok(&out);
    assert!(
        stdout(&out).contains("It runs confined (by default)."),
        "{}",
        text(&out)
    );
    assert!(fenced(&probe_target(&world, "hostile").unwrap()));
    let json: Value =
        serde_json::from_slice(&world.zot(&["info", "hostile", "--json"]).stdout).unwrap();
    assert_eq!(json["confinement"]["by_default"], true, "{json}");

    let out = world.zot(&["unconfine", "hostile"]);
    assert_ok(&out);
    assert!(
        stdout(&out).contains("confining by default does not apply to it"),
        "{}",
        text(&out)
    );
    assert!(
        !fenced(&probe_target(&world, "hostile").unwrap()),
        "exempted"
    );
    // The exemption was for those files.
    change(&world.home.join("extensions/hostile/main.py"));
    assert!(
        fenced(&probe_target(&world, "hostile").unwrap()),
        "changed: confined again"
    );

    std::fs::write(world.home.join("settings.json"), "{").unwrap();
    let refused = probe_target(&world, "hostile").unwrap_err();
    assert!(
        refused.contains("not started unconfined: the settings cannot be read"),
        "{refused}"
    );
    std::fs::remove_file(world.home.join("settings.json")).unwrap();
    let out = world.zot(&["confine", "--default"]);
    assert_ok(&out);
    let out = world.zot(&["unconfine", "--default"]);
    assert_ok(&out);
    assert!(
        stdout(&out).contains("no longer confined by default"),
        "{}",
        text(&out)
    );
    assert!(!fenced(&probe_target(&world, "hostile").unwrap()));
}

/// `--require-confinement`: it does not start where this kernel cannot enforce one of
/// its rules, naming the rule; where every rule is enforced, it starts.
#[test]
fn required_confinement_does_not_start_where_a_rule_is_not_enforced() {
    let abi = landlock_abi();
    let world = World::new("confine-require", "hostile-py");
    let out = world.zot(&[
        "confine",
        world.ext.to_str().unwrap(),
        "--require-confinement",
    ]);
    assert_ok(&out);
    let answer = world.probe();
    if abi >= 9 {
        assert!(
            fenced(&answer.unwrap()),
            "every rule is enforced on ABI {abi}"
        );
    } else {
        let refused = answer.unwrap_err();
        println!("{refused}");
        assert!(
            refused.contains(&format!(
                "confinement is required, and this kernel cannot enforce: no connection to \
                 UNIX socket files outside its data and temp dirs (needs Landlock ABI 9, this \
                 kernel has {abi})"
            )),
            "{refused}"
        );
    }
    // Confined again without the flag: it starts.
    world.confine();
    assert!(fenced(&world.probe().unwrap()));
}

/// A manifest can name a program anywhere: confined, only that file is readable, never
/// the folder it is in (here the folder holding the planted key).
#[test]
fn a_program_beside_a_secret_does_not_open_the_secret() {
    landlock_abi();
    let world = World::new("confine-program", "hostile-py");
    let ssh = world.root.join("user/.ssh");
    let run = ssh.join("run.sh");
    std::fs::write(
        &run,
        format!(
            "#!/bin/sh\nexec python3 {}\n",
            world.ext.join("main.py").display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&run, std::fs::Permissions::from_mode(0o755)).unwrap();
    let manifest = json!({"name": "hostile", "exec": run});
    std::fs::write(world.ext.join("extension.json"), manifest.to_string()).unwrap();
    assert_eq!(world.probe().unwrap()["read secret"], "ok", "unconfined");
    world.confine();
    let fenced = world.probe().unwrap();
    assert!(
        fenced["read secret"]
            .as_str()
            .unwrap()
            .starts_with("denied"),
        "{fenced}"
    );
}

/// `zot ext call <ext> <tool>` in a session of its own whose controlling terminal is a new
/// pseudo-terminal, as when run from a shell: the extension's answer.
fn call_in_a_terminal(world: &World, tool: &str) -> Value {
    use std::os::unix::process::CommandExt;
    let (mut leader, mut terminal) = (-1, -1);
    // SAFETY: openpty fills the two descriptors; the other arguments may be null.
    let opened = unsafe {
        libc::openpty(
            &mut leader,
            &mut terminal,
            std::ptr::null_mut(),
            std::ptr::null(),
            std::ptr::null(),
        )
    };
    assert_eq!(opened, 0, "openpty: {}", std::io::Error::last_os_error());
    for fd in [leader, terminal] {
        // SAFETY: fcntl on a descriptor this function owns: not inherited by other tests'
        // children.
        unsafe { libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) };
    }
    let mut command = ext_call(world, tool, &json!({}));
    // SAFETY: between fork and exec, system calls only.
    unsafe {
        command.pre_exec(move || {
            if libc::setsid() < 0 || libc::ioctl(terminal, libc::TIOCSCTTY, 0) < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let out = command.output().expect("zot runs");
    // SAFETY: closing the descriptors this function opened.
    unsafe {
        libc::close(leader);
        libc::close(terminal);
    }
    answer(&out)
}

/// Typing into its terminal (`TIOCSTI` pushes a byte into its input, as if typed;
/// `TIOCLINUX` is the virtual console's): unconfined, each reaches the terminal (which
/// takes `TIOCSTI`, and is no virtual console); confined, seccomp refuses both (`EPERM`,
/// before Landlock's `EACCES` for an ioctl on a device).
#[test]
fn a_confined_extension_cannot_type_into_its_terminal_and_an_unconfined_one_can() {
    landlock_abi();
    let world = World::new("confine-tty", "hostile-py");
    let free = call_in_a_terminal(&world, "tty");
    assert_eq!(
        free,
        json!({"TIOCSTI": "ok", "TIOCLINUX": "denied ENOTTY"}),
        "unconfined"
    );
    world.confine();
    let fenced = call_in_a_terminal(&world, "tty");
    assert_eq!(
        fenced,
        json!({"TIOCSTI": "denied EPERM", "TIOCLINUX": "denied EPERM"}),
        "confined"
    );
}

/// An i386 system call (`int 0x80`, as a 32-bit program makes them) from the 64-bit
/// extension: unconfined, it is answered; confined, seccomp kills the process at it.
#[test]
fn a_confined_extension_is_killed_at_an_i386_system_call() {
    landlock_abi();
    let world = World::new("confine-i386", "hostile-py");
    let call = || {
        let ext = world.ext.to_str().unwrap();
        world.zot(&["call", ext, "int80", "--json"])
    };
    let out = call();
    assert_ok(&out);
    let result: Value = serde_json::from_slice(&out.stdout).unwrap();
    let free: Value = serde_json::from_str(&first_text(&result)).unwrap();
    assert_eq!(free["i386 getpid"], free["pid"], "unconfined: {free}");
    world.confine();
    let out = call();
    assert!(!out.status.success(), "{}", text(&out));
    let killed = format!("killed by signal {}", libc::SIGSYS);
    assert!(text(&out).contains(&killed), "{}", text(&out));
}

/// A descriptor the host holds open and not closed at exec (`zot ext call … 5<file` in a
/// shell, or one an agent leaves open): unconfined, the extension inherits it and reads
/// the secret through it; confined, it is closed at exec (`EBADF`) — Landlock checks a
/// file only when it is opened.
#[test]
fn a_confined_extension_inherits_no_descriptor_of_the_host_and_an_unconfined_one_does() {
    use std::os::fd::AsRawFd;
    use std::os::unix::process::CommandExt;
    landlock_abi();
    let world = World::new("confine-fd", "hostile-py");
    let secret = std::fs::File::open(world.args["secret"].as_str().unwrap()).unwrap();
    let fd = secret.as_raw_fd();
    let read_fd_5 = || {
        let mut command = ext_call(&world, "fd", &json!({"fd": 5}));
        // SAFETY: between fork and exec, system calls only.
        unsafe {
            command.pre_exec(move || {
                // The secret as descriptor 5 of `zot`, not closed at exec (`dup2` onto
                // itself keeps the flag: cleared).
                if libc::dup2(fd, 5) < 0 || libc::fcntl(5, libc::F_SETFD, 0) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        answer(&command.output().expect("zot runs"))["read"].clone()
    };
    assert_eq!(read_fd_5(), "ok PRIVATE KEY", "unconfined");
    world.confine();
    assert_eq!(read_fd_5(), "denied EBADF", "confined");
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

/// Root's bounding set: emptied when zot runs as root; a user's zot cannot empty it (no
/// `CAP_SETPCAP`), where `no_new_privs` keeps it from granting anything.
const BOUNDING_SET: &str = "bounding set";

/// Of [`POWERS`], what a user who is not root has unconfined, whatever the machine's
/// settings (the kernel log, `bpf` and user namespaces may be closed to users).
const A_USER_S_POWERS: &[&str] = &[
    "find the user keyring",
    "add a key",
    "set the host's limits",
    "set the host's priority",
    "set the host's CPUs",
    "set the host's I/O priority",
    "make System V shared memory",
    "read /etc beyond the list",
];

/// What a confined extension may still do to itself.
const OWN: &[&str] = &["own limits", "own priority", "own thread"];

/// The user the test drops to: `nobody`.
const USER: u32 = 65534;

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

/// Whether this test can run `zot` as [`USER`]: it runs as root, and that user can run
/// the binary where it was built (not below a folder only root may enter). Says why not.
fn can_drop_to_a_user() -> bool {
    use std::os::unix::process::CommandExt;
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        println!("not run as a user other than this one: the test does not run as root");
        return false;
    }
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_zot"))
        .arg("--version")
        .uid(USER)
        .gid(USER)
        .output();
    match out {
        Ok(out) if out.status.success() => true,
        other => {
            println!(
                "not run as uid {USER}: it cannot run {} ({other:?})",
                env!("CARGO_BIN_EXE_zot")
            );
            false
        }
    }
}

/// Gives `root` and everything below it to `uid`.
fn chown_tree(root: &Path, uid: u32) {
    std::os::unix::fs::lchown(root, Some(uid), Some(uid)).unwrap();
    if root.is_dir() && !root.is_symlink() {
        for entry in std::fs::read_dir(root).unwrap() {
            chown_tree(&entry.unwrap().path(), uid);
        }
    }
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

/// Run by root, a confined extension holds no capability (no device node, no kernel log,
/// no `bpf`), no key of the user's keyrings, reads nothing of `/etc` beyond what programs
/// need, and cannot change the host's limits, priority, CPUs or I/O priority, make a user
/// namespace or System V shared memory — all of which it can unconfined; run by a user
/// (`nobody`, where the test can drop to one), the same of what a user has. It keeps its
/// own limits, priority and threads (`clone3` answers `ENOSYS`, so the C library falls
/// back to `clone`, whose namespace flags the filter reads).
#[test]
fn a_confined_extension_has_no_privilege_as_root_or_as_a_user() {
    landlock_abi();
    let world = World::new("confine-power", "hostile-py");
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        let free = power(&world, None);
        assert_eq!(free["uid"], 0);
        assert_has(&free, POWERS, "unconfined, as root");
        assert_has(&free, &[BOUNDING_SET], "unconfined, as root");
        world.confine();
        let fenced = power(&world, None);
        println!("confined, as root: {fenced}");
        assert_eq!(fenced["uid"], 0);
        assert_powerless(&fenced, "confined, as root");
        assert_eq!(fenced[BOUNDING_SET], "denied", "confined, as root");
    }
    if can_drop_to_a_user() {
        let world = World::new("confine-power-user", "hostile-py");
        chown_tree(&world.root, USER);
        let free = power(&world, Some(USER));
        assert_eq!(free["uid"], USER);
        assert_has(&free, A_USER_S_POWERS, "unconfined, as a user");
        let out = world.zot(&["confine", world.ext.to_str().unwrap()]);
        assert_ok(&out);
        chown_tree(&world.root, USER);
        let fenced = power(&world, Some(USER));
        println!("confined, as a user: {fenced}");
        assert_eq!(fenced["uid"], USER);
        assert_powerless(&fenced, "confined, as a user");
    }
}

/// Sets `limits.disk_mb` in the world's manifest (before it is confined).
fn disk_quota(world: &World, mb: u64) {
    let manifest = world.ext.join("extension.json");
    let mut m: Value = serde_json::from_slice(&std::fs::read(&manifest).unwrap()).unwrap();
    m["limits"] = json!({ "disk_mb": mb });
    std::fs::write(&manifest, m.to_string()).unwrap();
}

/// `fill` with `args` under a quota of 8 MiB, through `zot ext call`: it must be stopped
/// for its quota (not answer, having waited); how many MiB it wrote before (its last
/// write it said it made, from its log) is printed: the overshoot docs/sandbox.md states.
fn filled_past_the_quota(tag: &str, args: Value) {
    landlock_abi();
    let world = World::new(tag, "hostile-py");
    disk_quota(&world, 8);
    world.confine();
    let out = ext_call(&world, "fill", &args).output().unwrap();
    let said = text(&out);
    assert!(!out.status.success(), "it was not stopped: {said}");
    assert!(said.contains("disk quota (8 MiB) exceeded"), "{said}");
    let log = std::fs::read_to_string(world.home.join("logs/ext-hostile.log")).unwrap();
    let wrote: u64 = log
        .lines()
        .filter_map(|l| l.split("wrote ").nth(1)?.strip_suffix(" MiB")?.parse().ok())
        .max()
        .unwrap_or(0);
    println!("{tag}: stopped after writing {wrote} MiB under a quota of 8 MiB");
}

/// A write loop (8 MiB files, each within the quota that `RLIMIT_FSIZE` holds) is
/// stopped once its data dir is over the quota: measured every 100 ms, from the start.
#[test]
fn a_confined_write_loop_is_stopped_at_its_disk_quota() {
    for chunk_mb in [1, 8] {
        filled_past_the_quota(
            "confine-fill",
            json!({"files": 256, "mb": 8, "chunk_mb": chunk_mb, "wait": 20}),
        );
    }
}

/// Twelve files of 8 MiB, each unlinked at once and kept open: no walk of the data dir
/// finds them, the files its processes hold open after unlinking count all the same.
#[test]
fn files_unlinked_while_open_count_against_a_confined_disk_quota() {
    filled_past_the_quota(
        "confine-unlinked",
        json!({"files": 12, "mb": 8, "unlink": true, "wait": 20}),
    );
}

/// A data dir already over its quota, or holding a device node (which an earlier,
/// unconfined run as root could make, and the confined one then read the disk through),
/// is refused before the extension starts, naming why.
#[test]
fn a_data_dir_over_its_quota_or_with_a_device_node_is_refused_at_start() {
    landlock_abi();
    let world = World::new("confine-start", "hostile-py");
    disk_quota(&world, 1);
    world.confine();
    assert!(reach(&world, json!({}))
        .as_object()
        .is_some_and(|o| o.is_empty()));
    let data = world.home.join("data/@path");
    let dir = std::fs::read_dir(&data)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    std::fs::write(dir.join("big"), vec![0u8; 3 << 20]).unwrap();
    let out = ext_call(&world, "reach", &json!({})).output().unwrap();
    assert!(
        text(&out).contains("holds more than its disk quota (1 MiB)"),
        "{}",
        text(&out)
    );
    std::fs::remove_file(dir.join("big")).unwrap();
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        println!("not root: no device node can be planted");
        return;
    }
    let node = std::ffi::CString::new(dir.join("sda").to_str().unwrap()).unwrap();
    // SAFETY: a NUL-terminated path.
    let made = unsafe { libc::mknod(node.as_ptr(), libc::S_IFBLK | 0o600, libc::makedev(7, 0)) };
    assert_eq!(made, 0, "{}", std::io::Error::last_os_error());
    let out = ext_call(&world, "reach", &json!({})).output().unwrap();
    assert!(
        text(&out).contains("holds a device node (sda)"),
        "{}",
        text(&out)
    );
}

/// Two zot processes start the same confined extension at once: the first swaps its
/// temp dir for a link to a folder outside, over and over, while the second starts it
/// again and again and writes in its temp dir. The rule is on the data dir as opened, the
/// temp dir has none of its own: nothing lands outside.
#[test]
fn a_temp_dir_swapped_for_a_link_while_a_second_start_makes_it_gives_nothing_outside() {
    landlock_abi();
    let world = World::new("confine-tmp-race", "hostile-py");
    world.confine();
    let outside = world.root.join("outside");
    let swapping = ext_call(
        &world,
        "tmp_swap",
        &json!({"seconds": 6, "outside": outside}),
    )
    .stdout(std::process::Stdio::piped())
    .stderr(std::process::Stdio::piped())
    .spawn()
    .unwrap();
    let (mut wrote, mut denied, mut refused) = (0, 0, 0);
    let started = std::time::Instant::now();
    while started.elapsed() < Duration::from_secs(5) {
        let out = ext_call(&world, "write_tmp", &json!({})).output().unwrap();
        if !out.status.success() {
            refused += 1;
            println!("did not start: {}", text(&out).lines().last().unwrap_or(""));
            continue;
        }
        match answer(&out)["write"].as_str() {
            Some("ok") => wrote += 1,
            _ => denied += 1,
        }
    }
    let swapped = answer(&swapping.wait_with_output().unwrap());
    println!(
        "{swapped}; second starts: {wrote} wrote in their temp dir, {denied} were denied, \
         {refused} did not start"
    );
    assert!(swapped["swaps"].as_u64().unwrap() > 0, "{swapped}");
    world.assert_outside_untouched();
}

/// Each rule `info` lists as enforced, and what the `power` probe must then find denied.
const RULES_PROBED: &[(&str, &[&str])] = &[
    ("capabilities: none held", &["capabilities", "bounding set"]),
    ("kernel keyrings:", &["find the user keyring", "add a key"]),
    (
        "system calls: an allow-list",
        &[
            "read the kernel log",
            "make a bpf map",
            "set the host's limits",
            "set the host's priority",
            "set the host's CPUs",
            "set the host's I/O priority",
            "make a user namespace",
            "make System V shared memory",
        ],
    ),
    (
        "devices: none made",
        &["make a character device", "make a block device"],
    ),
    (
        "files: read only the program folders",
        &["read /etc beyond the list"],
    ),
];

/// `info` says what the last confined start applied, not what it would: before any start
/// it says so; after one, each rule it lists as enforced is one the hostile probe finds
/// holding. `hello_ack` names the project dir only where it may be read.
#[test]
fn info_says_what_the_last_confined_start_applied_and_the_probe_agrees() {
    landlock_abi();
    let world = World::new("confine-info", "hostile-py");
    assert_ok(&world.zot(&["install", world.ext.to_str().unwrap(), "--confine", "--yes"]));
    let info = |world: &World| -> Value {
        let out = world.zot(&["info", "hostile", "--json"]);
        assert_ok(&out);
        serde_json::from_slice::<Value>(&out.stdout).unwrap()["confinement"].clone()
    };
    let before = info(&world);
    assert_eq!(before["applied_at"], Value::Null, "{before}");
    let text = stdout(&world.zot(&["info", "hostile"]));
    assert!(
        text.contains("not started confined yet: what this kernel would apply"),
        "{text}"
    );

    let call = |tool: &str, args: Value| {
        answer(
            &world
                .zot(&["call", "hostile", tool, &args.to_string(), "--json"])
                .clone(),
        )
    };
    let found = call("power", json!({ "etc": etc_left_out() }));
    let after = info(&world);
    assert!(after["applied_at"].is_string(), "{after}");
    let text = stdout(&world.zot(&["info", "hostile"]));
    assert!(text.contains("its last start, "), "{text}");
    let rules = after["rules"].as_array().unwrap();
    for (rule, attacks) in RULES_PROBED {
        let listed = rules
            .iter()
            .find(|r| r["rule"].as_str().unwrap().starts_with(rule))
            .unwrap_or_else(|| panic!("no rule {rule:?} in {after}"));
        if listed["enforced"] == true {
            for attack in *attacks {
                assert!(
                    found[*attack].as_str().unwrap().starts_with("denied"),
                    "{rule:?} is said to be enforced, and {attack:?}: {}",
                    found[*attack]
                );
            }
        }
    }

    // Not granted the project: told "/" for it; granted, its path.
    assert_eq!(call("told", json!({}))["cwd"], "/");
    let project = std::fs::canonicalize(&world.cwd).unwrap();
    let mut m: Value = serde_json::from_slice(
        &std::fs::read(world.home.join("extensions/hostile/extension.json")).unwrap(),
    )
    .unwrap();
    assert!(
        m.get("permissions").is_none_or(|p| p.get("cwd").is_none()),
        "{m}"
    );
    m["permissions"] = json!({"cwd": "read"});
    std::fs::write(
        world.home.join("extensions/hostile/extension.json"),
        m.to_string(),
    )
    .unwrap();
    assert_ok(&world.zot(&["confine", "hostile"]));
    assert_ok(&world.zot(&["grant", "hostile", "--all"]));
    assert_eq!(
        call("told", json!({}))["cwd"],
        project.display().to_string()
    );
}
