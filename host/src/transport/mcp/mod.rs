//! MCP servers as extensions (a manifest's `"mcp"`): the program or component that is
//! the server runs on its own transport (stdio or wasm), and this one stands between it
//! and the core, an rmcp client on one side and an ordinary zot extension on the other.
//! The core sees `hello`, one `register_tool` per MCP tool (re-sent for new or changed
//! ones on `notifications/tools/list_changed`) and `ready`; its `tool_call` becomes
//! `tools/call`, `tool_cancel` becomes `notifications/cancelled`, and the answer comes
//! back as `tool_result` (`structuredContent` as `structured_content`, `isError` as
//! `is_error`). It keeps no state of the core's: deadlines, interception, trust and the
//! failing of pending calls when the server dies are the core's, as for any extension.

mod client;
pub(crate) mod map;
mod wire;

use super::{Connection, Control, ExitReason, Inbound, LineGate, Outbound};
use super::{INBOUND_QUEUE, OUTBOUND_QUEUE};
use crate::budget::Budget;
use crate::log::ExtLog;
use rmcp::model::{CallToolRequestParams, PaginatedRequestParams, Tool};
use rmcp::service::{Peer, RoleClient};
use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use tokio::sync::{mpsc, oneshot, Notify};
use tokio::task::{AbortHandle, JoinSet};
use zot_protocol::{
    CommandResponse, Empty, EventInterceptResponse, ExtFrame, Hello, HostFrame, RegisterTool,
    ToolResult,
};

/// The most tools taken from one server; more are left out, with a warning.
pub const MAX_TOOLS: usize = 1024;
/// The most `tools/list` pages read in one listing.
const MAX_PAGES: usize = 64;

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
    let (core_tx, from_core) = mpsc::channel(OUTBOUND_QUEUE);
    let (to_core, core_rx) = mpsc::channel(INBOUND_QUEUE);
    let (exit_tx, exit_rx) = oneshot::channel();
    let ended = Arc::new(Notify::new());
    let wire = wire::Wire {
        to_server: outbound,
        from_server: inbound,
        budget: spec.budget,
        log: spec.log.clone(),
        ended: ended.clone(),
    };
    let adapter = Adapter {
        core: Core {
            tx: to_core,
            gate: LineGate::default(),
        },
        spec,
        control: control.clone(),
        calls: HashMap::new(),
        registered: BTreeMap::new(),
        said_hello: false,
    };
    tokio::spawn(adapter.run(wire, from_core, ended));
    tokio::spawn(async move {
        let reason = exit.await.unwrap_or_else(|_| {
            ExitReason::LostTrack("the MCP server's transport ended without an exit".into())
        });
        let _ = exit_tx.send(reason);
    });
    Connection {
        outbound: core_tx.into(),
        inbound: core_rx.into(),
        exit: exit_rx,
        control: Box::new(Shared(control)),
    }
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

type Listing = Pin<Box<dyn Future<Output = Result<Vec<Tool>, String>> + Send>>;

struct Adapter {
    core: Core,
    spec: McpSpec,
    control: Arc<dyn Control>,
    /// Calls in progress, by the core's id.
    calls: HashMap<String, AbortHandle>,
    /// What was registered, by name (prefix included).
    registered: BTreeMap<String, RegisterTool>,
    /// Whether the core was sent `hello`.
    said_hello: bool,
}

