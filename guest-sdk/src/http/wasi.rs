//! HTTP in the sandbox: `wasi:http/outgoing-handler`, which the host checks against the
//! granted allow-list before anything leaves.

use super::words;
use super::{Request, Response, MAX_BODY};
use wasi::http::outgoing_handler;
use wasi::http::types::{
    http_error_code, Fields, IncomingBody, Method, OutgoingBody, OutgoingRequest, Scheme,
};
use wasi::io::streams::StreamError;

/// `blocking-write-and-flush` takes at most this much at a time.
const WRITE_CHUNK: usize = 4096;

pub(super) fn send(request: &Request) -> Result<Response, String> {
    let (scheme, rest) = match request.url.split_once("://") {
        Some(("http", rest)) => (Scheme::Http, rest),
        Some(("https", rest)) => (Scheme::Https, rest),
        _ => return Err("only http:// and https:// URLs".into()),
    };
    let (authority, path) = match rest.find(['/', '?']) {
        Some(at) if rest[at..].starts_with('/') => (&rest[..at], rest[at..].to_string()),
        Some(at) => (&rest[..at], format!("/{}", &rest[at..])),
        None => (rest, "/".to_string()),
    };
    let headers: Vec<(String, Vec<u8>)> = request
        .headers
        .iter()
        .map(|(n, v)| (n.to_ascii_lowercase(), v.as_bytes().to_vec()))
        .collect();
    let fields = Fields::from_list(&headers).map_err(|e| words::header_error(&e))?;
    let outgoing = OutgoingRequest::new(fields);
    outgoing
        .set_method(&method(&request.method))
        .map_err(|()| "bad method")?;
    outgoing
        .set_scheme(Some(&scheme))
        .map_err(|()| "bad scheme")?;
    outgoing
        .set_authority(Some(authority))
        .map_err(|()| "bad host")?;
    outgoing
        .set_path_with_query(Some(&path))
        .map_err(|()| "bad path")?;

    let body = outgoing.body().map_err(|()| "no request body")?;
    let said = |code| words::error_code(&code, authority);
    // A stream that failed: the host's error code if it gave one.
    let failed = |what: &str, e: StreamError| match e {
        StreamError::LastOperationFailed(e) => match http_error_code(&e) {
            Some(code) => said(code),
            None => format!("{what} failed"),
        },
        StreamError::Closed => format!("{what} failed: the stream was closed"),
    };
    let future = outgoing_handler::handle(outgoing, None).map_err(said)?;
    {
        let stream = body.write().map_err(|()| "no request body stream")?;
        for chunk in request.body.chunks(WRITE_CHUNK) {
            stream
                .blocking_write_and_flush(chunk)
                .map_err(|e| failed("sending the body", e))?;
        }
    }
    OutgoingBody::finish(body, None).map_err(said)?;

    let response = loop {
        match future.get() {
            Some(response) => break response,
            None => future.subscribe().block(),
        }
    };
    let response = response
        .map_err(|()| "the response was taken twice".to_string())?
        .map_err(said)?;
    let status = response.status();
    let headers = response
        .headers()
        .entries()
        .into_iter()
        .map(|(n, v)| (n, String::from_utf8_lossy(&v).into_owned()))
        .collect();
    let incoming = response.consume().map_err(|()| "no response body")?;
    let mut bytes = Vec::new();
    {
        let stream = incoming.stream().map_err(|()| "no response body stream")?;
        loop {
            match stream.blocking_read(64 * 1024) {
                Ok(chunk) => bytes.extend_from_slice(&chunk),
                Err(StreamError::Closed) => break,
                Err(e) => return Err(failed("reading the response", e)),
            }
            if bytes.len() > MAX_BODY {
                return Err(format!("the response body is over {MAX_BODY} bytes"));
            }
        }
    }
    drop(IncomingBody::finish(incoming));
    Ok(Response {
        status,
        headers,
        body: bytes,
    })
}

fn method(name: &str) -> Method {
    match name {
        "GET" => Method::Get,
        "HEAD" => Method::Head,
        "POST" => Method::Post,
        "PUT" => Method::Put,
        "DELETE" => Method::Delete,
        "CONNECT" => Method::Connect,
        "OPTIONS" => Method::Options,
        "TRACE" => Method::Trace,
        "PATCH" => Method::Patch,
        other => Method::Other(other.into()),
    }
}
