//! What the user's yes to an install or an update records, in one place: a component's
//! grant of what it asks (bound to the component's hash), a confined classic extension's
//! grant (bound to its files' fingerprint, as `trust` computes it), and, for a project's
//! copy, the project's trust in its files as they are. The start reads each back with the
//! same rule ([`super::grants`], [`super::confinement`], [`super::trust::check`]).

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
}

impl fmt::Display for ConsentError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConsentError::Grant(e) => e.fmt(f),
            ConsentError::Trust(e) => e.fmt(f),
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
