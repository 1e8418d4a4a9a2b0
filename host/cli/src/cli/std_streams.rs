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
    let stdin = std::io::stdin();
    let input: Input = match direct(stdin.as_fd(), &mut restore) {
        Some(Direct::Pipe(fd)) => match tokio::net::unix::pipe::Receiver::from_owned_fd(fd) {
            Ok(pipe) => Box::new(pipe),
            Err(_) => Box::new(tokio::io::stdin()),
        },
        Some(Direct::Socket(socket)) => Box::new(socket),
        None => Box::new(tokio::io::stdin()),
    };
    let stdout = std::io::stdout();
    let output: Output = match direct(stdout.as_fd(), &mut restore) {
        Some(Direct::Pipe(fd)) => match tokio::net::unix::pipe::Sender::from_owned_fd(fd) {
            Ok(pipe) => Box::new(pipe),
            Err(_) => Box::new(tokio::io::stdout()),
        },
        Some(Direct::Socket(socket)) => Box::new(socket),
        None => Box::new(tokio::io::stdout()),
    };
    (input, output, restore)
}

/// What `fd` can be read or written as without a blocking thread.
enum Direct {
    Pipe(OwnedFd),
    Socket(tokio::net::UnixStream),
}

/// A duplicate of `fd` if it is a pipe or a UNIX stream socket; its flags are kept in
/// `restore` first. `None` for anything else, or if a step fails.
fn direct(fd: BorrowedFd<'_>, restore: &mut Restore) -> Option<Direct> {
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
    if kind.is_fifo() {
        restore.0.push((raw, flags));
        return Some(Direct::Pipe(owned));
    }
    if kind.is_socket() {
        let socket = std::os::unix::net::UnixStream::from(owned);
        // Not a UNIX socket (a TCP one, from inetd): its address says so.
        socket.local_addr().ok()?;
        restore.0.push((raw, flags));
        socket.set_nonblocking(true).ok()?;
        return tokio::net::UnixStream::from_std(socket)
            .ok()
            .map(Direct::Socket);
    }
    None
}

/// The end of a server task spawned on the runtime: a panic in it goes on here.
pub(crate) fn finish<T>(joined: Result<T, tokio::task::JoinError>) -> Option<T> {
    match joined {
        Ok(value) => Some(value),
        Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
        Err(_) => None,
    }
}
