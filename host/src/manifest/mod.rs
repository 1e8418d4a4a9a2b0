//! `extension.json`: what an extension is and asks for, read and validated naming the
//! field ([`error`]); the manifest a component carries in a custom section
//! ([`embedded`]); edits that lose no field and no byte ([`edit`]).

mod edit;
mod embedded;
mod error;
mod mcp;

pub use edit::{before_disable, run_component, set_enabled, set_field};
pub use embedded::{Embedded, SECTION};
pub use error::{ManifestError, ManifestErrorKind};
pub use mcp::{header_allowed, template, McpServer, Part};

use crate::caps::{Caps, Limit};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::fmt;
use std::path::{Path, PathBuf};

/// The manifest's file name.
pub const MANIFEST_FILE: &str = "extension.json";

/// A manifest longer than this is refused unread (no real one comes near).
pub const MAX_MANIFEST_BYTES: u64 = 1 << 20;

/// The bytes of the manifest at `path`: a regular file of at most
/// [`MAX_MANIFEST_BYTES`], opened without blocking, so a FIFO or a device (a link to
/// `/dev/zero`, `/proc/self/fd/0`) is refused at once rather than read forever.
fn read_manifest_file(path: &Path) -> Result<Vec<u8>, String> {
    crate::util::tree::read_regular(path, MAX_MANIFEST_BYTES).map_err(|e| e.cause.to_string())
}

/// An extension's manifest. Fields this host does not know are kept in `extra`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    pub name: String,
    #[serde(default)]
    pub version: String,
    #[serde(default)]
    pub exec: Option<String>,
    #[serde(default)]
    pub args: Vec<String>,
    #[serde(default)]
    pub language: String,
    #[serde(default)]
    pub description: String,
    #[serde(default = "yes")]
    pub enabled: bool,
    /// A WebAssembly component to run in the sandbox, instead of `exec`.
    #[serde(default)]
    pub wasm: Option<String>,
    /// What a component asks for (ignored for `exec` extensions, which get everything).
    #[serde(default)]
    pub permissions: Permissions,
    /// Resource limits a component asks for.
    #[serde(default)]
    pub limits: Limits,
    /// How `zot ext install` builds `exec` (or `wasm`) when the source does not hold it:
    /// a program and its arguments (argv, never a shell string), run in the source's
    /// copy, confined (docs/installing.md#builds).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub build: Option<Vec<String>>,
    /// An MCP server to run as the extension, instead of `exec` or `wasm`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mcp: Option<McpServer>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

fn yes() -> bool {
    true
}

/// The capabilities a component asks for; what is in force is decided in
/// [`crate::sandbox`]. A manifest that names none still asks for its data dir.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Permissions {
    /// Its private data directory, mounted read-write at `/data`.
    #[serde(default = "yes")]
    pub data_dir: bool,
    /// `"read"`: the project directory, read-only, at the path `hello_ack.cwd` names.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<CwdAccess>,
    /// Environment variables it may read (only those set on the host are passed).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub env: Vec<String>,
    /// Hosts it may reach over HTTP(S): `api.example.com`, `*.example.com`, `host:8080`,
    /// `http://127.0.0.1:8080`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub http: Vec<String>,
}

/// What a manifest asks for when it names no permissions: its data dir.
impl Default for Permissions {
    fn default() -> Self {
        Permissions {
            data_dir: true,
            cwd: None,
            env: Vec::new(),
            http: Vec::new(),
        }
    }
}

/// Access to the project directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CwdAccess {
    Read,
}

/// Resource limits; unset means the host's default. `tool_timeout_ms` applies to any
/// extension, the `caps` to components (see [`crate::caps::Limit`]: defaults, maxima,
/// and how a value above the default is granted). In JSON one flat object:
/// `{"memory_mb":128,"tool_timeout_ms":500}`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Limits {
    /// What a component asks of each host-side cap (memory, `/data`, resources, …).
    #[serde(flatten)]
    pub caps: Caps,
    /// How long one of its tool calls may take, in ms (default: the host's tool timeout).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_timeout_ms: Option<u64>,
}

impl Limits {
    /// Every field of the `limits` object, in order.
    pub const FIELDS: [&'static str; Limit::ALL.len() + 1] = {
        let mut fields = ["tool_timeout_ms"; Limit::ALL.len() + 1];
        let mut i = 0;
        while i < Limit::ALL.len() {
            fields[i] = Limit::ALL[i].spec().field;
            i += 1;
        }
        fields
    };

