//! The words a manifest asks in and a grant gives in: the sandbox's limits ([`Caps`],
//! [`Limit`]: defaults and maxima), HTTP host patterns ([`HostPattern`]) and why one of
//! them was refused ([`SandboxError`]). Below both [`crate::manifest`] and
//! [`crate::sandbox`] (which decides with them), so neither imports the other's words.

mod error;
mod host_pattern;
mod limits;
pub mod registrations;

pub use error::SandboxError;
pub use host_pattern::HostPattern;
pub use limits::{Caps, InForce, Limit, DEFAULT_MEMORY_MB};
