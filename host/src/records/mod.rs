//! The user's records, each bound to what the user consented to, read by the start with
//! the same rule that wrote it:
//!
//! - [`grant`], [`permission`], [`grants`]: what the user granted an extension, how a
//!   grant widens, and where it is kept (`$ZOT_HOME/grants`, keyed by identity); a grant is
//!   bound to a component's SHA-256 or a classic extension's files ([`grants::binding`],
//!   the one rule);
//! - [`confinement`]: whether a classic extension runs confined (its grant for these
//!   files, else [`settings`]);
//! - [`trust`]: which of a project's extensions the user trusted, bound to each file;
//! - [`guard`]: whether a `tool_call` guard that cannot answer blocks (fails closed);
//! - [`provenance`]: where an install came from and what its files were;
//! - [`consent`]: what the user's yes to an install or an update writes of all these;
//! - [`settings`]: the user's host-wide choices (`$ZOT_HOME/settings.json`).
//!
//! What a grant lets a component do is the sandbox's to decide ([`crate::sandbox`]); how a
//! confinement is applied, `crate::confine`'s.

pub mod confinement;
pub mod consent;
pub mod grant;
pub mod grants;
pub mod guard;
pub mod permission;
pub mod provenance;
pub mod settings;
pub mod trust;

pub use grant::Grant;
pub use permission::Permission;
