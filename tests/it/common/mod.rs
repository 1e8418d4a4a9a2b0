//! What the integration tests share, by what it helps with: running the `zot` binary
//! ([`run`]), a `zot host` over pipes ([`host`]), the test extensions and manifests
//! ([`extensions`]), pinned tools installed once ([`tools`]), scratch folders and
//! processes ([`scratch`]), a local HTTP server ([`http`]), scripted sessions compared
//! across builds ([`script`]) and pseudo-terminal sessions ([`pty`]).
//!
//! Only std and serde_json.

mod extensions;
mod host;
mod http;
mod pty;
mod run;
mod scratch;
mod script;
mod tools;

pub use extensions::*;
pub use host::*;
pub use http::*;
pub use pty::Pty;
pub use run::*;
pub use scratch::*;
pub use script::*;
pub use tools::*;
pub use zot_test_fixtures::{fnv1a, leb, payload};

use std::time::Duration;

/// How long an ordinary request may take.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(20);

/// How long to wait for `host_ready` in tests that do not measure it.
pub const READY_TIMEOUT: Duration = Duration::from_secs(15);

/// How long to wait for an ordinary event.
pub const EVENT_TIMEOUT: Duration = Duration::from_secs(10);
