//! `zot mcp`: the host as an MCP server over stdio (docs/mcp.md), on the official Rust
//! SDK (`rmcp`). A client of the library like the sidecar: every extension tool is an MCP
//! tool, every slash command an MCP prompt; a call goes through the `tool_call`
//! interception chain and is told to subscribers first, as an agent does it.
//! `--http` serves the same over Streamable HTTP instead ([`http`]).

mod http;
mod map;
mod stdio;

use crate::flags::host::HostArgs;
use crate::output::error::{self, CliError, Context as _};
use map::{
    level_rank, log_level, mcp_result, mcp_tool, mcp_tool_name, prompt_args, prompt_text, Progress,
};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ErrorData,
    GetPromptRequestParams, GetPromptResponse, GetPromptResult, Implementation, ListPromptsResult,
    ListToolsResult, PaginatedRequestParams, Prompt, PromptArgument, PromptMessage, Role,
    ServerCapabilities, ServerConfig, SubscriptionFilter,
};
use rmcp::service::{
    NotificationContext, RequestContext, ServerInitializeError, SubscriptionContext,
    SubscriptionSink,
};
use rmcp::{Peer, RoleServer, ServerHandler, ServiceExt as _};
use serde_json::{json, Map, Value};
use std::collections::HashSet;
use std::io::Write as _;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{mpsc, watch, Semaphore};
use zot_host::schema::Checked;
use zot_host::{CallError, CallOptions, Host, HostEvent};
use zot_protocol::{Event, ToolProgress};

/// The one argument of every prompt: the text after the command's name.
const PROMPT_ARG: &str = "args";

/// How many tool calls and prompts may run at once (as many as the sidecar answers at
/// once); one more is refused at once, in words, not queued.
const CALLS_IN_FLIGHT: usize = 256;

/// How long one notification may wait for a session's queue; past it the session misses
/// that notification (a client that reads nothing never holds the others up).
const NOTIFY_TIMEOUT: Duration = Duration::from_secs(5);

/// How many `tool_progress` frames of one call may wait to be sent to its client; more
/// are dropped (and counted in the extension's status).
const PROGRESS_QUEUE: usize = 64;

/// How many refused tool names [`Server::refused_name`] remembers.
const REFUSED_NAMES_KEPT: usize = 4096;

/// How long the last answers may take to be read once the client closed stdin.
const FLUSH_TIMEOUT: Duration = Duration::from_secs(5);

/// The flags of `zot host` (what is loaded, what is trusted, the timeouts), but no tool
/// name is the agent's own by default: an MCP client keeps its own tools apart (it names
/// a server's tools itself).
#[derive(clap::Args)]
#[command(mut_arg("builtin_tools", |a| a.default_value("")))]
pub(crate) struct McpArgs {
    #[command(flatten)]
    host: HostArgs,
    /// Serve MCP over Streamable HTTP at this loopback address (`127.0.0.1:0`: a free
    /// port) instead of stdin/stdout, at `/mcp`, until SIGINT or SIGTERM. The URL (and
    /// the token, unless --token-file) is printed on stderr.
    #[arg(long, value_name = "ADDR:PORT")]
    http: Option<SocketAddr>,
    /// With --http: the bearer token every request must carry, read from this file
    /// (trimmed) instead of a random one.
    #[arg(long, value_name = "FILE", requires = "http")]
    token_file: Option<PathBuf>,
    /// With --http: serve other machines too, reaching this one by NAME (a host name or
    /// address, repeatable): `Host` and `Origin` may name it as well as loopback, and
    /// --http may then be a non-loopback address (`0.0.0.0:8848`). Plain HTTP: put TLS
    /// in front of it (a reverse proxy) before the token crosses a network.
    #[arg(long, value_name = "NAME", requires = "http")]
    http_allow_host: Vec<String>,
}

