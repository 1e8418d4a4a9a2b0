//! Outgoing HTTP (`wasi:http/outgoing-handler`), only to the hosts the policy lists.
//!
//! Every request a component makes reaches [`HttpGate::send_request`], which
//!
//! 1. matches the request's scheme, host and port against the allow-list
//!    ([`HostPattern::allows`]); no entry → `HttpRequestDenied`;
//! 2. resolves the host **once** (`tokio::net::lookup_host`; an IP literal is not looked
//!    up) and drops every private, loopback, link-local, shared or unspecified address
//!    ([`restricted`]); nothing left → `DestinationIpProhibited`. Such an address is
//!    reached only by a request to the address itself, allowed by an entry that names it
//!    literally (`http://127.0.0.1:8080`): a host name never leads to one;
//! 3. connects a `TcpStream` to exactly those checked `SocketAddr`s — there is no second
//!    lookup between the check and the connect, so DNS rebinding cannot swap the address;
//! 4. for `https`, runs TLS (rustls, `ring`, the Mozilla roots compiled in) with SNI and
//!    certificate verification against the host name of the request, then the HTTP/1.1
//!    handshake (adapted from `wasmtime_wasi_http::default_send_request`, which this host
//!    does not compile in).
//!
//! A refusal is logged in the extension's log as `denied HTTP to <host>: <why>`.

