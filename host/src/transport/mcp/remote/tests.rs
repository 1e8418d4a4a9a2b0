//! [`CheckedHttpClient`] against rmcp's own Streamable HTTP server (hyper on 127.0.0.1)
//! through rmcp's client, and against servers written by hand for what rmcp's never
//! sends.

use super::*;
use crate::sandbox::network::tests::patterns;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ClientCapabilities, ClientConfig,
    ContentBlock, Implementation, JsonObject, ListToolsResult, PaginatedRequestParams,
    ProtocolVersion, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{serve_client_with_lifecycle, RequestContext, RoleServer};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{
    StreamableHttpClientTransport, StreamableHttpServerConfig, StreamableHttpService,
};
use rmcp::{ClientLifecycleMode, ServerHandler};
use serde_json::json;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpListener;
use wasmtime_wasi_http::io::TokioIo;

/// A server of one tool, `echo`, which says its `text` back.
struct Echo;

impl ServerHandler for Echo {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("echo", "1.0.0"))
    }

    async fn list_tools(
        &self,
        _: Option<PaginatedRequestParams>,
        _: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let schema = json!({"type": "object", "properties": {"text": {"type": "string"}}});
        let schema: JsonObject = serde_json::from_value(schema).unwrap();
        let tool = Tool::new("echo", "Says its text back", Arc::new(schema));
        Ok(ListToolsResult::with_all_items(vec![tool]))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let text = request
            .arguments
            .and_then(|a| a.get("text").and_then(|t| t.as_str()).map(str::to_string))
            .unwrap_or_default();
        Ok(CallToolResult::success(vec![ContentBlock::text(text)]).into())
    }
}

/// What a server saw: its connections, and each request's method and headers.
#[derive(Default)]
struct Seen {
    accepts: AtomicUsize,
    requests: Mutex<Vec<(Method, HeaderMap)>>,
}

impl Seen {
    fn accepts(&self) -> usize {
        self.accepts.load(Ordering::SeqCst)
    }

    fn requests(&self) -> Vec<(Method, HeaderMap)> {
        self.requests.lock().unwrap().clone()
    }
}

/// rmcp's Streamable HTTP service for [`Echo`] (sessions for the revisions that have
/// them), served by hyper on 127.0.0.1; its port.
async fn serve_echo() -> (u16, Arc<Seen>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let seen = Arc::new(Seen::default());
    let mcp = StreamableHttpService::new(
        || Ok(Echo),
        Arc::new(LocalSessionManager::default()),
        StreamableHttpServerConfig::default(),
    );
    let counted = seen.clone();
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                return;
            };
            counted.accepts.fetch_add(1, Ordering::SeqCst);
            let (mcp, seen) = (mcp.clone(), counted.clone());
            let service = hyper::service::service_fn(move |req: Request<Incoming>| {
                let mcp = mcp.clone();
                seen.requests
                    .lock()
                    .unwrap()
                    .push((req.method().clone(), req.headers().clone()));
                async move { Ok::<_, std::convert::Infallible>(mcp.handle(req).await) }
            });
            tokio::spawn(
                hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service),
            );
        }
    });
    (port, seen)
}

/// A server that answers every request with `response` (the raw bytes: status line,
/// headers, body) once it has read the request; its port.
async fn serve_raw(response: Vec<u8>) -> (u16, Arc<Seen>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let seen = Arc::new(Seen::default());
    let counted = seen.clone();
    tokio::spawn(async move {
        loop {
            let Ok((mut stream, _)) = listener.accept().await else {
                return;
            };
            counted.accepts.fetch_add(1, Ordering::SeqCst);
            let (response, seen) = (response.clone(), counted.clone());
            tokio::spawn(async move {
                if let Some(request) = read_request(&mut stream).await {
                    seen.requests.lock().unwrap().push(request);
                }
                let _ = stream.write_all(&response).await;
                let _ = stream.shutdown().await;
            });
        }
    });
    (port, seen)
}

