//! MCP servers as extensions (a manifest's `"mcp"`): the program or component that is
//! the server runs on its own transport (stdio or wasm), or the server is remote
//! (Streamable HTTP over [`remote::CheckedHttpClient`], [`speak_remote`]), and this one
//! stands between it and the core, an rmcp client on one side and an ordinary zot extension on the other.
//! The core sees `hello`, one `register_tool` per MCP tool (re-sent for new or changed
//! ones on `notifications/tools/list_changed`) and `ready`; its `tool_call` becomes
//! `tools/call` ([`call`]), `tool_cancel` becomes `notifications/cancelled`, the
//! server's `notifications/progress` for a pending call become `tool_progress`, and the
//! answer comes back as `tool_result`
//! (`structuredContent` as `structured_content`, `isError` as `is_error`). It keeps no state of the core's: deadlines, interception, trust and the
//! failing of pending calls when the server dies are the core's, as for any extension.

mod call;
mod client;
pub(crate) mod map;
pub(crate) mod remote;
mod wire;

use super::{Connection, Control, ExitReason, Inbound, LineGate, Outbound};
use super::{INBOUND_QUEUE, OUTBOUND_QUEUE};
use crate::budget::Budget;
use crate::caps::registrations::{Registered, REGISTRATION_BYTES};
use crate::events::json_len;
use crate::log::ExtLog;
use rmcp::model::{
    CallToolRequestParams, PaginatedRequestParams, ProgressNotificationParam, ProtocolVersion,
    ServerNotification, ServerPeerInfo, SubscriptionFilter,
};
use rmcp::service::{serve_client_with_lifecycle, Peer, RoleClient};
use rmcp::{ClientCacheConfig, ClientLifecycleMode};
use sha2::{Digest as _, Sha256};
use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use tokio::sync::{mpsc, oneshot, Notify};
use tokio::task::{AbortHandle, JoinSet};
use zot_protocol::{
    CommandResponse, Empty, EventInterceptResponse, ExtFrame, Hello, HostFrame, RegisterTool,
    ToolProgress, ToolResult,
};

/// How many progress notifications of the server's may wait to be handed on; more are
/// dropped.
const PROGRESS_QUEUE: usize = 256;

/// The most tools taken from one server; more are left out, with a warning.
pub const MAX_TOOLS: usize = 1024;
/// The most `tools/list` pages read in one listing.
const MAX_PAGES: usize = 64;
/// The most bytes of tools one listing holds before they are registered, each counted
/// as the `register_tool` made of it (as JSON): what the core takes of one extension.
/// A tool that does not fit in what is left is left out, and the log says how many were.
pub const LISTING_BYTES: usize = REGISTRATION_BYTES;

/// Who the server is to the core.
pub(crate) struct McpSpec {
    /// The manifest's name (the `hello`'s).
    pub name: String,
    /// The manifest's version; the server's own when empty.
    pub version: String,
    /// Put before each tool's name.
    pub prefix: String,
    /// What each message to the server may take of a sandboxed server's time.
    pub budget: Budget,
    pub log: ExtLog,
}

/// The connection the core gets for the MCP server on `server`.
pub(crate) fn speak(server: Connection, spec: McpSpec) -> Connection {
    let Connection {
        outbound,
        inbound,
        exit,
        control,
    } = server;
    let control: Arc<dyn Control> = Arc::from(control);
    let Sides {
        core,
        from_core,
        to_core,
        exit_tx,
        ended,
        progress,
        progressed,
    } = Sides::new();
    let wire = wire::Wire::new(
        wire::ToServer::new(outbound, spec.budget, control.clone(), spec.log.clone()),
        inbound,
        spec.log.clone(),
        ended.clone(),
        progress,
    );
    let adapter = Adapter::new(to_core, spec, control.clone(), None);
    // Its exit is the server's own (below).
    let stop = Arc::new(Notify::new());
    tokio::spawn(adapter.run(wire, from_core, ended, progressed, stop));
    tokio::spawn(async move {
        let reason = exit.await.unwrap_or_else(|_| {
            ExitReason::LostTrack("the MCP server's transport ended without an exit".into())
        });
        let _ = exit_tx.send(reason);
    });
    core.connection(control)
}

