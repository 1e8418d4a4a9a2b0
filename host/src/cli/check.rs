//! `zot ext check <path>`: load one extension alone, show what it registered and how long
//! each step took, and fail on any protocol violation.

use super::install::TermProgress;
use super::resolve::{copy_at, resolve, ScopeArgs};
use serde_json::{json, Value};
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};
use zot_host::install::{self, InstallSource, Progress, Request};
use zot_host::manifest::{validate_name, Launch, Manifest, MANIFEST_FILE};
use zot_host::paths::ZotHome;
use zot_host::{Host, HostConfig, Timeouts};

/// How many lines of this run's log a failed check shows.
const TAIL_LINES: usize = 30;
/// How many bytes from the end of this run's log are searched for those lines.
const TAIL_BYTES: u64 = 16 * 1024;

#[derive(clap::Args)]
pub(crate) struct CheckArgs {
    /// The extension's directory, its extension.json, a component (a .wasm file), or the
    /// name of an installed extension (the copy that loads here: project first).
    path: String,
    #[command(flatten)]
    scope: ScopeArgs,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
    /// How long to wait for its hello and ready, e.g. `30s`, `500ms`. Later than zot
    /// host's own ready wait (3 s) is a warning; never within this is a violation.
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = humantime::parse_duration)]
    wait: Duration,
}

/// What `check` loads.
enum Target {
    /// An extension directory.
    Dir(PathBuf),
    /// A bare component, run with nothing granted.
    Wasm(PathBuf),
}

impl Target {
    /// Classifies the argument as install does: an existing directory, its manifest or a
    /// `.wasm` file; else the name of an installed extension, resolved as every command
    /// resolves one (said on stderr).
    fn parse(arg: &str, home: &ZotHome, scope: ScopeArgs) -> Result<Target, String> {
        match InstallSource::parse(arg) {
            InstallSource::Wasm(file) if file.is_file() => Ok(Target::Wasm(file)),
            InstallSource::Dir(dir) if dir.is_dir() => Ok(Target::Dir(dir)),
            InstallSource::Dir(file) if file.file_name().is_some_and(|n| n == MANIFEST_FILE) => {
                let dir = file.parent().filter(|d| !d.as_os_str().is_empty());
                Ok(Target::Dir(dir.unwrap_or(Path::new(".")).to_path_buf()))
            }
            _ if validate_name(arg).is_ok() => {
                let (dir, scope) =
                    resolve(home, &super::ext::cwd()?, arg, scope.scope()).map_err(|e| {
                        format!(
                            "{e} (and it is not an extension directory, an {MANIFEST_FILE} \
                             or a .wasm file)"
                        )
                    })?;
                eprintln!("checking the {}", copy_at(&dir, scope));
                Ok(Target::Dir(dir))
            }
            _ => Err(format!(
                "not an extension directory, an {MANIFEST_FILE}, a .wasm file or the name \
                 of an installed extension"
            )),
        }
    }
}

