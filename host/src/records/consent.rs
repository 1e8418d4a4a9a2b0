//! What the user's yes to an install or an update records, in one place: a component's
//! grant of what it asks (bound to the component's hash), a confined classic extension's
//! grant (bound to its files' fingerprint, as `trust` computes it), and, for a project's
//! copy, the project's trust in its files as they are. The start reads each back with the
//! same rule ([`super::grants`], [`super::confinement`], [`super::trust::check`]).

use super::settings::{Settings, SettingsError};
use super::trust::{self, ProjectExtension, TrustError};
use super::{grants, Grant};
use crate::caps::SandboxError;
use crate::identity::Identity;
use crate::manifest::Manifest;
use crate::paths::ZotHome;
use std::fmt;
use std::path::Path;

/// A record that could not be written or the files it is bound to read.
#[derive(Debug)]
pub enum ConsentError {
    Grant(SandboxError),
    Trust(TrustError),
    Settings(SettingsError),
}

impl fmt::Display for ConsentError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConsentError::Grant(e) => e.fmt(f),
            ConsentError::Trust(e) => e.fmt(f),
            ConsentError::Settings(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for ConsentError {}

/// Records what the user consented to for the extension of `m` installed in `dir` as
/// `id`: for its component `wasm` (relative to `dir`), everything it asks; for a
/// project's copy, the project's trust in its files as they are.
pub fn consented(
    home: &ZotHome,
    id: &Identity,
    (m, dir): (&Manifest, &Path),
    wasm: Option<&Path>,
) -> Result<(), ConsentError> {
    if let Some(file) = wasm {
        grants::grant_asked(home, id, m, &dir.join(file)).map_err(ConsentError::Grant)?;
    }
    // A remote MCP server: its URL's origin, bound to where it is and what it is sent.
    if let crate::manifest::Launch::Remote(_) = m.launch(dir) {
        let mut grant = Grant::for_files(None, grants::remote_binding(m));
        grant.add_asked(m);
        grants::save(home, id, &grant).map_err(ConsentError::Grant)?;
    }
    match id {
        Identity::Project { project, dir_name } => {
            let ext = ProjectExtension {
                dir_name,
                dir,
                manifest: Some(m),
            };
            trust::trust(home, project, &[ext], false).map_err(ConsentError::Trust)
        }
        Identity::Global { .. } | Identity::Path { .. } => Ok(()),
    }
}

/// Records the consent to a fresh install of `m` in `dir` as `id`: nothing is inherited
/// from an earlier install at that place (its grant goes), then what it asks
/// ([`consented`]), then, for a classic extension that runs confined (`confined`:
/// `Some(explicit)`), its confinement ([`confined`]).
pub fn installed(
    home: &ZotHome,
    id: &Identity,
    (m, dir): (&Manifest, &Path),
    wasm: Option<&Path>,
    confined_by: Option<bool>,
) -> Result<(), ConsentError> {
    grants::revoke(home, id).map_err(ConsentError::Grant)?;
    consented(home, id, (m, dir), wasm)?;
    match confined_by {
        Some(explicit) => confined(home, id, (m, dir), explicit),
        None => Ok(()),
    }
}

/// Records that the classic extension of `m` installed in `dir` as `id` runs confined
/// with what it asks (`explicit`: the user asked for confinement, else the host-wide
/// setting did), bound to its files as they are.
pub fn confined(
    home: &ZotHome,
    id: &Identity,
    (m, dir): (&Manifest, &Path),
    explicit: bool,
) -> Result<(), ConsentError> {
    let mut grant = Grant {
        sha256: files_digest(m, dir)?,
        confine: explicit,
        ..Default::default()
    };
    grant.add_asked(m);
    grants::save(home, id, &grant).map_err(ConsentError::Grant)
}

/// Moves the confinement of `id` (a confined classic extension, updated) to the files of
/// `m` in `dir`: the grant it had, nothing widened, bound to the new files.
pub fn rebind_confinement(
    home: &ZotHome,
    id: &Identity,
    (m, dir): (&Manifest, &Path),
) -> Result<(), ConsentError> {
    let Some(mut grant) = grants::load(home, id).map_err(ConsentError::Grant)? else {
        return Ok(());
    };
    grant.sha256 = files_digest(m, dir)?;
    grants::save(home, id, &grant).map_err(ConsentError::Grant)
}

/// What a grant of `m` in `dir` is bound to ([`grants::binding`]).
fn files_digest(m: &Manifest, dir: &Path) -> Result<String, ConsentError> {
    grants::binding(m, dir)
        .map(|(_, sha256)| sha256)
        .map_err(ConsentError::Grant)
}

/// Records the user's decision that the classic extension of `m` in `dir`, installed as
/// `id`, runs confined (`on`, with `require`: refusing to start where a rule cannot be
/// enforced) or not, for its files as they are; what was granted to other files is not
/// carried. `None`: asked to lift a confinement there is none of (nothing written).
pub fn set_confinement(
    home: &ZotHome,
    id: &Identity,
    (m, dir): (&Manifest, &Path),
    on: bool,
    require: bool,
) -> Result<Option<Grant>, ConsentError> {
    let settings = Settings::load(home).map_err(ConsentError::Settings)?;
    let digest = files_digest(m, dir)?;
    let old = grants::load(home, id).map_err(ConsentError::Grant)?;
    if !on && !settings.confine_classic && !old.as_ref().is_some_and(|g| g.confine) {
        return Ok(None);
    }
    let mut grant = Grant::for_files(old, digest);
    grant.confine = on;
    grant.unconfined = !on;
    grant.require_confinement = on && require;
    grants::save(home, id, &grant).map_err(ConsentError::Grant)?;
    Ok(Some(grant))
}

/// Records the user's host-wide choice: every classic extension confined by default
/// (`on`; `require`: none starts where a rule cannot be enforced, kept once chosen) or
/// not. Returns the settings now in force.
pub fn set_default_confinement(
    home: &ZotHome,
    on: bool,
    require: bool,
) -> Result<Settings, ConsentError> {
    let mut settings = Settings::load(home).map_err(ConsentError::Settings)?;
    settings.confine_classic = on;
    settings.require_confinement = on && (require || settings.require_confinement);
    settings.save(home).map_err(ConsentError::Settings)?;
    Ok(settings)
}

/// Forgets what the user consented to for the extension installed as `id`, now removed:
/// its grant and, for a project's copy, the project's trust in it.
pub fn forget(home: &ZotHome, id: &Identity) -> Result<(), ConsentError> {
    grants::revoke(home, id).map_err(ConsentError::Grant)?;
    match id {
        Identity::Project { project, dir_name } => trust::untrust(home, project, Some(dir_name))
            .map(|_| ())
            .map_err(ConsentError::Trust),
        Identity::Global { .. } | Identity::Path { .. } => Ok(()),
    }
}
