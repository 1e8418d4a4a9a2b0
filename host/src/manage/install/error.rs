//! [`InstallError`]: why install, update, remove or verify failed.

use crate::manifest::{ManifestError, MANIFEST_FILE};
use std::fmt;
use std::path::PathBuf;

/// Why an operation failed, worded for the user: it names the file or extension and,
/// where there is one, the next step.
#[derive(Debug)]
pub enum InstallError {
    /// A file operation failed: `cannot <action> <path>: <cause>`.
    Io {
        action: &'static str,
        path: PathBuf,
        cause: std::io::Error,
    },
    /// `--ref` with a source that is not a git URL.
    RefNeedsGit,
    /// `--path` with a `.wasm` file.
    PathNeedsTree,
    /// `--path` leaves the source or is empty.
    BadSubPath(String),
    /// `--name` is not an extension name (the reason).
    BadName(String),
    /// `--name` could not be written into the staged manifest.
    NameNotApplied(ManifestError),
    /// The source does not exist or cannot be resolved.
    SourceNotFound {
        path: PathBuf,
        cause: std::io::Error,
    },
    /// The source is not a directory.
    SourceNotADirectory(PathBuf),
    /// The source holds zot's own extensions directory.
    SourceContainsRoot(PathBuf),
    /// No directory at `--path` (or at the top of the source).
    NoSubdir(Option<String>),
    /// No `extension.json` at `--path` (or at the top of the source).
    NoManifest(Option<String>),
    /// No `extension.json` at the top of the source, but in these folders of it: one is
    /// installed with `--path`.
    ManifestsBelow(Vec<String>),
    /// The staged `extension.json` is unusable.
    InvalidManifest(ManifestError),
    /// The program or component the manifest names is not in the source.
    ProgramMissing(PathBuf),
    /// Something that is neither a file, a directory nor a symlink.
    SpecialFile(PathBuf),
    /// A symlink that leads out of the extension: absolute, or above its root once
    /// resolved.
    UnsafeSymlink {
        link: PathBuf,
        target: PathBuf,
        absolute: bool,
    },
    /// A symlink that leads nowhere inside the extension: to nothing, or round a loop.
    UnprovableSymlink {
        link: PathBuf,
        target: PathBuf,
        looped: bool,
    },
    /// `--path` leads out of the source (through a symlink) or round a loop.
    SubPathOutside(String),
    /// git is not installed or cannot run.
    NoGit(std::io::Error),
    /// A git command failed: its subcommand and its stderr, one line.
    Git { command: String, stderr: String },
    /// `--ref` looked like a commit the repository does not have.
    NoCommit {
        commit: String,
        url: String,
        cause: Box<InstallError>,
    },
    /// The staging path cannot be passed to git.
    StagingNotUtf8,
    /// The file is no component this host runs: not a component (what it is instead),
    /// or of a world or version it does not speak.
    Component(crate::component::ComponentError),
    /// The component, started with nothing granted, gave no usable `hello`.
    Refused(String),
    /// The component's embedded manifest is unusable (the manifest's reason, which names
    /// the section).
    BadEmbedded(crate::manifest::ManifestErrorKind),
    /// The component's `hello` names it with a name that cannot be used.
    BadHelloName { name: String, reason: String },
    /// The component or its manifest cannot be written to the staging folder.
    StageComponent(std::io::Error),
    /// An install of that name exists and replacing it was not asked for.
    AlreadyInstalled { name: String, dest: PathBuf },
    /// Installed, but the install record could not be written.
    NotRecorded {
        name: String,
        cause: Box<InstallError>,
    },
    /// An install record that is not valid JSON.
    Damaged {
        path: PathBuf,
        cause: serde_json::Error,
    },
    /// Removed, but a record of the user's consent to it (its grant, a project's trust in
    /// it) could not be forgotten.
    NotForgotten(crate::records::consent::ConsentError),
    /// A name that would address another folder.
    NotAName(String),
    /// The component cannot be compiled (within the compiler's limits): not installed.
    NotCompiled(crate::component::ComponentError),
    /// What the manifest runs is not in the source, and no recipe builds it (`wasm`:
    /// for `--wasm`, none builds a component of it).
    NoRecipe { missing: String, wasm: bool },
    /// A recipe needs a toolchain that is not installed: which, and how to get it.
    NoToolchain {
        tool: &'static str,
        get: &'static str,
    },
    /// This platform cannot confine a build (no Landlock and seccomp).
    BuildNotConfinable,
    /// `--wasm` with a component file: there is nothing to build.
    WasmNeedsSource,
    /// A build step failed: its command, why, its log and that log's last lines.
    BuildFailed {
        command: String,
        why: String,
        log: PathBuf,
        tail: String,
    },
    /// The build ended well but did not make what the manifest runs (or made a link).
    BuiltNothing(String),
    /// A signature was required and is missing, unusable, by another key, or of
    /// something else.
    Signature(super::signature::SignatureError),
}

