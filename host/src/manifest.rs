//! `extension.json`: reading, validating, and editing it without losing fields.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::fmt;
use std::path::{Path, PathBuf};

/// The manifest's file name.
pub const MANIFEST_FILE: &str = "extension.json";

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
/// extension, the others to components (see [`crate::sandbox::Limit`]: defaults, maxima,
/// and how a value above the default is granted).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Limits {
    /// Linear memory, in MiB (default 64).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_mb: Option<u64>,
    /// Bytes stored in `/data`, in MiB (default 256).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disk_mb: Option<u64>,
    /// WASI resource-table entries: open files, streams, `wasi:http` objects (default
    /// 1000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<u64>,
    /// Outgoing HTTP requests in flight at once (default 16).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http_requests: Option<u64>,
    /// Size of one `wasi:http` fields (headers) resource, in KiB (default 32).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field_kib: Option<u64>,
    /// How long one of its tool calls may take, in ms (default: the host's tool timeout).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_timeout_ms: Option<u64>,
}

impl Limits {
    /// What these limits ask of `limit`, if they name it.
    pub fn get(&self, limit: crate::sandbox::Limit) -> Option<u64> {
        use crate::sandbox::Limit::*;
        match limit {
            Memory => self.memory_mb,
            Disk => self.disk_mb,
            Resources => self.resources,
            HttpRequests => self.http_requests,
            FieldKib => self.field_kib,
        }
    }
}

/// The largest memory limit a manifest may ask for.
pub const MAX_MEMORY_MB: u64 = 4096;
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
                "field \"exec\" (a program to run) or \"wasm\" (a component) is required",
            ),
            BothPrograms => {
                f.write_str("fields \"exec\" and \"wasm\" exclude each other: keep one")
            }
            Empty(field) => write!(f, "field \"{field}\" is empty"),
            OutOfRange { field, value, max } => {
                write!(f, "field \"{field}\": {value} is outside 1..={max}")
            }
            BadFileName(e) => write!(f, "cannot name the extension after the file: {e}"),
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
        let text = std::fs::read(path).map_err(|e| Unreadable(e.to_string()))?;
        let value: Value = serde_json::from_slice(&text).map_err(|e| InvalidJson(e.to_string()))?;
        // Parse the nested objects alone first, so that an error names its field.
        if let Some(v) = value.get("permissions") {
            serde_json::from_value::<Permissions>(v.clone())
                .map_err(|e| field("permissions", e))?;
        }
        if let Some(v) = value.get("limits") {
            serde_json::from_value::<Limits>(v.clone()).map_err(|e| field("limits", e))?;
        }
        let manifest: Manifest =
            serde_json::from_value(value).map_err(|e| Invalid(e.to_string()))?;
        validate_name(&manifest.name).map_err(|e| field("name", e))?;
        match (manifest.exec.as_deref(), manifest.wasm.as_deref()) {
            (None, None) => return Err(NoProgram),
            (Some(_), Some(_)) => return Err(BothPrograms),
            (Some(""), _) => return Err(Empty("exec")),
            (_, Some("")) => return Err(Empty("wasm")),
            _ => {}
        }
        let in_range = |field, value: Option<u64>, max| match value {
            Some(value) if value == 0 || value > max => Err(OutOfRange { field, value, max }),
            _ => Ok(()),
        };
        for limit in crate::sandbox::Limit::ALL {
            let spec = limit.spec();
            in_range(spec.path, manifest.limits.get(limit), spec.max)?;
        }
        in_range(
            "limits.tool_timeout_ms",
            manifest.limits.tool_timeout_ms,
            MAX_TOOL_TIMEOUT_MS,
        )?;
        for (i, host) in manifest.permissions.http.iter().enumerate() {
            crate::sandbox::HostPattern::parse(host)
                .map_err(|e| field(format!("permissions.http[{i}]"), e))?;
        }
        Ok(manifest)
    }

    /// The manifest of a bare component file (no `extension.json`): named after the file
    /// (`guard.wasm` → `guard`), asking nothing but its data dir.
    pub fn bare_component(wasm: &Path) -> Result<Manifest, ManifestError> {
        let name = wasm
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        validate_name(&name).map_err(|e| ManifestError {
            path: wasm.to_path_buf(),
            kind: ManifestErrorKind::BadFileName(e),
        })?;
        Ok(Manifest {
            name,
            version: String::new(),
            exec: None,
            args: Vec::new(),
            language: String::new(),
            description: String::new(),
            enabled: true,
            wasm: Some(wasm.display().to_string()),
            permissions: Permissions::default(),
            limits: Limits::default(),
            extra: Map::new(),
        })
    }

    /// The transport it names: `wasm` for a component, else `stdio`.
    pub fn transport(&self) -> TransportKind {
        if self.wasm.is_some() {
            TransportKind::Wasm
        } else {
            TransportKind::Stdio
        }
    }

    /// How to run it; paths resolved against `dir`.
    pub fn launch(&self, dir: &Path) -> Launch {
        match &self.wasm {
            Some(wasm) => Launch::Wasm(dir.join(wasm)),
            None => Launch::Exec(self.program(dir)),
        }
    }

    /// The program to run, resolved as PROTOCOL.md says: absolute as is; `./`, `../` or
    /// containing a separator: relative to `dir`; a bare name: looked up on `PATH`.
    pub fn program(&self, dir: &Path) -> PathBuf {
        let exec = self.exec.as_deref().unwrap_or_default();
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

/// Sets `enabled` in `dir/extension.json`, keeping every other field and their order.
/// The file is replaced atomically.
pub fn set_enabled(dir: &Path, enabled: bool) -> Result<(), ManifestError> {
    set_field(dir, "enabled", Value::Bool(enabled))
}

/// Sets one top-level field of `dir/extension.json`, keeping every other field and their
/// order. The file is replaced atomically.
pub fn set_field(dir: &Path, key: &str, value: Value) -> Result<(), ManifestError> {
    use ManifestErrorKind::*;
    let path = dir.join(MANIFEST_FILE);
    let err = |kind| ManifestError {
        path: path.clone(),
        kind,
    };
    let text = std::fs::read(&path).map_err(|e| err(Unreadable(e.to_string())))?;
    let mut manifest: Value =
        serde_json::from_slice(&text).map_err(|e| err(Invalid(e.to_string())))?;
    let object = manifest.as_object_mut().ok_or_else(|| err(NotAnObject))?;
    object.insert(key.into(), value);
    let mut out = serde_json::to_vec_pretty(&manifest).expect("JSON value serialises");
    out.push(b'\n');
    let tmp = dir.join(format!(".{MANIFEST_FILE}.tmp"));
    std::fs::write(&tmp, out).map_err(|e| err(Unwritable(e.to_string())))?;
    std::fs::rename(&tmp, &path).map_err(|e| err(Unreplaceable(e.to_string())))
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
        assert_eq!(m.limits.memory_mb, Some(128));
    }

    #[test]
    fn errors_name_the_field() {
        for (body, field) in [
            (r#"{"name":"g"}"#, "\"exec\" (a program to run) or \"wasm\""),
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
}
