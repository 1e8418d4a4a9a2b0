//! HTTP natively: `ureq` with rustls and the Mozilla roots.

use super::{Request, Response, MAX_BODY};
use std::sync::OnceLock;
use std::time::Duration;

/// The whole exchange, connect to last byte.
const TIMEOUT: Duration = Duration::from_secs(60);

fn agent() -> &'static ureq::Agent {
    static AGENT: OnceLock<ureq::Agent> = OnceLock::new();
    AGENT.get_or_init(|| {
        ureq::Agent::config_builder()
            .http_status_as_error(false)
            .max_redirects(0)
            .timeout_global(Some(TIMEOUT))
            .build()
            .into()
    })
}

pub(super) fn send(request: &Request) -> Result<Response, String> {
    let mut builder = ureq::http::Request::builder()
        .method(request.method.as_str())
        .uri(request.url.as_str());
    for (name, value) in &request.headers {
        builder = builder.header(name.as_str(), value.as_str());
    }
    let http_request = builder
        .body(request.body.clone())
        .map_err(|e| e.to_string())?;
    let mut response = agent().run(http_request).map_err(|e| e.to_string())?;
    let headers = response
        .headers()
        .iter()
        .map(|(n, v)| {
            (
                n.as_str().to_string(),
                String::from_utf8_lossy(v.as_bytes()).into_owned(),
            )
        })
        .collect();
    let body = response
        .body_mut()
        .with_config()
        .limit(MAX_BODY as u64)
        .read_to_vec()
        .map_err(|e| e.to_string())?;
    Ok(Response {
        status: response.status().as_u16(),
        headers,
        body,
    })
}
