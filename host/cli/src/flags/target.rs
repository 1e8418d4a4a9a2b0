//! What `zot ext check`, `call` and `invoke` load: one extension named by its directory,
//! its `extension.json`, a bare component (`.wasm`) or the name of an installed
//! extension; made ready to load (a bare component staged as a `.wasm` install would be),
//! and the host configuration that loads it alone.

use crate::flags::scope::{copy_at, resolve, Scope, ScopeArgs};
use crate::output::error::{CliError, Context as _};
use crate::output::terminal::cwd;
use std::path::{Path, PathBuf};
use std::time::Duration;
use zot_host::compile::Compiler;
use zot_host::manage::identity::{folder_key, Identity};
use zot_host::manage::install::{self, InstallSource, Progress, Request, Staged};
use zot_host::manage::manifest::{validate_name, Launch, Manifest, MANIFEST_FILE};
use zot_host::manage::paths::project_root;
use zot_host::manage::records::trust::{self, ProjectExtension, Untrusted};
use zot_host::ZotHome;
use zot_host::{ExtState, ExtensionInfo, Host, HostConfig, HostEvent};

/// What is loaded.
pub(crate) enum Target {
    /// An extension directory.
    Dir(PathBuf),
    /// A bare component, run with nothing granted.
    Wasm(PathBuf),
}

/// What the argument names: something to load, or an installed project extension the
/// user has not trusted (not run).
pub(crate) enum Parsed {
    Run(Target),
    Untrusted(Untrusted),
}

impl Target {
    /// Classifies the argument as install does: an existing directory, its manifest or a
    /// `.wasm` file; else the name of an installed extension, resolved as every command
    /// resolves one (said on stderr: `<verb> the project copy at <dir>`).
    pub(crate) fn parse(
        arg: &str,
        home: &ZotHome,
        scope: ScopeArgs,
        verb: &str,
    ) -> Result<Parsed, String> {
        match InstallSource::parse(arg) {
            InstallSource::Wasm(file) if file.is_file() => Ok(Parsed::Run(Target::Wasm(file))),
            InstallSource::Dir(dir) if dir.is_dir() => Ok(Parsed::Run(Target::Dir(dir))),
            InstallSource::Dir(file) if file.file_name().is_some_and(|n| n == MANIFEST_FILE) => {
                let dir = file.parent().filter(|d| !d.as_os_str().is_empty());
                let dir = dir.unwrap_or(Path::new(".")).to_path_buf();
                Ok(Parsed::Run(Target::Dir(dir)))
            }
            _ if validate_name(arg).is_ok() => {
                let cwd = cwd()?;
                let (dir, scope) = resolve(home, &cwd, arg, scope.scope()).map_err(|e| {
                    format!(
                        "{e} (and it is not an extension directory, an {MANIFEST_FILE} \
                             or a .wasm file)"
                    )
                })?;
                esay!("{verb} the {}", copy_at(&dir, scope));
                // Named by a path it would be trusted by naming; by its name, it is what
                // loads here, so it runs only if it would run here.
                match scope {
                    Scope::Global => {}
                    Scope::Project => {
                        let project = project_root(&cwd);
                        let manifest = Manifest::read(&dir).ok();
                        let ext = ProjectExtension {
                            dir_name: &folder_key(dir.file_name().unwrap_or_default()),
                            dir: &dir,
                            manifest: manifest.as_ref(),
                        };
                        if let Err(u) = trust::check(home, &project, &ext) {
                            return Ok(Parsed::Untrusted(u));
                        }
                    }
                }
                Ok(Parsed::Run(Target::Dir(dir)))
            }
            _ => Err(format!(
                "not an extension directory, an {MANIFEST_FILE}, a .wasm file or the name \
                 of an installed extension"
            )),
        }
    }

    /// The component it runs, if it is one (whose manifest can be read).
    pub(crate) fn component(&self) -> Option<PathBuf> {
        match self {
            Target::Wasm(file) => Some(file.clone()),
            Target::Dir(dir) => Manifest::read(dir).ok().and_then(|m| match m.launch(dir) {
                Launch::Wasm(file) => Some(file),
                Launch::Exec(_) | Launch::Remote(_) => None,
            }),
        }
    }

