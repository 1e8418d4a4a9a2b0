//! `zot ext update` of one installed extension, decided here and shown by the CLI: a
//! [`Plan`] computed before anything changes (what changed in the source and in the
//! copy, what it now also asks for, what the user must consent to again), then
//! [`Plan::apply`], which installs the new files and moves the user's records to them —
//! a component's grant kept only when it asks for nothing more, a confinement moved to
//! the new files and never widened, a project's trust given again — once the caller has
//! the user's yes to [`Plan::asks`].

use super::signature::Signer;
use super::{stage, InstallError, Installed, Progress, Request, Staged};
use crate::component::compile::Compiler;
use crate::identity::Identity;
use crate::manifest::{Manifest, ManifestError};
use crate::paths::ZotHome;
use crate::records::consent::{self, ConsentError};
use crate::records::grants;
use crate::records::provenance::{self, Change, Provenance};
use crate::sandbox::grown_since;
use std::fmt;
use std::path::{Path, PathBuf};

/// An update of one install, computed and not yet applied.
pub struct Plan {
    /// The installed copy's manifest.
    pub old: Manifest,
    /// The source fetched again, staged.
    pub staged: Staged,
    /// The install record it was fetched again from.
    pub record: Provenance,
    /// The copy's files changed since install: the source's replace them.
    pub local: Vec<Change>,
    /// The source's files that differ from the installed ones.
    pub changed: Vec<Change>,
    /// What it now also asks for, in plain words.
    pub grown: Vec<String>,
    /// A classic extension that runs confined by its own grant: the new files run
    /// confined, with what was granted to the old.
    pub confined: bool,
    /// A project's copy: the project that trusts it again, as updated.
    pub trusted_in: Option<PathBuf>,
    home: ZotHome,
    compiler: Compiler,
}

/// What the user consents to before a [`Plan`] applies; nothing at all when every
/// field is false or `None`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Asks {
    /// Grant what it now also asks for ([`Plan::grown`]).
    pub grant: bool,
    /// Trust it, as updated, to run whenever zot starts in this project.
    pub trust: Option<PathBuf>,
    /// Replace the files changed in the copy since install.
    pub replace_local: bool,
    /// Run the new files confined, with the old files' grant.
    pub confined: bool,
}

impl Asks {
    /// Whether the update needs the user's yes.
    pub fn any(&self) -> bool {
        self.grant || self.trust.is_some() || self.replace_local || self.confined
    }
}

/// Why an update cannot be planned or applied.
#[derive(Debug)]
pub enum UpdateError {
    /// The installed copy's manifest cannot be read.
    Manifest(ManifestError),
    /// `$ZOT_HOME` holds no install record for it (a project's own is never read).
    NoRecord,
    /// The source now names itself otherwise.
    Renamed(String),
    /// The source no longer holds what the install ran, and would have to be built.
    NowBuilds,
    Install(InstallError),
    Records(ConsentError),
}