/// Reads one request: its head, then as many bytes as its `Content-Length` says; its
/// method and headers.
async fn read_request(stream: &mut tokio::net::TcpStream) -> Option<(Method, HeaderMap)> {
    let mut read = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let n = stream.read(&mut buf).await.ok()?;
        if n == 0 {
            return None;
        }
        read.extend_from_slice(&buf[..n]);
        let Some(end) = read.windows(4).position(|w| w == b"\r\n\r\n") else {
            continue;
        };
        let head = String::from_utf8_lossy(&read[..end]).into_owned();
        let mut lines = head.split("\r\n");
        let method = lines.next()?.split(' ').next()?.parse().ok()?;
        let mut headers = HeaderMap::new();
        for line in lines {
            let (name, value) = line.split_once(':')?;
            let name = HeaderName::try_from(name.trim()).ok()?;
            headers.append(name, HeaderValue::try_from(value.trim()).ok()?);
        }
        let length: usize = headers
            .get(header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok()?.parse().ok())
            .unwrap_or(0);
        if read.len() >= end + 4 + length {
            return Some((method, headers));
        }
    }
}

fn ext_log(test: &str) -> (ExtLog, std::path::PathBuf) {
    let path = zot_test_fixtures::fresh_dir(test).join("ext.log");
    (ExtLog::open(&path), path)
}

fn checked(allow: &[&str], headers: &[(&str, &str)], log: ExtLog) -> CheckedHttpClient {
    let headers: Vec<(String, String)> = headers
        .iter()
        .map(|(n, v)| (n.to_string(), v.to_string()))
        .collect();
    CheckedHttpClient::new(patterns(allow), &headers, log).unwrap()
}

/// 2026-07-28 first, else `initialize` (as the MCP adapter asks).
fn auto() -> ClientLifecycleMode {
    ClientLifecycleMode::Auto {
        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
        legacy_version: Some(ProtocolVersion::LATEST_WITH_INITIALIZE),
    }
}

/// A client of the newest revision with `initialize` (which has sessions).
fn legacy_client() -> ClientConfig {
    ClientConfig::new(
        ClientCapabilities::default(),
        Implementation::new("zot-test", "0"),
    )
    .with_protocol_version(ProtocolVersion::LATEST_WITH_INITIALIZE)
}

fn ping() -> ClientJsonRpcMessage {
    serde_json::from_value(json!({"jsonrpc": "2.0", "id": 1, "method": "ping"})).unwrap()
}

/// The first text of a tool's result.
fn text(result: &CallToolResult) -> String {
    let value = serde_json::to_value(result).unwrap();
    value["content"][0]["text"].as_str().unwrap().to_string()
}

#[tokio::test]
async fn lists_and_calls_a_tool_of_a_2026_server() {
    let (port, seen) = serve_echo().await;
    let url = format!("http://127.0.0.1:{port}/mcp");
    let (log, _) = ext_log("remote-2026");
    let client = checked(
        &[&format!("http://127.0.0.1:{port}")],
        &[("X-Api-Key", "sekrit")],
        log,
    );
    let config = transport_config(&url, StreamableHttpResponseLimits::default());
    let transport = StreamableHttpClientTransport::with_client(client, config);
    let running = serve_client_with_lifecycle((), transport, auto())
        .await
        .unwrap();
    let info = running.peer_info().unwrap();
    assert_eq!(info.protocol_version, ProtocolVersion::V_2026_07_28);

    let tools = running.peer().list_all_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert_eq!(names, ["echo"]);
    let args: JsonObject = serde_json::from_value(json!({"text": "hello"})).unwrap();
    let params = CallToolRequestParams::new("echo").with_arguments(args);
    let result = running.peer().call_tool(params).await.unwrap();
    assert_eq!(text(&result), "hello");
    running.cancel().await.unwrap();

    let requests = seen.requests();
    assert!(requests.len() >= 3, "{requests:?}");
    for (method, headers) in &requests {
        assert_eq!(method, Method::POST, "a stateless server is only posted to");
        assert_eq!(headers["x-api-key"], "sekrit");
        assert_eq!(headers["host"], format!("127.0.0.1:{port}").as_str());
        assert!(
            headers.get(SESSION_ID).is_none(),
            "2026-07-28 has no sessions"
        );
    }
    // One connection per request, each to the checked address.
    assert_eq!(seen.accepts(), requests.len());
}

