//! A manifest's `"mcp"`: an MCP server run as an extension, instead of a zot program.

use super::{field, ManifestErrorKind};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The longest tool-name prefix a manifest may set.
pub const MAX_PREFIX: usize = 32;

/// An MCP server (`"mcp": {...}`): a program speaking MCP over stdio (`command`, `args`,
/// `env`), or a component doing so (`wasm`, sandboxed like any component). Its tools are
/// registered under their own names, or with `prefix` before each.
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
    /// Put before each of its tools' names (`"fs."`: `read_file` is `fs.read_file`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub prefix: String,
}

impl McpServer {
    /// Checks what `serde` cannot: one of `command` and `wasm`, nothing a component
    /// cannot be given, a usable prefix.
    pub(super) fn validate(&self) -> Result<(), ManifestErrorKind> {
        match (self.command.as_deref(), self.wasm.as_deref()) {
            (None, None) => {
                return Err(field(
                    "mcp",
                    "needs \"command\" (a program to run) or \"wasm\" (a component)",
                ))
            }
            (Some(_), Some(_)) => {
                return Err(field(
                    "mcp",
                    "\"command\" and \"wasm\" exclude each other: keep one",
                ))
            }
            (Some(""), None) => return Err(ManifestErrorKind::Empty("mcp.command")),
            (None, Some("")) => return Err(ManifestErrorKind::Empty("mcp.wasm")),
            (Some(_), None) => {}
            (None, Some(_)) if !self.args.is_empty() => {
                return Err(field("mcp.args", "a component is given no arguments"))
            }
            (None, Some(_)) if !self.env.is_empty() => return Err(field(
                "mcp.env",
                "a component reads only the variables \"permissions.env\" names: list them there",
            )),
            (None, Some(_)) => {}
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
}
