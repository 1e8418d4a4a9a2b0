//! Starting an extension on its transport: the only code that names both the stdio and
//! the wasm transport. The core (`crate::host`) asks a [`Launcher`] for a
//! [`Connection`] and never learns more about how frames travel.

use crate::budget::Budget;
use crate::budget::Timeouts;
use crate::component::compile::Compiler;
use crate::component::Kind;
use crate::confine_decision::Confinement;
use crate::identity::Identity;
use crate::log::ExtLog;
use crate::manifest::{Launch, Manifest, McpServer, TransportKind};
use crate::paths::ZotHome;
use crate::sandbox;
use crate::sandbox::view::{Granted, Running, SandboxView};
use crate::transport::mcp::{self, McpSpec};
use crate::transport::stdio::{self, StdioSpec};
use crate::transport::wasm::{self, WasmSpec};
use crate::transport::Connection;
use crate::trust::Fingerprint;
use std::fmt;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::time::Duration;
use zot_protocol::HostFrame;

#[cfg(any(test, feature = "test-support"))]
mod scripted;
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
                Launch::Exec(program) => start_stdio(&request, program),
                Launch::Wasm(component) => start_wasm(&request, component).await,
            }?;
            Ok(match &request.manifest.mcp {
                Some(server) => speak_mcp(&request, server, launched),
                None => launched,
            })
        })
    }
}

/// The next step when the program of `m` (in `dir`, resolved to `program`) could not be
/// spawned with `cause`, if there is an obvious one.
fn spawn_hint(m: &Manifest, dir: &Path, program: &Path, cause: &std::io::Error) -> Option<String> {
    use std::io::ErrorKind;
    let exec = m.command().unwrap_or_default();
    let (field, args) = match m.mcp {
        Some(_) => ("mcp.command", "mcp.args"),
        None => ("exec", "args"),
    };
    let file = if program.is_absolute() || program.components().count() > 1 {
        program.to_path_buf()
    } else {
        dir.join(program)
    };
    let bare = program.components().count() == 1 && !program.is_absolute();
    match cause.kind() {
        ErrorKind::NotFound if bare && file.is_file() => Some(format!(
            "a bare `{field}` is looked up on PATH, not in the extension's folder: write \"./{exec}\" to run the file there"
        )),
        ErrorKind::NotFound if file.is_file() => Some(match first_line(&file) {
            Some(line) if line.starts_with("#!") => format!(
                "its first line, `{line}`, names an interpreter that is not installed"
            ),
            Some(_) | None => format!("{} cannot be run as it is", file.display()),
        }),
        ErrorKind::NotFound if dir.join("Cargo.toml").is_file() => Some(format!(
            "no {} yet: build it first (`cargo build --release` in {})",
            file.display(),
            dir.display()
        )),
        ErrorKind::NotFound if bare => Some(format!(
            "no program named {exec:?} on PATH: install it, or name it by its path in `{field}`"
        )),
        ErrorKind::NotFound => Some(format!(
            "no file {}: check `{field}` in {}",
            file.display(),
            dir.join(crate::manifest::MANIFEST_FILE).display()
        )),
        ErrorKind::PermissionDenied if file.is_file() => Some(format!(
            "it is not executable: `chmod +x {}`, or set `{field}` to its interpreter and put the script in `{args}`",
            file.display()
        )),
        _ if cause.raw_os_error() == Some(libc::ENOEXEC) => Some(format!(
            "it is neither a program nor a script with a `#!` line: add one (e.g. \
             `#!/usr/bin/env python3`), or set `{field}` to its interpreter and put the script \
             in `{args}`"
        )),
        _ => None,
    }
}

/// The first line of the regular file at `path` (of at most 1 MiB), if it can be read.
fn first_line(path: &Path) -> Option<String> {
    let bytes = crate::tree::read_regular(path, 1 << 20).ok()?;
    let text = String::from_utf8_lossy(&bytes[..bytes.len().min(256)]).into_owned();
    Some(
        text.lines()
            .next()
            .unwrap_or_default()
            .trim_end()
            .to_string(),
    )
}

