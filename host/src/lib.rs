//! The zot extension host as a library: discovery, the protocol core, the transports
//! (stdio subprocesses and sandboxed WebAssembly components), the sandbox, install.
//!
//! It knows nothing of terminals or of the `zot` command (the `zot-cli` crate adapts it).
//! Start with [`Host`]: [`Host::new`] gives the host and its notification stream,
//! [`Host::load`] starts the extensions, then [`Host::call_tool`],
//! [`Host::invoke_command`], [`Host::emit`], [`Host::intercept`], [`Host::reload`] and
//! [`Host::shutdown`]. An agent embeds it like this:
//!
//! ```no_run
//! use serde_json::json;
//! use zot_host::paths::ZotHome;
//! use zot_host::{Host, HostConfig, HostEvent};
//!
//! # async fn agent() -> Result<(), String> {
//! let config = HostConfig::new(ZotHome::from_env()?, std::env::current_dir().map_err(|e| e.to_string())?);
//! let (host, mut notes) = Host::new(config);
//! // Discovers $ZOT_HOME/extensions and ./.zot/extensions; a project's own extensions
//! // start only once the user trusts them (`zot ext trust`), or with
//! // `HostConfig::trust_project` for an agent that asks the user itself.
//! let report = host.load().await;
//! for error in &report.errors {
//!     eprintln!("extension {} did not load: {}", error.extension, error.error);
//! }
//! for u in &report.untrusted {
//!     eprintln!("extension {}: {}", u.extension, u.untrusted.message());
//! }
//! // Offer the extensions' tools to the model ...
//! for (extension, tool) in host.tools() {
//!     println!("{} (from {extension}): {}", tool.name, tool.description);
//! }
//! // ... ask the interceptors before running a tool the model chose ...
//! let event = zot_protocol::Event {
//!     id: None,
//!     event: "tool_call".into(),
//!     fields: json!({"tool_id": "1", "tool_name": "weather", "tool_args": {"city": "Berlin"}})
//!         .as_object()
//!         .cloned()
//!         .unwrap_or_default(),
//! };
//! let verdict = host.intercept(event).await;
//! if !verdict.block {
//!     let args = verdict.modified_args.unwrap_or(json!({"city": "Berlin"}));
//!     let (_extension, result) = host
//!         .call_tool("weather", args, None)
//!         .await
//!         .map_err(|e| e.to_string())?;
//!     println!("{:?}", result.content);
//! }
//! // ... and show what extensions tell the user.
//! tokio::spawn(async move {
//!     while let Some(note) = notes.recv().await {
//!         if let HostEvent::Notify { extension, frame } = note {
//!             println!("[{extension}] {}", frame.message);
//!         }
//!     }
//! });
//! host.shutdown().await;
//! # Ok(())
//! # }
//! ```
//!
//! How the modules fit together: `docs/architecture.md`.

// What an embedding agent uses: the host, its configuration, what it reports.
pub use budget::Timeouts;
pub use component::compile::{CompileLimits, Compiler};
pub use discovery::Source;
pub use events::HostEvent;
pub use extension::{CallError, Phase, ReadyBy, Status, EVENT_QUEUE};
pub use host::{
    ExtState, ExtensionInfo, Host, HostConfig, InterceptStep, LoadError, LoadReport, LoadWarning,
    UntrustedReport, Verdict,
};
pub use manifest::TransportKind;
pub use paths::ZotHome;
pub use registry::Owned;
pub use sandbox::{Permission, RunGrant};
pub use sandbox_view::SandboxView;
pub use trust::Untrusted;

pub mod launcher;
pub mod manage;
pub mod terminal_text;
pub mod transport;

// The internals, in layers (`docs/architecture.md`; `import_graph` checks them).
mod budget;
mod caps;
mod component;
mod discovery;
mod events;
mod extension;
mod host;
mod identity;
#[cfg(test)]
mod import_graph;
mod log;
mod manifest;
mod nearest;
mod paths;
mod registry;
mod safe_write;
mod sandbox;
mod sandbox_view;
mod tree;
mod trust;
