//! Byte-pipe pumps shared by transports whose extension reads frames from a pipe and
//! writes them to another (a subprocess; a WASI command component).

use super::{Inbound, LineGate};
use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::unix::AsyncFd;
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::sync::{mpsc, oneshot, Mutex, OwnedMutexGuard};
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
///
/// A subprocess's pipe ([`LineReader::pipe`]) may be read by a caller itself while it
/// waits for a reply ([`Direct`]): what was read is shared, and a line taken is held
/// until the next is asked for, so lines are handled in the order they came whoever
/// reads them.
pub struct LineReader {
    buffer: Arc<Mutex<Buffer>>,
    /// The buffer from the last line taken until the next is asked for.
    held: Option<OwnedMutexGuard<Buffer>>,
    source: Source,
    exited: Option<oneshot::Receiver<()>>,
    /// Drains until then once `exited` fired.
    deadline: Option<tokio::time::Instant>,
    /// Set for a subprocess's stdout: see [`LineReader::pipe`].
    busy: Option<BusyPoll>,
}

enum Source {
    /// Read by this reader alone.
    Stream(Box<dyn AsyncRead + Unpin + Send>),
    /// A subprocess's stdout, which a [`Direct`] caller may read too, and its
    /// registration with the runtime's reactor (the pipe's or its set's).
    Pipe {
        direct: Direct,
        reactor: AsyncFd<Raw>,
    },
}

/// What was read from a pipe and not yet taken as lines.
struct Buffer {
    decoder: LineDecoder,
    buf: Box<[u8]>,
    /// `buf[at..filled]` is read but not yet decoded.
    at: usize,
    filled: usize,
    ended: bool,
}

impl Buffer {
    fn new(max_frame: usize) -> Buffer {
        Buffer {
            decoder: LineDecoder::new(max_frame),
            buf: vec![0u8; READ_CHUNK].into_boxed_slice(),
            at: 0,
            filled: 0,
            ended: false,
        }
    }

    /// The next line of what was read (`Some(None)`: the end); `None` if more must be
    /// read first.
    fn next(&mut self) -> Option<Option<Inbound>> {
        while self.at < self.filled {
            let mut input = &self.buf[self.at..self.filled];
            let line = self.decoder.decode(&mut input);
            self.at = self.filled - input.len();
            if let Some(line) = line {
                return Some(Some(inbound(line)));
            }
        }
        self.ended.then(|| self.decoder.finish().map(inbound))
    }

    /// Reads what `fd` (nonblocking) has now: how many bytes (0: the end); `WouldBlock`
    /// if nothing. An error other than that ends the input, as the end does.
    fn read(&mut self, fd: RawFd) -> io::Result<usize> {
        // SAFETY: `fd` is open for as long as the `Watched` pipe it belongs to, which
        // the caller holds; the read writes at most `buf.len()` bytes into `buf`.
        let n = unsafe { libc::read(fd, self.buf.as_mut_ptr().cast(), self.buf.len()) };
        match n {
            0 => self.ended = true,
            1.. => (self.at, self.filled) = (0, n as usize),
            _ => match io::Error::last_os_error() {
                e if e.kind() == io::ErrorKind::WouldBlock => return Err(e),
                e if e.kind() == io::ErrorKind::Interrupted => return Err(e),
                _ => self.ended = true,
            },
        }
        Ok(n.max(0) as usize)
    }

    /// Whether something read (or the end) waits to be taken.
    fn waiting(&self) -> bool {
        self.at < self.filled || self.ended
    }
}

