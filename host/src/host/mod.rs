//! All extensions together: discovery, start and ready wait, the registries, dispatch of
//! commands and tools, events, the interception chain, reload and shutdown.
//!
//! This file is the embedder's API, [`Host`]; the rest by concern: `config.rs` (what the
//! embedder configures), `report.rs` (what it reads back), `state.rs` (the shared state
//! behind every clone), `lifecycle.rs` (load, reload, shutdown, a restart after an exit),
//! `restart.rs` (when an exit is followed by a restart) and `dispatch.rs` (calls,
//! commands, events, the interception chain, panel input, and the `Hub` the extensions
//! report to).

mod config;
mod dispatch;
mod lifecycle;
mod report;
mod restart;
mod state;

pub use config::HostConfig;
pub use report::{
    ExtState, ExtensionInfo, InterceptStep, LoadError, LoadReport, LoadWarning, UntrustedReport,
    Verdict,
};
pub use restart::{RestartInfo, RestartPolicy};

use crate::events::{EventQueue, HostEvent};
use crate::extension::{CallError, Status};
use crate::launcher::{Launcher, Transports};
use serde_json::{Map, Value};
use state::{EntryState, Inner};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;
use zot_protocol::{
    CommandResponse, Event, HostFrame, PanelClose, PanelKey, PanelResize, RegisterCommand,
    RegisterTool, ToolProgress, ToolResult,
};

/// How [`Host::call_tool_with`] calls a tool: `CallOptions::default()`, then what
/// differs (`.timeout(…)`, `.unchecked()`, `.progress(…)`).
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct CallOptions {
    /// The longest wait for its result (default: its extension's tool timeout, else the
    /// host's).
    pub timeout: Option<Duration>,
    /// Send the arguments as they are, whatever [`HostConfig::validate_arguments`] says.
    pub unchecked: bool,
    /// Where its `tool_progress` frames go as they come (each over 16 KiB as JSON cut:
    /// its `text` to 4 KiB, its other fields left out). Never waited for: one that finds
    /// the queue full is dropped, and counted in [`Status::progress_dropped`]. Without
    /// it they are dropped.
    pub progress: Option<mpsc::Sender<ToolProgress>>,
}

impl CallOptions {
    /// Waits at most `timeout` (`None`: the default).
    pub fn timeout(self, timeout: Option<Duration>) -> Self {
        CallOptions { timeout, ..self }
    }

    /// Sends the arguments unchecked.
    pub fn unchecked(self) -> Self {
        CallOptions {
            unchecked: true,
            ..self
        }
    }

    /// Hands its `tool_progress` frames to `to`.
    pub fn progress(self, to: mpsc::Sender<ToolProgress>) -> Self {
        CallOptions {
            progress: Some(to),
            ..self
        }
    }
}

/// The extension host. Cheap to clone.
///
/// Its calls are futures. From async code, await them in a task of a tokio runtime.
/// From synchronous code, call them through `block_on`: of a multi-thread runtime, on a
/// thread of its own (not one of the runtime's), whose threads go on running the host's
/// tasks (events for extensions, other extensions' output) between calls; or of a
/// current-thread runtime, which runs them only while a call waits. Every caller reads
/// a subprocess extension's reply from its pipe itself when it can: pinned to one CPU a
/// call costs 1.3× a bare pipe's round trip from a task, 1.4× from a current-thread
/// runtime's `block_on`, 1.5× from a multi-thread one's; unpinned, about 0.4–0.6× the
/// Go manager's each, the multi-thread `block_on` with the shortest tail
/// (`docs/benchmarks.md`).
#[derive(Clone)]
pub struct Host {
    inner: Arc<Inner>,
}

impl Host {
    /// A host with no extensions yet, and the stream of its notifications. Call
    /// [`Host::load`] to start extensions. Must be called inside a tokio runtime.
    pub fn new(config: HostConfig) -> (Host, mpsc::Receiver<HostEvent>) {
        Host::with_launcher(config, Arc::new(Transports))
    }

    /// Like [`Host::new`], starting extensions with `launcher` instead of the host's own
    /// transports.
    pub fn with_launcher(
        config: HostConfig,
        launcher: Arc<dyn Launcher>,
    ) -> (Host, mpsc::Receiver<HostEvent>) {
        crate::sandbox::raise_fd_limit();
        let (notes, rx) = EventQueue::channel();
        let inner = Inner::new(config, launcher, notes);
        (Host { inner }, rx)
    }

    /// The configuration it was made with.
    pub fn config(&self) -> &HostConfig {
        &self.inner.config
    }

    /// Discovers and starts every enabled extension in parallel, then waits (at most the
    /// ready timeout in total) for all of them to be ready.
    pub async fn load(&self) -> LoadReport {
        let _guard = self.inner.lifecycle.lock().await;
        self.inner.load().await
    }

    /// Stops every extension, re-reads the manifests, starts them again and waits for
    /// ready; the registries are rebuilt from the new registrations.
    pub async fn reload(&self) -> LoadReport {
        let _guard = self.inner.lifecycle.lock().await;
        let stopped = self.inner.stop_all().await;
        let mut report = self.inner.load().await;
        report.stopped = stopped;
        report
    }

    /// Stops every extension (`shutdown`, 2 s, SIGTERM, 1 s, SIGKILL), all in parallel.
    pub async fn shutdown(&self) {
        let _guard = self.inner.lifecycle.lock().await;
        self.inner.stop_all().await;
    }

