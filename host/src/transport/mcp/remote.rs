//! A remote MCP server's HTTP (Streamable HTTP, both the session revisions and the
//! stateless 2026-07-28): [`CheckedHttpClient`], rmcp's [`StreamableHttpClient`] over the
//! host's own checked connections, for `StreamableHttpClientTransport::with_client`.
//!
//! Every request — each POST, the GET of a stream and each of its resumptions, the
//! DELETE that ends a session — first passes [`check`] (the user's `http` grants, one DNS
//! lookup, the restricted address ranges), exactly as a component's request does
//! (`transport/wasm/outgoing.rs`): a refusal is an error naming the host and why, and no
//! connection is made; else it goes to exactly the checked addresses
//! ([`crate::sandbox::connect::handshake`]), one connection per request, nothing pooled.
//! Redirects are not followed (a 3xx is an unexpected answer).
//!
//! Each request carries the fixed headers given at construction (a manifest's, after
//! expansion: `Authorization`, an API key) and none of them may be one the protocol
//! sets. What is read of a response is bounded: a JSON body at most
//! `max_json_response_size` bytes (more fails the request, unparsed), the diagnostic of
//! an error at most `max_error_response_size`, an SSE event at most
//! `max_sse_event_size` — the least of the client's own limits and the transport's.
//!
//! rmcp's built-in clients (reqwest, Unix socket) share helpers this one cannot use
//! (`read_bounded_body`, `bounded_sse_stream`, `legacy_discover_response`, the reserved
//! header check are private to rmcp), so their rules are written again here, to answer
//! as they do: 202/204 accepted; 404 on a session expired; 401/403 with a challenge as
//! auth errors; 429 and 5xx as [`HttpStatusError`] unless a JSON-RPC error is in the
//! body; a rejected `server/discover` as a JSON-RPC error of that request (so rmcp falls
//! back to `initialize`); 405 on the GET stream as "no SSE"; 405 on DELETE as done.
//! One difference: an SSE event over the limit ends the stream with an error rmcp does
//! not recognise as that (its marker type is private), so rmcp may try to resume the
//! stream where its own clients stop at once; [`transport_config`] bounds the retries.

use crate::log::ExtLog;
use crate::sandbox::connect::{handshake, origin_form};
use crate::sandbox::network::{check, CONNECT_TIMEOUT};
use crate::sandbox::HostPattern;
use bytes::Bytes;
use futures_core::stream::BoxStream;
use http::header::{self, HeaderMap, HeaderName, HeaderValue};
use http::{Method, Request, Response, StatusCode};
use http_body_util::{BodyExt as _, Full};
use hyper::body::Incoming;
use rmcp::model::{ClientJsonRpcMessage, ClientRequest, ErrorData, ServerJsonRpcMessage};
use rmcp::transport::common::client_side_sse::ExponentialBackoff;
use rmcp::transport::streamable_http_client::{
    AuthRequiredError, HttpStatusError, InsufficientScopeError, SseError, StreamableHttpClient,
    StreamableHttpClientTransportConfig, StreamableHttpError, StreamableHttpPostResponse,
    StreamableHttpResponseLimits,
};
use sse_stream::{Sse, SseStream};
use std::borrow::Cow;
use std::collections::HashMap;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{ready, Context, Poll};
use std::time::Duration;

const EVENT_STREAM: &str = "text/event-stream";
const JSON: &str = "application/json";
const SESSION_ID: &str = "mcp-session-id";
const LAST_EVENT_ID: &str = "last-event-id";
/// What a request accepts (the spec: a POST must list both).
const ACCEPT: &str = "text/event-stream, application/json";
/// The longest `Retry-After` kept (rmcp's own bound).
const MAX_RETRY_AFTER: usize = 128;
/// The diagnostic of a body that could not be read.
const UNREADABLE: &str = "<failed to read response body>";

/// How many times a stream that broke is resumed before the request it carries fails
/// (rmcp's default backoff retries forever).
const RESUMPTIONS: usize = 3;
/// The longest wait between two resumptions.
const MAX_RESUME_DELAY: Duration = Duration::from_secs(30);

type Error = StreamableHttpError<RemoteError>;