/// The calls owed a reply on a polling reader, and the count of calls it last polled for.
struct BusyPoll {
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

/// A subprocess's stdout (nonblocking) as the runtime's reactor watches it: the pipe
/// itself at first; once a caller asked to read it itself ([`Direct::take`]), an epoll
/// set of the pipe's own holding it ([`LineReader::watch_set`]), out of which a caller
/// takes it for its turn: its lines then wake no runtime thread, only that caller. (A
/// set costs each line a little more, so only an extension whose callers read it pays
/// it.) Beside the pipe in the set, an eventfd by which a caller hands back lines it
/// read and left.
struct Watched {
    pipe: OwnedFd,
    set: OwnedFd,
    returned: OwnedFd,
    /// A caller left lines read (or the end) in the buffer: `returned` was written.
    handed_back: AtomicBool,
    /// The reactor watches the set, not the pipe: a caller may take a turn.
    in_set: AtomicBool,
    /// A caller asked for a turn before that.
    wanted: AtomicBool,
}

/// A descriptor of a [`Watched`], as the reactor registers it; open for as long as the
/// `Watched` that owns it, which the registration's owner holds.
struct Raw(RawFd);

impl AsRawFd for Raw {
    fn as_raw_fd(&self) -> RawFd {
        self.0
    }
}

impl Watched {
    fn new(pipe: OwnedFd) -> io::Result<Watched> {
        // SAFETY: plain system calls; the new descriptor is owned at once.
        let set = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
        if set < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `set` was just made and is owned by nothing else.
        let set = unsafe { <OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(set) };
        // SAFETY: as for `set`.
        let returned = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) };
        if returned < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: as for `set`.
        let returned = unsafe { <OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(returned) };
        let watched = Watched {
            pipe,
            set,
            returned,
            handed_back: AtomicBool::new(false),
            in_set: AtomicBool::new(false),
            wanted: AtomicBool::new(false),
        };
        let returned = watched.returned.as_raw_fd();
        watched.control(libc::EPOLL_CTL_ADD, returned, libc::EPOLLIN)?;
        Ok(watched)
    }

    /// `fd` (the pipe or the set) registered with the runtime's reactor. Needs a tokio
    /// runtime.
    fn register(&self, fd: RawFd) -> io::Result<AsyncFd<Raw>> {
        // SAFETY: `fd` is one of `self`'s, open for as long as `self`, which the owner of
        // the registration holds (`Source::Pipe`).
        unsafe { AsyncFd::register_with_interest(Raw(fd), tokio::io::Interest::READABLE) }
            .map_err(|e| e.into())
    }

    /// Tells the reader that lines read (or the end) wait in the buffer.
    fn hand_back(&self) {
        self.handed_back.store(true, Ordering::SeqCst);
        let one = 1u64.to_ne_bytes();
        // SAFETY: writes 8 bytes from `one` to the eventfd `self` owns. It cannot fail
        // but by overflow, after 2^64 - 2 unread writes.
        unsafe { libc::write(self.returned.as_raw_fd(), one.as_ptr().cast(), one.len()) };
    }

    /// Whether a caller handed lines back since the last time; if so, its word is taken.
    fn take_handed_back(&self) -> bool {
        if !self.handed_back.swap(false, Ordering::SeqCst) {
            return false;
        }
        let mut count = [0u8; 8];
        // SAFETY: reads at most 8 bytes into `count` from the eventfd `self` owns.
        unsafe {
            libc::read(
                self.returned.as_raw_fd(),
                count.as_mut_ptr().cast(),
                count.len(),
            )
        };
        true
    }

    /// Puts the pipe in its set (`true`: the runtime sees its lines again; what came in
    /// between wakes it at once) or takes it out. Out, the set is also looked at once
    /// (`epoll_wait`, no wait), which drops the pipe from the set's ready list if it was
    /// still there from a line read since: re-armed, an entry still on that list is not
    /// announced again, and a line that came while the pipe was out would wake no one.
    fn watch(&self, on: bool) {
        // Can fail only for lack of kernel memory; then the pipe stays as it was: in the
        // set, a reader is woken for nothing; out of it, only a caller reads it and the
        // reader wakes on the caller's word (`hand_back`) or on the exit.
        let events = if on { libc::EPOLLIN } else { 0 };
        let _ = self.control(libc::EPOLL_CTL_MOD, self.fd(), events);
        if !on {
            let mut event = libc::epoll_event { events: 0, u64: 0 };
            // SAFETY: one event's room; the set is open while `self` lives.
            unsafe { libc::epoll_wait(self.set.as_raw_fd(), &mut event, 1, 0) };
        }
    }

    /// `epoll_ctl` of `fd`, one of `self`'s, in the set.
    fn control(&self, op: i32, fd: RawFd, events: i32) -> io::Result<()> {
        let mut event = libc::epoll_event {
            events: events as u32,
            u64: 0,
        };
        let set = self.set.as_raw_fd();
        // SAFETY: both descriptors are open (owned by `self`); `event` outlives the call.
        match unsafe { libc::epoll_ctl(set, op, fd, &mut event) } {
            0 => Ok(()),
            _ => Err(io::Error::last_os_error()),
        }
    }

    fn fd(&self) -> RawFd {
        self.pipe.as_raw_fd()
    }
}