/// Serves MCP on stdin/stdout until the client closes stdin, or over HTTP until a
/// signal; then stops the extensions.
pub(crate) fn run(args: McpArgs) -> Result<ExitCode, CliError> {
    let config = args.host.config().context("mcp")?;
    let listen = match args.http {
        Some(addr) => Some(
            http::Listen::new(addr, args.token_file.as_deref(), &args.http_allow_host)
                .context("mcp")?,
        ),
        None => None,
    };
    let runtime = tokio::runtime::Runtime::new()
        .map_err(|e| format!("cannot start the async runtime: {e}"))
        .context("mcp")?;
    let (code, restore) = {
        let _in = runtime.enter();
        // Spawned: on the runtime's threads, beside the tasks it talks to.
        let (served, restore) = match listen {
            Some(listen) => (runtime.spawn(http::serve(config, listen)), None),
            None => {
                let (input, output, restore) = crate::output::std_streams::open();
                (runtime.spawn(serve(config, input, output)), Some(restore))
            }
        };
        let code = crate::output::std_streams::finish(runtime.block_on(served)).unwrap_or(1);
        (code, restore)
    };
    drop(restore);
    // A stdin that is a terminal is read by a thread that may sit in a blocking read:
    // do not wait for it.
    let _ = std::io::stdout().flush();
    std::process::exit(code)
}

async fn serve(
    config: zot_host::HostConfig,
    input: crate::output::std_streams::Input,
    output: crate::output::std_streams::Output,
) -> i32 {
    // A client's line is capped like an extension's (`--max-frame-bytes`): a longer one
    // is dropped whole, never held. What is written for it is bounded (`stdio`).
    let shared = Arc::new(stdio::Shared::default());
    let transport = stdio::Stdio::new(input, config.max_frame, shared.clone());
    let writer = tokio::spawn({
        let shared = shared.clone();
        async move { shared.write_to(output).await }
    });
    let (server, notes) = Server::start(config).await;
    let host = server.host.clone();
    let forward = tokio::spawn(forward(
        notes,
        server.sessions.clone(),
        Some(shared.clone()),
    ));
    let code = match server.serve(transport).await {
        Ok(running) => {
            // Ends when the client closes stdin, is cut off, or the transport fails.
            let _ = running.waiting().await;
            i32::from(shared.was_cut_off())
        }
        // Closed before it said `initialize`: nothing was asked, nothing is wrong.
        Err(ServerInitializeError::ConnectionClosed(_)) => 0,
        Err(e) => {
            error::report(&CliError::new(e.to_string()).within("mcp".to_string()));
            1
        }
    };
    forward.abort();
    host.shutdown().await;
    shared.close();
    // What waits is written for a client that reads it, within a deadline.
    if !shared.was_cut_off() && tokio::time::timeout(FLUSH_TIMEOUT, writer).await.is_err() {
        esay!("zot mcp: the client did not read the last answers in time");
    }
    code
}

/// The MCP side of the host: one per session (one over stdio), all sharing the host.
#[derive(Clone)]
struct Server {
    host: Host,
    /// The lowest log level this session's client wants (`logging/setLevel`), as
    /// [`level_rank`].
    log_level: Arc<AtomicU8>,
    /// A permit per tool call or prompt running, in all sessions.
    in_flight: Arc<Semaphore>,
    /// The sessions open, which the host's notifications go to.
    sessions: Arc<watch::Sender<Vec<Session>>>,
    /// The tool names not served (MCP does not allow them) that were logged, by
    /// extension.
    refused_names: Arc<Mutex<HashSet<(String, String)>>>,
}

/// A session that finished its handshake, or a client's `subscriptions/listen` stream
/// (MCP 2026-07-28, which has no handshake): where notifications go, and which.
#[derive(Clone)]
struct Session {
    peer: Peer<RoleServer>,
    log_level: Arc<AtomicU8>,
    /// The listen stream: list changes go there, as its filter allows, and nothing else.
    listen: Option<SubscriptionSink>,
    /// Tells it from every other session of this process.
    key: u64,
}

impl Session {
    fn new(
        peer: Peer<RoleServer>,
        log_level: Arc<AtomicU8>,
        listen: Option<SubscriptionSink>,
    ) -> Self {
        static KEYS: AtomicU64 = AtomicU64::new(0);
        let key = KEYS.fetch_add(1, Ordering::Relaxed);
        Session {
            peer,
            log_level,
            listen,
            key,
        }
    }
}