/// Why a request to a remote MCP server failed in this client (rmcp's
/// [`StreamableHttpError::Client`]).
#[derive(Debug)]
pub(crate) enum RemoteError {
    /// Refused before any connection: not granted, or the name resolves only to
    /// restricted addresses.
    Denied { host: String, why: String },
    /// Connecting, TLS or HTTP failed.
    Failed { host: String, why: String },
    /// The URL or a header cannot be sent.
    Request(String),
}

impl std::fmt::Display for RemoteError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RemoteError::Denied { host, why } => write!(f, "denied HTTP to {host}: {why}"),
            RemoteError::Failed { host, why } => write!(f, "HTTP to {host} failed: {why}"),
            RemoteError::Request(why) => f.write_str(why),
        }
    }
}

impl std::error::Error for RemoteError {}

/// rmcp's Streamable HTTP client over the host's checked connections (see the module).
#[derive(Clone)]
pub(crate) struct CheckedHttpClient {
    allow: Arc<[HostPattern]>,
    /// Sent with every request.
    headers: Arc<[(HeaderName, HeaderValue)]>,
    /// The most read of a response, whatever the transport asks.
    limits: StreamableHttpResponseLimits,
    /// Connect (and DNS, and TLS) timeout.
    timeout: Duration,
    log: ExtLog,
}

impl CheckedHttpClient {
    /// A client that may reach what `allow` grants, sending `headers` (name, value) with
    /// every request; refused: a header that is not one, or one the protocol sets.
    pub(crate) fn new(
        allow: Vec<HostPattern>,
        headers: &[(String, String)],
        log: ExtLog,
    ) -> Result<CheckedHttpClient, String> {
        let mut fixed = Vec::with_capacity(headers.len());
        for (name, value) in headers {
            let name = HeaderName::try_from(name.as_str())
                .map_err(|_| format!("header {name:?}: not a header name"))?;
            // The manifest's own rule (`crate::manifest::RESERVED_HEADERS`).
            if !crate::manifest::header_allowed(name.as_str()) {
                return Err(format!(
                    "header {name:?}: set by the host for the protocol, not by a manifest"
                ));
            }
            let mut value = HeaderValue::try_from(value.as_str()).map_err(|_| {
                format!("header {name:?}: its value is not one (visible ASCII and spaces)")
            })?;
            // Kept out of debug output: a token or a key.
            value.set_sensitive(true);
            fixed.push((name, value));
        }
        Ok(CheckedHttpClient {
            allow: allow.into(),
            headers: fixed.into(),
            limits: StreamableHttpResponseLimits::default(),
            timeout: CONNECT_TIMEOUT,
            log,
        })
    }

    /// The most read of a response (each the least of these and the transport's).
    pub(crate) fn with_limits(mut self, limits: StreamableHttpResponseLimits) -> Self {
        self.limits = limits;
        self
    }

    /// The least of the client's limits and `asked`.
    fn limits(&self, asked: StreamableHttpResponseLimits) -> StreamableHttpResponseLimits {
        let mut limits = asked;
        limits.max_sse_event_size = asked.max_sse_event_size.min(self.limits.max_sse_event_size);
        limits.max_json_response_size = asked
            .max_json_response_size
            .min(self.limits.max_json_response_size);
        limits.max_error_response_size = asked
            .max_error_response_size
            .min(self.limits.max_error_response_size);
        limits
    }