/// A subprocess's pipe as a caller may read it itself for its reply, instead of being
/// handed the reply by the runtime's thread that read it (one thread woken per reply
/// instead of two): blocking on it while it waits ([`Direct::take`]), or, a caller that
/// may not block its thread, taking what it gives right after its call is written
/// ([`Direct::glance`]).
#[derive(Clone)]
pub(crate) struct Direct {
    buffer: Arc<Mutex<Buffer>>,
    watched: Arc<Watched>,
}

impl Direct {
    /// The pipe for this caller, out of the runtime's sight, if no one reads it now
    /// (the reader waits for the pipe, or no line taken is still being handled) and
    /// the runtime watches it through its set; if not yet, the reader is asked to, after
    /// the next line it reads.
    pub(crate) fn take(&self) -> Option<Turn<'_>> {
        let turn = self.turn(true)?;
        self.watched.watch(false);
        Some(turn)
    }

    /// As [`Direct::take`], for a caller that takes only what the pipe gives without
    /// waiting ([`Turn::next_now`]): on one CPU the pipe stays in the runtime's sight
    /// (what the caller reads at once wakes no one; no `epoll_ctl` each way); on more,
    /// where it polls for a while, it is out of it, so that the reply does not wake a
    /// runtime thread parked on the reactor.
    pub(crate) fn glance(&self) -> Option<Turn<'_>> {
        match crate::util::cpus::of_this_thread() {
            0 | 1 => self.turn(false),
            _ => self.take(),
        }
    }

    fn turn(&self, hidden: bool) -> Option<Turn<'_>> {
        if !self.watched.in_set.load(Ordering::Acquire) {
            self.watched.wanted.store(true, Ordering::Release);
            return None;
        }
        let buffer = self.buffer.try_lock().ok()?;
        Some(Turn {
            buffer,
            watched: &self.watched,
            spun: false,
            read: false,
            polled_until: None,
            hidden,
        })
    }
}

/// A caller's turn at reading the pipe: until it is dropped, the reader reads nothing
/// (and, if the turn was taken, [`Direct::take`], the runtime is not woken by the
/// pipe); what the caller read and left, the reader is handed back.
pub(crate) struct Turn<'a> {
    buffer: tokio::sync::MutexGuard<'a, Buffer>,
    watched: &'a Watched,
    /// It polled without waiting already.
    spun: bool,
    /// It read the pipe already.
    read: bool,
    /// Until when [`Turn::next_now`] reads the pipe, from its first read.
    polled_until: Option<Instant>,
    /// The pipe is out of the runtime's sight.
    hidden: bool,
}

impl Turn<'_> {
    /// The next line (`Some(None)`: the end), waiting for it until `until` at most
    /// (`None`: `until` passed, even if lines keep coming: a flood does not keep the
    /// caller). Blocks this thread: for a caller outside the runtime's threads. First
    /// it polls without waiting, for up to [`BUSY_POLL`], when this thread may run on
    /// more than one CPU, as the reader does.
    pub(crate) fn next(&mut self, until: Instant) -> Option<Option<Inbound>> {
        let fd = self.watched.fd();
        let spin_until = (!std::mem::replace(&mut self.spun, true)
            && crate::util::cpus::of_this_thread() > 1)
            .then(|| Instant::now() + BUSY_POLL);
        loop {
            let now = Instant::now();
            if now >= until {
                return None;
            }
            if let Some(line) = self.buffer.next() {
                return Some(line);
            }
            // Read before waiting even on one CPU: the extension woken by the call often
            // ran (and answered) before the write that woke it returned.
            if self.buffer.read(fd).is_ok() {
                continue;
            }
            if spin_until.is_some_and(|at| now < at) {
                std::hint::spin_loop();
                continue;
            }
            let mut poll = libc::pollfd {
                fd,
                events: libc::POLLIN,
                revents: 0,
            };
            let wait = (until - now).as_millis().clamp(1, i32::MAX as u128) as i32;
            // SAFETY: one valid `pollfd`; the descriptor is open (see `Buffer::read`).
            unsafe { libc::poll(&mut poll, 1, wait) };
        }
    }

    /// The next line (`Some(None)`: the end) of what was read, or of what the pipe gives
    /// in this turn without waiting: one read on one CPU; reads for up to [`BUSY_POLL`]
    /// from the first, as the reader polls, when this thread may run on more. `None`
    /// once neither holds one. What it takes from the pipe no longer wakes the reader
    /// (the reactor sees an empty pipe).
    pub(crate) fn next_now(&mut self) -> Option<Option<Inbound>> {
        let fd = self.watched.fd();
        let until = *self.polled_until.get_or_insert_with(|| {
            let poll = match crate::util::cpus::of_this_thread() {
                0 | 1 => Duration::ZERO,
                _ => BUSY_POLL,
            };
            Instant::now() + poll
        });
        loop {
            if let Some(line) = self.buffer.next() {
                return Some(line);
            }
            if self.read && Instant::now() >= until {
                return None;
            }
            self.read = true;
            if self.buffer.read(fd).is_err() {
                std::hint::spin_loop();
            }
        }
    }
}

