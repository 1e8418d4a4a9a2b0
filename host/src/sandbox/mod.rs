//! The sandbox: the one place that decides what a component may do. A permission is in
//! force only when the manifest asks for it **and** the user granted it; everything
//! else is denied.
//!
//! - [`policy`]: what was asked ∩ what was granted, as a [`Policy`];
//! - what the user granted (`Grant`, `Permission`) and where it is kept are the user's
//!   records, [`crate::records`];
//! - [`run_grant`]: what the user grants on the command line for one run;
//! - [`grown`]: whether an updated manifest asks for more;
//! - [`wasi`]: the WASI context a [`Policy`] allows, around the transport's stdio;
//! - [`network`] (and [`HostPattern`]): where outgoing HTTP may go, and [`connect`]:
//!   connecting to exactly there;
//! - the words both a manifest and a grant are written in — [`Caps`], [`Limit`],
//!   [`HostPattern`], [`SandboxError`] — live below the manifest, in [`crate::caps`].

pub(crate) mod connect;
pub mod grown;
pub(crate) mod network;
pub mod policy;
pub mod run_grant;
pub mod view;
pub mod wasi;
pub mod words;

pub use crate::caps::{Caps, HostPattern, InForce, Limit, SandboxError, DEFAULT_MEMORY_MB};
pub use grown::grown_since;
pub use policy::{for_manifest, stale_warning, GrantState, Policy};
pub use run_grant::RunGrant;
pub use wasi::{PreparedWasi, Stdio};
pub use words::{asked_words, granted_words};

/// Where a component sees its data directory.
pub const DATA_MOUNT: &str = "/data";
/// At most this many instances, tables and memories per component.
pub const MAX_INSTANCES: usize = 64;
/// At most this many elements in one table.
pub const MAX_TABLE_ELEMENTS: usize = 100_000;

/// Raises the process's soft limit of open files to its hard limit, once, so the
/// per-component caps (`limits.resources`), not the process limit, are what a component
/// reaches: one component opening files until the process has none left would make
/// every other extension's file I/O fail. Returns the limit now in force.
pub fn raise_fd_limit() -> Option<u64> {
    static RAISED: std::sync::OnceLock<Option<u64>> = std::sync::OnceLock::new();
    *RAISED.get_or_init(|| {
        let mut lim = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: getrlimit/setrlimit only read and write the struct passed.
        unsafe {
            if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) != 0 {
                return None;
            }
            if lim.rlim_cur < lim.rlim_max {
                let raised = libc::rlimit {
                    rlim_cur: lim.rlim_max,
                    rlim_max: lim.rlim_max,
                };
                if libc::setrlimit(libc::RLIMIT_NOFILE, &raised) == 0 {
                    lim = raised;
                }
            }
        }
        #[allow(clippy::unnecessary_cast)] // `rlim_t` is not `u64` everywhere.
        Some(lim.rlim_cur as u64)
    })
}