/// Runs the check; exit 0 only without violations.
pub(crate) fn run(args: CheckArgs) -> ExitCode {
    let target = super::zot_home(None).and_then(|home| {
        let target = Target::parse(&args.path, &home, args.scope)
            .map_err(|e| format!("check {}: {e}", args.path))?;
        Ok((home, target))
    });
    let (home, target) = match target {
        Ok(t) => t,
        Err(e) => {
            eprintln!("zot: {e}");
            return ExitCode::FAILURE;
        }
    };
    let runtime = tokio::runtime::Runtime::new().expect("the async runtime starts");
    let report = prepare_and_check(&runtime, home, &target, args.wait);
    let ok = report["violations"].as_array().is_some_and(Vec::is_empty);
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&report).expect("JSON serialises")
        );
    } else {
        print_text(&report);
    }
    runtime.shutdown_timeout(Duration::from_millis(100));
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// Compiles a component as its own step, stages a bare one, then checks the extension
/// and adds the compile step and, on failure, this run's log tail to the report.
fn prepare_and_check(
    runtime: &tokio::runtime::Runtime,
    home: ZotHome,
    target: &Target,
    wait: Duration,
) -> Value {
    let progress = TermProgress::new();
    let component = match target {
        Target::Wasm(file) => Some(file.clone()),
        Target::Dir(dir) => Manifest::read(dir).ok().and_then(|m| match m.launch(dir) {
            Launch::Wasm(file) => Some(file),
            Launch::Exec(_) => None,
        }),
    };
    let compiled = component.and_then(|file| compile(runtime, &home, &file, &progress));
    // `_staged` lives until the check is over: dropping it removes the staged component.
    let (dir, _staged) = match target {
        Target::Dir(dir) => (dir.clone(), None),
        Target::Wasm(file) => {
            let req = Request {
                source: InstallSource::Wasm(file.clone()),
                git_ref: None,
                path: None,
                name: None,
                root: home.extensions_dir(),
                home: home.clone(),
            };
            match runtime.block_on(install::stage(&req, &progress)) {
                Ok(staged) => (staged.tree().to_path_buf(), Some(staged)),
                Err(e) => return json!({"violations": [e.0], "warnings": []}),
            }
        }
    };
    let log = Manifest::read(&dir).ok().map(|m| home.log_path(&m.name));
    let log_from = log
        .as_ref()
        .and_then(|p| std::fs::metadata(p).ok())
        .map_or(0, |m| m.len());
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    let mut config = HostConfig::new(home, cwd);
    config.explicit = vec![dir];
    config.installed = false;
    config.timeouts.ready = wait;
    let mut report = runtime.block_on(check(config));
    if let Target::Wasm(file) = target {
        report["dir"] = json!(std::path::absolute(file).unwrap_or_else(|_| file.clone()));
    }
    if report.get("name").is_some() {
        report["compile_ms"] = ms(compiled.map(|(took, _)| took));
        report["compile_by"] = json!(compiled.map(|(_, by)| by));
    }
    let failed = report["violations"]
        .as_array()
        .is_some_and(|v| !v.is_empty());
    if failed {
        report["log_tail"] = json!(log.and_then(|p| log_tail(&p, log_from)));
    }
    report
}

/// Compiles the component at `file`, or loads it from the compilation cache, so that its
/// start reuses it: how long that took and `compiled`, `cache` or `shared`. `None` when it
/// cannot be loaded (its start then says why).
fn compile(
    runtime: &tokio::runtime::Runtime,
    home: &ZotHome,
    file: &Path,
    progress: &dyn Progress,
) -> Option<(Duration, &'static str)> {
    use zot_host::cache::{self, Source};
    progress.begin(&format!("compiling {}", file.display()));
    let started = Instant::now();
    let engine = zot_host::transport::wasm::engine();
    let loaded = runtime.block_on(cache::load(engine, file, &home.cache_dir()));
    let took = started.elapsed();
    progress.end();
    let by = match loaded.ok()?.source {
        Source::Compiled(_) => "compiled",
        Source::Cached(_) => "cache",
        Source::Shared => "shared",
    };
    Some((took, by))
}

/// The last lines appended to the log at `path` since it was `from` bytes long (from the
/// start if it has shrunk since); `None` if nothing was.
fn log_tail(path: &Path, from: u64) -> Option<String> {
    let mut file = std::fs::File::open(path).ok()?;
    let len = file.metadata().ok()?.len();
    let from = if from > len { 0 } else { from };
    let start = from.max(len.saturating_sub(TAIL_BYTES));
    file.seek(SeekFrom::Start(start)).ok()?;
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes).ok()?;
    let text = String::from_utf8_lossy(&bytes);
    // A cut at `start` leaves a partial first line: skip it.
    let lines: Vec<&str> = text.lines().skip(usize::from(start > from)).collect();
    let tail = lines[lines.len().saturating_sub(TAIL_LINES)..].join("\n");
    (!tail.trim().is_empty()).then_some(tail)
}

