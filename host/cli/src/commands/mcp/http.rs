//! `zot mcp --http`: the same MCP server over Streamable HTTP (rmcp's service, served by
//! hyper), for clients on this machine only unless names are allowed
//! (`--http-allow-host`). A request must name a loopback (or allowed) `Host` and, if it
//! has an `Origin`, an origin of this server by one of those names (the spec's
//! DNS-rebinding rule: else 403), and carry `Authorization: Bearer <token>` (else 401).
//! Each client has its own session; all share the host.

use super::{forward, Server};
use crate::output::error::{self, CliError};
use bytes::Bytes;
use futures_core::Stream;
use http::{header, Request, Response, StatusCode};
use http_body_util::{BodyExt as _, Full};
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_server::session::local::{
    LocalSessionManager, LocalSessionManagerError,
};
use rmcp::transport::streamable_http_server::session::{EventStore, ServerSseMessage};
use rmcp::transport::streamable_http_server::{SessionId, SessionManager};
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use std::collections::HashMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::path::Path;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::net::TcpListener;
use tokio::signal::unix::{signal, SignalKind};
use tokio::sync::{Mutex, Semaphore};
use tower_service::Service as _;

/// The one path MCP is served at.
const PATH: &str = "/mcp";

/// How many connections may be open at once; one more is closed at once.
const CONNECTIONS: usize = 64;

/// How many sessions (of the revisions before 2026-07-28) may be open at once; one more
/// `initialize` closes the one idle the longest, whose client is told by a 404 on its
/// next request (the spec's way to say a session ended). Requests of 2026-07-28, which
/// has no sessions, never count.
const SESSIONS: usize = 32;

/// How long a client may take to send a request's headers.
const HEADER_TIMEOUT: Duration = Duration::from_secs(10);

/// The longest token file read.
const TOKEN_FILE_MAX: u64 = 4096;

type Body = http_body_util::combinators::BoxBody<Bytes, Infallible>;
type Mcp = StreamableHttpService<Server, Capped>;

/// Where to listen and the token to ask for, checked before anything starts.
pub(super) struct Listen {
    addr: SocketAddr,
    token: String,
    /// Where the token came from.
    made: Made,
    /// The names other machines reach this one by (`--http-allow-host`).
    remote: Vec<String>,
}

/// Where the token came from.
#[derive(Debug, PartialEq)]
enum Made {
    /// Made here, for this run only: printed.
    Printed,
    /// Read from `--token-file`.
    Read,
    /// Made here and written to `--token-file`, which did not exist (mode 0600).
    Written(std::path::PathBuf),
}

impl Listen {
    /// Refuses an address that is not loopback unless `remote` names are allowed (each
    /// a host name or address); reads the token from `token_file` (a regular file,
    /// trimmed, not empty, printable ASCII; one that does not exist yet is made, with a
    /// new token, readable by its owner only) or makes a random one.
    pub(super) fn new(
        addr: SocketAddr,
        token_file: Option<&Path>,
        remote: &[String],
    ) -> Result<Listen, String> {
        if !addr.ip().is_loopback() && remote.is_empty() {
            return Err(format!(
                "--http {addr}: not a loopback address; zot mcp serves this machine only \
                 (127.0.0.1 or [::1]) unless --http-allow-host names how other machines \
                 reach it"
            ));
        }
        if let Some(bad) = remote.iter().find(|name| !host_name(name)) {
            return Err(format!(
                "--http-allow-host {bad:?}: not a host name or address (letters, digits, \
                 '.', '-', or an IPv6 address in brackets)"
            ));
        }
        let (token, made) = match token_file {
            Some(file) => match std::fs::symlink_metadata(file) {
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    (write_token(file)?, Made::Written(file.to_path_buf()))
                }
                _ => (read_token(file)?, Made::Read),
            },
            None => (new_token()?, Made::Printed),
        };
        Ok(Listen {
            addr,
            token,
            made,
            remote: remote.to_vec(),
        })
    }
}

