//! A manifest's `"mcp"`: an MCP server run as an extension, instead of a zot program.

use super::{field, ManifestErrorKind};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The longest tool-name prefix a manifest may set.
pub const MAX_PREFIX: usize = 32;

/// An MCP server (`"mcp": {...}`): a program speaking MCP over stdio (`command`, `args`,
/// `env`), a component doing so (`wasm`, sandboxed like any component), or a remote
/// server reached over Streamable HTTP (`url`, with `headers`). Its tools are registered
/// under their own names, or with `prefix` before each.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpServer {
    /// The program; resolved as `exec` is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// Its arguments.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    /// Variables set in its environment, over the host's.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
    /// A `wasm32-wasip2` command component speaking MCP on its stdin/stdout.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wasm: Option<String>,
    /// A remote server's endpoint (`https://mcp.example.com/mcp`), reached over
    /// Streamable HTTP only where the user granted its origin ([`McpServer::origin`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// Headers sent to a remote server with every request: templates whose
    /// `${env:NAME}` and `${file:PATH}` are expanded at launch only ([`template`]); the
    /// values are never stored, shown or logged.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, String>,
    /// Put before each of its tools' names (`"fs."`: `read_file` is `fs.read_file`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub prefix: String,
}

/// Header names a manifest may not set: those of the protocol (rmcp's and the
/// transport's: also anything `mcp-*`) and those of HTTP's framing and connection.
pub const RESERVED_HEADERS: &[&str] = &[
    "accept",
    "connection",
    "content-length",
    "content-type",
    "host",
    "keep-alive",
    "last-event-id",
    "proxy-connection",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
];

/// Whether a manifest may set the header `name` (compared without case).
pub fn header_allowed(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    !RESERVED_HEADERS.contains(&name.as_str()) && !name.starts_with("mcp-")
}

impl McpServer {
    /// Checks what `serde` cannot: exactly one of `command`, `wasm` and `url`, nothing a
    /// component or a remote server cannot be given, a usable prefix.
    pub(super) fn validate(&self) -> Result<(), ManifestErrorKind> {
        let named = [
            self.command.is_some(),
            self.wasm.is_some(),
            self.url.is_some(),
        ];
        match named.iter().filter(|&&n| n).count() {
            0 => {
                return Err(field(
                    "mcp",
                    "needs \"command\" (a program to run), \"wasm\" (a component) or \"url\" \
                     (a remote server)",
                ))
            }
            1 => {}
            _ => {
                return Err(field(
                    "mcp",
                    "\"command\", \"wasm\" and \"url\" exclude each other: keep one",
                ))
            }
        }
        match (self.command.as_deref(), self.wasm.as_deref()) {
            (Some(""), None) => return Err(ManifestErrorKind::Empty("mcp.command")),
            (None, Some("")) => return Err(ManifestErrorKind::Empty("mcp.wasm")),
            (None, Some(_)) if !self.args.is_empty() => {
                return Err(field("mcp.args", "a component is given no arguments"))
            }
            (None, Some(_)) if !self.env.is_empty() => return Err(field(
                "mcp.env",
                "a component reads only the variables \"permissions.env\" names: list them there",
            )),
            _ => {}
        }
        if let Some(url) = &self.url {
            if url.is_empty() {
                return Err(ManifestErrorKind::Empty("mcp.url"));
            }
            origin_of(url).map_err(|why| field("mcp.url", why))?;
            if !self.args.is_empty() {
                return Err(field(
                    "mcp.args",
                    "a remote server runs nothing here: it is given no arguments",
                ));
            }
            if !self.env.is_empty() {
                return Err(field(
                    "mcp.env",
                    "a remote server runs nothing here: send what it needs in \"mcp.headers\"",
                ));
            }
        } else if !self.headers.is_empty() {
            return Err(field(
                "mcp.headers",
                "only a remote server (\"mcp.url\") is sent headers",
            ));
        }
        for (name, value) in &self.headers {
            let bad_name = name.is_empty()
                || !name
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b));
            if bad_name {
                return Err(field(
                    "mcp.headers",
                    format!("{name:?} is not a header name"),
                ));
            }
            if !header_allowed(name) {
                return Err(field(
                    "mcp.headers",
                    format!("{name:?} is set by the host for the protocol, not by a manifest"),
                ));
            }
            template(value).map_err(|why| field(format!("mcp.headers.{name}"), why))?;
        }
        for (name, value) in &self.env {
            if name.is_empty() || name.contains(['=', '\0']) {
                return Err(field("mcp.env", format!("{name:?} is not a variable name")));
            }
            if value.contains('\0') {
                return Err(field(format!("mcp.env.{name}"), "contains a NUL byte"));
            }
        }
        if self.prefix.len() > MAX_PREFIX {
            return Err(field(
                "mcp.prefix",
                format!("longer than {MAX_PREFIX} characters"),
            ));
        }
        if let Some(c) = self
            .prefix
            .chars()
            .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')))
        {
            return Err(field(
                "mcp.prefix",
                format!("contains {c:?}: use only letters, digits, '.', '_' and '-'"),
            ));
        }
        Ok(())
    }

    /// A remote server's origin (`https://mcp.example.com`, `http://127.0.0.1:8765`):
    /// the one `http` permission it asks for.
    pub fn origin(&self) -> Option<String> {
        self.url.as_deref().and_then(|url| origin_of(url).ok())
    }
}