fn ms(d: Option<Duration>) -> Value {
    d.map_or(Value::Null, |d| json!(d.as_secs_f64() * 1000.0))
}

async fn check(config: HostConfig) -> Value {
    let wait = config.timeouts.ready;
    let wait_text = humantime::format_duration(wait);
    let (host, _notes) = Host::new(config);
    let report = host.load().await;
    let Some(info) = host.extensions().into_iter().next() else {
        return json!({
            "violations": ["no extension found at that path (it needs an extension.json)"],
            "warnings": [],
        });
    };
    let mut violations: Vec<String> = report.errors.iter().map(|e| e.error.clone()).collect();
    let mut warnings = Vec::new();
    if info.state == "disabled" {
        violations.push("the manifest says \"enabled\": false".into());
    }
    let status = host.status(&info.name).unwrap_or_default();
    let exited_early = info.state == "exited";
    if exited_early {
        // The exit is the violation; what it did not get to send follows from it.
    } else if status.hello.is_none() && info.state != "disabled" && info.state != "error" {
        violations.push(format!(
            "no hello within --wait ({wait_text}): is stdout flushed after printing it?"
        ));
    } else if info.state == "starting" {
        violations.push(format!(
            "not ready within --wait ({wait_text}): it kept sending frames"
        ));
    }
    if exited_early {
        violations.push(format!(
            "exited during the check: {}",
            info.error.clone().unwrap_or_default()
        ));
    }
    if let Some(hello) = status.hello.as_ref().filter(|h| h.name != info.name) {
        violations.push(format!(
            "hello names it {:?} but the manifest says {:?}",
            hello.name, info.name
        ));
    }
    let normal = Timeouts::default().ready;
    let slow = [("hello", status.hello_after), ("ready", status.ready_after)]
        .into_iter()
        .find_map(|(what, after)| Some(what).zip(after.filter(|t| *t > normal)));
    if let Some((what, after)) = slow {
        warnings.push(format!(
            "slow start: {what} after {:.1} s, later than zot host's ready wait ({}); \
             zot host takes its registrations when they arrive",
            after.as_secs_f64(),
            humantime::format_duration(normal)
        ));
    }
    violations.extend(status.violations.iter().cloned());
    let commands: Vec<Value> = host
        .commands()
        .into_iter()
        .map(|(_, c)| json!({"name": c.name, "description": c.description}))
        .collect();
    let tools: Vec<Value> = host
        .tools()
        .into_iter()
        .map(|(_, t)| json!({"name": t.name, "description": t.description, "schema": t.schema}))
        .collect();
    for name in &info.shadowed {
        violations.push(format!("{name:?} is a built-in name: shadowed"));
    }
    let started = Instant::now();
    host.shutdown().await;
    let shutdown = started.elapsed();
    let after = host.status(&info.name).unwrap_or_default();
    let exit = after.exit.map(|e| e.reason);
    if let Some(signal) = after.forced {
        violations.push(format!(
            "did not exit within 2 s of shutdown: stopped with {signal} after {} ms",
            shutdown.as_millis()
        ));
    }
    json!({
        "name": info.name,
        "version": info.version,
        "transport": info.transport,
        "dir": info.dir,
        "log": info.log,
        "hello": status.hello,
        "hello_ms": ms(status.hello_after),
        "ready_ms": ms(status.ready_after),
        "ready_by": status.ready_by,
        "commands": commands,
        "tools": tools,
        "events": info.events,
        "intercept": info.intercept,
        "shutdown_ms": ms(Some(shutdown)),
        "exit": exit,
        "sandbox": info.sandbox,
        "violations": violations,
        "warnings": warnings,
    })
}

