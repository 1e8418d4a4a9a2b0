//! Starting an extension on its transport: the only code that names both the stdio and
//! the wasm transport. The core (`crate::host`) asks a [`Launcher`] for a
//! [`Connection`] and never learns more about how frames travel.

use crate::budget::Budget;
use crate::budget::Timeouts;
use crate::component::compile::Compiler;
use crate::identity::Identity;
use crate::log::ExtLog;
use crate::manifest::{Launch, Manifest, McpServer, TransportKind};
use crate::paths::ZotHome;
use crate::records::trust::Fingerprint;
use crate::sandbox;
use crate::sandbox::view::SandboxView;
use crate::transport::mcp::{self, McpSpec};
use crate::transport::Connection;
use std::fmt;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::time::Duration;
use zot_protocol::HostFrame;

mod remote;
#[cfg(any(test, feature = "test-support"))]
mod scripted;
mod stdio;
mod wasm;
#[cfg(any(test, feature = "test-support"))]
pub use scripted::Scripted;

/// One extension to start.
pub struct Request<'a> {
    pub manifest: &'a Manifest,
    /// Its directory (the manifest's folder).
    pub dir: &'a Path,
    /// Where it is installed: what its grant and data dir belong to.
    pub identity: &'a Identity,
    /// What every launch needs of the host's configuration.
    pub context: LaunchContext<'a>,
    /// Its log (`$ZOT_HOME/logs/ext-<name>.log`).
    pub log: &'a ExtLog,
    /// What the user granted for this run only (a component's; see
    /// [`sandbox::RunGrant::applies_to`] for which extensions get it).
    pub run_grant: Option<&'a sandbox::RunGrant>,
    /// The hashes of its files it was admitted on (a trusted project extension's): a
    /// native program runs from a copy of the bytes found there, or not at all.
    pub admitted: Option<&'a Fingerprint>,
}

/// What starting an extension needs of the host's configuration, and nothing more (the
/// core's [`HostConfig::launch_context`](crate::HostConfig::launch_context)).
#[derive(Clone, Copy)]
pub struct LaunchContext<'a> {
    /// `$ZOT_HOME`: data dirs, grants, the compile cache.
    pub home: &'a ZotHome,
    /// The project directory (what the extension is told, and what `cwd` grants).
    pub cwd: &'a Path,
    /// The longest line taken from the extension, in bytes.
    pub max_frame: usize,
    /// The deadlines (what the bridge gives the outer host's frames).
    pub timeouts: &'a Timeouts,
    /// How components are compiled.
    pub compiler: &'a Compiler,
}

/// A started extension's transport.
pub struct Launched {
    pub connection: Connection,
    pub transport: TransportKind,
    /// How a component is sandboxed (`None` for a subprocess).
    pub sandbox: Option<SandboxView>,
    /// The paths the extension is told in `hello_ack`, as it sees them.
    pub paths: SeenPaths,
}

/// `hello_ack`'s paths as the extension sees them: a subprocess sees the host's paths; a
/// component sees only its own file system (`/data`, and the project directory when
/// granted, mounted at its host path), and is told `/` for a directory it cannot see and
/// `""` for a data dir it does not have — never a host path it was not granted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SeenPaths {
    pub extension_dir: String,
    pub cwd: String,
    pub data_dir: String,
}

/// What a component is told for a directory it cannot see.
const UNSEEN: &str = "/";

/// What [`Launcher::launch`] returns: the transport, or why it could not start.
pub type LaunchFuture<'a> = Pin<Box<dyn Future<Output = Result<Launched, StartError>> + Send + 'a>>;

/// Why an extension did not start; the text is its `errors[].error` in the load report.
#[derive(Debug)]
pub enum StartError {
    /// The subprocess could not be spawned (the program is missing or not executable).
    Spawn {
        program: PathBuf,
        cause: std::io::Error,
        /// What to do about it, when there is an obvious next step.
        hint: Option<String>,
    },
    /// The component could not be loaded, checked, sandboxed or instantiated.
    Component {
        wasm: PathBuf,
        error: crate::component::ComponentError,
    },
    /// An MCP server's component is a zot reactor, not a command speaking MCP on stdio.
    NotMcp { wasm: PathBuf },
    /// The user confined this classic extension, and it cannot be confined as granted:
    /// it does not start unconfined.
    Confine(String),
    /// Its program is not what its files were checked as (project trust, confinement):
    /// changed between the check and its start.
    Changed(String),
    /// A remote MCP server cannot be reached: not granted (no connection was made), or
    /// a header cannot be made (a variable or file it names is missing).
    Remote {
        url: String,
        why: String,
        hint: Option<String>,
    },
    /// The start task itself failed: a bug in the host or a launcher, not the
    /// extension's doing.
    Aborted(String),
}