    /// Parses a manifest's `limits`. A field it does not know is named with the fields it
    /// does, as for every other object of the manifest (serde names none for an object
    /// with a flattened part).
    fn parse(value: &Value) -> Result<Limits, serde_json::Error> {
        use serde::de::Error;
        if let Some(unknown) = value
            .as_object()
            .and_then(|o| o.keys().find(|k| !Limits::FIELDS.contains(&k.as_str())))
        {
            return Err(serde_json::Error::unknown_field(unknown, &Limits::FIELDS));
        }
        serde_json::from_value(value.clone())
    }
}

/// The longest tool timeout a manifest may set: one hour.
pub const MAX_TOOL_TIMEOUT_MS: u64 = 3_600_000;

/// How an extension's frames travel: what `list` shows as its `transport`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TransportKind {
    /// A subprocess over stdin/stdout (`exec`).
    Stdio,
    /// A WebAssembly component in the sandbox (`wasm`).
    Wasm,
    /// A remote MCP server over Streamable HTTP (`mcp.url`): nothing runs here.
    Remote,
}

impl TransportKind {
    /// `stdio`, `wasm` or `remote`.
    pub fn as_str(self) -> &'static str {
        match self {
            TransportKind::Stdio => "stdio",
            TransportKind::Wasm => "wasm",
            TransportKind::Remote => "remote",
        }
    }
}

impl fmt::Display for TransportKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How an extension runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Launch {
    /// A subprocess speaking over stdio.
    Exec(PathBuf),
    /// A WebAssembly component in the sandbox.
    Wasm(PathBuf),
    /// A remote MCP server at this URL (`mcp.url`): nothing runs here.
    Remote(String),
}

/// `field "name": reason` for the field `name`.
/// The top-level fields of a manifest that zot reads.
pub const FIELDS: [&str; 12] = [
    "name",
    "version",
    "exec",
    "args",
    "language",
    "description",
    "enabled",
    "wasm",
    "permissions",
    "limits",
    "build",
    "mcp",
];

/// Checks that field `name` of `value`, if present, is a `T`, naming the field if not.
fn typed<T: serde::de::DeserializeOwned>(
    value: &Value,
    name: &str,
) -> Result<(), ManifestErrorKind> {
    match value.get(name) {
        Some(v) => serde_json::from_value::<T>(v.clone())
            .map(|_| ())
            .map_err(|e| field(name, e)),
        None => Ok(()),
    }
}

fn field(name: impl Into<String>, reason: impl fmt::Display) -> ManifestErrorKind {
    ManifestErrorKind::Field {
        field: name.into(),
        reason: reason.to_string(),
    }
}

impl Manifest {
    /// Reads and validates `dir/extension.json`.
    pub fn read(dir: &Path) -> Result<Manifest, ManifestError> {
        let path = dir.join(MANIFEST_FILE);
        Manifest::parse(&path).map_err(|kind| ManifestError { path, kind })
    }

    fn parse(path: &Path) -> Result<Manifest, ManifestErrorKind> {
        use ManifestErrorKind::*;
        let text = read_manifest_file(path).map_err(Unreadable)?;
        Manifest::from_json(&text)
    }

    /// Validates the text of an `extension.json`: what [`Manifest::read`] does once the
    /// file is read.
    pub fn from_json(text: &[u8]) -> Result<Manifest, ManifestErrorKind> {
        let value: Value = serde_json::from_slice(text)
            .map_err(|e| ManifestErrorKind::InvalidJson(e.to_string()))?;
        Manifest::from_value(value)
    }