impl ServerHandler for Server {
    #[allow(deprecated)] // MCP logging: deprecated by SEP-2577, still what 2025-11-25 has.
    fn get_info(&self) -> ServerConfig {
        let capabilities = ServerCapabilities::builder()
            .enable_logging()
            .enable_prompts()
            .enable_prompts_list_changed()
            .enable_tools()
            .enable_tool_list_changed()
            .build();
        ServerConfig::new(capabilities)
            .with_server_info(Implementation::new("zot", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "The tools and prompts of the zot extensions loaded for this project. \
                 Every call passes the extensions' interceptors first.",
            )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let tools = self.host.tools().into_iter().filter_map(|(extension, t)| {
            let served = mcp_tool_name(&t.name);
            if !served {
                self.refused_name(&extension, &t.name);
            }
            served.then(|| mcp_tool(t))
        });
        Ok(ListToolsResult::with_all_items(tools.collect()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let name = request.name.to_string();
        // MCP 2025-11-25 (server/tools, "Error Handling"): an unknown tool is a protocol
        // error, -32602.
        if !mcp_tool_name(&name) || !self.host.has_tool(&name) {
            return Err(ErrorData::invalid_params(
                format!("Unknown tool: {name}"),
                None,
            ));
        }
        let Ok(_permit) = self.in_flight.try_acquire() else {
            let busy = format!("{CALLS_IN_FLIGHT} calls are running already: try again later");
            return Ok(CallToolResult::error(vec![ContentBlock::text(busy)]).into());
        };
        let args = Value::Object(request.arguments.unwrap_or_default());
        // Arguments that do not fit the tool's schema: -32602, each problem with its
        // field in `data.problems`, before any interceptor or extension sees them.
        if self.host.config().validate_arguments {
            if let Some(Checked::Invalid(problems)) = self.host.check_arguments(&name, &args) {
                let data = json!({"tool": name, "problems": problems});
                let error = CallError::Arguments {
                    tool: name,
                    problems,
                };
                return Err(ErrorData::invalid_params(error.to_string(), Some(data)));
            }
        }
        let tool_id = format!("mcp-{}", context.id);
        // A client that gave a `progressToken` is sent the tool's `tool_progress`, from
        // this task (so that over HTTP they go on this request's stream).
        let token = context.meta.get_progress_token();
        let (progress, mut progressed) = mpsc::channel(PROGRESS_QUEUE);
        let call = self.call(tool_id, name, args, token.is_some().then_some(progress));
        tokio::pin!(call);
        let mut said = Progress::default();
        let mut tell = async |frame| {
            let Some(token) = &token else { return };
            let note = said.next(token.clone(), frame);
            let sent = context.peer.notify_progress(note);
            let _ = tokio::time::timeout(NOTIFY_TIMEOUT, sent).await;
        };
        let result = loop {
            // A client's `notifications/cancelled` drops the call: the extension is sent
            // `tool_cancel` (the library does it when a call is abandoned).
            tokio::select! {
                biased;
                _ = context.ct.cancelled() => {
                    return Err(ErrorData::internal_error("cancelled", None))
                }
                Some(frame) = progressed.recv() => tell(frame).await,
                result = &mut call => break result,
            }
        };
        // What came just before the result is sent before it.
        while let Ok(frame) = progressed.try_recv() {
            tell(frame).await;
        }
        Ok(result.into())
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        let prompts = self.host.commands().into_iter().map(|(_, c)| {
            let arg = PromptArgument::new(PROMPT_ARG)
                .with_description("the text after the command's name")
                .with_required(false);
            Prompt::new(c.name, Some(c.description), Some(vec![arg]))
        });
        Ok(ListPromptsResult::with_all_items(prompts.collect()))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        let name = request.name;
        if !self.host.commands().iter().any(|(_, c)| c.name == name) {
            return Err(ErrorData::invalid_params(
                format!("Unknown prompt: {name}"),
                None,
            ));
        }
        // Named arguments besides `args` are passed on as `name=value` words, never
        // dropped; one that cannot be is -32602.
        let args = prompt_args(request.arguments.as_ref())
            .map_err(|why| ErrorData::invalid_params(format!("prompt {name}: {why}"), None))?;
        let Ok(_permit) = self.in_flight.try_acquire() else {
            let busy = format!("{CALLS_IN_FLIGHT} calls are running already: try again later");
            return Err(ErrorData::internal_error(busy, None));
        };
        let invoked = tokio::select! {
            invoked = self.host.invoke_command(&name, &args) => invoked,
            _ = context.ct.cancelled() => {
                return Err(ErrorData::internal_error("cancelled", None))
            }
        };
        let (extension, response) =
            invoked.map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
        let text = prompt_text(response)
            .map_err(|e| ErrorData::internal_error(format!("/{name}: {e}"), None))?;
        let result = GetPromptResult::new(vec![PromptMessage::new_text(Role::User, text)])
            .with_description(format!("/{name} of extension {extension}"));
        Ok(result.into())
    }

    #[allow(deprecated)] // MCP logging: deprecated by SEP-2577, still what 2025-11-25 has.
    async fn set_level(
        &self,
        request: rmcp::model::SetLevelRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.log_level
            .store(level_rank(&request.level), Ordering::Relaxed);
        Ok(())
    }

    /// The handshake is done: the session gets the host's notifications from now on.
    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        self.open(Session::new(context.peer, self.log_level.clone(), None));
    }

    /// MCP 2026-07-28: a client asks for list changes on a `subscriptions/listen`
    /// stream; both lists can change.
    fn accepted_subscription_filter(
        &self,
        _requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        let lists = SubscriptionFilter::builder().tools_list_changed();
        Some(lists.prompts_list_changed().build())
    }

    /// The stream gets the host's list changes until the client cancels it.
    async fn listen(&self, context: SubscriptionContext) -> Result<(), ErrorData> {
        let peer = context.request_context().peer.clone();
        let stream = Session::new(peer, self.log_level.clone(), Some(context.sink().clone()));
        let key = stream.key;
        self.open(stream);
        context.cancelled().await;
        self.sessions
            .send_modify(|open| open.retain(|s| s.key != key));
        Ok(())
    }
}

impl Server {
    /// Loads the host (what did not load is said on stderr, as `zot host` says it);
    /// returns the first session's server and the host's notifications.
    async fn start(config: zot_host::HostConfig) -> (Server, mpsc::Receiver<HostEvent>) {
        let (host, notes) = Host::new(config);
        crate::output::report::print_problems(&host.load().await);
        let server = Server {
            host,
            log_level: Arc::new(AtomicU8::new(0)),
            in_flight: Arc::new(Semaphore::new(CALLS_IN_FLIGHT)),
            sessions: Arc::new(watch::Sender::new(Vec::new())),
            refused_names: Arc::default(),
        };
        (server, notes)
    }

    /// Says once in `extension`'s log that its tool `name` is not served.
    fn refused_name(&self, extension: &str, name: &str) {
        let mut logged = self.refused_names.lock().unwrap();
        // As many as the extensions may register, forgotten (and said again) past it.
        if logged.len() >= REFUSED_NAMES_KEPT {
            logged.clear();
        }
        if logged.insert((extension.to_string(), name.to_string())) {
            self.host.warn(
                extension,
                &format!(
                    "zot mcp does not serve tool {:?} ({} bytes): MCP allows a tool name of \
                     1 to 128 characters among A-Z a-z 0-9 _ - .",
                    name.chars().take(160).collect::<String>(),
                    name.len()
                ),
            );
        }
    }

    /// Adds `session` to those the host's notifications go to.
    fn open(&self, session: Session) {
        self.sessions.send_modify(|open| {
            // Those that ended since are dropped here too: the list stays as long as
            // the sessions open.
            open.retain(|s| !s.peer.is_transport_closed());
            open.push(session);
        });
    }

    /// The server of a new session: the same host and limits, its own log level.
    fn session(&self) -> Server {
        Server {
            log_level: Arc::new(AtomicU8::new(0)),
            ..self.clone()
        }
    }

    /// One call as an agent makes it: the `tool_call` interceptors first (a block is the
    /// tool's error, with the reason; rewritten arguments replace the client's), then
    /// the `tool_call` event to subscribers, then the call. Every failure of the host
    /// (timeout, exit, a full queue) is the tool's error, in words.
    async fn call(
        &self,
        tool_id: String,
        name: String,
        args: Value,
        progress: Option<mpsc::Sender<ToolProgress>>,
    ) -> CallToolResult {
        let event = |args: &Value| Event {
            id: None,
            event: "tool_call".into(),
            fields: Map::from_iter([
                ("tool_id".to_string(), json!(tool_id)),
                ("tool_name".to_string(), json!(name)),
                ("tool_args".to_string(), args.clone()),
            ]),
        };
        let verdict = self.host.intercept(event(&args)).await;
        if verdict.block {
            let reason = verdict
                .reason
                .filter(|r| !r.is_empty())
                .unwrap_or_else(|| "refused by an interceptor".into());
            return CallToolResult::error(vec![ContentBlock::text(reason)]);
        }
        let args = verdict.modified_args.unwrap_or(args);
        self.host.emit(&event(&args));
        let options = match progress {
            Some(to) => CallOptions::default().progress(to),
            None => CallOptions::default(),
        };
        match self.host.call_tool_with(&name, args, options).await {
            Ok((_, result)) => mcp_result(result),
            Err(e) => CallToolResult::error(vec![ContentBlock::text(e.to_string())]),
        }
    }
}

/// Hands the host's notifications to every open session: an extension's `notify` as a
/// log message (logger: the extension), a registry change or an exit as
/// `tools/list_changed` and `prompts/list_changed`. Panels, prompts to submit and
/// note retractions have no MCP counterpart and are not sent. While no session is open,
/// or `stdio`'s client leaves its output unread, they wait in the host's bounded queue
/// (which drops the oldest); a session whose client is gone is dropped.
async fn forward(
    mut notes: mpsc::Receiver<HostEvent>,
    sessions: Arc<watch::Sender<Vec<Session>>>,
    stdio: Option<Arc<stdio::Shared>>,
) {
    let mut open = sessions.subscribe();
    loop {
        if open.wait_for(|open| !open.is_empty()).await.is_err() {
            return;
        }
        if let Some(stdio) = &stdio {
            stdio.room_for_notes().await;
        }
        let Some(note) = notes.recv().await else {
            return;
        };
        let targets = open.borrow_and_update().clone();
        for session in targets {
            let sent = tokio::time::timeout(NOTIFY_TIMEOUT, notify(&note, &session)).await;
            if let Ok(Err(_)) = sent {
                sessions.send_modify(|open| open.retain(|s| !s.peer.is_transport_closed()));
            }
        }
    }
}

/// Sends one notification to one session, as [`forward`] says.
#[allow(deprecated)] // MCP logging: deprecated by SEP-2577, still what 2025-11-25 has.
async fn notify(note: &HostEvent, session: &Session) -> Result<(), rmcp::service::ServiceError> {
    use rmcp::model::{LoggingLevel, LoggingMessageNotificationParam};
    let peer = &session.peer;
    if let Some(stream) = &session.listen {
        // A stream carries the changes its filter accepted (the other is refused).
        if let HostEvent::RegistryChanged { .. } | HostEvent::ExtensionExited { .. } = note {
            let _ = stream.notify_tool_list_changed().await;
            let _ = stream.notify_prompt_list_changed().await;
        }
        return Ok(());
    }
    match note {
        HostEvent::Notify { extension, frame } => {
            let level = log_level(frame);
            if level_rank(&level) < session.log_level.load(Ordering::Relaxed) {
                return Ok(());
            }
            let message = LoggingMessageNotificationParam::new(level, json!(frame.message))
                .with_logger(extension.clone());
            peer.notify_logging_message(message).await
        }
        HostEvent::RegistryChanged { .. } | HostEvent::ExtensionExited { .. } => {
            peer.notify_tool_list_changed().await?;
            peer.notify_prompt_list_changed().await
        }
        HostEvent::ExtensionRestarted {
            extension,
            attempt,
            delay_ms,
            after,
        } => {
            let level = LoggingLevel::Warning;
            if level_rank(&level) < session.log_level.load(Ordering::Relaxed) {
                return Ok(());
            }
            let text = format!(
                "extension {extension} started again (restart {attempt}, after {delay_ms} ms) \
                 after: {after}; its tools come back as it registers them"
            );
            let message =
                LoggingMessageNotificationParam::new(level, json!(text)).with_logger("zot");
            peer.notify_logging_message(message).await
        }
        HostEvent::NotificationsDropped { count } => {
            let text = format!("{count} notifications from extensions were dropped");
            let message = LoggingMessageNotificationParam::new(LoggingLevel::Warning, json!(text))
                .with_logger("zot");
            peer.notify_logging_message(message).await
        }
        HostEvent::OpenPanel { .. }
        | HostEvent::PanelRender { .. }
        | HostEvent::PanelClose { .. }
        | HostEvent::ClearNotes { .. }
        | HostEvent::Submit { .. }
        | HostEvent::SubmitSlash { .. } => Ok(()),
    }
}