/// The report as text. Printed at once, so a closed stdout (`| head`) is not an error.
fn print_text(r: &Value) {
    use std::fmt::Write as _;
    let mut out = String::new();
    let s = |v: &Value| v.as_str().unwrap_or_default().to_string();
    let ms = |v: &Value| v.as_f64().map_or("-".into(), |m| format!("{m:.1} ms"));
    if r.get("name").is_some() {
        let _ = writeln!(
            out,
            "{} {} ({}) at {}",
            s(&r["name"]),
            s(&r["version"]),
            s(&r["transport"]),
            s(&r["dir"])
        );
        if let Some(by) = r["compile_by"].as_str() {
            let how = match by {
                "compiled" => "compiled now, cached for the next start",
                "cache" => "from the compilation cache",
                _ => "already compiled",
            };
            let _ = writeln!(out, "  compile    {:>10}  {how}", ms(&r["compile_ms"]));
        }
        let hello = &r["hello"];
        if hello.is_object() {
            let _ = writeln!(
                out,
                "  hello      {:>10}  name {:?}, version {:?}, capabilities {}",
                ms(&r["hello_ms"]),
                s(&hello["name"]),
                s(&hello["version"]),
                hello["capabilities"]
            );
        } else {
            let _ = writeln!(out, "  hello      never");
        }
        let how = match r["ready_by"].as_str() {
            Some("frame") => "sent ready",
            Some(_) => "silent for 250 ms, no ready frame",
            None => "never",
        };
        let _ = writeln!(out, "  ready      {:>10}  {how}", ms(&r["ready_ms"]));
        for (label, key) in [("commands", "commands"), ("tools", "tools")] {
            let list = r[key].as_array().cloned().unwrap_or_default();
            if list.is_empty() {
                let _ = writeln!(out, "  {label:<10} (none)");
            }
            for item in list {
                let prefix = if key == "commands" { "/" } else { "" };
                let _ = writeln!(
                    out,
                    "  {label:<10} {prefix}{} - {}",
                    s(&item["name"]),
                    s(&item["description"])
                );
            }
        }
        if let Some(sb) = r["sandbox"].as_object() {
            let _ = writeln!(
                out,
                "  sandbox    {} component, {} MiB memory, sha256 {}",
                sb["component"].as_str().unwrap_or_default(),
                sb["memory_mb"],
                sb["sha256"]
                    .as_str()
                    .unwrap_or_default()
                    .chars()
                    .take(12)
                    .collect::<String>()
            );
            let _ = writeln!(out, "             asks {}", sb["asked"]);
            let _ = writeln!(out, "             granted {}", sb["granted"]);
            for w in sb["withheld"].as_array().into_iter().flatten() {
                let _ = writeln!(
                    out,
                    "             withheld: {}",
                    w.as_str().unwrap_or_default()
                );
            }
        }
        let _ = writeln!(out, "  events     {}", r["events"]);
        let _ = writeln!(out, "  intercept  {}", r["intercept"]);
        let _ = writeln!(
            out,
            "  shutdown   {:>10}  {}",
            ms(&r["shutdown_ms"]),
            s(&r["exit"])
        );
        let _ = writeln!(out, "  log        {}", s(&r["log"]));
    }
    for w in r["warnings"].as_array().into_iter().flatten() {
        let _ = writeln!(out, "warning: {}", s(w));
    }
    if let Some(tail) = r["log_tail"].as_str() {
        let _ = writeln!(
            out,
            "this run's log (its stderr and the host's notes), last lines:"
        );
        for line in tail.lines() {
            let _ = writeln!(out, "  | {line}");
        }
    }
    let violations = r["violations"].as_array().cloned().unwrap_or_default();
    if violations.is_empty() {
        let _ = writeln!(out, "ok: no protocol violations");
    } else {
        let _ = writeln!(out, "{} protocol violation(s):", violations.len());
        for v in violations {
            let _ = writeln!(out, "  - {}", s(&v));
        }
    }
    let _ = std::io::Write::write_all(&mut std::io::stdout(), out.as_bytes());
}
