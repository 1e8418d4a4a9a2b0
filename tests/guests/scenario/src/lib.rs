//! The test guests' behaviour, transport-free: `start` and `handle` take frames as JSON
//! text and send frames through `out` (one call per frame, no trailing newline). The
//! `reactor` crate wires `out` to `host.send`, the `command` crate to stdout.
//!
//! No threads (wasm32-wasip2 has none): everything happens inside the call that caused it.
//!
//! # start
//! If `/data/start-mode` holds `spin`, `start` never returns; `trap`, it panics. Otherwise
//! it sends `hello` (name `guest`, version `0.1.0`), `register_command` `guest-cmd`,
//! `register_tool` for every tool in [`TOOLS`] (schema `{"type":"object"}`; each name
//! after the text of `/data/tool-prefix`, if that file exists, so several copies of the
//! guest in one host own tools of their own: the soak's), `subscribe`
//! to all five events and intercept `tool_call`, `turn_start`, `assistant_message` (not
//! [`Scenario::plain`]), and `ready`.
//!
//! # handle
//! * `hello_ack` → kept ([`Scenario::hello_ack`]) and notify `hello_ack <frame json>`
//! * `command_invoked` `guest-cmd`: args `prompt X`, `insert X`, `panel` (open_panel),
//!   `noop`, `error X` (noop + error) pick the action; anything else → display the args.
//!   Another command name → noop with an error.
//! * `tool_call` → the tools below (the prefix taken off); an unknown tool → `is_error`
//! * `tool_result` (the answer to our `call_tool`) → notify `tool_result <frame json>`
//! * `event` → notify `event <frame json>`
//! * `event_intercept`: `tool_call` of `bash` whose `command` contains `rm -rf` → block,
//!   reason `guest blocked rm -rf`; of `rewrite_me` → `modified_args` = args +
//!   `{"guest":true}`; `assistant_message` → `replace_text` = text with `secret` replaced by
//!   `[redacted]`; anything else (`turn_start` …) → allow
//! * `panel_key`, `panel_resize`, `panel_close`, `tool_cancel` → notify `<type> <frame json>`
//! * `shutdown` → `shutdown_ack` ([`Scenario::is_shut_down`] becomes true)
//! * anything else (unknown type, malformed JSON) → ignored
//!
//! # Tools (arguments in `args`)
//! | tool | args | result text |
//! |---|---|---|
//! | `echo` | any | the JSON of the args |
//! | `fs_read` | `path` | the file's content; else `is_error` with the error (no errno) |
//! | `fs_write` | `path`, `text` | `wrote <n> bytes`; else `is_error` |
//! | `fs_symlink` | `target`, `link` | `linked`; else `is_error` |
//! | `fs_list` | `path` | a JSON array of the entry names, sorted; else `is_error` |
//! | `env` | `name` | the variable's value; else `is_error` `not set` |
//! | `spin` | `tell` | never returns; with `tell: true`, notifies `spinning` first |
//! | `alloc` | `mb` | allocates and writes `mb` MiB: `{"mb":…,"bytes":…}` |
//! | `recurse` | `depth` | non-tail recursion `depth` deep: `{"depth":…}` |
//! | `flood` | `count` | first `count` notifies `flood <i>`, then `{"sent":…}` |
//! | `big` | `bytes` | [`payload`]`(bytes)` |
//! | `big_in` | `data` | `{"len":…,"fnv1a":"<16 hex digits>"}` of `data` |
//! | `frames` | — | first one of every one-way frame (see [`Scenario`]), then `frames sent` |
//! | `http_get` | `url` | `{"status":…,"body":…}` of a GET through `wasi:http`; else `is_error` with `<url>: <error code>`; natively always `is_error` (sandbox only) |
//! | `fields_flood` | `count`, `bytes` | creates `count` `wasi:http` fields each holding one value of `bytes` bytes and keeps them all (until the guest ends): `{"fields":…}`; else `is_error` `fields <i>: <error>` |
//! | `open_many` | `count` | opens `/data/open_many` (created) `count` times, keeping every handle: `{"opened":…}`; else `is_error` `open <i>: <error>` |
//! | `http_pending` | `url`, `count` | starts `count` GETs of `url` through `wasi:http` without waiting for them, keeps them, waits 500 ms, then `{"started":…,"failed":…,"first_error":…}` (`failed`: those already answered with an error) |
//! | `fill_data` | `mb` | writes `/data/fill` in 1 MiB pieces until `mb` MiB or an error: `{"written_mb":…,"error":…}` (`error` null when all were written) |
//! | `poll_spin` | `polls` | `polls` times (at least once) a `wasi:io/poll.poll` of stdin and a 1 ms timer together, then never returns; natively only the latter |
//! | `disk_attack` | `mode`, `amount` | a `/data` quota attack (`big`, `unlinked`, `sparse`, `deep`, `deep_unlinked`: MiB; `files`, `dirs`, `many_unlinked`: entries), see `disk.rs`: `{"done":…,"error":…}` |
//! | `listings` | `path`, `count` | opens `count` listings of `path` at once, reading one entry of each: `{"opened":…,"first":…}` |
//! | `unanswered` | — | none: the call is read and never answered (the guest reads on) |
//! | `sockets` | `port` | a TCP connection to `127.0.0.1:port`, a UDP bind and a lookup of `localhost`, through `wasi:sockets` (natively `std::net`): `{"tcp connect":…,"udp bind":…,"name lookup":…}`, each `ok` or `denied <error>` |