impl Drop for Turn<'_> {
    fn drop(&mut self) {
        if self.hidden {
            self.watched.watch(true);
        }
        if self.buffer.waiting() {
            self.watched.hand_back();
        }
    }
}

impl LineReader {
    pub(crate) fn new(
        pipe: impl AsyncRead + Unpin + Send + 'static,
        max_frame: usize,
        exited: Option<oneshot::Receiver<()>>,
    ) -> LineReader {
        Self::with_source(Source::Stream(Box::new(pipe)), max_frame, exited)
    }

    fn with_source(
        source: Source,
        max_frame: usize,
        exited: Option<oneshot::Receiver<()>>,
    ) -> LineReader {
        let buffer = match &source {
            Source::Pipe { direct, .. } => direct.buffer.clone(),
            Source::Stream(_) => Arc::new(Mutex::new(Buffer::new(max_frame))),
        };
        LineReader {
            buffer,
            held: None,
            source,
            exited,
            deadline: None,
            busy: None,
        }
    }

    /// A reader of a subprocess's stdout (`pipe`; made nonblocking here) that polls it for
    /// up to [`BUSY_POLL`] before it waits, once per call sent while calls await a reply
    /// ([`Self::owed`]), when this thread may run on more than one CPU. Waiting, the
    /// reply wakes the runtime's thread; on a VM, when that thread's CPU is idle, that
    /// costs tens of microseconds; polling, the reply is taken on a running CPU, as a
    /// socket's `SO_BUSY_POLL` does. A caller may read it itself ([`Self::direct`]).
    /// Needs a tokio runtime.
    pub(crate) fn pipe(
        pipe: OwnedFd,
        max_frame: usize,
        exited: oneshot::Receiver<()>,
    ) -> io::Result<LineReader> {
        // SAFETY: fcntl on a descriptor this function owns.
        unsafe {
            let flags = libc::fcntl(pipe.as_raw_fd(), libc::F_GETFL);
            if flags < 0
                || libc::fcntl(pipe.as_raw_fd(), libc::F_SETFL, flags | libc::O_NONBLOCK) < 0
            {
                return Err(io::Error::last_os_error());
            }
        }
        let watched = Watched::new(pipe)?;
        let reactor = watched.register(watched.fd())?;
        let direct = Direct {
            buffer: Arc::new(Mutex::new(Buffer::new(max_frame))),
            watched: Arc::new(watched),
        };
        let source = Source::Pipe { direct, reactor };
        let mut reader = Self::with_source(source, max_frame, Some(exited));
        reader.busy = Some(BusyPoll {
            owed: Arc::default(),
            polled_for: 0,
        });
        Ok(reader)
    }

    /// The calls owed a reply, which the caller counts, if this reader polls.
    pub(crate) fn owed(&self) -> Option<Arc<Owed>> {
        self.busy.as_ref().map(|b| b.owed.clone())
    }

    /// The pipe as a caller may read it itself, if this reader reads a subprocess's.
    pub(crate) fn direct(&self) -> Option<Direct> {
        match &self.source {
            Source::Pipe { direct, .. } => Some(direct.clone()),
            Source::Stream(_) => None,
        }
    }

