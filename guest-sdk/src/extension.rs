//! [`Extension`]: registrations, the handshake and the dispatch loop.

use crate::context::{Ctx, HostInfo};
use crate::io::{self, Transport};
use crate::reply::{Event, Response, ToolCallEvent, ToolOutput, Verdict};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::panic::{catch_unwind, AssertUnwindSafe};
use zot_protocol::{ExtFrame, HostFrame, PanelKey, PanelResize};

/// A handler of a `&T`, answering `R`.
type On<T, R = ()> = Box<dyn FnMut(&mut Ctx, &T) -> R>;
type ToolFn = Box<dyn FnMut(&mut Ctx, Value) -> ToolOutput>;
type HookFn = Box<dyn FnMut(&mut Ctx)>;

/// A zot extension: its commands, tools, event handlers and interceptors.
///
/// Build it with the methods below and call [`Extension::run`] from `main`. Built
/// natively it is a classic stdio extension; built with `--target wasm32-wasip2` the
/// same `main` is a WASI command component, which the host runs sandboxed with the same
/// frames on its stdin and stdout.
///
/// Handlers run one at a time, in the order the host's frames arrive, on both targets.
pub struct Extension {
    name: String,
    version: String,
    commands: Vec<(zot_protocol::RegisterCommand, On<str, Response>)>,
    tools: Vec<(zot_protocol::RegisterTool, ToolFn)>,
    events: Vec<(String, On<Event>)>,
    intercept_tool_call: Option<On<ToolCallEvent, Verdict>>,
    intercept_turn_start: Option<On<u64, Verdict>>,
    intercept_assistant_message: Option<On<str, Verdict>>,
    on_panel_key: Option<On<PanelKey>>,
    on_panel_resize: Option<On<PanelResize>>,
    on_panel_close: Option<On<str>>,
    on_start: Option<HookFn>,
    on_shutdown: Option<HookFn>,
}

impl Extension {
    /// An extension named `name` (the manifest's name) at `version`.
    pub fn new(name: impl Into<String>, version: impl Into<String>) -> Self {
        Extension {
            name: name.into(),
            version: version.into(),
            commands: Vec::new(),
            tools: Vec::new(),
            events: Vec::new(),
            intercept_tool_call: None,
            intercept_turn_start: None,
            intercept_assistant_message: None,
            on_panel_key: None,
            on_panel_resize: None,
            on_panel_close: None,
            on_start: None,
            on_shutdown: None,
        }
    }

    /// A slash command `/name`. The handler gets the text after the name, trimmed, and
    /// returns a [`Response`] or a `Result` of one (an `Err` is shown as an error).
    pub fn command<F, R>(mut self, name: &str, description: &str, mut handler: F) -> Self
    where
        F: FnMut(&mut Ctx, &str) -> R + 'static,
        R: Into<Response>,
    {
        let frame = zot_protocol::RegisterCommand {
            name: name.into(),
            description: description.into(),
            extra: Default::default(),
        };
        self.commands.retain(|(c, _)| c.name != name);
        self.commands
            .push((frame, Box::new(move |ctx, args| handler(ctx, args).into())));
        self
    }

    /// An LLM tool with a literal JSON Schema (an object) for its arguments. The handler
    /// gets the arguments as JSON and returns anything that converts into a
    /// [`ToolOutput`]: a `String`, a `ToolOutput`, or a `Result` of either (an `Err`
    /// becomes an error result with its text).
    ///
    /// # Panics
    /// If `schema` is not a JSON object (the host would refuse the tool).
    pub fn tool<F, R>(
        mut self,
        name: &str,
        description: &str,
        schema: Value,
        mut handler: F,
    ) -> Self
    where
        F: FnMut(&mut Ctx, Value) -> R + 'static,
        R: Into<ToolOutput>,
    {
        assert!(
            schema.is_object(),
            "the schema of tool {name:?} must be a JSON object"
        );
        let frame = zot_protocol::RegisterTool {
            name: name.into(),
            description: description.into(),
            schema,
            extra: Default::default(),
        };
        self.tools.retain(|(t, _)| t.name != name);
        self.tools
            .push((frame, Box::new(move |ctx, args| handler(ctx, args).into())));
        self
    }