mod disk;

use serde_json::{json, Map, Value};
use std::hint::black_box;
use zot_protocol::{
    CommandResponse, Event, EventInterceptResponse, ExtFrame, HelloAck, HostFrame, Notify, Panel,
    RegisterCommand, RegisterTool, Submit, Subscribe, ToolCall, ToolResult, EVENTS,
};

/// The extension's name in `hello`.
pub const NAME: &str = "guest";
/// The extension's version in `hello`.
pub const VERSION: &str = "0.1.0";
/// The one slash command.
pub const COMMAND: &str = "guest-cmd";
/// Every tool, in registration order.
pub const TOOLS: &[&str] = &[
    "echo",
    "fs_read",
    "fs_write",
    "fs_symlink",
    "fs_list",
    "env",
    "spin",
    "alloc",
    "recurse",
    "flood",
    "big",
    "big_in",
    "frames",
    "http_get",
    "poll_spin",
    "fields_flood",
    "open_many",
    "http_pending",
    "fill_data",
    "disk_attack",
    "listings",
    "sockets",
    "unanswered",
];
/// Intercepted events.
pub const INTERCEPT: &[&str] = &["tool_call", "turn_start", "assistant_message"];
/// Read by `start`: `spin` → loop forever, `trap` → panic.
pub const START_MODE_FILE: &str = "/data/start-mode";
/// Read by `start`: put before each tool's name.
pub const TOOL_PREFIX_FILE: &str = "/data/tool-prefix";

/// The behaviour of the test extension; see the crate docs.
#[derive(Debug, Default)]
pub struct Scenario {
    hello_ack: Option<HelloAck>,
    shut_down: bool,
    /// Sends no `subscribe`: no event or interception reaches it.
    plain: bool,
    /// Before each tool's name ([`TOOL_PREFIX_FILE`]).
    prefix: String,
}

impl Scenario {
    pub fn new() -> Self {
        Self::default()
    }

    /// A scenario that subscribes to nothing and intercepts nothing: only its tools and
    /// its command (the benchmarks' plain echo extension).
    pub fn plain() -> Self {
        Scenario {
            plain: true,
            ..Self::default()
        }
    }

    /// The `hello_ack` the host sent, once it has.
    pub fn hello_ack(&self) -> Option<&HelloAck> {
        self.hello_ack.as_ref()
    }

    /// Whether `shutdown` was received (and `shutdown_ack` sent).
    pub fn is_shut_down(&self) -> bool {
        self.shut_down
    }

    /// Sends the opening frames: hello, registrations, subscribe, ready.
    pub fn start(&mut self, out: &mut dyn FnMut(String)) {
        match std::fs::read_to_string(START_MODE_FILE) {
            Ok(mode) if mode.trim() == "spin" => spin(),
            Ok(mode) if mode.trim() == "trap" => panic!("guest: start-mode trap"),
            _ => {}
        }
        self.prefix = std::fs::read_to_string(TOOL_PREFIX_FILE)
            .map(|p| p.trim().to_string())
            .unwrap_or_default();
        send(out, &zot_test_fixtures::hello(NAME, VERSION));
        send(
            out,
            &ExtFrame::RegisterCommand(RegisterCommand {
                name: COMMAND.into(),
                description: "guest command".into(),
                ..Default::default()
            }),
        );
        for tool in TOOLS {
            send(
                out,
                &ExtFrame::RegisterTool(RegisterTool {
                    name: format!("{}{tool}", self.prefix),
                    description: format!("guest tool {tool}"),
                    schema: json!({"type": "object"}),
                    ..Default::default()
                }),
            );
        }
        if !self.plain {
            send(
                out,
                &ExtFrame::Subscribe(Subscribe {
                    events: EVENTS.iter().map(|e| e.to_string()).collect(),
                    intercept: INTERCEPT.iter().map(|e| e.to_string()).collect(),
                    ..Default::default()
                }),
            );
        }
        send(out, &ExtFrame::Ready(Default::default()));
    }