    /// Reads `fd` without waiting, for up to [`BUSY_POLL`], while a call awaits a
    /// reply: the buffer, if it read something (or the end), or a caller left lines in
    /// it. First it lets the tasks woken before it run (the caller a reply just answered
    /// sends its next call then), without the buffer: a caller may take the pipe then,
    /// and poll for its reply itself (then this reader does not).
    async fn poll_busily(&mut self, fd: RawFd) -> Option<OwnedMutexGuard<Buffer>> {
        // On one CPU the reply cannot come while this thread polls, and a yield would
        // only keep the thread from waiting (and the caller it woke from running).
        if self.busy.is_none() || self.deadline.is_some() || crate::util::cpus::of_this_thread() < 2
        {
            return None;
        }
        tokio::task::yield_now().await;
        let busy = self.busy.as_mut()?;
        let sent = busy.owed.sent.load(Ordering::SeqCst);
        if busy.owed.awaited.load(Ordering::SeqCst) == 0 || sent == busy.polled_for {
            return None;
        }
        busy.polled_for = sent;
        let mut buffer = self.buffer.clone().try_lock_owned().ok()?;
        if buffer.waiting() {
            return Some(buffer);
        }
        let until = Instant::now() + BUSY_POLL;
        loop {
            for _ in 0..16 {
                match buffer.read(fd) {
                    Ok(_) => return Some(buffer),
                    // Nothing yet (EAGAIN), or interrupted.
                    Err(_) => std::hint::spin_loop(),
                }
            }
            if Instant::now() >= until {
                return None;
            }
        }
    }

    /// The next line; `None` once the pipe ended (or stopped draining after the exit).
    /// Cancel-safe: nothing read is lost when the future is dropped.
    pub async fn recv(&mut self) -> Option<Inbound> {
        loop {
            let mut buffer = match self.held.take() {
                Some(buffer) => buffer,
                None => self.buffer.clone().lock_owned().await,
            };
            if buffer.at < buffer.filled {
                // Lines already read cost no wait: without this a reader of a full
                // buffer would keep its thread, and the tasks it wakes (queued behind
                // it, where no other thread takes them), for thousands of lines. Before
                // anything is taken, so a drop here loses nothing.
                tokio::task::consume_budget().await;
            }
            if let Some(line) = buffer.next() {
                self.held = Some(buffer);
                return line;
            }
            match &mut self.source {
                Source::Stream(pipe) => {
                    let (exited, deadline) = (&mut self.exited, self.deadline);
                    tokio::select! {
                        biased;
                        read = pipe.read(&mut buffer.buf) => match read {
                            Ok(0) | Err(_) => buffer.ended = true,
                            Ok(n) => (buffer.at, buffer.filled) = (0, n),
                        },
                        stop = stop(exited, deadline) => self.stopped(stop, &mut buffer),
                    }
                    self.held = Some(buffer);
                }
                Source::Pipe { direct, reactor } => {
                    // Asked for by a caller, whether or not this reader waits next.
                    if direct.watched.wanted.swap(false, Ordering::AcqRel) {
                        Self::watch_set(&direct.watched, reactor);
                    }
                    let fd = direct.watched.fd();
                    // Polls and waits without the buffer: a caller may take the pipe
                    // meanwhile.
                    drop(buffer);
                    if let Some(buffer) = self.poll_busily(fd).await {
                        self.held = Some(buffer);
                        continue;
                    }
                    self.held = Some(self.wait().await);
                }
            }
        }
    }

