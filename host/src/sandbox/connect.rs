//! Connecting to where [`super::network::check`] said a request may go: what every
//! outgoing HTTP request of the host shares, a component's (`transport/wasm/outgoing.rs`)
//! and a remote MCP server's (`transport/mcp/remote.rs`).
//!
//! [`handshake`] connects a `TcpStream` to exactly the checked `SocketAddr`s of a
//! [`Target`] — there is no second lookup between the check and the connect, so DNS
//! rebinding cannot swap the address — runs TLS for `https` (rustls, `ring`, the Mozilla
//! roots compiled in) with SNI and certificate verification against the host name of
//! the request, then the HTTP/1.1 handshake (adapted from
//! `wasmtime_wasi_http::default_send_request`, which this host does not compile in). One
//! connection per request: nothing is pooled, so each request is checked anew.

use super::network::Target;
use hyper::client::conn::http1::{Connection, SendRequest};
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, OnceLock};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use wasmtime_wasi_http::io::TokioIo;
use wasmtime_wasi_http::Error;

/// A connection's byte stream: TCP, or TLS over TCP.
pub(crate) trait Stream: AsyncRead + AsyncWrite + Send + Sync + Unpin + 'static {}
impl<T: AsyncRead + AsyncWrite + Send + Sync + Unpin + 'static> Stream for T {}

/// What hyper reads and writes.
pub(crate) type Io = TokioIo<Box<dyn Stream>>;

/// The rustls client configuration: the `ring` provider, safe protocol versions, the
/// Mozilla root certificates (webpki-roots), no client certificate.
fn tls_config() -> Arc<rustls::ClientConfig> {
    static CONFIG: OnceLock<Arc<rustls::ClientConfig>> = OnceLock::new();
    CONFIG
        .get_or_init(|| {
            let roots = rustls::RootCertStore {
                roots: webpki_roots::TLS_SERVER_ROOTS.into(),
            };
            let config = rustls::ClientConfig::builder_with_provider(Arc::new(
                rustls::crypto::ring::default_provider(),
            ))
            .with_safe_default_protocol_versions()
            .expect("ring supports the default protocol versions")
            .with_root_certificates(roots)
            .with_no_client_auth();
            Arc::new(config)
        })
        .clone()
}

/// Connects to the first of `addrs` that answers.
pub(crate) async fn connect(addrs: &[SocketAddr], timeout: Duration) -> Result<TcpStream, Error> {
    let mut last = Error::ConnectionRefused;
    for addr in addrs {
        match tokio::time::timeout(timeout, TcpStream::connect(addr)).await {
            Ok(Ok(stream)) => return Ok(stream),
            Ok(Err(e)) => last = Error::Connect(e),
            Err(_) => last = Error::ConnectionTimeout,
        }
    }
    Err(last)
}

/// An HTTP/1.1 connection to the checked `target`: TCP to its addresses, TLS when it is
/// `https`, then hyper's handshake, each step within `timeout`. The caller drives the
/// [`Connection`] (polls or spawns it) while it uses the [`SendRequest`].
pub(crate) async fn handshake<B>(
    target: &Target,
    timeout: Duration,
) -> Result<(SendRequest<B>, Connection<Io, B>), Error>
where
    B: http_body::Body + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let tcp = connect(&target.addrs, timeout).await?;
    let stream: Box<dyn Stream> = if target.tls {
        use rustls::pki_types::ServerName;
        let name = match target.host.parse::<IpAddr>() {
            Ok(ip) => ServerName::from(ip),
            Err(_) => ServerName::try_from(target.host.clone()).map_err(|e| {
                Error::Tls(std::io::Error::new(std::io::ErrorKind::InvalidInput, e))
            })?,
        };
        let tls = tokio::time::timeout(
            timeout,
            tokio_rustls::TlsConnector::from(tls_config()).connect(name, tcp),
        )
        .await
        .map_err(|_| Error::ConnectionTimeout)?
        .map_err(Error::Tls)?;
        Box::new(tls)
    } else {
        Box::new(tcp)
    };
    let handshake = hyper::client::conn::http1::Builder::new().handshake(TokioIo::new(stream));
    Ok(tokio::time::timeout(timeout, handshake)
        .await
        .map_err(|_| Error::ConnectionTimeout)??)
}

/// `uri` as a request line carries it over a connection of [`handshake`]'s: the path
/// and query only (the authority goes in `Host`).
pub(crate) fn origin_form(uri: &http::Uri) -> Result<http::Uri, Error> {
    http::Uri::builder()
        .path_and_query(uri.path_and_query().map(|p| p.as_str()).unwrap_or("/"))
        .build()
        .map_err(|_| Error::HttpRequestUriInvalid)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sandbox::network::tests::run;

    #[test]
    fn the_request_line_carries_the_path_only() {
        let uri: http::Uri = "https://example.com:8443/mcp?x=1".parse().unwrap();
        assert_eq!(origin_form(&uri).unwrap(), "/mcp?x=1");
        let bare: http::Uri = "http://example.com".parse().unwrap();
        assert_eq!(origin_form(&bare).unwrap(), "/");
    }

    #[test]
    fn a_closed_port_fails_to_connect() {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let target = Target {
            host: "127.0.0.1".into(),
            tls: false,
            addrs: vec![SocketAddr::from(([127, 0, 0, 1], port))],
            skipped: Vec::new(),
        };
        let err = run(async {
            handshake::<http_body_util::Empty<bytes::Bytes>>(&target, Duration::from_secs(5))
                .await
                .err()
                .unwrap()
        });
        assert!(matches!(err, Error::Connect(_)), "{err:?}");
    }
}