/// The channels between the core and an adapter, and the adapter's own.
struct Sides {
    /// The core's side, made into its [`Connection`] by [`CoreSide::connection`].
    core: CoreSide,
    from_core: mpsc::Receiver<Outbound>,
    to_core: mpsc::Sender<Inbound>,
    exit_tx: oneshot::Sender<ExitReason>,
    /// Told once the server's side has ended.
    ended: Arc<Notify>,
    progress: mpsc::Sender<(String, ProgressNotificationParam)>,
    progressed: mpsc::Receiver<(String, ProgressNotificationParam)>,
}

/// What the core holds of an adapter.
struct CoreSide {
    core_tx: mpsc::Sender<Outbound>,
    core_rx: mpsc::Receiver<Inbound>,
    exit_rx: oneshot::Receiver<ExitReason>,
}

impl Sides {
    fn new() -> Sides {
        let (core_tx, from_core) = mpsc::channel(OUTBOUND_QUEUE);
        let (to_core, core_rx) = mpsc::channel(INBOUND_QUEUE);
        let (exit_tx, exit_rx) = oneshot::channel();
        let (progress, progressed) = mpsc::channel(PROGRESS_QUEUE);
        Sides {
            core: CoreSide {
                core_tx,
                core_rx,
                exit_rx,
            },
            from_core,
            to_core,
            exit_tx,
            ended: Arc::new(Notify::new()),
            progress,
            progressed,
        }
    }
}

impl CoreSide {
    /// The core's [`Connection`], stopped through `control`.
    fn connection(self, control: Arc<dyn Control>) -> Connection {
        Connection {
            outbound: self.core_tx.into(),
            inbound: self.core_rx.into(),
            exit: self.exit_rx,
            control: Box::new(Shared(control)),
        }
    }
}

/// How long a remote server's session may take to end (its `DELETE`) when stopped.
const FAREWELL: std::time::Duration = std::time::Duration::from_secs(5);

/// The connection the core gets for the remote MCP server on `transport` (Streamable
/// HTTP, [`remote`]): the adapter over [`wire::Tokened`]. Closing its input, terminating
/// or killing it ends the session (rmcp `DELETE`s it, at most [`FAREWELL`]); its exit
/// says why the connection ended.
pub(crate) fn speak_remote<T>(transport: T, spec: McpSpec) -> Connection
where
    T: rmcp::transport::Transport<RoleClient> + 'static,
{
    let Sides {
        core,
        from_core,
        to_core,
        exit_tx,
        ended,
        progress,
        progressed,
    } = Sides::new();
    let stop = Arc::new(Notify::new());
    let control: Arc<dyn Control> = Arc::new(Stop(stop.clone()));
    let wire = wire::Tokened::new(transport, ended.clone(), progress);
    let adapter = Adapter::new(to_core, spec, control.clone(), Some(FAREWELL));
    tokio::spawn(async move {
        let reason = match adapter.run(wire, from_core, ended, progressed, stop).await {
            Ended::Stopped => ExitReason::StoppedByHost,
            Ended::Handshake(why) => {
                ExitReason::Disconnected(format!("it failed its handshake: {why}"))
            }
            Ended::Closed => ExitReason::Disconnected(
                "the transport closed (the extension's log says why)".into(),
            ),
        };
        let _ = exit_tx.send(reason);
    });
    core.connection(control)
}

/// A remote server's [`Control`]: each way of stopping it ends the session.
struct Stop(Arc<Notify>);

impl Control for Stop {
    fn close_input(&self) {
        self.0.notify_one();
    }
    fn terminate(&self) {
        self.0.notify_one();
    }
    fn kill(&self) {
        self.0.notify_one();
    }
}

