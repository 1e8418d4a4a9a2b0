//! `zot ext run <file.wasm|dir>`: one component as a stdio extension. Frames come in on
//! this process's stdin and go out on its stdout, diagnostics go to stderr; the sandbox
//! and the grants are those `zot host` would apply. Any host that speaks the protocol
//! over stdio gets the sandbox: `{"name":"guard","exec":"zot","args":["ext","run","guard.wasm"]}`.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use zot_host::extension::ONE_WAY_BUDGET;
use zot_host::log::ExtLog;
use zot_host::manifest::{Launch, Manifest};
use zot_host::paths::ZotHome;
use zot_host::sandbox;
use zot_host::transport::wasm::{self, WasmSpec};
use zot_host::transport::{Inbound, Outbound};
use zot_host::Timeouts;
use zot_protocol::{encode, HostFrame, Line, LineDecoder, DEFAULT_MAX_FRAME};

#[derive(clap::Args)]
pub(crate) struct RunArgs {
    /// A component (`.wasm`), or an extension directory whose manifest names one.
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
    #[arg(long, value_name = "DIR")]
    cwd: Option<PathBuf>,
}

/// Runs the component until its input ends, it exits, or this process is signalled.
pub(crate) fn run(args: RunArgs) -> ExitCode {
    let what = format!("run {}", args.path.display());
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("zot: {what}: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let code = runtime.block_on(bridge(args)).unwrap_or_else(|e| {
        eprintln!("zot: {what}: {e}");
        1
    });
    runtime.shutdown_timeout(std::time::Duration::from_millis(100));
    ExitCode::from(code.clamp(0, 255) as u8)
}

/// The manifest to run under: the directory's, or a default one named after the file.
fn manifest_for(path: &Path) -> Result<(Manifest, PathBuf), String> {
    if path.is_dir() {
        let m = Manifest::read(path).map_err(|e| e.to_string())?;
        return match m.launch(path) {
            Launch::Wasm(wasm) => Ok((m, wasm)),
            Launch::Exec(_) => Err(format!(
                "{} runs a program (\"exec\"), not a component: run it directly",
                path.display()
            )),
        };
    }
    let m = Manifest::bare_component(path).map_err(|e| e.to_string())?;
    Ok((m, path.to_path_buf()))
}

async fn bridge(args: RunArgs) -> Result<i32, String> {
    let home = ZotHome::from_env()?;
    let (manifest, wasm_path) = manifest_for(&args.path)?;
    let log = ExtLog::stderr();
    let cwd = match args.cwd {
        Some(dir) => {
            std::path::absolute(&dir).map_err(|e| format!("--cwd {}: {e}", dir.display()))?
        }
        None => std::env::current_dir().map_err(|e| format!("current directory: {e}"))?,
    };
    let (decision, grant) = sandbox::for_manifest(&home, &manifest, &cwd, &log);
    let data_mount = decision.policy.data_mount();
    let cwd_told = cwd.display().to_string();
    let started = wasm::spawn(WasmSpec {
        wasm: wasm_path,
        policy: decision.policy,
        log: log.clone(),
        max_frame: args.max_frame_bytes,
        cache_dir: home.cache_dir(),
    })
    .await?;
    sandbox::warn_if_changed(grant.as_ref(), &started.sha256, &manifest.name, &log);
    let conn = started.connection;
    let mut timeouts = Timeouts::default();
    if let Some(ms) = args.tool_timeout_ms.or(manifest.limits.tool_timeout_ms) {
        timeouts.tool = std::time::Duration::from_millis(ms);
    }

    // stdin → component; hello_ack is told the paths as the component sees them.
    let outbound = conn.outbound.clone();
    let max_frame = args.max_frame_bytes;
    let input_log = log.clone();
    let input = tokio::spawn(async move {
        let mut stdin = tokio::io::stdin();
        let mut decoder = LineDecoder::new(max_frame);
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            let n = match stdin.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            let mut chunk = &buf[..n];
            while let Some(line) = decoder.decode(&mut chunk) {
                let Line::Frame(line) = line else {
                    input_log.warn("skipped an input line longer than the frame size limit");
                    continue;
                };
                let (budget, line) = match HostFrame::decode(&line) {
                    Ok(HostFrame::HelloAck(mut ack)) => {
                        ack.data_dir = data_mount.to_string();
                        ack.cwd = cwd_told.clone();
                        let frame = HostFrame::HelloAck(ack);
                        (timeouts.budget(&frame), encode(&frame))
                    }
                    Ok(frame) => (timeouts.budget(&frame), encode(&frame)),
                    // Not ours to judge: JSON that is no frame this host knows reaches the
                    // component as the host sent it (a one-way budget). A line that is not
                    // JSON (or not UTF-8) is no frame at all: skipped, the component goes on.
                    Err(_) => match serde_json::from_slice::<serde_json::Value>(&line) {
                        Ok(value) => (ONE_WAY_BUDGET, encode(&value)),
                        Err(e) => {
                            input_log.warn(&format!("skipped an input line that is not JSON: {e}"));
                            continue;
                        }
                    },
                };
                let frame = Outbound { budget, line };
                if outbound.send(frame).await.is_err() {
                    return;
                }
            }
        }
    });

    let mut inbound = conn.inbound;
    let mut stdout = tokio::io::stdout();
    let mut exit = conn.exit;
    let mut input_done = false;
    let mut input = input;
    loop {
        tokio::select! {
            item = inbound.recv() => match item {
                Some(Inbound::Line(line, _)) => {
                    let ok = stdout.write_all(&line).await.is_ok()
                        && stdout.write_all(b"\n").await.is_ok()
                        && stdout.flush().await.is_ok();
                    if !ok {
                        conn.control.kill();
                    }
                }
                Some(Inbound::Oversize(len)) => {
                    log.warn(&format!("dropped a {len}-byte frame: longer than the frame size limit"))
                }
                None => break,
            },
            _ = &mut input, if !input_done => {
                input_done = true;
                conn.control.close_input();
            }
            _ = tokio::signal::ctrl_c() => conn.control.kill(),
        }
    }
    let exit = (&mut exit)
        .await
        .map_err(|_| "the component vanished".to_string())?;
    let _ = std::io::stderr().flush();
    if exit.code() != Some(0) {
        log.warn(&format!("component ended: {exit}"));
    }
    Ok(exit.code().unwrap_or(1))
}
