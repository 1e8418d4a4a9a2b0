//! The flags that say what a run loads and what it grants, shared by every command that
//! loads extensions: [`LoadArgs`] (`--only`, `--no-global`, `--no-project`: `zot host`,
//! `zot ext shell`, `zot ext dev`) and [`RunGrantArgs`] (`--allow-env`, `--allow-http`,
//! `--allow-read-cwd`, `--memory`: `call`, `invoke`, `shell`, `dev`, `run`). Each only
//! sets [`HostConfig`]; the library decides (`SearchPath::searches`,
//! `RunGrant::applies_to`).

use crate::output::error::note;
use std::path::PathBuf;
use zot_host::manage::discovery::{discover, SearchPath};
use zot_host::manage::manifest::{Manifest, TransportKind};
use zot_host::HostConfig;
use zot_host::{Permission, RunGrant};

/// Which installed extensions load beside the `--ext` ones.
#[derive(clap::Args, Debug, Clone, Default)]
pub(crate) struct LoadArgs {
    /// Load only the extensions named with --ext (or the folder of `zot ext dev`):
    /// nothing installed, project or global.
    #[arg(long)]
    only: bool,
    /// Do not load the global extensions ($ZOT_HOME/extensions).
    #[arg(long)]
    no_global: bool,
    /// Do not load the project's extensions (.zot/extensions).
    #[arg(long)]
    no_project: bool,
}

impl LoadArgs {
    /// Sets what `config` loads.
    pub(crate) fn apply(&self, config: &mut HostConfig) {
        config.installed = !self.only;
        config.project = !self.no_project;
        config.global = !self.no_global;
    }
}

/// What the user grants the components named on the command line, for this run only.
#[derive(clap::Args, Debug, Clone, Default)]
pub(crate) struct RunGrantArgs {
    /// For this run only, let the component read the environment variable NAME (as if
    /// its manifest asked and `zot ext grant -p env:NAME` granted it; nothing is
    /// stored). Repeatable.
    #[arg(long, value_name = "NAME", value_parser = env_permission)]
    allow_env: Vec<Permission>,
    /// For this run only, let the component make HTTP requests to PATTERN, written as
    /// the manifest's `permissions.http` (`api.example.com`, `*.example.com`,
    /// `http://127.0.0.1:8080`). Repeatable.
    #[arg(long, value_name = "PATTERN", value_parser = http_permission)]
    allow_http: Vec<Permission>,
    /// For this run only, let the component read (not write) the project directory.
    #[arg(long)]
    allow_read_cwd: bool,
    /// For this run only, the component's memory limit in MiB (1 to 4096; lower or
    /// higher than its manifest asks).
    #[arg(long, value_name = "MB", value_parser = memory_permission)]
    memory: Option<Permission>,
}

fn env_permission(name: &str) -> Result<Permission, String> {
    run_permission(Permission::Env(name.to_string()))
}

fn http_permission(pattern: &str) -> Result<Permission, String> {
    format!("http:{pattern}")
        .parse()
        .map_err(|e: zot_host::manage::sandbox::SandboxError| e.to_string())
}

fn memory_permission(mb: &str) -> Result<Permission, String> {
    format!("memory:{mb}")
        .parse()
        .map_err(|e: zot_host::manage::sandbox::SandboxError| e.to_string())
}

/// `permission` if a run may grant it.
fn run_permission(permission: Permission) -> Result<Permission, String> {
    let mut probe = RunGrant::default();
    probe.add(permission.clone()).map_err(|e| e.to_string())?;
    Ok(permission)
}

impl RunGrantArgs {
    /// The run's grant.
    pub(crate) fn run_grant(&self) -> RunGrant {
        let mut run = RunGrant::default();
        let cwd = self.allow_read_cwd.then_some(Permission::Cwd);
        let all = self.allow_env.iter().chain(&self.allow_http).cloned();
        for permission in all.chain(cwd).chain(self.memory.clone()) {
            // Each was checked when it was parsed.
            let _ = run.add(permission);
        }
        run
    }

    /// Sets the run's grant in `config`, and says on stderr what it grants to each
    /// extension named on the command line (`zot: this run grants NAME: env:KEY`), or
    /// that it means nothing for a classic one (a program, not sandboxed).
    pub(crate) fn apply(&self, config: &mut HostConfig) {
        config.run_grant = self.run_grant();
        announce(&config.run_grant, &config.explicit, config);
    }
}

/// Says what `run` grants each extension at `explicit`.
fn announce(run: &RunGrant, explicit: &[PathBuf], config: &HostConfig) {
    if run.is_empty() {
        return;
    }
    let found = discover(&SearchPath {
        explicit: explicit.to_vec(),
        cwd: config.cwd.clone(),
        home: config.home.clone(),
        installed: false,
        project: false,
        global: false,
        trust_project: false,
    });
    let named: Vec<&Manifest> = found
        .found
        .iter()
        .filter_map(|f| f.manifest.as_ref().ok())
        .collect();
    if named.is_empty() {
        note(format_args!(
            "warning: {} granted for this run, but no extension is named on the command \
             line: installed extensions never get a run's grants",
            run.words()
        ));
    }
    for m in named {
        announce_one(run, m);
    }
}

/// Says what `run` grants the extension of manifest `m`.
pub(crate) fn announce_one(run: &RunGrant, m: &Manifest) {
    if run.is_empty() {
        return;
    }
    match m.transport() {
        TransportKind::Wasm => note(format_args!(
            "this run grants {}: {}",
            m.name,
            run.granted_words()
        )),
        TransportKind::Remote => {
            let http: Vec<String> = run
                .permissions()
                .iter()
                .filter(|p| matches!(p, Permission::Http(_)))
                .map(ToString::to_string)
                .collect();
            note(format_args!(
                "this run grants {} (a remote MCP server): {}; only HTTP to its URL's host \
                 means anything for it",
                m.name,
                if http.is_empty() {
                    "nothing it uses".to_string()
                } else {
                    http.join(", ")
                }
            ))
        }
        TransportKind::Stdio => note(format_args!(
            "warning: {} is a classic extension (a program run with your rights, not \
             sandboxed): {} means nothing for it",
            m.name,
            run.words()
        )),
    }
}