    /// Handles one host → extension frame.
    pub fn handle(&mut self, frame: &str, out: &mut dyn FnMut(String)) {
        let Ok(frame) = HostFrame::decode(frame.as_bytes()) else {
            return; // unknown or malformed: ignored
        };
        match frame {
            HostFrame::HelloAck(ref ack) => {
                self.hello_ack = Some(ack.clone());
                report(out, "hello_ack", &frame);
            }
            HostFrame::CommandInvoked(c) => command(out, c.id, &c.name, &c.args),
            HostFrame::ToolCall(mut call) => {
                if let Some(name) = call.name.strip_prefix(&self.prefix) {
                    call.name = name.to_string();
                }
                tool(out, call)
            }
            HostFrame::ToolResult(_) => report(out, "tool_result", &frame),
            HostFrame::Event(_) => report(out, "event", &frame),
            HostFrame::EventIntercept(ev) => intercept(out, ev),
            HostFrame::PanelKey(_)
            | HostFrame::PanelResize(_)
            | HostFrame::PanelClose(_)
            | HostFrame::ToolCancel(_) => report(out, frame.type_name(), &frame),
            HostFrame::Shutdown(_) => {
                self.shut_down = true;
                send(out, &ExtFrame::ShutdownAck(Default::default()));
            }
        }
    }
}

pub use zot_test_fixtures::{fnv1a, payload};

/// Serialises a frame into a buffer sized up front, so a large frame is not copied
/// through ever-doubling buffers (a component has 64 MiB by default).
fn send(out: &mut dyn FnMut(String), frame: &ExtFrame) {
    let hint = match frame {
        ExtFrame::ToolResult(r) => r
            .content
            .iter()
            .map(|b| b.get("text").and_then(Value::as_str).map_or(64, str::len) + 64)
            .sum::<usize>(),
        _ => 0,
    };
    let mut buf = Vec::with_capacity(hint + 256);
    serde_json::to_writer(&mut buf, frame).expect("a frame serialises");
    // serde_json writes valid UTF-8.
    out(String::from_utf8(buf).expect("serde_json writes UTF-8"));
}

fn notify(out: &mut dyn FnMut(String), level: &str, message: String) {
    send(
        out,
        &ExtFrame::Notify(Notify {
            level: level.into(),
            message,
            ..Default::default()
        }),
    );
}

/// notify `<what> <the frame's JSON>`.
fn report(out: &mut dyn FnMut(String), what: &str, frame: &HostFrame) {
    let json = serde_json::to_string(frame).unwrap_or_default();
    notify(out, "info", format!("{what} {json}"));
}

fn command(out: &mut dyn FnMut(String), id: String, name: &str, args: &str) {
    let r = if name == COMMAND {
        let panel = Panel {
            id: "guest-panel".into(),
            title: "Guest panel".into(),
            lines: vec!["line one".into(), "line two".into()],
            footer: "q to close".into(),
            ..Default::default()
        };
        zot_test_fixtures::command_response(id, args, panel)
    } else {
        CommandResponse {
            id,
            action: "noop".into(),
            error: Some(format!("guest: no command {name}")),
            ..Default::default()
        }
    };
    send(out, &ExtFrame::CommandResponse(r));
}

fn text_result(id: String, text: String) -> ToolResult {
    ToolResult {
        id,
        content: vec![json!({"type": "text", "text": text})],
        ..Default::default()
    }
}

fn str_arg<'a>(args: &'a Value, name: &str) -> &'a str {
    args.get(name).and_then(Value::as_str).unwrap_or_default()
}

fn u64_arg(args: &Value, name: &str) -> u64 {
    args.get(name).and_then(Value::as_u64).unwrap_or_default()
}

