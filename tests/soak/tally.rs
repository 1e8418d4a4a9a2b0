//! What every call came to, per client: answered as expected, failed (by reason), answered
//! wrongly, or not answered at all within [`BOUND`]; and the events each client saw.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Mutex;
use std::time::Duration;

/// The longest any call may go unanswered: longer than every timeout the hosts apply
/// (the tool timeout, 60 s, and a reload's ready wait, 30 s).
pub const BOUND: Duration = Duration::from_secs(120);

/// How one call ended.
pub enum Outcome {
    Ok,
    /// It failed, and said why (the text of the error).
    Failed(String),
    /// It was answered, but not as the extension answers: a bug somewhere.
    Wrong(String),
}

/// One client's calls and events.
#[derive(Default, Clone)]
pub struct Counts {
    pub ok: u64,
    /// Failures by [`reason`].
    pub failed: BTreeMap<String, u64>,
    /// The first error of each reason, in full.
    pub failed_seen: BTreeMap<String, String>,
    pub wrong: u64,
    /// The first few wrong answers, to show.
    pub wrong_seen: Vec<String>,
    pub unanswered: u64,
    /// Failures whose error said nothing.
    pub no_reason: u64,
    /// Events by type (`notify`, `panel_close`, an MCP notification's method, …).
    pub events: BTreeMap<String, u64>,
    /// `extension_exited` by `extension: reason`.
    pub exits: BTreeMap<String, u64>,
}

impl Counts {
    pub fn calls(&self) -> u64 {
        self.ok + self.failed.values().sum::<u64>() + self.wrong + self.unanswered
    }

    pub fn failures(&self) -> u64 {
        self.failed.values().sum()
    }
}

#[derive(Default)]
pub struct Tally {
    clients: Mutex<BTreeMap<&'static str, Counts>>,
}

impl Tally {
    fn with(&self, client: &'static str, f: impl FnOnce(&mut Counts)) {
        f(self.clients.lock().unwrap().entry(client).or_default());
    }

    /// Runs `call` for `client`, at most [`BOUND`], and counts how it ended.
    pub async fn track(
        &self,
        client: &'static str,
        call: impl Future<Output = Outcome>,
    ) -> Outcome {
        let outcome = tokio::time::timeout(BOUND, call).await;
        self.with(client, |c| match &outcome {
            Ok(Outcome::Ok) => c.ok += 1,
            Ok(Outcome::Failed(why)) if why.trim().is_empty() => c.no_reason += 1,
            Ok(Outcome::Failed(why)) => {
                let key = reason(why);
                c.failed_seen
                    .entry(key.clone())
                    .or_insert_with(|| why.clone());
                *c.failed.entry(key).or_default() += 1;
            }
            Ok(Outcome::Wrong(what)) => {
                c.wrong += 1;
                if c.wrong_seen.len() < 5 {
                    c.wrong_seen.push(what.chars().take(300).collect());
                }
            }
            Err(_) => c.unanswered += 1,
        });
        outcome.unwrap_or_else(|_| Outcome::Failed(format!("no answer in {BOUND:?}")))
    }

    pub fn event(&self, client: &'static str, kind: &str) {
        self.with(client, |c| {
            *c.events.entry(kind.to_string()).or_default() += 1
        });
    }

    pub fn exited(&self, client: &'static str, extension: &str, why: &str) {
        self.with(client, |c| {
            *c.exits.entry(format!("{extension}: {why}")).or_default() += 1
        });
    }

    /// How often `extension` of `client` exited for `why` so far.
    pub fn exits(&self, client: &'static str, extension: &str, why: &str) -> u64 {
        let key = format!("{extension}: {why}");
        let clients = self.clients.lock().unwrap();
        clients
            .get(client)
            .and_then(|c| c.exits.get(&key).copied())
            .unwrap_or(0)
    }

    pub fn snapshot(&self) -> BTreeMap<&'static str, Counts> {
        self.clients.lock().unwrap().clone()
    }
}

/// A failure's reason, without what differs from call to call (ids, names, times): the
/// host's words for why (`exited (deadline exceeded)`, `no tool`, `timed out`, …).
pub fn reason(error: &str) -> String {
    if let Some(at) = error.find(" exited (") {
        let why = &error[at + " exited (".len()..];
        return format!("exited ({}", why.split_once(')').map_or(why, |(w, _)| w)) + ")";
    }
    for (words, key) in [
        ("no tool", "no tool (its extension is not running)"),
        ("no command", "no command (its extension is not running)"),
        ("timed out", "timed out"),
        ("queue full", "queue full"),
        ("not running", "not running"),
    ] {
        if error.contains(words) {
            return key.to_string();
        }
    }
    error.chars().take(100).collect()
}
