//! The pipe floor through tokio's event loop: the same round trips as the pipe floor, made
//! by a task on the bench's runtime over tokio's pipes. Between it and the library is the
//! host's own work; between it and the pipe floor, the event loop's (a readiness wait
//! before each read, the task's wake-up).

use crate::interleave::Row;
use crate::lines::contains;
use std::process::Stdio;
use std::time::{Duration, Instant};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};
use tokio::runtime::Handle;

/// The extension `program args`, spoken to by a task of `rt`.
pub struct EventLoopPiped {
    rt: Handle,
    child: Child,
    io: Option<(ChildStdin, BufReader<ChildStdout>)>,
    request: fn(&str, u64) -> String,
    check: fn(&[u8]),
    next: u64,
}

impl EventLoopPiped {
    /// Started, once it said `ready`.
    pub fn new(
        rt: &Handle,
        program: &str,
        args: &[&str],
        request: fn(&str, u64) -> String,
        check: fn(&[u8]),
    ) -> EventLoopPiped {
        let _in = rt.enter();
        let mut child = Command::new(program)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let mut out = BufReader::new(child.stdout.take().unwrap());
        rt.block_on(until(&mut out, b"\"type\":\"ready\"", &mut Vec::new()));
        EventLoopPiped {
            rt: rt.clone(),
            child,
            io: Some((stdin, out)),
            request,
            check,
            next: 0,
        }
    }
}

/// Reads lines into `line` until one contains `needle`.
async fn until(out: &mut BufReader<ChildStdout>, needle: &[u8], line: &mut Vec<u8>) {
    loop {
        line.clear();
        let read = out.read_until(b'\n', line).await.unwrap();
        assert!(read > 0, "end of output");
        if contains(line, needle) {
            return;
        }
    }
}

impl Row for EventLoopPiped {
    fn run(&mut self, n: usize) -> Vec<Duration> {
        let (mut stdin, mut out) = self.io.take().expect("not running");
        let (request, check, first) = (self.request, self.check, self.next);
        self.next += n as u64;
        let calls = self.rt.spawn(async move {
            let mut samples = Vec::with_capacity(n);
            let mut line = Vec::with_capacity(4096);
            for i in first..first + n as u64 {
                let id = format!("r{i}");
                let request = request(&id, i);
                let needle = format!("\"id\":\"{id}\"");
                let t = Instant::now();
                stdin.write_all(request.as_bytes()).await.unwrap();
                until(&mut out, needle.as_bytes(), &mut line).await;
                samples.push(t.elapsed());
                check(&line);
            }
            (stdin, out, samples)
        });
        let (stdin, out, samples) = self.rt.block_on(calls).expect("the calls ran");
        self.io = Some((stdin, out));
        samples
    }
}

impl Drop for EventLoopPiped {
    fn drop(&mut self) {
        drop(self.io.take());
        let _ = self.rt.block_on(self.child.wait());
    }
}