    /// An LLM tool whose arguments are `A`: the schema is derived from `A`
    /// (`#[derive(Deserialize, JsonSchema)]`, doc comments become descriptions) and
    /// arguments that do not fit it are answered with an error result naming the problem.
    pub fn tool_typed<A, F, R>(self, name: &str, description: &str, mut handler: F) -> Self
    where
        A: DeserializeOwned + JsonSchema,
        F: FnMut(&mut Ctx, A) -> R + 'static,
        R: Into<ToolOutput>,
    {
        let tool = name.to_string();
        self.tool(
            name,
            description,
            schema_of::<A>(),
            move |ctx, args| match serde_json::from_value::<A>(args) {
                Ok(args) => handler(ctx, args).into(),
                Err(e) => ToolOutput::error(format!("invalid arguments for {tool}: {e}")),
            },
        )
    }

    /// Observes a lifecycle event (`session_start`, `turn_start`, `turn_end`,
    /// `tool_call`, `assistant_message`). Several handlers may observe one event.
    pub fn on<F>(mut self, event: &str, handler: F) -> Self
    where
        F: FnMut(&mut Ctx, &Event) + 'static,
    {
        self.events.push((event.into(), Box::new(handler)));
        self
    }

    /// Decides on every tool call before it runs: allow, block with a reason, or rewrite
    /// its arguments.
    pub fn intercept_tool_call<F>(mut self, handler: F) -> Self
    where
        F: FnMut(&mut Ctx, &ToolCallEvent) -> Verdict + 'static,
    {
        self.intercept_tool_call = Some(Box::new(handler));
        self
    }

    /// Decides on every turn (its `step`) before it starts: allow or block.
    pub fn intercept_turn_start<F>(mut self, mut handler: F) -> Self
    where
        F: FnMut(&mut Ctx, u64) -> Verdict + 'static,
    {
        self.intercept_turn_start = Some(Box::new(move |ctx, step| handler(ctx, *step)));
        self
    }

    /// Decides on every assistant message: allow, block, or replace its text.
    pub fn intercept_assistant_message<F>(mut self, handler: F) -> Self
    where
        F: FnMut(&mut Ctx, &str) -> Verdict + 'static,
    {
        self.intercept_assistant_message = Some(Box::new(handler));
        self
    }

    /// A key pressed in one of this extension's panels.
    pub fn on_panel_key<F>(mut self, handler: F) -> Self
    where
        F: FnMut(&mut Ctx, &PanelKey) + 'static,
    {
        self.on_panel_key = Some(Box::new(handler));
        self
    }

    /// One of this extension's panels was resized.
    pub fn on_panel_resize<F>(mut self, handler: F) -> Self
    where
        F: FnMut(&mut Ctx, &PanelResize) + 'static,
    {
        self.on_panel_resize = Some(Box::new(handler));
        self
    }

    /// The user closed one of this extension's panels (its id).
    pub fn on_panel_close<F>(mut self, handler: F) -> Self
    where
        F: FnMut(&mut Ctx, &str) + 'static,
    {
        self.on_panel_close = Some(Box::new(handler));
        self
    }