/// An I/O error's text without the trailing ` (os error N)`: errno numbers differ between
/// wasi-libc and the host's libc, the descriptions do not, so native and component
/// transcripts stay comparable.
fn io_error(e: std::io::Error) -> String {
    let text = e.to_string();
    match (e.raw_os_error(), text.rfind(" (os error ")) {
        (Some(_), Some(at)) => text[..at].to_string(),
        _ => text,
    }
}

/// `Ok(text)` → a text result, `Err(text)` → an error result.
fn io_result(id: String, r: Result<String, String>) -> ToolResult {
    match r {
        Ok(text) => text_result(id, text),
        Err(e) => ToolResult::error(id, e),
    }
}

fn tool(out: &mut dyn FnMut(String), call: ToolCall) {
    let ToolCall { id, name, args, .. } = call;
    let args = if args.is_object() { args } else { json!({}) };
    let result = match name.as_str() {
        "echo" => text_result(id, args.to_string()),
        "fs_read" => io_result(
            id,
            std::fs::read_to_string(str_arg(&args, "path")).map_err(io_error),
        ),
        "fs_write" => {
            let text = str_arg(&args, "text");
            io_result(
                id,
                std::fs::write(str_arg(&args, "path"), text)
                    .map(|()| format!("wrote {} bytes", text.len()))
                    .map_err(io_error),
            )
        }
        "fs_symlink" => io_result(
            id,
            symlink(str_arg(&args, "target"), str_arg(&args, "link"))
                .map(|()| "linked".to_string())
                .map_err(io_error),
        ),
        "fs_list" => io_result(id, list(str_arg(&args, "path")).map_err(io_error)),
        "env" => match std::env::var(str_arg(&args, "name")) {
            Ok(v) => text_result(id, v),
            Err(_) => ToolResult::error(id, "not set"),
        },
        "spin" => {
            if args["tell"] == true {
                notify(out, "info", "spinning".into());
            }
            spin()
        }
        "alloc" => {
            let mb = u64_arg(&args, "mb");
            let bytes = alloc(mb as usize * 1024 * 1024);
            text_result(id, json!({"mb": mb, "bytes": bytes}).to_string())
        }
        "recurse" => {
            let depth = recurse(black_box(u64_arg(&args, "depth")));
            text_result(id, json!({ "depth": depth }).to_string())
        }
        "flood" => {
            let count = u64_arg(&args, "count");
            for i in 0..count {
                notify(out, "info", format!("flood {i}"));
            }
            text_result(id, json!({ "sent": count }).to_string())
        }
        "big" => text_result(id, payload(u64_arg(&args, "bytes") as usize)),
        "big_in" => {
            let data = str_arg(&args, "data");
            let hash = format!("{:016x}", fnv1a(data.as_bytes()));
            text_result(id, json!({"len": data.len(), "fnv1a": hash}).to_string())
        }
        "frames" => {
            frames(out);
            text_result(id, "frames sent".into())
        }
        "http_get" => {
            let url = str_arg(&args, "url");
            match http_get(url) {
                Ok((status, body)) => {
                    text_result(id, json!({"status": status, "body": body}).to_string())
                }
                Err(e) => ToolResult::error(id, format!("{url}: {e}")),
            }
        }
        "poll_spin" => poll_spin(u64_arg(&args, "polls").max(1)),
        "fields_flood" => match fields_flood(u64_arg(&args, "count"), u64_arg(&args, "bytes")) {
            Ok(n) => text_result(id, json!({ "fields": n }).to_string()),
            Err(e) => ToolResult::error(id, e),
        },
        "open_many" => match open_many(u64_arg(&args, "count")) {
            Ok(n) => text_result(id, json!({ "opened": n }).to_string()),
            Err(e) => ToolResult::error(id, e),
        },
        "http_pending" => {
            let report = http_pending(str_arg(&args, "url"), u64_arg(&args, "count"));
            text_result(id, report.to_string())
        }
        "fill_data" => {
            let (written, error) = fill_data(u64_arg(&args, "mb"));
            text_result(
                id,
                json!({"written_mb": written, "error": error}).to_string(),
            )
        }
        "disk_attack" => text_result(
            id,
            disk::attack(str_arg(&args, "mode"), u64_arg(&args, "amount")).to_string(),
        ),
        "listings" => text_result(
            id,
            disk::listings(str_arg(&args, "path"), u64_arg(&args, "count")).to_string(),
        ),
        "sockets" => text_result(id, sockets(u64_arg(&args, "port") as u16).to_string()),
        "unanswered" => return,
        other => ToolResult::error(id, format!("guest: no tool {other}")),
    };
    send(out, &ExtFrame::ToolResult(result));
}

