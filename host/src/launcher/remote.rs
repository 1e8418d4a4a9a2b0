//! A remote MCP server (`"mcp": {"url": …}`): nothing runs here. It may be reached only
//! where the user granted its URL's origin (what its manifest asks, derived from `url`:
//! `sandbox::policy::decide`'s rule, a run's `--allow-http` included), checked again on
//! every request on the address it resolves to (`transport::mcp::remote`). Its headers'
//! `${env:…}`/`${file:…}` are expanded here, at launch only, and go nowhere else.

use super::{speak_mcp_spec, Launched, Request, SeenPaths, StartError, UNSEEN};
use crate::identity::Identity;
use crate::manifest::{Part, TransportKind};
use crate::records::grants;
use crate::sandbox;
use crate::sandbox::view::{Granted, SandboxView};
use crate::transport::mcp::remote::{transport_config, CheckedHttpClient};
use rmcp::transport::streamable_http_client::StreamableHttpResponseLimits;
use rmcp::transport::StreamableHttpClientTransport;
use std::path::{Path, PathBuf};

/// The most read of a `${file:…}` of a header.
const HEADER_FILE_MAX: u64 = 4096;

/// Starts the connection to the remote server at `url`, or says why not: not granted
/// (no connection is made), or a header that cannot be made.
pub(super) fn start(request: &Request<'_>, url: String) -> Result<Launched, StartError> {
    let Request {
        manifest: m,
        dir,
        identity,
        context,
        log,
        run_grant,
        ..
    } = request;
    let server = m.mcp.as_ref().expect("a remote launch is an MCP server's");
    let failed = |why: String, hint: Option<String>| StartError::Remote {
        url: url.clone(),
        why,
        hint,
    };
    let binding = grants::remote_binding(m);
    let (decision, grant) = sandbox::for_manifest(
        context.home,
        identity,
        m,
        context.cwd,
        &binding,
        *run_grant,
        log,
    );
    let origin = server.origin().unwrap_or_default();
    if decision.policy.http.is_empty() {
        let host = http::Uri::try_from(url.as_str())
            .ok()
            .and_then(|u| u.host().map(str::to_string))
            .unwrap_or_default();
        let why = format!("denied HTTP to {host}: {origin} is not granted");
        log.warn(&format!("{why}: not connecting"));
        let target = match identity {
            Identity::Path { .. } => format!("'{}'", dir.display()),
            _ => m.name.clone(),
        };
        let hint = match grant {
            sandbox::GrantState::Stale(_) => format!(
                "its grant was given to another URL or other headers: `zot ext grant {target} \
                 -p {origin}` to review it"
            ),
            _ => format!(
                "`zot ext grant {target} -p {origin}` lets it reach the server (or \
                 `--allow-http {origin}` for one run)"
            ),
        };
        return Err(failed(why, Some(hint)));
    }
    let headers = expand_headers(&server.headers, dir).map_err(|why| failed(why, None))?;
    // What is read of an answer: at most what the core takes of one frame.
    let mut limits = StreamableHttpResponseLimits::default();
    limits.max_json_response_size = limits.max_json_response_size.min(context.max_frame);
    limits.max_sse_event_size = limits.max_sse_event_size.min(context.max_frame);
    let client = CheckedHttpClient::new(decision.policy.http.clone(), &headers, (*log).clone())
        .map_err(|why| failed(why, None))?
        .with_limits(limits);
    let transport =
        StreamableHttpClientTransport::with_client(client, transport_config(&url, limits));
    let names: Vec<&str> = server.headers.keys().map(String::as_str).collect();
    log.info(&format!(
        "connecting to the remote MCP server at {url} (headers: {})",
        match names.is_empty() {
            true => "none".to_string(),
            false => names.join(", "),
        }
    ));
    let view = SandboxView {
        component: None,
        built_with: None,
        stdin: None,
        sha256: None,
        asked: m.permissions.clone(),
        limits: None,
        granted: grant
            .applied()
            .map(|g| Granted::Applied(g.permissions.clone())),
        grant_stale: matches!(grant, sandbox::GrantState::Stale(_)),
        running: None,
    };
    let spec = speak_mcp_spec(request, server);
    Ok(Launched {
        connection: crate::transport::mcp::speak_remote(transport, spec),
        transport: TransportKind::Remote,
        sandbox: Some(view),
        paths: SeenPaths {
            extension_dir: UNSEEN.into(),
            cwd: UNSEEN.into(),
            data_dir: String::new(),
        },
    })
}