/// A DNS name or an IPv4 address (letters, digits, `.`, `-`), or an IPv6 address in
/// brackets: what a `Host` header names.
fn host_name(name: &str) -> bool {
    let plain = |s: &str| {
        !s.is_empty()
            && s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'-')
    };
    match name.strip_prefix('[').and_then(|n| n.strip_suffix(']')) {
        Some(v6) => v6.parse::<std::net::Ipv6Addr>().is_ok(),
        None => plain(name) && name.len() <= 253,
    }
}

fn read_token(file: &Path) -> Result<String, String> {
    let what = format!("--token-file {}", file.display());
    let meta = std::fs::metadata(file).map_err(|e| format!("{what}: {e}"))?;
    if !meta.is_file() {
        return Err(format!("{what}: not a regular file"));
    }
    if meta.len() > TOKEN_FILE_MAX {
        return Err(format!("{what}: longer than {TOKEN_FILE_MAX} bytes"));
    }
    let text = std::fs::read_to_string(file).map_err(|e| format!("{what}: {e}"))?;
    let token = text.trim();
    if token.is_empty() {
        return Err(format!("{what}: the file is empty"));
    }
    if !token.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(format!("{what}: a token is printable ASCII without spaces"));
    }
    Ok(token.to_string())
}

/// A new token in a new `file`, readable and writable by its owner only (0600), made
/// without following a link at its name and never replacing a file.
fn write_token(file: &Path) -> Result<String, String> {
    use std::io::Write as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    let what = format!("--token-file {}", file.display());
    let token = new_token()?;
    let mut out = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(file)
        .map_err(|e| format!("{what}: cannot make it: {e}"))?;
    out.write_all(format!("{token}\n").as_bytes())
        .and_then(|()| out.sync_all())
        .map_err(|e| format!("{what}: cannot write it: {e}"))?;
    Ok(token)
}

/// 32 bytes from the operating system's random source, as hex.
fn new_token() -> Result<String, String> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(|e| format!("cannot make a token: {e}"))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// Serves until SIGINT or SIGTERM (stdin is not read), then stops the extensions.
pub(super) async fn serve(config: zot_host::HostConfig, listen: Listen) -> i32 {
    let fail = |e: String| {
        error::report(&CliError::new(e).within("mcp".to_string()));
        1
    };
    let (Ok(mut term), Ok(mut int)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) else {
        return fail("cannot handle SIGTERM and SIGINT".into());
    };
    let listener = match TcpListener::bind(listen.addr).await {
        Ok(listener) => listener,
        Err(e) => return fail(format!("--http {}: {e}", listen.addr)),
    };
    let addr = match listener.local_addr() {
        Ok(addr) => addr,
        Err(e) => return fail(format!("--http {}: {e}", listen.addr)),
    };
    let max_body = config.max_frame;
    let (server, notes) = Server::start(config).await;
    let forwarding = tokio::spawn(forward(notes, server.sessions.clone(), None));
    let mcp_config = StreamableHttpServerConfig::default()
        .with_allowed_hosts(hosts(&listen.remote))
        .with_allowed_origins(origins(addr.port(), &listen.remote))
        .enforce_origin_validation()
        .with_max_request_body_bytes(max_body);
    let stop = mcp_config.cancellation_token.clone();
    let sessions = Arc::new(Capped::default());
    let first = server.clone();
    let mcp = StreamableHttpService::new(move || Ok(first.session()), sessions, mcp_config);
    let gate = Arc::new(Gate {
        mcp,
        token: listen.token,
        hosts: hosts(&listen.remote),
        origins: origins(addr.port(), &listen.remote),
    });
    eprintln!("zot mcp: serving MCP at http://{addr}{PATH}");
    if !listen.remote.is_empty() {
        eprintln!(
            "zot mcp: warning: other machines may connect as {}: this is plain HTTP, so \
             the token and every call cross the network unencrypted unless TLS is put in \
             front of it",
            listen.remote.join(", ")
        );
    }
    match listen.made {
        Made::Printed => eprintln!("zot mcp: bearer token: {}", gate.token),
        Made::Written(file) => eprintln!(
            "zot mcp: a new bearer token is in {} (readable by you only); the client sends \
             it as `Authorization: Bearer <token>`",
            file.display()
        ),
        Made::Read => {}
    }
    let connections = Arc::new(Semaphore::new(CONNECTIONS));
    loop {
        let stream = tokio::select! {
            _ = term.recv() => break,
            _ = int.recv() => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                // Out of file descriptors, say: a pause rather than a busy loop.
                Err(_) => {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
        };
        // Past the limit the connection is closed unanswered.
        let Ok(permit) = connections.clone().try_acquire_owned() else {
            continue;
        };
        let gate = gate.clone();
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |req| {
                let gate = gate.clone();
                async move { Ok::<_, Infallible>(gate.answer(req).await) }
            });
            let _ = hyper::server::conn::http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(HEADER_TIMEOUT)
                .serve_connection(TokioIo::new(stream), service)
                .await;
            drop(permit);
        });
    }
    stop.cancel();
    forwarding.abort();
    server.host.shutdown().await;
    0
}