impl Adapter {
    async fn run(
        mut self,
        wire: wire::Wire,
        mut from_core: mpsc::Receiver<Outbound>,
        ended: Arc<Notify>,
    ) {
        let relist = Arc::new(Notify::new());
        let handler = client::Client {
            relist: relist.clone(),
            log: self.spec.log.clone(),
        };
        let mut starting = Box::pin(rmcp::serve_client(handler, wire));
        let mut service = None;
        let mut peer: Option<Peer<RoleClient>> = None;
        let mut listing: Option<Listing> = None;
        let mut list_again = false;
        let mut answers: JoinSet<(String, Option<ToolResult>)> = JoinSet::new();
        loop {
            tokio::select! {
                started = &mut starting, if service.is_none() => match started {
                    Ok(running) => {
                        self.started(running.peer_info().as_deref());
                        let p = running.peer().clone();
                        listing = Some(Box::pin(list(p.clone(), self.spec.log.clone())));
                        peer = Some(p);
                        service = Some(running);
                    }
                    Err(e) => {
                        self.spec.log.warn(&format!("the MCP server failed its handshake: {e}"));
                        self.control.terminate();
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
                        listing = peer.clone().map(|p| Box::pin(list(p, self.spec.log.clone())) as Listing);
                    }
                }
                () = relist.notified() => match (&listing, &peer) {
                    (Some(_), _) => list_again = true,
                    (None, Some(p)) => listing = Some(Box::pin(list(p.clone(), self.spec.log.clone()))),
                    (None, None) => {}
                },
                frame = from_core.recv() => match frame {
                    Some(frame) => self.handle(frame, peer.as_ref(), &mut answers).await,
                    None => break,
                },
                Some(answer) = answers.join_next() => {
                    if let Ok((id, result)) = answer {
                        self.calls.remove(&id);
                        if let Some(result) = result {
                            self.core.send(ExtFrame::ToolResult(result)).await;
                        }
                    }
                }
                () = ended.notified() => break,
            }
        }
        // Pending calls are the core's to fail (the server's exit tells it).
        answers.abort_all();
        drop(service);
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

    /// Registers the tools of a listing: the first time with `hello` and `ready`, after
    /// that the new and changed ones (a registration replaces the earlier one of the
    /// same name); a tool that went is logged (the zot protocol cannot withdraw one).
    async fn register(&mut self, tools: Vec<Tool>) {
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
        let mut now = BTreeMap::new();
        for tool in &tools {
            let frame = map::register(tool, &self.spec.prefix);
            if self.registered.get(&frame.name) != Some(&frame) {
                self.core.send(ExtFrame::RegisterTool(frame.clone())).await;
            }
            now.insert(frame.name.clone(), frame);
        }
        for gone in self.registered.keys().filter(|k| !now.contains_key(*k)) {
            self.spec.log.warn(&format!(
                "the MCP server no longer offers tool {gone:?}: it stays registered until the \
                 extension restarts, and a call to it gets the server's answer"
            ));
        }
        self.registered.extend(now);
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
                    let answer = peer.call_tool(params).await;
                    (id.clone(), map::result(id, answer))
                });
                self.calls.insert(call.id, task);
            }
            // Dropping the call's request sends `notifications/cancelled`.
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

/// Every tool the server lists, page by page, at most [`MAX_TOOLS`] of them in
/// [`MAX_PAGES`] pages; what is left out past either cap is logged.
async fn list(peer: Peer<RoleClient>, log: ExtLog) -> Result<Vec<Tool>, String> {
    let mut tools = Vec::new();
    let mut cursor = None;
    for _ in 0..MAX_PAGES {
        let params = cursor.map(|c| PaginatedRequestParams::default().with_cursor(Some(c)));
        let page = peer.list_tools(params).await.map_err(|e| e.to_string())?;
        tools.extend(page.tools);
        if tools.len() > MAX_TOOLS {
            log.warn(&format!(
                "the MCP server lists more than {MAX_TOOLS} tools: only the first \
                 {MAX_TOOLS} are taken"
            ));
            tools.truncate(MAX_TOOLS);
            return Ok(tools);
        }
        match page.next_cursor {
            Some(next) => cursor = Some(next),
            None => return Ok(tools),
        }
    }
    log.warn(&format!(
        "the MCP server's tool list runs past {MAX_PAGES} pages: only the tools of the \
         first {MAX_PAGES} are taken"
    ));
    Ok(tools)
}