    /// Waits until the pipe had something (read into the buffer, returned), a caller
    /// handed lines back, the extension exited, or the drain after the exit ran out.
    async fn wait(&mut self) -> OwnedMutexGuard<Buffer> {
        let Source::Pipe { direct, reactor } = &self.source else {
            unreachable!("only a pipe's reader waits without its buffer")
        };
        let watched = &direct.watched;
        loop {
            let (exited, deadline) = (&mut self.exited, self.deadline);
            let stop = tokio::select! {
                biased;
                ready = reactor.readable() => {
                    let mut buffer = self.buffer.clone().lock_owned().await;
                    if buffer.waiting() {
                        // A caller read past its reply meanwhile: those lines come first.
                        return buffer;
                    }
                    let Ok(mut ready) = ready else {
                        // The reactor is gone (the runtime shuts down): so is the input.
                        buffer.ended = true;
                        return buffer;
                    };
                    let read = ready.try_io(|_| match buffer.read(watched.fd()) {
                        // Lines handed back are taken first; the pipe is read after.
                        Err(_) if watched.take_handed_back() => Ok(None),
                        read => read.map(Some),
                    });
                    match read {
                        // Less than asked for: the pipe is empty now. Not read again
                        // until the reactor says so (a line that came meanwhile does).
                        Ok(Ok(Some(n))) if n > 0 && n < READ_CHUNK => ready.clear_ready(),
                        Ok(Ok(_)) => {}
                        // Nothing there (`WouldBlock`: the readiness is cleared), or
                        // interrupted.
                        Ok(Err(_)) | Err(_) => continue,
                    }
                    return buffer;
                }
                stop = stop(exited, deadline) => stop,
            };
            let mut buffer = self.buffer.clone().lock_owned().await;
            self.stopped(stop, &mut buffer);
            return buffer;
        }
    }

    /// Has the reactor watch the pipe through its set from now on, so that callers may
    /// take turns at it. If that fails (no kernel memory), it keeps watching the pipe,
    /// and callers wait for their replies to be handed over, until one asks again.
    fn watch_set(watched: &Watched, reactor: &mut AsyncFd<Raw>) {
        if watched.in_set.load(Ordering::Acquire) {
            return;
        }
        let moved = watched
            .control(libc::EPOLL_CTL_ADD, watched.fd(), libc::EPOLLIN)
            .and_then(|()| watched.register(watched.set.as_raw_fd()));
        match moved {
            Ok(set) => {
                // The pipe's own registration goes with the old one (what is in the pipe
                // makes the set ready at once).
                *reactor = set;
                watched.in_set.store(true, Ordering::Release);
            }
            Err(_) => {
                let _ = watched.control(libc::EPOLL_CTL_DEL, watched.fd(), 0);
            }
        }
    }

