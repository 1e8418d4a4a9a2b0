//! The process's own stdin and stdout, as `zot host`, `zot mcp` and `zot ext run` serve
//! lines on them.
//!
//! tokio's `stdin()`/`stdout()` hand every read and write to a blocking thread: two
//! thread switches per line each way. A pipe or a UNIX socket (what a client that spawns
//! zot gives it) is instead read and written by the runtime's own threads, through the
//! same readiness loop as the extensions' pipes. That needs the descriptor in
//! non-blocking mode, which it shares with whoever else holds it (a shell that passed
//! its own stdout on): [`Restore`] puts the mode back when the streams are done. A
//! terminal, a file or anything else keeps tokio's blocking streams.

use std::fs::File;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd, RawFd};
use std::os::unix::fs::FileTypeExt;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::unix::pipe;

/// stdin as an async stream.
pub(crate) type Input = Box<dyn AsyncRead + Unpin + Send>;
/// stdout as an async stream.
pub(crate) type Output = Box<dyn AsyncWrite + Unpin + Send>;

/// Gives stdin and stdout back the file status flags they had, when dropped.
pub(crate) struct Restore(Vec<(RawFd, libc::c_int)>);

impl Drop for Restore {
    fn drop(&mut self) {
        for &(fd, flags) in &self.0 {
            // SAFETY: fcntl on the process's own stdin/stdout, open for its whole life.
            unsafe { libc::fcntl(fd, libc::F_SETFL, flags) };
        }
    }
}

/// stdin and stdout, each read and written by the runtime itself when it is a pipe or
/// a UNIX socket. Must be called inside a tokio runtime.
pub(crate) fn open() -> (Input, Output, Restore) {
    let mut restore = Restore(Vec::new());
    let input: Input = direct(
        std::io::stdin().as_fd(),
        &mut restore,
        |fd| Ok(Box::new(pipe::Receiver::from_owned_fd(fd)?) as Input),
        |socket| Box::new(socket),
    )
    .unwrap_or_else(|| Box::new(tokio::io::stdin()));
    let output: Output = direct(
        std::io::stdout().as_fd(),
        &mut restore,
        |fd| Ok(Box::new(pipe::Sender::from_owned_fd(fd)?) as Output),
        |socket| Box::new(socket),
    )
    .unwrap_or_else(|| Box::new(tokio::io::stdout()));
    (input, output, restore)
}

/// `fd` as a stream the runtime reads and writes itself: a duplicate of it, made a
/// stream by `pipe` if it is a pipe, by `socket` if it is a UNIX stream socket; its flags
/// as they were go into `restore` (or are given back at once if a step fails). `None`
/// for anything else, or if a step fails: the caller takes tokio's blocking stream.
fn direct<T>(
    fd: BorrowedFd<'_>,
    restore: &mut Restore,
    pipe: impl FnOnce(OwnedFd) -> std::io::Result<T>,
    socket: impl FnOnce(tokio::net::UnixStream) -> T,
) -> Option<T> {
    let owned = fd.try_clone_to_owned().ok()?;
    let kind = File::from(owned.try_clone().ok()?)
        .metadata()
        .ok()?
        .file_type();
    let raw = fd.as_raw_fd();
    // SAFETY: F_GETFL on a descriptor this process holds.
    let flags = unsafe { libc::fcntl(raw, libc::F_GETFL) };
    if flags < 0 {
        return None;
    }
    let stream = if kind.is_fifo() {
        pipe(owned).ok()
    } else if kind.is_socket() {
        let unix = std::os::unix::net::UnixStream::from(owned);
        // Not a UNIX socket (a TCP one, from inetd): its address says so.
        unix.local_addr().ok()?;
        unix.set_nonblocking(true)
            .ok()
            .and_then(|()| tokio::net::UnixStream::from_std(unix).ok())
            .map(socket)
    } else {
        return None;
    };
    match stream {
        Some(stream) => {
            restore.0.push((raw, flags));
            Some(stream)
        }
        None => {
            // A step may have left it non-blocking: the blocking stream needs it back.
            drop(Restore(vec![(raw, flags)]));
            None
        }
    }
}

/// The end of a server task spawned on the runtime: a panic in it goes on here.
pub(crate) fn finish<T>(joined: Result<T, tokio::task::JoinError>) -> Option<T> {
    match joined {
        Ok(value) => Some(value),
        Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
        Err(_) => None,
    }
}