/// An MCP server on the transport it was started on: what the core gets is the
/// adapter's connection (`transport::mcp`).
fn speak_mcp(request: &Request<'_>, server: &McpServer, launched: Launched) -> Launched {
    let m = request.manifest;
    let call = m.limits.tool_timeout_ms.map(Duration::from_millis);
    let spec = McpSpec {
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
    };
    Launched {
        connection: mcp::speak(launched.connection, spec),
        ..launched
    }
}

/// A subprocess; its data dir is its identity's (`$ZOT_HOME/data/<name>` for a global
/// install).
fn start_stdio(request: &Request<'_>, program: PathBuf) -> Result<Launched, StartError> {
    let Request {
        manifest: m,
        dir,
        identity,
        context,
        log,
        run_grant: _,
        admitted: _,
    } = request;
    let data_dir = context.home.data_dir(identity);
    if let Err(e) = std::fs::create_dir_all(&data_dir) {
        log.warn(&format!(
            "cannot create data dir {}: {e}",
            data_dir.display()
        ));
    }
    #[cfg(target_os = "linux")]
    let decided = crate::confine_decision::decide(context.home, identity, m, dir);
    #[cfg(target_os = "linux")]
    let sealed = sealed_copy(request, &program, &decided)?;
    #[cfg(target_os = "linux")]
    let confine = confinement(request, decided, &program, &data_dir)?;
    #[cfg(not(target_os = "linux"))]
    match crate::confine_decision::decide(context.home, identity, m, dir) {
        Confinement::Unconfined { .. } => {}
        Confinement::Refused(why) => return Err(StartError::Confine(why)),
        Confinement::Confined { .. } => {
            return Err(StartError::Confine(
                "it is confined, and confinement needs Linux".into(),
            ))
        }
    }
    // A confined extension is told the project dir only where it may read it.
    #[cfg(target_os = "linux")]
    let cwd = match &confine {
        Some(confined) => confined
            .project
            .as_ref()
            .map_or_else(|| UNSEEN.to_string(), |p| p.display().to_string()),
        None => context.cwd.display().to_string(),
    };
    #[cfg(not(target_os = "linux"))]
    let cwd = context.cwd.display().to_string();
    #[cfg(target_os = "linux")]
    let applied = confine
        .as_ref()
        .map(|c| (c.prepared.abi(), c.prepared.report().to_vec()));
    let spec = StdioSpec {
        program: program.clone(),
        args: m.program_args().to_vec(),
        env: m.mcp.iter().flat_map(|mcp| mcp.env.clone()).collect(),
        dir: dir.to_path_buf(),
        stderr: Some((*log).clone()),
        max_frame: context.max_frame,
        #[cfg(target_os = "linux")]
        confine,
        #[cfg(target_os = "linux")]
        sealed,
    };
    #[cfg(target_os = "linux")]
    let from = match spec.sealed {
        Some(_) => ", run from a sealed copy of the bytes checked",
        None => "",
    };
    #[cfg(not(target_os = "linux"))]
    let from = "";
    let connection = stdio::spawn(spec).map_err(|cause| StartError::Spawn {
        hint: spawn_hint(m, dir, &program, &cause),
        program: program.clone(),
        cause,
    })?;
    log.info(&format!("started {} (stdio{from})", program.display()));
    #[cfg(target_os = "linux")]
    if let Some((abi, rules)) = applied {
        if let Err(e) = crate::confine_view::record_applied(context.home, identity, abi, &rules) {
            log.warn(&format!("cannot record the rules it was started with: {e}"));
        }
    }
    Ok(Launched {
        connection,
        transport: TransportKind::Stdio,
        sandbox: None,
        paths: SeenPaths {
            extension_dir: dir.display().to_string(),
            cwd,
            data_dir: data_dir.display().to_string(),
        },
    })
}