/// The origin of a remote server's `url`, as a `permissions.http` entry names it:
/// `scheme://host`, with `:port` when it is not the scheme's default. Refused: a URL
/// that is not `http`/`https` with a host, or that has a user or a fragment.
pub fn origin_of(url: &str) -> Result<String, String> {
    if url.contains('#') {
        return Err("a URL with a fragment (`#…`) is not sent: remove it".into());
    }
    let uri: http::Uri = url
        .parse()
        .map_err(|e| format!("{url:?} is not a URL: {e}"))?;
    let scheme = match uri.scheme_str() {
        Some("http") => "http",
        Some("https") => "https",
        Some(other) => return Err(format!("scheme {other:?}: only http and https")),
        None => return Err(format!("{url:?} names no scheme: write https://…")),
    };
    let authority = uri.authority().map(|a| a.as_str()).unwrap_or_default();
    if authority.contains('@') {
        return Err("a user in the URL (`user@`) is not sent: use \"mcp.headers\"".into());
    }
    let host = match uri.host() {
        Some(host) if !host.is_empty() => host.to_ascii_lowercase(),
        _ => return Err(format!("{url:?} names no host")),
    };
    let default = if scheme == "https" { 443 } else { 80 };
    let origin = match uri.port_u16() {
        Some(port) if port != default => format!("{scheme}://{host}:{port}"),
        _ => format!("{scheme}://{host}"),
    };
    crate::caps::HostPattern::parse(&origin).map_err(|e| e.to_string())?;
    Ok(origin)
}

