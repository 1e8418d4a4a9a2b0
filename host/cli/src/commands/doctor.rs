//! `zot doctor`: what this machine has of what zot and its extensions use — its state
//! folder, the SDKs `zot ext new` scaffolds on, the toolchains extensions are built with
//! (and their WebAssembly targets), confinement, the compilation cache — each found, or
//! missing with how to get it.

use crate::flags::sdk::{sdk_dir, Sdk};
use crate::output::error::CliError;
use crate::output::terminal;
use serde::Serialize;
use std::path::Path;
use std::process::ExitCode;
use zot_host::manage::install::build::Toolchain;
use zot_host::terminal_text::one_line;
use zot_host::ZotHome;

#[derive(clap::Args)]
pub(crate) struct DoctorArgs {
    /// Print the findings as JSON: `[{"what", "ok", "found", "get"}]`.
    #[arg(long)]
    json: bool,
}

/// One thing looked for.
#[derive(Serialize)]
struct Finding {
    what: &'static str,
    /// Found (and usable).
    ok: bool,
    /// What was found (a version, a path) or why it is not usable.
    found: String,
    /// Missing: how to get it, and what needs it.
    #[serde(skip_serializing_if = "Option::is_none")]
    get: Option<String>,
    /// zot itself needs it (else only some extensions do): missing, `doctor` exits 1.
    #[serde(skip)]
    needed: bool,
}

impl Finding {
    fn found(what: &'static str, found: String) -> Finding {
        Finding {
            what,
            ok: true,
            found,
            get: None,
            needed: false,
        }
    }

    fn missing(what: &'static str, found: String, get: String) -> Finding {
        Finding {
            what,
            ok: false,
            found,
            get: Some(get),
            needed: false,
        }
    }
}

