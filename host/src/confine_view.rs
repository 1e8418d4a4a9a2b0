//! A classic extension's confinement as people and programs see it: one view for `zot
//! ext info`, `zot ext list --json` and `zot ext check` (docs/cli.md). Whether the user
//! confined it, whether that decision is for the files on disk, and each rule with
//! whether this kernel enforces it (read from the kernel, not assumed).

use crate::identity::Identity;
use crate::manifest::{Launch, Manifest};
use crate::paths::ZotHome;
use crate::sandbox::{grants, Grant};
use serde::Serialize;
use std::path::Path;

/// The confinement of a classic extension.
#[derive(Debug, Clone, Serialize)]
pub struct ConfineView {
    /// The user confined it (`zot ext confine`).
    pub confined: bool,
    /// Confined for other files than those on disk: it does not start until confined
    /// again.
    pub stale: bool,
    /// The Landlock ABI of this kernel (0: none); `null` where confinement does not exist
    /// (not Linux).
    pub landlock_abi: Option<i64>,
    /// Confined: each rule and whether this kernel enforces it; else empty.
    pub rules: Vec<RuleView>,
}

/// One rule of a confinement.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct RuleView {
    pub rule: String,
    pub enforced: bool,
    /// Not enforced: why (`needs Landlock ABI 9, this kernel has 7`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
}

impl ConfineView {
    /// The classic extension of manifest `m` in `dir`, installed as `identity`, with the
    /// grant recorded for it in `home`; `None` for a component. A grant that cannot be
    /// read counts as confined and stale: it would not start.
    pub fn on_disk(home: &ZotHome, identity: &Identity, m: &Manifest, dir: &Path) -> Option<Self> {
        let Launch::Exec(_) = m.launch(dir) else {
            return None;
        };
        let grant = match grants::load(home, identity) {
            Ok(Some(grant)) if grant.confine => grant,
            Ok(Some(_) | None) => return Some(Self::of(false, false, None)),
            Err(_) => return Some(Self::of(true, true, None)),
        };
        let current = crate::trust::digest(dir, Some(m)).is_ok_and(|d| d == grant.sha256);
        Some(Self::of(true, !current, Some((m, &grant))))
    }

    /// Confined or not, with the rules of `confined` (its manifest and grant) when known.
    fn of(confined: bool, stale: bool, rules_of: Option<(&Manifest, &Grant)>) -> Self {
        #[cfg(target_os = "linux")]
        {
            let network = rules_of.map(|(m, g)| network(m, g)).unwrap_or_default();
            let (abi, rules) = crate::confine::kernel_report(&network);
            let rules = match confined {
                true => rules
                    .into_iter()
                    .map(|r| RuleView {
                        rule: r.what.to_string(),
                        enforced: r.not_enforced.is_none(),
                        why: r.not_enforced,
                    })
                    .collect(),
                false => Vec::new(),
            };
            ConfineView {
                confined,
                stale,
                landlock_abi: Some(abi),
                rules,
            }
        }
        #[cfg(not(target_os = "linux"))]
        {
            let _ = rules_of;
            ConfineView {
                confined,
                stale,
                landlock_abi: None,
                rules: Vec::new(),
            }
        }
    }
}

/// The network a confined extension of manifest `m` with `grant` gets: the ports of the
/// HTTP entries it asks for and was granted.
#[cfg(target_os = "linux")]
fn network(m: &Manifest, grant: &Grant) -> crate::confine::Network {
    let mut ports: Vec<u16> = m
        .permissions
        .http
        .iter()
        .filter(|entry| grant.permissions.http.contains(entry))
        .filter_map(|entry| crate::caps::HostPattern::parse(entry).ok())
        .map(|p| p.port_or_default())
        .collect();
    ports.sort_unstable();
    ports.dedup();
    match ports.is_empty() {
        true => crate::confine::Network::Off,
        false => crate::confine::Network::TcpPorts(ports),
    }
}
