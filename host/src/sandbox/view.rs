//! A component's sandbox as people and programs see it: one view for `zot ext list
//! --json` (its `sandbox`), `zot ext info`, `zot ext check` and the sidecar's `list`
//! entries (docs/cli.md, docs/sidecar.md). A listing describes the component on disk
//! ([`SandboxView::on_disk`]: nothing is started or compiled); a started component also
//! what it runs with ([`Running`]). Each shows the fields it has, in the order below.

use super::InForce;
use crate::component::inspect::Stdin;
use crate::component::{cache, entry, Kind};
use crate::identity::Identity;
use crate::manifest::{Launch, Limits, Manifest, Permissions};
use crate::paths::ZotHome;
use crate::records::{grants, Grant};
use serde::Serialize;
use std::path::Path;

/// What a component asks, what the user granted, and, once started, what it runs with.
#[derive(Debug, Clone, Serialize)]
pub struct SandboxView {
    /// `reactor` or `command`, read from the file's exports; `null` when the file cannot
    /// be read or is not a component of a supported kind (never for a started one).
    pub component: Option<Kind>,
    /// A preview-1 module: the toolchain its custom sections name ("Go", "rustc 1.92.0"),
    /// if any. Go's runtime is served a stdin it polls; another's stdin blocks.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub built_with: Option<String>,
    /// A preview-1 module: how its stdin is served (`polled` for Go's runtime,
    /// `blocking` for another's).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stdin: Option<Stdin>,
    /// Started: the SHA-256 of the component file it runs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
    /// What its manifest asks.
    pub asked: Permissions,
    /// On disk: its manifest's `limits`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limits: Option<Limits>,
    /// `null`: no grant (the data dir only); started, also a stale grant.
    pub granted: Option<Granted>,
    /// A grant is recorded for another build of this component: it is not applied
    /// (`zot ext grant` to review it).
    pub grant_stale: bool,
    /// Started: what it runs with.
    #[serde(flatten)]
    pub running: Option<Running>,
}

/// What the user granted, as each view shows it.
#[derive(Debug, Clone, Serialize)]
#[serde(untagged)]
pub enum Granted {
    /// On disk: the grant file as recorded (the SHA-256 it was given to, its
    /// permissions and caps).
    Recorded(Grant),
    /// Started: the permissions of the grant in force.
    Applied(Permissions),
}

/// What a started component runs with.
#[derive(Debug, Clone, Serialize)]
pub struct Running {
    /// What was asked but is not in force, in words.
    pub withheld: Vec<String>,
    /// What the user granted for this run only (`--allow-env`, …), as `zot ext grant -p`
    /// names it: asked and granted for the run, never stored.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub run_grant: Vec<String>,
    /// Its memory limit, in MiB.
    pub memory_mb: u64,
    /// Every host-side cap in force (memory, `/data` quota, resources, HTTP requests,
    /// field size).
    pub caps: InForce,
}

impl SandboxView {
    /// The component of manifest `m` in `dir`, installed as `identity`, as it is on disk,
    /// with the grant recorded for it in `home`; `None` for a classic extension.
    pub fn on_disk(home: &ZotHome, identity: &Identity, m: &Manifest, dir: &Path) -> Option<Self> {
        let path = match m.launch(dir) {
            Launch::Wasm(path) => path,
            Launch::Remote(_) => return Some(Self::remote_on_disk(home, identity, m)),
            Launch::Exec(_) => return None,
        };
        let bytes = cache::read_component(&path).ok();
        let component = bytes
            .as_deref()
            .and_then(|b| crate::component::inspect(b).world().ok())
            .map(crate::component::World::kind);
        let producer = bytes
            .as_deref()
            .map(crate::component::inspect::producer)
            .unwrap_or_default();
        let stdin = component.and_then(|kind| producer.stdin(kind));
        let sha256 = match &bytes {
            Some(b) => Some(entry::sha256_hex(b)),
            None => grants::sha256_of(&path).ok(),
        };
        let granted = grants::load(home, identity).ok().flatten();
        let grant_stale = granted
            .as_ref()
            .is_some_and(|g| Some(&g.sha256) != sha256.as_ref());
        Some(SandboxView {
            component,
            built_with: producer.name,
            stdin,
            sha256: None,
            asked: m.permissions.clone(),
            limits: Some(m.limits.clone()),
            granted: granted.map(Granted::Recorded),
            grant_stale,
            running: None,
        })
    }

    /// A remote MCP server as it is on disk: what it asks (its URL's origin) and the
    /// grant recorded for it, stale when given to another URL or other headers
    /// ([`grants::remote_binding`]). No component, no limits of a sandbox.
    fn remote_on_disk(home: &ZotHome, identity: &Identity, m: &Manifest) -> Self {
        let granted = grants::load(home, identity).ok().flatten();
        let binding = grants::remote_binding(m);
        SandboxView {
            component: None,
            built_with: None,
            stdin: None,
            sha256: None,
            asked: m.permissions.clone(),
            limits: None,
            grant_stale: granted.as_ref().is_some_and(|g| g.sha256 != binding),
            granted: granted.map(Granted::Recorded),
            running: None,
        }
    }

    /// The grant file as recorded (on disk; started: `None`).
    pub fn recorded_grant(&self) -> Option<&Grant> {
        match &self.granted {
            Some(Granted::Recorded(grant)) => Some(grant),
            Some(Granted::Applied(_)) | None => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sandbox::Caps;

    fn asked() -> Permissions {
        serde_json::from_str(r#"{"cwd":"read"}"#).unwrap()
    }

    /// The shapes docs/cli.md (`list --json`'s `sandbox`) and docs/sidecar.md (a `list`
    /// entry's `sandbox`) document, field for field and in order.
    #[test]
    fn each_view_has_its_documented_shape() {
        let on_disk = SandboxView {
            component: None,
            built_with: None,
            stdin: None,
            sha256: None,
            asked: asked(),
            limits: Some(serde_json::from_str(r#"{"memory_mb":128}"#).unwrap()),
            granted: Some(Granted::Recorded(Grant {
                sha256: "375322e6".into(),
                caps: Caps {
                    memory_mb: Some(96),
                    ..Caps::default()
                },
                ..Grant::default()
            })),
            grant_stale: false,
            running: None,
        };
        assert_eq!(
            serde_json::to_string(&on_disk).unwrap(),
            r#"{"component":null,"asked":{"data_dir":true,"cwd":"read"},"limits":{"memory_mb":128},"granted":{"sha256":"375322e6","permissions":{"data_dir":true},"memory_mb":96},"grant_stale":false}"#
        );
        assert!(on_disk.recorded_grant().is_some());
        let started = SandboxView {
            component: Some(Kind::Reactor),
            built_with: None,
            stdin: None,
            sha256: Some("375322e6".into()),
            asked: asked(),
            limits: None,
            granted: Some(Granted::Applied(asked())),
            grant_stale: false,
            running: Some(Running {
                withheld: vec!["memory 128 MiB: 96 MiB granted".into()],
                run_grant: Vec::new(),
                memory_mb: 96,
                caps: InForce::defaults(),
            }),
        };
        assert_eq!(
            serde_json::to_string(&started).unwrap(),
            r#"{"component":"reactor","sha256":"375322e6","asked":{"data_dir":true,"cwd":"read"},"granted":{"data_dir":true,"cwd":"read"},"grant_stale":false,"withheld":["memory 128 MiB: 96 MiB granted"],"memory_mb":96,"caps":{"memory_mb":64,"disk_mb":256,"resources":1000,"http_requests":16,"field_kib":32}}"#
        );
        assert!(started.recorded_grant().is_none());
    }
}