/// The `Host` names a request may give: loopback, and the names allowed.
fn hosts(remote: &[String]) -> Vec<String> {
    let unbracket = |n: &String| n.trim_start_matches('[').trim_end_matches(']').to_string();
    let loopback = ["localhost", "127.0.0.1", "::1"].map(String::from);
    loopback
        .into_iter()
        .chain(remote.iter().map(unbracket))
        .collect()
}

/// The origins a browser page of this server would send: its loopback names with this
/// port, and each allowed name with this port or behind TLS (`https://NAME`).
fn origins(port: u16, remote: &[String]) -> Vec<String> {
    let local = ["127.0.0.1", "localhost", "[::1]"].map(|host| format!("http://{host}:{port}"));
    let far = remote
        .iter()
        .flat_map(|host| [format!("http://{host}:{port}"), format!("https://{host}")]);
    local.into_iter().chain(far).collect()
}

/// What every request passes before rmcp's service (which checks `Host` and `Origin`
/// again).
struct Gate {
    mcp: Mcp,
    token: String,
    /// The `Host` names a request may give ([`hosts`]).
    hosts: Vec<String>,
    /// The `Origin`s a request may give ([`origins`]).
    origins: Vec<String>,
}

impl Gate {
    async fn answer(&self, req: Request<Incoming>) -> Response<Body> {
        // The DNS-rebinding rule first: a foreign page learns nothing else (not whether
        // its token is right, nor how busy the server is).
        if !host_allowed(req.headers(), &self.hosts) {
            return plain(StatusCode::FORBIDDEN, "Forbidden: Host is not allowed");
        }
        if !origin_allowed(req.headers(), &self.origins) {
            return plain(StatusCode::FORBIDDEN, "Forbidden: Origin is not allowed");
        }
        if !authorized(req.headers(), self.token.as_bytes()) {
            let mut refused = plain(StatusCode::UNAUTHORIZED, "a bearer token is required");
            refused
                .headers_mut()
                .insert(header::WWW_AUTHENTICATE, "Bearer".parse().unwrap());
            return refused;
        }
        if req.uri().path() != PATH {
            return plain(StatusCode::NOT_FOUND, "MCP is served at /mcp");
        }
        match self.mcp.clone().call(req).await {
            Ok(response) => response,
            Err(never) => match never {},
        }
    }
}

/// The host part of `Host` (`127.0.0.1` of `127.0.0.1:8765`, `::1` of `[::1]:8765`) is
/// one of `hosts`, compared without case; a request without one is refused.
fn host_allowed(headers: &http::HeaderMap, hosts: &[String]) -> bool {
    let Some(host) = headers.get(header::HOST).and_then(|h| h.to_str().ok()) else {
        return false;
    };
    let name = match host.strip_prefix('[') {
        Some(v6) => v6.split_once(']').map_or("", |(name, _)| name),
        None => host.rsplit_once(':').map_or(host, |(name, _)| name),
    };
    hosts.iter().any(|h| h.eq_ignore_ascii_case(name))
}

