//! The confinement of a build at install (`zot ext install` of a source whose program is
//! not built): the system and the toolchain read-only; writable only the staging copy
//! it builds in and the build's own cache; the network only for a step that fetches
//! packages, and then only the ports it is given (HTTPS) and name lookups.

use super::{Network, Policy, DEVICES};
use std::os::fd::OwnedFd;
use std::path::PathBuf;
use std::sync::Arc;

/// The confinement of one build step: `toolchain` (folders and files) read-only beside
/// the system, `writable` (the staging copy, the build's cache) as handles opened
/// without following links, and, for a step that fetches, TCP connections to
/// `fetch_ports` and name lookups.
pub fn policy_for_build(
    toolchain: &[PathBuf],
    writable: Vec<Arc<OwnedFd>>,
    fetch_ports: Option<&[u16]>,
) -> Policy {
    let mut read_only = super::system::paths();
    read_only.extend(toolchain.iter().cloned());
    Policy {
        read_only,
        read_write: writable,
        devices: DEVICES.iter().map(PathBuf::from).collect(),
        network: match fetch_ports {
            Some(ports) => Network::Fetch(ports.to_vec()),
            None => Network::Off,
        },
        memory_mb: None,
        file_mb: None,
        require: false,
    }
}
