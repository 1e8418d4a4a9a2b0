//! The user's records as the CLI shows them and asks about them, for every command
//! that does: a project's trust ([`trust`]: the review `trust`, `install` and the
//! shell show before they ask), grants ([`grant`]: `grant` and `revoke`, also run by the
//! shell through its prompt; which copy a confined extension is), and a confinement's
//! rows ([`confinement`]: `info`, `check`), and how a guard fails ([`guard`]: `guard`,
//! `info`), signatures ([`signers`]: `install`, `update`, `info`, `verify`). The library decides and records; this shows, asks and passes the answer on.

pub(crate) mod confinement;
pub(crate) mod grant;
pub(crate) mod guard;
pub(crate) mod signers;
pub(crate) mod trust;

use std::path::Path;
use zot_host::manage::identity::Identity;
use zot_host::manage::paths::ZotHome;
use zot_host::manage::records::provenance;

/// The install record of the extension installed in `dir`, from `$ZOT_HOME` (a record a
/// project holds is never read).
pub(crate) fn install_record(
    home: &ZotHome,
    dir: &Path,
) -> Result<Option<provenance::Provenance>, String> {
    provenance::load(home, &Identity::of(dir, home)).map_err(|e| e.to_string())
}

/// Why there is nothing to compare with or fetch again for the `copy` in `dir`.
pub(crate) fn no_record(home: &ZotHome, dir: &Path, copy: &str) -> String {
    match Identity::of(dir, home) {
        Identity::Project { .. } => format!(
            "no install record for the {copy} in {}: zot reads a project copy's record \
             only from there, never from the project (anyone who can write to the project \
             could forge it); reinstall it with `zot ext install --project <source> --force`",
            home.root().join("provenance").display()
        ),
        Identity::Global { .. } | Identity::Path { .. } => format!(
            "no install record for the {copy} (installed by hand or by an older zot); \
             reinstall it with `zot ext install <source> --force`"
        ),
    }
}