    /// Runs once `hello_ack` arrived ([`Ctx::host`] is filled), before any other handler.
    pub fn on_start<F: FnMut(&mut Ctx) + 'static>(mut self, handler: F) -> Self {
        self.on_start = Some(Box::new(handler));
        self
    }

    /// Runs when the host asks the extension to stop, before `shutdown_ack`. Keep it
    /// short: the host stops waiting after 2 s.
    pub fn on_shutdown<F: FnMut(&mut Ctx) + 'static>(mut self, handler: F) -> Self {
        self.on_shutdown = Some(Box::new(handler));
        self
    }

    /// Speaks the protocol over stdin/stdout until the host says `shutdown` or closes
    /// the connection.
    pub fn run(self) {
        self.serve(io::stdio());
    }

    /// The handshake, then one frame at a time.
    pub(crate) fn serve(mut self, transport: Box<dyn Transport>) {
        let mut ctx = Ctx::new(transport);
        for frame in self.announcement() {
            ctx.send(frame);
        }
        while let Some(line) = ctx.next_line() {
            match HostFrame::decode(&line) {
                Ok(HostFrame::Shutdown(_)) => {
                    if let Some(hook) = self.on_shutdown.as_mut() {
                        guarded(&mut ctx, "on_shutdown", (), |ctx| hook(ctx));
                    }
                    ctx.send(ExtFrame::ShutdownAck(Default::default()));
                    return;
                }
                Ok(frame) => self.dispatch(&mut ctx, frame),
                Err(e) => ctx.log(format_args!("zot-ext: skipped a line from the host: {e}")),
            }
            if ctx.is_closed() {
                return;
            }
        }
    }

    /// `hello`, the registrations, `subscribe` and `ready`, in that order.
    fn announcement(&self) -> Vec<ExtFrame> {
        let mut events: Vec<String> = Vec::new();
        for (event, _) in &self.events {
            if !events.contains(event) {
                events.push(event.clone());
            }
        }
        let intercept: Vec<String> = [
            ("tool_call", self.intercept_tool_call.is_some()),
            ("turn_start", self.intercept_turn_start.is_some()),
            (
                "assistant_message",
                self.intercept_assistant_message.is_some(),
            ),
        ]
        .into_iter()
        .filter(|(_, on)| *on)
        .map(|(event, _)| event.to_string())
        .collect();
        let panels = self.on_panel_key.is_some()
            || self.on_panel_close.is_some()
            || self.on_panel_resize.is_some();
        let capabilities = [
            ("commands", !self.commands.is_empty()),
            ("tools", !self.tools.is_empty()),
            ("events", !events.is_empty() || !intercept.is_empty()),
            ("panels", panels),
        ]
        .into_iter()
        .filter(|(_, on)| *on)
        .map(|(c, _)| c.to_string())
        .collect();

        let mut frames = vec![ExtFrame::Hello(zot_protocol::Hello {
            name: self.name.clone(),
            version: self.version.clone(),
            capabilities,
            extra: Default::default(),
        })];
        frames.extend(
            self.commands
                .iter()
                .map(|(c, _)| ExtFrame::RegisterCommand(c.clone())),
        );
        frames.extend(
            self.tools
                .iter()
                .map(|(t, _)| ExtFrame::RegisterTool(t.clone())),
        );
        if !events.is_empty() || !intercept.is_empty() {
            frames.push(ExtFrame::Subscribe(zot_protocol::Subscribe {
                events,
                intercept,
                extra: Default::default(),
            }));
        }
        frames.push(ExtFrame::Ready(Default::default()));
        frames
    }

    fn dispatch(&mut self, ctx: &mut Ctx, frame: HostFrame) {
        match frame {
            HostFrame::HelloAck(ack) => {
                ctx.set_host(HostInfo {
                    protocol_version: ack.protocol_version,
                    zot_version: ack.zot_version,
                    provider: ack.provider,
                    model: ack.model,
                    cwd: ack.cwd,
                    extension_dir: ack.extension_dir,
                    data_dir: ack.data_dir,
                });
                if let Some(hook) = self.on_start.as_mut() {
                    guarded(ctx, "on_start", (), |ctx| hook(ctx));
                }
            }
            HostFrame::CommandInvoked(call) => {
                let response = match self.commands.iter_mut().find(|(c, _)| c.name == call.name) {
                    Some((_, handler)) => {
                        let failed = Response::error(format!("/{} failed", call.name));
                        guarded(ctx, &call.name, failed, |ctx| handler(ctx, &call.args))
                    }
                    None => Response::error(format!("{}: no command /{}", self.name, call.name)),
                };
                ctx.send(ExtFrame::CommandResponse(response.into_frame(call.id)));
            }
            HostFrame::ToolCall(call) => {
                if !ctx.begin_call(&call.id) {
                    ctx.log(format_args!(
                        "zot-ext: tool call {} ({}) was cancelled before it started",
                        call.id, call.name
                    ));
                    return;
                }
                let output = match self.tools.iter_mut().find(|(t, _)| t.name == call.name) {
                    Some((_, handler)) => {
                        let failed = ToolOutput::error(format!("tool {} failed", call.name));
                        guarded(ctx, &call.name, failed, |ctx| handler(ctx, call.args))
                    }
                    None => ToolOutput::error(format!("{}: no tool {}", self.name, call.name)),
                };
                if ctx.end_call() {
                    ctx.log(format_args!(
                        "zot-ext: tool call {} ({}) was cancelled; its result is dropped",
                        call.id, call.name
                    ));
                } else {
                    ctx.send(ExtFrame::ToolResult(output.into_frame(call.id)));
                }
            }
            HostFrame::ToolCancel(cancel) => ctx.forget_cancel(&cancel.id),
            HostFrame::Event(event) => {
                let event = Event {
                    name: event.event,
                    fields: event.fields,
                };
                for (_, handler) in self.events.iter_mut().filter(|(e, _)| *e == event.name) {
                    guarded(ctx, &event.name, (), |ctx| handler(ctx, &event));
                }
            }
            HostFrame::EventIntercept(event) => {
                let id = event.id.unwrap_or_default();
                let verdict = self.intercept(ctx, &event.event, &event.fields);
                ctx.send(ExtFrame::EventInterceptResponse(verdict.into_frame(id)));
            }
            HostFrame::PanelKey(key) => {
                if let Some(handler) = self.on_panel_key.as_mut() {
                    guarded(ctx, "panel_key", (), |ctx| handler(ctx, &key));
                }
            }
            HostFrame::PanelResize(resize) => {
                if let Some(handler) = self.on_panel_resize.as_mut() {
                    guarded(ctx, "panel_resize", (), |ctx| handler(ctx, &resize));
                }
            }
            HostFrame::PanelClose(close) => {
                if let Some(handler) = self.on_panel_close.as_mut() {
                    guarded(ctx, "panel_close", (), |ctx| handler(ctx, &close.panel_id));
                }
            }
            // The answer to a `call_tool` this SDK never sends; `shutdown` ends `serve`.
            HostFrame::ToolResult(_) | HostFrame::Shutdown(_) => {}
        }
    }

    fn intercept(
        &mut self,
        ctx: &mut Ctx,
        event: &str,
        fields: &serde_json::Map<String, Value>,
    ) -> Verdict {
        match event {
            "tool_call" => match self.intercept_tool_call.as_mut() {
                Some(handler) => {
                    let call = ToolCallEvent::from_fields(fields);
                    guarded(ctx, event, Verdict::Allow, |ctx| handler(ctx, &call))
                }
                None => Verdict::Allow,
            },
            "turn_start" => match self.intercept_turn_start.as_mut() {
                Some(handler) => {
                    let step = fields.get("step").and_then(Value::as_u64).unwrap_or(0);
                    guarded(ctx, event, Verdict::Allow, |ctx| handler(ctx, &step))
                }
                None => Verdict::Allow,
            },
            "assistant_message" => match self.intercept_assistant_message.as_mut() {
                Some(handler) => {
                    let text = fields.get("text").and_then(Value::as_str).unwrap_or("");
                    guarded(ctx, event, Verdict::Allow, |ctx| handler(ctx, text))
                }
                None => Verdict::Allow,
            },
            _ => Verdict::Allow,
        }
    }
}

/// Runs a handler; a panic is logged and answered with `fallback` (natively; in the
/// sandbox a panic aborts the component, and the host reports its exit).
fn guarded<T>(ctx: &mut Ctx, what: &str, fallback: T, handler: impl FnOnce(&mut Ctx) -> T) -> T {
    match catch_unwind(AssertUnwindSafe(|| handler(ctx))) {
        Ok(value) => value,
        Err(panic) => {
            let message = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "a panic".into());
            ctx.log(format_args!(
                "zot-ext: handler for {what} panicked: {message}"
            ));
            fallback
        }
    }
}

/// `A`'s JSON Schema as a tool schema: self-contained (nested types inlined, no `$ref`,
/// which not every model provider resolves) and without the `$schema` marker.
pub(crate) fn schema_of<A: JsonSchema>() -> Value {
    let mut schema = schemars::generate::SchemaSettings::draft2020_12()
        .with(|s| s.inline_subschemas = true)
        .into_generator()
        .into_root_schema_for::<A>()
        .to_value();
    if let Some(object) = schema.as_object_mut() {
        object.remove("$schema");
    }
    schema
}