    /// Validates a manifest's JSON: what [`Manifest::read`] does once the file is read.
    fn from_value(value: Value) -> Result<Manifest, ManifestErrorKind> {
        use ManifestErrorKind::*;
        // Parse each field alone first, so that an error names its field.
        for name in ["name", "version", "language", "description"] {
            typed::<String>(&value, name)?;
        }
        for name in ["exec", "wasm"] {
            typed::<Option<String>>(&value, name)?;
        }
        typed::<Vec<String>>(&value, "args")?;
        typed::<bool>(&value, "enabled")?;
        if let Some(build) = value.get("build") {
            let argv = match build {
                Value::String(_) => Err(field(
                    "build",
                    "a program and its arguments as an array ([\"make\", \"ext\"]), not a \
                     shell string",
                )),
                other => serde_json::from_value::<Vec<String>>(other.clone())
                    .map_err(|e| field("build", e)),
            }?;
            if argv.first().is_none_or(String::is_empty) {
                return Err(field("build", "names no program"));
            }
        }
        if let Some(v) = value.get("permissions") {
            serde_json::from_value::<Permissions>(v.clone())
                .map_err(|e| field("permissions", e))?;
        }
        if let Some(v) = value.get("limits") {
            Limits::parse(v).map_err(|e| field("limits", e))?;
        }
        if let Some(v) = value.get("mcp") {
            serde_json::from_value::<Option<McpServer>>(v.clone()).map_err(|e| field("mcp", e))?;
        }
        let value_permissions = value.get("permissions").cloned();
        let manifest: Manifest =
            serde_json::from_value(value).map_err(|e| Invalid(e.to_string()))?;
        validate_name(&manifest.name).map_err(|e| field("name", e))?;
        if let Some(mcp) = &manifest.mcp {
            if manifest.exec.is_some() || manifest.wasm.is_some() {
                return Err(field(
                    "mcp",
                    "excludes \"exec\" and \"wasm\": an MCP server is named in \"mcp\" alone",
                ));
            }
            if !manifest.args.is_empty() {
                return Err(field(
                    "args",
                    "an MCP server's arguments go in \"mcp.args\"",
                ));
            }
            mcp.validate()?;
        }
        let mut manifest = manifest;
        if let Some(origin) = manifest.mcp.as_ref().and_then(McpServer::origin) {
            if manifest.build.is_some() {
                return Err(field(
                    "build",
                    "a remote MCP server has nothing to build: remove \"build\"",
                ));
            }
            manifest.permissions = remote_permissions(value_permissions.as_ref(), origin)?;
            if manifest.limits.caps != Caps::default() {
                return Err(field(
                    "limits",
                    "a remote MCP server runs nothing here: only \"tool_timeout_ms\" applies",
                ));
            }
        }
        match (manifest.exec.as_deref(), manifest.wasm.as_deref()) {
            (None, None) if manifest.mcp.is_some() => {}
            (None, None) => {
                let typo = manifest.extra.keys().find_map(|k| {
                    crate::util::nearest::typo_of(k, ["exec", "wasm"]).map(|f| (k.clone(), f))
                });
                return Err(match typo {
                    Some((found, meant)) => ProgramTypo { found, meant },
                    None => NoProgram,
                });
            }
            (Some(_), Some(_)) => return Err(BothPrograms),
            (Some(""), _) => return Err(Empty("exec")),
            (_, Some("")) => return Err(Empty("wasm")),
            _ => {}
        }
        let in_range = |field, value: Option<u64>, max| match value {
            Some(value) if value == 0 || value > max => Err(OutOfRange { field, value, max }),
            _ => Ok(()),
        };
        for limit in Limit::ALL {
            let spec = limit.spec();
            in_range(spec.path, manifest.limits.caps.get(limit), spec.max)?;
        }
        in_range(
            "limits.tool_timeout_ms",
            manifest.limits.tool_timeout_ms,
            MAX_TOOL_TIMEOUT_MS,
        )?;
        for (i, host) in manifest.permissions.http.iter().enumerate() {
            crate::caps::HostPattern::parse(host)
                .map_err(|e| field(format!("permissions.http[{i}]"), e))?;
        }
        Ok(manifest)
    }

    /// The manifest of a bare component file (no `extension.json`): what its embedded
    /// manifest (`Embedded`) says, if it has one; else named after the file
    /// (`guard.wasm` → `guard`) and asking nothing but its data dir. A file that cannot be
    /// read has no embedded manifest (loading it says why).
    pub fn bare_component(wasm: &Path) -> Result<Manifest, ManifestError> {
        let err = |kind| ManifestError {
            path: wasm.to_path_buf(),
            kind,
        };
        let embedded = match std::fs::read(wasm) {
            Ok(bytes) => Embedded::of(&bytes).map_err(err)?,
            Err(_) => None,
        };
        let embedded = embedded.unwrap_or_default();
        let name = match embedded.name {
            Some(name) => name,
            None => {
                let name = wasm
                    .file_stem()
                    .map(|s| s.to_string_lossy().into_owned())
                    .unwrap_or_default();
                validate_name(&name).map_err(|e| err(ManifestErrorKind::BadFileName(e)))?;
                name
            }
        };
        Ok(Manifest {
            name,
            version: embedded.version.unwrap_or_default(),
            exec: None,
            args: Vec::new(),
            language: String::new(),
            description: String::new(),
            enabled: true,
            wasm: Some(wasm.display().to_string()),
            permissions: embedded.permissions,
            limits: embedded.limits,
            build: None,
            mcp: None,
            extra: Map::new(),
        })
    }