impl InstallError {
    /// `cannot <action> <path>: <cause>`.
    pub(crate) fn io(
        action: &'static str,
        path: impl Into<PathBuf>,
    ) -> impl Fn(std::io::Error) -> Self {
        let path = path.into();
        move |cause| InstallError::Io {
            action,
            path: path.clone(),
            cause,
        }
    }
}

impl fmt::Display for InstallError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use InstallError::*;
        let hint = "give a directory holding extension.json, a git URL or a .wasm file";
        match self {
            Io {
                action,
                path,
                cause,
            } => write!(f, "cannot {action} {}: {cause}", path.display()),
            RefNeedsGit => f.write_str("--ref needs a git URL"),
            PathNeedsTree => f.write_str("--path needs a directory or a git URL, not a .wasm file"),
            BadSubPath(path) => write!(
                f,
                "--path {path:?}: give a relative path inside the source, without `..`"
            ),
            BadName(reason) => write!(f, "--name: {reason}"),
            NoRecipe {
                missing,
                wasm: false,
            } => write!(
                f,
                "{MANIFEST_FILE} names {missing}, which is not in the source, and nothing \
                 says how to build it: build it first, or add a \"build\" to the manifest \
                 (docs/installing.md#builds)"
            ),
            NoRecipe {
                missing,
                wasm: true,
            } => write!(
                f,
                "--wasm: no recipe builds a component of it (a go.mod does: \
                 docs/installing.md#builds); {missing} is not in the source"
            ),
            NoToolchain { tool, get } => {
                write!(f, "building it needs {tool}, which is not found: {get}")
            }
            WasmNeedsSource => f.write_str(
                "--wasm builds a component from a source (a directory or a git URL); a \
                 .wasm file is one already: install it without --wasm",
            ),
            BuildNotConfinable => f.write_str(
                "building at install runs the build confined, which needs Linux (Landlock \
                 and seccomp): build it yourself, then install the folder",
            ),
            BuildFailed {
                command,
                why,
                log,
                tail,
            } => write!(
                f,
                "the build failed: `{command}`: {why}; nothing was installed (log: {})\n{tail}",
                log.display()
            ),
            BuiltNothing(output) => write!(
                f,
                "the build ended without making {output} (a file, not a link): nothing \
                 was installed"
            ),
            NameNotApplied(e) => write!(f, "{e}"),
            SourceNotFound { path, cause } => write!(f, "{}: {cause}; {hint}", path.display()),
            SourceNotADirectory(path) => write!(f, "{} is not a directory; {hint}", path.display()),
            SourceContainsRoot(path) => write!(
                f,
                "{} contains zot's extensions directory; install from a separate directory",
                path.display()
            ),
            NoSubdir(at) => write!(f, "the source has no directory{}", at_path(at)),
            NoManifest(None) => write!(
                f,
                "no {MANIFEST_FILE} at the top of the source; an extension must hold one"
            ),
            NoManifest(at) => write!(
                f,
                "no {MANIFEST_FILE}{} of the source; an extension must hold one",
                at_path(at)
            ),
            ManifestsBelow(found) => write!(
                f,
                "no {MANIFEST_FILE} at the top of the source, but in {}\nhint: install one \
                 of them with --path, e.g. --path {}",
                found.join(", "),
                crate::util::terminal_text::shell_word(&found[0])
            ),
            InvalidManifest(e) => write!(f, "invalid {MANIFEST_FILE}: {}", e.kind),
            ProgramMissing(path) => write!(
                f,
                "{MANIFEST_FILE} names {}, which is not in the source (build it first?)",
                path.display()
            ),
            SpecialFile(path) => write!(
                f,
                "{} is not a file, directory or symlink; remove it from the extension",
                path.display()
            ),
            UnsafeSymlink {
                link,
                target,
                absolute,
            } => write!(
                f,
                "symlink {} -> {} points outside the extension{}; refusing to install it \
                 (replace the link with a copy of what it points to)",
                link.display(),
                target.display(),
                if *absolute { " (an absolute path)" } else { "" }
            ),
            UnprovableSymlink {
                link,
                target,
                looped,
            } => write!(
                f,
                "symlink {} -> {} {}; refusing to install it (remove the link or replace it \
                 with a copy of what it should point to)",
                link.display(),
                target.display(),
                if *looped {
                    "is a loop of links"
                } else {
                    "points to nothing inside the extension"
                }
            ),
            SubPathOutside(path) => write!(
                f,
                "--path {path} leads out of the source (through a symlink); refusing it"
            ),
            NoGit(e) => write!(f, "cannot run git: {e}; install git or give a directory"),
            Git { command, stderr } => write!(f, "git {command} failed: {stderr}"),
            NoCommit { commit, url, cause } => write!(f, "no commit {commit} in {url}: {cause}"),
            StagingNotUtf8 => f.write_str("the staging path is not UTF-8"),
            Component(e) => write!(f, "{e}"),
            Refused(why) => write!(f, "refused: {why}"),
            BadEmbedded(kind) => write!(f, "{kind}"),
            BadHelloName { name, reason } => write!(
                f,
                "the component's hello names it {name:?}, which cannot be an extension name: \
                 {reason}; pass --name"
            ),
            StageComponent(e) => write!(f, "cannot stage the component: {e}"),
            AlreadyInstalled { name, dest } => write!(
                f,
                "{name} is already installed at {}; pass --force to replace it, or use \
                 `zot ext update {name}`",
                dest.display()
            ),
            NotRecorded { name, cause } => write!(
                f,
                "{name} is installed, but its provenance was not recorded: {cause}"
            ),
            Damaged { path, cause } => write!(f, "{} is damaged: {cause}", path.display()),
            NotAName(name) => write!(f, "{name:?} is not an extension name"),
            NotCompiled(e) => write!(f, "cannot compile it, so it was not installed: {e}"),
            NotForgotten(e) => e.fmt(f),
            Signature(e) => write!(f, "{e}; nothing was installed"),
        }
    }
}

