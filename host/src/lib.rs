//! The zot extension host library: discovery, the protocol core, transports.
//!
//! It knows nothing of terminals or of the `zot` CLI; `zot host` and `zot ext` adapt it.
//! Start with [`Host`]: `Host::new(config)` gives the host and its notification stream,
//! `load()` starts the extensions, then `call_tool`, `invoke_command`, `emit`,
//! `intercept`, `reload` and `shutdown`.

pub mod bridge;
pub mod cache;
pub mod discovery;
pub mod events;
pub mod extension;
pub mod filetype;
pub mod host;
pub mod install;
pub mod launcher;
pub mod log;
pub mod manifest;
pub mod paths;
mod registry;
pub mod sandbox;
pub mod transport;

pub use events::HostEvent;
pub use extension::{CallError, Phase, Status};
pub use host::{ExtState, ExtensionInfo, Host, HostConfig, LoadReport, Timeouts, Verdict};
pub use registry::Owned;