    /// The transport it names: `remote` for a remote MCP server, `wasm` for a component
    /// (an MCP server's too), else `stdio`.
    pub fn transport(&self) -> TransportKind {
        if self.mcp.as_ref().is_some_and(|m| m.url.is_some()) {
            TransportKind::Remote
        } else if self.wasm.is_some() || self.mcp.as_ref().is_some_and(|m| m.wasm.is_some()) {
            TransportKind::Wasm
        } else {
            TransportKind::Stdio
        }
    }

    /// Whether it runs in the sandbox: a component, an MCP server's too.
    pub fn is_component(&self) -> bool {
        self.transport() == TransportKind::Wasm
    }

    /// Whether what it may use is what it asks ∩ what the user granted: a component, or
    /// a remote MCP server (which asks only to reach its URL's origin); not a classic
    /// extension, which runs with the user's rights unless confined.
    pub fn asks_permissions(&self) -> bool {
        self.transport() != TransportKind::Stdio
    }

    /// The words of the command line a classic extension runs with `program`: the
    /// program and its arguments, after `env K=v…` for an MCP server's `env`.
    pub fn command_words(&self, program: &str) -> Vec<String> {
        let env = self.mcp.as_ref().map(|m| &m.env).filter(|e| !e.is_empty());
        let env = env.into_iter().flat_map(|env| {
            let set = env.iter().map(|(k, v)| format!("{k}={v}"));
            std::iter::once("env".to_string()).chain(set)
        });
        env.chain(std::iter::once(program.to_string()))
            .chain(self.program_args().iter().cloned())
            .collect()
    }

    /// Fields zot does not read that look like a typo of one it does, each with that
    /// field: `("enabeld", "enabled")`. Other unknown fields are passed on unremarked.
    pub fn likely_typos(&self) -> Vec<(String, &'static str)> {
        self.extra
            .keys()
            .filter_map(|k| crate::util::nearest::typo_of(k, FIELDS).map(|f| (k.clone(), f)))
            .collect()
    }

    /// In words, one per typo: `unknown field "enabeld" (a typo of "enabled"?): ignored`.
    pub fn typo_warnings(&self) -> Vec<String> {
        self.likely_typos()
            .into_iter()
            .map(|(found, meant)| {
                format!("unknown field \"{found}\" (a typo of \"{meant}\"?): ignored")
            })
            .collect()
    }

    /// How to run it; paths resolved against `dir`.
    pub fn launch(&self, dir: &Path) -> Launch {
        if let Some(url) = self.mcp.as_ref().and_then(|m| m.url.as_ref()) {
            return Launch::Remote(url.clone());
        }
        let mcp_wasm = self.mcp.as_ref().and_then(|m| m.wasm.as_ref());
        match self.wasm.as_ref().or(mcp_wasm) {
            Some(wasm) => Launch::Wasm(dir.join(wasm)),
            None => Launch::Exec(self.program(dir)),
        }
    }

    /// The program it names: `exec`, or an MCP server's `command`.
    pub fn command(&self) -> Option<&str> {
        let mcp = self.mcp.as_ref().and_then(|m| m.command.as_deref());
        self.exec.as_deref().or(mcp)
    }

    /// The program's arguments: `args`, or an MCP server's.
    pub fn program_args(&self) -> &[String] {
        match &self.mcp {
            Some(mcp) => &mcp.args,
            None => &self.args,
        }
    }

    /// The program to run, resolved as PROTOCOL.md says: absolute as is; `./`, `../` or
    /// containing a separator: relative to `dir`; a bare name: looked up on `PATH`.
    pub fn program(&self, dir: &Path) -> PathBuf {
        let exec = self.command().unwrap_or_default();
        let path = Path::new(exec);
        if path.is_absolute() || !exec.contains(std::path::MAIN_SEPARATOR) && !exec.contains('/') {
            path.to_path_buf()
        } else {
            dir.join(path)
        }
    }
}

