//! The `zot-host` library in this process: the hosts every section starts, and the row
//! that times one of their calls.

use crate::interleave::Row;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use tokio::runtime::Handle;
use zot_host::{Host, HostConfig, ZotHome};
use zot_protocol::Event;

/// Loads only `exts`, with `home` as ZOT_HOME and project directory, and a ready wait
/// long enough for a cold compile on a busy machine.
pub fn config(home: &Path, exts: &[PathBuf]) -> HostConfig {
    let mut config = HostConfig::new(ZotHome::new(home), home.to_path_buf());
    config.explicit = exts.to_vec();
    config.installed = false;
    config.timeouts.ready = Duration::from_secs(60);
    config
}

/// A host with `config`, its notifications read and dropped. Inside the runtime.
pub fn host(config: HostConfig) -> Host {
    let (host, mut notes) = Host::new(config);
    tokio::spawn(async move { while notes.recv().await.is_some() {} });
    host
}

/// Loads `host`'s extensions, asserting that all `count` became ready; the time it took.
pub async fn load(host: &Host, count: usize) -> Duration {
    let t = Instant::now();
    let report = host.load().await;
    let took = t.elapsed();
    assert_eq!(report.ready.len(), count, "{report:?}");
    took
}

/// What a [`InHost`] row times.
#[derive(Clone, Copy)]
pub enum Op {
    /// `call_tool(tool, args(i))`: no error, and its first block's text holds `expect`.
    Call {
        tool: &'static str,
        args: fn(u64) -> Value,
        expect: &'static str,
    },
    /// `intercept` of a `tool_call` event, which must be allowed.
    Intercept,
}

/// A `tool_call` event of tool `echo`, as an agent intercepts before a call.
fn tool_call_event(i: u64) -> Event {
    let fields = json!({"tool_id": format!("t{i}"), "tool_name": "echo", "tool_args": {"i": i}});
    Event {
        id: None,
        event: "tool_call".into(),
        fields: serde_json::from_value(fields).unwrap(),
    }
}

/// Where an [`InHost`] row's calls are made from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Caller {
    /// A task spawned on the multi-thread runtime, as an agent's own async code runs.
    Task,
    /// This thread, one `Handle::block_on` per call, as synchronous code calls: each
    /// call is timed with its `block_on`.
    BlockOn,
}

/// A latency row through the library: a host loaded once with `exts`, `op` timed on it.
/// Its arguments or event are made before the clock starts.
pub struct InHost {
    rt: Handle,
    host: Host,
    op: Op,
    caller: Caller,
    next: u64,
}

impl InHost {
    pub fn new(rt: &Handle, home: &Path, exts: &[PathBuf], op: Op) -> InHost {
        let host = rt.block_on(async {
            let host = host(config(home, exts));
            load(&host, exts.len()).await;
            host
        });
        InHost {
            rt: rt.clone(),
            host,
            op,
            caller: Caller::Task,
            next: 0,
        }
    }

    /// The same row with its calls made from `caller`.
    pub fn called_from(mut self, caller: Caller) -> InHost {
        self.caller = caller;
        self
    }
}

/// What one op is given, made before the clock starts.
enum Input {
    Call(&'static str, Value, &'static str),
    Intercept(Event),
}

impl Input {
    fn of(op: Op, i: u64) -> Input {
        match op {
            Op::Call { tool, args, expect } => Input::Call(tool, args(i), expect),
            Op::Intercept => Input::Intercept(tool_call_event(i)),
        }
    }
}

/// Performs `input` on `host`; a check of its outcome, to run once the clock stopped.
async fn perform(host: &Host, input: Input) -> impl FnOnce() {
    let outcome = match input {
        Input::Call(tool, args, expect) => {
            Ok((host.call_tool(tool, args, None).await.unwrap().1, expect))
        }
        Input::Intercept(event) => Err(host.intercept(event).await),
    };
    move || match outcome {
        Ok((result, expect)) => {
            let text = result.content[0]["text"].as_str().unwrap_or_default();
            assert!(!result.is_error && text.contains(expect), "{result:?}");
        }
        Err(verdict) => assert!(!verdict.block, "{verdict:?}"),
    }
}

impl Row for InHost {
    fn run(&mut self, n: usize) -> Vec<Duration> {
        let first = self.next;
        self.next += n as u64;
        let (host, op) = (self.host.clone(), self.op);
        let calls = first..first + n as u64;
        match self.caller {
            Caller::Task => {
                let calls = self.rt.spawn(async move {
                    let mut samples = Vec::with_capacity(n);
                    for i in calls {
                        let input = Input::of(op, i);
                        let t = Instant::now();
                        let check = perform(&host, input).await;
                        samples.push(t.elapsed());
                        check();
                    }
                    samples
                });
                self.rt.block_on(calls).expect("the calls ran")
            }
            Caller::BlockOn => calls
                .map(|i| {
                    let input = Input::of(op, i);
                    let t = Instant::now();
                    let check = self.rt.block_on(perform(&host, input));
                    let took = t.elapsed();
                    check();
                    took
                })
                .collect(),
        }
    }
}

/// The library on a current-thread runtime of its own, each call made by
/// `Runtime::block_on` on this thread: the runtime runs only inside those calls, on the
/// caller's thread, so a call crosses no thread (and nothing of the host runs between
/// calls).
pub struct OnCurrentThread {
    rt: tokio::runtime::Runtime,
    host: Host,
    op: Op,
    next: u64,
}

impl OnCurrentThread {
    pub fn new(home: &Path, exts: &[PathBuf], op: Op) -> OnCurrentThread {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let host = rt.block_on(async {
            let host = host(config(home, exts));
            load(&host, exts.len()).await;
            host
        });
        OnCurrentThread {
            rt,
            host,
            op,
            next: 0,
        }
    }
}

impl Row for OnCurrentThread {
    fn run(&mut self, n: usize) -> Vec<Duration> {
        let first = self.next;
        self.next += n as u64;
        (first..first + n as u64)
            .map(|i| {
                let input = Input::of(self.op, i);
                let t = Instant::now();
                let check = self.rt.block_on(perform(&self.host, input));
                let took = t.elapsed();
                check();
                took
            })
            .collect()
    }
}

impl Drop for OnCurrentThread {
    fn drop(&mut self) {
        self.rt.block_on(self.host.shutdown());
    }
}

impl Drop for InHost {
    fn drop(&mut self) {
        self.rt.block_on(self.host.shutdown());
    }
}
