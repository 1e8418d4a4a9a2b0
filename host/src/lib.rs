//! The zot extension host library: discovery, the protocol core, transports.
//!
//! It knows nothing of terminals or of the `zot` CLI; `zot host` and `zot ext` adapt it.

pub mod discovery;
pub mod install;
pub mod manifest;
pub mod paths;
