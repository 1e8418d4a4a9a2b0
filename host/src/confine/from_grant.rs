//! A confined classic extension gets what a component would be granted, in the same
//! words: the decision of `sandbox::policy` (data dir, `read:cwd`, `env:NAME`, `http`
//! entries) becomes Landlock paths, TCP ports and the environment.

use super::{Network, Policy, DEVICES, SYSTEM};
use crate::sandbox::Policy as Decided;
use std::path::{Path, PathBuf};

/// The confinement of an extension in `ext_dir` running `program`, with `decided` (its
/// grant as for a component), `data_dir` (its own, always writable and its `HOME`, as a
/// classic extension's data dir is always given) and `tmp_dir` (its private temp dir,
/// made by the caller); and the environment it gets. A granted `http://host:port` is
/// only its port: Landlock filters TCP by port, not by name.
pub fn policy_for(
    decided: &Decided,
    ext_dir: &Path,
    program: &Path,
    data_dir: &Path,
    tmp_dir: &Path,
    require: bool,
    host_env: impl Fn(&str) -> Option<String>,
) -> (Policy, Vec<(String, String)>) {
    let mut read_only: Vec<PathBuf> = SYSTEM.iter().map(PathBuf::from).collect();
    read_only.push(ext_dir.to_path_buf());
    // A program outside the system folders (a venv, ~/.local/bin): its folder, read-only.
    if let Some(folder) = program.parent().filter(|p| !p.as_os_str().is_empty()) {
        read_only.push(folder.to_path_buf());
    }
    if let Some(cwd) = &decided.cwd {
        read_only.push(cwd.clone());
    }
    let read_write = vec![data_dir.to_path_buf(), tmp_dir.to_path_buf()];
    let mut ports: Vec<u16> = decided
        .http
        .iter()
        .map(|h| h.port.unwrap_or(if h.scheme == "https" { 443 } else { 80 }))
        .collect();
    ports.sort_unstable();
    ports.dedup();
    let network = if ports.is_empty() {
        Network::Off
    } else {
        Network::TcpPorts(ports)
    };
    let env = super::environment(data_dir, tmp_dir, host_env, &decided.env);
    (
        Policy {
            read_only,
            read_write,
            devices: DEVICES.iter().map(PathBuf::from).collect(),
            network,
            require,
        },
        env,
    )
}