/// The sealed copy a native program whose start is bound to its files' hashes (its
/// project trust, its confinement: `decided`) runs from, checked against each
/// (`crate::sealed_program`); `None` when bound to none, run by `PATH`, or not native (a
/// script's interpreter opens it by path: docs/security.md). Changed since a check, it
/// does not start.
#[cfg(target_os = "linux")]
fn sealed_copy(
    request: &Request<'_>,
    program: &Path,
    decided: &Confinement,
) -> Result<Option<crate::sealed_program::Sealed>, StartError> {
    use crate::sealed_program::{seal, Sealing};
    let confined = match decided {
        Confinement::Confined { files, .. } => Some(files),
        Confinement::Unconfined { .. } | Confinement::Refused(_) => None,
    };
    let bound: Vec<&Fingerprint> = request.admitted.into_iter().chain(confined).collect();
    let on_path = !program.is_absolute() && program.components().count() == 1;
    if bound.is_empty() || on_path {
        return Ok(None);
    }
    match seal(program) {
        Ok(Sealing::Sealed(copy)) => {
            for files in bound {
                copy.check(files, request.dir)
                    .map_err(StartError::Changed)?;
            }
            Ok(Some(copy))
        }
        Ok(Sealing::NotNative) => Ok(None),
        Ok(Sealing::Unavailable(why)) => {
            request.log.warn(&format!(
                "run by its path, not from a copy of the bytes checked: {why}"
            ));
            Ok(None)
        }
        Err(cause) => Err(StartError::Spawn {
            hint: spawn_hint(request.manifest, request.dir, program, &cause),
            program: program.to_path_buf(),
            cause,
        }),
    }
}

/// The confinement of a classic extension that runs confined (`decided`, by
/// [`crate::confine_decision::decide`]): `None` when it is not; an error — it does not start — when it cannot be
/// decided, was confined for other files, its data dir is a link, or a rule this kernel
/// cannot enforce is required.
#[cfg(target_os = "linux")]
fn confinement(
    request: &Request<'_>,
    decided: Confinement,
    program: &Path,
    data_dir: &Path,
) -> Result<Option<crate::confine::Confined>, StartError> {
    let (m, dir, identity, context, log) = (
        request.manifest,
        request.dir,
        request.identity,
        request.context,
        request.log,
    );
    let home = context.home;
    let (granted, require, digest) = match decided {
        Confinement::Unconfined { .. } => return Ok(None),
        Confinement::Refused(why) => return Err(StartError::Confine(why)),
        Confinement::Confined {
            grant,
            require,
            digest,
            by_default,
            files: _,
        } => {
            log.info(match by_default {
                true => "confined by default (settings.json)",
                false => "confined (its grant)",
            });
            (grant.map(|g| g.caps).unwrap_or_default(), require, digest)
        }
    };
    // What it may reach: what its manifest asks and the grant for these files gives (a
    // grant for other files is not applied).
    let (decision, _) = sandbox::policy::for_manifest(
        home,
        identity,
        m,
        context.cwd,
        &digest,
        request.run_grant,
        log,
    );
    let data = open_data_dir(home, identity, data_dir)?;
    let tmp = data_dir.join(TMP);
    let data_handle = data
        .dir()
        .try_clone()
        .map(|dir| std::sync::Arc::new(std::os::fd::OwnedFd::from(dir.into_std_file())))
        .map_err(|e| StartError::Confine(format!("cannot open its data dir: {e}")))?;
    let place = crate::confine::Place {
        ext_dir: dir,
        program,
        data_dir,
        data_handle,
        tmp_dir: &tmp,
    };
    let in_force = |limit: sandbox::Limit| limit.in_force_confined(&m.limits.caps, &granted);
    let disk_mb = in_force(sandbox::Limit::Disk);
    let (policy, env) = crate::confine::policy_for(
        &decision.policy,
        &place,
        (in_force(sandbox::Limit::Memory), disk_mb),
        require,
        |name| std::env::var(name).ok(),
    );
    let prepared =
        crate::confine::Prepared::build(&policy).map_err(|e| StartError::Confine(e.to_string()))?;
    for rule in prepared.report() {
        match &rule.not_enforced {
            None => log.info(&format!("confined: {}", rule.what)),
            Some(why) => log.warn(&format!("not enforced: {} ({why})", rule.what)),
        }
    }
    let disk = crate::confine::DiskQuota {
        dir: data.into_dir(),
        path: data_dir.to_path_buf(),
        mb: disk_mb,
    };
    stdio::check_disk_at_start(&disk).map_err(StartError::Confine)?;
    Ok(Some(crate::confine::Confined {
        env,
        prepared,
        disk: Some(disk),
        project: decision.policy.cwd.clone(),
    }))
}

/// A confined extension's private temp dir, inside its data dir (`TMPDIR`).
#[cfg(target_os = "linux")]
const TMP: &str = ".tmp";

