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
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

fn yes() -> bool {
    true
}

/// A manifest that cannot be used, with the file and the field at fault.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ManifestError {
    pub path: PathBuf,
    pub message: String,
}

impl fmt::Display for ManifestError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path.display(), self.message)
    }
}

impl std::error::Error for ManifestError {}

impl Manifest {
    /// Reads and validates `dir/extension.json`.
    pub fn read(dir: &Path) -> Result<Manifest, ManifestError> {
        let path = dir.join(MANIFEST_FILE);
        let err = |message: String| ManifestError {
            path: path.clone(),
            message,
        };
        let text = std::fs::read(&path).map_err(|e| err(format!("cannot read: {e}")))?;
        let manifest: Manifest =
            serde_json::from_slice(&text).map_err(|e| err(format!("invalid manifest: {e}")))?;
        validate_name(&manifest.name).map_err(|m| err(format!("field \"name\": {m}")))?;
        match manifest.exec.as_deref() {
            None => return Err(err("field \"exec\" is required: the program to run".into())),
            Some("") => return Err(err("field \"exec\" is empty".into())),
            Some(_) => {}
        }
        Ok(manifest)
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
    let path = dir.join(MANIFEST_FILE);
    let err = |message: String| ManifestError {
        path: path.clone(),
        message,
    };
    let text = std::fs::read(&path).map_err(|e| err(format!("cannot read: {e}")))?;
    let mut value: Value =
        serde_json::from_slice(&text).map_err(|e| err(format!("invalid manifest: {e}")))?;
    let object = value
        .as_object_mut()
        .ok_or_else(|| err("not a JSON object".into()))?;
    object.insert("enabled".into(), Value::Bool(enabled));
    let mut out = serde_json::to_vec_pretty(&value).expect("JSON value serialises");
    out.push(b'\n');
    let tmp = dir.join(format!(".{MANIFEST_FILE}.tmp"));
    std::fs::write(&tmp, out).map_err(|e| err(format!("cannot write: {e}")))?;
    std::fs::rename(&tmp, &path).map_err(|e| err(format!("cannot replace: {e}")))
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
