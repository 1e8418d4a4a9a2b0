//! A confined start prepared in the host, before the fork: what the extension may reach
//! (its manifest's asks, the grant for these files), its data dir opened without
//! following a link with an empty temp dir inside, the ruleset built, each rule logged
//! as enforced or not.

use super::{policy_for, Confined, DiskQuota, Place, Prepared};
use crate::identity::Identity;
use crate::log::ExtLog;
use crate::manifest::Manifest;
use crate::paths::ZotHome;
use crate::records::confinement::Confinement;
use crate::sandbox::{self, RunGrant};
use crate::util::safe_write::SafeDir;
use std::path::Path;

/// The extension a confined start is for, and where it runs.
#[derive(Clone, Copy)]
pub struct Start<'a> {
    pub home: &'a ZotHome,
    pub identity: &'a Identity,
    pub manifest: &'a Manifest,
    /// Its folder.
    pub dir: &'a Path,
    /// The project directory.
    pub cwd: &'a Path,
    /// What the command line granted for this run.
    pub run_grant: Option<&'a RunGrant>,
    pub log: &'a ExtLog,
    /// The program run.
    pub program: &'a Path,
    /// Its data dir (`$ZOT_HOME/data/<key>`).
    pub data_dir: &'a Path,
}

/// The confinement of a classic extension that runs confined (`decided`, by
/// [`crate::records::confinement::decide`]): `None` when it is not; why it does not
/// start when it cannot be decided, was confined for other files, its data dir is a
/// link, or a rule this kernel cannot enforce is required. Its disk quota is measured
/// by the transport, at start and while it runs.
pub fn prepare(start: &Start<'_>, decided: Confinement) -> Result<Option<Confined>, String> {
    let Start {
        home,
        identity,
        manifest: m,
        dir,
        cwd,
        run_grant,
        log,
        program,
        data_dir,
    } = *start;
    let (granted, require, digest) = match decided {
        Confinement::Unconfined { .. } => return Ok(None),
        Confinement::Refused(why) => return Err(why),
        Confinement::Confined {
            grant,
            require,
            digest,
            by_default,
            files: _,
        } => {
            log.info(match by_default {
                true => "confined by default (settings.json)",
                false => "confined (its grant)",
            });
            (grant.map(|g| g.caps).unwrap_or_default(), require, digest)
        }
    };
    // What it may reach: what its manifest asks and the grant for these files gives (a
    // grant for other files is not applied).
    let (decision, _) =
        sandbox::policy::for_manifest(home, identity, m, cwd, &digest, run_grant, log);
    let data = open_data_dir(home, identity, data_dir)?;
    let tmp = data_dir.join(TMP);
    let data_handle = data
        .dir()
        .try_clone()
        .map(|dir| std::sync::Arc::new(std::os::fd::OwnedFd::from(dir.into_std_file())))
        .map_err(|e| format!("cannot open its data dir: {e}"))?;
    let place = Place {
        ext_dir: dir,
        program,
        data_dir,
        data_handle,
        tmp_dir: &tmp,
    };
    let in_force = |limit: sandbox::Limit| limit.in_force_confined(&m.limits.caps, &granted);
    let disk_mb = in_force(sandbox::Limit::Disk);
    let (policy, env) = policy_for(
        &decision.policy,
        &place,
        (in_force(sandbox::Limit::Memory), disk_mb),
        require,
        |name| std::env::var(name).ok(),
    );
    let prepared = Prepared::build(&policy).map_err(|e| e.to_string())?;
    for rule in prepared.report() {
        match &rule.not_enforced {
            None => log.info(&format!("confined: {}", rule.what)),
            Some(why) => log.warn(&format!("not enforced: {} ({why})", rule.what)),
        }
    }
    let disk = DiskQuota {
        dir: data.into_dir(),
        path: data_dir.to_path_buf(),
        mb: disk_mb,
    };
    Ok(Some(Confined {
        env,
        prepared,
        disk: Some(disk),
        project: decision.policy.cwd.clone(),
    }))
}

/// A confined extension's private temp dir, inside its data dir (`TMPDIR`).
const TMP: &str = ".tmp";

/// The data dir of a confined extension, opened below `$ZOT_HOME/data` without following
/// a link (one an earlier, unconfined run planted is refused: a rule on it would be a rule
/// on where it leads), with an empty temp dir made inside it the same way. What the
/// extension may swap at these paths while it runs — a second start of it, say — changes
/// nothing: the rule is on the handle, and the temp dir needs none of its own.
fn open_data_dir(home: &ZotHome, identity: &Identity, data_dir: &Path) -> Result<SafeDir, String> {
    let data_root = home.root().join("data");
    let data = SafeDir::beneath(&data_root, &identity.key(), true).map_err(|e| {
        format!(
            "its data dir {} is not a folder of {} (a link?): remove it, or the \
                 extension with its data (`zot ext remove --purge`) ({e})",
            data_dir.display(),
            data_root.display()
        )
    })?;
    let fresh = |e: std::io::Error| format!("cannot make its temp dir: {e}");
    // Gone meanwhile (a second start of it emptied it first) is as good as removed.
    let removed = |done: std::io::Result<()>| match done {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(fresh(e)),
        Ok(()) | Err(_) => Ok(()),
    };
    match data.dir().symlink_metadata(TMP) {
        Ok(meta) if meta.is_dir() => removed(data.dir().remove_dir_all(TMP))?,
        Ok(_) => removed(data.dir().remove_file(TMP))?,
        Err(e) => removed(Err(e))?,
    }
    data.create_sub(TMP).map_err(fresh)?;
    Ok(data)
}
