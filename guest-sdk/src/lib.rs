//! Write zot extensions in Rust. One source builds two ways, with no `cfg` in your code:
//!
//! - `cargo build`: a native executable, a classic extension the host runs as a
//!   subprocess speaking frames over stdin/stdout (`"exec"` in `extension.json`);
//! - `cargo build --target wasm32-wasip2`: a WASI command component that the host runs
//!   in its sandbox with the very same frames on the component's stdin/stdout (`"wasm"`
//!   in `extension.json`), with only the permissions the user granted.
//!
//! ```no_run
//! use serde::Deserialize;
//! use zot_ext::{Extension, Response, ToolOutput, Verdict};
//!
//! /// Arguments of the `shout` tool; the doc comments end up in its JSON Schema.
//! #[derive(Deserialize, schemars::JsonSchema)]
//! struct Shout {
//!     /// What to shout.
//!     text: String,
//! }
//!
//! fn main() {
//!     Extension::new("hello", "0.1.0")
//!         .command("hello", "Say hello", |_ctx, args| {
//!             Response::prompt(format!("Greet {args} in one short sentence."))
//!         })
//!         .tool_typed("shout", "Upper-case a text.", |_ctx, a: Shout| {
//!             ToolOutput::text(a.text.to_uppercase())
//!         })
//!         .intercept_tool_call(|_ctx, call| match call.arg("command") {
//!             Some(c) if c.contains("rm -rf /") => Verdict::block("not here"),
//!             _ => Verdict::Allow,
//!         })
//!         .run();
//! }
//! ```
//!
//! [`Extension::run`] sends `hello`, the registrations, `subscribe` and `ready`, then
//! answers the host's frames one at a time until `shutdown` (answered with
//! `shutdown_ack`). Handlers get a [`Ctx`] for notes, panels, prompts, the host's
//! `hello_ack` ([`Ctx::host`], [`Ctx::data_dir`]), a tool's progress ([`Ctx::progress`])
//! and cancellation ([`Ctx::cancelled`]).
//! [`http`] makes requests on both targets.

mod context;
mod embed;
mod extension;
pub mod http;
mod io;
mod reply;

pub use context::{Ctx, HostInfo, Level};
pub use embed::MANIFEST_SECTION;
pub use extension::Extension;
pub use reply::{Event, Panel, Response, ToolCallEvent, ToolOutput, Verdict};
pub use schemars::{self, JsonSchema};
pub use serde_json::{self, json, Value};
pub use zot_protocol::{PanelKey, PanelResize, EVENTS};

#[cfg(test)]
mod tests;
