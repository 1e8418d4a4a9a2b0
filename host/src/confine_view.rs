//! A classic extension's confinement as people and programs see it: one view for `zot
//! ext info`, `zot ext list --json` and `zot ext check` (docs/cli.md). Whether the user
//! confined it, whether that decision is for the files on disk, and each rule with
//! whether this kernel enforces it (read from the kernel, not assumed).

use crate::confine_decision::{decide, Confinement};
use crate::identity::Identity;
use crate::manifest::{Launch, Manifest};
use crate::paths::ZotHome;
use crate::sandbox::Grant;
use serde::Serialize;
use std::path::Path;

/// The confinement of a classic extension.
#[derive(Debug, Clone, Serialize)]
pub struct ConfineView {
    /// The user confined it (`zot ext confine`).
    pub confined: bool,
    /// It does not start: confined for other files than those on disk (until confined
    /// again), or its grant or the settings cannot be read.
    pub stale: bool,
    /// Confined by the host-wide setting (`settings.json`), not by its own grant.
    pub by_default: bool,
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
        Some(match decide(home, identity, m, dir) {
            Confinement::Unconfined { .. } => Self::of(false, false, false, None),
            Confinement::Refused(_) => Self::of(true, true, false, None),
            Confinement::Confined {
                grant, by_default, ..
            } => Self::of(true, false, by_default, Some((m, grant.as_ref()))),
        })
    }

    /// Confined or not, with the rules of `confined` (its manifest and grant) when known.
    fn of(
        confined: bool,
        stale: bool,
        by_default: bool,
        rules_of: Option<(&Manifest, Option<&Grant>)>,
    ) -> Self {
        #[cfg(target_os = "linux")]
        {
            let network = match rules_of {
                Some((m, Some(grant))) => network(m, grant),
                Some((_, None)) | None => Default::default(),
            };
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
                by_default,
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
                by_default,
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The shape docs/cli.md (`list --json`'s `confinement`) documents, in order.
    #[test]
    fn the_view_has_its_documented_shape() {
        let view = ConfineView {
            confined: true,
            stale: false,
            by_default: false,
            landlock_abi: Some(7),
            rules: vec![
                RuleView {
                    rule: "files: read only the system and its folder".into(),
                    enforced: true,
                    why: None,
                },
                RuleView {
                    rule: "no connection to UNIX socket files outside its data and temp dirs"
                        .into(),
                    enforced: false,
                    why: Some("needs Landlock ABI 9, this kernel has 7".into()),
                },
            ],
        };
        assert_eq!(
            serde_json::to_string(&view).unwrap(),
            r#"{"confined":true,"stale":false,"by_default":false,"landlock_abi":7,"rules":[{"rule":"files: read only the system and its folder","enforced":true},{"rule":"no connection to UNIX socket files outside its data and temp dirs","enforced":false,"why":"needs Landlock ABI 9, this kernel has 7"}]}"#
        );
    }
}
