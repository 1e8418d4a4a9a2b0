//! The user's records as the CLI shows them and asks about them, for every command
//! that does: a project's trust ([`trust`]: the review `trust`, `install` and the
//! shell show before they ask), grants ([`grant`]: `grant` and `revoke`, also run by the
//! shell through its prompt; which copy a confined extension is), and a confinement's
//! rows ([`confinement`]: `info`, `check`). The library decides and records; this
//! shows, asks and passes the answer on.

pub(crate) mod confinement;
pub(crate) mod grant;
pub(crate) mod trust;
