//! All extensions together: discovery, start and ready wait, the registries, dispatch of
//! commands and tools, events, the interception chain, reload and shutdown.

use crate::discovery::{discover, Found, SearchPath, Source};
use crate::events::{EventQueue, HostEvent};
use crate::extension::{CallError, Extension, Hub, Phase, Registration, Status};
use crate::identity::Identity;
use crate::launcher::{self, Launched, Launcher, StartError, Transports};
use crate::log::ExtLog;
use crate::manifest::{Manifest, TransportKind};
use crate::paths::ZotHome;
use crate::registry::{Owned, Registry};
use crate::sandbox_view::SandboxView;
use crate::trust::Untrusted;
use serde::Serialize;
use serde_json::{Map, Value};
use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;
use tokio::sync::mpsc;
use zot_protocol::{
    CommandResponse, Event, HelloAck, HostFrame, PanelClose, PanelKey, PanelResize,
    RegisterCommand, RegisterTool, ToolResult, DEFAULT_MAX_FRAME, PROTOCOL_VERSION,
};

/// Deadlines, all configurable; the defaults are PROTOCOL.md's (see [`crate::budget`]).
pub use crate::budget::Timeouts;

/// Everything the host needs to know to start extensions.
#[derive(Debug, Clone)]
pub struct HostConfig {
    pub home: ZotHome,
    /// The project directory (`hello_ack.cwd`, and where `.zot/extensions` is looked for).
    pub cwd: PathBuf,
    /// `--ext` paths, loaded before everything else.
    pub explicit: Vec<PathBuf>,
    /// Also load project-local and global installs (false: only `explicit`, `--only`).
    pub installed: bool,
    /// With `installed`: load the project's `.zot/extensions` (false: `--no-project`).
    pub project: bool,
    /// With `installed`: load `$ZOT_HOME/extensions` (false: `--no-global`).
    pub global: bool,
    /// What the user granted for this run only (`--allow-env`, …): never stored, and
    /// applied only to the components named on the command line
    /// ([`RunGrant::applies_to`](crate::sandbox::RunGrant::applies_to)).
    pub run_grant: crate::sandbox::RunGrant,
    /// Start project-local extensions without the user's trust (`zot ext trust`): for an
    /// agent that asks for consent itself. The published host's behaviour; off by
    /// default.
    pub trust_project: bool,
    pub provider: String,
    pub model: String,
    /// Tool names the embedding agent owns.
    pub builtin_tools: Vec<String>,
    /// Command names the embedding agent owns.
    pub builtin_commands: Vec<String>,
    /// The longest line accepted from an extension.
    pub max_frame: usize,
    pub timeouts: Timeouts,
    /// How components are compiled (default: in a child of this program under limits,
    /// which needs [`child_if_asked`](crate::compile::child_if_asked) called first thing
    /// in `main`; see [`Compiler`](crate::compile::Compiler)).
    pub compiler: crate::compile::Compiler,
}

impl HostConfig {
    /// Defaults for `home` and `cwd`: built-in tools `read write edit bash skill`, 64 MiB frames.
    pub fn new(home: ZotHome, cwd: PathBuf) -> Self {
        HostConfig {
            home,
            cwd,
            explicit: Vec::new(),
            installed: true,
            project: true,
            global: true,
            run_grant: crate::sandbox::RunGrant::default(),
            trust_project: false,
            provider: String::new(),
            model: String::new(),
            builtin_tools: ["read", "write", "edit", "bash", "skill"]
                .map(String::from)
                .to_vec(),
            builtin_commands: Vec::new(),
            max_frame: DEFAULT_MAX_FRAME,
            timeouts: Timeouts::default(),
            compiler: crate::compile::Compiler::default(),
        }
    }

    /// What starting an extension needs of this configuration.
    pub fn launch_context(&self) -> launcher::LaunchContext<'_> {
        launcher::LaunchContext {
            home: &self.home,
            cwd: &self.cwd,
            max_frame: self.max_frame,
            timeouts: &self.timeouts,
            compiler: &self.compiler,
        }
    }
}