    /// Sends one request to `uri` once [`check`] allows it, over a connection of its own
    /// to exactly the checked addresses; the answer's body is read as the caller goes.
    async fn send(
        &self,
        method: Method,
        uri: &str,
        headers: HeaderMap,
        body: Bytes,
    ) -> Result<(Response<Incoming>, String), Error> {
        let uri: http::Uri = uri.parse().map_err(|e| {
            StreamableHttpError::Client(RemoteError::Request(format!(
                "the MCP server's URL {uri:?} is not one: {e}"
            )))
        })?;
        let target = match check(&self.allow, &uri, self.timeout).await {
            Ok(target) => target,
            Err(denied) => {
                let error = RemoteError::Denied {
                    host: denied.host,
                    why: denied.why,
                };
                self.log.warn(&error.to_string());
                return Err(StreamableHttpError::Client(error));
            }
        };
        for (addr, why) in &target.skipped {
            self.log.warn(&format!(
                "HTTP to {}: skipped {} ({why}): reached only by naming the address itself",
                target.host,
                addr.ip()
            ));
        }
        let host = target.host.clone();
        let failed = |why: String| {
            let error = RemoteError::Failed {
                host: host.clone(),
                why,
            };
            self.log.warn(&error.to_string());
            StreamableHttpError::Client(error)
        };
        let mut request = Request::builder()
            .method(method)
            .uri(origin_form(&uri).map_err(|e| failed(e.to_string()))?)
            .body(Full::new(body))
            .map_err(|e| failed(e.to_string()))?;
        let authority = match uri.port_u16() {
            Some(port) => format!("{}:{port}", uri.host().unwrap_or_default()),
            None => uri.host().unwrap_or_default().to_string(),
        };
        let h = request.headers_mut();
        h.insert(
            header::HOST,
            HeaderValue::try_from(authority).map_err(|e| failed(e.to_string()))?,
        );
        for (name, value) in self.headers.iter() {
            h.append(name.clone(), value.clone());
        }
        // The request's own: each in place of a fixed one of its name.
        let mut last = None;
        for (name, value) in headers {
            match name {
                Some(name) => {
                    h.insert(name.clone(), value);
                    last = Some(name);
                }
                None => {
                    if let Some(name) = &last {
                        h.append(name.clone(), value);
                    }
                }
            }
        }
        let (mut sender, connection) = handshake::<Full<Bytes>>(&target, self.timeout)
            .await
            .map_err(|e| failed(e.to_string()))?;
        // Driven until the answer's body is read or dropped.
        tokio::spawn(async move {
            let _ = connection.await;
        });
        let response = sender
            .send_request(request)
            .await
            .map_err(|e| failed(e.to_string()))?;
        Ok((response, host))
    }

    /// The events of an SSE body from `host`, each at most `max` bytes (what the parser
    /// keeps of it); a longer one ends the stream with an error, and is logged.
    fn sse_events(
        &self,
        body: Incoming,
        max: usize,
        host: String,
    ) -> BoxStream<'static, Result<Sse, SseError>> {
        Box::pin(SseStream::new(Bounded {
            body,
            limit: EventLimit::new(max),
            failed: false,
            log: self.log.clone(),
            host,
        }))
    }

    /// The headers of a request: what it accepts, the bearer token rmcp holds, rmcp's
    /// own (its protocol version and the 2026-07-28 standard headers; none may be one
    /// this client sets) and the session.
    fn headers(
        auth: Option<String>,
        custom: HashMap<HeaderName, HeaderValue>,
        session: Option<&str>,
    ) -> Result<HeaderMap, Error> {
        let mut headers = HeaderMap::new();
        headers.insert(header::ACCEPT, HeaderValue::from_static(ACCEPT));
        if let Some(auth) = auth {
            let mut value = HeaderValue::try_from(format!("Bearer {auth}")).map_err(|_| {
                StreamableHttpError::Client(RemoteError::Request(
                    "the bearer token is not a header value".into(),
                ))
            })?;
            value.set_sensitive(true);
            headers.insert(header::AUTHORIZATION, value);
        }
        for (name, value) in custom {
            if matches!(name.as_str(), "accept" | SESSION_ID | LAST_EVENT_ID) {
                return Err(StreamableHttpError::ReservedHeaderConflict(
                    name.to_string(),
                ));
            }
            headers.insert(name, value);
        }
        if let Some(session) = session {
            let value = HeaderValue::try_from(session).map_err(|_| {
                StreamableHttpError::UnexpectedServerResponse(
                    "the session id is not a header value".into(),
                )
            })?;
            headers.insert(HeaderName::from_static(SESSION_ID), value);
        }
        Ok(headers)
    }
}

impl StreamableHttpClient for CheckedHttpClient {
    type Error = RemoteError;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<StreamableHttpPostResponse, Error> {
        let limits = self.limits;
        self.post_message_with_response_limits(
            uri,
            message,
            session_id,
            auth_header,
            custom_headers,
            limits,
        )
        .await
    }

