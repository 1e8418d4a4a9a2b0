//! What the user granted an extension, and how a grant is widened.

use super::Permission;
use crate::caps::{Caps, Limit, SandboxError};
use crate::manifest::{CwdAccess, Manifest, Permissions};
use serde::{Deserialize, Serialize};

/// What the user granted an extension, as stored by [`super::grants`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Grant {
    /// The component's SHA-256 when the grant was given.
    #[serde(default)]
    pub sha256: String,
    #[serde(default = "data_dir_only")]
    pub permissions: Permissions,
    /// The caps the user allowed beyond their defaults (`memory_mb`, `disk_mb`, …: fields
    /// of the grant file itself).
    #[serde(flatten)]
    pub caps: Caps,
    /// A classic extension the user confined (`zot ext confine`): it runs confined, with
    /// these permissions, or not at all. Absent (false) in older grant files.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub confine: bool,
    /// The user unconfined this classic extension (`zot ext unconfine`) as its files are
    /// (`sha256`): confining by default (`settings.json`) does not apply to them.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub unconfined: bool,
    /// Confined, it does not start where this kernel cannot enforce one of its rules
    /// (`zot ext confine --require-confinement`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub require_confinement: bool,
}

/// The grant in force when none is recorded: the data dir and the default memory.
impl Default for Grant {
    fn default() -> Self {
        Grant {
            sha256: String::new(),
            permissions: data_dir_only(),
            caps: Caps::default(),
            confine: false,
            unconfined: false,
            require_confinement: false,
        }
    }
}

/// The permissions of a grant that names none: its data dir.
fn data_dir_only() -> Permissions {
    Permissions {
        data_dir: true,
        cwd: None,
        env: Vec::new(),
        http: Vec::new(),
    }
}

impl Grant {
    /// The grant for the files bound by `sha256` ([`super::grants::binding`]): `old` if
    /// it was given for them, else one granting nothing — what was granted to other
    /// files is never carried over.
    pub fn for_files(old: Option<Grant>, sha256: String) -> Grant {
        let mut grant = old.filter(|g| g.sha256 == sha256).unwrap_or_default();
        grant.sha256 = sha256;
        grant
    }

    /// Adds everything `m` asks for.
    pub fn add_asked(&mut self, m: &Manifest) {
        let asked = &m.permissions;
        let p = &mut self.permissions;
        p.data_dir |= asked.data_dir;
        p.cwd = p.cwd.or(asked.cwd);
        add_all(&mut p.env, &asked.env);
        add_all(&mut p.http, &asked.http);
        for limit in Limit::ALL {
            let slot = self.caps.slot(limit);
            *slot = (*slot).max(m.limits.caps.get(limit));
        }
    }

    /// Adds one `permission` (as the user typed it); refused, saying what `m` asks for
    /// instead, unless `m` asks for it.
    pub fn add(&mut self, m: &Manifest, permission: &str) -> Result<(), SandboxError> {
        self.add_parsed(m, permission.parse()?)
    }

    /// Adds one parsed `permission`; refused unless `m` asks for it.
    pub fn add_parsed(&mut self, m: &Manifest, parsed: Permission) -> Result<(), SandboxError> {
        if !parsed.is_asked(m) {
            return Err(super::permission::not_asked(m, &parsed.to_string()));
        }
        let p = &mut self.permissions;
        match parsed {
            Permission::DataDir => p.data_dir = true,
            Permission::Cwd => p.cwd = Some(CwdAccess::Read),
            Permission::Env(name) => add_all(&mut p.env, &[name]),
            Permission::Http(host) => add_all(&mut p.http, &[host]),
            Permission::Limit(limit, value) => *self.caps.slot(limit) = Some(value),
        }
        Ok(())
    }
}

fn add_all(to: &mut Vec<String>, items: &[String]) {
    for item in items {
        if !to.contains(item) {
            to.push(item.clone());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_grant_and_an_empty_grant_file_grant_the_data_dir_only() {
        let empty: Grant = serde_json::from_str("{}").unwrap();
        assert_eq!(empty, Grant::default());
        assert!(empty.permissions.data_dir);
        assert_eq!(
            serde_json::to_string(&empty).unwrap(),
            r#"{"sha256":"","permissions":{"data_dir":true}}"#
        );
    }

    #[test]
    fn add_refuses_what_is_not_asked_and_names_the_nearest() {
        let m: Manifest = serde_json::from_str(
            r#"{"name":"g","wasm":"g.wasm","permissions":{"env":["TOKEN"]},"limits":{"memory_mb":128}}"#,
        )
        .unwrap();
        let mut grant = Grant::default();
        grant.add(&m, "env:TOKEN").unwrap();
        grant.add(&m, "memory:100").unwrap();
        assert_eq!(grant.permissions.env, vec!["TOKEN".to_string()]);
        assert_eq!(grant.caps.memory_mb, Some(100));
        let e = grant.add(&m, "env:TOKEM").unwrap_err();
        assert!(e.to_string().contains("(nearest: env:TOKEN)"), "{e}");
        assert!(grant.add(&m, "memory:256").is_err(), "more than asked");
        assert!(
            grant.add(&m, "disk:1024").is_err(),
            "not asked above the default"
        );
        assert!(
            grant.add(&m, "disk:100").is_ok(),
            "at most the default: asked"
        );
        assert!(grant.add(&m, "cwd").is_err(), "not asked");
        assert!(grant
            .add(&m, "net")
            .unwrap_err()
            .to_string()
            .contains("unknown permission"));
    }
}
