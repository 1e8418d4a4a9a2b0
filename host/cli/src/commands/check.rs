//! `zot ext check <path>`: load one extension alone, show what it registered and how long
//! each step took, and fail on any protocol violation.

use crate::flags::scope::ScopeArgs;
use crate::flags::target::{setup, Parsed, Target};
use crate::output::error::{CliError, Context as _};
use crate::output::log_tail::{self, LogMark};
use crate::output::terminal::{self, TermProgress};
use serde::Serialize;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};
use zot_host::compile::Compiler;
use zot_host::manage::confine::ConfineView;
use zot_host::manage::identity::Identity;
use zot_host::manage::install::Progress;
use zot_host::manage::manifest::{Manifest, TransportKind};
use zot_host::manage::records::provenance;
use zot_host::manage::records::trust::Untrusted;
use zot_host::terminal_text::{multi_line, one_line};
use zot_host::SandboxView;
use zot_host::ZotHome;
use zot_host::{ExtState, Host, HostConfig, Source, Timeouts};
use zot_host::{ExtensionInfo, LoadReport, ReadyBy, Status};
use zot_protocol::Hello;

/// What `check` found: serialised for `--json` (its fields are the public contract in
/// docs/cli.md: only ever added to) and rendered for people by [`print_text`].
#[derive(Debug, Default, Serialize)]
struct CheckReport {
    /// The extension, when one was found and loaded.
    #[serde(flatten)]
    found: Option<Found>,
    violations: Vec<String>,
    warnings: Vec<String>,
    /// Present with `found`.
    #[serde(flatten)]
    compile: Option<CompileStep>,
    /// Present when the check failed: this run's log lines, or `null`.
    #[serde(skip_serializing_if = "Option::is_none")]
    log_tail: Option<Option<String>>,
    /// It did not start (a manifest or start error, or disabled): no timings to show.
    #[serde(skip)]
    not_started: bool,
    /// A project extension named by its name that the user has not trusted: not started;
    /// why, and the command that trusts it.
    #[serde(skip_serializing_if = "Option::is_none")]
    untrusted: Option<Untrusted>,
}

impl CheckReport {
    fn failed(violation: String) -> CheckReport {
        CheckReport {
            violations: vec![violation],
            ..CheckReport::default()
        }
    }
}

/// The loaded extension: its hello, registrations and the time each step took.
#[derive(Debug, Serialize)]
struct Found {
    name: String,
    version: String,
    transport: TransportKind,
    /// Where the checked copy is installed: `project`, `global`, or `explicit` (a folder
    /// or file named by its path), as `list`, `info` and `verify` say it.
    scope: Source,
    /// It is an MCP server (the manifest's `mcp`), spoken to in MCP.
    #[serde(skip)]
    mcp: bool,
    /// Its directory; for a `.wasm` argument, the file.
    dir: PathBuf,
    log: PathBuf,
    hello: Option<Hello>,
    hello_ms: Option<f64>,
    ready_ms: Option<f64>,
    ready_by: Option<ReadyBy>,
    commands: Vec<Registered>,
    tools: Vec<Registered>,
    events: Vec<String>,
    intercept: Vec<String>,
    shutdown_ms: f64,
    exit: Option<String>,
    sandbox: Option<SandboxView>,
    /// A classic extension: whether it is confined, and the rules this kernel enforces.
    #[serde(skip_serializing_if = "Option::is_none")]
    confinement: Option<ConfineView>,
}

/// A command (no schema) or a tool.
#[derive(Debug, Serialize)]
struct Registered {
    name: String,
    description: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    schema: Option<Value>,
}

/// How long the component took to compile or load, and how: `compiled`, `cache` or
/// `shared`; both `null` for a classic extension.
#[derive(Debug, Serialize)]
struct CompileStep {
    compile_ms: Option<f64>,
    compile_by: Option<&'static str>,
}