/// An extension as the host lists it.
#[derive(Debug, Clone, Serialize)]
pub struct ExtensionInfo {
    pub name: String,
    pub version: String,
    pub source: Source,
    pub transport: TransportKind,
    pub state: ExtState,
    #[serde(serialize_with = "crate::paths::serialize_lossy")]
    pub dir: PathBuf,
    #[serde(serialize_with = "crate::paths::serialize_lossy")]
    pub log: PathBuf,
    pub commands: Vec<String>,
    pub tools: Vec<String>,
    pub shadowed: Vec<String>,
    pub events: Vec<String>,
    pub intercept: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Components only: their kind, hash, permissions and limits.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<SandboxView>,
    /// State `untrusted` only: why, and the command that trusts it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub untrusted: Option<Untrusted>,
}

/// Where an extension is, as `list` shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ExtState {
    /// Started, not ready yet.
    Starting,
    Ready,
    /// Gone; [`ExtensionInfo::error`] says why.
    Exited,
    /// `"enabled": false` in its manifest: not started.
    Disabled,
    /// Could not be started; [`ExtensionInfo::error`] says why.
    Error,
    /// A project-local extension the user has not trusted as it is now: not started;
    /// [`ExtensionInfo::untrusted`] says why and how to trust it.
    Untrusted,
}

/// What `load` (and `reload`) did.
#[derive(Debug, Clone, Default, Serialize)]
pub struct LoadReport {
    /// Extensions stopped first (reload only).
    pub stopped: Vec<String>,
    /// Extensions started.
    pub loaded: Vec<String>,
    /// Extensions still being started when the ready wait ended (a component compiling):
    /// they start in the background; their registrations arrive with `registry_changed`,
    /// a failure with `extension_exited`.
    pub starting: Vec<String>,
    /// Started extensions that became ready within the ready wait.
    pub ready: Vec<String>,
    /// Extensions that could not be started, and why.
    pub errors: Vec<LoadError>,
    /// Project-local extensions not started because the user has not trusted them.
    pub untrusted: Vec<UntrustedReport>,
    /// Extensions that started, with something the user should review (a stale grant).
    pub warnings: Vec<LoadWarning>,
}

/// A project-local extension that was not started: untrusted.
#[derive(Debug, Clone, Serialize)]
pub struct UntrustedReport {
    pub extension: String,
    #[serde(serialize_with = "crate::paths::serialize_lossy")]
    pub dir: PathBuf,
    #[serde(flatten)]
    pub untrusted: Untrusted,
}

/// Something to review about a started extension.
#[derive(Debug, Clone, Serialize)]
pub struct LoadWarning {
    pub extension: String,
    pub warning: String,
}

/// One extension that could not be started.
#[derive(Debug, Clone, Serialize)]
pub struct LoadError {
    pub extension: String,
    pub error: String,
}

/// What the load report says of an extension not loaded because `winner`, found
/// earlier, has its name: which copy does not load and which takes its place. The first
/// of a name wins even if it then fails to start: the copy the user named with `--ext`
/// is the one under test, and another running in its place would hide that it fails.
fn shadowed_warning(dup: &Found, winner: Option<&Found>) -> String {
    let copy = |f: &Found| match f.source {
        Source::Explicit => format!("the --ext copy at {}", f.dir.display()),
        Source::Project => format!("the project copy at {}", f.dir.display()),
        Source::Global => format!("the global copy at {}", f.dir.display()),
    };
    match winner {
        Some(winner) => format!(
            "{} is not loaded: {} has its name and takes its place (also if it fails to start)",
            copy(dup),
            copy(winner)
        ),
        None => format!(
            "{} is not loaded: another extension has its name",
            copy(dup)
        ),
    }
}

/// The interception chain's verdict.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Verdict {
    pub block: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The tool arguments after every rewrite, if any interceptor rewrote them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub modified_args: Option<Value>,
    /// The assistant text after every rewrite, if any interceptor replaced it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replace_text: Option<String>,
}

/// One interceptor's answer, as [`Host::intercept_steps`] reports it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct InterceptStep {
    /// The interceptor.
    pub extension: String,
    /// What it answered; `None`: no answer in time, or it is gone (counted as allow).
    pub answer: Option<Verdict>,
}

/// The extension host. Cheap to clone.
#[derive(Clone)]
pub struct Host {
    inner: Arc<Inner>,
}