/// What a remote MCP server asks for: its URL's `origin` alone, derived (so the manifest
/// cannot ask for less than it needs, nor for more). Its `permissions`, if written (as
/// this host writes them back), may hold only that: no data dir, no files, no
/// environment, no other host.
fn remote_permissions(
    written: Option<&Value>,
    origin: String,
) -> Result<Permissions, ManifestErrorKind> {
    let refuse = || {
        field(
            "permissions",
            format!(
                "a remote MCP server runs nothing here: it asks only to reach {origin} (from \
                 \"mcp.url\"); remove \"permissions\""
            ),
        )
    };
    if let Some(written) = written {
        let p: Permissions = serde_json::from_value(written.clone()).map_err(|_| refuse())?;
        if matches!(written.get("data_dir"), Some(Value::Bool(true)))
            || p.cwd.is_some()
            || !p.env.is_empty()
            || p.http.iter().any(|h| h != &origin)
        {
            return Err(refuse());
        }
    }
    Ok(Permissions {
        data_dir: false,
        cwd: None,
        env: Vec::new(),
        http: vec![origin],
    })
}

/// Checks an extension name: 1–64 characters of `A-Z a-z 0-9 . _ -`, not starting
/// with `.` or `-`. Names become directory and log-file names, so nothing else is safe.
pub fn validate_name(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("must not be empty".into());
    }
    if name.len() > 64 {
        return Err(format!("{name:?} is longer than 64 characters"));
    }
    if name.starts_with('.') || name.starts_with('-') {
        return Err(format!("{name:?} must not start with '.' or '-'"));
    }
    if let Some(c) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')))
    {
        return Err(format!(
            "{name:?} contains {c:?}: use only letters, digits, '.', '_' and '-'"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert!(validate_name("hello-py").is_ok());
        assert!(validate_name("a.b_c").is_ok());
        for bad in ["", "../evil", "a/b", ".hidden", "-x", "a b", "ü"] {
            assert!(validate_name(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_manifest_that_is_no_regular_file_or_too_long_is_refused_at_once() {
        let dir = zot_test_fixtures::fresh_dir("manifest");
        let path = dir.join(MANIFEST_FILE);
        let unreadable = |why: &str| {
            let err = Manifest::read(&dir).unwrap_err();
            assert!(
                matches!(&err.kind, ManifestErrorKind::Unreadable(e) if e.contains(why)),
                "{err}"
            );
        };
        std::os::unix::fs::symlink("/dev/zero", &path).unwrap();
        unreadable("not a regular file");
        std::fs::remove_file(&path).unwrap();
        let fifo = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
        assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
        unreadable("not a regular file");
        std::fs::remove_file(&path).unwrap();
        let long = format!(
            r#"{{"name":"x","exec":"x","description":"{}"}}"#,
            "a".repeat(MAX_MANIFEST_BYTES as usize)
        );
        std::fs::write(&path, long).unwrap();
        unreadable("larger than");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn program_resolution() {
        let m = |exec: &str| Manifest {
            name: "x".into(),
            version: String::new(),
            exec: Some(exec.into()),
            args: vec![],
            language: String::new(),
            description: String::new(),
            enabled: true,
            wasm: None,
            permissions: Permissions::default(),
            limits: Limits::default(),
            build: None,
            mcp: None,
            extra: Map::new(),
        };
        let dir = Path::new("/ext/x");
        assert_eq!(
            m("/usr/bin/python3").program(dir),
            Path::new("/usr/bin/python3")
        );
        assert_eq!(m("./run.sh").program(dir), Path::new("/ext/x/./run.sh"));
        assert_eq!(m("../bin/run").program(dir), Path::new("/ext/x/../bin/run"));
        assert_eq!(m("bin/run").program(dir), Path::new("/ext/x/bin/run"));
        assert_eq!(m("node").program(dir), Path::new("node"));
    }
}

#[cfg(test)]
mod validation_tests {
    use super::*;

    fn read(body: &str) -> Result<Manifest, ManifestError> {
        static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let dir = std::env::temp_dir().join(format!("zot-manifest-{}-{n}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(MANIFEST_FILE), body).unwrap();
        let m = Manifest::read(&dir);
        std::fs::remove_dir_all(&dir).unwrap();
        m
    }

    fn error(body: &str) -> String {
        read(body).unwrap_err().kind.to_string()
    }

    #[test]
    fn component_manifests() {
        let m = read(
            r#"{"name":"g","wasm":"g.wasm","permissions":{"cwd":"read","env":["A"],
                "http":["api.example.com"]},"limits":{"memory_mb":128,"tool_timeout_ms":500}}"#,
        )
        .unwrap();
        assert_eq!(m.launch(Path::new("/x")), Launch::Wasm("/x/g.wasm".into()));
        assert!(
            m.permissions.data_dir,
            "the data dir is asked for by default"
        );
        assert_eq!(m.permissions.cwd, Some(CwdAccess::Read));
        assert_eq!(m.limits.caps.memory_mb, Some(128));
    }

    #[test]
    fn a_field_that_looks_like_a_typo_is_named_with_the_field_it_means() {
        let m: Manifest = Manifest::from_value(serde_json::json!(
            {"name": "g", "exec": "x", "enabeld": false, "homepage": "https://x"}
        ))
        .unwrap();
        assert_eq!(m.likely_typos(), [("enabeld".to_string(), "enabled")]);
        assert_eq!(
            m.typo_warnings(),
            ["unknown field \"enabeld\" (a typo of \"enabled\"?): ignored"]
        );
    }

    #[test]
    fn errors_name_the_field() {
        for (body, field) in [
            (r#"{"name":"g"}"#, "\"exec\" (a program to run) or \"wasm\""),
            (
                r#"{"name":"g","exce":"x"}"#,
                "is \"exce\" a typo of \"exec\"?",
            ),
            (
                r#"{"name":"g","wams":"x"}"#,
                "is \"wams\" a typo of \"wasm\"?",
            ),
            (
                r#"{"name":"g","exec":"x","args":"x.py"}"#,
                "field \"args\": invalid type",
            ),
            (
                r#"{"name":"g","exec":"x","enabled":"no"}"#,
                "field \"enabled\"",
            ),
            (r#"{"name":7,"exec":"x"}"#, "field \"name\""),
            (
                r#"{"name":"g","exec":"x","wasm":"y"}"#,
                "exclude each other",
            ),
            (r#"{"name":"g","wasm":""}"#, "field \"wasm\" is empty"),
            (
                r#"{"name":"g","wasm":"g","permissions":{"net":true}}"#,
                "field \"permissions\": unknown field `net`",
            ),
            (
                r#"{"name":"g","wasm":"g","permissions":{"cwd":"write"}}"#,
                "field \"permissions\"",
            ),
            (
                r#"{"name":"g","wasm":"g","limits":{"cpu":1}}"#,
                "field \"limits\": unknown field `cpu`",
            ),
            (
                r#"{"name":"g","wasm":"g","limits":{"memory_mb":0}}"#,
                "field \"limits.memory_mb\"",
            ),
            (
                r#"{"name":"g","wasm":"g","limits":{"memory_mb":99999}}"#,
                "field \"limits.memory_mb\"",
            ),
            (
                r#"{"name":"g","wasm":"g","limits":{"tool_timeout_ms":0}}"#,
                "field \"limits.tool_timeout_ms\"",
            ),
            (
                r#"{"name":"g","wasm":"g","permissions":{"http":["ok.com","ftp://x"]}}"#,
                "field \"permissions.http[1]\"",
            ),
            (r#"{"name":"../g","wasm":"g"}"#, "field \"name\""),
        ] {
            let e = error(body);
            assert!(e.contains(field), "{body}: {e}");
        }
    }

    /// `limits` names an unknown field with every field it knows, as serde did when
    /// `limits` was one flat struct.
    #[test]
    fn an_unknown_limit_is_named_with_the_known_ones() {
        let e = error(r#"{"name":"g","wasm":"g","limits":{"memory_mb":64,"cpu":1}}"#);
        assert!(
            e.ends_with(
                "field \"limits\": unknown field `cpu`, expected one of `memory_mb`, \
                 `disk_mb`, `resources`, `http_requests`, `field_kib`, `tool_timeout_ms`"
            ),
            "{e}"
        );
    }
}
