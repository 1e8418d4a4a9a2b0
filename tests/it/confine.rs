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
use zot_host::confine::MAX_FILES;

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
    let abi = zot_host::confine::kernel_report(&Default::default()).0;
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
    let out = crate::go_ext::go_command(crate::go_ext::go())
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
    let gofmt = crate::go_ext::go().with_file_name("gofmt");
    let out = crate::go_ext::go_command(&gofmt)
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
/// itself (`syscall.RawSyscall6(SYS_PTRACE, PTRACE_SEIZE, …)`, `io_uring_setup`, …).
#[test]
fn a_confined_static_go_binary_cannot_get_out_and_an_unconfined_one_can() {
    landlock_abi();
    let world = World::new("confine-go", "hostile-go");
    build_hostile_go(&world.ext);

    let free = world.probe().unwrap();
    assert_free(&free);
    world.reset_outside();

    let said = world.confine();
    assert!(said.contains("hostile is confined"), "{said}");
    let mut got_out = GotOut::default();
    let fenced = world.probe().unwrap();
    println!("confined: {fenced}");
    world.check(&mut got_out, "confined", &fenced);
    assert_eq!(fenced["env"], base_env(true), "{fenced}");

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
        info.contains("enforced      files: read only the system"),
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
