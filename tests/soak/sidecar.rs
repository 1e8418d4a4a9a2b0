//! `zot host`, the sidecar, as a child process: one client, and the faults that stop
//! extensions (a crash mid-call, a component past its deadline) and the reload that
//! starts them again, once a minute each.

use crate::fleet::{Fleet, CRASHER, DEADLINE, RELOADED};
use crate::jsonl::Peer;
use crate::ops::Op;
use crate::tally::{Outcome, Tally};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::process::Command;
use tokio::sync::oneshot;

pub const CLIENT: &str = "sidecar";

pub struct Sidecar {
    peer: Peer,
    tally: Arc<Tally>,
}

/// What a request's `data` must be.
type Check = Box<dyn Fn(&Value) -> Outcome + Send>;

fn is_answer(v: &Value) -> bool {
    v["type"] == "response"
}

impl Sidecar {
    /// `zot host --only` with `exts` and ZOT_HOME `home` (its stderr into `stderr`), once
    /// it said `host_ready` with all of them; its events counted in `tally`.
    pub async fn start(
        home: &Path,
        exts: &[PathBuf],
        stderr: std::fs::File,
        tally: Arc<Tally>,
    ) -> Sidecar {
        let mut command = Command::new(env!("CARGO_BIN_EXE_zot"));
        command
            .args([
                "host",
                "--only",
                "--ready-timeout-ms",
                "30000",
                "--zot-home",
            ])
            .arg(home);
        for e in exts {
            command.arg("--ext").arg(e);
        }
        let (ready_tx, ready) = oneshot::channel();
        let ready_tx = Mutex::new(Some(ready_tx));
        let counts = tally.clone();
        let peer = Peer::spawn(&mut command, stderr, is_answer, move |v| {
            let kind = v["type"].as_str().unwrap_or("?");
            counts.event(CLIENT, kind);
            match kind {
                "extension_exited" => counts.exited(
                    CLIENT,
                    v["extension"].as_str().unwrap_or("?"),
                    v["reason"].as_str().unwrap_or("?"),
                ),
                "host_ready" => {
                    if let Some(tx) = ready_tx.lock().unwrap().take() {
                        let _ = tx.send(v);
                    }
                }
                _ => {}
            }
        });
        let ready = tokio::time::timeout(Duration::from_secs(120), ready)
            .await
            .expect("zot host says host_ready")
            .expect("zot host says host_ready");
        let started = ready["extensions"].as_array().map_or(0, Vec::len);
        assert_eq!(started, exts.len(), "zot host: {ready}");
        Sidecar { peer, tally }
    }

    pub fn pid(&self) -> u32 {
        self.peer.pid()
    }

    /// A request's `data`, or its `error`.
    async fn ask(&self, request: Value) -> Result<Value, String> {
        let answer = self.peer.request(request).await?;
        match answer["success"] == true {
            true => Ok(answer["data"].clone()),
            false => Err(answer["error"].as_str().unwrap_or_default().to_string()),
        }
    }

    /// Does `op`.
    pub async fn op(&self, op: Op) -> Outcome {
        let (request, check): (Value, Check) = match op {
            Op::Call { tool, args, expect } => (
                json!({"type": "call_tool", "name": tool, "args": args}),
                Box::new(move |d| {
                    let text = d["content"][0]["text"].as_str().unwrap_or_default();
                    match d["is_error"] == false && text.contains(&expect) {
                        true => Outcome::Ok,
                        false => Outcome::Wrong(format!("{tool}: {d}")),
                    }
                }),
            ),
            Op::Emit { step } => (
                json!({"type": "emit", "event": {"event": "turn_start", "step": step}}),
                Box::new(|d| match d["delivered"].as_u64() {
                    Some(1..) => Outcome::Ok,
                    _ => Outcome::Failed("delivered to no subscriber".into()),
                }),
            ),
            Op::Block => (
                json!({"type": "intercept", "event": "tool_call", "tool_id": "soak",
                       "tool_name": "bash", "tool_args": {"command": "rm -rf /"}}),
                Box::new(|d| match d["block"] == true {
                    true => Outcome::Ok,
                    false => Outcome::Failed("not blocked".into()),
                }),
            ),
            Op::Command { name, args, expect } => (
                json!({"type": "invoke_command", "name": name, "args": args}),
                Box::new(move |d| match d.to_string().contains(&expect) {
                    true => Outcome::Ok,
                    false => Outcome::Wrong(format!("/{name}: {d}")),
                }),
            ),
            Op::Panel => return self.panel().await,
        };
        match self.ask(request).await {
            Ok(data) => check(&data),
            Err(why) => Outcome::Failed(why),
        }
    }