use crate::log::ExtLog;
use crate::sandbox::HostPattern;
use bytes::Bytes;
use http_body_util::BodyExt;
use std::future::{poll_fn, Future};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::pin::{pin, Pin};
use std::sync::{Arc, OnceLock};
use std::task::{ready, Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use wasmtime_wasi_http::io::TokioIo;
use wasmtime_wasi_http::{Error, RequestOptions, WasiBody, WasiHttpHooks};

/// Connect (and DNS) timeout unless the guest's request options say otherwise.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);
/// First-byte and between-bytes timeouts unless the guest's request options say otherwise.
const READ_TIMEOUT: Duration = Duration::from_secs(600);

type IoFuture = Box<dyn Future<Output = Result<(), Error>> + Send>;
type SendFuture =
    Box<dyn Future<Output = Result<(http::Response<WasiBody>, IoFuture), Error>> + Send>;

/// The `wasi:http` hooks of one component: its allow-list and its log.
pub(super) struct HttpGate {
    allow: Arc<[HostPattern]>,
    log: ExtLog,
}

impl HttpGate {
    pub(super) fn new(allow: Vec<HostPattern>, log: ExtLog) -> HttpGate {
        HttpGate {
            allow: allow.into(),
            log,
        }
    }
}

impl WasiHttpHooks for HttpGate {
    fn send_request(
        &mut self,
        request: http::Request<WasiBody>,
        options: Option<RequestOptions>,
        fut: IoFuture,
    ) -> SendFuture {
        drop(fut);
        let allow = self.allow.clone();
        let log = self.log.clone();
        Box::new(async move {
            let connect_timeout = options
                .and_then(|o| o.connect_timeout)
                .unwrap_or(CONNECT_TIMEOUT);
            let target = match check(&allow, request.uri(), connect_timeout).await {
                Ok(target) => target,
                Err(denied) => {
                    log.warn(&format!("denied HTTP to {}: {}", denied.host, denied.why));
                    return Err(denied.code);
                }
            };
            for (addr, why) in &target.skipped {
                log.warn(&format!(
                    "HTTP to {}: skipped {} ({why}): reached only by naming the address itself",
                    target.host,
                    addr.ip()
                ));
            }
            send(request, options, target).await
        })
    }
}

/// Where a request may go: the checked addresses, nothing else.
#[derive(Debug)]
struct Target {
    host: String,
    tls: bool,
    addrs: Vec<SocketAddr>,
    /// Addresses the name resolved to that were refused.
    skipped: Vec<(SocketAddr, &'static str)>,
}

/// A refused request: the host, why (for the log) and the guest's error code.
#[derive(Debug)]
struct Denied {
    host: String,
    why: String,
    code: Error,
}

/// Decides where the request to `uri` may connect, resolving its host once.
async fn check(
    allow: &[HostPattern],
    uri: &http::Uri,
    timeout: Duration,
) -> Result<Target, Denied> {
    let host = uri
        .host()
        .unwrap_or_default()
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_ascii_lowercase();
    let deny = |why: String, code: Error| Denied {
        host: if host.is_empty() {
            "(no host)".into()
        } else {
            host.clone()
        },
        why,
        code,
    };
    let tls = match uri.scheme_str() {
        Some("https") => true,
        Some("http") => false,
        other => {
            return Err(deny(
                format!("scheme {:?} is neither http nor https", other.unwrap_or("")),
                Error::HttpProtocolError,
            ))
        }
    };
    if host.is_empty() {
        return Err(deny(
            "the request names no host".into(),
            Error::HttpRequestUriInvalid,
        ));
    }
    let scheme = if tls { "https" } else { "http" };
    let port = uri.port_u16().unwrap_or(if tls { 443 } else { 80 });
    if allow.is_empty() {
        return Err(deny(
            "no http permission is in force (none asked, or none granted)".into(),
            Error::HttpRequestDenied,
        ));
    }
    if !allow.iter().any(|p| p.allows(scheme, &host, port)) {
        let listed: Vec<String> = allow.iter().map(ToString::to_string).collect();
        return Err(deny(
            format!(
                "{scheme} port {port} of this host is not in the allow-list ({})",
                listed.join(", ")
            ),
            Error::HttpRequestDenied,
        ));
    }
    // An IP literal that an entry matched is named literally by that entry.
    if let Ok(ip) = host.parse::<IpAddr>() {
        return Ok(Target {
            host,
            tls,
            addrs: vec![SocketAddr::new(ip, port)],
            skipped: Vec::new(),
        });
    }
    let resolved: Vec<SocketAddr> =
        match tokio::time::timeout(timeout, tokio::net::lookup_host((host.as_str(), port))).await {
            Err(_) => return Err(deny("the DNS lookup timed out".into(), Error::DnsTimeout)),
            Ok(Err(e)) => {
                return Err(deny(
                    format!("the DNS lookup failed: {e}"),
                    Error::DnsError {
                        rcode: Some(e.to_string()),
                        info_code: None,
                    },
                ))
            }
            Ok(Ok(addrs)) => addrs.collect(),
        };
    let mut addrs = Vec::new();
    let mut skipped = Vec::new();
    for addr in resolved {
        match restricted(addr.ip()) {
            Some(why) => skipped.push((addr, why)),
            None => addrs.push(addr),
        }
    }
    if addrs.is_empty() {
        let what: Vec<String> = skipped
            .iter()
            .map(|(a, why)| format!("{} ({why})", a.ip()))
            .collect();
        return Err(deny(
            if what.is_empty() {
                "the DNS lookup found no address".into()
            } else {
                format!(
                    "it resolves to {}: such an address is reached only by a request to \
                     the address itself, allowed by an entry naming it ({scheme}://{}:{port})",
                    what.join(", "),
                    match skipped[0].0 {
                        SocketAddr::V4(a) => a.ip().to_string(),
                        SocketAddr::V6(a) => format!("[{}]", a.ip()),
                    }
                )
            },
            Error::DestinationIpProhibited,
        ));
    }
    Ok(Target {
        host,
        tls,
        addrs,
        skipped,
    })
}

/// Why `ip` is off limits unless named literally: private, loopback, link-local, shared,
/// unspecified (and multicast/broadcast); `None` for an ordinary public address.
pub fn restricted(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => restricted_v4(v4),
        IpAddr::V6(v6) => {
            let s = v6.segments();
            if v6.is_unspecified() {
                Some("unspecified")
            } else if v6.is_loopback() {
                Some("loopback")
            } else if let Some(v4) = v6.to_ipv4_mapped() {
                restricted_v4(v4)
            } else if s[..6] == [0, 0, 0, 0, 0, 0] || s[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
                // IPv4-compatible (deprecated) and NAT64 addresses embed an IPv4 address.
                restricted_v4(Ipv4Addr::new(
                    (s[6] >> 8) as u8,
                    s[6] as u8,
                    (s[7] >> 8) as u8,
                    s[7] as u8,
                ))
            } else if s[0] & 0xfe00 == 0xfc00 {
                Some("unique local, fc00::/7")
            } else if s[0] & 0xffc0 == 0xfe80 {
                Some("link-local, fe80::/10")
            } else if v6.is_multicast() {
                Some("multicast")
            } else {
                None
            }
        }
    }
}

fn restricted_v4(ip: Ipv4Addr) -> Option<&'static str> {
    match ip.octets() {
        [0, ..] => Some("this network, 0.0.0.0/8"),
        [127, ..] => Some("loopback"),
        [10, ..] => Some("private, 10.0.0.0/8"),
        [172, b, ..] if (16..=31).contains(&b) => Some("private, 172.16.0.0/12"),
        [192, 168, ..] => Some("private, 192.168.0.0/16"),
        [169, 254, ..] => Some("link-local, 169.254.0.0/16"),
        [100, b, ..] if (64..=127).contains(&b) => Some("shared address space, 100.64.0.0/10"),
        _ if ip.is_multicast() || ip.is_broadcast() => Some("multicast or broadcast"),
        _ => None,
    }
}

