//! Command-line parsing; each subcommand lives in its own module.
//!
//! Whatever is printed for people goes through [`say!`] (stdout) or [`esay!`] (stderr),
//! which show the whole text with [`zot_host::terminal_text::multi_line`]: nothing from
//! outside (a manifest, a frame, a file name, an error quoting them) drives the terminal.
//! JSON output is printed as serde writes it, its data exact (`terminal::print_line`).
//! A command that fails returns an [`error::CliError`]; [`main`] prints it, the one
//! place that writes `zot: <what>: <why>`.

use crate::commands::{
    call, check, confine, doctor, ext, grant, guard, info, install, logs, man, mcp, new, run,
    shell, sidecar, sign, signer, trust, update, verify,
};
use crate::complete;
use crate::flags::{scope, zot_home};
use crate::output::error::{CliError, Context as _, Finish as _};
use crate::output::terminal;
use clap::{CommandFactory, FromArgMatches as _, Parser, Subcommand};
use std::process::ExitCode;
use tracing_subscriber::fmt::FormatFields as _;
use zot_host::ZotHome;

#[derive(Parser)]
#[command(name = "zot", version, about = "The zot extension host")]
pub(crate) struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Manage, check and run extensions.
    #[command(subcommand)]
    Ext(ExtCommand),
    /// Run the host as a JSON-lines sidecar on stdin/stdout (see docs/sidecar.md).
    #[command(after_help = examples::HOST)]
    Host(crate::flags::host::HostArgs),
    /// Serve every extension tool (and slash command, as a prompt) to MCP clients over
    /// stdin/stdout: a Model Context Protocol server (see docs/mcp.md).
    #[command(after_help = examples::MCP)]
    Mcp(mcp::McpArgs),
    /// Print a shell completion script for zot to stdout: commands, flags and paths;
    /// with --dynamic also installed extension names and tool names.
    #[command(after_help = examples::COMPLETIONS)]
    Completions {
        /// The shell to complete in.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
        /// Print a script that asks zot for the candidates at each TAB, so installed
        /// extension names and their tools complete too.
        #[arg(long)]
        dynamic: bool,
    },
    /// Print zot's man page (roff) to stdout, or a command's (`zot man ext install`);
    /// `--dir DIR` writes them all.
    #[command(after_help = examples::MAN)]
    Man(man::ManArgs),
    /// Say what this machine has of what zot and extensions use: its state folder, the
    /// SDKs, the toolchains and WebAssembly targets, confinement; what is missing and
    /// how to get it.
    #[command(after_help = examples::DOCTOR)]
    Doctor(doctor::DoctorArgs),
}

