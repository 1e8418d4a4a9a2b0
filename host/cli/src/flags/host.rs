//! The host's own flags, for every command that runs a whole host: `zot host`, `zot mcp`,
//! `zot ext shell` and `zot ext dev`.

use std::path::PathBuf;
use std::time::Duration;
use zot_host::HostConfig;
use zot_protocol::DEFAULT_MAX_FRAME;

#[derive(clap::Args)]
pub(crate) struct HostArgs {
    /// The project directory: its .zot/extensions is searched, and extensions are told it.
    #[arg(long, value_hint = clap::ValueHint::DirPath)]
    cwd: Option<PathBuf>,
    /// The state root (extensions, logs, data). Default: $ZOT_HOME or the platform default.
    #[arg(long, value_hint = clap::ValueHint::DirPath)]
    zot_home: Option<PathBuf>,
    /// An extension directory (or its extension.json, or a component file) to load
    /// before all others; naming it trusts it.
    #[arg(long = "ext", value_name = "PATH")]
    #[arg(add = clap_complete::ArgValueCompleter::new(crate::complete::extension_paths()))]
    ext: Vec<PathBuf>,
    /// Start the project's own extensions (./.zot/extensions) without `zot ext trust`:
    /// for an agent that asks the user itself. What the published host does.
    #[arg(long)]
    trust_project: bool,
    #[command(flatten)]
    load: crate::flags::load::LoadArgs,
    /// The provider extensions are told in hello_ack.
    #[arg(long, default_value = "")]
    provider: String,
    /// The model extensions are told in hello_ack.
    #[arg(long, default_value = "")]
    model: String,
    /// Tool names the agent owns (comma-separated); extensions cannot take them.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "read,write,edit,bash,skill"
    )]
    builtin_tools: Vec<String>,
    /// Command names the agent owns (comma-separated).
    #[arg(long, value_delimiter = ',')]
    builtin_commands: Vec<String>,
    /// The longest line accepted from an extension, or as a request, in bytes.
    #[arg(long, default_value_t = DEFAULT_MAX_FRAME)]
    max_frame_bytes: usize,
    /// How long a tool call may take (a request's timeout_ms overrides it).
    #[arg(long, value_name = "MS", default_value_t = 60_000)]
    tool_timeout_ms: u64,
    /// How long a command may take.
    #[arg(long, value_name = "MS", default_value_t = 30_000)]
    command_timeout_ms: u64,
    /// How long each interceptor may take; no answer in time means allow.
    #[arg(long, value_name = "MS", default_value_t = 5_000)]
    intercept_timeout_ms: u64,
    /// How long to wait, in total, for the extensions to be ready at start and reload.
    #[arg(long, value_name = "MS", default_value_t = 3_000)]
    ready_timeout_ms: u64,
    /// Send tool arguments as they are: by default a call whose arguments do not fit
    /// the tool's schema is refused, each problem naming its field. For an agent that
    /// checks them itself.
    #[arg(long)]
    no_validate: bool,
    /// Leave an extension that exits by itself stopped: by default it is started again
    /// (after 1 s, doubling to 30 s; given up after 5 restarts in 5 minutes).
    #[arg(long)]
    no_restart: bool,
}

impl HostArgs {
    /// Loads `path` before the other `--ext` extensions.
    pub(crate) fn ext_first(&mut self, path: PathBuf) {
        self.ext.insert(0, path);
    }

    pub(crate) fn config(self) -> Result<HostConfig, String> {
        let home = crate::flags::zot_home(self.zot_home)?;
        let cwd = crate::output::terminal::cwd_or(self.cwd)?;
        let names = |v: Vec<String>| v.into_iter().filter(|s| !s.is_empty()).collect();
        let mut config = HostConfig::new(home, cwd);
        config.explicit = self.ext;
        config.trust_project = self.trust_project;
        self.load.apply(&mut config);
        config.compiler = zot_host::compile::Compiler::this_program()?;
        config.provider = self.provider;
        config.model = self.model;
        config.builtin_tools = names(self.builtin_tools);
        config.builtin_commands = names(self.builtin_commands);
        config.max_frame = self.max_frame_bytes;
        let ms = Duration::from_millis;
        config.timeouts.tool = ms(self.tool_timeout_ms);
        config.timeouts.command = ms(self.command_timeout_ms);
        config.timeouts.intercept = ms(self.intercept_timeout_ms);
        config.timeouts.ready = ms(self.ready_timeout_ms);
        config.validate_arguments = !self.no_validate;
        if self.no_restart {
            config.restart = zot_host::RestartPolicy::off();
        }
        Ok(config)
    }
}
