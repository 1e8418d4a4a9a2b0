//! The classic transport: a subprocess in its own process group, frames over its
//! stdin/stdout, stderr copied line by line into the extension's log.

use super::sink::PipeSink;
use super::{pipe, Connection, Control, ExitReason};
use crate::log::ExtLog;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use tokio::process::Command;
use tokio::sync::oneshot;

/// What to run.
#[derive(Debug)]
pub struct StdioSpec {
    /// The resolved program (a bare name is looked up on `PATH`).
    pub program: PathBuf,
    pub args: Vec<String>,
    /// Variables set over the host's environment.
    pub env: Vec<(String, String)>,
    /// The working directory: the extension's directory.
    pub dir: PathBuf,
    /// The log stderr is copied into ([`ExtLog::copy_stderr`]), or `None`: discarded.
    pub stderr: Option<ExtLog>,
    /// The longest line accepted.
    pub max_frame: usize,
    /// Confined (Linux): the environment it gets instead of the host's (`env` is set
    /// over it), and the confinement applied between fork and exec.
    #[cfg(target_os = "linux")]
    pub confine: Option<crate::confine::Confined>,
    /// The sealed copy of `program` it runs from (`program` stays its `argv[0]`).
    #[cfg(target_os = "linux")]
    pub sealed: Option<crate::transport::sealed::Sealed>,
}

/// Spawns the subprocess and its pump tasks. Must be called inside a tokio runtime.
pub fn spawn(spec: StdioSpec) -> std::io::Result<Connection> {
    #[cfg(target_os = "linux")]
    let mut command = match &spec.sealed {
        Some(copy) => {
            let mut command = Command::new(copy.exec_path());
            command.arg0(&spec.program);
            command
        }
        None => Command::new(&spec.program),
    };
    #[cfg(not(target_os = "linux"))]
    let mut command = Command::new(&spec.program);
    #[cfg(target_os = "linux")]
    let mut disk = None;
    #[cfg(target_os = "linux")]
    if let Some(crate::confine::Confined {
        env,
        mut prepared,
        disk: quota,
        project: _,
    }) = spec.confine
    {
        disk = quota;
        command.env_clear().envs(env);
        // SAFETY: `apply_in_child` only makes system calls (no allocation, no lock).
        unsafe {
            command.pre_exec(move || prepared.apply_in_child());
        }
    }
    with_pipes(
        &mut command,
        (&spec.args, &spec.env),
        &spec.dir,
        spec.stderr.is_some(),
    );
    let mut child = command.spawn()?;
    let pgid = child
        .id()
        .and_then(|pid| i32::try_from(pid).ok())
        .ok_or_else(|| std::io::Error::other("its process id could not be read"))?;
    let stdin = child.stdin.take().expect("stdin was set to piped above");
    // Written by the core's tasks themselves (`sink`): a pipe of the readiness loop.
    let stdin = match stdin
        .into_owned_fd()
        .and_then(tokio::net::unix::pipe::Sender::from_owned_fd)
    {
        Ok(stdin) => stdin,
        Err(e) => {
            signal_group(pgid, libc::SIGKILL);
            return Err(e);
        }
    };
    let stdout = child.stdout.take().expect("stdout was set to piped above");
    let (exited_tx, exited_rx) = oneshot::channel();
    let stdout = match stdout
        .into_owned_fd()
        .and_then(|fd| pipe::LineReader::pipe(fd, spec.max_frame, exited_rx))
    {
        Ok(stdout) => stdout,
        Err(e) => {
            signal_group(pgid, libc::SIGKILL);
            return Err(e);
        }
    };
    if let (Some(log), Some(stderr)) = (spec.stderr.clone(), child.stderr.take()) {
        tokio::spawn(log.copy_stderr(stderr));
    }

    let (input, writer) = PipeSink::new(stdin);
    let (exit_tx, exit_rx) = oneshot::channel();
    let control = Arc::new(Group {
        pgid,
        reaped: AtomicBool::new(false),
        input: input.clone(),
        exited: Mutex::new(Some(exited_tx)),
        stopped_for: Mutex::new(None),
    });
    #[cfg(target_os = "linux")]
    if let Some(quota) = disk {
        tokio::spawn(watch_disk(quota, control.clone(), spec.stderr));
    }

    tokio::spawn(writer);
    tokio::spawn(reap(child, control.clone(), exit_tx));

    Ok(Connection {
        outbound: input.into(),
        inbound: super::Lines::Pipe(stdout),
        exit: exit_rx,
        control: Box::new(ControlHandle(control)),
    })
}

/// Waits for the group's leader to exit, then ends what it left: the rest of its group,
/// its input; and tells its exit (`exit`), or why it was stopped.
async fn reap(
    mut child: tokio::process::Child,
    group: Arc<Group>,
    exit: oneshot::Sender<ExitReason>,
) {
    let status = child.wait().await;
    group.reaped.store(true, Ordering::SeqCst);
    // Whatever the leader left behind in its group goes with it.
    signal_group(group.pgid, libc::SIGKILL);
    // Its input goes too: the writer task ends and the pipe is closed, whoever
    // still holds the connection.
    group.input.close_input();
    if let Some(exited) = group.exited.lock().unwrap().take() {
        let _ = exited.send(());
    }
    let stopped_for = group.stopped_for.lock().unwrap().take();
    let _ = exit.send(match (stopped_for, status) {
        (Some(reason), _) => reason,
        (None, Ok(status)) => describe(status),
        (None, Err(e)) => ExitReason::LostTrack(e.to_string()),
    });
}