/// The data dir of a confined extension, opened below `$ZOT_HOME/data` without following
/// a link (one an earlier, unconfined run planted is refused: a rule on it would be a rule
/// on where it leads), with an empty temp dir made inside it the same way. What the
/// extension may swap at these paths while it runs — a second start of it, say — changes
/// nothing: the rule is on the handle, and the temp dir needs none of its own.
#[cfg(target_os = "linux")]
fn open_data_dir(
    home: &ZotHome,
    identity: &Identity,
    data_dir: &Path,
) -> Result<crate::safe_write::SafeDir, StartError> {
    let data_root = home.root().join("data");
    let data =
        crate::safe_write::SafeDir::beneath(&data_root, &identity.key(), true).map_err(|e| {
            StartError::Confine(format!(
                "its data dir {} is not a folder of {} (a link?): remove it, or the \
                 extension with its data (`zot ext remove --purge`) ({e})",
                data_dir.display(),
                data_root.display()
            ))
        })?;
    let fresh = |e: std::io::Error| StartError::Confine(format!("cannot make its temp dir: {e}"));
    // Gone meanwhile (a second start of it emptied it first) is as good as removed.
    let removed = |done: std::io::Result<()>| match done {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(fresh(e)),
        Ok(()) | Err(_) => Ok(()),
    };
    match data.dir().symlink_metadata(TMP) {
        Ok(meta) if meta.is_dir() => removed(data.dir().remove_dir_all(TMP))?,
        Ok(_) => removed(data.dir().remove_file(TMP))?,
        Err(e) => removed(Err(e))?,
    }
    data.create_sub(TMP).map_err(fresh)?;
    Ok(data)
}

/// A component in the sandbox, with what the manifest asks and the user granted for
/// this very component (a grant given to another build of it is not applied).
async fn start_wasm(request: &Request<'_>, component: PathBuf) -> Result<Launched, StartError> {
    let Request {
        manifest: m,
        identity,
        context,
        log,
        run_grant,
        ..
    } = request;
    let home = context.home;
    let failed = |error| StartError::Component {
        wasm: component.clone(),
        error,
    };
    let loaded = wasm::prepare(&component, &home.cache_dir(), context.compiler, log)
        .await
        .map_err(failed)?;
    if m.mcp.is_some() && loaded.kind() == Kind::Reactor {
        return Err(StartError::NotMcp { wasm: component });
    }
    if loaded.kind() == Kind::Preview1 && !m.permissions.http.is_empty() {
        let why = "it asks for HTTP (`permissions.http`), and WASI preview 1 has no network: \
                   build it as a component (wasm32-wasip2) to reach the network";
        return Err(failed(crate::component::ComponentError::CoreModule(
            why.into(),
        )));
    }
    let (decision, grant) = sandbox::for_manifest(
        home,
        identity,
        m,
        context.cwd,
        &loaded.sha256,
        *run_grant,
        log,
    );
    let paths = SeenPaths {
        extension_dir: UNSEEN.into(),
        cwd: match &decision.policy.cwd {
            Some(granted) => granted.display().to_string(),
            None => UNSEEN.into(),
        },
        data_dir: decision.policy.data_mount().to_string(),
    };
    let sandbox = SandboxView {
        component: Some(loaded.kind()),
        sha256: Some(loaded.sha256.clone()),
        asked: m.permissions.clone(),
        limits: None,
        granted: grant
            .applied()
            .map(|g| Granted::Applied(g.permissions.clone())),
        grant_stale: matches!(grant, sandbox::GrantState::Stale(_)),
        running: Some(Running {
            withheld: decision.withheld,
            run_grant: run_grant
                .map(|r| r.permissions().iter().map(ToString::to_string).collect())
                .unwrap_or_default(),
            memory_mb: (decision.policy.memory_bytes >> 20) as u64,
            caps: decision.policy.limits,
        }),
    };
    let connection = wasm::start(
        loaded,
        WasmSpec {
            policy: decision.policy,
            log: (*log).clone(),
            guest_output: true,
            max_frame: context.max_frame,
        },
    )
    .map_err(failed)?;
    Ok(Launched {
        connection,
        transport: TransportKind::Wasm,
        sandbox: Some(sandbox),
        paths,
    })
}