/// Looks for everything, prints it; exit 1 when something zot itself needs is missing.
pub(crate) fn run(args: DoctorArgs) -> Result<ExitCode, CliError> {
    let mut findings = vec![home()];
    findings.extend(sdks());
    findings.extend(toolchains());
    findings.push(confinement());
    let broken = findings.iter().any(|f| f.needed && !f.ok);
    if args.json {
        let text = serde_json::to_string_pretty(&findings).unwrap_or_default();
        terminal::print_line(&text);
    } else {
        say!(
            "zot {} (commit {})",
            env!("CARGO_PKG_VERSION"),
            env!("ZOT_COMMIT")
        );
        let width = findings.iter().map(|f| f.what.len()).max().unwrap_or(0);
        for f in &findings {
            let mark = if f.ok { "ok     " } else { "missing" };
            say!("{mark}  {:<width$}  {}", f.what, one_line(&f.found));
            if let Some(get) = &f.get {
                say!("         {:<width$}  {}", "", one_line(get));
            }
        }
    }
    Ok(if broken {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

/// `$ZOT_HOME`: where it is, and that zot can write there; and its compilation cache.
fn home() -> Finding {
    let home = match ZotHome::from_env() {
        Ok(home) => home,
        Err(why) => {
            let mut f = Finding::missing(
                "ZOT_HOME",
                why,
                "set ZOT_HOME to a folder zot may keep its state in".into(),
            );
            f.needed = true;
            return f;
        }
    };
    let root = home.root();
    let writable = std::fs::create_dir_all(root).and_then(|()| {
        let probe = root.join(format!(".doctor-{}", std::process::id()));
        std::fs::write(&probe, b"").and_then(|()| std::fs::remove_file(&probe))
    });
    let cache = folder_size(&root.join("cache"));
    let mut f = match writable {
        Ok(()) => Finding::found(
            "ZOT_HOME",
            format!(
                "{} (the compilation cache: {} MiB)",
                root.display(),
                cache >> 20
            ),
        ),
        Err(e) => Finding::missing(
            "ZOT_HOME",
            format!("{}: cannot write there: {e}", root.display()),
            "make it writable, or set ZOT_HOME to a folder that is".into(),
        ),
    };
    f.needed = true;
    f
}

/// The bytes of the regular files below `dir` (links not followed), at most 4 levels.
fn folder_size(dir: &Path) -> u64 {
    fn walk(dir: &Path, depth: u8) -> u64 {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return 0;
        };
        entries
            .flatten()
            .map(|e| match e.file_type() {
                Ok(t) if t.is_file() => e.metadata().map_or(0, |m| m.len()),
                Ok(t) if t.is_dir() && depth > 0 => walk(&e.path(), depth - 1),
                _ => 0,
            })
            .sum()
    }
    walk(dir, 4)
}

/// The SDKs `zot ext new` scaffolds on.
fn sdks() -> Vec<Finding> {
    [
        ("SDK zot-ext (Rust)", Sdk::Rust),
        ("SDK @zot/ext (TypeScript)", Sdk::Ts),
    ]
    .into_iter()
    .map(|(what, which)| match sdk_dir(None, which) {
        Ok(dir) => Finding::found(what, dir.display().to_string()),
        Err(why) => Finding::missing(
            what,
            why,
            "`zot ext new --lang rust|typescript` needs it: pass --sdk PATH (guest-sdk/ of \
             the zot sources)"
                .into(),
        ),
    })
    .collect()
}

/// The toolchains extensions are written and built with, and their WebAssembly targets.
fn toolchains() -> Vec<Finding> {
    let tool = |what: &'static str, found: Result<Toolchain, _>, needs: &str| match found {
        Ok(t) => Finding::found(what, t.version),
        Err(zot_host::manage::install::InstallError::NoToolchain { get, .. }) => {
            Finding::missing(what, "not found".into(), format!("{get} ({needs})"))
        }
        Err(e) => Finding::missing(what, e.to_string(), needs.to_string()),
    };
    let program =
        |what: &'static str, name: &str, get: &str, needs: &str| match std::process::Command::new(
            name,
        )
        .arg("--version")
        .output()
        {
            Ok(out) if out.status.success() => {
                let text = String::from_utf8_lossy(&out.stdout);
                let text = if text.trim().is_empty() {
                    String::from_utf8_lossy(&out.stderr).into_owned()
                } else {
                    text.into_owned()
                };
                Finding::found(what, text.lines().next().unwrap_or("").trim().to_string())
            }
            _ => Finding::missing(what, "not found".into(), format!("{get} ({needs})")),
        };
    vec![
        program(
            "python3",
            "python3",
            "install Python 3 (https://www.python.org)",
            "Python extensions, `zot ext new --lang python`",
        ),
        tool(
            "node, npm",
            Toolchain::npm(),
            "Node and TypeScript extensions and their builds",
        ),
        tool(
            "go",
            Toolchain::go(),
            "Go extensions, and installing a Go source, natively or --wasm",
        ),
        tool(
            "cargo",
            Toolchain::cargo(false),
            "Rust extensions, `zot ext new --lang rust`",
        ),
        tool(
            "cargo wasm32-wasip2",
            Toolchain::cargo(true),
            "Rust components, `zot ext new --lang rust --wasm`, install --wasm",
        ),
        program(
            "git",
            "git",
            "install git (https://git-scm.com)",
            "`zot ext install <git-url>` and `update` of one",
        ),
    ]
}

/// Whether a classic extension can be confined here, and how much of it this kernel
/// enforces.
fn confinement() -> Finding {
    #[cfg(target_os = "linux")]
    {
        let (abi, rules) = zot_host::manage::confine::kernel_report(&Default::default());
        let not: Vec<&str> = rules
            .iter()
            .filter(|r| r.not_enforced.is_some())
            .map(|r| r.what)
            .collect();
        let found = match not.as_slice() {
            [] => format!("Landlock ABI {abi}: every rule enforced"),
            not => format!("Landlock ABI {abi}: not enforced here: {}", not.join("; ")),
        };
        match abi {
            0 => Finding::missing(
                "confinement",
                found,
                "`zot ext confine` needs Landlock (Linux 5.13 or later, `lsm=…,landlock`)".into(),
            ),
            _ => Finding::found("confinement", found),
        }
    }
    #[cfg(not(target_os = "linux"))]
    {
        Finding::missing(
            "confinement",
            "not on this system".into(),
            "`zot ext confine` needs Linux (Landlock and seccomp)".into(),
        )
    }
}