#[tokio::test]
async fn a_session_is_kept_streamed_and_ended_with_delete() {
    let (port, seen) = serve_echo().await;
    let url = format!("http://127.0.0.1:{port}/mcp");
    let (log, _) = ext_log("remote-session");
    let client = checked(
        &[&format!("http://127.0.0.1:{port}")],
        &[("Authorization", "Bearer t0ken")],
        log,
    );
    let config = transport_config(&url, StreamableHttpResponseLimits::default());
    let transport = StreamableHttpClientTransport::with_client(client, config);
    let running =
        serve_client_with_lifecycle(legacy_client(), transport, ClientLifecycleMode::Initialize)
            .await
            .unwrap();
    let info = running.peer_info().unwrap();
    assert_eq!(
        info.protocol_version,
        ProtocolVersion::LATEST_WITH_INITIALIZE
    );
    let args: JsonObject = serde_json::from_value(json!({"text": "again"})).unwrap();
    let params = CallToolRequestParams::new("echo").with_arguments(args);
    let result = running.peer().call_tool(params).await.unwrap();
    assert_eq!(text(&result), "again");
    running.cancel().await.unwrap();

    let requests = seen.requests();
    let (first, rest) = requests.split_first().unwrap();
    assert_eq!(first.0, Method::POST);
    assert!(first.1.get(SESSION_ID).is_none(), "initialize has none yet");
    let session = rest[0].1[SESSION_ID].clone();
    for (method, headers) in rest {
        assert_eq!(headers.get(SESSION_ID), Some(&session), "{method}");
        assert_eq!(headers["authorization"], "Bearer t0ken");
    }
    let methods: Vec<&Method> = rest.iter().map(|(m, _)| m).collect();
    assert!(
        methods.contains(&&Method::GET),
        "the server's stream: {methods:?}"
    );
    assert_eq!(
        methods.last(),
        Some(&&Method::DELETE),
        "the session ends with the client: {methods:?}"
    );
}

#[tokio::test]
async fn a_server_not_granted_is_refused_before_connecting() {
    let (port, seen) = serve_echo().await;
    let url = format!("http://127.0.0.1:{port}/mcp");
    let (log, path) = ext_log("remote-denied");
    // Another port of the same address is granted, not this one.
    let client = checked(&["http://127.0.0.1:1"], &[], log);
    let config = transport_config(&url, StreamableHttpResponseLimits::default());
    let transport = StreamableHttpClientTransport::with_client(client, config);
    let error = serve_client_with_lifecycle((), transport, auto())
        .await
        .err()
        .unwrap()
        .to_string();
    assert_eq!(seen.accepts(), 0, "no connection reached the server");
    let logged = std::fs::read_to_string(path).unwrap();
    assert!(
        logged.contains(&format!(
            "denied HTTP to 127.0.0.1: http port {port} of this host is not in the allow-list"
        )),
        "{error}\n{logged}"
    );
}

#[tokio::test]
async fn a_name_granted_is_checked_on_the_address_it_resolves_to() {
    let (port, seen) = serve_echo().await;
    let (log, _) = ext_log("remote-resolved");
    // `localhost` is granted by name, and resolves to loopback: reached only by naming
    // the address itself.
    let client = checked(&[&format!("http://localhost:{port}")], &[], log);
    let url = format!("http://localhost:{port}/mcp");
    let error = client
        .post_message(url.into(), ping(), None, None, HashMap::new())
        .await
        .unwrap_err();
    let StreamableHttpError::Client(RemoteError::Denied { host, why }) = &error else {
        panic!("{error:?}")
    };
    assert_eq!(host, "localhost");
    assert!(why.contains("loopback"), "{why}");
    assert_eq!(seen.accepts(), 0);

    // Nothing granted at all.
    let (log, _) = ext_log("remote-none");
    let client = checked(&[], &[], log);
    let url = format!("http://127.0.0.1:{port}/mcp");
    let error = client
        .post_message(url.into(), ping(), None, None, HashMap::new())
        .await
        .unwrap_err();
    assert!(
        error.to_string().contains("no http permission is in force"),
        "{error}"
    );
    assert_eq!(seen.accepts(), 0);
}

/// Limits of `max` bytes each.
fn limits(max: usize) -> StreamableHttpResponseLimits {
    let mut limits = StreamableHttpResponseLimits::default();
    limits.max_json_response_size = max;
    limits.max_sse_event_size = max;
    limits.max_error_response_size = max;
    limits
}

