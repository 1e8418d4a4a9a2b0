//! Outgoing HTTP (`wasi:http/outgoing-handler`), only where the sandbox allows.
//!
//! Every request a component makes reaches [`HttpGate::send_request`], which
//!
//! 1. asks the sandbox where it may go (`sandbox::network::check`: the allow-list, one
//!    DNS lookup, the restricted address ranges); a refusal is the guest's error code;
//! 2. connects to exactly those checked `SocketAddr`s, with TLS for `https`, and runs
//!    the HTTP/1.1 handshake (`sandbox::connect::handshake`, which a remote MCP server's
//!    requests share); then sends the request as
//!    `wasmtime_wasi_http::default_send_request` would (which this host does not
//!    compile in).
//!
//! A refusal is logged in the extension's log as `denied HTTP to <host>: <why>`; a
//! connection, TLS or HTTP failure as `HTTP failed: <why>`, in words (not wasmtime's
//! default hooks, which warn with debug text on zot's own stderr).

use crate::log::ExtLog;
use crate::sandbox::connect::{handshake, origin_form};
use crate::sandbox::network::{check, Target, CONNECT_TIMEOUT};
use crate::sandbox::{HostPattern, Limit};
use bytes::Bytes;
use http_body_util::BodyExt;
use std::future::{poll_fn, Future};
use std::pin::{pin, Pin};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{ready, Context, Poll};
use std::time::Duration;
use wasmtime_wasi_http::p2::bindings::http::types::ErrorCode;
use wasmtime_wasi_http::{Error, RequestOptions, WasiBody, WasiHttpHooks};

/// First-byte and between-bytes timeouts unless the guest's request options say otherwise.
const READ_TIMEOUT: Duration = Duration::from_secs(600);

type IoFuture = Box<dyn Future<Output = Result<(), Error>> + Send>;
type SendFuture =
    Box<dyn Future<Output = Result<(http::Response<WasiBody>, IoFuture), Error>> + Send>;

/// The `wasi:http` hooks of one component: its allow-list, its log, and its requests in
/// flight.
pub(super) struct HttpGate {
    allow: Arc<[HostPattern]>,
    log: ExtLog,
    in_flight: Arc<AtomicUsize>,
    /// At most this many requests in flight (`limits.http_requests`).
    max_in_flight: usize,
}

impl HttpGate {
    pub(super) fn new(allow: Vec<HostPattern>, log: ExtLog, max_in_flight: usize) -> HttpGate {
        HttpGate {
            allow: allow.into(),
            log,
            in_flight: Arc::default(),
            max_in_flight,
        }
    }

    /// A place among the requests in flight, if one is free.
    fn reserve(&self) -> Option<InFlight> {
        self.in_flight
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| {
                (n < self.max_in_flight).then_some(n + 1)
            })
            .ok()
            .map(|_| InFlight(self.in_flight.clone()))
    }
}

/// One request in flight, from its check until its connection is closed (the response
/// body read or dropped) or it fails.
struct InFlight(Arc<AtomicUsize>);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
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
        let Some(in_flight) = self.reserve() else {
            let cap = Limit::HttpRequests.named(self.max_in_flight as u64);
            let host = request.uri().host().unwrap_or("").to_string();
            return Box::new(async move {
                log.warn(&format!("refused HTTP to {host}: {cap} reached"));
                Err(Error::ConnectionLimitReached)
            });
        };
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
            let (response, io) = send(request, options, target).await?;
            let io: IoFuture = Box::new(async move {
                let _in_flight = in_flight;
                Pin::from(io).await
            });
            Ok((response, io))
        })
    }

    fn p2_error_from_connect(&mut self, err: &std::io::Error) -> ErrorCode {
        self.log
            .warn(&format!("HTTP failed: cannot connect: {err}"));
        connect_error_code(err)
    }

    fn p2_error_from_tls(&mut self, err: &std::io::Error) -> ErrorCode {
        self.log.warn(&format!("HTTP failed: TLS: {err}"));
        tls_error_code(err)
    }

    fn p2_error_from_hyper(&mut self, err: &hyper::Error) -> ErrorCode {
        self.log.warn(&format!("HTTP failed: {err}"));
        if err.is_timeout() {
            ErrorCode::HttpResponseTimeout
        } else if err.is_incomplete_message() {
            ErrorCode::HttpResponseIncomplete
        } else {
            ErrorCode::HttpProtocolError
        }
    }
}

/// The guest's error code for a failed connect.
fn connect_error_code(err: &std::io::Error) -> ErrorCode {
    use std::io::ErrorKind::*;
    match err.kind() {
        TimedOut => ErrorCode::ConnectionTimeout,
        HostUnreachable | NetworkUnreachable => ErrorCode::DestinationUnavailable,
        ConnectionReset | ConnectionAborted => ErrorCode::ConnectionTerminated,
        // Refused, and anything else that kept the connection from being made.
        _ => ErrorCode::ConnectionRefused,
    }
}

/// The guest's error code for a failed TLS handshake: a certificate that does not verify,
/// or any other TLS failure.
fn tls_error_code(err: &std::io::Error) -> ErrorCode {
    let certificate = err
        .get_ref()
        .and_then(|e| e.downcast_ref::<rustls::Error>())
        .is_some_and(|e| {
            matches!(
                e,
                rustls::Error::InvalidCertificate(_) | rustls::Error::NoCertificatesPresented
            )
        });
    if certificate {
        ErrorCode::TlsCertificateError
    } else {
        ErrorCode::TlsProtocolError
    }
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

    let (mut sender, conn) = handshake(&target, connect_timeout).await?;
    // The request line carries the path only (the authority is in `Host`).
    *req.uri_mut() = origin_form(req.uri())?;

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
    use crate::sandbox::connect::connect;
    use crate::sandbox::network::tests::{patterns, run};
    use std::net::SocketAddr;

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
        let Error::Tls(io) = err else { unreachable!() };
        assert!(matches!(tls_error_code(&io), ErrorCode::TlsProtocolError));
    }

    #[test]
    fn a_closed_port_is_connection_refused() {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        let err = run(async { connect(&[addr], CONNECT_TIMEOUT).await.err().unwrap() });
        let Error::Connect(io) = err else {
            panic!("{err:?}")
        };
        assert!(matches!(
            connect_error_code(&io),
            ErrorCode::ConnectionRefused
        ));
        let timed_out = std::io::Error::from(std::io::ErrorKind::TimedOut);
        assert!(matches!(
            connect_error_code(&timed_out),
            ErrorCode::ConnectionTimeout
        ));
    }

    #[test]
    fn a_certificate_that_does_not_verify_is_a_certificate_error() {
        let bad = rustls::Error::InvalidCertificate(rustls::CertificateError::UnknownIssuer);
        let io = std::io::Error::new(std::io::ErrorKind::InvalidData, bad);
        assert!(matches!(
            tls_error_code(&io),
            ErrorCode::TlsCertificateError
        ));
    }
}
