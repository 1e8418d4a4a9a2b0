//! `zot ext run <file.wasm|dir>`: one component as a stdio extension. Frames come in on
//! this process's stdin and go out on its stdout, diagnostics go to stderr; the sandbox
//! and the grants are those `zot host` would apply. Any host that speaks the protocol
//! over stdio gets the sandbox: `{"name":"guard","exec":"zot","args":["ext","run","guard.wasm"]}`.

use crate::output::error::{CliError, Context as _};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use zot_host::launcher::Request;
use zot_host::manage::bridge::serve_stdio;
use zot_host::manage::identity::Identity;
use zot_host::manage::log::ExtLog;
use zot_host::manage::manifest::{Launch, Manifest};
use zot_host::HostConfig;
use zot_host::ZotHome;
use zot_protocol::DEFAULT_MAX_FRAME;

#[derive(clap::Args)]
pub(crate) struct RunArgs {
    /// A component (`.wasm`), or an extension directory whose manifest names one.
    #[arg(add = clap_complete::ArgValueCompleter::new(crate::complete::extension_paths()))]
    path: PathBuf,
    /// The longest line accepted, in either direction, in bytes.
    #[arg(long, default_value_t = DEFAULT_MAX_FRAME)]
    max_frame_bytes: usize,
    /// How long the component may work on one tool call (default: the manifest's
    /// `limits.tool_timeout_ms`, else 60000). Match the outer host's tool timeout.
    #[arg(long, value_name = "MS")]
    tool_timeout_ms: Option<u64>,
    /// The project directory a `cwd: "read"` grant exposes (default: the current
    /// directory). The component is told this path in `hello_ack.cwd`.
    #[arg(long, value_name = "DIR", value_hint = clap::ValueHint::DirPath)]
    cwd: Option<PathBuf>,
    #[command(flatten)]
    grants: crate::flags::load::RunGrantArgs,
}

/// Runs the component until its input ends, it exits, or this process is signalled.
/// The exit status is the component's.
pub(crate) fn run(args: RunArgs) -> Result<ExitCode, CliError> {
    let what = format!("run {}", args.path.display());
    let runtime = tokio::runtime::Runtime::new()
        .map_err(|e| format!("cannot start the async runtime: {e}"))
        .context(&what)?;
    let code = runtime.block_on(bridge(args));
    runtime.shutdown_timeout(std::time::Duration::from_millis(100));
    let code = code.context(&what)?;
    Ok(ExitCode::from(code.clamp(0, 255) as u8))
}

/// The manifest to run under and its directory: the directory's own (which must name a
/// component), or a default one named after the file.
fn manifest_for(path: &Path) -> Result<(Manifest, PathBuf), String> {
    if path.is_dir() {
        let m = Manifest::read(path).map_err(|e| e.to_string())?;
        return match m.launch(path) {
            Launch::Wasm(_) => Ok((m, std::path::absolute(path).unwrap_or(path.to_path_buf()))),
            Launch::Exec(_) => Err(format!(
                "{} runs a program (\"exec\"), not a component: run it directly",
                path.display()
            )),
            Launch::Remote(_) => Err(format!(
                "{} is a remote MCP server: `zot ext run` runs components (`zot ext check` \
                 and `zot ext call` reach it)",
                path.display()
            )),
        };
    }
    std::fs::metadata(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let path = std::path::absolute(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let m = Manifest::bare_component(&path).map_err(|e| e.to_string())?;
    let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
    Ok((m, dir))
}

async fn bridge(args: RunArgs) -> Result<i32, String> {
    let home = ZotHome::from_env()?;
    let (manifest, dir) = manifest_for(&args.path)?;
    let cwd = crate::output::terminal::cwd_or(args.cwd)?;
    let mut config = HostConfig::new(home, cwd);
    config.max_frame = args.max_frame_bytes;
    config.compiler = zot_host::compile::Compiler::this_program()?;
    if let Some(ms) = args.tool_timeout_ms.or(manifest.limits.tool_timeout_ms) {
        config.timeouts.tool = std::time::Duration::from_millis(ms);
    }
    let stop = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    // Its grant and data dir are those of the folder or file named.
    let identity = Identity::of(&args.path, &config.home);
    let run_grant = args.grants.run_grant();
    crate::flags::load::announce_one(&run_grant, &manifest);
    let request = Request {
        manifest: &manifest,
        dir: &dir,
        identity: &identity,
        context: config.launch_context(),
        log: &ExtLog::stderr(),
        run_grant: Some(&run_grant),
        // Named on the command line: started without a trust check.
        admitted: None,
    };
    let exit = serve_stdio(request, tokio::io::stdin(), tokio::io::stdout(), stop).await?;
    let _ = std::io::stderr().flush();
    Ok(exit.code().unwrap_or(1))
}
