//! Why a manifest is refused, naming the field.

use super::SECTION;
use std::fmt;
use std::path::PathBuf;

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
    /// The folder named as the extension's does not exist (the error's path is it).
    NoSuchDirectory,
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
            NoSuchDirectory => f.write_str("no such directory"),
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
