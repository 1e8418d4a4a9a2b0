//! `zot ext check <path>`: load one extension alone, show what it registered and how long
//! each step took, and fail on any protocol violation.

use serde_json::{json, Value};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};
use zot_host::{Host, HostConfig};

#[derive(clap::Args)]
pub(crate) struct CheckArgs {
    /// The extension's directory or its extension.json.
    path: PathBuf,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
}

/// Runs the check; exit 0 only without violations.
pub(crate) fn run(args: CheckArgs) -> ExitCode {
    let home = match super::zot_home(None) {
        Ok(h) => h,
        Err(e) => {
            eprintln!("zot: {e}");
            return ExitCode::FAILURE;
        }
    };
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    let mut config = HostConfig::new(home, cwd);
    config.explicit = vec![args.path.clone()];
    config.installed = false;
    let runtime = tokio::runtime::Runtime::new().expect("the async runtime starts");
    let report = runtime.block_on(check(config));
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

fn ms(d: Option<Duration>) -> Value {
    d.map_or(Value::Null, |d| json!(d.as_secs_f64() * 1000.0))
}

async fn check(config: HostConfig) -> Value {
    let ready_wait = config.timeouts.ready;
    let (host, _notes) = Host::new(config);
    let report = host.load().await;
    let Some(info) = host.extensions().into_iter().next() else {
        return json!({"violations": ["no extension found at that path (it needs an extension.json)"]});
    };
    let mut violations: Vec<String> = report.errors.iter().map(|e| e.error.clone()).collect();
    if info.state == "disabled" {
        violations.push("the manifest says \"enabled\": false".into());
    }
    let status = host.status(&info.name).unwrap_or_default();
    let exited_early = info.state == "exited";
    if exited_early {
        // The exit is the violation; what it did not get to send follows from it.
    } else if status.hello.is_none() && info.state != "disabled" && info.state != "error" {
        violations.push(format!("no hello within the ready wait ({ready_wait:?})"));
    } else if info.state == "starting" {
        violations.push(format!(
            "not ready within the ready wait ({ready_wait:?}): it kept sending frames"
        ));
    }
    if exited_early {
        violations.push(format!(
            "exited during the check: {}",
            info.error.clone().unwrap_or_default()
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
                &sb["sha256"].as_str().unwrap_or_default()[..12]
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
