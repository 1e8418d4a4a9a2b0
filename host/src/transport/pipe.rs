//! Byte-pipe pumps shared by transports whose extension reads frames from a pipe and
//! writes them to another (a subprocess; a WASI command component).

use super::{Inbound, LineGate};
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::sync::{mpsc, oneshot};
use zot_protocol::{leading_id, Line, LineDecoder};

/// After the extension is gone, how long its output may still drain (a grandchild that
/// escaped the process group could otherwise hold the pipe open forever).
const DRAIN_AFTER_EXIT: Duration = Duration::from_millis(200);
const READ_CHUNK: usize = 64 * 1024;
/// How long a reader whose extension owes a reply polls its pipe before it waits.
const BUSY_POLL: Duration = Duration::from_micros(50);

/// Splits an input that has no process behind it (`zot host`'s and `zot ext run`'s
/// stdin) into size-capped lines, as an extension's output is split ([`LineReader`]),
/// until it ends. Needs a tokio runtime.
pub fn input_lines<R>(input: R, max_frame: usize) -> LineReader
where
    R: AsyncRead + Unpin + Send + 'static,
{
    // Nothing "exits" here: only the input's end stops it.
    LineReader::new(input, max_frame, None)
}

/// Splits a pipe into size-capped lines, read as they are asked for (no task, no queue
/// in between: what waits is the pipe's own buffer and at most one read of
/// `READ_CHUNK` bytes), until EOF, or until `exited` fires (or its sender is gone) and
/// the output stopped draining. Of a line longer than `max_frame` no more than `max_frame` bytes are held:
/// it arrives as [`Inbound::Oversize`].
pub struct LineReader {
    pipe: Box<dyn AsyncRead + Unpin + Send>,
    decoder: LineDecoder,
    buf: Box<[u8]>,
    /// `buf[at..filled]` is read but not yet decoded.
    at: usize,
    filled: usize,
    exited: Option<oneshot::Receiver<()>>,
    /// Drains until then once `exited` fired.
    deadline: Option<tokio::time::Instant>,
    ended: bool,
    /// Set for a subprocess's stdout: see [`LineReader::polling`].
    busy: Option<BusyPoll>,
}

/// The pipe's descriptor (nonblocking, owned by the reader's pipe), the calls owed a
/// reply by the extension on it, and the count of calls it last polled for.
struct BusyPoll {
    fd: RawFd,
    owed: Arc<Owed>,
    polled_for: usize,
}

/// Calls owed a reply: how many await one now, and how many were ever sent. A reader
/// polls at most once per call sent, so an extension that trickles lines while a call
/// waits keeps it polling no more than its caller's calls do.
#[derive(Debug, Default)]
pub struct Owed {
    pub awaited: AtomicUsize,
    pub sent: AtomicUsize,
}

impl LineReader {
    pub(crate) fn new(
        pipe: impl AsyncRead + Unpin + Send + 'static,
        max_frame: usize,
        exited: Option<oneshot::Receiver<()>>,
    ) -> LineReader {
        LineReader {
            pipe: Box::new(pipe),
            decoder: LineDecoder::new(max_frame),
            buf: vec![0u8; READ_CHUNK].into_boxed_slice(),
            at: 0,
            filled: 0,
            exited,
            deadline: None,
            ended: false,
            busy: None,
        }
    }

    /// This reader, polling its pipe (`fd`, nonblocking, the pipe's own) for up to
    /// [`BUSY_POLL`] before it waits, once per call sent while calls await a reply
    /// ([`Self::owed`]), when this thread may run on more than one CPU. Waiting, the reply wakes the
    /// runtime's thread; on a VM, when that thread's CPU is idle, that costs tens of
    /// microseconds; polling, the reply is taken on a running CPU, as a socket's
    /// `SO_BUSY_POLL` does.
    pub(crate) fn polling(mut self, fd: RawFd) -> LineReader {
        self.busy = Some(BusyPoll {
            fd,
            owed: Arc::default(),
            polled_for: 0,
        });
        self
    }

    /// The calls owed a reply, which the caller counts, if this reader polls.
    pub(crate) fn owed(&self) -> Option<Arc<Owed>> {
        self.busy.as_ref().map(|b| b.owed.clone())
    }

    /// Reads the pipe without waiting, for up to [`BUSY_POLL`], while a call awaits a
    /// reply: whether it read something (or the end). First it lets the tasks woken
    /// before it run (the caller a reply just answered sends its next call then).
    async fn poll_busily(&mut self) -> bool {
        // On one CPU the reply cannot come while this thread polls, and a yield would
        // only keep the thread from waiting (and the caller it woke from running).
        if self.busy.is_none() || self.deadline.is_some() || crate::util::cpus::of_this_thread() < 2
        {
            return false;
        }
        tokio::task::yield_now().await;
        let Some(busy) = &mut self.busy else {
            return false;
        };
        let sent = busy.owed.sent.load(Ordering::SeqCst);
        if busy.owed.awaited.load(Ordering::SeqCst) == 0 || sent == busy.polled_for {
            return false;
        }
        busy.polled_for = sent;
        let until = Instant::now() + BUSY_POLL;
        loop {
            for _ in 0..16 {
                // SAFETY: `fd` is the open descriptor of `self.pipe`, which lives as long
                // as this reader; the read writes at most `buf.len()` bytes into `buf`.
                let n =
                    unsafe { libc::read(busy.fd, self.buf.as_mut_ptr().cast(), self.buf.len()) };
                match n {
                    0 => {
                        self.ended = true;
                        return true;
                    }
                    1.. => {
                        (self.at, self.filled) = (0, n as usize);
                        return true;
                    }
                    // Nothing yet (EAGAIN), or an error the waiting read will meet too.
                    _ if std::io::Error::last_os_error().kind()
                        == std::io::ErrorKind::WouldBlock =>
                    {
                        std::hint::spin_loop()
                    }
                    _ => return false,
                }
            }
            if Instant::now() >= until {
                return false;
            }
        }
    }