    /// Makes it loadable: a directory as it is; a bare component staged as a `.wasm`
    /// install would be (started once to read its hello), with nothing granted but its
    /// data dir, which is deleted when the result is dropped.
    pub(crate) fn prepare(
        &self,
        runtime: &tokio::runtime::Runtime,
        home: &ZotHome,
        compiler: &Compiler,
        progress: &dyn Progress,
    ) -> Result<Prepared, String> {
        match self {
            Target::Dir(dir) => Ok(Prepared {
                dir: dir.clone(),
                throwaway: None,
                _staged: None,
            }),
            Target::Wasm(file) => {
                let req = Request {
                    source: InstallSource::Wasm(file.clone()),
                    git_ref: None,
                    path: None,
                    name: None,
                    wasm: false,
                    root: home.extensions_dir(),
                    home: home.clone(),
                    compiler: compiler.clone(),
                    signers: Vec::new(),
                };
                let staged = runtime
                    .block_on(install::stage(&req, progress))
                    .map_err(|e| e.to_string())?;
                let dir = staged.tree().to_path_buf();
                // Its data dir belongs to a folder that is gone once it is dropped.
                let throwaway = Some(home.data_dir(&Identity::of(&dir, home)));
                Ok(Prepared {
                    dir,
                    throwaway,
                    _staged: Some(staged),
                })
            }
        }
    }
}

/// A target ready to load. Dropping it removes a staged component and its data dir.
pub(crate) struct Prepared {
    dir: PathBuf,
    throwaway: Option<PathBuf>,
    /// Lives as long as this: dropping it removes the staged component.
    _staged: Option<Staged>,
}

impl Prepared {
    /// The extension's directory (for a bare component, its staging folder).
    pub(crate) fn dir(&self) -> &Path {
        &self.dir
    }

    /// A host that loads this extension alone (nothing installed), with the current
    /// `$ZOT_HOME` for logs, data and grants, waiting up to `wait` for it to be ready,
    /// in the current directory.
    pub(crate) fn config(
        &self,
        home: ZotHome,
        compiler: Compiler,
        wait: Duration,
    ) -> Result<HostConfig, String> {
        let mut config = HostConfig::new(home, cwd()?);
        config.explicit = vec![self.dir.clone()];
        config.installed = false;
        config.timeouts.ready = wait;
        config.compiler = compiler;
        // One run looked at: an exit is what it found, never hidden by a restart.
        config.restart = zot_host::RestartPolicy::off();
        Ok(config)
    }
}

impl Drop for Prepared {
    fn drop(&mut self) {
        if let Some(data) = &self.throwaway {
            let _ = std::fs::remove_dir_all(data);
        }
    }
}

/// What every command that loads one extension needs first: `$ZOT_HOME`, what the
/// argument names, the compiler (this program, under limits) and a runtime. The error
/// is `<what> <arg>: <why>` (but for `$ZOT_HOME`'s).
pub(crate) fn setup(
    what: &str,
    arg: &str,
    scope: ScopeArgs,
    verb: &str,
) -> Result<(ZotHome, Parsed, Compiler, tokio::runtime::Runtime), CliError> {
    let home = crate::flags::zot_home(None)?;
    let what = format!("{what} {arg}");
    let parsed = Target::parse(arg, &home, scope, verb).context(&what)?;
    let compiler = Compiler::this_program().context(&what)?;
    let runtime = tokio::runtime::Runtime::new()
        .map_err(|e| format!("cannot start the async runtime: {e}"))
        .context(&what)?;
    Ok((home, parsed, compiler, runtime))
}

/// One extension loaded alone and ready, for a one-shot request.
pub(crate) struct Running {
    pub(crate) host: Host,
    pub(crate) info: ExtensionInfo,
    _notes: tokio::sync::mpsc::Receiver<HostEvent>,
}

/// Loads the one extension of `config` and waits (its ready timeout) for it to be
/// ready; if it is not, it is stopped and the reason returned (naming its log).
pub(crate) async fn start_one(config: HostConfig) -> Result<Running, String> {
    let wait = humantime::format_duration(config.timeouts.ready).to_string();
    let home = config.home.clone();
    let (host, notes) = Host::new(config);
    let report = host.load().await;
    let Some(info) = host.extensions().into_iter().next() else {
        host.shutdown().await;
        return Err("no extension found at that path (it needs an extension.json)".into());
    };
    let why = match info.state {
        ExtState::Ready => None,
        ExtState::Disabled => Some("it is disabled (\"enabled\": false)".to_string()),
        ExtState::Starting => Some(format!("not ready within --wait ({wait})")),
        ExtState::Exited => Some(format!(
            "it exited at start: {}",
            info.error.clone().unwrap_or_default()
        )),
        _ => Some(
            info.error
                .clone()
                .or_else(|| report.errors.first().map(|e| e.error.clone()))
                .unwrap_or_else(|| format!("it could not start ({:?})", info.state)),
        ),
    };
    match why {
        None => {
            let registered = crate::complete::Registered {
                tools: info.tools.clone(),
                commands: info.commands.clone(),
            };
            crate::complete::remember(&home, &info.dir, registered);
            Ok(Running {
                host,
                info,
                _notes: notes,
            })
        }
        Some(why) => {
            host.shutdown().await;
            Err(format!("{why} (its log: {})", info.log.display()))
        }
    }
}

impl Running {
    /// Stops the extension.
    pub(crate) async fn stop(self) {
        self.host.shutdown().await;
    }
}