/// ` at --path <p>`, or nothing.
fn at_path(path: &Option<String>) -> String {
    path.as_ref()
        .map_or(String::new(), |p| format!(" at --path {p}"))
}

impl std::error::Error for InstallError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        use InstallError::*;
        match self {
            Io { cause, .. } | SourceNotFound { cause, .. } => Some(cause),
            NoGit(e) | StageComponent(e) => Some(e),
            NameNotApplied(e) | InvalidManifest(e) => Some(e),
            NoCommit { cause, .. } | NotRecorded { cause, .. } => Some(cause.as_ref()),
            Damaged { cause, .. } => Some(cause),
            NotForgotten(e) => Some(e),
            Signature(e) => Some(e),
            _ => None,
        }
    }
}

impl From<crate::records::provenance::ProvenanceError> for InstallError {
    fn from(e: crate::records::provenance::ProvenanceError) -> Self {
        use crate::records::provenance::ProvenanceError;
        match e {
            ProvenanceError::Io {
                action,
                path,
                cause,
            } => InstallError::Io {
                action,
                path,
                cause,
            },
            ProvenanceError::Damaged { path, cause } => InstallError::Damaged { path, cause },
        }
    }
}

impl From<super::signature::SignatureError> for InstallError {
    fn from(e: super::signature::SignatureError) -> Self {
        InstallError::Signature(e)
    }
}