impl fmt::Display for UpdateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            UpdateError::Manifest(e) => e.fmt(f),
            UpdateError::NoRecord => f.write_str("no install record"),
            UpdateError::Renamed(name) => write!(
                f,
                "the source now names itself {name:?}; install it under that name instead"
            ),
            UpdateError::NowBuilds => f.write_str(
                "the source no longer holds what the install runs: it must now be built; \
                 install it again (`zot ext install <source> --force`) to review the build",
            ),
            UpdateError::Install(e) => e.fmt(f),
            UpdateError::Records(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for UpdateError {}

impl From<InstallError> for UpdateError {
    fn from(e: InstallError) -> Self {
        UpdateError::Install(e)
    }
}

impl From<provenance::ProvenanceError> for UpdateError {
    fn from(e: provenance::ProvenanceError) -> Self {
        UpdateError::Install(e.into())
    }
}

impl From<ConsentError> for UpdateError {
    fn from(e: ConsentError) -> Self {
        UpdateError::Records(e)
    }
}

/// Fetches the source of the install in `dir` again (at `git_ref` when given) and
/// compares: the plan, nothing changed yet.
///
/// An install whose record names a signature is updated only to a version signed by
/// that key, or by one of `signers` (`--require-signature`, to move to another key).
pub async fn plan(
    home: &ZotHome,
    dir: &Path,
    git_ref: Option<&str>,
    signers: &[Signer],
    compiler: Compiler,
    progress: &dyn Progress,
) -> Result<Plan, UpdateError> {
    let old = Manifest::read(dir).map_err(UpdateError::Manifest)?;
    let id = Identity::of(dir, home);
    let record = provenance::load(home, &id)?.ok_or(UpdateError::NoRecord)?;
    let root = dir.parent().unwrap_or(dir).to_path_buf();
    let mut req = Request::again(&record, root, home.clone(), compiler.clone());
    if let Some(r) = git_ref {
        req.git_ref = Some(r.to_string());
    }
    req.signers.extend_from_slice(signers);
    let mut staged = stage(&req, progress).await?;
    // Rebuilt as it was built at install, the recipe the user consented to then; a
    // source that now needs a build it did not is installed again, to review that.
    match (&staged.build, &record.build) {
        (None, _) => {}
        (Some(_), Some(_)) => staged.run_build(progress)?,
        (Some(_), None) => return Err(UpdateError::NowBuilds),
    }
    if staged.manifest.name != old.name {
        return Err(UpdateError::Renamed(staged.manifest.name.clone()));
    }
    let local = provenance::verify(dir, &record)?;
    let changed = provenance::verify(staged.tree(), &record)?;
    let grown = grown_since(&old, &staged.manifest);
    let confined = !staged.manifest.asks_permissions()
        && grants::load(home, &id)
            .map_err(|e| UpdateError::Records(ConsentError::Grant(e)))?
            .is_some_and(|g| g.confine);
    let trusted_in = match &id {
        Identity::Project { project, .. } => Some(project.clone()),
        Identity::Global { .. } | Identity::Path { .. } => None,
    };
    Ok(Plan {
        old,
        staged,
        record,
        local,
        changed,
        grown,
        confined,
        trusted_in,
        home: home.clone(),
        compiler,
    })
}

impl Plan {
    /// The source is what was installed (same files, same ref).
    pub fn same_source(&self) -> bool {
        self.staged.record.files == self.record.files
            && self.staged.record.git_ref == self.record.git_ref
    }

    /// Nothing to do: the source has not changed and neither has the copy.
    pub fn up_to_date(&self) -> bool {
        self.same_source() && self.local.is_empty()
    }

    /// What the user must consent to before [`Plan::apply`].
    pub fn asks(&self) -> Asks {
        let grant = !self.grown.is_empty();
        Asks {
            grant,
            trust: self.trusted_in.clone(),
            replace_local: !self.local.is_empty(),
            confined: self.confined,
        }
    }

    /// Installs the new files in place of the old (a component compiled first: one
    /// that cannot be is not installed) and moves the user's records to them.
    pub async fn apply(mut self, progress: &dyn Progress) -> Result<Installed, UpdateError> {
        // Switched off, it stays off: the switch is the user's, not the source's.
        if !self.old.enabled {
            crate::manifest::set_enabled(self.staged.tree(), false)
                .map_err(UpdateError::Manifest)?;
            self.staged.manifest.enabled = false;
        }
        let wasm = self.staged.component_file();
        if let Some(file) = &wasm {
            super::compile(
                &self.home,
                &self.compiler,
                &self.staged.tree().join(file),
                progress,
            )
            .await?;
        }
        let done = self.staged.commit(true)?;
        let id = Identity::of(&done.dir, &self.home);
        match wasm {
            // It asks for nothing more: the grant as it was, for the new component.
            Some(file) if self.grown.is_empty() => {
                grants::repin(&self.home, &id, &done.dir.join(file))
                    .map_err(|e| UpdateError::Records(ConsentError::Grant(e)))?;
                consent::consented(&self.home, &id, (&done.manifest, &done.dir), None)?;
            }
            wasm => consent::consented(
                &self.home,
                &id,
                (&done.manifest, &done.dir),
                wasm.as_deref(),
            )?,
        }
        if self.confined {
            consent::rebind_confinement(&self.home, &id, (&done.manifest, &done.dir))?;
        }
        Ok(done)
    }
}