/// Why the adapter stopped.
enum Ended {
    /// The core closed its side, or the server was stopped.
    Stopped,
    /// The handshake failed: rmcp's words.
    Handshake(String),
    /// The server's side ended.
    Closed,
}

/// The server's [`Control`], shared by the core and the adapter (which stops a server
/// that fails its handshake).
struct Shared(Arc<dyn Control>);

impl Control for Shared {
    fn close_input(&self) {
        self.0.close_input();
    }
    fn terminate(&self) {
        self.0.terminate();
    }
    fn kill(&self) {
        self.0.kill();
    }
}

/// Frames to the core, as lines an extension would write.
struct Core {
    tx: mpsc::Sender<Inbound>,
    gate: LineGate,
}

impl Core {
    async fn send(&self, frame: ExtFrame) {
        let line = zot_protocol::encode(&frame).into_json().into_bytes();
        let _ = self.tx.send(self.gate.admit(line).await).await;
    }
}

type Listing = Pin<Box<dyn Future<Output = Result<Vec<RegisterTool>, String>> + Send>>;

struct Adapter {
    core: Core,
    spec: McpSpec,
    control: Arc<dyn Control>,
    /// A remote server: how long its session may take to end once stopped.
    farewell: Option<std::time::Duration>,
    /// Calls in progress, by the core's id.
    calls: HashMap<String, AbortHandle>,
    /// What the last listing registered: each tool's name (prefix included) and the
    /// digest of its `register_tool`, to send only new and changed ones.
    registered: HashMap<String, [u8; 32]>,
    /// What the core holds of this extension's registrations, by the core's own rule:
    /// a tool it would refuse is not sent, and not kept.
    ledger: Registered,
    /// Whether the core was sent `hello`.
    said_hello: bool,
}

impl Adapter {
    fn new(
        to_core: mpsc::Sender<Inbound>,
        spec: McpSpec,
        control: Arc<dyn Control>,
        farewell: Option<std::time::Duration>,
    ) -> Adapter {
        Adapter {
            core: Core {
                tx: to_core,
                gate: LineGate::default(),
            },
            spec,
            control,
            farewell,
            calls: HashMap::new(),
            registered: HashMap::new(),
            ledger: Registered::default(),
            said_hello: false,
        }
    }