#[derive(Subcommand)]
pub(crate) enum ExtCommand {
    /// List installed extensions (project-local and global) and their state.
    #[command(after_help = examples::LIST)]
    List {
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
        /// Also show how each runs: its transport, its confinement (or sandbox) and
        /// whether it has a grant.
        #[arg(long, short = 'l', conflicts_with = "json")]
        long: bool,
    },
    /// Install an extension from a directory, a git URL or a .wasm component, after
    /// showing what it may do and asking for consent.
    #[command(after_help = examples::INSTALL)]
    Install(install::InstallArgs),
    /// Fetch installed extensions again from where they came from; asks again if they now
    /// ask for more.
    #[command(after_help = examples::UPDATE)]
    Update(update::UpdateArgs),
    /// Show an extension's manifest, where it was installed from, its hash and its grant.
    #[command(after_help = examples::INFO)]
    Info {
        #[arg(add = clap_complete::ArgValueCompleter::new(complete::names))]
        name: String,
        /// Print JSON.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        scope: scope::ScopeArgs,
    },
    /// Sign an extension with minisign for `install --require-signature`: a .wasm as it
    /// is, a source tree (a folder, or a repository at a ref) through its statement.
    #[command(after_help = examples::SIGN)]
    Sign(sign::SignArgs),
    /// The keys that must sign what is installed from a source (or under a prefix of
    /// sources ending in `/`): list, add, remove.
    #[command(after_help = examples::SIGNER)]
    Signer(signer::SignerArgs),
    /// Report files of an install that changed since it was installed (exit 1 if any).
    #[command(after_help = examples::VERIFY)]
    Verify {
        #[arg(add = clap_complete::ArgValueCompleter::new(complete::names))]
        name: String,
        /// Print JSON.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        scope: scope::ScopeArgs,
    },
    /// Delete an installed extension, its install record and its grant; asks whether to
    /// delete its data too.
    #[command(visible_alias = "rm")]
    #[command(after_help = examples::REMOVE)]
    Remove {
        #[arg(add = clap_complete::ArgValueCompleter::new(complete::names))]
        name: String,
        /// Do not ask for confirmation (the data is kept unless --purge).
        #[arg(long, short)]
        yes: bool,
        /// Keep its data dir.
        #[arg(long, conflicts_with = "purge")]
        keep_data: bool,
        /// Delete its data dir too.
        #[arg(long)]
        purge: bool,
        #[command(flatten)]
        scope: scope::ScopeArgs,
    },
    /// Set `enabled: true` in an extension's manifest.
    #[command(after_help = examples::ENABLE)]
    Enable {
        #[arg(add = clap_complete::ArgValueCompleter::new(complete::names))]
        name: String,
        #[command(flatten)]
        scope: scope::ScopeArgs,
    },
    /// Set `enabled: false` in an extension's manifest.
    #[command(after_help = examples::DISABLE)]
    Disable {
        #[arg(add = clap_complete::ArgValueCompleter::new(complete::names))]
        name: String,
        #[command(flatten)]
        scope: scope::ScopeArgs,
    },
    /// Print an extension's log.
    #[command(after_help = examples::LOGS)]
    Logs(logs::LogsArgs),
    /// Write a new extension to start from: a slash command, a tool with a schema and an
    /// interceptor, its manifest and a README, in Rust, Python, Node, TypeScript or Go.
    #[command(after_help = examples::NEW)]
    New(new::NewArgs),
    /// Load one extension, print its hello, registrations and timings; non-zero exit on a
    /// protocol violation.
    #[command(after_help = examples::CHECK)]
    Check(check::CheckArgs),
    /// Load one extension, call one of its tools, print the result and stop it (exit 1 if
    /// the tool answered with an error, 2 if it could not be called).
    #[command(after_help = examples::CALL)]
    Call(call::CallArgs),
    /// Load one extension, run one of its slash commands, print the response and stop it
    /// (exit 1 if the response carries an error, 2 if it could not be invoked).
    #[command(after_help = examples::INVOKE)]
    Invoke(call::InvokeArgs),
    /// Run one WebAssembly component as a stdio extension (frames on stdin/stdout), in
    /// the sandbox with its grants.
    #[command(after_help = examples::RUN)]
    Run(run::RunArgs),
    /// Show or grant the permissions a component's manifest asks for (or a classic
    /// extension's, in force while it runs confined).
    #[command(after_help = examples::GRANT)]
    Grant(crate::records::grant::GrantArgs),
    /// Forget every permission granted to an extension.
    #[command(after_help = examples::REVOKE)]
    Revoke(crate::records::grant::RevokeArgs),
    /// Show or choose whether a tool_call guard that cannot answer (no answer in time, an
    /// exit, not running) blocks the call (--fail-closed) or allows it (--fail-open, the
    /// protocol's default).
    #[command(after_help = examples::GUARD)]
    Guard(guard::GuardArgs),
    /// Run a classic extension confined (Linux: Landlock, seccomp, limits), as it is now,
    /// or every one by default: only the system, its folder and its data dir, no network;
    /// what `grant` adds.
    #[cfg(target_os = "linux")]
    #[command(after_help = examples::CONFINE)]
    Confine(confine::ConfineArgs),
    /// Run a confined classic extension with your full user permissions again.
    #[cfg(target_os = "linux")]
    #[command(after_help = examples::UNCONFINE)]
    Unconfine(confine::UnconfineArgs),
    /// Show a project's own extensions (./.zot/extensions) and trust them to run there,
    /// as they are now; any change to their files needs trust again.
    #[command(after_help = examples::TRUST)]
    Trust(crate::records::trust::TrustArgs),
    /// Stop trusting a project's extensions: zot no longer starts them there.
    #[command(after_help = examples::UNTRUST)]
    Untrust(trust::UntrustArgs),
    /// An interactive session over the host: call tools, invoke commands, run the
    /// interception chain, emit events, watch notifications; `--script` for a transcript.
    Shell(shell::ShellArgs),
    /// Develop an extension: a shell with it loaded that watches its folder, rebuilds a
    /// Rust crate, reloads it on every change and shows its stderr inline.
    Dev(shell::DevArgs),
}

