//! One module per subcommand: its arguments and its run, and nothing another subcommand
//! uses (that is in `crate::flags`, `crate::output` or the library). `zot ext shell`
//! runs `grant`, `revoke` and `trust` in-process through the command tree
//! (`crate::app`), never by importing them.

pub(crate) mod call;
pub(crate) mod check;
#[cfg(target_os = "linux")]
pub(crate) mod confine;
pub(crate) mod doctor;
pub(crate) mod ext;
pub(crate) mod grant;
pub(crate) mod guard;
pub(crate) mod info;
pub(crate) mod install;
pub(crate) mod logs;
pub(crate) mod man;
pub(crate) mod mcp;
pub(crate) mod new;
pub(crate) mod run;
pub(crate) mod shell;
pub(crate) mod sidecar;
pub(crate) mod sign;
pub(crate) mod signer;
pub(crate) mod trust;
pub(crate) mod update;
pub(crate) mod verify;
