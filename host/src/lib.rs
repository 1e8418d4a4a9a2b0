//! The zot extension host as a library: discovery, the protocol core, the transports
//! (stdio subprocesses and sandboxed WebAssembly components), the sandbox, install.
//!
//! It knows nothing of terminals or of the `zot` command (the `zot-cli` crate adapts it).
//! Start with [`Host`]: [`Host::new`] gives the host and its notification stream,
//! [`Host::load`] starts the extensions, then [`Host::call_tool`],
//! [`Host::invoke_command`], [`Host::emit`], [`Host::intercept`], [`Host::reload`] and
//! [`Host::shutdown`]. An agent embeds it like this; its `main` first calls
//! [`compile::child_if_asked`], so that components compile in a child of the agent, under
//! limits:
//!
//! ```no_run
//! use serde_json::json;
//! use zot_host::paths::ZotHome;
//! use zot_host::{Host, HostConfig, HostEvent};
//!
//! fn main() -> std::process::ExitCode {
//!     // First thing: in the child process the host starts to compile a component
//!     // (under memory, CPU and wall limits), compile it and exit. Without this call no
//!     // component compiles; `HostConfig::compiler = Compiler::in_process()` compiles
//!     // without limits, for a program that runs only components it trusts.
//!     if let Some(code) = zot_host::compile::child_if_asked() {
//!         return code;
//!     }
//!     let runtime = tokio::runtime::Runtime::new().expect("a tokio runtime");
//!     match runtime.block_on(agent()) {
//!         Ok(()) => std::process::ExitCode::SUCCESS,
//!         Err(e) => {
//!             eprintln!("{e}");
//!             std::process::ExitCode::FAILURE
//!         }
//!     }
//! }
//!
//! async fn agent() -> Result<(), String> {
//!     let cwd = std::env::current_dir().map_err(|e| e.to_string())?;
//!     let config = HostConfig::new(ZotHome::from_env()?, cwd);
//!     let (host, mut notes) = Host::new(config);
//!     // Discovers $ZOT_HOME/extensions and ./.zot/extensions; a project's own extensions
//!     // start only once the user trusts them (`zot ext trust`), or with
//!     // `HostConfig::trust_project` for an agent that asks the user itself.
//!     let report = host.load().await;
//!     for error in &report.errors {
//!         eprintln!("extension {} did not load: {}", error.extension, error.error);
//!     }
//!     for u in &report.untrusted {
//!         eprintln!("extension {}: {}", u.extension, u.untrusted.message());
//!     }
//!     // Offer the extensions' tools to the model ...
//!     for (extension, tool) in host.tools() {
//!         println!("{} (from {extension}): {}", tool.name, tool.description);
//!     }
//!     // ... ask the interceptors before running a tool the model chose ...
//!     let event = zot_protocol::Event {
//!         id: None,
//!         event: "tool_call".into(),
//!         fields: json!({"tool_id": "1", "tool_name": "weather",
//!                        "tool_args": {"city": "Berlin"}})
//!             .as_object()
//!             .cloned()
//!             .unwrap_or_default(),
//!     };
//!     let verdict = host.intercept(event).await;
//!     if !verdict.block {
//!         let args = verdict.modified_args.unwrap_or(json!({"city": "Berlin"}));
//!         let (_extension, result) = host
//!             .call_tool("weather", args, None)
//!             .await
//!             .map_err(|e| e.to_string())?;
//!         println!("{:?}", result.content);
//!     }
//!     // ... and show what extensions tell the user.
//!     tokio::spawn(async move {
//!         while let Some(note) = notes.recv().await {
//!             if let HostEvent::Notify { extension, frame } = note {
//!                 println!("[{extension}] {}", frame.message);
//!             }
//!         }
//!     });
//!     host.shutdown().await;
//!     Ok(())
//! }
//! ```
//!
//! How the modules fit together: `docs/architecture.md`.

pub mod bridge;
pub mod budget;
pub mod component;
pub mod discovery;
pub mod events;
pub mod extension;
pub mod host;
pub mod identity;
#[cfg(test)]
mod import_graph;
pub mod install;
pub mod launcher;
pub mod log;
pub mod manifest;
mod nearest;
pub mod paths;
mod registry;
pub mod safe_write;
pub mod sandbox;
pub mod sandbox_view;
pub mod terminal_text;
pub mod transport;
mod tree;
pub mod trust;

pub use component::{cache, compile};
pub use events::HostEvent;
pub use extension::{CallError, Phase, Status};
pub use host::{
    ExtState, ExtensionInfo, Host, HostConfig, InterceptStep, LoadReport, LoadWarning, Timeouts,
    UntrustedReport, Verdict,
};
pub use registry::Owned;
