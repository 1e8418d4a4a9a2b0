//! Outgoing HTTP that works on both targets: natively through `ureq` (rustls), in the
//! sandbox through `wasi:http`, where the host lets through only the hosts the manifest
//! lists in `permissions.http` and the user granted.
//!
//! Redirects are not followed on either target (a redirect is a response like any
//! other), so a sandboxed and a native build see the same thing.
//!
//! ```no_run
//! let response = zot_ext::http::get("https://wttr.in/Berlin?format=j1")?;
//! assert_eq!(response.status, 200);
//! let weather: serde_json::Value = response.json()?;
//! # Ok::<(), zot_ext::http::Error>(())
//! ```

#[cfg(not(target_os = "wasi"))]
mod native;
#[cfg(not(target_os = "wasi"))]
use native::send;
#[cfg(target_os = "wasi")]
mod wasi;
#[cfg(target_os = "wasi")]
use wasi::send;
#[cfg(any(target_os = "wasi", test))]
mod words;

use std::fmt;

/// A response body larger than this is an error.
pub const MAX_BODY: usize = 64 * 1024 * 1024;

/// An HTTP request, built with [`Request::get`] / [`Request::new`] and sent with
/// [`Request::send`].
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    /// `GET`, `POST`, …
    pub method: String,
    /// `http://` or `https://` URL.
    pub url: String,
    /// Header names and values, in order.
    pub headers: Vec<(String, String)>,
    /// The body (empty for none).
    pub body: Vec<u8>,
}

impl Request {
    /// A request with any method.
    pub fn new(method: &str, url: &str) -> Self {
        Request {
            method: method.to_ascii_uppercase(),
            url: url.into(),
            headers: Vec::new(),
            body: Vec::new(),
        }
    }

    /// A `GET`.
    pub fn get(url: &str) -> Self {
        Request::new("GET", url)
    }

    /// Adds a header.
    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// Sets the body.
    pub fn body(mut self, body: impl Into<Vec<u8>>) -> Self {
        self.body = body.into();
        self
    }

    /// Sends it and reads the whole response.
    pub fn send(self) -> Result<Response, Error> {
        if !(self.url.starts_with("http://") || self.url.starts_with("https://")) {
            return Err(Error(format!(
                "{}: only http:// and https:// URLs",
                self.url
            )));
        }
        send(&self).map_err(|e| Error(format!("{}: {e}", self.url)))
    }
}

/// A `GET` of `url`.
pub fn get(url: &str) -> Result<Response, Error> {
    Request::get(url).send()
}

/// A complete response: any status is a response, not an error.
#[derive(Debug, Clone, PartialEq)]
pub struct Response {
    /// The status code.
    pub status: u16,
    /// Header names (lower case) and values.
    pub headers: Vec<(String, String)>,
    /// The body.
    pub body: Vec<u8>,
}

impl Response {
    /// The body as text (invalid UTF-8 replaced).
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// The body parsed as JSON.
    pub fn json<T: serde::de::DeserializeOwned>(&self) -> Result<T, Error> {
        serde_json::from_slice(&self.body)
            .map_err(|e| Error(format!("the body is not the expected JSON: {e}")))
    }

    /// A header's value (name case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// Why a request failed: the URL and what went wrong (in the sandbox, a host not
/// granted reads `HttpRequestDenied`).
#[derive(Debug, Clone, PartialEq)]
pub struct Error(String);

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Error {}
