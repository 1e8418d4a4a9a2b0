//! `extension.json`: reading, validating, and editing it without losing fields.

mod mcp;

pub use mcp::McpServer;

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
}

impl TransportKind {
    /// `stdio` or `wasm`.
    pub fn as_str(self) -> &'static str {
        match self {
            TransportKind::Stdio => "stdio",
            TransportKind::Wasm => "wasm",
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
}

/// A manifest that cannot be used: the file, and what is wrong with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ManifestError {
    pub path: PathBuf,
    pub kind: ManifestErrorKind,
}

/// What is wrong with a manifest; each names the field at fault and, where there is one,
/// the fix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ManifestErrorKind {
    /// The file cannot be read (the OS's reason).
    Unreadable(String),
    /// The file is not JSON.
    InvalidJson(String),
    /// The JSON does not have a manifest's shape.
    Invalid(String),
    /// The JSON is not an object (editing a manifest).
    NotAnObject,
    /// One field's value is unusable.
    Field { field: String, reason: String },
    /// Neither `exec` nor `wasm`.
    NoProgram,
    /// Neither `exec` nor `wasm`, but a field that looks like a typo of one of them.
    ProgramTypo { found: String, meant: &'static str },
    /// Both `exec` and `wasm`.
    BothPrograms,
    /// `exec` or `wasm` is `""`.
    Empty(&'static str),
    /// A `limits` value outside `1..=max`.
    OutOfRange {
        field: &'static str,
        value: u64,
        max: u64,
    },
    /// A bare component whose file stem is not an extension name.
    BadFileName(String),
    /// A component's embedded manifest (its [`SECTION`] custom section) is unusable.
    Section(Box<ManifestErrorKind>),
    /// The edited manifest cannot be written.
    Unwritable(String),
    /// The edited manifest cannot replace the old one.
    Unreplaceable(String),
}

impl fmt::Display for ManifestErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use ManifestErrorKind::*;
        match self {
            Unreadable(e) => write!(f, "cannot read: {e}"),
            InvalidJson(e) => write!(f, "invalid JSON: {e}"),
            Invalid(e) => write!(f, "invalid manifest: {e}"),
            NotAnObject => f.write_str("not a JSON object"),
            Field { field, reason } => write!(f, "field \"{field}\": {reason}"),
            NoProgram => f.write_str(
                "field \"exec\" (a program to run) or \"wasm\" (a component) is required \
                 (or \"mcp\": an MCP server)",
            ),
            ProgramTypo { found, meant } => write!(
                f,
                "field \"exec\" (a program to run) or \"wasm\" (a component) is required; \
                 is \"{found}\" a typo of \"{meant}\"?"
            ),
            BothPrograms => {
                f.write_str("fields \"exec\" and \"wasm\" exclude each other: keep one")
            }
            Empty(field) => write!(f, "field \"{field}\" is empty"),
            OutOfRange { field, value, max } => {
                write!(f, "field \"{field}\": {value} is outside 1..={max}")
            }
            BadFileName(e) => write!(f, "cannot name the extension after the file: {e}"),
            Section(e) => write!(f, "its embedded manifest (section \"{SECTION}\"): {e}"),
            Unwritable(e) => write!(f, "cannot write: {e}"),
            Unreplaceable(e) => write!(f, "cannot replace: {e}"),
        }
    }
}

impl fmt::Display for ManifestError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path.display(), self.kind)
    }
}

impl std::error::Error for ManifestError {}

/// `field "name": reason` for the field `name`.
/// The top-level fields of a manifest that zot reads.
pub const FIELDS: [&str; 11] = [
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
            mcp: None,
            extra: Map::new(),
        })
    }

    /// The transport it names: `wasm` for a component (an MCP server's too), else
    /// `stdio`.
    pub fn transport(&self) -> TransportKind {
        if self.wasm.is_some() || self.mcp.as_ref().is_some_and(|m| m.wasm.is_some()) {
            TransportKind::Wasm
        } else {
            TransportKind::Stdio
        }
    }

    /// Whether it runs in the sandbox: a component, an MCP server's too.
    pub fn is_component(&self) -> bool {
        self.transport() == TransportKind::Wasm
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

/// The custom section in which a component carries its manifest: a public contract
/// (docs/writing-extensions.md, "Embedding the manifest"). Its content is the JSON of an
/// `extension.json`, of which only `name`, `version`, `permissions` and `limits` count.
pub const SECTION: &str = crate::component::inspect::MANIFEST_SECTION;

/// What a component's embedded manifest says (its [`SECTION`] custom section): what a
/// bare `.wasm` is named and asks for.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Embedded {
    pub name: Option<String>,
    pub version: Option<String>,
    pub permissions: Permissions,
    pub limits: Limits,
}

