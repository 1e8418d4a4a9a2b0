//! `zot mcp --http`: the same MCP server over Streamable HTTP (rmcp's service, served by
//! hyper), for clients on this machine only. A request must come to a loopback address,
//! name a loopback `Host` and, if it has an `Origin`, a loopback origin of this server
//! (the spec's DNS-rebinding rule: else 403), and carry `Authorization: Bearer <token>`
//! (else 401). Each client has its own session; all share the host.

use super::{forward, Server};
use crate::cli::error::{self, CliError};
use bytes::Bytes;
use http::{header, Request, Response, StatusCode};
use http_body_util::{BodyExt as _, Full};
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use std::convert::Infallible;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::signal::unix::{signal, SignalKind};
use tokio::sync::Semaphore;
use tower_service::Service as _;

/// The one path MCP is served at.
const PATH: &str = "/mcp";

/// How many connections may be open at once; one more is closed at once.
const CONNECTIONS: usize = 64;

/// How many sessions may be open at once; one more `initialize` is answered 503.
const SESSIONS: usize = 32;

/// How long a client may take to send a request's headers.
const HEADER_TIMEOUT: Duration = Duration::from_secs(10);

/// The longest token file read.
const TOKEN_FILE_MAX: u64 = 4096;

type Body = http_body_util::combinators::BoxBody<Bytes, Infallible>;
type Mcp = StreamableHttpService<Server, LocalSessionManager>;

/// Where to listen and the token to ask for, checked before anything starts.
pub(super) struct Listen {
    addr: SocketAddr,
    token: String,
    /// The token was made here (and is printed), not read from a file.
    generated: bool,
}

impl Listen {
    /// Refuses an address that is not loopback; reads the token from `token_file` (a
    /// regular file, trimmed, not empty, printable ASCII) or makes a random one.
    pub(super) fn new(addr: SocketAddr, token_file: Option<&Path>) -> Result<Listen, String> {
        if !addr.ip().is_loopback() {
            return Err(format!(
                "--http {addr}: not a loopback address; zot mcp serves this machine only \
                 (127.0.0.1 or [::1])"
            ));
        }
        let (token, generated) = match token_file {
            Some(file) => (read_token(file)?, false),
            None => (new_token()?, true),
        };
        Ok(Listen {
            addr,
            token,
            generated,
        })
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
    let forwarding = tokio::spawn(forward(notes, server.sessions.clone()));
    let mcp_config = StreamableHttpServerConfig::default()
        .with_allowed_hosts(["localhost", "127.0.0.1", "::1"])
        .with_allowed_origins(origins(addr.port()))
        .enforce_origin_validation()
        .with_max_request_body_bytes(max_body);
    let stop = mcp_config.cancellation_token.clone();
    let sessions = Arc::new(LocalSessionManager::default());
    let first = server.clone();
    let mcp = StreamableHttpService::new(move || Ok(first.session()), sessions.clone(), mcp_config);
    let gate = Arc::new(Gate {
        mcp,
        sessions,
        token: listen.token,
    });
    eprintln!("zot mcp: serving MCP at http://{addr}{PATH}");
    if listen.generated {
        eprintln!("zot mcp: bearer token: {}", gate.token);
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

/// The origins a browser page of this server would send: its loopback names, this port.
fn origins(port: u16) -> Vec<String> {
    ["127.0.0.1", "localhost", "[::1]"]
        .iter()
        .map(|host| format!("http://{host}:{port}"))
        .collect()
}

/// What every request passes before rmcp's service (which checks `Host` and `Origin`).
struct Gate {
    mcp: Mcp,
    sessions: Arc<LocalSessionManager>,
    token: String,
}

impl Gate {
    async fn answer(&self, req: Request<Incoming>) -> Response<Body> {
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
        if !req.headers().contains_key("mcp-session-id")
            && self.sessions.sessions.read().await.len() >= SESSIONS
        {
            return plain(
                StatusCode::SERVICE_UNAVAILABLE,
                "too many sessions are open: try again later",
            );
        }
        match self.mcp.clone().call(req).await {
            Ok(response) => response,
            Err(never) => match never {},
        }
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
        let err = Listen::new("0.0.0.0:0".parse().unwrap(), None)
            .err()
            .unwrap();
        assert!(err.contains("not a loopback address"), "{err}");
        let listen = Listen::new("[::1]:0".parse().unwrap(), None).unwrap();
        assert_eq!(listen.token.len(), 64);
        assert!(listen.generated);
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
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