#[derive(clap::Args)]
pub(crate) struct CheckArgs {
    /// The extension's directory, its extension.json, a component (a .wasm file), or the
    /// name of an installed extension (the copy that loads here: project first).
    #[arg(add = clap_complete::ArgValueCompleter::new(crate::complete::targets))]
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

/// Runs the check; exit 0 only without violations (1 with, said in the report).
pub(crate) fn run(args: CheckArgs) -> Result<ExitCode, CliError> {
    let (home, target, compiler, runtime) = setup("check", &args.path, args.scope, "checking")?;
    let report = match target {
        Parsed::Run(target) => prepare_and_check(&runtime, home, compiler, &target, args.wait),
        Parsed::Untrusted(u) => CheckReport {
            untrusted: Some(u.clone()),
            ..CheckReport::failed(u.message())
        },
    };
    let ok = report.violations.is_empty();
    let printed = if args.json {
        serde_json::to_string_pretty(&report)
            .map(|text| terminal::print_line(&text))
            .context(format!("check {}", args.path))
    } else {
        print_text(&report, &args.path);
        Ok(())
    };
    runtime.shutdown_timeout(Duration::from_millis(100));
    printed?;
    Ok(if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// Compiles a component as its own step, stages a bare one, then checks the extension
/// and adds the compile step and, on failure, this run's log tail to the report.
fn prepare_and_check(
    runtime: &tokio::runtime::Runtime,
    home: ZotHome,
    compiler: Compiler,
    target: &Target,
    wait: Duration,
) -> CheckReport {
    let progress = TermProgress::new();
    // A component that cannot be compiled is reported now, not compiled again at start.
    // It never started: the problem names the file, in the layout of a start that
    // failed before any frame (not a protocol violation).
    let compiled = match target
        .component()
        .map(|f| (compile(runtime, &home, &compiler, &f, &progress), f))
    {
        Some((Err(reason), file)) => {
            let problem = format!("cannot compile {}: {reason}", file.display());
            return CheckReport {
                not_started: true,
                ..CheckReport::failed(problem)
            };
        }
        Some((Ok(step), _)) => Some(step),
        None => None,
    };
    // Lives until the check is over: dropping it removes a staged component.
    let prepared = match target.prepare(runtime, &home, &compiler, &progress) {
        Ok(prepared) => prepared,
        Err(e) => return CheckReport::failed(e),
    };
    let log = LogMark::of(&home, prepared.dir());
    let renamed = match target {
        Target::Dir(dir) => provenance::load(&home, &Identity::of(dir, &home))
            .ok()
            .flatten()
            .and_then(|record| record.rename),
        Target::Wasm(_) => None,
    };
    let config = match prepared.config(home.clone(), compiler, wait) {
        Ok(config) => config,
        Err(e) => return CheckReport::failed(e),
    };
    let mut report = runtime.block_on(check(config, renamed));
    if let Some(found) = &report.found {
        let names = |list: &[Registered]| list.iter().map(|r| r.name.clone()).collect();
        let registered = crate::complete::Registered {
            tools: names(&found.tools),
            commands: names(&found.commands),
        };
        crate::complete::remember(&home, &found.dir, registered);
    }
    drop(prepared);
    if let Some(found) = &mut report.found {
        if let Target::Wasm(file) = target {
            found.dir = std::path::absolute(file).unwrap_or_else(|_| file.clone());
        }
        found.confinement = crate::records::confinement::of(&home, &found.dir);
        found.scope = match Identity::of(&found.dir, &home) {
            Identity::Global { .. } => Source::Global,
            Identity::Project { .. } => Source::Project,
            Identity::Path { .. } => Source::Explicit,
        };
        found.mcp = Manifest::read(&found.dir).is_ok_and(|m| m.mcp.is_some());
        report.compile = Some(CompileStep {
            compile_ms: ms(compiled.map(|(took, _)| took)),
            compile_by: compiled.map(|(_, by)| by),
        });
    }
    if !report.violations.is_empty() {
        report.log_tail = Some(log.and_then(|l| l.tail(&report.violations)));
    }
    report
}

/// Compiles the component at `file` (bounded by `compiler`'s limits), or loads it from
/// the compilation cache, so that its start reuses it: how long that took and `compiled`,
/// `cache` or `shared`, or why it cannot be compiled.
fn compile(
    runtime: &tokio::runtime::Runtime,
    home: &ZotHome,
    compiler: &Compiler,
    file: &Path,
    progress: &dyn Progress,
) -> Result<(Duration, &'static str), String> {
    use zot_host::manage::component::cache::{self, Source};
    progress.begin(&format!("compiling {}", file.display()));
    let started = Instant::now();
    let loaded = zot_host::manage::component::engine().and_then(|engine| {
        runtime.block_on(cache::load(engine, file, &home.cache_dir(), compiler, None))
    });
    let took = started.elapsed();
    progress.end();
    let by = match loaded?.source {
        Source::Compiled(_) => "compiled",
        Source::Cached(_) => "cache",
        Source::Shared => "shared",
    };
    Ok((took, by))
}

fn ms(d: Option<Duration>) -> Option<f64> {
    d.map(|d| d.as_secs_f64() * 1000.0)
}

/// Loads the extension of `config` alone and reports on it. `renamed`: the name it was
/// installed under with `--name`, which its hello need not give.
async fn check(config: HostConfig, renamed: Option<String>) -> CheckReport {
    let wait = config.timeouts.ready;
    let (host, _notes) = Host::new(config);
    let report = host.load().await;
    let Some(info) = host.extensions().into_iter().next() else {
        return CheckReport::failed(
            "no extension found at that path (it needs an extension.json)".into(),
        );
    };
    let mut violations: Vec<String> = report.errors.iter().map(|e| e.error.clone()).collect();
    let mut warnings: Vec<String> = report.warnings.iter().map(|w| w.warning.clone()).collect();
    if info.state == ExtState::Disabled {
        violations.push("the manifest says \"enabled\": false".into());
    }
    let status = host.status(&info.name).unwrap_or_default();
    let not_started =
        matches!(info.state, ExtState::Disabled | ExtState::Error) && status.hello.is_none();
    violations.extend(start_violations(&info, &status, &report, wait));
    if let Some(hello) = status.hello.as_ref().filter(|h| h.name != info.name) {
        if renamed.as_deref() == Some(info.name.as_str()) {
            warnings.push(format!(
                "hello names it {:?}: it was installed as {:?} with --name, the name zot uses",
                hello.name, info.name
            ));
        } else {
            violations.push(format!(
                "hello names it {:?} but the manifest says {:?}",
                hello.name, info.name
            ));
        }
    }
    warnings.extend(slow_start(&status));
    violations.extend(status.violations.iter().cloned());
    let (commands, tools) = registered(&host);
    for name in &info.shadowed {
        violations.push(format!("{name:?} is a built-in name: shadowed"));
    }
    let started = Instant::now();
    host.shutdown().await;
    let shutdown = started.elapsed();
    let after = host.status(&info.name).unwrap_or_default();
    let exit = after.exit.map(|e| e.to_string());
    if let Some(signal) = after.forced {
        violations.push(format!(
            "did not exit within 2 s of shutdown: stopped with {signal} after {} ms",
            shutdown.as_millis()
        ));
    }
    CheckReport {
        found: Some(Found {
            name: info.name,
            version: info.version,
            transport: info.transport,
            scope: info.scope,
            mcp: false,
            dir: info.dir,
            log: info.log,
            hello: status.hello,
            hello_ms: ms(status.hello_after),
            ready_ms: ms(status.ready_after),
            ready_by: status.ready_by,
            commands,
            tools,
            events: info.events,
            intercept: info.intercept,
            shutdown_ms: shutdown.as_secs_f64() * 1000.0,
            exit,
            sandbox: info.sandbox,
            confinement: None,
        }),
        violations,
        warnings,
        not_started,
        ..CheckReport::default()
    }
}

/// What went wrong with its start: no hello, not ready, or an exit the load report does
/// not tell already.
fn start_violations(
    info: &ExtensionInfo,
    status: &Status,
    report: &LoadReport,
    wait: Duration,
) -> Vec<String> {
    let wait_text = humantime::format_duration(wait);
    let mut violations = Vec::new();
    let exited_early = info.state == ExtState::Exited;
    if exited_early {
        // The exit is the violation; what it did not get to send follows from it.
    } else if status.hello.is_none()
        && info.state != ExtState::Disabled
        && info.state != ExtState::Error
    {
        violations.push(format!(
            "no hello within --wait ({wait_text}): is stdout flushed after printing it?"
        ));
    } else if info.state == ExtState::Starting {
        violations.push(format!(
            "not ready within --wait ({wait_text}): it kept sending frames"
        ));
    }
    // An exit before ready is in the load report already.
    if exited_early && !report.errors.iter().any(|e| e.extension == info.name) {
        violations.push(format!(
            "exited during the check: {}",
            info.error.clone().unwrap_or_default()
        ));
    }
    violations
}

/// A warning when its hello or ready came late enough that `zot host` may not wait for
/// it.
fn slow_start(status: &Status) -> Option<String> {
    let normal = Timeouts::default().ready;
    let starts = [("hello", status.hello_after), ("ready", status.ready_after)];
    let later_than = |limit: Duration| {
        starts
            .iter()
            .find_map(|(what, after)| Some(*what).zip(after.filter(|t| *t > limit)))
    };
    if let Some((what, after)) = later_than(normal) {
        Some(format!(
            "slow start: {what} after {:.1} s, later than zot host's ready wait ({}); \
             zot host takes its registrations when they arrive",
            after.as_secs_f64(),
            humantime::format_duration(normal)
        ))
    } else if let Some((what, after)) = later_than(normal / 2) {
        Some(format!(
            "slow start: {what} after {:.1} s, more than half of zot host's ready wait \
             ({}): on a slower or busier machine it may come after it",
            after.as_secs_f64(),
            humantime::format_duration(normal)
        ))
    } else {
        None
    }
}

/// Its commands and tools as the report lists them.
fn registered(host: &Host) -> (Vec<Registered>, Vec<Registered>) {
    let commands = host
        .commands()
        .into_iter()
        .map(|(_, c)| Registered {
            name: c.name,
            description: c.description,
            schema: None,
        })
        .collect();
    let tools = host
        .tools()
        .into_iter()
        .map(|(_, t)| Registered {
            name: t.name,
            description: t.description,
            schema: Some(t.schema),
        })
        .collect();
    (commands, tools)
}

/// What a started extension did: hello, ready, registrations, sandbox, confinement,
/// subscriptions, shutdown.
fn write_started(out: &mut String, f: &Found, target: &str) {
    use std::fmt::Write as _;
    let ms = |m: Option<f64>| m.map_or("-".into(), |m| format!("{m:.1} ms"));
    match &f.hello {
        Some(hello) => {
            let _ = writeln!(
                out,
                "  hello      {:>9}  name \"{}\", version \"{}\", capabilities {}",
                ms(f.hello_ms),
                one_line(&hello.name),
                one_line(&hello.version),
                serde_json::to_string(&hello.capabilities).unwrap_or_default()
            );
        }
        None => {
            let _ = writeln!(out, "  hello      {:>9}  never", "-");
        }
    }
    let how = match f.ready_by {
        Some(ReadyBy::Frame) => "sent ready",
        Some(ReadyBy::Silence) => "silent for 250 ms, no ready frame",
        None => "never",
    };
    let _ = writeln!(out, "  ready      {:>9}  {how}", ms(f.ready_ms));
    for (label, prefix, list) in [("commands", "/", &f.commands), ("tools", "", &f.tools)] {
        if list.is_empty() {
            let _ = writeln!(out, "  {label:<10} (none)");
        }
        for item in list {
            let _ = writeln!(
                out,
                "  {label:<10} {prefix}{} - {}",
                one_line(&item.name),
                one_line(&item.description)
            );
        }
    }
    write_sandbox(out, f);
    if let Some(view) = &f.confinement {
        for (k, v) in crate::records::confinement::rows(target, view) {
            let _ = writeln!(out, "  {k:<10} {}", one_line(&v));
        }
    }
    let list = |v: &[String]| serde_json::to_string(v).unwrap_or_default();
    let _ = writeln!(out, "  events     {}", list(&f.events));
    let _ = writeln!(out, "  intercept  {}", list(&f.intercept));
    let _ = writeln!(
        out,
        "  shutdown   {:>9}  {}",
        ms(Some(f.shutdown_ms)),
        f.exit.as_deref().unwrap_or_default()
    );
}

/// The sandbox a started component ran in.
fn write_sandbox(out: &mut String, f: &Found) {
    use std::fmt::Write as _;
    let started = f
        .sandbox
        .as_ref()
        .and_then(|sb| Some((sb, sb.running.as_ref()?)));
    if let Some((sb, run)) = started {
        let sha256 = sb.sha256.as_deref().unwrap_or_default();
        let what = match word(&sb.component).as_str() {
            "preview1" => match &sb.built_with {
                Some(by) => format!("WASI preview-1 module built with {}", one_line(by)),
                None => "WASI preview-1 module".to_string(),
            },
            other => format!("{other} component"),
        };
        let _ = writeln!(
            out,
            "  sandbox    {what}, {} MiB memory, sha256 {}",
            run.memory_mb,
            sha256.chars().take(12).collect::<String>()
        );
        use zot_host::manage::sandbox::{Granted, Permission};
        let named = |p: &zot_host::manage::manifest::Permissions| {
            let names: Vec<String> = Permission::each_of(p)
                .iter()
                .map(|p| one_line(&p.to_string()).into_owned())
                .collect();
            match names.is_empty() {
                true => "nothing".to_string(),
                false => names.join(", "),
            }
        };
        let granted = match &sb.granted {
            Some(Granted::Applied(p)) => named(p),
            Some(Granted::Recorded(grant)) => named(&grant.permissions),
            None => "nothing beyond its data dir (no grant recorded)".to_string(),
        };
        let _ = writeln!(out, "             asks {}", named(&sb.asked));
        let _ = writeln!(out, "             granted {granted}");
        for w in &run.withheld {
            let _ = writeln!(out, "             withheld: {w}");
        }
        let stdin = match word(&sb.stdin).as_str() {
            "polled" => Some("polled: its goroutines run while it waits for a frame"),
            "blocking" => Some("blocking: it must answer each frame before reading the next"),
            _ => None,
        };
        if let Some(stdin) = stdin {
            let _ = writeln!(out, "             stdin {stdin}");
        }
    }
}

/// A unit enum as the word it serialises to (`reactor`).
fn word(value: &impl Serialize) -> String {
    match serde_json::to_value(value) {
        Ok(Value::String(word)) => word,
        _ => String::new(),
    }
}

/// The report as text, shown with `terminal_text` (each name and description on its own
/// line). Printed at once, so a closed stdout (`| head`) is not an error.
fn print_text(r: &CheckReport, target: &str) {
    use std::fmt::Write as _;
    let mut out = String::new();
    let ms = |m: Option<f64>| m.map_or("-".into(), |m| format!("{m:.1} ms"));
    if let Some(f) = &r.found {
        let version = match f.version.as_str() {
            "" => String::new(),
            v => format!(" {v}"),
        };
        let transport = match (f.mcp, f.transport) {
            (true, TransportKind::Stdio) => "mcp".to_string(),
            (true, TransportKind::Wasm) => "mcp, wasm".to_string(),
            (true, TransportKind::Remote) => "mcp, remote".to_string(),
            (false, transport) => transport.to_string(),
        };
        let _ = writeln!(
            out,
            "{}{version} ({transport}) at {}",
            f.name,
            f.dir.display()
        );
        if let Some(CompileStep {
            compile_ms,
            compile_by: Some(by),
        }) = &r.compile
        {
            let how = match *by {
                "compiled" => "compiled now, cached for the next start",
                "cache" => "from the compilation cache",
                _ => "already compiled",
            };
            let _ = writeln!(out, "  compile    {:>9}  {how}", ms(*compile_ms));
        }
        if r.not_started {
            let _ = writeln!(out, "  not started (see below)");
        } else {
            write_started(&mut out, f, target);
        }
        let _ = writeln!(out, "  log        {}", f.log.display());
    }
    for w in &r.warnings {
        let _ = writeln!(out, "warning: {w}");
    }
    if let Some(Some(tail)) = &r.log_tail {
        let _ = writeln!(out, "{}", log_tail::shown(tail));
    }
    if r.violations.is_empty() {
        let _ = writeln!(out, "ok: no protocol violations");
    } else {
        let what = if r.not_started {
            "problem(s), before any frame"
        } else {
            "protocol violation(s)"
        };
        let _ = writeln!(out, "{} {what}:", r.violations.len());
        for v in &r.violations {
            let _ = writeln!(out, "  - {v}");
        }
        let confined = r.found.as_ref().and_then(|f| f.confinement.as_ref());
        if let Some(hint) =
            confined.and_then(|c| crate::records::confinement::failure_hint(target, c))
        {
            let _ = writeln!(out, "{hint}");
        }
    }
    terminal::print_bytes(multi_line(&out).as_bytes());
}