    async fn post_message_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<StreamableHttpPostResponse, Error> {
        let mut limits = self.limits;
        limits.max_sse_event_size = max_sse_event_size;
        self.post_message_with_response_limits(
            uri,
            message,
            session_id,
            auth_header,
            custom_headers,
            limits,
        )
        .await
    }

    async fn post_message_with_response_limits(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        limits: StreamableHttpResponseLimits,
    ) -> Result<StreamableHttpPostResponse, Error> {
        let limits = self.limits(limits);
        let body = serde_json::to_vec(&message)?;
        let mut headers = Self::headers(auth_header, custom_headers, session_id.as_deref())?;
        headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(JSON));
        let (response, host) = self
            .send(Method::POST, &uri, headers, Bytes::from(body))
            .await?;
        let status = response.status();
        challenge(&response)?;
        if matches!(status, StatusCode::ACCEPTED | StatusCode::NO_CONTENT) {
            return Ok(StreamableHttpPostResponse::Accepted);
        }
        let session_was_attached = session_id.is_some();
        if status == StatusCode::NOT_FOUND && session_was_attached {
            return Err(StreamableHttpError::SessionExpired);
        }
        let content_type = response.headers().get(header::CONTENT_TYPE).cloned();
        let is = |mime: &str| {
            content_type
                .as_ref()
                .is_some_and(|ct| media_type_is(ct, mime))
        };
        let is_json = is(JSON);
        // Rate limits and server failures without a JSON-RPC error: the status only.
        let status_error = http_status_error(status, response.headers());
        if let Some(error) = &status_error {
            if !is_json || status == StatusCode::TOO_MANY_REQUESTS {
                return Err(HttpStatusError::new(error.status, error.retry_after.clone()).into());
            }
        }
        let length = content_length(response.headers());
        let session = response
            .headers()
            .get(SESSION_ID)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        // A POST of notifications or answers awaits nothing.
        let awaits_nothing = !matches!(message, ClientJsonRpcMessage::Request(_));
        if status.is_success() && length == Some(0) && awaits_nothing {
            return Ok(StreamableHttpPostResponse::Accepted);
        }
        if !status.is_success() {
            let auth_failure = matches!(status, StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN);
            let body = response.into_body();
            let text = if is_json && !auth_failure {
                match read_bounded(body, length, limits.max_json_response_size, &host).await {
                    Ok(body) => {
                        if let Ok(error @ ServerJsonRpcMessage::Error(_)) =
                            serde_json::from_slice::<ServerJsonRpcMessage>(&body)
                        {
                            let text = String::from_utf8_lossy(&body);
                            return Ok(discover_rejected(
                                &message,
                                session_was_attached,
                                status,
                                &text,
                            )
                            .unwrap_or(StreamableHttpPostResponse::Json(error, session)));
                        }
                        let cut = body.len().min(limits.max_error_response_size);
                        String::from_utf8_lossy(&body[..cut]).into_owned()
                    }
                    Err(error @ StreamableHttpError::ResponseBodyTooLarge { .. }) => {
                        self.log
                            .warn(&format!("HTTP {status} from {host}: {error}"));
                        return Err(status_error.map(Into::into).unwrap_or(error));
                    }
                    Err(_) => unreadable(limits.max_error_response_size),
                }
            } else {
                read_prefix(body, limits.max_error_response_size).await
            };
            if let Some(answer) = discover_rejected(&message, session_was_attached, status, &text) {
                return Ok(answer);
            }
            if let Some(error) = status_error {
                return Err(error.into());
            }
            return Err(StreamableHttpError::UnexpectedServerResponse(
                format!("HTTP {status}: {text}").into(),
            ));
        }
        if is(EVENT_STREAM) {
            let events = self.sse_events(response.into_body(), limits.max_sse_event_size, host);
            return Ok(StreamableHttpPostResponse::Sse(events, session));
        }
        if is_json {
            let body = read_bounded(
                response.into_body(),
                length,
                limits.max_json_response_size,
                &host,
            )
            .await
            .inspect_err(|error| {
                if let StreamableHttpError::ResponseBodyTooLarge { .. } = error {
                    self.log.warn(&format!("the answer from {host}: {error}"));
                }
            })?;
            return match serde_json::from_slice::<ServerJsonRpcMessage>(&body) {
                Ok(message) => Ok(StreamableHttpPostResponse::Json(message, session)),
                Err(_) if awaits_nothing => Ok(StreamableHttpPostResponse::Accepted),
                Err(e) => Err(StreamableHttpError::UnexpectedServerResponse(
                    format!(
                        "could not parse JSON response as ServerJsonRpcMessage: {e}: {}",
                        preview(&body)
                    )
                    .into(),
                )),
            };
        }
        if awaits_nothing {
            return Ok(StreamableHttpPostResponse::Accepted);
        }
        Err(StreamableHttpError::UnexpectedContentType(
            content_type.map(|ct| String::from_utf8_lossy(ct.as_bytes()).into_owned()),
        ))
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<(), Error> {
        let mut headers = Self::headers(auth_header, custom_headers, Some(&session_id))?;
        headers.remove(header::ACCEPT);
        let (response, _) = self
            .send(Method::DELETE, &uri, headers, Bytes::new())
            .await?;
        let status = response.status();
        // A server that does not let clients end sessions.
        if status == StatusCode::METHOD_NOT_ALLOWED || status.is_success() {
            return Ok(());
        }
        Err(StreamableHttpError::UnexpectedServerResponse(
            format!("delete_session returned {status}").into(),
        ))
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, Error> {
        let max = self.limits.max_sse_event_size;
        self.get_stream_with_max_sse_event_size(
            uri,
            session_id,
            last_event_id,
            auth_header,
            custom_headers,
            max,
        )
        .await
    }

    async fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, Error> {
        let max = max_sse_event_size.min(self.limits.max_sse_event_size);
        let mut headers = Self::headers(auth_header, custom_headers, session_id.as_deref())?;
        if let Some(last) = last_event_id {
            let value = HeaderValue::try_from(last).map_err(|_| {
                StreamableHttpError::UnexpectedServerResponse(
                    "the last event id is not a header value".into(),
                )
            })?;
            headers.insert(HeaderName::from_static(LAST_EVENT_ID), value);
        }
        let (response, host) = self.send(Method::GET, &uri, headers, Bytes::new()).await?;
        let status = response.status();
        if status == StatusCode::METHOD_NOT_ALLOWED {
            return Err(StreamableHttpError::ServerDoesNotSupportSse);
        }
        challenge(&response)?;
        if let Some(error) = http_status_error(status, response.headers()) {
            return Err(error.into());
        }
        if !status.is_success() {
            return Err(StreamableHttpError::UnexpectedServerResponse(
                format!("get_stream returned {status}").into(),
            ));
        }
        // As rmcp's clients: an event stream, or JSON (read as events).
        match response.headers().get(header::CONTENT_TYPE) {
            Some(ct) if media_type_is(ct, EVENT_STREAM) || media_type_is(ct, JSON) => {}
            other => {
                return Err(StreamableHttpError::UnexpectedContentType(
                    other.map(|ct| String::from_utf8_lossy(ct.as_bytes()).into_owned()),
                ))
            }
        }
        Ok(self.sse_events(response.into_body(), max, host))
    }
}

/// The transport's configuration for the server at `url`: `limits` (the same as the
/// client's), and a stream that broke resumed at most [`RESUMPTIONS`] times — also
/// what ends one whose event was over the limit, which rmcp would otherwise resume for
/// ever (see the module).
pub(crate) fn transport_config(
    url: &str,
    limits: StreamableHttpResponseLimits,
) -> StreamableHttpClientTransportConfig {
    let mut retry = ExponentialBackoff::default();
    retry.max_times = Some(RESUMPTIONS);
    retry.max_delay = Some(MAX_RESUME_DELAY);
    let mut config = StreamableHttpClientTransportConfig::with_uri(url);
    config.retry_config = Arc::new(retry);
    config.max_sse_event_size = limits.max_sse_event_size;
    config.max_json_response_size = limits.max_json_response_size;
    config.max_error_response_size = limits.max_error_response_size;
    config
}

/// A 401 or 403 with a `WWW-Authenticate` challenge, as rmcp's auth errors.
fn challenge(response: &Response<Incoming>) -> Result<(), Error> {
    let status = response.status();
    if !matches!(status, StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN) {
        return Ok(());
    }
    let Some(value) = response.headers().get(header::WWW_AUTHENTICATE) else {
        return Ok(());
    };
    let value = value.to_str().map_err(|_| {
        StreamableHttpError::UnexpectedServerResponse(
            "invalid www-authenticate header value".into(),
        )
    })?;
    Err(match status {
        StatusCode::UNAUTHORIZED => {
            StreamableHttpError::AuthRequired(AuthRequiredError::new(value.to_string()))
        }
        _ => StreamableHttpError::InsufficientScope(InsufficientScopeError::new(
            value.to_string(),
            scope(value),
        )),
    })
}

/// The `scope=` of a challenge, quoted or not.
fn scope(challenge: &str) -> Option<String> {
    let at = challenge.to_ascii_lowercase().find("scope=")? + "scope=".len();
    let rest = &challenge[at..];
    let scope = match rest.strip_prefix('"') {
        Some(quoted) => &quoted[..quoted.find('"')?],
        None => {
            let end = rest
                .find(|c: char| c == ',' || c == ';' || c.is_whitespace())
                .unwrap_or(rest.len());
            &rest[..end]
        }
    };
    (!scope.is_empty()).then(|| scope.to_string())
}

/// A 429 or 5xx, with a short `Retry-After` if any.
fn http_status_error(status: StatusCode, headers: &HeaderMap) -> Option<HttpStatusError> {
    if status != StatusCode::TOO_MANY_REQUESTS && !status.is_server_error() {
        return None;
    }
    let retry_after = headers
        .get(header::RETRY_AFTER)
        .filter(|v| v.as_bytes().len() <= MAX_RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    Some(HttpStatusError::new(status.as_u16(), retry_after))
}

/// A `server/discover` without a session that the server refused with a 4xx (neither
/// 401 nor 403): a JSON-RPC error of that request (the server's own if the body is one),
/// which rmcp's lifecycle reads as "a server of an earlier revision" and falls back to
/// `initialize`. rmcp's clients do the same (its `legacy_discover_response`, private).
fn discover_rejected(
    message: &ClientJsonRpcMessage,
    session_was_attached: bool,
    status: StatusCode,
    body: &str,
) -> Option<StreamableHttpPostResponse> {
    if session_was_attached
        || !status.is_client_error()
        || matches!(status, StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN)
    {
        return None;
    }
    let ClientJsonRpcMessage::Request(request) = message else {
        return None;
    };
    if !matches!(request.request, ClientRequest::DiscoverRequest(_)) {
        return None;
    }
    let error = match serde_json::from_str::<ServerJsonRpcMessage>(body) {
        Ok(ServerJsonRpcMessage::Error(error)) => error.error,
        _ => ErrorData::invalid_request(
            format!("server/discover rejected with HTTP {status}: {body}"),
            None,
        ),
    };
    Some(StreamableHttpPostResponse::Json(
        ServerJsonRpcMessage::error(error, Some(request.id.clone())),
        None,
    ))
}

/// Whether a `Content-Type` is `mime` (its essence, case-insensitive, parameters aside).
fn media_type_is(value: &HeaderValue, mime: &str) -> bool {
    let essence = value.as_bytes().split(|b| *b == b';').next().unwrap_or(b"");
    std::str::from_utf8(essence)
        .is_ok_and(|e| e.trim_matches([' ', '\t']).eq_ignore_ascii_case(mime))
}

fn content_length(headers: &HeaderMap) -> Option<u64> {
    headers
        .get(header::CONTENT_LENGTH)?
        .to_str()
        .ok()?
        .parse()
        .ok()
}

/// A whole body of at most `max` bytes; a longer one is not read past the limit (one
/// that says it is longer, not at all).
async fn read_bounded(
    mut body: Incoming,
    length: Option<u64>,
    max: usize,
    host: &str,
) -> Result<Vec<u8>, Error> {
    if length.is_some_and(|length| length > max as u64) {
        return Err(StreamableHttpError::ResponseBodyTooLarge { max_size: max });
    }
    let mut read = Vec::new();
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| {
            StreamableHttpError::Client(RemoteError::Failed {
                host: host.to_string(),
                why: format!("reading the answer: {e}"),
            })
        })?;
        if let Ok(data) = frame.into_data() {
            if data.len() > max - read.len() {
                return Err(StreamableHttpError::ResponseBodyTooLarge { max_size: max });
            }
            read.extend_from_slice(&data);
        }
    }
    Ok(read)
}

