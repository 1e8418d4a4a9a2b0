//! A child process spoken to in JSON lines, many requests in flight at once: `zot host`
//! and `zot mcp`. Each request gets a fresh string `id`; a reader task hands every answer
//! to the request of its `id` and every other line to the caller's handler.

use serde_json::Value;
use std::collections::HashMap;
use std::process::{ExitStatus, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, Command};
use tokio::sync::oneshot;

type Pending = Arc<Mutex<HashMap<String, oneshot::Sender<Value>>>>;

pub struct Peer {
    child: tokio::sync::Mutex<Child>,
    pid: u32,
    stdin: tokio::sync::Mutex<Option<ChildStdin>>,
    pending: Pending,
    next: AtomicU64,
}

impl Peer {
    /// Starts `command` (its stderr to `stderr`); lines for which `is_answer` holds answer
    /// the request of their `id`, the others go to `other`.
    pub fn spawn(
        command: &mut Command,
        stderr: std::fs::File,
        is_answer: fn(&Value) -> bool,
        other: impl Fn(Value) + Send + 'static,
    ) -> Peer {
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .expect("zot starts");
        let pending: Pending = Arc::default();
        let answers = pending.clone();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        tokio::spawn(async move {
            while let Ok(Some(line)) = lines.next_line().await {
                let Ok(v) = serde_json::from_str::<Value>(&line) else {
                    other(Value::String(line));
                    continue;
                };
                let waiting = match v.get("id").and_then(Value::as_str) {
                    Some(id) if is_answer(&v) => answers.lock().unwrap().remove(id),
                    _ => None,
                };
                match waiting {
                    Some(tx) => {
                        let _ = tx.send(v);
                    }
                    None => other(v),
                }
            }
            // The output ended: every request still waiting fails.
            answers.lock().unwrap().clear();
        });
        Peer {
            pid: child.id().unwrap(),
            stdin: tokio::sync::Mutex::new(child.stdin.take()),
            child: tokio::sync::Mutex::new(child),
            pending,
            next: AtomicU64::new(0),
        }
    }

    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// Sends `message` with a fresh `id`; its answer, or why there is none.
    pub async fn request(&self, mut message: Value) -> Result<Value, String> {
        let id = format!("q{}", self.next.fetch_add(1, Ordering::Relaxed));
        message["id"] = Value::String(id.clone());
        let (tx, rx) = oneshot::channel();
        self.pending.lock().unwrap().insert(id.clone(), tx);
        if let Err(e) = self.send(&message).await {
            self.pending.lock().unwrap().remove(&id);
            return Err(e);
        }
        rx.await
            .map_err(|_| "the host's output ended before the answer".to_string())
    }

    /// Writes `message` as one line.
    pub async fn send(&self, message: &Value) -> Result<(), String> {
        let mut line = message.to_string();
        line.push('\n');
        let mut stdin = self.stdin.lock().await;
        let pipe = stdin.as_mut().ok_or("its stdin is closed")?;
        pipe.write_all(line.as_bytes())
            .await
            .map_err(|e| format!("writing to the host: {e}"))
    }

    /// Closes its stdin and waits for it to exit.
    pub async fn close(&self) -> ExitStatus {
        drop(self.stdin.lock().await.take());
        self.child.lock().await.wait().await.unwrap()
    }
}
