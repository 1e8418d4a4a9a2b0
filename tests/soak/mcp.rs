//! `zot mcp` over stdio, as an MCP client speaks to it: one client of the soak, making
//! `tools/call`s (each of which `zot mcp` passes through the interceptors and sends as an
//! event first).

use crate::jsonl::Peer;
use crate::ops;
use crate::tally::{Outcome, Tally};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::process::Command;

pub const CLIENT: &str = "mcp";

pub struct Mcp {
    peer: Peer,
}

fn is_answer(v: &Value) -> bool {
    v.get("result").is_some() || v.get("error").is_some()
}

impl Mcp {
    /// `zot mcp --only` with `exts` and ZOT_HOME `home` (its stderr into `stderr`),
    /// initialized, once it lists a tool of each of `tools`; its notifications counted.
    pub async fn start(
        home: &Path,
        exts: &[PathBuf],
        tools: &[&str],
        stderr: std::fs::File,
        tally: Arc<Tally>,
    ) -> Mcp {
        let mut command = Command::new(env!("CARGO_BIN_EXE_zot"));
        command
            .args(["mcp", "--only", "--ready-timeout-ms", "30000", "--zot-home"])
            .arg(home);
        for e in exts {
            command.arg("--ext").arg(e);
        }
        let peer = Peer::spawn(&mut command, stderr, is_answer, move |v| {
            tally.event(CLIENT, v["method"].as_str().unwrap_or("?"));
        });
        let params = json!({"protocolVersion": "2025-11-25", "capabilities": {},
                            "clientInfo": {"name": "zot-soak", "version": "0"}});
        let init = json!({"jsonrpc": "2.0", "method": "initialize", "params": params});
        let answer = peer.request(init).await.expect("zot mcp initializes");
        assert!(answer.get("result").is_some(), "initialize: {answer}");
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        peer.send(&initialized).await.unwrap();
        let mcp = Mcp { peer };
        mcp.wait_for(tools).await;
        mcp
    }

    /// Until `tools/list` names every one of `tools` (components may still compile).
    async fn wait_for(&self, tools: &[&str]) {
        let t = Instant::now();
        loop {
            let list = json!({"jsonrpc": "2.0", "method": "tools/list"});
            let answer = self.peer.request(list).await.expect("tools/list");
            let listed = answer["result"]["tools"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            let has = |name: &&str| listed.iter().any(|t| t["name"] == *name);
            if tools.iter().all(has) {
                return;
            }
            assert!(
                t.elapsed() < Duration::from_secs(120),
                "zot mcp lists: {answer}"
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    pub fn pid(&self) -> u32 {
        self.peer.pid()
    }

    /// The `i`th call of a worker, carrying `marker` ([`ops::mcp`]).
    pub async fn op(&self, i: u64, marker: &str) -> Outcome {
        let (tool, args, expect, block) = ops::mcp(i, marker);
        let params = json!({"name": tool, "arguments": args});
        let call = json!({"jsonrpc": "2.0", "method": "tools/call", "params": params});
        let answer = match self.peer.request(call).await {
            Ok(a) => a,
            Err(why) => return Outcome::Failed(why),
        };
        if let Some(error) = answer.get("error") {
            return Outcome::Failed(error["message"].as_str().unwrap_or_default().into());
        }
        let result = &answer["result"];
        let text = result["content"][0]["text"].as_str().unwrap_or_default();
        match (result["isError"] == true, block) {
            (false, false) if text.contains(&expect) => Outcome::Ok,
            (true, true) if text.contains(&expect) => Outcome::Ok,
            // A host failure is the tool's error, in words.
            (true, _) => Outcome::Failed(text.to_string()),
            _ => Outcome::Wrong(format!("{tool}: {result}")),
        }
    }

    /// Closes its stdin (the end of the session) and waits for it to exit.
    pub async fn close(&self) -> std::process::ExitStatus {
        self.peer.close().await
    }
}
