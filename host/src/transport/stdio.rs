//! The classic transport: a subprocess in its own process group, frames over its
//! stdin/stdout, stderr appended to the extension's log.

use super::{Connection, Control, Exit, Inbound, LineGate, INBOUND_QUEUE, OUTBOUND_QUEUE};
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::{ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::process::{ChildStdin, ChildStdout, Command};
use tokio::sync::{mpsc, oneshot, Notify};
use zot_protocol::{Line, LineDecoder};

/// After the process exits, how long its output may still drain (a grandchild that
/// escaped the process group could otherwise hold the pipe open forever).
const DRAIN_AFTER_EXIT: Duration = Duration::from_millis(200);
const READ_CHUNK: usize = 64 * 1024;

/// What to run.
#[derive(Debug)]
pub struct StdioSpec {
    /// The resolved program (a bare name is looked up on `PATH`).
    pub program: PathBuf,
    pub args: Vec<String>,
    /// The working directory: the extension's directory.
    pub dir: PathBuf,
    /// Where stderr goes (the extension's log), or nowhere.
    pub stderr: Option<std::fs::File>,
    /// The longest line accepted.
    pub max_frame: usize,
}

/// Spawns the subprocess and its pump tasks. Must be called inside a tokio runtime.
pub fn spawn(spec: StdioSpec) -> std::io::Result<Connection> {
    let mut command = Command::new(&spec.program);
    command
        .args(&spec.args)
        .current_dir(&spec.dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(spec.stderr.map_or_else(Stdio::null, Stdio::from))
        .process_group(0);
    let mut child = command.spawn()?;
    let pgid = child.id().expect("a just-spawned child has a pid") as i32;
    let stdin = child.stdin.take().expect("stdin is piped");
    let stdout = child.stdout.take().expect("stdout is piped");

    let (out_tx, out_rx) = mpsc::channel(OUTBOUND_QUEUE);
    let (in_tx, in_rx) = mpsc::channel(INBOUND_QUEUE);
    let (exit_tx, exit_rx) = oneshot::channel();
    let control = Arc::new(Group {
        pgid,
        reaped: AtomicBool::new(false),
        close_input: Notify::new(),
        exited: Notify::new(),
    });

    tokio::spawn(write_frames(stdin, out_rx, control.clone()));
    tokio::spawn(read_lines(stdout, in_tx, spec.max_frame, control.clone()));
    let group = control.clone();
    tokio::spawn(async move {
        let status = child.wait().await;
        group.reaped.store(true, Ordering::SeqCst);
        // Whatever the leader left behind in its group goes with it.
        signal_group(group.pgid, libc::SIGKILL);
        group.exited.notify_one();
        let _ = exit_tx.send(match status {
            Ok(status) => describe(status),
            Err(e) => Exit {
                reason: format!("lost track of the process: {e}"),
                code: None,
                signal: None,
            },
        });
    });

    Ok(Connection {
        outbound: out_tx,
        inbound: in_rx,
        exit: exit_rx,
        control: Box::new(ControlHandle(control)),
    })
}

/// The process group and the signals the pump tasks wait on.
struct Group {
    pgid: i32,
    reaped: AtomicBool,
    close_input: Notify,
    exited: Notify,
}

struct ControlHandle(Arc<Group>);

impl Control for ControlHandle {
    fn close_input(&self) {
        self.0.close_input.notify_one();
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

fn describe(status: ExitStatus) -> Exit {
    match (status.code(), status.signal()) {
        (Some(code), _) => Exit {
            reason: format!("exited with status {code}"),
            code: Some(code),
            signal: None,
        },
        (None, Some(signal)) => Exit {
            reason: format!("killed by signal {signal}"),
            code: None,
            signal: Some(signal),
        },
        (None, None) => Exit {
            reason: format!("ended: {status}"),
            code: None,
            signal: None,
        },
    }
}

/// Drains the outbound queue into stdin until the queue closes, input is closed, or a
/// write fails (the process is gone); then closes stdin.
async fn write_frames(mut stdin: ChildStdin, mut rx: mpsc::Receiver<Vec<u8>>, group: Arc<Group>) {
    loop {
        tokio::select! {
            biased;
            frame = rx.recv() => match frame {
                Some(bytes) => {
                    if stdin.write_all(&bytes).await.is_err() {
                        break;
                    }
                }
                None => break,
            },
            () = group.close_input.notified() => {
                while let Ok(bytes) = rx.try_recv() {
                    if stdin.write_all(&bytes).await.is_err() {
                        break;
                    }
                }
                break;
            }
        }
    }
    drop(stdin);
    // Frames sent after this point are dropped with the receiver.
}

/// Splits stdout into lines (size-capped) until EOF, or until the process has exited
/// and its output stopped draining.
async fn read_lines(
    mut stdout: ChildStdout,
    tx: mpsc::Sender<Inbound>,
    max_frame: usize,
    group: Arc<Group>,
) {
    let mut decoder = LineDecoder::new(max_frame);
    let gate = LineGate::default();
    let mut buf = vec![0u8; READ_CHUNK];
    let deadline = tokio::time::sleep(Duration::MAX);
    tokio::pin!(deadline);
    let mut exited = false;
    loop {
        let n = tokio::select! {
            read = stdout.read(&mut buf) => match read {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            },
            () = group.exited.notified(), if !exited => {
                exited = true;
                deadline.as_mut().reset(tokio::time::Instant::now() + DRAIN_AFTER_EXIT);
                continue;
            }
            () = &mut deadline => break,
        };
        let mut input = &buf[..n];
        while let Some(line) = decoder.decode(&mut input) {
            if tx.send(admit(&gate, line).await).await.is_err() {
                return;
            }
        }
    }
    if let Some(line) = decoder.finish() {
        let _ = tx.send(admit(&gate, line).await).await;
    }
}

async fn admit(gate: &LineGate, line: Line) -> Inbound {
    match line {
        Line::Frame(bytes) => gate.admit(bytes).await,
        Line::Oversize { len } => Inbound::Oversize(len),
    }
}