#[tokio::test]
async fn a_json_body_over_the_limit_fails_unread() {
    let big = format!(
        r#"{{"jsonrpc":"2.0","id":1,"result":{{"x":"{}"}}}}"#,
        "a".repeat(5000)
    );
    // Said to be too long, and streamed without a length.
    let said = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{big}",
        big.len()
    );
    let chunked = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n\
         {:x}\r\n{big}\r\n0\r\n\r\n",
        big.len()
    );
    for response in [said, chunked] {
        let (port, _) = serve_raw(response.into_bytes()).await;
        let (log, _) = ext_log("remote-json-cap");
        let client = checked(&[&format!("http://127.0.0.1:{port}")], &[], log);
        let url: Arc<str> = format!("http://127.0.0.1:{port}/mcp").into();
        // The client's own limit holds whatever the transport asks.
        let error = client
            .clone()
            .with_limits(limits(1000))
            .post_message_with_response_limits(
                url.clone(),
                ping(),
                None,
                None,
                HashMap::new(),
                StreamableHttpResponseLimits::default(),
            )
            .await
            .unwrap_err();
        assert!(
            matches!(
                error,
                StreamableHttpError::ResponseBodyTooLarge { max_size: 1000 }
            ),
            "{error:?}"
        );
        // Within the limit it is read.
        let answer = client
            .post_message(url, ping(), None, None, HashMap::new())
            .await
            .unwrap();
        assert!(matches!(answer, StreamableHttpPostResponse::Json(..)));
    }
}

#[tokio::test]
async fn a_handshake_over_the_limits_fails_and_ends() {
    let (port, _) = serve_echo().await;
    let url = format!("http://127.0.0.1:{port}/mcp");
    let (log, path) = ext_log("remote-small");
    let client = checked(&[&format!("http://127.0.0.1:{port}")], &[], log).with_limits(limits(64));
    let transport =
        StreamableHttpClientTransport::with_client(client, transport_config(&url, limits(64)));
    let started = tokio::time::timeout(
        Duration::from_secs(60),
        serve_client_with_lifecycle(legacy_client(), transport, ClientLifecycleMode::Initialize),
    )
    .await
    .expect("the handshake fails rather than hangs");
    let error = started.err().unwrap().to_string();
    // rmcp says the stream closed; the log says why.
    let logged = std::fs::read_to_string(path).unwrap();
    assert!(
        logged.contains("exceeded the maximum size of 64 bytes"),
        "{error}\n{logged}"
    );
}

#[tokio::test]
async fn an_sse_event_over_the_limit_ends_the_stream() {
    let event = format!("id: 1\ndata: {}\n\n", "b".repeat(2000));
    let response = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: {}\r\n\r\n{event}",
        event.len()
    );
    let (port, _) = serve_raw(response.into_bytes()).await;
    let (log, _) = ext_log("remote-sse-cap");
    let client = checked(&[&format!("http://127.0.0.1:{port}")], &[], log);
    let url: Arc<str> = format!("http://127.0.0.1:{port}/mcp").into();
    let answer = client
        .post_message_with_max_sse_event_size(url, ping(), None, None, HashMap::new(), 100)
        .await
        .unwrap();
    let StreamableHttpPostResponse::Sse(mut events, _) = answer else {
        panic!("{answer:?}")
    };
    let first = std::future::poll_fn(|cx| events.as_mut().poll_next(cx)).await;
    let error = first.unwrap().unwrap_err().to_string();
    assert!(error.contains("maximum size of 100 bytes"), "{error}");
}

#[tokio::test]
async fn statuses_answer_as_rmcp_expects() {
    let (log, _) = ext_log("remote-statuses");
    let raw = |status: &str, headers: &str| {
        format!("HTTP/1.1 {status}\r\n{headers}Content-Length: 0\r\n\r\n").into_bytes()
    };
    // GET of the server's stream: 405, no SSE.
    let (port, _) = serve_raw(raw("405 Method Not Allowed", "")).await;
    let grant = format!("http://127.0.0.1:{port}");
    let url: Arc<str> = format!("{grant}/mcp").into();
    let c = checked(&[&grant], &[], log.clone());
    let error = c
        .get_stream(url.clone(), Some("s".into()), None, None, HashMap::new())
        .await
        .err()
        .unwrap();
    assert!(matches!(
        error,
        StreamableHttpError::ServerDoesNotSupportSse
    ));
    // DELETE: 405, the server does not let clients end sessions.
    c.delete_session(url.clone(), "s".into(), None, HashMap::new())
        .await
        .unwrap();

    // POST with a session the server no longer has: 404, expired.
    let (port, _) = serve_raw(raw("404 Not Found", "")).await;
    let grant = format!("http://127.0.0.1:{port}");
    let url: Arc<str> = format!("{grant}/mcp").into();
    let c = checked(&[&grant], &[], log.clone());
    let error = c
        .post_message(url, ping(), Some("s".into()), None, HashMap::new())
        .await
        .unwrap_err();
    assert!(
        matches!(error, StreamableHttpError::SessionExpired),
        "{error:?}"
    );

    // 401 with a challenge; 503 as a status with its Retry-After.
    let (port, _) = serve_raw(raw(
        "401 Unauthorized",
        "WWW-Authenticate: Bearer scope=\"tools:read\"\r\n",
    ))
    .await;
    let grant = format!("http://127.0.0.1:{port}");
    let c = checked(&[&grant], &[], log.clone());
    let error = c
        .post_message(
            format!("{grant}/mcp").into(),
            ping(),
            None,
            None,
            HashMap::new(),
        )
        .await
        .unwrap_err();
    assert!(
        matches!(error, StreamableHttpError::AuthRequired(_)),
        "{error:?}"
    );
    let (port, _) = serve_raw(raw("503 Service Unavailable", "Retry-After: 7\r\n")).await;
    let grant = format!("http://127.0.0.1:{port}");
    let c = checked(&[&grant], &[], log);
    let error = c
        .post_message(
            format!("{grant}/mcp").into(),
            ping(),
            None,
            None,
            HashMap::new(),
        )
        .await
        .unwrap_err();
    let StreamableHttpError::HttpStatus(status) = &error else {
        panic!("{error:?}")
    };
    assert_eq!(
        (status.status, status.retry_after.as_deref()),
        (503, Some("7"))
    );
}