    /// Speaks MCP on `wire` until the core, the server or `stop` ends it; says why.
    async fn run<T>(
        mut self,
        wire: T,
        mut from_core: mpsc::Receiver<Outbound>,
        ended: Arc<Notify>,
        mut progressed: mpsc::Receiver<(String, ProgressNotificationParam)>,
        stop: Arc<Notify>,
    ) -> Ended
    where
        T: rmcp::transport::Transport<RoleClient> + 'static,
    {
        let relist = Arc::new(Notify::new());
        let handler = client::Client {
            relist: relist.clone(),
            log: self.spec.log.clone(),
        };
        // 2026-07-28 first (`server/discover`), else the `initialize` handshake.
        let lifecycle = ClientLifecycleMode::Auto {
            preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            legacy_version: Some(ProtocolVersion::LATEST_WITH_INITIALIZE),
        };
        let mut starting = Box::pin(serve_client_with_lifecycle(handler, wire, lifecycle));
        let mut listening: Option<tokio::task::JoinHandle<()>> = None;
        let mut service = None;
        let mut peer: Option<Peer<RoleClient>> = None;
        let mut listing: Option<Listing> = None;
        let mut list_again = false;
        let mut answers: JoinSet<(String, Option<ToolResult>)> = JoinSet::new();
        let why;
        loop {
            tokio::select! {
                // A call's progress before its answer: the wire handed it on first.
                biased;
                Some((id, progress)) = progressed.recv() => self.progress(id, progress).await,
                started = &mut starting, if service.is_none() => match started {
                    Ok(running) => {
                        self.started(running.peer_info().as_deref());
                        let p = running.peer().clone();
                        listening = listen(&p, running.peer_info().as_deref(), &relist, &self.spec.log);
                        // rmcp keeps list answers (every page, 512 of them, past their
                        // expiry by default): the host holds only what it registered.
                        p.set_response_cache_config(ClientCacheConfig::disabled()).await;
                        listing = Some(self.list(&p));
                        peer = Some(p);
                        service = Some(running);
                    }
                    Err(e) => {
                        self.spec.log.warn(&format!("the MCP server failed its handshake: {e}"));
                        self.control.terminate();
                        why = Ended::Handshake(e.to_string());
                        break;
                    }
                },
                tools = async { listing.as_mut().expect("guarded").await }, if listing.is_some() => {
                    listing = None;
                    match tools {
                        Ok(tools) => self.register(tools).await,
                        Err(e) => self.spec.log.warn(&format!("cannot list the MCP server's tools: {e}")),
                    }
                    if std::mem::take(&mut list_again) {
                        listing = peer.as_ref().map(|p| self.list(p));
                    }
                }
                () = relist.notified() => match (&listing, &peer) {
                    (Some(_), _) => list_again = true,
                    (None, Some(p)) => listing = Some(self.list(p)),
                    (None, None) => {}
                },
                frame = from_core.recv() => match frame {
                    Some(frame) => self.handle(frame, peer.as_ref(), &mut answers).await,
                    None => {
                        why = Ended::Stopped;
                        break;
                    }
                },
                Some(answer) = answers.join_next() => {
                    if let Ok((id, result)) = answer {
                        self.calls.remove(&id);
                        if let Some(result) = result {
                            self.core.send(ExtFrame::ToolResult(result)).await;
                        }
                    }
                }
                () = ended.notified() => {
                    why = Ended::Closed;
                    break;
                }
                () = stop.notified() => {
                    why = Ended::Stopped;
                    break;
                }
            }
        }
        // Pending calls are the core's to fail (the server's exit tells it).
        answers.abort_all();
        if let Some(listening) = listening {
            listening.abort();
        }
        // A remote server's session is ended (rmcp `DELETE`s it), for so long at most.
        if let (Some(mut service), Some(farewell)) = (service, self.farewell) {
            let _ = service.close_with_timeout(farewell).await;
        }
        why
    }

    /// Hands on the server's progress of the core's call `id`, if it is still waiting.
    async fn progress(&self, id: String, progress: ProgressNotificationParam) {
        if !self.calls.contains_key(&id) {
            return;
        }
        let frame = ToolProgress {
            id,
            progress: Some(progress.progress),
            total: progress.total,
            text: progress.message,
            ..Default::default()
        };
        self.core.send(ExtFrame::ToolProgress(frame)).await;
    }

    /// Logs who the server is.
    fn started(&mut self, info: Option<&rmcp::model::ServerPeerInfo>) {
        let Some(info) = info else { return };
        let server = info.server_info.as_ref();
        let name = server.map_or("", |s| s.name.as_str());
        let version = server.map_or("", |s| s.version.as_str());
        if self.spec.version.is_empty() {
            self.spec.version = version.to_string();
        }
        self.spec.log.info(&format!(
            "MCP server {name:?} {version:?} ready (protocol {})",
            info.protocol_version
        ));
    }

    /// A listing of the server's tools, as `register_tool` frames.
    fn list(&self, peer: &Peer<RoleClient>) -> Listing {
        Box::pin(list(
            peer.clone(),
            self.spec.prefix.clone(),
            self.spec.log.clone(),
        ))
    }

