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

/// A latency row through the library: a host loaded once with `exts`, `op` timed on it.
/// Its arguments or event are made before the clock starts.
pub struct InHost {
    rt: Handle,
    host: Host,
    op: Op,
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
            next: 0,
        }
    }
}

impl Row for InHost {
    fn run(&mut self, n: usize) -> Vec<Duration> {
        let first = self.next;
        self.next += n as u64;
        let (host, op) = (self.host.clone(), self.op);
        // The calls are made from a task on the runtime, as an agent's own code runs:
        // from `block_on`'s thread every call would also pay a thread switch each way.
        let calls = self.rt.spawn(async move {
            let mut samples = Vec::with_capacity(n);
            for i in first..first + n as u64 {
                samples.push(match &op {
                    Op::Call { tool, args, expect } => {
                        let args = args(i);
                        let t = Instant::now();
                        let (_, result) = host.call_tool(tool, args, None).await.unwrap();
                        let took = t.elapsed();
                        let text = result.content[0]["text"].as_str().unwrap_or_default();
                        assert!(!result.is_error && text.contains(expect), "{result:?}");
                        took
                    }
                    Op::Intercept => {
                        let event = tool_call_event(i);
                        let t = Instant::now();
                        let verdict = host.intercept(event).await;
                        let took = t.elapsed();
                        assert!(!verdict.block, "{verdict:?}");
                        took
                    }
                });
            }
            samples
        });
        self.rt.block_on(calls).expect("the calls ran")
    }
}

impl Drop for InHost {
    fn drop(&mut self) {
        self.rt.block_on(self.host.shutdown());
    }
}