/// At most the first `max` bytes of a body, as text, for a diagnostic.
async fn read_prefix(mut body: Incoming, max: usize) -> String {
    let mut read = Vec::new();
    while read.len() < max {
        match body.frame().await {
            None => break,
            Some(Err(_)) => return unreadable(max),
            Some(Ok(frame)) => {
                if let Ok(data) = frame.into_data() {
                    let n = data.len().min(max - read.len());
                    read.extend_from_slice(&data[..n]);
                }
            }
        }
    }
    String::from_utf8_lossy(&read).into_owned()
}

fn unreadable(max: usize) -> String {
    UNREADABLE[..UNREADABLE.len().min(max)].to_string()
}

/// The first bytes of a body that is no JSON-RPC message, for the error.
fn preview(body: &[u8]) -> Cow<'_, str> {
    if body.is_empty() {
        return "<empty>".into();
    }
    String::from_utf8_lossy(&body[..body.len().min(256)])
}

/// Why an SSE body ended early.
#[derive(Debug)]
enum SseBodyError {
    Read(hyper::Error),
    EventTooLarge(usize),
}

impl std::fmt::Display for SseBodyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SseBodyError::Read(e) => write!(f, "reading the event stream: {e}"),
            SseBodyError::EventTooLarge(max) => {
                write!(f, "an SSE event exceeded the maximum size of {max} bytes")
            }
        }
    }
}