    /// Registers the tools of a listing: the first time with `hello` and `ready`, after
    /// that the new and changed ones (a registration replaces the earlier one of the
    /// same name). A tool the core would refuse (over its caps, counting what it holds
    /// of earlier listings) is logged and dropped. What is kept is this listing's tools,
    /// replacing the last; one that went is logged (the zot protocol cannot withdraw it).
    async fn register(&mut self, tools: Vec<RegisterTool>) {
        let first = !self.said_hello;
        if first {
            self.said_hello = true;
            self.core
                .send(ExtFrame::Hello(Hello {
                    name: self.spec.name.clone(),
                    version: self.spec.version.clone(),
                    capabilities: vec!["tools".into()],
                    ..Default::default()
                }))
                .await;
        }
        let mut now = HashMap::new();
        for frame in tools {
            let digest: [u8; 32] = Sha256::digest(zot_protocol::encode(&frame).as_bytes()).into();
            if self.registered.get(&frame.name) == Some(&digest) {
                now.insert(frame.name, digest);
                continue;
            }
            if let Err(refused) = self.ledger.admit("tool", &frame.name, json_len(&frame)) {
                self.spec.log.warn(&refused);
                continue;
            }
            now.insert(frame.name.clone(), digest);
            self.core.send(ExtFrame::RegisterTool(frame)).await;
        }
        for gone in self.registered.keys().filter(|k| !now.contains_key(*k)) {
            self.spec.log.warn(&format!(
                "the MCP server no longer offers tool {gone:?}: it stays registered until the \
                 extension restarts, and a call to it gets the server's answer"
            ));
        }
        self.registered = now;
        if first {
            self.core.send(ExtFrame::Ready(Empty::default())).await;
        }
    }

    /// Answers one frame of the core's.
    async fn handle(
        &mut self,
        frame: Outbound,
        peer: Option<&Peer<RoleClient>>,
        answers: &mut JoinSet<(String, Option<ToolResult>)>,
    ) {
        let frame = match HostFrame::decode(frame.line.json().as_bytes()) {
            Ok(frame) => frame,
            Err(e) => {
                self.spec
                    .log
                    .warn(&format!("cannot read the host's frame: {e}"));
                return;
            }
        };
        match frame {
            HostFrame::ToolCall(call) => {
                let id = call.id.clone();
                let (Some(peer), Some(name)) = (peer, call.name.strip_prefix(&self.spec.prefix))
                else {
                    let why = format!("the MCP server has no tool {:?}", call.name);
                    self.core
                        .send(ExtFrame::ToolResult(ToolResult::error(id, why)))
                        .await;
                    return;
                };
                let mut params = CallToolRequestParams::new(name.to_string());
                if let serde_json::Value::Object(args) = call.args {
                    params = params.with_arguments(args);
                }
                let peer = peer.clone();
                let task = answers.spawn(async move {
                    let answer = call::call(&peer, params, &id).await;
                    (id.clone(), map::result(id, answer))
                });
                self.calls.insert(call.id, task);
            }
            // Dropping the call sends `notifications/cancelled`.
            HostFrame::ToolCancel(cancel) => {
                if let Some(task) = self.calls.remove(&cancel.id) {
                    task.abort();
                }
            }
            HostFrame::CommandInvoked(c) => {
                let response = CommandResponse {
                    id: c.id,
                    action: "noop".into(),
                    error: Some("an MCP server has no slash commands".into()),
                    ..Default::default()
                };
                self.core.send(ExtFrame::CommandResponse(response)).await;
            }
            HostFrame::EventIntercept(e) => {
                let id = e.id.unwrap_or_default();
                let allow = EventInterceptResponse {
                    id,
                    ..Default::default()
                };
                self.core
                    .send(ExtFrame::EventInterceptResponse(allow))
                    .await;
            }
            // Before `hello` there is nothing to acknowledge: the core closes the
            // server's input next, which is how an MCP stdio server is asked to stop.
            HostFrame::Shutdown(_) if !self.said_hello => {}
            HostFrame::Shutdown(_) => {
                self.core
                    .send(ExtFrame::ShutdownAck(Empty::default()))
                    .await
            }
            HostFrame::HelloAck(_)
            | HostFrame::Event(_)
            | HostFrame::PanelKey(_)
            | HostFrame::PanelResize(_)
            | HostFrame::PanelClose(_)
            | HostFrame::ToolResult(_) => {}
        }
    }
}