/// A GET of `url` (`http://` or `https://`) through `wasi:http/outgoing-handler`:
/// (status, body as text).
#[cfg(all(target_os = "wasi", target_env = "p2"))]
fn http_get(url: &str) -> Result<(u16, String), String> {
    use wasi::http::outgoing_handler;
    use wasi::http::types::{Fields, IncomingBody, Method, OutgoingRequest, Scheme};
    use wasi::io::streams::StreamError;

    let (scheme, rest) = if let Some(rest) = url.strip_prefix("http://") {
        (Scheme::Http, rest)
    } else if let Some(rest) = url.strip_prefix("https://") {
        (Scheme::Https, rest)
    } else {
        return Err("only http:// and https:// URLs".into());
    };
    let (authority, path) = match rest.find('/') {
        Some(at) => (&rest[..at], &rest[at..]),
        None => (rest, "/"),
    };
    let request = OutgoingRequest::new(Fields::new());
    request
        .set_method(&Method::Get)
        .map_err(|()| "bad method")?;
    request
        .set_scheme(Some(&scheme))
        .map_err(|()| "bad scheme")?;
    request
        .set_authority(Some(authority))
        .map_err(|()| "bad authority")?;
    request
        .set_path_with_query(Some(path))
        .map_err(|()| "bad path")?;
    let future = outgoing_handler::handle(request, None).map_err(|e| format!("{e:?}"))?;
    let response = loop {
        match future.get() {
            Some(r) => break r,
            None => future.subscribe().block(),
        }
    };
    let response = response
        .map_err(|()| "the response was taken twice".to_string())?
        .map_err(|e| format!("{e:?}"))?;
    let status = response.status();
    let body = response.consume().map_err(|()| "no body")?;
    let mut bytes = Vec::new();
    {
        let stream = body.stream().map_err(|()| "no body stream")?;
        loop {
            match stream.blocking_read(64 * 1024) {
                Ok(chunk) => bytes.extend_from_slice(&chunk),
                Err(StreamError::Closed) => break,
                Err(StreamError::LastOperationFailed(e)) => return Err(e.to_debug_string()),
            }
        }
    }
    drop(IncomingBody::finish(body));
    Ok((status, String::from_utf8_lossy(&bytes).into_owned()))
}

/// Natively there is no sandbox to ask.
#[cfg(not(all(target_os = "wasi", target_env = "p2")))]
fn http_get(_url: &str) -> Result<(u16, String), String> {
    Err("http_get is only available in the sandbox".into())
}

/// `ok`, or `denied <error>`.
fn tried<E>(r: Result<(), E>, error: impl Fn(E) -> String) -> String {
    r.map_or_else(|e| format!("denied {}", error(e)), |()| "ok".into())
}

/// A TCP connection to `127.0.0.1:port`, a UDP bind and a lookup of `localhost`, each
/// through `wasi:sockets` and waited for to its end.
#[cfg(all(target_os = "wasi", target_env = "p2"))]
fn sockets(port: u16) -> Value {
    use wasi::io::poll::Pollable;
    use wasi::sockets::network::{ErrorCode, IpAddressFamily, IpSocketAddress, Ipv4SocketAddress};
    use wasi::sockets::{instance_network, ip_name_lookup};
    use wasi::sockets::{tcp_create_socket, udp_create_socket};

    /// `finish` until it no longer would block.
    fn wait<T>(ready: Pollable, finish: impl Fn() -> Result<T, ErrorCode>) -> Result<T, ErrorCode> {
        loop {
            match finish() {
                Err(ErrorCode::WouldBlock) => ready.block(),
                done => return done,
            }
        }
    }
    let network = instance_network::instance_network();
    let at = |port| {
        IpSocketAddress::Ipv4(Ipv4SocketAddress {
            port,
            address: (127, 0, 0, 1),
        })
    };
    let tcp = || {
        let socket = tcp_create_socket::create_tcp_socket(IpAddressFamily::Ipv4)?;
        socket.start_connect(&network, at(port))?;
        wait(socket.subscribe(), || socket.finish_connect()).map(drop)
    };
    let udp = || {
        let socket = udp_create_socket::create_udp_socket(IpAddressFamily::Ipv4)?;
        socket.start_bind(&network, at(0))?;
        wait(socket.subscribe(), || socket.finish_bind())
    };
    let lookup = || {
        let names = ip_name_lookup::resolve_addresses(&network, "localhost")?;
        wait(names.subscribe(), || names.resolve_next_address()).map(drop)
    };
    let name = |e: ErrorCode| e.name().to_string();
    json!({"tcp connect": tried(tcp(), name), "udp bind": tried(udp(), name),
           "name lookup": tried(lookup(), name)})
}