impl std::error::Error for SseBodyError {}

/// An SSE body whose bytes are counted, per event, before the parser keeps them.
struct Bounded {
    body: Incoming,
    limit: EventLimit,
    failed: bool,
    log: ExtLog,
    host: String,
}

impl http_body::Body for Bounded {
    type Data = Bytes;
    type Error = SseBodyError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Bytes>, SseBodyError>>> {
        if self.failed {
            return Poll::Ready(None);
        }
        let frame = match ready!(Pin::new(&mut self.body).poll_frame(cx)) {
            None => return Poll::Ready(None),
            Some(Err(e)) => {
                self.failed = true;
                return Poll::Ready(Some(Err(SseBodyError::Read(e))));
            }
            Some(Ok(frame)) => frame,
        };
        if let Some(data) = frame.data_ref() {
            if !self.limit.take(data) {
                self.failed = true;
                let error = SseBodyError::EventTooLarge(self.limit.max);
                self.log
                    .warn(&format!("the event stream from {}: {error}", self.host));
                return Poll::Ready(Some(Err(error)));
            }
        }
        Poll::Ready(Some(Ok(frame)))
    }
}

/// What the SSE parser keeps of the event being read: its field lines (not comments),
/// each with the newline that joins them, and the line being read; a blank line ends
/// the event. Lines end at CR, LF or CRLF.
struct EventLimit {
    max: usize,
    /// Bytes of the event's finished lines.
    kept: usize,
    /// Bytes of the line being read.
    line: usize,
    comment: bool,
    after_cr: bool,
}

impl EventLimit {
    fn new(max: usize) -> EventLimit {
        EventLimit {
            max,
            kept: 0,
            line: 0,
            comment: false,
            after_cr: false,
        }
    }

    /// Counts `bytes`; false once the event is over the limit.
    fn take(&mut self, bytes: &[u8]) -> bool {
        for &byte in bytes {
            if std::mem::take(&mut self.after_cr) && byte == b'\n' {
                continue;
            }
            match byte {
                b'\r' | b'\n' => {
                    self.after_cr = byte == b'\r';
                    if self.line == 0 {
                        self.kept = 0;
                    } else if !self.comment {
                        self.kept = self.kept.saturating_add(self.line + 1);
                    }
                    self.line = 0;
                    self.comment = false;
                }
                _ => {
                    if self.line == 0 {
                        self.comment = byte == b':';
                    }
                    self.line += 1;
                }
            }
            if self.kept.saturating_add(self.line) > self.max {
                return false;
            }
        }
        true
    }
}

#[cfg(test)]
mod tests;