#[tokio::test]
async fn a_rejected_discover_is_an_error_of_that_request() {
    let body = "no such method";
    let response = format!(
        "HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    let (port, _) = serve_raw(response.into_bytes()).await;
    let (log, _) = ext_log("remote-discover");
    let grant = format!("http://127.0.0.1:{port}");
    let c = checked(&[&grant], &[], log);
    let discover: ClientJsonRpcMessage = serde_json::from_value(
        json!({"jsonrpc": "2.0", "id": 7, "method": "server/discover", "params": {}}),
    )
    .unwrap();
    let answer = c
        .post_message(
            format!("{grant}/mcp").into(),
            discover,
            None,
            None,
            HashMap::new(),
        )
        .await
        .unwrap();
    let StreamableHttpPostResponse::Json(ServerJsonRpcMessage::Error(error), _) = answer else {
        panic!("{answer:?}")
    };
    assert_eq!(error.id, Some(rmcp::model::RequestId::Number(7)));
    assert!(error.error.message.contains(body), "{:?}", error.error);
}

#[test]
fn a_manifest_sets_no_header_of_the_protocol() {
    let new = |name: &str, value: &str| {
        CheckedHttpClient::new(Vec::new(), &[(name.into(), value.into())], ExtLog::stderr())
    };
    assert!(new("Authorization", "Bearer x").is_ok());
    assert!(new("X-Api-Key", "k").is_ok());
    for reserved in [
        "Host",
        "Accept",
        "Content-Type",
        "Mcp-Session-Id",
        "MCP-Protocol-Version",
        "Last-Event-ID",
        "Transfer-Encoding",
    ] {
        let error = new(reserved, "x").err().unwrap();
        assert!(error.contains("set by the host"), "{reserved}: {error}");
    }
    assert!(new("a b", "x").err().unwrap().contains("not a header name"));
    assert!(new("X-Key", "line\nbreak")
        .err()
        .unwrap()
        .contains("not one"));
}

#[test]
fn an_event_counts_its_field_lines_not_comments() {
    let mut limit = EventLimit::new(10);
    // "data: 1234" is 10 bytes; its newline makes 11 kept once the line ends.
    assert!(limit.take(b"data: 1234"));
    assert!(!limit.take(b"\n"));
    let mut limit = EventLimit::new(10);
    // A comment is not kept once its line ends (while it is read, it is).
    assert!(limit.take(b": note\r\n"));
    assert!(limit.take(b"data: 12\r\n\r\n"));
    // A blank line ended the event: the next one starts from nothing.
    assert!(limit.take(b"data: 12\n\n"));
    assert!(limit.take(b"id: 1\r"));
    assert!(limit.take(b"\ndata"));
    assert!(!limit.take(b": 1"));
}

#[test]
fn the_scope_of_a_challenge() {
    assert_eq!(
        scope(r#"Bearer error="insufficient_scope", scope="files:read files:write""#),
        Some("files:read files:write".into())
    );
    assert_eq!(
        scope("Bearer scope=read:data, error=x"),
        Some("read:data".into())
    );
    assert_eq!(scope("Bearer"), None);
}