/// `zot --version`: the version, the commit it was built from, and where `zot ext new`
/// finds the SDKs (or why it does not). Made once per process.
fn long_version() -> &'static str {
    use crate::flags::sdk::{sdk_dir, Sdk};
    let sdk = match sdk_dir(None, Sdk::Rust) {
        Ok(dir) => dir.display().to_string(),
        Err(why) => format!("not found: {why}"),
    };
    let text = format!(
        "{} (commit {})\nSDK: {sdk}",
        env!("CARGO_PKG_VERSION"),
        env!("ZOT_COMMIT")
    );
    Box::leak(text.into_boxed_str())
}

/// Parses the command line and runs it.
pub fn main() -> ExitCode {
    // `ZOT_COMPLETE=bash zot -- zot ext info g`: the candidates for a shell's TAB.
    complete::answer_if_asked();
    let command = Cli::command().long_version(long_version());
    let cli = Cli::from_arg_matches(&command.get_matches()).unwrap_or_else(|e| e.exit());
    use tracing_subscriber::layer::SubscriberExt as _;
    let stderr = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(colour())
        .with_max_level(tracing::Level::WARN)
        .event_format(ZotForm)
        .finish()
        // The MCP SDK logs every error response it sends (an unknown tool, a cancelled
        // call) as a warning: answers to the client, not news for the user. Its
        // errors still show.
        .with(tracing_subscriber::filter::filter_fn(|m| {
            !m.target().starts_with("rmcp") || *m.level() <= tracing::Level::ERROR
        }));
    let _ = tracing::subscriber::set_global_default(stderr);
    match cli.command {
        Command::Ext(cmd) => ext(cmd),
        Command::Host(args) => sidecar::run(args).finish(),
        Command::Mcp(args) => mcp::run(args).finish(),
        Command::Completions { shell, dynamic } => complete::script(shell, dynamic)
            .context("completions")
            .map(|script| terminal::print_bytes(&script))
            .finish(),
        Command::Man(args) => man::run(args, Cli::command()).finish(),
        Command::Doctor(args) => doctor::run(args).finish(),
    }
}

/// Runs a `zot ext` subcommand.
fn ext(cmd: ExtCommand) -> ExitCode {
    match cmd {
        ExtCommand::List { json, long } => with_home(|home| ext::list(home, json, long)),
        ExtCommand::Install(args) => with_home(|home| install::install(home, args)),
        ExtCommand::Update(args) => with_home(|home| update::update(home, args)),
        ExtCommand::Info { name, json, scope } => {
            with_home(|home| info::info(home, &name, json, scope.scope()))
        }
        ExtCommand::Sign(args) => sign::sign(args).finish(),
        ExtCommand::Signer(args) => with_home(|home| signer::run(home, args)),
        ExtCommand::Verify { name, json, scope } => {
            with_home(|home| verify::verify(home, &name, json, scope.scope()))
        }
        ExtCommand::Remove {
            name,
            yes,
            keep_data,
            purge,
            scope,
        } => {
            let data = match (keep_data, purge) {
                (true, _) => Some(false),
                (_, true) => Some(true),
                _ => None,
            };
            with_home(|home| ext::remove(home, &name, yes, data, scope.scope()))
        }
        ExtCommand::Trust(args) => with_home(|home| trust::trust(home, args)),
        ExtCommand::Untrust(args) => with_home(|home| trust::untrust(home, args)),
        ExtCommand::Enable { name, scope } => {
            with_home(|home| ext::set_enabled(home, &name, true, scope.scope()))
        }
        ExtCommand::Disable { name, scope } => {
            with_home(|home| ext::set_enabled(home, &name, false, scope.scope()))
        }
        ExtCommand::Logs(args) => with_home(|home| logs::run(home, args)),
        ExtCommand::Check(args) => check::run(args).finish(),
        ExtCommand::Call(args) => call::call(args).finish(),
        ExtCommand::Invoke(args) => call::invoke(args).finish(),
        ExtCommand::New(args) => new::run(args).finish(),
        ExtCommand::Run(args) => run::run(args).finish(),
        ExtCommand::Grant(args) => grant::grant(args).finish(),
        ExtCommand::Revoke(args) => grant::revoke(args).finish(),
        ExtCommand::Guard(args) => with_home(|home| guard::guard(home, args)),
        #[cfg(target_os = "linux")]
        ExtCommand::Confine(args) => confine::confine(args).finish(),
        #[cfg(target_os = "linux")]
        ExtCommand::Unconfine(args) => confine::unconfine(args).finish(),
        ExtCommand::Shell(args) => shell::run(args).finish(),
        ExtCommand::Dev(args) => shell::dev(args).finish(),
    }
}

