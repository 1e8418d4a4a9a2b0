//! One permission as the user names it (`zot ext grant -p`), and why one the manifest
//! does not ask for is refused.

use crate::caps::{HostPattern, Limit, SandboxError};
use crate::manifest::{CwdAccess, Manifest, Permissions};
use std::str::FromStr;

/// One permission: `data_dir`, `cwd` (or `cwd:read`), `env:NAME`, `http:PATTERN` (a
/// pattern with its scheme, `http://127.0.0.1:8766`, is named as it is, without the
/// `http:`), or a limit raised: `memory:MB`, `disk:MB`, `resources:N`,
/// `http_requests:N`, `field_kib:KIB`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Permission {
    DataDir,
    Cwd,
    Env(String),
    Http(String),
    /// A `Limit` up to this value.
    Limit(Limit, u64),
}

impl FromStr for Permission {
    type Err = SandboxError;

    fn from_str(permission: &str) -> Result<Permission, SandboxError> {
        if permission.starts_with("http://") || permission.starts_with("https://") {
            HostPattern::parse(permission)?;
            return Ok(Permission::Http(permission.into()));
        }
        let (kind, value) = permission.split_once(':').unwrap_or((permission, ""));
        Ok(match (kind, value) {
            ("data_dir", "") => Permission::DataDir,
            ("cwd", "" | "read") => Permission::Cwd,
            ("env", name) if !name.is_empty() => Permission::Env(name.into()),
            ("http", host) => {
                HostPattern::parse(host)?;
                Permission::Http(host.into())
            }
            (kind, value) if Limit::from_permission(kind).is_some() => {
                let limit = Limit::from_permission(kind).expect("matched");
                Permission::Limit(limit, limit.parse(value)?)
            }
            _ => return Err(SandboxError::UnknownPermission(permission.into())),
        })
    }
}

/// As the user names it: `data_dir`, `cwd`, `env:NAME`, `http:PATTERN` (or the pattern
/// alone when it has a scheme), `memory:MB`, …
impl std::fmt::Display for Permission {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Permission::DataDir => f.write_str("data_dir"),
            Permission::Cwd => f.write_str("cwd"),
            Permission::Env(name) => write!(f, "env:{name}"),
            Permission::Http(url) if url.contains("://") => f.write_str(url),
            Permission::Http(host) => write!(f, "http:{host}"),
            Permission::Limit(limit, value) => write!(f, "{}:{value}", limit.spec().permission),
        }
    }
}

impl Permission {
    /// Each permission of `p`, as the user names them: `data_dir`, `cwd`, `env:NAME`,
    /// `http:PATTERN`.
    pub fn each_of(p: &Permissions) -> Vec<Permission> {
        let mut out = Vec::new();
        if p.data_dir {
            out.push(Permission::DataDir);
        }
        if p.cwd == Some(CwdAccess::Read) {
            out.push(Permission::Cwd);
        }
        out.extend(p.env.iter().cloned().map(Permission::Env));
        out.extend(p.http.iter().cloned().map(Permission::Http));
        out
    }

    /// Makes `m` ask for it (a limit: exactly this value).
    pub fn ask_in(&self, m: &mut Manifest) {
        let asked = &mut m.permissions;
        match self {
            Permission::DataDir => asked.data_dir = true,
            Permission::Cwd => asked.cwd = Some(CwdAccess::Read),
            Permission::Env(name) if asked.env.contains(name) => {}
            Permission::Env(name) => asked.env.push(name.clone()),
            Permission::Http(host) if asked.http.contains(host) => {}
            Permission::Http(host) => asked.http.push(host.clone()),
            Permission::Limit(limit, value) => *m.limits.caps.slot(*limit) = Some(*value),
        }
    }

    /// Whether `m` asks for it (a limit: at most what it asks, or the default).
    pub fn is_asked(&self, m: &Manifest) -> bool {
        let asked = &m.permissions;
        match self {
            Permission::DataDir => asked.data_dir,
            Permission::Cwd => asked.cwd.is_some(),
            Permission::Env(name) => asked.env.contains(name),
            Permission::Http(host) => asked.http.contains(host),
            Permission::Limit(limit, value) => *value <= limit.asked(&m.limits.caps),
        }
    }
}

/// Why `permission` is refused: the manifest does not ask it; what it asks, as
/// permissions, and the nearest of them.
pub(super) fn not_asked(m: &Manifest, permission: &str) -> SandboxError {
    let mut options: Vec<String> = Permission::each_of(&m.permissions)
        .iter()
        .map(Permission::to_string)
        .collect();
    for limit in Limit::ALL {
        if let Some(value) = m.limits.caps.get(limit) {
            options.push(format!("{}:{value}", limit.spec().permission));
        }
    }
    let nearest = options
        .iter()
        .map(|o| (crate::util::nearest::edit_distance(o, permission), o))
        .filter(|(d, _)| *d < permission.chars().count())
        .min()
        .map(|(_, o)| o.clone());
    SandboxError::NotAsked {
        permission: permission.into(),
        asked: options,
        nearest,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pattern_with_its_scheme_is_named_once() {
        for (given, shown) in [
            ("http://127.0.0.1:8766", "http://127.0.0.1:8766"),
            ("http:http://127.0.0.1:8766", "http://127.0.0.1:8766"),
            ("https://api.example.com", "https://api.example.com"),
            ("http:api.example.com", "http:api.example.com"),
        ] {
            let p: Permission = given.parse().unwrap();
            assert_eq!(p.to_string(), shown, "{given}");
            assert_eq!(p.to_string().parse::<Permission>().unwrap(), p, "{given}");
        }
        assert!("http://".parse::<Permission>().is_err());
    }

    #[test]
    fn a_limit_parses_as_memory_does() {
        assert_eq!(
            "disk:1024".parse::<Permission>().unwrap(),
            Permission::Limit(Limit::Disk, 1024)
        );
        assert_eq!(
            "memory:128".parse::<Permission>().unwrap(),
            Permission::Limit(Limit::Memory, 128)
        );
        assert_eq!(
            "http_requests:64".parse::<Permission>().unwrap(),
            Permission::Limit(Limit::HttpRequests, 64)
        );
        assert!("disk:0".parse::<Permission>().is_err());
        assert!("disk".parse::<Permission>().is_err());
        let m: Manifest = serde_json::from_str(
            r#"{"name":"g","wasm":"g.wasm","limits":{"disk_mb":1024,"resources":5000}}"#,
        )
        .unwrap();
        assert!(Permission::Limit(Limit::Disk, 1024).is_asked(&m));
        assert!(!Permission::Limit(Limit::Disk, 1025).is_asked(&m));
        assert!(
            Permission::Limit(Limit::HttpRequests, 16).is_asked(&m),
            "the default"
        );
        assert!(!Permission::Limit(Limit::HttpRequests, 17).is_asked(&m));
        let e = not_asked(&m, "disk:2048").to_string();
        assert!(
            e.contains("it asks for: data_dir, disk:1024, resources:5000"),
            "{e}"
        );
    }
}
