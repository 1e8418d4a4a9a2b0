//! What a confined program cannot reach of its surroundings: a secret beside it, its
//! terminal, i386 system calls, the host's descriptors.

use super::*;
use serde_json::{json, Value};

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