/// The same through `std::net`, natively (under preview 1, which has no sockets, each
/// fails).
#[cfg(not(all(target_os = "wasi", target_env = "p2")))]
fn sockets(port: u16) -> Value {
    use std::net::{TcpStream, ToSocketAddrs, UdpSocket};
    json!({
        "tcp connect": tried(TcpStream::connect(("127.0.0.1", port)).map(drop), io_error),
        "udp bind": tried(UdpSocket::bind("127.0.0.1:0").map(drop), io_error),
        "name lookup": tried(("localhost", 0).to_socket_addrs().map(drop), io_error),
    })
}

thread_local! {
    /// What `fields_flood`, `open_many` and `http_pending` keep, until the guest ends.
    static KEPT: std::cell::RefCell<Vec<Box<dyn std::any::Any>>> =
        const { std::cell::RefCell::new(Vec::new()) };
}

fn keep(item: impl std::any::Any) {
    KEPT.with(|k| k.borrow_mut().push(Box::new(item)));
}

/// Creates `count` fields of one `bytes`-byte value each, keeping them.
#[cfg(all(target_os = "wasi", target_env = "p2"))]
fn fields_flood(count: u64, bytes: u64) -> Result<u64, String> {
    use wasi::http::types::Fields;
    let value = vec![b'a'; bytes as usize];
    for i in 0..count {
        let fields = Fields::new();
        fields
            .append("x-flood", &value)
            .map_err(|e| format!("fields {i}: {e:?}"))?;
        keep(fields);
    }
    Ok(count)
}

#[cfg(not(all(target_os = "wasi", target_env = "p2")))]
fn fields_flood(_count: u64, _bytes: u64) -> Result<u64, String> {
    Err("fields_flood is only available in the sandbox".into())
}

/// Opens `/data/open_many` `count` times, keeping every handle.
fn open_many(count: u64) -> Result<u64, String> {
    for i in 0..count {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open("/data/open_many")
            .map_err(|e| format!("open {i}: {}", io_error(e)))?;
        keep(file);
    }
    Ok(count)
}

/// Starts `count` GETs of `url` without waiting for them, keeps them, waits 500 ms and
/// counts those already failed.
#[cfg(all(target_os = "wasi", target_env = "p2"))]
fn http_pending(url: &str, count: u64) -> Value {
    use wasi::http::outgoing_handler;
    use wasi::http::types::{Fields, Method, OutgoingRequest, Scheme};
    let rest = url.strip_prefix("http://").unwrap_or(url);
    let (authority, path) = match rest.find('/') {
        Some(at) => (&rest[..at], &rest[at..]),
        None => (rest, "/"),
    };
    let mut futures = Vec::new();
    let mut first_error: Option<String> = None;
    for _ in 0..count {
        let request = OutgoingRequest::new(Fields::new());
        let _ = request.set_method(&Method::Get);
        let _ = request.set_scheme(Some(&Scheme::Http));
        let _ = request.set_authority(Some(authority));
        let _ = request.set_path_with_query(Some(path));
        match outgoing_handler::handle(request, None) {
            Ok(f) => futures.push(f),
            Err(e) => {
                first_error.get_or_insert(format!("{e:?}"));
            }
        }
    }
    wasi::clocks::monotonic_clock::subscribe_duration(500_000_000).block();
    let mut failed = 0;
    for f in &futures {
        // Polled with a timer that is ready at once, so a pending one is not waited for.
        let ready = f.subscribe();
        let now = wasi::clocks::monotonic_clock::subscribe_duration(0);
        wasi::io::poll::poll(&[&ready, &now]);
        if let Some(Ok(Err(e))) = f.get() {
            failed += 1;
            first_error.get_or_insert(format!("{e:?}"));
        }
    }
    let started = futures.len();
    keep(futures);
    json!({"started": started, "failed": failed, "first_error": first_error})
}