    fn stopped(&mut self, stop: Stop, buffer: &mut Buffer) {
        match stop {
            Stop::Exited => {
                self.deadline = Some(tokio::time::Instant::now() + DRAIN_AFTER_EXIT);
            }
            Stop::Drained => buffer.ended = true,
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

/// Why a reader stops waiting for its pipe, other than the pipe.
enum Stop {
    /// The extension exited: its output drains for [`DRAIN_AFTER_EXIT`] more.
    Exited,
    /// The drain ran out.
    Drained,
}

/// Resolves when the extension exits (`exited` fires or is dropped; polled only until
/// then: `deadline` is set after), or once `deadline` passes.
async fn stop(
    exited: &mut Option<oneshot::Receiver<()>>,
    deadline: Option<tokio::time::Instant>,
) -> Stop {
    match (deadline, exited) {
        (Some(at), _) => {
            tokio::time::sleep_until(at).await;
            Stop::Drained
        }
        (None, Some(exited)) => {
            let _ = exited.await;
            Stop::Exited
        }
        (None, None) => std::future::pending().await,
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

    /// A subprocess-pipe reader on a runtime of two threads, the pipe's other end, and
    /// what keeps the reader from taking the extension for exited.
    fn pipe_reader() -> (
        tokio::runtime::Runtime,
        LineReader,
        std::io::PipeWriter,
        oneshot::Sender<()>,
    ) {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let (read, write) = std::io::pipe().unwrap();
        let (running, exited) = oneshot::channel();
        let reader = rt
            .block_on(async { LineReader::pipe(read.into(), 1024, exited) })
            .unwrap();
        (rt, reader, write, running)
    }

    /// A pipe reader read by a task of its runtime (the lines it takes, in order), with
    /// the way a caller takes the pipe.
    struct Read {
        _rt: tokio::runtime::Runtime,
        direct: Direct,
        lines: std::sync::mpsc::Receiver<String>,
        write: std::cell::RefCell<Option<std::io::PipeWriter>>,
        _running: oneshot::Sender<()>,
    }

    impl Read {
        fn new() -> Read {
            let (rt, mut reader, write, running) = pipe_reader();
            let direct = reader.direct().expect("a pipe's reader");
            let (to, lines) = std::sync::mpsc::channel();
            rt.spawn(async move {
                while let Some(Inbound::Line(bytes, _)) = reader.recv().await {
                    let _ = to.send(String::from_utf8(bytes).unwrap());
                }
            });
            Read {
                _rt: rt,
                direct,
                lines,
                write: Some(write).into(),
                _running: running,
            }
        }

        /// The reader's next line.
        fn got(&self) -> Result<String, std::sync::mpsc::RecvTimeoutError> {
            self.lines.recv_timeout(Duration::from_secs(10))
        }

        fn write(&self, bytes: &[u8]) {
            use std::io::Write;
            let mut write = self.write.borrow_mut();
            write.as_mut().expect("not ended").write_all(bytes).unwrap();
        }

        /// Closes the pipe's other end.
        fn end(&self) {
            self.write.borrow_mut().take();
        }

        /// Writes a first line, which the reader reads, and after which it watches the
        /// pipe through its set (a caller asked first, and got nothing yet).
        fn through_set(&self, ask: impl Fn(&Direct) -> Option<Turn<'_>>) {
            assert!(ask(&self.direct).is_none(), "before the set is watched");
            self.write(b"{\"n\":0}\n");
            assert_eq!(self.got().unwrap(), r#"{"n":0}"#);
        }

        /// The pipe as `ask` takes it, once the reader no longer holds it (only while it
        /// takes a line: soon).
        fn turn<'a>(&'a self, ask: impl Fn(&'a Direct) -> Option<Turn<'a>>) -> Turn<'a> {
            let started = Instant::now();
            loop {
                if let Some(turn) = ask(&self.direct) {
                    return turn;
                }
                assert!(started.elapsed() < Duration::from_secs(10), "no turn");
                std::thread::sleep(Duration::from_millis(1));
            }
        }

        /// Whether the set the runtime watches is ready: the pipe's lines would wake it.
        fn set_ready(&self) -> bool {
            let set = self.direct.watched.set.as_raw_fd();
            let mut event = libc::epoll_event { events: 0, u64: 0 };
            // SAFETY: one event's room; the set is open while `direct` lives.
            unsafe { libc::epoll_wait(set, &mut event, 1, 0) > 0 }
        }
    }

    /// The text of a line a turn read.
    fn line(read: Option<Option<Inbound>>) -> String {
        match read {
            Some(Some(Inbound::Line(bytes, _))) => String::from_utf8(bytes).unwrap(),
            other => panic!("{other:?}"),
        }
    }

    /// A reader that polls while a call awaits its reply reads what it would have
    /// waited for: a line already there, one that comes after the poll gave up (the
    /// waiting read takes it), and the end; with no call awaited it only waits.
    #[test]
    fn a_polling_reader_reads_what_comes_and_the_end() {
        use std::io::Write;
        let (rt, mut reader, mut write, _running) = pipe_reader();
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

    /// A caller's turn at the pipe takes it out of the set the runtime watches (lines
    /// that come meanwhile wake no runtime thread), one turn at a time, once the reader
    /// watches that set; what the caller read and left reaches the reader before what it
    /// did not read; a turn gives up at its deadline, whether nothing came or lines
    /// keep coming; the end a turn reads reaches the reader too.
    #[test]
    fn a_turn_hides_the_pipe_from_the_runtime_and_hands_back_what_it_left() {
        let read = Read::new();
        let soon = || Instant::now() + Duration::from_secs(10);
        // The reactor watches the pipe itself until a caller asks for a turn; then the
        // reader moves it into its set after the next line it reads, and waits for the
        // pipe (not for the buffer).
        read.through_set(Direct::take);
        let mut turn = read.turn(Direct::take);
        assert!(read.direct.take().is_none(), "one turn at a time");
        read.write(b"{\"n\":1}\n{\"n\":2}\n");
        assert!(!read.set_ready(), "the pipe's lines would wake the runtime");
        assert_eq!(line(turn.next(soon())), r#"{"n":1}"#);
        drop(turn);
        assert_eq!(read.got().unwrap(), r#"{"n":2}"#, "the line the turn left");

        let mut turn = read.turn(Direct::take);
        read.write(b"{\"n\":3}\n");
        assert_eq!(line(turn.next(soon())), r#"{"n":3}"#);
        let until = Instant::now() + Duration::from_millis(20);
        assert!(turn.next(until).is_none(), "nothing more came");
        assert!(Instant::now() >= until, "it gave up before its deadline");
        read.write(b"{\"n\":4}\n");
        let past = Instant::now();
        assert!(turn.next(past).is_none(), "past its deadline, lines or not");
        drop(turn);
        assert_eq!(
            read.got().unwrap(),
            r#"{"n":4}"#,
            "what came after the turn"
        );

        let mut turn = read.turn(Direct::take);
        read.end();
        assert!(matches!(turn.next(soon()), Some(None)), "the end");
        drop(turn);
        assert_eq!(
            read.got(),
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected),
            "the reader ended"
        );
    }

    /// On one CPU a caller's glance at the pipe leaves it in the runtime's sight, takes
    /// what was read and what one read of the pipe gives, and no more (what comes after
    /// it, the reader reads); it never waits; what it read and left reaches the reader,
    /// before what it did not read.
    #[test]
    fn a_glance_takes_what_one_read_gives_and_hands_back_what_it_left() {
        crate::util::cpus::limit_this_thread(1);
        let read = Read::new();
        read.through_set(Direct::glance);
        let mut now = read.turn(Direct::glance);
        assert!(now.next_now().is_none(), "nothing there: it does not wait");
        drop(now);

        let mut now = read.turn(Direct::glance);
        assert!(read.direct.glance().is_none(), "one at a time");
        read.write(b"{\"n\":1}\n{\"n\":2}\n");
        assert!(read.set_ready(), "the runtime still sees the pipe");
        assert_eq!(line(now.next_now()), r#"{"n":1}"#);
        read.write(b"{\"n\":3}\n");
        assert_eq!(line(now.next_now()), r#"{"n":2}"#, "read with the first");
        assert!(now.next_now().is_none(), "one read of the pipe only");
        drop(now);
        assert_eq!(read.got().unwrap(), r#"{"n":3}"#, "what it did not read");

        let mut now = read.turn(Direct::glance);
        read.write(b"{\"n\":4}\n{\"n\":5}\n");
        assert_eq!(line(now.next_now()), r#"{"n":4}"#);
        drop(now);
        assert_eq!(read.got().unwrap(), r#"{"n":5}"#, "the line it left");
    }

    /// A line that comes while a turn hides the pipe, and that the turn leaves unread,
    /// wakes the reader when the turn ends, even though the set had last told the
    /// runtime of a line the reader has read since (the kernel keeps such an entry on
    /// the set's ready list, and re-arming it in place would wake no one).
    #[test]
    fn a_line_left_unread_by_a_turn_wakes_the_reader() {
        let read = Read::new();
        read.through_set(Direct::take);
        for n in 1..50 {
            // Read by the reader through the set.
            read.write(format!("{{\"a\":{n}}}\n").as_bytes());
            assert_eq!(read.got().unwrap(), format!("{{\"a\":{n}}}"));
            let turn = read.turn(Direct::take);
            read.write(format!("{{\"b\":{n}}}\n").as_bytes());
            drop(turn);
            assert_eq!(
                read.got().unwrap(),
                format!("{{\"b\":{n}}}"),
                "left by turn {n}"
            );
        }
    }

    /// On more than one CPU a glance polls the pipe for a while: out of the runtime's
    /// sight meanwhile (a line then wakes no runtime thread), and back in it after.
    #[test]
    fn a_glance_on_more_cpus_hides_the_pipe_while_it_polls() {
        if std::thread::available_parallelism().map_or(1, usize::from) < 2 {
            return;
        }
        crate::util::cpus::limit_this_thread(2);
        let read = Read::new();
        read.through_set(Direct::glance);
        let mut now = read.turn(Direct::glance);
        read.write(b"{\"n\":1}\n");
        assert!(!read.set_ready(), "the pipe's line would wake the runtime");
        assert_eq!(line(now.next_now()), r#"{"n":1}"#);
        assert!(
            now.next_now().is_none(),
            "nothing more came while it polled"
        );
        drop(now);
        read.write(b"{\"n\":2}\n");
        assert_eq!(read.got().unwrap(), r#"{"n":2}"#, "the reader's again");
    }
}
