//! Runs a [`Plan`] confined (Linux): each step in the source's copy with an environment of
//! its own (not the user's: a `HOME` and a temp dir in the staging folder, the build's
//! cache), writing only there, the network only for a step that fetches; its output
//! streamed to the progress and kept in a log; stopped at a deadline.

use super::{Plan, Recipe, Step};
use crate::confine::{policy_for_build, Prepared};
use crate::manage::install::{InstallError, Progress};
use std::io::{BufRead, BufReader, Write};
use std::os::fd::OwnedFd;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

/// A build that takes longer is stopped (and the install fails).
pub const BUILD_TIMEOUT: Duration = Duration::from_secs(15 * 60);

/// Lines of the log shown when a build fails.
const TAIL: usize = 20;

/// Where a build runs: the source's copy (`tree`) inside the staging folder (`staging`,
/// writable, holding its `HOME` and temp dir), the build's own cache (`cache`, writable),
/// and the log every line goes to.
pub struct Place<'a> {
    pub tree: &'a Path,
    /// Where the steps run: `tree`, or the extension's folder in the whole source.
    pub dir: &'a Path,
    pub staging: Arc<OwnedFd>,
    pub staging_path: &'a Path,
    pub cache: Arc<OwnedFd>,
    pub cache_path: &'a Path,
    pub log: &'a Path,
}

/// Runs every step of `plan` at `place`, in order; the first that fails (or outlasts
/// `timeout`) ends the build with the tail of its log.
pub fn run(
    plan: &Plan,
    place: &Place<'_>,
    timeout: Duration,
    progress: &dyn Progress,
) -> Result<(), InstallError> {
    let mut log = std::fs::File::create(place.log).map_err(InstallError::io("write", place.log))?;
    let home = place.staging_path.join("home");
    let tmp = place.staging_path.join("tmp");
    for dir in [&home, &tmp] {
        std::fs::create_dir_all(dir).map_err(InstallError::io("create", dir))?;
    }
    if plan.recipe == Recipe::Go {
        // Go's telemetry is a setting in `HOME`, not a variable: off, so that it starts
        // no process of its own.
        let mode = home.join(".config/go/telemetry");
        std::fs::create_dir_all(&mode)
            .and_then(|()| std::fs::write(mode.join("mode"), "off"))
            .map_err(InstallError::io("write", &mode))?;
    }
    let deadline = Instant::now() + timeout;
    for step in &plan.steps {
        let shown = step.shown();
        let _ = writeln!(log, "$ {shown}");
        progress.begin(&format!("building: {shown}"));
        let ran = run_step(
            plan,
            step,
            place,
            (&home, &tmp),
            deadline,
            &mut log,
            progress,
        );
        progress.end();
        if let Err(why) = ran {
            let _ = writeln!(log, "zot: {why}");
            return Err(InstallError::BuildFailed {
                command: shown,
                why,
                log: place.log.to_path_buf(),
                tail: tail(place.log),
            });
        }
    }
    match &plan.artifact {
        Some(artifact) => copy_made(place, place.cache_path, artifact, &plan.output),
        None if place.dir != place.tree => copy_made(place, place.dir, &plan.output, &plan.output),
        None => Ok(()),
    }
}

/// Copies the file the build made at `made` in `from` (its cache, or the folder it ran
/// in) to `output` in the extension's copy. Every process of the build is gone: what it
/// left is read where it resolves inside `from`, as a file, and written without
/// following a link.
fn copy_made(place: &Place<'_>, from: &Path, made: &str, output: &str) -> Result<(), InstallError> {
    use crate::util::safe_write::SafeDir;
    let file = from.join(made);
    let inside = match (file.canonicalize(), from.canonicalize()) {
        (Ok(file), Ok(from)) => file.starts_with(from) && file.is_file(),
        (Err(_), _) | (_, Err(_)) => false,
    };
    let output = Path::new(output);
    let (parent, name) = match (output.parent(), output.file_name().and_then(|n| n.to_str())) {
        (Some(parent), Some(name)) if inside => (parent, name),
        (_, _) => return Err(InstallError::BuiltNothing(made.to_string())),
    };
    let dir = match parent.as_os_str().is_empty() {
        true => SafeDir::open(place.tree),
        false => SafeDir::beneath(place.tree, parent, true),
    }
    .map_err(InstallError::io("create", place.tree.join(parent)))?;
    dir.copy_from(name, &file)
        .map_err(InstallError::io("write", place.tree.join(output)))
}