/// A request's `Origin`, when it has one, is one of `origins` (a browser's page of this
/// server), compared without case.
fn origin_allowed(headers: &http::HeaderMap, origins: &[String]) -> bool {
    match headers.get(header::ORIGIN).map(|o| o.to_str()) {
        None => true,
        Some(Ok(origin)) => origins.iter().any(|o| o.eq_ignore_ascii_case(origin)),
        Some(Err(_)) => false,
    }
}

/// What a session did last, for choosing the one idle the longest.
struct Activity {
    /// When it last sent something, or an answer to it ended.
    last: Instant,
    /// Requests of it being answered now.
    busy: usize,
}

/// rmcp's session manager, with at most [`SESSIONS`] sessions: the count is checked and
/// the session made in one step, so `initialize`s at once cannot pass it together; when
/// full, the session idle the longest (none of its requests being answered, else the one
/// heard from longest ago) is closed to make room.
#[derive(Default)]
struct Capped {
    local: LocalSessionManager,
    /// Held while a session is counted and made.
    opening: Mutex<()>,
    activity: Arc<std::sync::Mutex<HashMap<SessionId, Activity>>>,
}

impl Capped {
    /// Notes that session `id` was heard from now.
    fn touch(&self, id: &SessionId) {
        let mut activity = self.activity.lock().unwrap();
        let now = Instant::now();
        activity
            .entry(id.clone())
            .and_modify(|a| a.last = now)
            .or_insert(Activity { last: now, busy: 0 });
    }

    /// The session to close to make room: among the open ones, idle (no request being
    /// answered) first, then heard from longest ago.
    async fn idlest(&self) -> Option<SessionId> {
        let open = self.local.sessions.read().await;
        let mut activity = self.activity.lock().unwrap();
        activity.retain(|id, _| open.contains_key(id));
        open.keys()
            .min_by_key(|id| match activity.get(*id) {
                Some(a) => (a.busy > 0, Some(a.last)),
                None => (false, None),
            })
            .cloned()
    }
}

/// An answer's stream, counted as a request of its session being answered until it ends.
struct Answering<S> {
    stream: Pin<Box<S>>,
    id: SessionId,
    activity: Arc<std::sync::Mutex<HashMap<SessionId, Activity>>>,
}

impl<S> Answering<S> {
    fn new(
        stream: S,
        id: &SessionId,
        activity: &Arc<std::sync::Mutex<HashMap<SessionId, Activity>>>,
    ) -> Self {
        let mut all = activity.lock().unwrap();
        let now = Instant::now();
        all.entry(id.clone())
            .and_modify(|a| {
                a.last = now;
                a.busy += 1;
            })
            .or_insert(Activity { last: now, busy: 1 });
        drop(all);
        Answering {
            stream: Box::pin(stream),
            id: id.clone(),
            activity: activity.clone(),
        }
    }
}

impl<S> Drop for Answering<S> {
    fn drop(&mut self) {
        if let Some(a) = self.activity.lock().unwrap().get_mut(&self.id) {
            a.busy = a.busy.saturating_sub(1);
            a.last = Instant::now();
        }
    }
}

impl<S: Stream> Stream for Answering<S> {
    type Item = S::Item;

    fn poll_next(
        mut self: Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Self::Item>> {
        self.stream.as_mut().poll_next(cx)
    }
}

impl SessionManager for Capped {
    type Error = LocalSessionManagerError;
    type Transport = <LocalSessionManager as SessionManager>::Transport;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        let _opening = self.opening.lock().await;
        while self.local.sessions.read().await.len() >= SESSIONS {
            let Some(idlest) = self.idlest().await else {
                break;
            };
            self.close_session(&idlest).await?;
        }
        let (id, transport) = self.local.create_session().await?;
        self.touch(&id);
        Ok((id, transport))
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, Self::Error> {
        self.touch(id);
        self.local.initialize_session(id, message).await
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
        self.local.has_session(id).await
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        self.activity.lock().unwrap().remove(id);
        self.local.close_session(id).await
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        let stream = self.local.create_stream(id, message).await?;
        Ok(Answering::new(stream, id, &self.activity))
    }

