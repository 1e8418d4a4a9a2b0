//! The host's shared state: [`Inner`], behind every [`Host`](super::Host) clone, with
//! one [`Entry`] per known extension, and the queries over it.

use super::config::HostConfig;
use crate::discovery::Source;
use crate::events::EventQueue;
use crate::extension::{Extension, Phase};
use crate::identity::Identity;
use crate::launcher::Launcher;
use crate::manifest::{Manifest, TransportKind};
use crate::records::trust::{Fingerprint, Untrusted};
use crate::registry::Registry;
use crate::sandbox::view::SandboxView;
use std::path::PathBuf;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

/// The state every [`Host`](super::Host) clone shares.
pub(super) struct Inner {
    pub(super) config: HostConfig,
    pub(super) registry: Mutex<Registry>,
    pub(super) entries: Mutex<Vec<Entry>>,
    pub(super) notes: EventQueue,
    pub(super) launcher: Arc<dyn Launcher>,
    /// One load/reload/shutdown at a time.
    pub(super) lifecycle: tokio::sync::Mutex<()>,
    /// Counts loads (and stops): a start that ends after its load was stopped is stale.
    pub(super) generation: AtomicU64,
    /// The generation whose load report was made: a start that fails after it is told
    /// as an event.
    pub(super) reported: AtomicU64,
    /// Starts in flight, which a stop aborts.
    pub(super) starting: Mutex<Vec<tokio::task::AbortHandle>>,
    pub(super) me: Weak<Inner>,
}

/// An extension to start: the one at `rank` in load order.
pub(super) struct Pending {
    pub(super) rank: usize,
    pub(super) source: Source,
    pub(super) dir: PathBuf,
    pub(super) identity: Identity,
    pub(super) manifest: Manifest,
    pub(super) admitted: Option<Arc<Fingerprint>>,
}

/// An extension the host knows: found by discovery, started or not.
pub(super) struct Entry {
    pub(super) name: String,
    pub(super) version: String,
    pub(super) source: Source,
    pub(super) dir: PathBuf,
    pub(super) identity: Identity,
    pub(super) log: PathBuf,
    pub(super) transport: TransportKind,
    pub(super) sandbox: Option<SandboxView>,
    pub(super) tool_timeout: Option<Duration>,
    /// Whether a `tool_call` it cannot answer is blocked (the user's choice).
    pub(super) guard: crate::records::guard::Failure,
    pub(super) state: EntryState,
    /// What its start needs: kept to start it again after it exits by itself.
    pub(super) start: Option<Arc<Pending>>,
    /// Whether it is started again after it exits by itself: the policy's, or the
    /// user's choice for it.
    pub(super) restart_on: bool,
    pub(super) restarts: super::restart::Restarts,
    /// When its current run started.
    pub(super) started_at: Option<tokio::time::Instant>,
}

/// Where an [`Entry`] is.
pub(super) enum EntryState {
    Disabled,
    Error(String),
    Untrusted(Untrusted),
    /// Being started (a component may be compiling).
    Starting,
    Running(Extension),
}

impl Inner {
    /// The state of a host with no extensions yet, telling its notifications to `notes`.
    pub(super) fn new(
        config: HostConfig,
        launcher: Arc<dyn Launcher>,
        notes: EventQueue,
    ) -> Arc<Inner> {
        let registry = Registry::new(&config.builtin_commands, &config.builtin_tools);
        Arc::new_cyclic(|me| Inner {
            config,
            registry: Mutex::new(registry),
            entries: Mutex::new(Vec::new()),
            notes,
            launcher,
            lifecycle: tokio::sync::Mutex::new(()),
            generation: AtomicU64::new(0),
            reported: AtomicU64::new(0),
            starting: Mutex::new(Vec::new()),
            me: me.clone(),
        })
    }

    /// Every running extension that has not exited, in load order.
    pub(super) fn running_all(&self) -> Vec<Extension> {
        self.entries
            .lock()
            .unwrap()
            .iter()
            .filter_map(|e| match &e.state {
                EntryState::Running(ext) if ext.phase() != Phase::Exited => Some(ext.clone()),
                _ => None,
            })
            .collect()
    }

    /// The running extension named `name`.
    pub(super) fn running(&self, name: &str) -> Option<Extension> {
        self.running_all().into_iter().find(|e| e.name() == name)
    }
}