    /// The next line; `None` once the pipe ended (or stopped draining after the exit).
    /// Cancel-safe: nothing read is lost when the future is dropped.
    pub async fn recv(&mut self) -> Option<Inbound> {
        loop {
            if self.at < self.filled {
                // Lines already read cost no wait: without this a reader of a full
                // buffer would keep its thread, and the tasks it wakes (queued behind
                // it, where no other thread takes them), for thousands of lines. Before
                // anything is taken, so a drop here loses nothing.
                tokio::task::consume_budget().await;
                let mut input = &self.buf[self.at..self.filled];
                let line = self.decoder.decode(&mut input);
                self.at = self.filled - input.len();
                match line {
                    Some(line) => return Some(inbound(line)),
                    None => continue,
                }
            }
            if self.ended {
                return self.decoder.finish().map(inbound);
            }
            if self.poll_busily().await {
                continue;
            }
            let deadline = self.deadline;
            let drain = async {
                match deadline {
                    Some(at) => tokio::time::sleep_until(at).await,
                    None => std::future::pending().await,
                }
            };
            let (pipe, buf, exited) = (&mut self.pipe, &mut self.buf, &mut self.exited);
            // Polled only until it fires: then the deadline is set.
            let exited = async {
                match exited.as_mut() {
                    Some(exited) if deadline.is_none() => {
                        let _ = exited.await;
                    }
                    _ => std::future::pending().await,
                }
            };
            tokio::select! {
                biased;
                read = pipe.read(buf) => match read {
                    Ok(0) | Err(_) => self.ended = true,
                    Ok(n) => (self.at, self.filled) = (0, n),
                },
                () = exited => {
                    self.deadline = Some(tokio::time::Instant::now() + DRAIN_AFTER_EXIT);
                }
                () = drain => self.ended = true,
            }
        }
    }

    /// Passes every line into `tx`, each admitted by a [`LineGate`], until the pipe ends
    /// or `tx` closes: for a transport whose lines the core reads from a queue.
    pub(crate) async fn forward(mut self, tx: mpsc::Sender<Inbound>) {
        let gate = LineGate::default();
        while let Some(line) = self.recv().await {
            let line = match line {
                Inbound::Line(bytes, _) => gate.admit(bytes).await,
                oversize => oversize,
            };
            if tx.send(line).await.is_err() {
                return;
            }
        }
    }
}

/// `line` as the core receives it.
fn inbound(line: Line) -> Inbound {
    match line {
        Line::Frame(bytes) => Inbound::Line(bytes, None),
        Line::Oversize { len, head } => Inbound::Oversize {
            len,
            id: leading_id(&head),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;

    /// A reader whose lines are all read already still lets the other tasks of its thread
    /// run (found as a sidecar starving the task that passes its events on).
    #[tokio::test(flavor = "current_thread")]
    async fn reading_buffered_lines_lets_other_tasks_run() {
        let lines: String = (0..1000).map(|i| format!("{{\"n\":{i}}}\n")).collect();
        let mut reader = LineReader::new(std::io::Cursor::new(lines.into_bytes()), 1024, None);
        let ran = Arc::new(AtomicBool::new(false));
        tokio::spawn({
            let ran = ran.clone();
            async move { ran.store(true, Ordering::SeqCst) }
        });
        let mut before = 0;
        while let Some(Inbound::Line(..)) = reader.recv().await {
            if ran.load(Ordering::SeqCst) {
                break;
            }
            before += 1;
        }
        assert!(ran.load(Ordering::SeqCst), "the other task never ran");
        assert!(before < 1000, "it ran only after all {before} lines");
    }

    /// A reader that polls while a call awaits its reply reads what it would have
    /// waited for: a line already there, one that comes after the poll gave up (the
    /// waiting read takes it), and the end; with no call awaited it only waits.
    #[test]
    fn a_polling_reader_reads_what_comes_and_the_end() {
        use std::io::Write;
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let (read, mut write) = std::io::pipe().unwrap();
        let fd = std::os::fd::AsRawFd::as_raw_fd(&read);
        let pipe = rt.block_on(async {
            tokio::net::unix::pipe::Receiver::from_owned_fd(read.into()).unwrap()
        });
        let mut reader = LineReader::new(pipe, 1024, None).polling(fd);
        let owed = reader.owed().expect("a polling reader counts");
        let call = |owed: &Owed| {
            owed.awaited.store(1, Ordering::SeqCst);
            owed.sent.fetch_add(1, Ordering::SeqCst);
        };
        let line = |inbound: Option<Inbound>| match inbound {
            Some(Inbound::Line(bytes, _)) => String::from_utf8(bytes.to_vec()).unwrap(),
            other => panic!("{other:?}"),
        };
        call(&owed);
        write.write_all(b"{\"n\":1}\n").unwrap();
        assert_eq!(line(rt.block_on(reader.recv())), "{\"n\":1}");
        call(&owed);
        let later = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(20));
            write.write_all(b"{\"n\":2}\n").unwrap();
            write
        });
        assert_eq!(line(rt.block_on(reader.recv())), "{\"n\":2}");
        let mut write = later.join().unwrap();
        owed.awaited.store(0, Ordering::SeqCst);
        write.write_all(b"{\"n\":3}\n").unwrap();
        assert_eq!(line(rt.block_on(reader.recv())), "{\"n\":3}");
        call(&owed);
        drop(write);
        assert!(rt.block_on(reader.recv()).is_none(), "the end");
    }
}