struct Inner {
    config: HostConfig,
    registry: Mutex<Registry>,
    entries: Mutex<Vec<Entry>>,
    notes: EventQueue,
    launcher: Arc<dyn Launcher>,
    /// One load/reload/shutdown at a time.
    lifecycle: tokio::sync::Mutex<()>,
    /// Counts loads (and stops): a start that ends after its load was stopped is stale.
    generation: AtomicU64,
    /// The generation whose load report was made: a start that fails after it is told
    /// as an event.
    reported: AtomicU64,
    /// Starts in flight, which a stop aborts.
    starting: Mutex<Vec<tokio::task::AbortHandle>>,
    me: Weak<Inner>,
}

struct Entry {
    name: String,
    version: String,
    source: Source,
    dir: PathBuf,
    identity: Identity,
    log: PathBuf,
    transport: TransportKind,
    sandbox: Option<SandboxView>,
    tool_timeout: Option<Duration>,
    state: EntryState,
}

/// An extension that started.
struct Started {
    ext: Extension,
    transport: TransportKind,
    sandbox: Option<SandboxView>,
    tool_timeout: Option<Duration>,
}

enum EntryState {
    Disabled,
    Error(String),
    Untrusted(Untrusted),
    /// Being started (a component may be compiling).
    Starting,
    Running(Extension),
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
        let registry = Registry::new(&config.builtin_commands, &config.builtin_tools);
        let inner = Arc::new_cyclic(|me| Inner {
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
        });
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
            .map(|e| {
                let untrusted = match &e.state {
                    EntryState::Untrusted(u) => Some(u.clone()),
                    _ => None,
                };
                let (state, error, owned, status) = match &e.state {
                    EntryState::Disabled => (ExtState::Disabled, None, Owned::default(), None),
                    EntryState::Error(msg) => {
                        (ExtState::Error, Some(msg.clone()), Owned::default(), None)
                    }
                    EntryState::Untrusted(u) => (
                        ExtState::Untrusted,
                        Some(u.message()),
                        Owned::default(),
                        None,
                    ),
                    EntryState::Starting => (ExtState::Starting, None, Owned::default(), None),
                    EntryState::Running(ext) => {
                        let status = ext.status();
                        // The exit is recorded before `extension_exited` is sent, so a
                        // listing made after that event always says `exited`.
                        let (state, error) = match (&status.exit, ext.phase()) {
                            (Some(exit), _) => (ExtState::Exited, Some(exit.to_string())),
                            (None, Phase::Starting) => (ExtState::Starting, None),
                            (None, _) => (ExtState::Ready, None),
                        };
                        (state, error, registry.of(ext), Some(status))
                    }
                };
                let status = status.unwrap_or_default();
                ExtensionInfo {
                    name: e.name.clone(),
                    version: e.version.clone(),
                    source: e.source,
                    transport: e.transport,
                    sandbox: e.sandbox.clone(),
                    state,
                    dir: e.dir.clone(),
                    log: e.log.clone(),
                    commands: owned.commands,
                    tools: owned.tools,
                    shadowed: owned.shadowed,
                    events: status.events.into_iter().collect(),
                    intercept: status.intercept.into_iter().collect(),
                    error,
                    untrusted,
                }
            })
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

    /// Every active tool with the extension that provides it, sorted by name.
    pub fn tools(&self) -> Vec<(String, RegisterTool)> {
        self.inner.registry.lock().unwrap().tools()
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
        // `/note` is how a user types the command `note`.
        let name = name.strip_prefix('/').unwrap_or(name);
        let ext = self.inner.registry.lock().unwrap().command(name);
        let ext = ext.ok_or_else(|| CallError::NotFound(format!("command named {name:?}")))?;
        let response = ext
            .invoke_command(name, args, self.inner.config.timeouts.command)
            .await?;
        Ok((ext.name().to_string(), response))
    }

    /// Calls tool `name` (`args` must be an object; null means `{}`), waiting at most
    /// `timeout` (default: the tool timeout).
    pub async fn call_tool(
        &self,
        name: &str,
        args: Value,
        timeout: Option<Duration>,
    ) -> Result<(String, ToolResult), CallError> {
        self.inner.call_tool(name, args, timeout).await
    }

