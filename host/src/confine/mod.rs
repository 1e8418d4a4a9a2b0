//! Confinement of a classic extension (a subprocess) on Linux, as a user or as root: a
//! Landlock ruleset (files, TCP ports, abstract sockets and signals), a seccomp
//! allow-list of system calls (what Landlock cannot filter), no capability in any set,
//! an empty session keyring, `no_new_privs`, and none of the host's open descriptors but
//! 0, 1 and 2. Its children inherit all of it.
//!
//! Everything that allocates or opens a path is done by [`Prepared::build`] in the host,
//! before the fork; [`Prepared::apply_in_child`] only makes system calls, between fork and
//! exec (`pre_exec`). What this kernel cannot enforce is in [`Prepared::report`], never
//! pretended; with `require`, it is an error instead.

#[cfg(target_os = "linux")]
mod apply;
#[cfg(target_os = "linux")]
mod build;
#[cfg(target_os = "linux")]
mod caps;
#[cfg(target_os = "linux")]
mod env;
#[cfg(target_os = "linux")]
mod from_grant;
#[cfg(target_os = "linux")]
mod landlock;
#[cfg(target_os = "linux")]
mod seccomp;
#[cfg(target_os = "linux")]
pub mod start;
#[cfg(target_os = "linux")]
mod system;
pub mod view;

#[cfg(target_os = "linux")]
pub use apply::*;
#[cfg(target_os = "linux")]
pub use build::policy_for_build;
#[cfg(target_os = "linux")]
pub use env::environment;
#[cfg(target_os = "linux")]
pub use from_grant::{policy_for, Place};
#[cfg(target_os = "linux")]
pub use system::etc_allows;
