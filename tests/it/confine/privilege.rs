//! No privilege as root or as a user: capabilities, keyrings, other processes' limits.

use super::*;
use std::path::Path;

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

/// The user the test drops to: `nobody`.
const USER: u32 = 65534;

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
