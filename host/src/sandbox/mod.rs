//! The sandbox: the one place that decides what a component may do. A permission is in
//! force only when the manifest asks for it **and** the user granted it; everything
//! else is denied.
//!
//! - [`policy`]: what was asked ∩ what was granted, as a [`Policy`];
//! - [`grant`], [`permission`], [`grants`]: what the user granted, how a grant widens,
//!   and where it is kept;
//! - [`grown`]: whether an updated manifest asks for more;
//! - [`wasi`]: the WASI context a [`Policy`] allows, around the transport's stdio;
//! - [`host_pattern`], [`network`]: where outgoing HTTP may go.

mod error;
pub mod grant;
pub mod grants;
pub mod grown;
pub mod host_pattern;
pub mod memory;
pub(crate) mod network;
pub mod permission;
pub mod policy;
pub mod wasi;
pub mod words;

pub use error::SandboxError;
pub use grant::Grant;
pub use grown::grown_since;
pub use host_pattern::HostPattern;
pub use memory::DEFAULT_MEMORY_MB;
pub use permission::Permission;
pub use policy::{decide, for_manifest, stale_warning, Decision, GrantState, Policy};
pub use wasi::{PreparedWasi, Stdio};
pub use words::{asked_words, granted_words};

/// Where a component sees its data directory.
pub const DATA_MOUNT: &str = "/data";
/// At most this many instances, tables and memories per component.
pub const MAX_INSTANCES: usize = 64;
/// At most this many elements in one table.
pub const MAX_TABLE_ELEMENTS: usize = 100_000;