/// One step, confined; `Err` says why it failed.
fn run_step(
    plan: &Plan,
    step: &Step,
    place: &Place<'_>,
    (home, tmp): (&Path, &Path),
    deadline: Instant,
    log: &mut std::fs::File,
    progress: &dyn Progress,
) -> Result<(), String> {
    let writable = vec![place.staging.clone(), place.cache.clone()];
    let ports = step.fetches.then_some(super::FETCH_PORTS);
    let policy = policy_for_build(&plan.toolchain.reads, writable, ports);
    let mut prepared = Prepared::build(&policy).map_err(|e| e.to_string())?;
    // (zot's own watches, such as a data dir's quota, are not a build's.)
    for rule in prepared.report().iter().filter(|r| !r.watched) {
        if let Some(why) = &rule.not_enforced {
            let _ = writeln!(log, "zot: not enforced here: {} ({why})", rule.what);
        }
    }
    let program = match step.argv[0].contains('/') {
        true => place.dir.join(&step.argv[0]),
        false => PathBuf::from(&step.argv[0]),
    };
    let mut command = Command::new(&program);
    command
        .args(&step.argv[1..])
        .current_dir(place.dir)
        .env_clear()
        .envs(environment(plan, place, home, tmp))
        .envs(step.env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    // SAFETY: `apply_in_child` only makes system calls (no allocation, no lock).
    unsafe {
        command.pre_exec(move || prepared.apply_in_child());
    }
    let mut child = command
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", program.display()))?;
    let (tx, lines) = mpsc::channel::<String>();
    for out in [
        child
            .stdout
            .take()
            .map(|o| Box::new(o) as Box<dyn std::io::Read + Send>),
        child
            .stderr
            .take()
            .map(|e| Box::new(e) as Box<dyn std::io::Read + Send>),
    ]
    .into_iter()
    .flatten()
    {
        let tx = tx.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(out).split(b'\n').map_while(Result::ok) {
                let _ = tx.send(String::from_utf8_lossy(&line).into_owned());
            }
        });
    }
    drop(tx);
    let mut open = true;
    loop {
        // Output first, as it comes; then whether it ended.
        match lines.recv_timeout(Duration::from_millis(50)) {
            Ok(line) => {
                let _ = writeln!(log, "{line}");
                progress.output(&line);
                continue;
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => open = false,
            Err(mpsc::RecvTimeoutError::Timeout) => {}
        }
        if let Some(status) = child.try_wait().map_err(|e| e.to_string())? {
            if open {
                // What it wrote before it ended is still to come.
                for line in lines.iter() {
                    let _ = writeln!(log, "{line}");
                    progress.output(&line);
                }
            }
            // What it left running in its group ends with it.
            kill_group(&child);
            return match status.success() {
                true => Ok(()),
                false => Err(format!("it ended with {status}")),
            };
        }
        if Instant::now() >= deadline {
            kill_group(&child);
            let _ = child.wait();
            return Err(format!(
                "stopped after {} s (the build's deadline)",
                BUILD_TIMEOUT.as_secs()
            ));
        }
    }
}

/// The environment of a build: none of the user's variables but `PATH`'s toolchain, a
/// `HOME` and temp dir of its own, and the recipe's (Go's caches in the build's cache,
/// no other toolchain fetched, no C compiler).
fn environment(plan: &Plan, place: &Place<'_>, home: &Path, tmp: &Path) -> Vec<(String, String)> {
    let path = format!(
        "{}:/usr/local/bin:/usr/bin:/bin",
        plan.toolchain.bin_dir.display()
    );
    let mut env = vec![
        ("PATH".to_string(), path),
        ("HOME".to_string(), home.display().to_string()),
        ("TMPDIR".to_string(), tmp.display().to_string()),
        ("LANG".to_string(), "C.UTF-8".to_string()),
    ];
    let cache = |sub: &str| place.cache_path.join(sub).display().to_string();
    match plan.recipe {
        Recipe::Manifest => {}
        Recipe::Npm => env.extend([
            ("npm_config_cache".to_string(), cache("npm")),
            (
                "npm_config_update_notifier".to_string(),
                "false".to_string(),
            ),
            ("npm_config_fund".to_string(), "false".to_string()),
            ("npm_config_audit".to_string(), "false".to_string()),
        ]),
        Recipe::Cargo => {
            env.extend([
                ("CARGO_HOME".to_string(), cache("cargo-home")),
                ("CARGO_TARGET_DIR".to_string(), cache(super::CARGO_TARGET)),
                ("RUSTUP_AUTO_INSTALL".to_string(), "0".to_string()),
                ("CARGO_TERM_COLOR".to_string(), "never".to_string()),
                // No staging path in the program: the same source builds the same file.
                (
                    "RUSTFLAGS".to_string(),
                    format!("--remap-path-prefix={}=.", place.dir.display()),
                ),
            ]);
            if let Some(home) = super::toolchain::rustup_home() {
                env.push(("RUSTUP_HOME".to_string(), home.display().to_string()));
            }
            // The toolchain the user chose, whose version the prompt showed.
            if let Ok(toolchain) = std::env::var("RUSTUP_TOOLCHAIN") {
                env.push(("RUSTUP_TOOLCHAIN".to_string(), toolchain));
            }
        }
        Recipe::Go => {
            env.extend([
                ("GOCACHE".to_string(), cache("go-build")),
                ("GOMODCACHE".to_string(), cache("go-mod")),
                ("GOPATH".to_string(), cache("go-path")),
                ("GOTOOLCHAIN".to_string(), "local".to_string()),
                ("GOENV".to_string(), "off".to_string()),
                ("GOTELEMETRY".to_string(), "off".to_string()),
                ("GOFLAGS".to_string(), "-modcacherw".to_string()),
                ("CGO_ENABLED".to_string(), "0".to_string()),
            ]);
            // Where the user fetches modules from, as they set it.
            for name in ["GOPROXY", "GOSUMDB", "GOPRIVATE", "GONOPROXY", "GONOSUMDB"] {
                if let Ok(value) = std::env::var(name) {
                    env.push((name.to_string(), value));
                }
            }
        }
    }
    env
}

/// Stops the step's process group (it leads one of its own).
fn kill_group(child: &std::process::Child) {
    if let Ok(pid) = libc::pid_t::try_from(child.id()) {
        // SAFETY: a signal to the process group the child leads.
        unsafe { libc::kill(-pid, libc::SIGKILL) };
    }
}

/// The last [`TAIL`] lines of the log at `path`.
fn tail(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(TAIL)..].join("\n")
}