/// Its arguments, environment and folder, its standard streams piped (stderr only when
/// it is logged), and a process group of its own.
fn with_pipes(
    command: &mut Command,
    (args, env): (&[String], &[(String, String)]),
    dir: &Path,
    log_stderr: bool,
) {
    command
        .args(args)
        .envs(env.iter().map(|(k, v)| (k, v)))
        .current_dir(dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(if log_stderr {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .process_group(0);
}

/// The process group and the signals the pump tasks wait on.
struct Group {
    pgid: i32,
    reaped: AtomicBool,
    input: Arc<PipeSink>,
    /// Fired once it is reaped: its output drains a little longer, then ends.
    exited: Mutex<Option<oneshot::Sender<()>>>,
    /// Why the host stopped it, when it did (its disk quota).
    stopped_for: Mutex<Option<ExitReason>>,
}

/// What a confined extension's data dir holds before it starts: refused when it is over
/// its quota (and the slack) already, holds a device node (which an earlier, unconfined
/// run could have made to reach a disk), or cannot be measured.
#[cfg(target_os = "linux")]
pub fn check_disk_at_start(quota: &crate::confine::DiskQuota) -> Result<(), String> {
    use super::disk_walk::{measure, SLACK};
    let limit = (quota.mb << 20).saturating_add(SLACK);
    let measured = measure(&quota.dir, limit);
    if let Some(device) = measured.device {
        return Err(format!(
            "its data dir {} holds a device node ({}): remove it",
            quota.path.display(),
            device.to_string_lossy()
        ));
    }
    if !measured.complete {
        return Err(format!(
            "its data dir {} holds too many folders to be measured for its disk quota",
            quota.path.display()
        ));
    }
    if measured.bytes > limit {
        return Err(format!(
            "its data dir {} holds more than its disk quota ({} MiB): remove files from it, \
             or grant it more (`zot ext grant NAME -p disk:N`)",
            quota.path.display(),
            quota.mb
        ));
    }
    Ok(())
}

/// Measures the data dir of a confined extension every `confine::DISK_CHECK` (or ten
/// times as long as the last measurement took), with the files its processes hold open
/// after unlinking them, and stops its process group once it holds more than its quota
/// and the slack: a write cannot be refused as a component's is, so it is stopped
/// instead (`RLIMIT_FSIZE` keeps any one file within the quota meanwhile).
#[cfg(target_os = "linux")]
async fn watch_disk(quota: crate::confine::DiskQuota, group: Arc<Group>, log: Option<ExtLog>) {
    use super::disk_walk::{measure, SLACK};
    use crate::caps::Limit;
    let limit = (quota.mb << 20).saturating_add(SLACK);
    let device = quota.dir.dir_metadata().map(|m| {
        use cap_std::fs::MetadataExt;
        m.dev()
    });
    let root = Arc::new(quota.dir);
    let pgid = group.pgid;
    let mut interval = crate::confine::DISK_CHECK;
    while !group.reaped.load(Ordering::SeqCst) {
        tokio::time::sleep(interval).await;
        let started = std::time::Instant::now();
        let dir = root.clone();
        let device = device.as_ref().ok().copied();
        // A tree too deep or too wide to be measured counts as over: what cannot be
        // counted is not left unbounded.
        let measured = tokio::task::spawn_blocking(move || {
            let mut m = measure(&dir, limit);
            if let Some(device) = device {
                m.bytes = m.bytes.saturating_add(super::held::unlinked(pgid, device));
            }
            m
        })
        .await
        .ok();
        interval = crate::confine::DISK_CHECK.max(started.elapsed() * 10);
        let over = match measured {
            Some(m) if !m.complete => {
                if let Some(log) = &log {
                    log.warn("stopped: its data dir holds too many folders to be measured");
                }
                true
            }
            Some(m) => m.bytes > limit,
            None => false,
        };
        if over {
            if let Some(log) = &log {
                log.warn(&format!(
                    "stopped: its data dir {} (with the files it holds open after unlinking \
                     them) is over its disk quota of {} MiB",
                    quota.path.display(),
                    quota.mb
                ));
            }
            stop(
                &group,
                ExitReason::LimitExceeded(Limit::Disk.named(quota.mb)),
            );
            return;
        }
    }
}

/// Stops the group, `reason` being what its exit is reported as.
#[cfg(target_os = "linux")]
fn stop(group: &Group, reason: ExitReason) {
    if !group.reaped.load(Ordering::SeqCst) {
        *group.stopped_for.lock().unwrap() = Some(reason);
        signal_group(group.pgid, libc::SIGKILL);
    }
}

struct ControlHandle(Arc<Group>);

impl Control for ControlHandle {
    fn close_input(&self) {
        self.0.input.close_input();
    }
    fn terminate(&self) {
        if !self.0.reaped.load(Ordering::SeqCst) {
            signal_group(self.0.pgid, libc::SIGTERM);
        }
    }
    fn kill(&self) {
        if !self.0.reaped.load(Ordering::SeqCst) {
            signal_group(self.0.pgid, libc::SIGKILL);
        }
    }
}

fn signal_group(pgid: i32, signal: i32) {
    // SAFETY: kill(2) has no memory-safety preconditions; a negative pid names the group.
    unsafe {
        libc::kill(-pgid, signal);
    }
}

fn describe(status: ExitStatus) -> ExitReason {
    match (status.code(), status.signal()) {
        (Some(code), _) => ExitReason::Exited(code),
        (None, Some(signal)) => ExitReason::Signalled(signal),
        (None, None) => ExitReason::Ended(status.to_string()),
    }
}