impl fmt::Display for StartError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StartError::Spawn {
                program,
                cause,
                hint,
            } => {
                write!(f, "cannot start {}: {cause}", program.display())?;
                match hint {
                    Some(hint) => write!(f, "\nhint: {hint}"),
                    None => Ok(()),
                }
            }
            StartError::Component { wasm, error } => {
                write!(f, "cannot start {}: {error}", wasm.display())
            }
            StartError::Confine(why) => write!(f, "not started unconfined: {why}"),
            StartError::Changed(why) => write!(f, "not started: {why}"),
            StartError::NotMcp { wasm } => write!(
                f,
                "cannot start {}: it is a zot component, not an MCP server (a command \
                 reading MCP on stdin): name it in \"wasm\", not in \"mcp.wasm\"",
                wasm.display()
            ),
            StartError::Remote { url, why, hint } => {
                write!(f, "cannot reach the remote MCP server at {url}: {why}")?;
                match hint {
                    Some(hint) => write!(f, "\nhint: {hint}"),
                    None => Ok(()),
                }
            }
            StartError::Aborted(why) => write!(f, "its start failed: {why}"),
        }
    }
}

impl std::error::Error for StartError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            StartError::Spawn { cause, .. } => Some(cause),
            StartError::Component { error, .. } => Some(error),
            StartError::NotMcp { .. }
            | StartError::Confine(_)
            | StartError::Changed(_)
            | StartError::Remote { .. }
            | StartError::Aborted(_) => None,
        }
    }
}

/// Turns a discovered extension into a [`Connection`]. [`Transports`] is the host's own;
/// tests (and embedders with a transport of their own) pass another to
/// [`Host::with_launcher`](crate::Host::with_launcher): `Scripted` (feature
/// `test-support`) starts every extension as an in-memory peer the test plays.
pub trait Launcher: Send + Sync {
    /// Starts one extension.
    fn launch<'a>(&'a self, request: Request<'a>) -> LaunchFuture<'a>;
}

/// The host's transports: a subprocess over stdio for `exec`, a sandboxed component for
/// `wasm`.
pub struct Transports;

impl Launcher for Transports {
    fn launch<'a>(&'a self, request: Request<'a>) -> LaunchFuture<'a> {
        Box::pin(async move {
            let launched = match request.manifest.launch(request.dir) {
                Launch::Exec(program) => stdio::start(&request, program),
                Launch::Wasm(component) => wasm::start(&request, component).await,
                // Already the adapter's connection (it speaks MCP over HTTP itself).
                Launch::Remote(url) => return remote::start(&request, url),
            }?;
            Ok(match &request.manifest.mcp {
                Some(server) => speak_mcp(&request, server, launched),
                None => launched,
            })
        })
    }
}

/// An MCP server on the transport it was started on: what the core gets is the
/// adapter's connection (`transport::mcp`).
fn speak_mcp(request: &Request<'_>, server: &McpServer, launched: Launched) -> Launched {
    let spec = speak_mcp_spec(request, server);
    Launched {
        connection: mcp::speak(launched.connection, spec),
        ..launched
    }
}

/// Who the MCP server of `request` is to the core.
fn speak_mcp_spec(request: &Request<'_>, server: &McpServer) -> McpSpec {
    let m = request.manifest;
    let call = m.limits.tool_timeout_ms.map(Duration::from_millis);
    McpSpec {
        name: m.name.clone(),
        version: m.version.clone(),
        prefix: server.prefix.clone(),
        // A message to the server may take what a tool call may.
        budget: Budget::for_frame(
            &HostFrame::ToolCall(Default::default()),
            request.context.timeouts,
            call,
        ),
        log: request.log.clone(),
    }
}
