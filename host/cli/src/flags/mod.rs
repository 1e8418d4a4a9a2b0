//! The flags several commands share, defined once: what a run loads and grants
//! ([`load`]: `--only`, `--no-global`, `--allow-env`, …; [`host`]: the host's own,
//! `--ext`, `--cwd`, `--zot-home`, for `zot host`, `zot mcp` and the shell), which
//! installed copy a name means ([`scope`]: `--global`, `--project`), which one
//! extension a command loads ([`target`]), and where the SDKs are ([`sdk`]: `--sdk`).
//! Each only sets what the library reads.

pub(crate) mod host;
pub(crate) mod load;
pub(crate) mod scope;
pub(crate) mod sdk;
pub(crate) mod target;

use std::path::PathBuf;

/// `--zot-home` if given, else `$ZOT_HOME` or the platform default.
pub(crate) fn zot_home(flag: Option<PathBuf>) -> Result<zot_host::ZotHome, String> {
    match flag {
        Some(dir) => Ok(zot_host::ZotHome::new(dir)),
        None => zot_host::ZotHome::from_env(),
    }
}