/// Runs `f` with `$ZOT_HOME` (a failure is exit 1).
fn with_home(f: impl FnOnce(&ZotHome) -> Result<(), CliError>) -> ExitCode {
    zot_home(None)
        .map_err(CliError::from)
        .and_then(|home| f(&home))
        .finish()
}

/// What the library logs reaches the terminal in the CLI's own form, `zot: warning: …`
/// (made terminal-safe as [`esay!`] does), not tracing's ` WARN …`.
struct ZotForm;

impl<S, N> tracing_subscriber::fmt::FormatEvent<S, N> for ZotForm
where
    S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
    N: for<'a> tracing_subscriber::fmt::FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        ctx: &tracing_subscriber::fmt::FmtContext<'_, S, N>,
        mut writer: tracing_subscriber::fmt::format::Writer<'_>,
        event: &tracing::Event<'_>,
    ) -> std::fmt::Result {
        let level = match *event.metadata().level() {
            tracing::Level::ERROR => "error",
            tracing::Level::WARN => "warning",
            tracing::Level::INFO => "info",
            tracing::Level::DEBUG => "debug",
            tracing::Level::TRACE => "trace",
        };
        let mut text = String::new();
        ctx.format_fields(
            tracing_subscriber::fmt::format::Writer::new(&mut text),
            event,
        )?;
        let text = zot_host::terminal_text::one_line(&text);
        writeln!(writer, "zot: {level}: {text}")
    }
}