/// The headers of a manifest with their `${env:NAME}` and `${file:PATH}` expanded; an
/// error names the variable or file, never a value.
fn expand_headers(
    headers: &std::collections::BTreeMap<String, String>,
    dir: &Path,
) -> Result<Vec<(String, String)>, String> {
    let mut out = Vec::with_capacity(headers.len());
    for (name, template) in headers {
        let parts =
            crate::manifest::template(template).map_err(|why| format!("header {name:?}: {why}"))?;
        let mut value = String::new();
        for part in parts {
            match part {
                Part::Text(text) => value.push_str(text),
                Part::Env(var) => match std::env::var(var) {
                    Ok(v) => value.push_str(&v),
                    Err(_) => {
                        return Err(format!(
                            "header {name:?}: the variable {var} is not set (or not UTF-8)"
                        ))
                    }
                },
                Part::File(path) => {
                    let file = file_path(path, dir);
                    let text = read_secret(&file)
                        .map_err(|why| format!("header {name:?}: {}: {why}", file.display()))?;
                    value.push_str(&text);
                }
            }
        }
        out.push((name.clone(), value));
    }
    Ok(out)
}

/// Where `${file:PATH}` is: `~/…` in the home directory, a relative path in the
/// extension's folder.
fn file_path(path: &str, dir: &Path) -> PathBuf {
    if let Some(rest) = path.strip_prefix("~/") {
        if let Some(home) = std::env::var_os("HOME") {
            return Path::new(&home).join(rest);
        }
    }
    dir.join(path)
}

/// The trimmed text of a regular file of at most [`HEADER_FILE_MAX`] bytes.
fn read_secret(file: &Path) -> Result<String, String> {
    let bytes =
        crate::util::tree::read_regular(file, HEADER_FILE_MAX).map_err(|e| e.cause.to_string())?;
    if bytes.len() as u64 > HEADER_FILE_MAX {
        return Err(format!("longer than {HEADER_FILE_MAX} bytes"));
    }
    let text = String::from_utf8(bytes).map_err(|_| "not UTF-8 text".to_string())?;
    let text = text.trim();
    if text.is_empty() {
        return Err("the file is empty".into());
    }
    Ok(text.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_are_expanded_from_the_environment_and_files_naming_what_is_missing() {
        let dir = zot_test_fixtures::fresh_dir("remote-headers");
        std::fs::write(dir.join("key"), "  s3cret\n").unwrap();
        std::env::set_var("ZOT_TEST_REMOTE_TOKEN", "t0ken");
        let headers = [
            (
                "Authorization".to_string(),
                "Bearer ${env:ZOT_TEST_REMOTE_TOKEN}".to_string(),
            ),
            ("X-Key".to_string(), "${file:key}".to_string()),
        ]
        .into_iter()
        .collect();
        assert_eq!(
            expand_headers(&headers, &dir).unwrap(),
            [
                ("Authorization".to_string(), "Bearer t0ken".to_string()),
                ("X-Key".to_string(), "s3cret".to_string())
            ]
        );
        let missing = [("A".to_string(), "${env:ZOT_TEST_REMOTE_UNSET}".to_string())]
            .into_iter()
            .collect();
        let err = expand_headers(&missing, &dir).unwrap_err();
        assert!(err.contains("ZOT_TEST_REMOTE_UNSET is not set"), "{err}");
        let missing = [("A".to_string(), "${file:nope}".to_string())]
            .into_iter()
            .collect();
        let err = expand_headers(&missing, &dir).unwrap_err();
        assert!(err.contains("nope"), "{err}");
        assert!(!err.contains("s3cret") && !err.contains("t0ken"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
