//! What the embedder configures: [`HostConfig`] and the deadlines ([`Timeouts`]).

use crate::launcher::LaunchContext;
use crate::paths::ZotHome;
use std::path::PathBuf;
use zot_protocol::DEFAULT_MAX_FRAME;

/// Deadlines, all configurable; the defaults are PROTOCOL.md's (see [`crate::budget`]).
use crate::budget::Timeouts;

/// Everything the host needs to know to start extensions.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct HostConfig {
    pub home: ZotHome,
    /// The project directory (`hello_ack.cwd`, and where `.zot/extensions` is looked for).
    pub cwd: PathBuf,
    /// `--ext` paths, loaded before everything else.
    pub explicit: Vec<PathBuf>,
    /// Also load project-local and global installs (false: only `explicit`, `--only`).
    pub installed: bool,
    /// With `installed`: load the project's `.zot/extensions` (false: `--no-project`).
    pub project: bool,
    /// With `installed`: load `$ZOT_HOME/extensions` (false: `--no-global`).
    pub global: bool,
    /// What the user granted for this run only (`--allow-env`, …): never stored, and
    /// applied only to the components named on the command line
    /// ([`RunGrant::applies_to`](crate::sandbox::RunGrant::applies_to)).
    pub run_grant: crate::sandbox::RunGrant,
    /// Start project-local extensions without the user's trust (`zot ext trust`): for an
    /// agent that asks for consent itself. The published host's behaviour; off by
    /// default.
    pub trust_project: bool,
    pub provider: String,
    pub model: String,
    /// Tool names the embedding agent owns.
    pub builtin_tools: Vec<String>,
    /// Command names the embedding agent owns.
    pub builtin_commands: Vec<String>,
    /// The longest line accepted from an extension.
    pub max_frame: usize,
    pub timeouts: Timeouts,
    /// How components are compiled (default: in a child of this program under limits,
    /// which needs [`child_if_asked`](crate::component::compile::child_if_asked) called
    /// first thing in `main`; see [`Compiler`](crate::component::compile::Compiler)).
    pub compiler: crate::component::compile::Compiler,
    /// Check a tool call's arguments against the tool's schema before sending them
    /// ([`crate::schema`]): arguments that do not fit fail with
    /// [`CallError::Arguments`](crate::CallError::Arguments). On by default; off for an
    /// agent that checks them itself (`zot host --no-validate`, `zot mcp --no-validate`).
    pub validate_arguments: bool,
    /// When an extension that exited by itself is started again (on by default; each
    /// extension's choice in `settings.json`, `restart`, overrides `enabled`).
    pub restart: super::RestartPolicy,
}

impl HostConfig {
    /// Defaults for `home` and `cwd`: built-in tools `read write edit bash skill`, 64 MiB frames.
    pub fn new(home: ZotHome, cwd: PathBuf) -> Self {
        HostConfig {
            home,
            cwd,
            explicit: Vec::new(),
            installed: true,
            project: true,
            global: true,
            run_grant: crate::sandbox::RunGrant::default(),
            trust_project: false,
            provider: String::new(),
            model: String::new(),
            builtin_tools: ["read", "write", "edit", "bash", "skill"]
                .map(String::from)
                .to_vec(),
            builtin_commands: Vec::new(),
            max_frame: DEFAULT_MAX_FRAME,
            timeouts: Timeouts::default(),
            compiler: crate::component::compile::Compiler::default(),
            validate_arguments: true,
            restart: super::RestartPolicy::default(),
        }
    }

    /// What starting an extension needs of this configuration.
    pub fn launch_context(&self) -> LaunchContext<'_> {
        LaunchContext {
            home: &self.home,
            cwd: &self.cwd,
            max_frame: self.max_frame,
            timeouts: &self.timeouts,
            compiler: &self.compiler,
        }
    }
}