    async fn panel(&self) -> Outcome {
        let pick = json!({"type": "invoke_command", "name": "pick", "args": ""});
        match self.ask(pick).await {
            Ok(d) if d["action"] == "open_panel" => {}
            Ok(d) => return Outcome::Wrong(format!("/pick: {d}")),
            Err(why) => return Outcome::Failed(why),
        }
        for (key, text) in [("down", ""), ("char", "q")] {
            let request = json!({"type": "panel_key", "extension": "picker", "panel_id": "pick",
                                 "key": key, "text": text});
            if let Err(why) = self.ask(request).await {
                return Outcome::Failed(why);
            }
        }
        Outcome::Ok
    }

    /// Tracks `request` as a call that must fail; then waits (at most `within`) for
    /// `extension` to be told exited for `why`.
    async fn stop(
        &self,
        request: Value,
        extension: &str,
        why: &str,
        within: Duration,
    ) -> Result<String, String> {
        let before = self.tally.exits(CLIENT, extension, why);
        let failed = async {
            match self.ask(request).await {
                Ok(d) => Outcome::Wrong(format!("answered: {d}")),
                Err(why) => Outcome::Failed(why),
            }
        };
        let error = match self.tally.track(CLIENT, failed).await {
            Outcome::Failed(error) => error,
            Outcome::Wrong(what) => return Err(what),
            Outcome::Ok => unreachable!("the call is tracked as failing"),
        };
        let t = Instant::now();
        while self.tally.exits(CLIENT, extension, why) == before {
            if t.elapsed() > within {
                return Err(format!(
                    "{error}; no extension_exited ({why}) for {extension}"
                ));
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        Ok(format!("{extension}: {why} ({error})"))
    }

    /// The crash: `crash_now` exits mid-call; the call fails and the exit is told.
    pub async fn crash(&self) -> Result<String, String> {
        let call = json!({"type": "call_tool", "name": "crash_now", "args": {}});
        self.stop(
            call,
            CRASHER,
            "exited with status 3",
            Duration::from_secs(10),
        )
        .await
    }

    /// The deadline: `d.spin` never returns; the call times out and the component is
    /// stopped at its deadline.
    pub async fn deadline(&self) -> Result<String, String> {
        let call = json!({"type": "call_tool", "name": "d.spin", "args": {},
                          "timeout_ms": 1000});
        self.stop(call, DEADLINE, "deadline exceeded", Duration::from_secs(15))
            .await
    }

    /// The reload: [`RELOADED`]'s manifest gets version `n`, then `reload` must start
    /// every extension again, and `list` show the new version.
    pub async fn reload(&self, fleet: &Fleet, n: usize) -> Result<String, String> {
        let version = fleet.bump(n);
        let t = Instant::now();
        let reload = async {
            match self.ask(json!({"type": "reload"})).await {
                Ok(d) => match d["ready"].as_array().map(Vec::len) == Some(fleet.len()) {
                    true => Outcome::Ok,
                    false => Outcome::Wrong(format!("reload: {d}")),
                },
                Err(why) => Outcome::Failed(why),
            }
        };
        match self.tally.track(CLIENT, reload).await {
            Outcome::Ok => {}
            Outcome::Failed(why) | Outcome::Wrong(why) => return Err(why),
        }
        let took = t.elapsed();
        let list = async {
            match self.ask(json!({"type": "list"})).await {
                Ok(d) => {
                    let entries = d["extensions"].as_array().cloned().unwrap_or_default();
                    let entry = entries.iter().find(|e| e["name"] == RELOADED);
                    match entry.is_some_and(|e| e["version"] == version.as_str()) {
                        true => Outcome::Ok,
                        false => Outcome::Wrong(format!("{RELOADED} after reload: {entry:?}")),
                    }
                }
                Err(why) => Outcome::Failed(why),
            }
        };
        match self.tally.track(CLIENT, list).await {
            Outcome::Ok => Ok(format!(
                "{} ready again in {} ms, {RELOADED} at {version}",
                fleet.len(),
                took.as_millis()
            )),
            Outcome::Failed(why) | Outcome::Wrong(why) => Err(why),
        }
    }

    /// `shutdown`, then its exit.
    pub async fn shutdown(&self) -> std::process::ExitStatus {
        let _ = self.peer.request(json!({"type": "shutdown"})).await;
        self.peer.close().await
    }
}