    /// Queues `event` for every subscriber, without waiting; returns how many.
    ///
    /// Order: `emit`, [`Host::panel_key`], [`Host::panel_resize`] and
    /// [`Host::panel_close`] queue their frames at once, each behind those queued before
    /// it, so calls made one after the other (from one task) reach every extension in
    /// that order.
    pub fn emit(&self, event: &Event) -> usize {
        let subscribers: Vec<Extension> = self
            .inner
            .running_all()
            .into_iter()
            .filter(|e| e.subscribes(&event.event))
            .collect();
        for ext in &subscribers {
            ext.deliver_event(event);
        }
        subscribers.len()
    }

    /// Asks every interceptor of `event.event`, in load order, each at most the intercept
    /// timeout. The first block wins; `modified_args` and `replace_text` chain.
    pub async fn intercept(&self, event: Event) -> Verdict {
        self.intercept_steps(event).await.1
    }

    /// Like [`Host::intercept`], and also what each interceptor answered, in the order
    /// they were asked (the chain stops at the first block, so later ones are absent).
    pub async fn intercept_steps(&self, mut event: Event) -> (Vec<InterceptStep>, Verdict) {
        let mut verdict = Verdict::default();
        let mut steps = Vec::new();
        let interceptors: Vec<Extension> = self
            .inner
            .running_all()
            .into_iter()
            .filter(|e| e.intercepts(&event.event))
            .collect();
        for ext in interceptors {
            let answer = ext
                .intercept(event.clone(), self.inner.config.timeouts.intercept)
                .await;
            steps.push(InterceptStep {
                extension: ext.name().to_string(),
                answer: answer.as_ref().map(|a| Verdict {
                    block: a.block,
                    reason: a.reason.clone(),
                    modified_args: a.modified_args.clone(),
                    replace_text: a.replace_text.clone(),
                }),
            });
            let Some(answer) = answer else {
                continue;
            };
            if answer.block {
                let verdict = Verdict {
                    block: true,
                    reason: answer.reason,
                    ..Verdict::default()
                };
                return (steps, verdict);
            }
            if let Some(args) = answer.modified_args {
                if event.event == "tool_call" && args.is_object() {
                    event.fields.insert("tool_args".into(), args.clone());
                    verdict.modified_args = Some(args);
                } else {
                    ext.log().warn(
                        "ignored modified_args: only a JSON object for a tool_call can replace its args",
                    );
                }
            }
            if let Some(text) = answer.replace_text {
                if event.event == "assistant_message" {
                    event
                        .fields
                        .insert("text".into(), Value::String(text.clone()));
                    verdict.replace_text = Some(text);
                } else {
                    ext.log().warn(
                        "ignored replace_text: only an assistant_message has text to replace",
                    );
                }
            }
        }
        (steps, verdict)
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

impl Inner {
    fn running_all(&self) -> Vec<Extension> {
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

    fn running(&self, name: &str) -> Option<Extension> {
        self.running_all().into_iter().find(|e| e.name() == name)
    }

    fn send_to(&self, extension: &str, frame: &HostFrame) -> Result<(), CallError> {
        self.running(extension)
            .ok_or_else(|| CallError::NotFound(format!("running extension named {extension:?}")))?
            .send(frame)
    }

    async fn call_tool(
        &self,
        name: &str,
        args: Value,
        timeout: Option<Duration>,
    ) -> Result<(String, ToolResult), CallError> {
        let ext = {
            let registry = self.registry.lock().unwrap();
            if registry.is_builtin_tool(name) {
                return Err(CallError::NotFound(format!(
                    "extension tool named {name:?}: it is a built-in tool of the agent"
                )));
            }
            registry.tool(name)
        };
        let ext = ext.ok_or_else(|| CallError::NotFound(format!("tool named {name:?}")))?;
        let args = match args {
            Value::Null => Value::Object(Map::new()),
            Value::Object(args) => Value::Object(args),
            _ => {
                return Err(CallError::Invalid(format!(
                    "tool {name:?}: args must be a JSON object"
                )))
            }
        };
        let limit = self
            .entries
            .lock()
            .unwrap()
            .iter()
            .find(|e| e.name == ext.name())
            .and_then(|e| e.tool_timeout);
        let timeout = timeout.or(limit).unwrap_or(self.config.timeouts.tool);
        let result = ext.call_tool(name, args, timeout).await?;
        Ok((ext.name().to_string(), result))
    }

    async fn load(self: &Arc<Self>) -> LoadReport {
        let search = SearchPath {
            explicit: self.config.explicit.clone(),
            cwd: self.config.cwd.clone(),
            home: self.config.home.clone(),
            installed: self.config.installed,
            project: self.config.project,
            global: self.config.global,
            trust_project: self.config.trust_project,
        };
        // Reading manifests and hashing project extensions for trust is file I/O.
        let found = match tokio::task::spawn_blocking(move || discover(&search)).await {
            Ok(found) => found,
            Err(e) => {
                return LoadReport {
                    errors: vec![LoadError {
                        extension: String::new(),
                        error: format!("discovery failed: {e}"),
                    }],
                    ..LoadReport::default()
                }
            }
        };
        // Reported, not logged to the terminal: the CLI shows the report its way and the
        // sidecar carries it in `host_ready.warnings`.
        let shadowed: Vec<LoadWarning> = found
            .shadowed
            .iter()
            .map(|dup| {
                let name = dup.name();
                let winner = found.found.iter().find(|f| f.name() == name);
                LoadWarning {
                    warning: shadowed_warning(dup, winner),
                    extension: name,
                }
            })
            .collect();
        let generation = self.generation.fetch_add(1, Ordering::SeqCst) + 1;
        let deadline = tokio::time::Instant::now() + self.config.timeouts.ready;
        let mut entries = Vec::new();
        let mut to_start = Vec::new();
        let mut typos = Vec::new();
        for (rank, f) in found.found.into_iter().enumerate() {
            let name = f.name();
            let log = self.config.home.log_path(&name);
            for warning in f.manifest.iter().flat_map(Manifest::typo_warnings) {
                ExtLog::open(&log).warn(&warning);
                typos.push(LoadWarning {
                    extension: name.clone(),
                    warning,
                });
            }
            let transport = f
                .manifest
                .as_ref()
                .map_or(TransportKind::Stdio, Manifest::transport);
            let (version, state) = match f.manifest {
                Err(e) => {
                    let message = e.to_string();
                    ExtLog::open(&log).warn(&message);
                    (String::new(), EntryState::Error(message))
                }
                Ok(m) if !m.enabled => (m.version, EntryState::Disabled),
                Ok(m) => {
                    let version = m.version.clone();
                    to_start.push((rank, f.source, f.dir.clone(), f.identity.clone(), m));
                    (version, EntryState::Starting)
                }
            };
            entries.push(Entry {
                name,
                version,
                source: f.source,
                dir: f.dir,
                identity: f.identity,
                log,
                transport,
                sandbox: None,
                tool_timeout: None,
                state,
            });
        }
        // Listed after the others: a running extension of the same name is found first.
        for w in &shadowed {
            ExtLog::open(&self.config.home.log_path(&w.extension)).warn(&w.warning);
        }
        let mut report = LoadReport {
            warnings: typos.into_iter().chain(shadowed).collect(),
            ..LoadReport::default()
        };
        for (f, untrusted) in found.untrusted {
            let name = f.name();
            ExtLog::open(&self.config.home.log_path(&name)).warn(&untrusted.message());
            report.untrusted.push(UntrustedReport {
                extension: name.clone(),
                dir: f.dir.clone(),
                untrusted: untrusted.clone(),
            });
            entries.push(Entry {
                name: name.clone(),
                version: f
                    .manifest
                    .as_ref()
                    .map(|m| m.version.clone())
                    .unwrap_or_default(),
                source: f.source,
                log: self.config.home.log_path(&name),
                transport: f
                    .manifest
                    .as_ref()
                    .map_or(TransportKind::Stdio, Manifest::transport),
                dir: f.dir,
                identity: f.identity,
                sandbox: None,
                tool_timeout: None,
                state: EntryState::Untrusted(untrusted),
            });
        }
        *self.entries.lock().unwrap() = entries;
        // All start in parallel, each in a task of its own that records its outcome in
        // its entry, even after this load returned: a slow compile delays nothing.
        let mut outcomes = Vec::new();
        for (rank, source, dir, identity, m) in to_start {
            let me = self.clone();
            let start =
                tokio::spawn(async move { me.start(rank, source, &dir, &identity, &m).await });
            self.starting.lock().unwrap().push(start.abort_handle());
            let me = self.clone();
            outcomes.push(tokio::spawn(async move {
                let result = match start.await {
                    Ok(result) => result,
                    // Stopped by shutdown or reload: nothing to record.
                    Err(e) if e.is_cancelled() => return,
                    // A bug, not the extension's doing: that one fails, the others go on.
                    Err(e) => Err(StartError::Aborted(e.to_string())),
                };
                me.started(generation, rank, result);
            }));
        }
        // Wait for the starts, at most the ready wait; the late ones go on.
        for outcome in outcomes {
            if tokio::time::timeout_at(deadline, outcome).await.is_err() {
                break;
            }
        }
        let mut running = Vec::new();
        {
            let entries = self.entries.lock().unwrap();
            self.reported.store(generation, Ordering::SeqCst);
            for e in entries.iter() {
                match &e.state {
                    EntryState::Running(ext) => {
                        report.loaded.push(e.name.clone());
                        running.push(ext.clone());
                        if e.sandbox.as_ref().is_some_and(|s| s.grant_stale) {
                            report.warnings.push(LoadWarning {
                                extension: e.name.clone(),
                                warning: crate::sandbox::stale_warning(
                                    &e.name,
                                    &e.identity,
                                    &e.dir,
                                ),
                            });
                        }
                    }
                    EntryState::Error(error) => report.errors.push(LoadError {
                        extension: e.name.clone(),
                        error: error.clone(),
                    }),
                    EntryState::Starting => report.starting.push(e.name.clone()),
                    EntryState::Disabled | EntryState::Untrusted(_) => {}
                }
            }
        }
        for ext in &running {
            // All were started already: waiting on each in turn against one deadline
            // waits for them in parallel.
            match ext.wait_ready(deadline).await {
                Phase::Ready => report.ready.push(ext.name().to_string()),
                Phase::Starting => ext.log().warn(&format!(
                    "not ready within {:?}: registrations may still arrive",
                    self.config.timeouts.ready
                )),
                Phase::Exited => {
                    let reason = ext.status().exit.map(|e| e.to_string()).unwrap_or_default();
                    report.errors.push(LoadError {
                        extension: ext.name().to_string(),
                        error: format!("exited while starting: {reason}"),
                    });
                }
            }
        }
        report
    }

    /// Records how the start of the extension at `rank` of load `generation` ended. One
    /// that ends after the load returned and failed is told as `extension_exited`; one of
    /// an earlier load (stopped meanwhile) is stopped.
    fn started(&self, generation: u64, rank: usize, result: Result<Started, StartError>) {
        let stale = self.generation.load(Ordering::SeqCst) != generation;
        let mut entries = self.entries.lock().unwrap();
        let entry = entries
            .get_mut(rank)
            .filter(|e| !stale && matches!(e.state, EntryState::Starting));
        let Some(entry) = entry else {
            drop(entries);
            if let Ok(started) = result {
                let t = self.config.timeouts.clone();
                tokio::spawn(async move { started.ext.shutdown(t.shutdown, t.terminate).await });
            }
            return;
        };
        match result {
            Ok(started) => {
                entry.transport = started.transport;
                entry.sandbox = started.sandbox;
                entry.tool_timeout = started.tool_timeout;
                entry.state = EntryState::Running(started.ext);
            }
            Err(e) => {
                let reason = e.to_string();
                entry.state = EntryState::Error(reason.clone());
                if self.reported.load(Ordering::SeqCst) != generation {
                    return; // In the load's report.
                }
                let event = HostEvent::ExtensionExited {
                    extension: entry.name.clone(),
                    reason,
                    code: None,
                    signal: None,
                };
                drop(entries);
                self.notes.push_own(event);
            }
        }
    }

    /// Starts one extension on its transport and hands the connection to the core.
    async fn start(
        self: Arc<Self>,
        rank: usize,
        source: Source,
        dir: &Path,
        identity: &Identity,
        m: &Manifest,
    ) -> Result<Started, StartError> {
        let log = ExtLog::open(&self.config.home.log_path(&m.name));
        let request = launcher::Request {
            manifest: m,
            dir,
            identity,
            context: self.config.launch_context(),
            log: &log,
            run_grant: crate::sandbox::RunGrant::applies_to(source)
                .then_some(&self.config.run_grant),
        };
        let Launched {
            connection,
            transport,
            sandbox,
            paths,
        } = self
            .launcher
            .launch(request)
            .await
            .inspect_err(|e| log.warn(&e.to_string()))?;
        let hello_ack = HelloAck {
            protocol_version: PROTOCOL_VERSION,
            zot_version: env!("CARGO_PKG_VERSION").into(),
            provider: self.config.provider.clone(),
            model: self.config.model.clone(),
            cwd: paths.cwd,
            extension_dir: paths.extension_dir,
            data_dir: paths.data_dir,
            extra: Map::new(),
        };
        let notes = self.notes.clone();
        let hub: Arc<dyn Hub> = self;
        let ext = Extension::start(m.name.clone(), rank, log, connection, hello_ack, hub, notes);
        Ok(Started {
            ext,
            transport,
            sandbox,
            tool_timeout: m.limits.tool_timeout_ms.map(Duration::from_millis),
        })
    }

    /// Stops every running extension in parallel, and every start in flight; returns
    /// the names of those that were running.
    async fn stop_all(&self) -> Vec<String> {
        self.generation.fetch_add(1, Ordering::SeqCst);
        for start in self.starting.lock().unwrap().drain(..) {
            start.abort();
        }
        for e in self.entries.lock().unwrap().iter_mut() {
            if matches!(e.state, EntryState::Starting) {
                e.state = EntryState::Error("stopped while starting".into());
            }
        }
        let running = self.running_all();
        let names = running.iter().map(|e| e.name().to_string()).collect();
        let mut tasks = tokio::task::JoinSet::new();
        for ext in running {
            let t = self.config.timeouts.clone();
            tasks.spawn(async move { ext.shutdown(t.shutdown, t.terminate).await });
        }
        while tasks.join_next().await.is_some() {}
        names
    }

    fn changed(&self, extensions: Vec<Extension>) {
        for ext in extensions {
            let event = HostEvent::RegistryChanged {
                extension: ext.name().to_string(),
            };
            self.notes.push_own(event);
        }
    }
}

impl Hub for Inner {
    fn timeouts(&self) -> &Timeouts {
        &self.config.timeouts
    }

    fn register(&self, ext: &Extension, registration: Registration) {
        let changed = {
            let mut registry = self.registry.lock().unwrap();
            match registration {
                Registration::Command(reg) => registry.claim_command(ext, reg),
                Registration::Tool(reg) => registry.claim_tool(ext, reg),
            }
        };
        // Initial registrations are announced once, when the extension is ready.
        let starting = ext.phase() == Phase::Starting;
        self.changed(
            changed
                .into_iter()
                .filter(|e| !(starting && e.is(ext)))
                .collect(),
        );
    }

    fn ready(&self, ext: &Extension) {
        let owned = self.registry.lock().unwrap().of(ext);
        if !(owned.commands.is_empty() && owned.tools.is_empty() && owned.shadowed.is_empty()) {
            self.changed(vec![ext.clone()]);
        }
    }

    fn exited(&self, ext: &Extension) {
        let changed = self.registry.lock().unwrap().remove(ext);
        self.changed(changed);
    }

    fn call_tool(
        &self,
        from: &Extension,
        name: String,
        args: Value,
    ) -> Pin<Box<dyn Future<Output = Result<ToolResult, CallError>> + Send>> {
        let me = self.me.clone();
        from.log().info(&format!("call_tool {name:?}"));
        Box::pin(async move {
            let inner = me
                .upgrade()
                .ok_or_else(|| CallError::NotFound("host: it is shutting down".into()))?;
            inner.call_tool(&name, args, None).await.map(|(_, r)| r)
        })
    }
}

#[cfg(test)]
mod tests;