    /// Every known extension, in load order.
    pub fn extensions(&self) -> Vec<ExtensionInfo> {
        let registry = self.inner.registry.lock().unwrap();
        let entries = self.inner.entries.lock().unwrap();
        entries
            .iter()
            .map(|e| ExtensionInfo::of(e, &registry))
            .collect()
    }

    /// The protocol status of a running extension (hello, timings, violations).
    pub fn status(&self, name: &str) -> Option<Status> {
        self.inner
            .entries
            .lock()
            .unwrap()
            .iter()
            .find(|e| e.name == name)
            .and_then(|e| match &e.state {
                EntryState::Running(ext) => Some(ext.status()),
                _ => None,
            })
    }

    /// Writes `message` as a warning of the host's into the log of extension `name`, if
    /// it is running: what the embedding application refused of it, say.
    pub fn warn(&self, name: &str, message: &str) {
        let entries = self.inner.entries.lock().unwrap();
        if let Some(EntryState::Running(ext)) =
            entries.iter().find(|e| e.name == name).map(|e| &e.state)
        {
            ext.log().warn(message);
        }
    }

    /// Every active tool with the extension that provides it, sorted by name.
    pub fn tools(&self) -> Vec<(String, RegisterTool)> {
        self.inner.registry.lock().unwrap().tools()
    }

    /// Whether an extension provides an active tool named `name` (one of [`Host::tools`],
    /// without listing them).
    pub fn has_tool(&self, name: &str) -> bool {
        self.inner.registry.lock().unwrap().tool(name).is_some()
    }

    /// Every active command with the extension that provides it, sorted by name.
    pub fn commands(&self) -> Vec<(String, RegisterCommand)> {
        self.inner.registry.lock().unwrap().commands()
    }

    /// Runs `/name args` (`name` with or without its `/`); returns the providing
    /// extension's name and its response.
    pub async fn invoke_command(
        &self,
        name: &str,
        args: &str,
    ) -> Result<(String, CommandResponse), CallError> {
        self.inner.invoke_command(name, args).await
    }

    /// Calls tool `name` (`args` must be an object; null means `{}`), waiting at most
    /// `timeout` (default: the tool timeout). Arguments that do not fit the tool's
    /// schema are not sent ([`CallError::Arguments`], each problem naming its field),
    /// unless [`HostConfig::validate_arguments`] is off.
    pub async fn call_tool(
        &self,
        name: &str,
        args: Value,
        timeout: Option<Duration>,
    ) -> Result<(String, ToolResult), CallError> {
        self.call_tool_with(name, args, CallOptions::default().timeout(timeout))
            .await
    }

    /// Like [`Host::call_tool`], sending `args` as they are whatever
    /// [`HostConfig::validate_arguments`] says: for a caller that checked them
    /// ([`Host::check_arguments`]) or was told not to.
    pub async fn call_tool_unchecked(
        &self,
        name: &str,
        args: Value,
        timeout: Option<Duration>,
    ) -> Result<(String, ToolResult), CallError> {
        let options = CallOptions::default().timeout(timeout).unchecked();
        self.call_tool_with(name, args, options).await
    }

    /// Calls tool `name` as [`Host::call_tool`] does, as `options` say: also where its
    /// `tool_progress` frames go while it runs.
    pub async fn call_tool_with(
        &self,
        name: &str,
        args: Value,
        options: CallOptions,
    ) -> Result<(String, ToolResult), CallError> {
        let check = self.inner.config.validate_arguments && !options.unchecked;
        self.inner
            .call_tool(name, args, options.timeout, check, options.progress)
            .await
    }

    /// `args` checked against the schema of the active tool `name`, without calling
    /// it; `None` when no extension provides it.
    pub fn check_arguments(&self, name: &str, args: &Value) -> Option<crate::schema::Checked> {
        self.inner.check_arguments(name, args)
    }

    /// Queues `event` for every subscriber, without waiting; returns how many.
    ///
    /// Order: `emit`, [`Host::panel_key`], [`Host::panel_resize`] and
    /// [`Host::panel_close`] queue their frames at once, each behind those queued before
    /// it, so calls made one after the other (from one task) reach every extension in
    /// that order.
    pub fn emit(&self, event: &Event) -> usize {
        self.inner.emit(event)
    }

    /// Asks every interceptor of `event.event`, in load order, each at most the intercept
    /// timeout. The first block wins; `modified_args` and `replace_text` chain.
    pub async fn intercept(&self, event: Event) -> Verdict {
        self.intercept_steps(event).await.1
    }

    /// Like [`Host::intercept`], and also what each interceptor answered, in the order
    /// they were asked (the chain stops at the first block, so later ones are absent).
    pub async fn intercept_steps(&self, event: Event) -> (Vec<InterceptStep>, Verdict) {
        self.inner.intercept_steps(event).await
    }

    /// Queues a `panel_key` for `extension`, in order with events (see [`Host::emit`]).
    pub fn panel_key(&self, extension: &str, key: PanelKey) -> Result<(), CallError> {
        self.inner.send_to(extension, &HostFrame::PanelKey(key))
    }

    /// Tells `extension` its panel's new size, in order with events.
    pub fn panel_resize(&self, extension: &str, resize: PanelResize) -> Result<(), CallError> {
        self.inner
            .send_to(extension, &HostFrame::PanelResize(resize))
    }

    /// Tells `extension` its panel was closed, in order with events.
    pub fn panel_close(&self, extension: &str, panel_id: String) -> Result<(), CallError> {
        let frame = HostFrame::PanelClose(PanelClose {
            panel_id,
            extra: Map::new(),
        });
        self.inner.send_to(extension, &frame)
    }
}

#[cfg(test)]
mod tests;
