//! A classic extension's confinement as people and programs see it: one view for `zot
//! ext info`, `zot ext list --json` and `zot ext check` (docs/cli.md). Whether the user
//! confined it, whether that decision is for the files on disk, and each rule with
//! whether it is enforced: as its last confined start applied them (each start records
//! what it applied, [`record_applied`]), else as this kernel and this process would
//! apply them, said as such.

use crate::identity::Identity;
use crate::manifest::{Launch, Manifest};
use crate::paths::ZotHome;
use crate::records::confinement::{decide, Confinement};
use crate::records::Grant;
use serde::{Deserialize, Serialize};
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
    /// Confined: each rule and whether it is enforced; else empty.
    pub rules: Vec<RuleView>,
    /// When its last confined start applied `rules` (RFC 3339); `null`: not started
    /// confined yet, `rules` being what this kernel would apply.
    pub applied_at: Option<String>,
}

/// What a confined start applied, as recorded in `$ZOT_HOME/confined/`.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Applied {
    applied_at: String,
    landlock_abi: i64,
    rules: Vec<RuleView>,
}

/// Records what the confined start of `identity` just applied (`abi`, `rules`): what
/// `info` and `list` then say. A record that cannot be written is logged by the caller;
/// the view then says what the kernel would apply.
#[cfg(target_os = "linux")]
pub(crate) fn record_applied(
    home: &ZotHome,
    identity: &Identity,
    abi: i64,
    rules: &[crate::confine::Rule],
) -> std::io::Result<()> {
    let applied = Applied {
        applied_at: humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string(),
        landlock_abi: abi,
        rules: rules.iter().map(RuleView::from).collect(),
    };
    let bytes = serde_json::to_vec_pretty(&applied).map_err(std::io::Error::other)?;
    crate::paths::write_atomic(&home.confined_record_path(identity), &bytes)
}

/// The record of the last confined start of `identity`, if there is one that reads.
fn last_applied(home: &ZotHome, identity: &Identity) -> Option<Applied> {
    let bytes =
        crate::util::tree::read_regular(&home.confined_record_path(identity), 1 << 20).ok()?;
    serde_json::from_slice(&bytes).ok()
}

/// One rule of a confinement.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
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
            } => match last_applied(home, identity) {
                Some(applied) => ConfineView {
                    confined: true,
                    stale: false,
                    by_default,
                    landlock_abi: Some(applied.landlock_abi),
                    rules: applied.rules,
                    applied_at: Some(applied.applied_at),
                },
                None => Self::of(true, false, by_default, Some((m, grant.as_ref()))),
            },
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
                true => rules.iter().map(RuleView::from).collect(),
                false => Vec::new(),
            };
            ConfineView {
                confined,
                stale,
                by_default,
                landlock_abi: Some(abi),
                rules,
                applied_at: None,
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
                applied_at: None,
            }
        }
    }
}

#[cfg(target_os = "linux")]
impl From<&crate::confine::Rule> for RuleView {
    fn from(r: &crate::confine::Rule) -> Self {
        RuleView {
            rule: r.what.to_string(),
            enforced: r.not_enforced.is_none(),
            why: r.not_enforced.clone(),
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
                    rule: "files: read only the program folders".into(),
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
            applied_at: Some("2026-12-03T08:00:00Z".into()),
        };
        assert_eq!(
            serde_json::to_string(&view).unwrap(),
            r#"{"confined":true,"stale":false,"by_default":false,"landlock_abi":7,"rules":[{"rule":"files: read only the program folders","enforced":true},{"rule":"no connection to UNIX socket files outside its data and temp dirs","enforced":false,"why":"needs Landlock ABI 9, this kernel has 7"}],"applied_at":"2026-12-03T08:00:00Z"}"#
        );
    }
}
