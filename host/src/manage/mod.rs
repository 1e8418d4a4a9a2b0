//! What the `zot` command needs besides running extensions: installing them
//! ([`install`]), the user's records ([`records`]: project trust, grants, provenance,
//! consent), keyed by [`identity`], the manifest and where things are found ([`manifest`],
//! [`discovery`], [`paths`]), the sidecar's one-extension bridge ([`bridge`]) and
//! components as `check` handles them ([`component`]). An agent that only runs
//! extensions needs none of it: see the crate root.
//!
//! `install` and `bridge` live here; the others are the core's own modules (it reads the
//! records before it starts anything), shown here for the tools that write them.

pub mod bridge;
pub mod install;

/// The user's records: project trust, grants, guards that fail closed, install
/// provenance, and what a consent writes of them.
pub mod records {
    pub use crate::records::confinement::{decide as confinement_of, Confinement};
    pub use crate::records::settings::{Settings, SettingsError};
    pub use crate::records::{consent, guard, provenance};

    /// Project trust: what the user reviewed and trusted, checked before a project's
    /// extension starts.
    pub mod trust {
        pub use crate::records::trust::{check, trust, untrust, ProjectExtension, Untrusted};
    }

    /// Where grants are kept (`$ZOT_HOME/grants`), read and written.
    pub mod grants {
        pub use crate::records::grants::{
            binding, grant, load, revoke, revoke_permissions, Bound, Granted, Revoked,
        };
    }
}

/// Who an extension is, for its grant, data and trust: the place it is installed.
pub mod identity {
    pub use crate::identity::{folder_key, Identity};
}

/// The manifest, `extension.json`.
pub mod manifest {
    pub use crate::manifest::{
        set_enabled, validate_name, Launch, Manifest, Permissions, TransportKind, MANIFEST_FILE,
    };
}

/// Where extensions are found: `--ext`, the project's, `$ZOT_HOME/extensions`.
pub mod discovery {
    pub use crate::discovery::{discover, Found, SearchPath, Source};
}

/// Where zot keeps things, and the project a folder belongs to.
pub mod paths {
    pub use crate::paths::{project_extensions_dir, project_root, real, write_atomic, ZotHome};
}

/// What the sandbox asks and gives, in the words the CLI shows and takes.
pub mod sandbox {
    pub use crate::records::{Grant, Permission};
    pub use crate::sandbox::view::Granted;
    pub use crate::sandbox::{
        asked_words, granted_words, grown_since, stale_warning, RunGrant, SandboxError,
    };
}

/// An extension's log (`$ZOT_HOME/logs/NAME.log`).
pub mod log {
    pub use crate::log::{ExtLog, MAX_LOG_BYTES};
}

/// Writing under a folder without following a link.
pub mod safe_write {
    pub use crate::util::safe_write::SafeDir;
}

/// A classic extension's confinement as `info`, `list --json` and `check` show it, and
/// what this kernel enforces (Linux).
pub mod confine {
    pub use crate::confine::view::{ConfineView, RuleView};
    #[cfg(target_os = "linux")]
    pub use crate::confine::{etc_allows, kernel_report, MAX_FILES};
}

/// Components as `zot ext check` handles them: the cache and its entries, the engine,
/// loading one.
pub mod component {
    pub use crate::component::{cache, entry};
    pub use crate::transport::wasm::{engine, load, prepare, Kind};
}
