//! A confined classic extension gets what a component would be granted, in the same
//! words: the decision of `sandbox::policy` (data dir, `read:cwd`, `env:NAME`, `http`
//! entries) becomes Landlock paths, TCP ports and the environment.

use super::{Network, Policy, DEVICES};
use crate::sandbox::Policy as Decided;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Where a confined extension lives: its folder, its program, its data dir (always
/// writable and its `HOME`, as a classic extension's data dir is always given: its path,
/// and the handle its rule is made from) and its private temp dir inside it (made by the
/// caller).
pub struct Place<'a> {
    pub ext_dir: &'a Path,
    pub program: &'a Path,
    pub data_dir: &'a Path,
    pub data_handle: Arc<OwnedFd>,
    pub tmp_dir: &'a Path,
}

/// The confinement of an extension at `place`, with `decided` (its grant as for a
/// component) and `memory_mb` and `disk_mb` in force for it; and the environment it
/// gets. A granted `http://host:port` is only its port: Landlock filters TCP by port,
/// not by name.
pub fn policy_for(
    decided: &Decided,
    place: &Place<'_>,
    (memory_mb, disk_mb): (u64, u64),
    require: bool,
    host_env: impl Fn(&str) -> Option<String>,
) -> (Policy, Vec<(String, String)>) {
    let Place {
        ext_dir,
        program,
        data_dir,
        ref data_handle,
        tmp_dir,
    } = *place;
    let mut read_only = super::system::paths();
    read_only.push(ext_dir.to_path_buf());
    // A program outside the system folders (`~/.local/bin/tool`): that file alone, as it
    // resolves, read-only — never its folder, which a manifest could point anywhere
    // (`"exec": "/home/me/.ssh/../bin/x"`).
    if program.components().count() > 1 {
        if let Ok(file) = std::fs::canonicalize(program) {
            read_only.push(file);
        }
    }
    if let Some(cwd) = &decided.cwd {
        read_only.push(cwd.clone());
    }
    let read_write = vec![data_handle.clone()];
    let mut ports: Vec<u16> = decided
        .http
        .iter()
        .map(crate::caps::HostPattern::port_or_default)
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
            memory_mb: Some(memory_mb),
            file_mb: Some(disk_mb),
            require,
        },
        env,
    )
}
