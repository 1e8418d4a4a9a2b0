//! `zot ext list`: every installed extension (and each untrusted or shadowed copy) with
//! its state, where it came from, what it asks and was granted, and its confinement.

use super::*;

/// An extension's state as `zot ext list` shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum State {
    Enabled,
    Disabled,
    /// The manifest cannot be used; see [`Listed::error`].
    Error,
    /// A project-local extension the user has not trusted as it is now; see
    /// [`Listed::untrusted`].
    Untrusted,
}

impl State {
    /// `enabled`, `disabled` or `error`.
    pub fn as_str(self) -> &'static str {
        match self {
            State::Enabled => "enabled",
            State::Disabled => "disabled",
            State::Error => "error",
            State::Untrusted => "untrusted",
        }
    }
}

/// One row of `zot ext list`. Its JSON form is the public `--json` contract
/// (docs/cli.md): change it only additively.
#[derive(Debug, Clone, Serialize)]
pub struct Listed {
    pub name: String,
    pub version: String,
    pub description: String,
    /// Where it is installed: `project` or `global` (`explicit` never appears here).
    pub source: Source,
    /// The same as `source`, under the name `info`, `verify`, `check` and the sidecar
    /// use.
    pub scope: Source,
    pub dir: String,
    /// How the host talks to it: `stdio` for a manifest with `exec`, `wasm` for one with
    /// `wasm`.
    pub transport: TransportKind,
    pub enabled: bool,
    pub state: State,
    /// Why the manifest cannot be used (state `error`, or `untrusted` with a broken
    /// manifest).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Components only: what the manifest asks and what the user granted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<crate::sandbox::view::SandboxView>,
    /// Components only: the recorded grant (`null` when none: the data dir only);
    /// the same as `sandbox.granted`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub grant: Option<Option<crate::records::Grant>>,
    /// Classic extensions only: whether the user confined it, and which of its rules this
    /// kernel enforces.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub confinement: Option<crate::confine::view::ConfineView>,
    /// Where it was installed from (`null` when there is no install record).
    pub installed_from: Option<Origin>,
    /// Its whole install record as `info` shows it (with the hash of each file), `null`
    /// when there is none.
    pub provenance: Option<Provenance>,
    /// State `untrusted` only: why, and the command that trusts it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub untrusted: Option<crate::records::trust::Untrusted>,
    /// Something to review, e.g. `grant stale — `zot ext grant NAME` to review`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub warning: Option<String>,
}

/// Where an install came from: its record without the file hashes.
#[derive(Debug, Clone, Serialize)]
pub struct Origin {
    pub kind: SourceKind,
    pub source: String,
    #[serde(rename = "ref", skip_serializing_if = "Option::is_none")]
    pub git_ref: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
    pub installed_at: String,
}

impl From<Provenance> for Origin {
    fn from(p: Provenance) -> Origin {
        Origin {
            kind: p.kind,
            source: p.source,
            git_ref: p.git_ref,
            path: p.path,
            commit: p.commit,
            installed_at: p.installed_at,
        }
    }
}

impl Listed {
    /// The row of `found`, with its install record from `home`.
    pub fn of(found: &Found, home: &ZotHome) -> Listed {
        let raw = raw_manifest(&found.dir);
        let text = |key: &str| raw.get(key).and_then(Value::as_str).unwrap_or_default();
        let enabled = raw.get("enabled").and_then(Value::as_bool).unwrap_or(true);
        let state = match (&found.manifest, enabled) {
            (Err(_), _) => State::Error,
            (Ok(_), true) => State::Enabled,
            (Ok(_), false) => State::Disabled,
        };
        let record = match found.source {
            Source::Explicit => None,
            Source::Project | Source::Global => {
                provenance::load(home, &found.identity).ok().flatten()
            }
        };
        Listed {
            name: found.name(),
            version: text("version").to_string(),
            description: text("description").to_string(),
            source: found.source,
            dir: found.dir.display().to_string(),
            transport: match &found.manifest {
                Ok(m) => m.transport(),
                Err(_)
                    if raw
                        .get("mcp")
                        .and_then(|m| m.get("url"))
                        .is_some_and(|u| !u.is_null()) =>
                {
                    TransportKind::Remote
                }
                Err(_) if raw.get("wasm").is_some_and(|w| !w.is_null()) => TransportKind::Wasm,
                Err(_) => TransportKind::Stdio,
            },
            enabled,
            state,
            error: found.manifest.as_ref().err().map(ToString::to_string),
            sandbox: None,
            confinement: None,
            grant: None,
            untrusted: None,
            warning: None,
            installed_from: record.clone().map(Origin::from),
            provenance: record,
            scope: found.source,
        }
    }
}

/// The manifest as a JSON object, best effort (empty when unreadable), so that a broken
/// manifest still shows its version, description and `enabled`.
fn raw_manifest(dir: &Path) -> serde_json::Map<String, Value> {
    crate::util::tree::read_regular(
        &dir.join(MANIFEST_FILE),
        crate::manifest::MAX_MANIFEST_BYTES,
    )
    .ok()
    .and_then(|bytes| serde_json::from_slice(&bytes).ok())
    .unwrap_or_default()
}

/// What `zot ext list` shows.
#[derive(Debug, Clone)]
pub struct Listing {
    /// Project-local then global extensions, one per name, in load order; then the
    /// project-local ones the user has not trusted (state `untrusted`), which claim no
    /// name.
    pub active: Vec<Listed>,
    /// Extensions hidden by an earlier one of the same name.
    pub shadowed: Vec<Listed>,
}

/// Lists the project-local (below `cwd`) and global extensions.
pub fn list(cwd: &Path, home: &ZotHome) -> Listing {
    sweep_stale(&home.extensions_dir());
    sweep_stale(&project_extensions_dir(cwd));
    let found = discover(&search_path(cwd, home));
    let row = |f: &Found| {
        let mut row = Listed::of(f, home);
        let view = f.manifest.as_ref().ok().and_then(|m| {
            crate::sandbox::view::SandboxView::on_disk(home, &f.identity, m, &f.dir)
                .map(|view| (m, view))
        });
        if let Some((m, view)) = view {
            if view.grant_stale {
                row.warning = Some(crate::sandbox::stale_warning(&m.name, &f.identity, &f.dir));
            }
            row.grant = Some(view.recorded_grant().cloned());
            row.sandbox = Some(view);
        }
        if let Ok(m) = &f.manifest {
            row.confinement =
                crate::confine::view::ConfineView::on_disk(home, &f.identity, m, &f.dir);
            if row.confinement.as_ref().is_some_and(|c| c.stale) {
                row.warning = Some(format!(
                    "confined for other files: it does not start until `zot ext confine {}`",
                    crate::util::terminal_text::one_line(&m.name)
                ));
            }
        }
        row
    };
    let untrusted = found.untrusted.iter().map(|(f, untrusted)| {
        let mut row = row(f);
        row.state = State::Untrusted;
        row.untrusted = Some(untrusted.clone());
        row
    });
    Listing {
        active: found.found.iter().map(row).chain(untrusted).collect(),
        shadowed: found.shadowed.iter().map(row).collect(),
    }
}
