//! The confinement of a build at install (`zot ext install` of a source whose program is
//! not built): the system and the toolchain read-only; writable only the staging copy
//! it builds in and the build's own cache; the network only for a step that fetches
//! packages, and then only HTTPS (TCP 443) and name lookups.

use super::{Network, Policy, DEVICES};
use std::os::fd::OwnedFd;
use std::path::PathBuf;
use std::sync::Arc;

/// The one port a fetch step may connect to: HTTPS, what Go's module proxy, crates.io
/// and the npm registry are reached by.
pub const FETCH_PORTS: &[u16] = &[443];

/// The confinement of one build step: `toolchain` (folders and files) read-only beside
/// the system, `writable` (the staging copy, the build's cache) as handles opened
/// without following links, and the network when the step `fetches`.
pub fn policy_for_build(
    toolchain: &[PathBuf],
    writable: Vec<Arc<OwnedFd>>,
    fetches: bool,
) -> Policy {
    let mut read_only = super::system::paths();
    read_only.extend(toolchain.iter().cloned());
    Policy {
        read_only,
        read_write: writable,
        devices: DEVICES.iter().map(PathBuf::from).collect(),
        network: match fetches {
            true => Network::Fetch(FETCH_PORTS.to_vec()),
            false => Network::Off,
        },
        memory_mb: None,
        file_mb: None,
        require: false,
    }
}