trait Stream: AsyncRead + AsyncWrite + Send + Sync + Unpin + 'static {}
impl<T: AsyncRead + AsyncWrite + Send + Sync + Unpin + 'static> Stream for T {}

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
async fn connect(addrs: &[SocketAddr], timeout: Duration) -> Result<TcpStream, Error> {
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

/// Sends `req` over a connection to the checked `target` (adapted from
/// `wasmtime_wasi_http::default_send_request`).
async fn send(
    mut req: http::Request<WasiBody>,
    options: Option<RequestOptions>,
    target: Target,
) -> Result<(http::Response<WasiBody>, IoFuture), Error> {
    let connect_timeout = options
        .and_then(|o| o.connect_timeout)
        .unwrap_or(CONNECT_TIMEOUT);
    let first_byte_timeout = options
        .and_then(|o| o.first_byte_timeout)
        .unwrap_or(READ_TIMEOUT);
    let between_bytes_timeout = options
        .and_then(|o| o.between_bytes_timeout)
        .unwrap_or(READ_TIMEOUT);

    let tcp = connect(&target.addrs, connect_timeout).await?;
    let stream: Box<dyn Stream> = if target.tls {
        use rustls::pki_types::ServerName;
        let name = match target.host.parse::<IpAddr>() {
            Ok(ip) => ServerName::from(ip),
            Err(_) => ServerName::try_from(target.host.clone()).map_err(|e| {
                Error::Tls(std::io::Error::new(std::io::ErrorKind::InvalidInput, e))
            })?,
        };
        let tls = tokio_rustls::TlsConnector::from(tls_config())
            .connect(name, tcp)
            .await
            .map_err(Error::Tls)?;
        Box::new(tls)
    } else {
        Box::new(tcp)
    };
    let (mut sender, conn) = tokio::time::timeout(
        connect_timeout,
        hyper::client::conn::http1::Builder::new().handshake(TokioIo::new(stream)),
    )
    .await
    .map_err(|_| Error::ConnectionTimeout)??;

    // The request line carries the path only (the authority is in `Host`).
    *req.uri_mut() = http::Uri::builder()
        .path_and_query(
            req.uri()
                .path_and_query()
                .map(|p| p.as_str())
                .unwrap_or("/"),
        )
        .build()
        .map_err(|_| Error::HttpRequestUriInvalid)?;

    let send = async move {
        let res = tokio::time::timeout(first_byte_timeout, sender.send_request(req))
            .await
            .map_err(|_| Error::ConnectionReadTimeout)?
            .map_err(Error::from)?;
        let mut timeout = tokio::time::interval(between_bytes_timeout.max(Duration::new(0, 1)));
        timeout.reset();
        Ok::<_, Error>(res.map(|incoming| IncomingBody { incoming, timeout }))
    };
    let mut send = pin!(send);
    let mut conn = Some(conn);
    // Wait for the response while driving the connection.
    let res = poll_fn(|cx| match send.as_mut().poll(cx) {
        Poll::Ready(r) => Poll::Ready(r),
        Poll::Pending => {
            let Some(fut) = conn.as_mut() else {
                return Poll::Pending;
            };
            let res = ready!(Pin::new(fut).poll(cx));
            conn = None;
            match res {
                Ok(()) => send.as_mut().poll(cx),
                Err(err) => Poll::Ready(Err(Error::from(err))),
            }
        }
    })
    .await?;
    let io: IoFuture = Box::new(async move {
        let Some(conn) = conn.take() else {
            return Ok(());
        };
        match conn.await {
            Ok(()) => Ok(()),
            Err(e) if e.is_timeout() => Err(Error::HttpResponseTimeout),
            Err(e) => Err(e.into()),
        }
    });
    Ok((res.map(BodyExt::boxed_unsync), io))
}

/// A response body with the between-bytes timeout.
struct IncomingBody {
    incoming: hyper::body::Incoming,
    timeout: tokio::time::Interval,
}

impl http_body::Body for IncomingBody {
    type Data = Bytes;
    type Error = Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Bytes>, Error>>> {
        match Pin::new(&mut self.incoming).poll_frame(cx) {
            Poll::Ready(None) => Poll::Ready(None),
            Poll::Ready(Some(Err(err))) => Poll::Ready(Some(Err(if err.is_timeout() {
                Error::HttpResponseTimeout
            } else {
                Error::from(err)
            }))),
            Poll::Ready(Some(Ok(frame))) => {
                self.timeout.reset();
                Poll::Ready(Some(Ok(frame)))
            }
            Poll::Pending => {
                ready!(self.timeout.poll_tick(cx));
                Poll::Ready(Some(Err(Error::ConnectionReadTimeout)))
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.incoming.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.incoming.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn restricted_ranges() {
        for r in [
            "127.0.0.1",
            "127.255.0.9",
            "10.1.2.3",
            "172.16.0.1",
            "172.31.255.255",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "100.127.255.255",
            "0.0.0.0",
            "0.1.2.3",
            "255.255.255.255",
            "::1",
            "::",
            "fc00::1",
            "fd12:3456::1",
            "fe80::1",
            "febf::1",
            "::ffff:127.0.0.1",
            "::ffff:10.0.0.1",
            "::ffff:169.254.169.254",
            "::127.0.0.1",
            "64:ff9b::10.0.0.1",
        ] {
            assert!(restricted(ip(r)).is_some(), "{r} must be restricted");
        }
        for ok in [
            "8.8.8.8",
            "172.15.0.1",
            "172.32.0.1",
            "100.63.0.1",
            "100.128.0.1",
            "192.169.0.1",
            "2606:4700::1111",
            "::ffff:8.8.8.8",
        ] {
            assert_eq!(restricted(ip(ok)), None, "{ok} is public");
        }
    }

    fn patterns(entries: &[&str]) -> Vec<HostPattern> {
        entries
            .iter()
            .map(|e| HostPattern::parse(e).unwrap())
            .collect()
    }

    fn uri(s: &str) -> http::Uri {
        s.parse().unwrap()
    }

    fn run<T>(f: impl Future<Output = T>) -> T {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
            .block_on(f)
    }

    #[test]
    fn literal_addresses_pass_without_dns_and_others_are_denied() {
        let allow = patterns(&["http://127.0.0.1:8080", "http://[::1]:8080"]);
        let t = run(check(
            &allow,
            &uri("http://127.0.0.1:8080/x"),
            CONNECT_TIMEOUT,
        ))
        .unwrap();
        assert_eq!(t.addrs, vec!["127.0.0.1:8080".parse().unwrap()]);
        let t = run(check(&allow, &uri("http://[::1]:8080/"), CONNECT_TIMEOUT)).unwrap();
        assert_eq!(t.addrs, vec!["[::1]:8080".parse().unwrap()]);
        for denied in [
            "http://127.0.0.1:8081/",
            "https://127.0.0.1:8080/",
            "http://127.0.0.2:8080/",
            "http://[::ffff:127.0.0.1]:8080/",
            "http://example.com/",
        ] {
            let d = run(check(&allow, &uri(denied), CONNECT_TIMEOUT)).unwrap_err();
            assert!(
                matches!(d.code, Error::HttpRequestDenied),
                "{denied}: {d:?}"
            );
        }
        let d = run(check(&[], &uri("https://example.com/"), CONNECT_TIMEOUT)).unwrap_err();
        assert_eq!(d.host, "example.com");
        assert!(d.why.contains("no http permission"), "{d:?}");
    }

    /// A one-shot plain HTTP server on 127.0.0.1; returns its port.
    fn one_shot_server(body: &'static str) -> u16 {
        use std::io::{Read, Write};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        std::thread::spawn(move || {
            let (mut s, _) = listener.accept().unwrap();
            s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
            let mut buf = [0u8; 4096];
            let _ = s.read(&mut buf);
            let _ = write!(
                s,
                "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        });
        port
    }

    fn get(url: &str) -> http::Request<WasiBody> {
        http::Request::get(url)
            .body(
                http_body_util::Empty::<Bytes>::new()
                    .map_err(|never| match never {})
                    .boxed_unsync(),
            )
            .unwrap()
    }

    #[test]
    fn the_checked_address_is_the_one_connected() {
        let port = one_shot_server("local body");
        let allow = patterns(&[&format!("http://127.0.0.1:{port}")]);
        let body = run(async {
            let req = get(&format!("http://127.0.0.1:{port}/p"));
            let target = check(&allow, req.uri(), CONNECT_TIMEOUT).await.unwrap();
            let (res, io) = send(req, None, target).await.unwrap();
            // wasmtime-wasi-http drives the connection the same way.
            tokio::spawn(Pin::from(io));
            assert_eq!(res.status(), 200);
            res.into_body().collect().await.unwrap().to_bytes()
        });
        assert_eq!(&body[..], b"local body");
    }

    #[test]
    fn https_runs_tls_and_fails_against_a_plain_server() {
        let port = one_shot_server("not TLS");
        let allow = patterns(&[&format!("https://127.0.0.1:{port}")]);
        let err = run(async {
            let req = get(&format!("https://127.0.0.1:{port}/"));
            let target = check(&allow, req.uri(), CONNECT_TIMEOUT).await.unwrap();
            assert!(target.tls);
            send(req, None, target).await.err().unwrap()
        });
        assert!(matches!(err, Error::Tls(_)), "{err:?}");
    }

    #[test]
    fn a_listed_name_resolving_to_loopback_is_refused_even_if_the_address_is_listed() {
        let d = run(check(
            &patterns(&["http://localhost:8080"]),
            &uri("http://localhost:8080/"),
            CONNECT_TIMEOUT,
        ))
        .unwrap_err();
        assert!(matches!(d.code, Error::DestinationIpProhibited), "{d:?}");
        assert!(d.why.contains("loopback"), "{d:?}");
        // Listing the address allows requests to the address, not to names for it.
        let d = run(check(
            &patterns(&[
                "http://localhost:8080",
                "http://127.0.0.1:8080",
                "http://[::1]:8080",
            ]),
            &uri("http://localhost:8080/"),
            CONNECT_TIMEOUT,
        ))
        .unwrap_err();
        assert!(matches!(d.code, Error::DestinationIpProhibited), "{d:?}");
    }
}
