//! The zot extension host as a library: discovery, the protocol core, the transports
//! (stdio subprocesses and sandboxed WebAssembly components), the sandbox; and, in
//! [`manage`], what the `zot` command uses to install extensions and keep the user's
//! trust and grant records.
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
//! use zot_host::{Host, HostConfig, HostEvent, ZotHome};
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
//! **From synchronous code**, `runtime.block_on(host.call_tool(…))` from a thread of
//! your own works, and the library watches for the reply for a few microseconds before
//! that thread parks (so it is not woken across CPUs on each call). Fastest of all is
//! code that is already a task of the runtime (`runtime.spawn`), or a current-thread
//! runtime whose `block_on` makes the calls, where the reply is read on the caller's own
//! thread; but a current-thread runtime runs the host only inside its `block_on`, so
//! between calls nothing reads the extensions (their notifications wait, a restart waits).
//! Figures for each: `docs/benchmarks.md`.
//!
//! How the modules fit together: `docs/architecture.md`.

// What an embedding agent uses: the host, its configuration, what it reports
// (`tests/it/library.rs` uses each, as an embedder would; `host/tests/architecture`
// checks that it does).
pub use budget::Timeouts;
pub use discovery::Source;
pub use events::HostEvent;
pub use extension::{CallError, ReadyBy, Status, EVENT_QUEUE};
pub use host::{
    CallOptions, ExtState, ExtensionInfo, Host, HostConfig, InterceptStep, LoadError, LoadReport,
    LoadWarning, RestartInfo, RestartPolicy, UntrustedReport, Verdict,
};
pub use manifest::TransportKind;
pub use paths::ZotHome;
pub use records::trust::Untrusted;
pub use records::Permission;
pub use sandbox::view::SandboxView;
pub use sandbox::RunGrant;
pub use util::terminal_text;

/// How components are compiled: in a child of this program under limits (call
/// [`compile::child_if_asked`] first thing in `main`), or as chosen in
/// [`HostConfig::compiler`].
pub mod compile {
    pub use crate::component::compile::{child_if_asked, CompileLimits, CompileMode, Compiler};
}
#[cfg(any(test, fuzzing))]
pub mod fuzzing;
pub mod launcher;
pub mod manage;
pub mod schema;
pub mod transport;

// The internals, in layers (`docs/architecture.md`; `host/tests/architecture` checks them).
mod budget;
mod caps;
mod component;
mod confine;
mod discovery;
mod events;
mod extension;
mod host;
mod identity;
mod log;
mod manifest;
mod paths;
mod records;
mod registry;
mod sandbox;
mod util;