impl Embedded {
    /// The fields a component's embedded manifest may set; any other is ignored.
    pub const FIELDS: [&'static str; 4] = ["name", "version", "permissions", "limits"];

    /// Reads the embedded manifest of the component `bytes`: the first [`SECTION`]
    /// custom section at any depth (the Rust SDK's lands in the component's core
    /// module), validated as `extension.json` is. `None` without one (or when `bytes`
    /// cannot be parsed before one is found: loading the file says what is wrong).
    pub fn of(bytes: &[u8]) -> Result<Option<Embedded>, ManifestErrorKind> {
        let Some(section) = crate::component::inspect(bytes).manifest else {
            return Ok(None);
        };
        let wrap = |kind| ManifestErrorKind::Section(Box::new(kind));
        let value: Value = serde_json::from_slice(section)
            .map_err(|e| wrap(ManifestErrorKind::InvalidJson(e.to_string())))?;
        let Value::Object(mut object) = value else {
            return Err(wrap(ManifestErrorKind::NotAnObject));
        };
        object.retain(|key, _| Embedded::FIELDS.contains(&key.as_str()));
        let name = object.get("name").cloned();
        let version = object.get("version").cloned();
        // Validated as a manifest's fields are: as a whole manifest, with a stand-in
        // name when it names none and the component it is in.
        if name.is_none() {
            object.insert("name".into(), Value::String("component".into()));
        }
        object.insert("wasm".into(), Value::String("component.wasm".into()));
        let m = Manifest::from_value(Value::Object(object)).map_err(wrap)?;
        Ok(Some(Embedded {
            name: name.map(|_| m.name),
            version: version.map(|_| m.version),
            permissions: m.permissions,
            limits: m.limits,
        }))
    }
}

/// Sets `enabled` in `dir/extension.json`, keeping every other field and their order.
/// The file is replaced atomically.
///
/// Returns whether the file changed: nothing is written when the extension already is
/// in that state (no `enabled` field counts as enabled). The edit is the smallest that
/// does it, so `disable` then `enable` gives back the very bytes there were (and
/// `zot ext verify` finds nothing changed): `"enabled": false` is added right after the
/// opening brace, in the file's own layout, and removed again; an existing value is
/// flipped in place.
pub fn set_enabled(dir: &Path, enabled: bool) -> Result<bool, ManifestError> {
    edit(dir, |text, manifest| {
        let object = manifest.as_object_mut()?;
        if object
            .get("enabled")
            .and_then(Value::as_bool)
            .unwrap_or(true)
            == enabled
        {
            return Some(None);
        }
        let mut wanted = object.clone();
        let had_field = wanted.contains_key("enabled");
        wanted.insert("enabled".into(), Value::Bool(enabled));
        let wanted = Value::Object(wanted);
        let candidates = enabled_edits(text, enabled, had_field);
        let fits = |candidate: &String| {
            let parsed = serde_json::from_str::<Value>(candidate).ok();
            parsed.as_ref().is_some_and(|v| {
                v == &wanted
                    || (enabled
                        && v.get("enabled").is_none()
                        && without_enabled(v) == without_enabled(&wanted))
            })
        };
        Some(Some(match candidates.into_iter().find(fits) {
            Some(text) => text.into_bytes(),
            None => pretty(&wanted),
        }))
    })
}

/// Sets one top-level field of `dir/extension.json`, keeping every other field and their
/// order. The file is replaced atomically, never through a link (see
/// [`crate::util::safe_write`]).
pub fn set_field(dir: &Path, key: &str, value: Value) -> Result<(), ManifestError> {
    edit(dir, |_, manifest| {
        manifest.as_object_mut()?.insert(key.into(), value);
        Some(Some(pretty(manifest)))
    })
    .map(|_| ())
}

/// Reads `dir/extension.json`, asks `change` for its new bytes (`None`: not an object;
/// `Some(None)`: nothing to change) and replaces the file with them, never through a
/// link. Returns whether it wrote.
fn edit(
    dir: &Path,
    change: impl FnOnce(&str, &mut Value) -> Option<Option<Vec<u8>>>,
) -> Result<bool, ManifestError> {
    use ManifestErrorKind::*;
    let path = dir.join(MANIFEST_FILE);
    let err = |kind| ManifestError {
        path: path.clone(),
        kind,
    };
    let bytes = read_manifest_file(&path).map_err(|e| err(Unreadable(e)))?;
    let text = String::from_utf8(bytes).map_err(|e| err(Invalid(e.to_string())))?;
    let mut manifest: Value =
        serde_json::from_str(&text).map_err(|e| err(Invalid(e.to_string())))?;
    let Some(out) = change(&text, &mut manifest).ok_or_else(|| err(NotAnObject))? else {
        return Ok(false);
    };
    crate::util::safe_write::SafeDir::open(dir)
        .and_then(|d| d.write(MANIFEST_FILE, &out))
        .map_err(|e| err(Unwritable(e.to_string())))?;
    Ok(true)
}

/// `manifest` as indented JSON with a final newline.
fn pretty(manifest: &Value) -> Vec<u8> {
    let mut out = serde_json::to_vec_pretty(manifest).expect("JSON value serialises");
    out.push(b'\n');
    out
}

/// `manifest` without its `enabled` field.
fn without_enabled(manifest: &Value) -> Value {
    let mut v = manifest.clone();
    if let Some(object) = v.as_object_mut() {
        object.shift_remove("enabled");
    }
    v
}

/// Small textual edits of `text` that set `enabled`, best first; each is checked by
/// parsing before it is used.
fn enabled_edits(text: &str, enabled: bool, had_field: bool) -> Vec<String> {
    let Some(brace) = text.find('{') else {
        return Vec::new();
    };
    let (head, rest) = text.split_at(brace + 1);
    // The layout after the brace: a newline and the first field's indentation, or none.
    let indent: String = rest
        .strip_prefix('\n')
        .map(|r| r.chars().take_while(|c| *c == ' ' || *c == '\t').collect())
        .unwrap_or_default();
    let added = if rest.starts_with('\n') {
        format!("\n{indent}\"enabled\": false,")
    } else {
        "\"enabled\": false, ".to_string()
    };
    let mut edits = Vec::new();
    if enabled {
        if let Some(after) = rest.strip_prefix(added.as_str()) {
            edits.push(format!("{head}{after}"));
        }
    } else if !had_field {
        edits.push(format!("{head}{added}{rest}"));
    }
    if had_field {
        let (from, to) = if enabled {
            ("false", "true")
        } else {
            ("true", "false")
        };
        for spacing in ["\"enabled\": ", "\"enabled\":"] {
            let needle = format!("{spacing}{from}");
            if text.matches(&needle).count() == 1 {
                edits.push(text.replacen(&needle, &format!("{spacing}{to}"), 1));
            }
        }
    }
    edits
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
    fn disable_then_enable_gives_back_the_same_bytes() {
        let dir = std::env::temp_dir().join(format!("zot-enable-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(MANIFEST_FILE);
        for original in [
            "{\n  \"name\": \"x\",\n  \"exec\": \"python3\",\n  \"args\": [\"a.py\", \"--v\"]\n}\n",
            "{\n\t\"name\": \"x\",\n\t\"exec\": \"x\"\n}",
            r#"{"name":"x","exec":"x","args":["a",  "b"]}"#,
            "{\n  \"name\": \"x\",\n  \"enabled\": true,\n  \"exec\": \"x\"\n}\n",
            r#"{"name":"x","enabled":false,"exec":"x"}"#,
        ] {
            std::fs::write(&path, original).unwrap();
            let was = Manifest::read(&dir).unwrap().enabled;
            assert!(
                !set_enabled(&dir, was).unwrap(),
                "already so: nothing written"
            );
            assert_eq!(std::fs::read_to_string(&path).unwrap(), original);
            assert!(set_enabled(&dir, !was).unwrap());
            assert_eq!(Manifest::read(&dir).unwrap().enabled, !was, "{original}");
            assert!(set_enabled(&dir, was).unwrap());
            assert_eq!(Manifest::read(&dir).unwrap().enabled, was);
            assert_eq!(std::fs::read_to_string(&path).unwrap(), original);
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_manifest_that_is_no_regular_file_or_too_long_is_refused_at_once() {
        let dir = std::env::temp_dir().join(format!("zot-manifest-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
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

#[cfg(test)]
mod embedded_tests {
    use super::*;

    fn leb(n: usize, out: &mut Vec<u8>) {
        zot_test_fixtures::leb(n as u64, out);
    }

    /// A section `id` with `body`.
    fn section(id: u8, body: &[u8]) -> Vec<u8> {
        let mut out = vec![id];
        leb(body.len(), &mut out);
        out.extend_from_slice(body);
        out
    }

    fn custom(name: &str, content: &[u8]) -> Vec<u8> {
        let mut body = Vec::new();
        leb(name.len(), &mut body);
        body.extend_from_slice(name.as_bytes());
        body.extend_from_slice(content);
        section(0, &body)
    }

    const MODULE: &[u8] = b"\0asm\x01\0\0\0";
    const COMPONENT: &[u8] = b"\0asm\x0d\0\x01\0";

    fn module(sections: &[Vec<u8>]) -> Vec<u8> {
        [MODULE.to_vec(), sections.concat()].concat()
    }

    fn component(sections: &[Vec<u8>]) -> Vec<u8> {
        [COMPONENT.to_vec(), sections.concat()].concat()
    }

    const ASKS: &str = r#"{"name":"probe","version":"1.2.0","wasm":"ignored.wasm",
        "exec":"ignored","description":"ignored","enabled":false,
        "permissions":{"env":["TOKEN"],"http":["api.example.com"]},"limits":{"memory_mb":96}}"#;

    #[test]
    fn a_top_level_section_is_read_and_only_its_four_fields_count() {
        let bytes = component(&[custom("other", b"x"), custom(SECTION, ASKS.as_bytes())]);
        let e = Embedded::of(&bytes).unwrap().unwrap();
        assert_eq!(e.name.as_deref(), Some("probe"));
        assert_eq!(e.version.as_deref(), Some("1.2.0"));
        assert_eq!(e.permissions.env, ["TOKEN"]);
        assert_eq!(e.permissions.http, ["api.example.com"]);
        assert!(e.permissions.data_dir);
        assert_eq!(e.limits.caps.memory_mb, Some(96));
    }

    #[test]
    fn a_nested_section_is_found_and_the_first_one_wins() {
        let inner = module(&[custom(SECTION, ASKS.as_bytes())]);
        let later = br#"{"permissions":{"env":["LATER"]}}"#;
        let bytes = component(&[
            section(1, &inner),
            section(4, &component(&[custom(SECTION, later)])),
            custom(SECTION, later),
        ]);
        let e = Embedded::of(&bytes).unwrap().unwrap();
        assert_eq!(e.permissions.env, ["TOKEN"]);
        // Deeper: a component inside a component.
        let bytes = component(&[section(4, &component(&[section(1, &inner)]))]);
        assert_eq!(
            Embedded::of(&bytes).unwrap().unwrap().name.as_deref(),
            Some("probe")
        );
    }

    #[test]
    fn without_a_section_nothing_is_asked() {
        let bytes = component(&[section(1, &module(&[custom("producers", b"")]))]);
        assert_eq!(Embedded::of(&bytes).unwrap(), None);
        assert_eq!(Embedded::of(b"not wasm at all").unwrap(), None);
        // Only some fields: the rest as a manifest without them.
        let bytes = component(&[custom(SECTION, br#"{"version":"2"}"#)]);
        let e = Embedded::of(&bytes).unwrap().unwrap();
        assert_eq!((e.name, e.version.as_deref()), (None, Some("2")));
        assert_eq!(e.permissions, Permissions::default());
        assert_eq!(e.limits, Limits::default());
    }

    #[test]
    fn a_malformed_section_is_an_error_naming_it() {
        for (content, says) in [
            (&b"{not json"[..], "invalid JSON"),
            (b"[1]", "not a JSON object"),
            (
                br#"{"permissions":{"net":true}}"#,
                "field \"permissions\": unknown field `net`",
            ),
            (
                br#"{"limits":{"memory_mb":99999}}"#,
                "field \"limits.memory_mb\"",
            ),
            (
                br#"{"permissions":{"http":["ftp://x"]}}"#,
                "field \"permissions.http[0]\"",
            ),
            (br#"{"name":"../x"}"#, "field \"name\""),
        ] {
            let bytes = component(&[custom(SECTION, content)]);
            let e = Embedded::of(&bytes).unwrap_err().to_string();
            assert!(
                e.starts_with("its embedded manifest (section \"zot:manifest\"): "),
                "{e}"
            );
            assert!(e.contains(says), "{says}: {e}");
        }
    }

    #[test]
    fn a_bare_component_takes_its_name_and_asks_from_the_section() {
        let dir = std::env::temp_dir().join(format!("zot-embedded-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let with = dir.join("some file.wasm");
        std::fs::write(&with, component(&[custom(SECTION, ASKS.as_bytes())])).unwrap();
        let m = Manifest::bare_component(&with).unwrap();
        assert_eq!((m.name.as_str(), m.version.as_str()), ("probe", "1.2.0"));
        assert_eq!(m.permissions.env, ["TOKEN"]);
        assert_eq!(m.limits.caps.memory_mb, Some(96));
        assert!(m.enabled && m.exec.is_none() && m.description.is_empty());
        let without = dir.join("plain.wasm");
        std::fs::write(&without, component(&[])).unwrap();
        let m = Manifest::bare_component(&without).unwrap();
        assert_eq!((m.name.as_str(), m.version.as_str()), ("plain", ""));
        assert_eq!(m.permissions, Permissions::default());
        let bad = dir.join("bad.wasm");
        std::fs::write(&bad, component(&[custom(SECTION, b"{")])).unwrap();
        let e = Manifest::bare_component(&bad).unwrap_err().to_string();
        assert!(e.contains("bad.wasm: its embedded manifest"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