/// One part of a header's template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Part<'a> {
    /// Text sent as it is.
    Text(&'a str),
    /// `${env:NAME}`: the host's variable `NAME` at launch.
    Env(&'a str),
    /// `${file:PATH}`: the trimmed text of a file at launch (`~/` is the home directory).
    File(&'a str),
}

/// The parts of a header's template; refused: a `${` that is not `${env:NAME}` or
/// `${file:PATH}`.
pub fn template(value: &str) -> Result<Vec<Part<'_>>, String> {
    let mut parts = Vec::new();
    let mut rest = value;
    while let Some(at) = rest.find("${") {
        if at > 0 {
            parts.push(Part::Text(&rest[..at]));
        }
        let after = &rest[at + 2..];
        let Some(end) = after.find('}') else {
            return Err("a \"${\" is not closed by \"}\"".into());
        };
        let inner = &after[..end];
        let part = match inner.split_once(':') {
            Some(("env", name)) if !name.is_empty() && !name.contains(['=', '\0']) => {
                Part::Env(name)
            }
            Some(("file", path)) if !path.is_empty() && !path.contains('\0') => Part::File(path),
            _ => {
                return Err(format!(
                    "\"${{{inner}}}\": write ${{env:NAME}} or ${{file:PATH}}"
                ))
            }
        };
        parts.push(part);
        rest = &after[end + 1..];
    }
    if !rest.is_empty() {
        parts.push(Part::Text(rest));
    }
    if parts
        .iter()
        .any(|p| matches!(p, Part::Text(t) if t.contains(['\r', '\n', '\0'])))
    {
        return Err("contains a line break or a NUL byte".into());
    }
    Ok(parts)
}

#[cfg(test)]
mod tests {
    use super::super::{Launch, Manifest, TransportKind};
    use serde_json::json;
    use std::path::Path;

    fn parse(v: serde_json::Value) -> Result<Manifest, String> {
        Manifest::from_value(v).map_err(|e| e.to_string())
    }

    #[test]
    fn a_server_is_a_program_or_a_component() {
        let m = parse(json!({"name": "fs", "mcp": {"command": "npx",
            "args": ["-y", "server"], "env": {"K": "v"}, "prefix": "fs."}}))
        .unwrap();
        assert_eq!(m.transport(), TransportKind::Stdio);
        assert_eq!(m.launch(Path::new("/e")), Launch::Exec("npx".into()));
        assert_eq!(m.program_args(), ["-y", "server"]);
        let m = parse(json!({"name": "w", "mcp": {"wasm": "s.wasm"}})).unwrap();
        assert_eq!(m.transport(), TransportKind::Wasm);
        assert_eq!(m.launch(Path::new("/e")), Launch::Wasm("/e/s.wasm".into()));
        // Written back as it was read.
        let back = serde_json::to_value(&m).unwrap();
        assert_eq!(back["mcp"], json!({"wasm": "s.wasm"}));
    }

    #[test]
    fn what_cannot_be_run_is_refused_naming_the_field() {
        for (manifest, says) in [
            (json!({"name": "x", "mcp": {}}), "needs \"command\""),
            (
                json!({"name": "x", "mcp": {"command": "a", "wasm": "b"}}),
                "exclude each other",
            ),
            (
                json!({"name": "x", "mcp": {"command": ""}}),
                "\"mcp.command\" is empty",
            ),
            (
                json!({"name": "x", "exec": "a", "mcp": {"command": "b"}}),
                "excludes \"exec\"",
            ),
            (
                json!({"name": "x", "args": ["a"], "mcp": {"command": "b"}}),
                "\"mcp.args\"",
            ),
            (
                json!({"name": "x", "mcp": {"wasm": "s.wasm", "env": {"K": "v"}}}),
                "permissions.env",
            ),
            (
                json!({"name": "x", "mcp": {"wasm": "s.wasm", "args": ["a"]}}),
                "no arguments",
            ),
            (
                json!({"name": "x", "mcp": {"command": "a", "env": {"A=B": "v"}}}),
                "not a variable name",
            ),
            (
                json!({"name": "x", "mcp": {"command": "a", "prefix": "a b"}}),
                "contains ' '",
            ),
            (
                json!({"name": "x", "mcp": {"command": "a", "comand": "b"}}),
                "unknown field `comand`",
            ),
            (json!({"name": "x", "mcp": "npx"}), "field \"mcp\""),
        ] {
            let err = parse(manifest.clone()).unwrap_err();
            assert!(err.contains(says), "{manifest}: {err}");
        }
    }

    #[test]
    fn a_remote_server_asks_to_reach_its_origin_only() {
        let m = parse(
            json!({"name": "r", "mcp": {"url": "http://127.0.0.1:8765/mcp",
            "headers": {"Authorization": "Bearer ${env:TOKEN}"}, "prefix": "r."}}),
        )
        .unwrap();
        assert_eq!(m.transport(), TransportKind::Remote);
        assert_eq!(TransportKind::Remote.as_str(), "remote");
        assert_eq!(
            m.launch(Path::new("/e")),
            Launch::Remote("http://127.0.0.1:8765/mcp".into())
        );
        assert!(m.asks_permissions() && !m.is_component());
        assert_eq!(m.permissions.http, ["http://127.0.0.1:8765"]);
        assert!(!m.permissions.data_dir, "nothing runs here: no data dir");
        // Written back, it reads the same (what it asks included).
        let again = serde_json::to_vec(&m).unwrap();
        assert_eq!(Manifest::from_json(&again).unwrap(), m);
        for (url, origin) in [
            ("https://mcp.example.com/mcp", "https://mcp.example.com"),
            (
                "https://MCP.example.com:443/x?y=1",
                "https://mcp.example.com",
            ),
            (
                "https://mcp.example.com:8443/",
                "https://mcp.example.com:8443",
            ),
            ("http://[::1]:80/mcp", "http://[::1]"),
        ] {
            let m = parse(json!({"name": "r", "mcp": {"url": url}})).unwrap();
            assert_eq!(m.permissions.http, [origin], "{url}");
        }
    }

    #[test]
    fn a_remote_server_is_refused_what_it_cannot_be_given() {
        for (manifest, says) in [
            (
                json!({"name": "x", "mcp": {"url": "https://a", "command": "b"}}),
                "exclude each other",
            ),
            (
                json!({"name": "x", "mcp": {"url": ""}}),
                "\"mcp.url\" is empty",
            ),
            (
                json!({"name": "x", "mcp": {"url": "ftp://a/"}}),
                "only http and https",
            ),
            (
                json!({"name": "x", "mcp": {"url": "a.example/mcp"}}),
                "not a URL",
            ),
            (json!({"name": "x", "mcp": {"url": "/mcp"}}), "no scheme"),
            (
                json!({"name": "x", "mcp": {"url": "https://u:p@a/"}}),
                "user in the URL",
            ),
            (
                json!({"name": "x", "mcp": {"url": "https://a/#f"}}),
                "fragment",
            ),
            (
                json!({"name": "x", "mcp": {"url": "https://a", "args": ["x"]}}),
                "\"mcp.args\"",
            ),
            (
                json!({"name": "x", "mcp": {"url": "https://a", "env": {"K": "v"}}}),
                "\"mcp.env\"",
            ),
            (
                json!({"name": "x", "mcp": {"command": "a", "headers": {"A": "b"}}}),
                "only a remote server",
            ),
            (
                json!({"name": "x", "mcp": {"url": "https://a", "headers": {"Host": "b"}}}),
                "set by the host",
            ),
            (
                json!({"name": "x", "mcp": {"url": "https://a", "headers": {"Mcp-Session-Id": "b"}}}),
                "set by the host",
            ),
            (
                json!({"name": "x", "mcp": {"url": "https://a", "headers": {"A B": "b"}}}),
                "not a header name",
            ),
            (
                json!({"name": "x", "mcp": {"url": "https://a", "headers": {"A": "${cmd:ls}"}}}),
                "${env:NAME} or ${file:PATH}",
            ),
            (
                json!({"name": "x", "mcp": {"url": "https://a", "headers": {"A": "${env:X"}}}),
                "not closed",
            ),
            (
                json!({"name": "x", "mcp": {"url": "https://a"},
                    "permissions": {"env": ["HOME"]}}),
                "remove \"permissions\"",
            ),
            (
                json!({"name": "x", "mcp": {"url": "https://a"},
                    "permissions": {"http": ["b.example"]}}),
                "remove \"permissions\"",
            ),
            (
                json!({"name": "x", "mcp": {"url": "https://a"},
                    "permissions": {"data_dir": true}}),
                "remove \"permissions\"",
            ),
            (
                json!({"name": "x", "mcp": {"url": "https://a"}, "limits": {"memory_mb": 64}}),
                "only \"tool_timeout_ms\"",
            ),
            (
                json!({"name": "x", "mcp": {"url": "https://a"}, "build": ["make"]}),
                "nothing to build",
            ),
        ] {
            let err = parse(manifest.clone()).unwrap_err();
            assert!(err.contains(says), "{manifest}: {err}");
        }
        // A timeout for its calls is its own.
        parse(
            json!({"name": "x", "mcp": {"url": "https://a"}, "limits": {"tool_timeout_ms": 500}}),
        )
        .unwrap();
    }

    #[test]
    fn a_header_template_is_text_variables_and_files() {
        use super::{template, Part};
        assert_eq!(
            template("Bearer ${env:T}-${file:~/k}!").unwrap(),
            [
                Part::Text("Bearer "),
                Part::Env("T"),
                Part::Text("-"),
                Part::File("~/k"),
                Part::Text("!")
            ]
        );
        assert_eq!(template("plain").unwrap(), [Part::Text("plain")]);
        assert!(template("${env:}").is_err());
    }
}