    async fn accept_message(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<(), Self::Error> {
        self.touch(id);
        self.local.accept_message(id, message).await
    }

    /// A client's listening stream: heard from now, but not busy (it may stay open for
    /// the whole session).
    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.touch(id);
        self.local.create_standalone_stream(id).await
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.local.resume(id, last_event_id).await
    }

    fn event_store(&self) -> Option<Arc<dyn EventStore>> {
        self.local.event_store()
    }
}

fn plain(status: StatusCode, text: &'static str) -> Response<Body> {
    let mut response = Response::new(Full::new(Bytes::from_static(text.as_bytes())).boxed());
    *response.status_mut() = status;
    response
}

/// `Authorization: Bearer <token>`, the token compared in constant time.
fn authorized(headers: &http::HeaderMap, token: &[u8]) -> bool {
    let Some(given) = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.as_bytes().strip_prefix(b"Bearer "))
    else {
        return false;
    };
    given.len() == token.len()
        && std::hint::black_box(given.iter().zip(token).fold(0u8, |d, (a, b)| d | (a ^ b))) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_exact_bearer_token_passes() {
        let with = |value: &str| {
            let mut headers = http::HeaderMap::new();
            headers.insert(header::AUTHORIZATION, value.parse().unwrap());
            authorized(&headers, b"s3cret")
        };
        assert!(with("Bearer s3cret"));
        for wrong in [
            "Bearer s3cre",
            "Bearer s3cret2",
            "Bearer S3cret",
            "Basic s3cret",
            "s3cret",
        ] {
            assert!(!with(wrong), "{wrong}");
        }
        assert!(!authorized(&http::HeaderMap::new(), b"s3cret"));
    }

    #[test]
    fn a_remote_address_and_a_bad_token_file_are_refused() {
        let any = "0.0.0.0:0".parse().unwrap();
        let err = Listen::new(any, None, &[]).err().unwrap();
        assert!(err.contains("not a loopback address"), "{err}");
        for bad in ["", "a b", "evil.example/x", "[not-v6]", "x:80"] {
            let err = Listen::new(any, None, &[bad.into()]).err().unwrap();
            assert!(err.contains("not a host name"), "{bad:?}: {err}");
        }
        for good in ["zot.example", "10.0.0.7", "[fd00::7]"] {
            assert!(Listen::new(any, None, &[good.into()]).is_ok(), "{good}");
        }
        let listen = Listen::new("[::1]:0".parse().unwrap(), None, &[]).unwrap();
        assert_eq!(listen.token.len(), 64);
        assert_eq!(listen.made, Made::Printed);
        let dir = std::env::temp_dir().join(format!("zot-token-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("token");
        for (text, why) in [("  \n", "empty"), ("a b", "printable ASCII")] {
            std::fs::write(&file, text).unwrap();
            let err = read_token(&file).unwrap_err();
            assert!(err.contains(why), "{err}");
        }
        assert!(read_token(&dir).unwrap_err().contains("not a regular file"));
        std::fs::write(&file, " t0ken\n").unwrap();
        assert_eq!(read_token(&file).unwrap(), "t0ken");

        // A file that does not exist is made, with a new token, for its owner only; a
        // link at its name is not followed.
        use std::os::unix::fs::PermissionsExt as _;
        let new = dir.join("new-token");
        let local = "127.0.0.1:0".parse().unwrap();
        let listen = Listen::new(local, Some(&new), &[]).unwrap();
        assert_eq!(listen.made, Made::Written(new.clone()));
        assert_eq!(read_token(&new).unwrap(), listen.token);
        let mode = std::fs::metadata(&new).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        let again = Listen::new(local, Some(&new), &[]).unwrap();
        assert_eq!((again.made, again.token), (Made::Read, listen.token));
        let link = dir.join("link");
        std::os::unix::fs::symlink(dir.join("elsewhere"), &link).unwrap();
        assert!(Listen::new(local, Some(&link), &[]).is_err());
        assert!(!dir.join("elsewhere").exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
