//! What an embedder reads back: the load report ([`LoadReport`] and its parts), the
//! listing of extensions ([`ExtensionInfo`], [`ExtState`]) and the interception chain's
//! verdict ([`Verdict`], [`InterceptStep`]); and the helpers that build them.

use super::state::{Entry, EntryState};
use crate::discovery::{Discovery, Found, Source};
use crate::extension::Phase;
use crate::manifest::TransportKind;
use crate::records::trust::Untrusted;
use crate::registry::{Owned, Registry};
use crate::sandbox::view::SandboxView;
use serde::Serialize;
use serde_json::Value;
use std::path::PathBuf;

/// An extension as the host lists it.
#[derive(Debug, Clone, Serialize)]
#[non_exhaustive]
pub struct ExtensionInfo {
    pub name: String,
    pub version: String,
    /// Where it was found: `explicit` (`--ext`), `project` or `global`.
    pub source: Source,
    /// The same as `source`, under the name `zot ext list`, `info`, `verify` and
    /// `check` use.
    pub scope: Source,
    pub transport: TransportKind,
    pub state: ExtState,
    #[serde(serialize_with = "crate::paths::serialize_lossy")]
    pub dir: PathBuf,
    #[serde(serialize_with = "crate::paths::serialize_lossy")]
    pub log: PathBuf,
    pub commands: Vec<String>,
    pub tools: Vec<String>,
    pub shadowed: Vec<String>,
    pub events: Vec<String>,
    pub intercept: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Components only: their kind, hash, permissions and limits.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<SandboxView>,
    /// State `untrusted` only: why, and the command that trusts it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub untrusted: Option<Untrusted>,
    /// Once it exited by itself: how often it was started again, why it last exited,
    /// and whether restarts gave up.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub restarts: Option<super::RestartInfo>,
}

impl ExtensionInfo {
    /// How the extension of `e` is listed, with what it owns in `registry`.
    pub(super) fn of(e: &Entry, registry: &Registry) -> ExtensionInfo {
        let untrusted = match &e.state {
            EntryState::Untrusted(u) => Some(u.clone()),
            _ => None,
        };
        let (state, error, owned, status) = match &e.state {
            EntryState::Disabled => (ExtState::Disabled, None, Owned::default(), None),
            EntryState::Error(msg) => (ExtState::Error, Some(msg.clone()), Owned::default(), None),
            EntryState::Untrusted(u) => (
                ExtState::Untrusted,
                Some(u.message()),
                Owned::default(),
                None,
            ),
            EntryState::Starting => (ExtState::Starting, None, Owned::default(), None),
            EntryState::Running(ext) => {
                let status = ext.status();
                // The exit is recorded before `extension_exited` is sent, so a
                // listing made after that event always says `exited`.
                let (state, error) = match (&status.exit, ext.phase()) {
                    (Some(exit), _) => (ExtState::Exited, Some(exit.to_string())),
                    (None, Phase::Starting) => (ExtState::Starting, None),
                    (None, _) => (ExtState::Ready, None),
                };
                (state, error, registry.of(ext), Some(status))
            }
        };
        let status = status.unwrap_or_default();
        ExtensionInfo {
            name: e.name.clone(),
            version: e.version.clone(),
            source: e.source,
            scope: e.source,
            transport: e.transport,
            sandbox: e.sandbox.clone(),
            state,
            dir: e.dir.clone(),
            log: e.log.clone(),
            commands: owned.commands,
            tools: owned.tools,
            shadowed: owned.shadowed,
            events: status.events.into_iter().collect(),
            intercept: status.intercept.into_iter().collect(),
            error,
            untrusted,
            restarts: Some(e.restarts.info.clone())
                .filter(|r| r.count > 0 || r.given_up || r.last_exit.is_some()),
        }
    }
}

/// Where an extension is, as `list` shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ExtState {
    /// Started, not ready yet.
    Starting,
    Ready,
    /// Gone; [`ExtensionInfo::error`] says why.
    Exited,
    /// `"enabled": false` in its manifest: not started.
    Disabled,
    /// Could not be started; [`ExtensionInfo::error`] says why.
    Error,
    /// A project-local extension the user has not trusted as it is now: not started;
    /// [`ExtensionInfo::untrusted`] says why and how to trust it.
    Untrusted,
}

