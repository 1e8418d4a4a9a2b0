//! The stdin of a preview-1 module whose runtime polls it (Go's: `os.Stdin` is read
//! through its poller when `fd_fdstat_get` says it is non-blocking). It is told so, and
//! its read of a stdin with nothing queued returns `again` instead of waiting: the
//! runtime parks the reading goroutine in `poll_oneoff` — which waits on the frame queue
//! with no deadline running (`command::FrameStdin`'s `ready`) — and runs the others
//! meanwhile, such as the one answering the last frame. Other modules (a Rust or C
//! program reading stdin in a loop) keep a stdin that blocks; while such a read waits,
//! a call that times out says so (`Control::stalled`). Stdout stays blocking: a
//! write waits for room, which a runtime handles like any slow write.

use super::preview1_quota::{call, is_stdio, P1};
use super::GuestData;
use std::sync::atomic::Ordering;
use wasmtime::{Caller, Extern, Linker};

/// `errno::again`: nothing to read yet (a non-blocking read).
const AGAIN: i32 = 6;
/// `fdflags::nonblock`.
const NONBLOCK: u16 = 4;

/// Shadows `fd_read` and `fd_fdstat_get` in `linker` (after `preview1_quota`'s, which
/// connects the originals) for a module whose stdin is polled; the others see the
/// originals' answers.
pub(super) fn add_to_linker(linker: &mut Linker<GuestData>) -> wasmtime::Result<()> {
    linker.allow_shadowing(true);
    linker.func_wrap_async(
        P1,
        "fd_read",
        move |mut c: Caller<'_, GuestData>, (fd, iovs, n, out): (i32, i32, i32, i32)| {
            Box::new(async move {
                let stdin = fd == 0 && is_stdio(&c, fd);
                match c.data().p1_polled_stdin.clone().filter(|_| stdin) {
                    Some(polled) if !polled.readable() => Ok(AGAIN),
                    Some(_) => call(&mut c, "fd_read", (fd, iovs, n, out)).await,
                    None if stdin => {
                        // A read that may wait: said by a call that times out meanwhile.
                        let stop = c.data().stop.clone();
                        stop.reading_stdin.store(true, Ordering::SeqCst);
                        let read = call(&mut c, "fd_read", (fd, iovs, n, out)).await;
                        stop.reading_stdin.store(false, Ordering::SeqCst);
                        read
                    }
                    None => call(&mut c, "fd_read", (fd, iovs, n, out)).await,
                }
            })
        },
    )?;
    linker.func_wrap_async(
        P1,
        "fd_fdstat_get",
        move |mut c: Caller<'_, GuestData>, (fd, out): (i32, i32)| {
            Box::new(async move {
                let errno = call(&mut c, "fd_fdstat_get", (fd, out)).await?;
                let polled = c.data().p1_polled_stdin.is_some() && fd == 0 && is_stdio(&c, fd);
                if errno == 0 && polled {
                    set_nonblock(&mut c, out);
                }
                Ok(errno)
            })
        },
    )?;

    Ok(())
}

/// Sets `fdflags::nonblock` in the `fdstat` at `out` of the module's memory.
fn set_nonblock(c: &mut Caller<'_, GuestData>, out: i32) {
    let Some(Extern::Memory(memory)) = c.get_export("memory") else {
        return;
    };
    let at = out as u32 as usize + 2;
    let mut flags = [0u8; 2];
    if memory.read(&*c, at, &mut flags).is_ok() {
        let set = (u16::from_le_bytes(flags) | NONBLOCK).to_le_bytes();
        let _ = memory.write(&mut *c, at, &set);
    }
}
