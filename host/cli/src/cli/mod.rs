//! Command-line parsing; each subcommand lives in its own module.

mod check;
mod ext;
mod grant;
mod install;
mod resolve;
mod run;
mod shell;
mod sidecar;
mod trust;

use clap::{Parser, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser)]
#[command(name = "zot", version, about = "The zot extension host")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Manage, check and run extensions.
    #[command(subcommand)]
    Ext(ExtCommand),
    /// Run the host as a JSON-lines sidecar on stdin/stdout (see docs/sidecar.md).
    Host(sidecar::HostArgs),
}

#[derive(Subcommand)]
pub(crate) enum ExtCommand {
    /// List installed extensions (project-local and global) and their state.
    List {
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Install an extension from a directory, a git URL or a .wasm component, after
    /// showing what it may do and asking for consent.
    Install(install::InstallArgs),
    /// Fetch installed extensions again from where they came from; asks again if they now
    /// ask for more.
    Update(install::UpdateArgs),
    /// Show an extension's manifest, where it was installed from, its hash and its grant.
    Info {
        name: String,
        /// Print JSON.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        scope: resolve::ScopeArgs,
    },
    /// Report files of an install that changed since it was installed (exit 1 if any).
    Verify {
        name: String,
        /// Print JSON.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        scope: resolve::ScopeArgs,
    },
    /// Delete an installed extension, its install record and its grant; asks whether to
    /// delete its data too.
    #[command(alias = "rm")]
    Remove {
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
        scope: resolve::ScopeArgs,
    },
    /// Set `enabled: true` in an extension's manifest.
    Enable {
        name: String,
        #[command(flatten)]
        scope: resolve::ScopeArgs,
    },
    /// Set `enabled: false` in an extension's manifest.
    Disable {
        name: String,
        #[command(flatten)]
        scope: resolve::ScopeArgs,
    },
    /// Print an extension's log.
    Logs {
        name: String,
        /// Keep printing as the log grows.
        #[arg(long, short)]
        follow: bool,
    },
    /// Load one extension, print its hello, registrations and timings; non-zero exit on a
    /// protocol violation.
    Check(check::CheckArgs),
    /// Run one WebAssembly component as a stdio extension (frames on stdin/stdout), in
    /// the sandbox with its grants.
    Run(run::RunArgs),
    /// Show or grant the permissions a component's manifest asks for.
    Grant(grant::GrantArgs),
    /// Forget every permission granted to an extension.
    Revoke(grant::RevokeArgs),
    /// Show a project's own extensions (./.zot/extensions) and trust them to run there,
    /// as they are now; any change to their files needs trust again.
    Trust(trust::TrustArgs),
    /// Stop trusting a project's extensions: zot no longer starts them there.
    Untrust(trust::UntrustArgs),
    /// An interactive session over the host: call tools, invoke commands, run the
    /// interception chain, emit events, watch notifications; `--script` for a transcript.
    Shell(shell::ShellArgs),
}

/// Parses the command line and runs it.
pub fn main() -> ExitCode {
    // `zot __compile …`: the child process that compiles one component under limits.
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if args
        .get(1)
        .is_some_and(|a| a == zot_host::compile::SUBCOMMAND)
    {
        return zot_host::compile::child_main(&args[2..]);
    }
    let cli = Cli::parse();
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(colour())
        .with_max_level(tracing::Level::WARN)
        .with_target(false)
        .without_time()
        .init();
    match cli.command {
        Command::Ext(ExtCommand::Check(args)) => check::run(args),
        Command::Ext(ExtCommand::Run(args)) => run::run(args),
        Command::Ext(ExtCommand::Grant(args)) => grant::grant(args),
        Command::Ext(ExtCommand::Revoke(args)) => grant::revoke(args),
        Command::Ext(ExtCommand::Shell(args)) => shell::run(args),
        Command::Ext(cmd) => ext::run(cmd),
        Command::Host(args) => sidecar::run(args),
    }
}

/// Whether stderr gets ANSI colour: only on a terminal, and never with `NO_COLOR` set.
fn colour() -> bool {
    use std::io::IsTerminal;
    std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

/// `--zot-home` if given, else `$ZOT_HOME` or the platform default.
pub(crate) fn zot_home(flag: Option<PathBuf>) -> Result<zot_host::paths::ZotHome, String> {
    match flag {
        Some(dir) => Ok(zot_host::paths::ZotHome::new(dir)),
        None => zot_host::paths::ZotHome::from_env(),
    }
}