/// What `load` (and `reload`) did.
#[derive(Debug, Clone, Default, Serialize)]
#[non_exhaustive]
pub struct LoadReport {
    /// Extensions stopped first (reload only).
    pub stopped: Vec<String>,
    /// Extensions started.
    pub loaded: Vec<String>,
    /// Extensions still being started when the ready wait ended (a component compiling):
    /// they start in the background; their registrations arrive with `registry_changed`,
    /// a failure with `extension_exited`.
    pub starting: Vec<String>,
    /// Started extensions that became ready within the ready wait.
    pub ready: Vec<String>,
    /// Started extensions that did not become ready within the ready wait and are still
    /// running (one that never said `hello`, say); each has a warning too.
    pub not_ready: Vec<String>,
    /// Extensions that could not be started, and why.
    pub errors: Vec<LoadError>,
    /// Project-local extensions not started because the user has not trusted them.
    pub untrusted: Vec<UntrustedReport>,
    /// Extensions that started, with something the user should review (a stale grant).
    pub warnings: Vec<LoadWarning>,
    /// Guards that fail closed (`zot ext guard NAME --fail-closed`): a `tool_call` one of
    /// them cannot answer (no answer in time, an exit, not running) is blocked.
    pub fail_closed: Vec<String>,
}

/// A project-local extension that was not started: untrusted.
#[derive(Debug, Clone, Serialize)]
#[non_exhaustive]
pub struct UntrustedReport {
    pub extension: String,
    #[serde(serialize_with = "crate::paths::serialize_lossy")]
    pub dir: PathBuf,
    #[serde(flatten)]
    pub untrusted: Untrusted,
}

/// Something to review about a started extension.
#[derive(Debug, Clone, Serialize)]
#[non_exhaustive]
pub struct LoadWarning {
    pub extension: String,
    pub warning: String,
}

/// One extension that could not be started.
#[derive(Debug, Clone, Serialize)]
#[non_exhaustive]
pub struct LoadError {
    pub extension: String,
    pub error: String,
}

/// A warning for each extension of `found` not loaded because one found earlier has
/// its name.
pub(super) fn shadowed_warnings(found: &Discovery) -> Vec<LoadWarning> {
    found
        .shadowed
        .iter()
        .map(|dup| {
            let name = dup.name();
            let winner = found.found.iter().find(|f| f.name() == name);
            LoadWarning {
                warning: shadowed_warning(dup, winner),
                extension: name,
            }
        })
        .collect()
}

/// What the load report says of an extension not loaded because `winner`, found
/// earlier, has its name: which copy does not load and which takes its place. The first
/// of a name wins even if it then fails to start: the copy the user named with `--ext`
/// is the one under test, and another running in its place would hide that it fails.
fn shadowed_warning(dup: &Found, winner: Option<&Found>) -> String {
    let copy = |f: &Found| match f.source {
        Source::Explicit => format!("the --ext copy at {}", f.dir.display()),
        Source::Project => format!("the project copy at {}", f.dir.display()),
        Source::Global => format!("the global copy at {}", f.dir.display()),
    };
    match winner {
        Some(winner) => format!(
            "{} is not loaded: {} has its name and takes its place (also if it fails to start)",
            copy(dup),
            copy(winner)
        ),
        None => format!(
            "{} is not loaded: another extension has its name",
            copy(dup)
        ),
    }
}

/// The interception chain's verdict.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[non_exhaustive]
pub struct Verdict {
    pub block: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The tool arguments after every rewrite, if any interceptor rewrote them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub modified_args: Option<Value>,
    /// The assistant text after every rewrite, if any interceptor replaced it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replace_text: Option<String>,
}

/// One interceptor's answer, as [`Host::intercept_steps`](super::Host::intercept_steps)
/// reports it.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[non_exhaustive]
pub struct InterceptStep {
    /// The interceptor.
    pub extension: String,
    /// What it answered; `None`: no answer in time, or it is gone (counted as allow).
    pub answer: Option<Verdict>,
}