#[cfg(not(all(target_os = "wasi", target_env = "p2")))]
fn http_pending(_url: &str, _count: u64) -> Value {
    json!({"first_error": "http_pending is only available in the sandbox"})
}

/// Writes `/data/fill` in 1 MiB pieces until `mb` MiB or an error: how many MiB were
/// written, and the error.
fn fill_data(mb: u64) -> (u64, Option<String>) {
    use std::io::Write;
    let piece = vec![b'z'; 1 << 20];
    let mut file = match std::fs::File::create("/data/fill") {
        Ok(f) => f,
        Err(e) => return (0, Some(io_error(e))),
    };
    for i in 0..mb {
        if let Err(e) = file.write_all(&piece) {
            return (i, Some(io_error(e)));
        }
    }
    (mb, None)
}

/// `polls` times waits on stdin and a 1 ms timer in one `poll` (the timer is ready first
/// unless input arrives), then spins: a guest that is woken while waiting for stdin must
/// still be under a deadline. A command's stdin is the host's frames; a reactor's is
/// empty, so its polls return at once.
#[cfg(all(target_os = "wasi", target_env = "p2"))]
fn poll_spin(polls: u64) -> ! {
    use wasi::clocks::monotonic_clock;
    let stdin = wasi::cli::stdin::get_stdin();
    let input = stdin.subscribe();
    for _ in 0..polls {
        let timer = monotonic_clock::subscribe_duration(1_000_000);
        wasi::io::poll::poll(&[&input, &timer]);
    }
    spin()
}

/// Natively there is no `wasi:io/poll`: it only spins.
#[cfg(not(all(target_os = "wasi", target_env = "p2")))]
fn poll_spin(_polls: u64) -> ! {
    spin()
}

/// Never returns, and cannot be optimised away.
fn spin() -> ! {
    let mut i = 0u64;
    loop {
        i = black_box(i.wrapping_add(1));
    }
}

/// Allocates `bytes` and writes every one of them; returns how many were kept.
fn alloc(bytes: usize) -> usize {
    let mut v: Vec<u8> = Vec::with_capacity(bytes);
    v.resize(bytes, 0xA5);
    black_box(&mut v);
    v.len()
}

/// Non-tail recursion `depth` deep with a 256-byte frame in linear memory; returns the
/// depth reached.
#[inline(never)]
fn recurse(depth: u64) -> u64 {
    if depth == 0 {
        return 0;
    }
    let mut frame = [0u8; 256];
    frame[(depth % 256) as usize] = 1;
    let frame = black_box(frame);
    let below = recurse(black_box(depth - 1));
    // `frame` is opaque: used after the call, so it lives across it.
    black_box(below + 1 + u64::from(frame[1] == 2))
}

fn list(path: &str) -> std::io::Result<String> {
    let mut names = Vec::new();
    for entry in std::fs::read_dir(path)? {
        names.push(entry?.file_name().to_string_lossy().into_owned());
    }
    names.sort();
    Ok(Value::from(names).to_string())
}

/// `std::os::wasi::fs::symlink_path` is unstable (`wasi_ext`), so call wasi-libc's
/// `symlink`, which resolves both paths against the preopened directories as std does.
#[cfg(target_os = "wasi")]
fn symlink(target: &str, link: &str) -> std::io::Result<()> {
    use std::ffi::{c_char, c_int, CString};
    extern "C" {
        fn symlink(target: *const c_char, link: *const c_char) -> c_int;
    }
    let target = CString::new(target).map_err(std::io::Error::other)?;
    let link = CString::new(link).map_err(std::io::Error::other)?;
    // SAFETY: both are valid NUL-terminated strings that outlive the call.
    match unsafe { symlink(target.as_ptr(), link.as_ptr()) } {
        0 => Ok(()),
        _ => Err(std::io::Error::last_os_error()),
    }
}

#[cfg(unix)]
fn symlink(target: &str, link: &str) -> std::io::Result<()> {
    std::os::unix::fs::symlink(target, link)
}

#[cfg(not(any(unix, target_os = "wasi")))]
fn symlink(_target: &str, _link: &str) -> std::io::Result<()> {
    Err(std::io::Error::other("symlinks are not supported here"))
}

