//! The `zot-host` library in the soak's own process: one client, and the `/data` quota
//! fault (its `q.fill_data` writes past the quota every minute; the write is refused, the
//! component goes on).

use crate::fleet::{QUOTA, QUOTA_MB};
use crate::ops::Op;
use crate::tally::{Outcome, Tally};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use zot_host::{Host, HostConfig, HostEvent, ZotHome};
use zot_protocol::{Event, PanelKey};

pub const CLIENT: &str = "library";

pub struct Library {
    host: Host,
    tally: Arc<Tally>,
}

impl Library {
    /// A host loading only `exts` with ZOT_HOME `home`, once all of them are ready; its
    /// notifications counted in `tally`.
    pub async fn start(home: &Path, exts: &[PathBuf], tally: Arc<Tally>) -> Library {
        let mut config = HostConfig::new(ZotHome::new(home), home.to_path_buf());
        config.explicit = exts.to_vec();
        config.installed = false;
        config.timeouts.ready = Duration::from_secs(60);
        let (host, mut notes) = Host::new(config);
        let counts = tally.clone();
        tokio::spawn(async move {
            while let Some(note) = notes.recv().await {
                if let HostEvent::ExtensionExited {
                    extension, reason, ..
                } = &note
                {
                    counts.exited(CLIENT, extension, reason);
                }
                let kind = serde_json::to_value(&note).unwrap_or_default();
                counts.event(CLIENT, kind["type"].as_str().unwrap_or("?"));
            }
        });
        let report = host.load().await;
        assert_eq!(report.ready.len(), exts.len(), "the library: {report:?}");
        Library { host, tally }
    }

    /// Does `op`.
    pub async fn op(&self, op: Op) -> Outcome {
        let host = &self.host;
        match op {
            Op::Call { tool, args, expect } => match host.call_tool(tool, args, None).await {
                Ok((_, r)) => {
                    let text = r.content.first().and_then(|b| b["text"].as_str());
                    if !r.is_error && text.is_some_and(|t| t.contains(&expect)) {
                        Outcome::Ok
                    } else {
                        Outcome::Wrong(format!("{tool}: {r:?}"))
                    }
                }
                Err(e) => Outcome::Failed(e.to_string()),
            },
            Op::Emit { step } => {
                let event = Event {
                    id: None,
                    event: "turn_start".into(),
                    fields: serde_json::from_value(json!({"step": step})).unwrap(),
                };
                match host.emit(&event) {
                    0 => Outcome::Failed("delivered to no subscriber".into()),
                    _ => Outcome::Ok,
                }
            }
            Op::Block => {
                let fields = json!({"tool_id": "soak", "tool_name": "bash",
                                    "tool_args": {"command": "rm -rf /"}});
                let event = Event {
                    id: None,
                    event: "tool_call".into(),
                    fields: serde_json::from_value(fields).unwrap(),
                };
                match host.intercept(event).await.block {
                    true => Outcome::Ok,
                    false => Outcome::Failed("not blocked".into()),
                }
            }
            Op::Command { name, args, expect } => match host.invoke_command(name, &args).await {
                Ok((_, r)) => {
                    let said = serde_json::to_string(&r).unwrap();
                    match said.contains(&expect) {
                        true => Outcome::Ok,
                        false => Outcome::Wrong(format!("/{name}: {said}")),
                    }
                }
                Err(e) => Outcome::Failed(e.to_string()),
            },
            Op::Panel => self.panel().await,
        }
    }

    async fn panel(&self) -> Outcome {
        match self.host.invoke_command("pick", "").await {
            Ok((_, r)) if r.action == "open_panel" => {}
            Ok((_, r)) => return Outcome::Wrong(format!("/pick: {r:?}")),
            Err(e) => return Outcome::Failed(e.to_string()),
        }
        for (key, text) in [("down", ""), ("char", "q")] {
            let key = PanelKey {
                panel_id: "pick".into(),
                key: key.into(),
                text: text.into(),
                extra: Default::default(),
            };
            if let Err(e) = self.host.panel_key("picker", key) {
                return Outcome::Failed(e.to_string());
            }
        }
        Outcome::Ok
    }

    /// The quota fault: `q.fill_data` of 4× the quota is refused at the quota, and the
    /// component answers (it is not stopped).
    pub async fn over_quota(&self) -> Result<String, String> {
        let call = async {
            match self
                .host
                .call_tool("q.fill_data", json!({"mb": 4 * QUOTA_MB}), None)
                .await
            {
                Ok((_, r)) => {
                    let text = r.content.first().and_then(|b| b["text"].as_str());
                    let said: Value = text.and_then(|t| t.parse().ok()).unwrap_or_default();
                    match said["error"].is_string() && said["written_mb"].as_u64() <= Some(QUOTA_MB)
                    {
                        true => Outcome::Ok,
                        false => Outcome::Wrong(format!("q.fill_data: {r:?}")),
                    }
                }
                Err(e) => Outcome::Failed(e.to_string()),
            }
        };
        match self.tally.track(CLIENT, call).await {
            Outcome::Ok => Ok(format!("{QUOTA}: refused at its {QUOTA_MB} MiB quota")),
            Outcome::Failed(why) | Outcome::Wrong(why) => Err(why),
        }
    }

    pub async fn shutdown(&self) {
        self.host.shutdown().await;
    }
}