/// For a server of 2026-07-28 or later that says its tool list changes: a
/// `subscriptions/listen` for `notifications/tools/list_changed` (that revision sends
/// them on no other stream), each told to `relist`. Earlier revisions send them to the
/// client's handler.
fn listen(
    peer: &Peer<RoleClient>,
    info: Option<&ServerPeerInfo>,
    relist: &Arc<Notify>,
    log: &ExtLog,
) -> Option<tokio::task::JoinHandle<()>> {
    let info = info?;
    let changes = info.capabilities.tools.as_ref()?.list_changed == Some(true);
    if info.protocol_version.has_initialize() || !changes {
        return None;
    }
    let (peer, relist, log) = (peer.clone(), relist.clone(), log.clone());
    Some(tokio::spawn(async move {
        let filter = SubscriptionFilter::builder().tools_list_changed().build();
        let mut subscription = match peer.listen(filter).await {
            Ok(subscription) => subscription,
            Err(e) => {
                log.warn(&format!(
                    "cannot listen for the MCP server's tool list changes: {e}; a tool it \
                     adds later is not seen until the extension restarts"
                ));
                return;
            }
        };
        loop {
            match subscription.next().await {
                Ok(Some(ServerNotification::ToolListChangedNotification(_))) => relist.notify_one(),
                Ok(Some(_)) => {}
                Ok(None) => break,
                Err(e) => {
                    log.warn(&format!("the MCP server's subscription failed: {e}"));
                    break;
                }
            }
        }
    }))
}

/// Every tool the server lists, page by page, as `register_tool` frames (names after
/// `prefix`): at most [`MAX_TOOLS`] of them in [`MAX_PAGES`] pages, holding at most
/// [`LISTING_BYTES`]; what is left out past a cap is logged.
async fn list(
    peer: Peer<RoleClient>,
    prefix: String,
    log: ExtLog,
) -> Result<Vec<RegisterTool>, String> {
    let mut listing = Taken::default();
    let mut cursor = None;
    for _ in 0..MAX_PAGES {
        let params = cursor.map(|c| PaginatedRequestParams::default().with_cursor(Some(c)));
        let page = peer.list_tools(params).await.map_err(|e| e.to_string())?;
        for tool in &page.tools {
            listing.take(map::register(tool, &prefix));
        }
        if listing.tools.len() > MAX_TOOLS {
            log.warn(&format!(
                "the MCP server lists more than {MAX_TOOLS} tools: only the first \
                 {MAX_TOOLS} are taken"
            ));
            listing.tools.truncate(MAX_TOOLS);
            return Ok(listing.done(&log));
        }
        match page.next_cursor {
            Some(next) => cursor = Some(next),
            None => return Ok(listing.done(&log)),
        }
    }
    log.warn(&format!(
        "the MCP server's tool list runs past {MAX_PAGES} pages: only the tools of the \
         first {MAX_PAGES} are taken"
    ));
    Ok(listing.done(&log))
}

/// The tools of a listing so far, within [`LISTING_BYTES`].
#[derive(Default)]
struct Taken {
    tools: Vec<RegisterTool>,
    bytes: usize,
    /// How many tools, of how many bytes, did not fit.
    left_out: (usize, usize),
}

impl Taken {
    /// Keeps `tool` if it fits in what is left of [`LISTING_BYTES`].
    fn take(&mut self, tool: RegisterTool) {
        let size = json_len(&tool);
        if self.bytes + size > LISTING_BYTES {
            self.left_out.0 += 1;
            self.left_out.1 += size;
            return;
        }
        self.bytes += size;
        self.tools.push(tool);
    }

    /// The tools kept, once the log says what was left out.
    fn done(self, log: &ExtLog) -> Vec<RegisterTool> {
        let (count, bytes) = self.left_out;
        if count > 0 {
            log.warn(&format!(
                "the MCP server's tools are over {} MiB: {count} of them ({bytes} bytes) \
                 are left out",
                LISTING_BYTES >> 20
            ));
        }
        self.tools
    }
}