/// Whether stderr gets ANSI colour: only on a terminal, and never with `NO_COLOR` set.
fn colour() -> bool {
    use std::io::IsTerminal;
    std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

/// The examples `--help` shows below each subcommand's options.
mod examples {
    pub(super) const HOST: &str = "\
Examples:
  zot host --ext ./my-ext
  zot host --ext ./my-ext --only
  printf '{\"id\":\"1\",\"type\":\"tools\"}\\n' | zot host
  zot host --cwd ~/src/app --trust-project --builtin-tools read,write,edit,bash";
    pub(super) const MCP: &str = "\
Examples:
  zot mcp
  zot mcp --ext ./my-ext --only
  zot mcp --cwd ~/src/app --trust-project --tool-timeout-ms 120000
  zot mcp --http 127.0.0.1:8765 --token-file ~/.config/zot/mcp-token
MCP client configuration (a command and its arguments):
  {\"mcpServers\": {\"zot\": {\"command\": \"zot\", \"args\": [\"mcp\"]}}}";
    pub(super) const COMPLETIONS: &str = "\
Examples:
  zot completions bash --dynamic > ~/.local/share/bash-completion/completions/zot
  zot completions fish --dynamic > ~/.config/fish/completions/zot.fish
  zot completions zsh --dynamic >> ~/.zshrc
  zot completions zsh > ~/.zfunc/_zot";
    pub(super) const MAN: &str = "\
Examples:
  zot man --dir ~/.local/share/man/man1
  zot man ext install | man -l -
  zot man > ~/.local/share/man/man1/zot.1";
    pub(super) const NEW: &str = "\
Examples:
  zot ext new notes --lang python
  zot ext new lint --lang rust --wasm --dir ~/src
  zot ext new greet --lang typescript
  zot ext new probe --lang go --wasm              a WASI preview-1 module, same source
  zot ext new greet --lang typescript --wasm      a component (QuickJS), same source
  zot ext new clock --lang node --wasm --engine starlingmonkey";
    pub(super) const LIST: &str = "\
Examples:
  zot ext list
  zot ext list --long                     transport, confinement and grant too
  zot ext list --json | jq -r '.[] | select(.state == \"error\") | .name'";
    pub(super) const INSTALL: &str = "\
Examples:
  zot ext install ./my-ext
  zot ext install https://github.com/me/zot-tools.git --ref v1 --path examples/guard
  zot ext install guard.wasm --project --yes
  zot ext install guard.wasm --require-signature ~/.minisign/acme.pub";
    pub(super) const UPDATE: &str = "\
Examples:
  zot ext update guard
  zot ext update guard --ref v2
  zot ext update --all --yes";
    pub(super) const INFO: &str = "\
Examples:
  zot ext info guard
  zot ext info guard --json --project";
    pub(super) const SIGN: &str = "\
Examples:
  zot ext sign guard.wasm -s ~/.minisign/minisign.key
  zot ext sign . --ref HEAD                      what is committed, into ./extension.minisig
  zot ext sign . --ref HEAD --statement > statement.json";
    pub(super) const SIGNER: &str = "\
Examples:
  zot ext signer add https://github.com/acme/ RWQf6LRCGA9i53mlYecO4IzT51TGPpvWucNSCh1CBM0QTaLn73Y7GFO3
  zot ext signer add ~/src/tools/guard ~/.minisign/acme.pub
  zot ext signer remove https://github.com/acme/
  zot ext signer list --json";
    pub(super) const VERIFY: &str = "\
Examples:
  zot ext verify guard
  zot ext verify guard --json --global";
    pub(super) const REMOVE: &str = "\
Examples:
  zot ext remove guard
  zot ext remove guard --yes --purge
  zot ext remove guard --project --keep-data";
    pub(super) const ENABLE: &str = "\
Examples:
  zot ext enable guard
  zot ext enable guard --project";
    pub(super) const DISABLE: &str = "\
Examples:
  zot ext disable guard
  zot ext disable guard --global";
    pub(super) const GUARD: &str = "\
Examples:
  zot ext guard safety
  zot ext guard safety --fail-closed
  zot ext guard ./my-guard --fail-open";
    pub(super) const DOCTOR: &str = "\
Examples:
  zot doctor
  zot doctor --json | jq -r '.[] | select(.ok | not) | .what'";
    pub(super) const LOGS: &str = "\
Examples:
  zot ext logs guard
  zot ext logs guard -n 50 -f
  zot ext logs guard --since 10m --json | jq -r 'select(.source == \"stderr\") | .message'";
    pub(super) const CHECK: &str = "\
Examples:
  zot ext check examples/hello-py
  zot ext check guard.wasm --json
  zot ext check guard --project --wait 2m";
    pub(super) const CALL: &str = "\
Examples:
  zot ext call ./weather forecast '{\"city\": \"Oslo\"}'
  zot ext call weather forecast '{\"city\": \"Oslo\"}' --json | jq -r '.content[0].text'
  zot ext call weather forecast --arg city=Oslo --arg days:=3
  zot ext call weather forecast - < args.json
  zot ext call shot.wasm screenshot --save /tmp/shots --timeout-ms 10000
  zot ext call weather.wasm forecast '{\"city\": \"Oslo\"}' --allow-http api.met.no --allow-env API_KEY";
    pub(super) const INVOKE: &str = "\
Examples:
  zot ext invoke ./notes /todo add buy milk
  zot ext invoke notes todo list --json
  zot ext invoke notes /todo -- --all";
    pub(super) const RUN: &str = "\
Examples:
  zot ext run guard.wasm
  zot ext run ./guard --cwd ~/src/app --tool-timeout-ms 10000";
    pub(super) const GRANT: &str = "\
Examples:
  zot ext grant weather
  zot ext grant weather --all
  zot ext grant weather -p env:API_KEY -p memory:128";
    pub(super) const REVOKE: &str = "\
Examples:
  zot ext revoke weather
  zot ext revoke ./weather";
    pub(super) const CONFINE: &str = "\
Examples:
  zot ext confine notes          confine the installed extension notes, as it is now
  zot ext confine ./my-ext       a folder (bound to its files: a change needs confine again)
  zot ext confine --default      every classic extension, except those you unconfine
  zot ext confine notes --require-confinement   not started where a rule is not enforced";
    pub(super) const UNCONFINE: &str = "\
Examples:
  zot ext unconfine notes        run the installed extension notes unconfined again
  zot ext unconfine ./my-ext     a folder
  zot ext unconfine --default    confine only those you confine";
    pub(super) const TRUST: &str = "\
Examples:
  zot ext trust
  zot ext trust ~/src/app --yes";
    pub(super) const UNTRUST: &str = "\
Examples:
  zot ext untrust
  zot ext untrust ~/src/app";
}