fn intercept(out: &mut dyn FnMut(String), ev: Event) {
    let mut r = EventInterceptResponse {
        id: ev.id.clone().unwrap_or_default(),
        ..Default::default()
    };
    let f = &ev.fields;
    match ev.event.as_str() {
        "tool_call" => {
            let name = f.get("tool_name").and_then(Value::as_str).unwrap_or("");
            let args = f.get("tool_args").cloned().unwrap_or_else(|| json!({}));
            if name == "bash" && str_arg(&args, "command").contains("rm -rf") {
                r.block = true;
                r.reason = Some("guest blocked rm -rf".into());
            } else if name == "rewrite_me" {
                let mut m = args.as_object().cloned().unwrap_or_default();
                m.insert("guest".into(), json!(true));
                r.modified_args = Some(Value::Object(m));
            }
        }
        "assistant_message" => {
            let text = f.get("text").and_then(Value::as_str).unwrap_or_default();
            r.replace_text = Some(text.replace("secret", "[redacted]"));
        }
        _ => {} // turn_start and anything else: allow
    }
    send(out, &ExtFrame::EventInterceptResponse(r));
}

/// One of every one-way extension → host frame.
fn frames(out: &mut dyn FnMut(String)) {
    for level in ["info", "success", "warn", "error"] {
        notify(out, level, format!("frames {level}"));
    }
    for frame in zot_test_fixtures::panel_frames("guest-p1") {
        send(out, &frame);
    }
    send(out, &ExtFrame::ClearNotes(Default::default()));
    send(
        out,
        &ExtFrame::Submit(Submit {
            text: "hello from guest".into(),
            ..Default::default()
        }),
    );
    send(
        out,
        &ExtFrame::SubmitSlash(Submit {
            text: format!("/{COMMAND} from slash"),
            ..Default::default()
        }),
    );
    send(
        out,
        &ExtFrame::CallTool(ToolCall {
            id: "guest-ct-1".into(),
            name: "echo".into(),
            args: json!({"token": "via-call-tool"}),
            extra: Map::new(),
        }),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(s: &mut Scenario, frame: Value) -> Vec<Value> {
        let mut sent = Vec::new();
        s.handle(&frame.to_string(), &mut |f| {
            sent.push(serde_json::from_str(&f).unwrap())
        });
        sent
    }

    #[test]
    fn start_sends_hello_first_and_ready_last() {
        let mut sent = Vec::new();
        Scenario::new().start(&mut |f| sent.push(serde_json::from_str::<Value>(&f).unwrap()));
        assert_eq!(sent[0]["type"], "hello");
        assert_eq!(sent[0]["name"], NAME);
        assert_eq!(sent.last().unwrap()["type"], "ready");
        assert_eq!(sent.len(), 1 + 1 + TOOLS.len() + 1 + 1);
    }

    #[test]
    fn tools_and_intercepts() {
        let mut s = Scenario::new();
        let r = run(
            &mut s,
            json!({"type":"tool_call","id":"1","name":"big","args":{"bytes":40}}),
        );
        assert_eq!(r[0]["content"][0]["text"], payload(40));
        let r = run(
            &mut s,
            json!({"type":"tool_call","id":"2","name":"recurse","args":{"depth":1000}}),
        );
        assert_eq!(r[0]["content"][0]["text"], r#"{"depth":1000}"#);
        let r = run(
            &mut s,
            json!({"type":"tool_call","id":"3","name":"flood","args":{"count":3}}),
        );
        assert_eq!(r.len(), 4);
        let r = run(
            &mut s,
            json!({"type":"event_intercept","id":"4","event":"tool_call","tool_id":"t",
                   "tool_name":"bash","tool_args":{"command":"rm -rf /"}}),
        );
        assert_eq!(r[0]["block"], true);
        assert_eq!(r[0]["reason"], "guest blocked rm -rf");
        let r = run(
            &mut s,
            json!({"type":"event_intercept","id":"5","event":"tool_call","tool_id":"t",
                   "tool_name":"rewrite_me","tool_args":{"a":1}}),
        );
        assert_eq!(r[0]["modified_args"], json!({"a":1,"guest":true}));
        let r = run(
            &mut s,
            json!({"type":"event_intercept","id":"6","event":"assistant_message","text":"a secret"}),
        );
        assert_eq!(r[0]["replace_text"], "a [redacted]");
        assert!(run(&mut s, json!({"type":"teleport"})).is_empty());
        let r = run(&mut s, json!({"type":"shutdown"}));
        assert_eq!(r[0]["type"], "shutdown_ack");
        assert!(s.is_shut_down());
    }
}
