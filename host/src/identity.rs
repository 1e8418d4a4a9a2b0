//! Who an extension is, for what belongs to it — its grant, its data directory and its
//! project trust: the place it is installed, never its name. Two extensions of one name
//! (a global install and a project's copy, or two `--ext` folders) are two identities
//! and share nothing.

use crate::manifest::validate_name;
use crate::paths::{real, ZotHome};
use sha2::{Digest, Sha256};
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// Where an extension is installed, as the key of what belongs to it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Identity {
    /// `$ZOT_HOME/extensions/<dir_name>`: installed for the user.
    Global { dir_name: String },
    /// `<project>/.zot/extensions/<folder>`, `project` being a real path; `dir_name` is
    /// the folder's name, or `@` and a hash of it ([`folder_key`]).
    Project { project: PathBuf, dir_name: String },
    /// Anything else (an `--ext` folder or component), by its real path.
    Path { path: PathBuf },
}

impl Identity {
    /// The identity of the extension at `path` (its folder, or a bare component file),
    /// judged by the folder it is in. The last component is not followed: an extension
    /// installed as a link is that link, not what it points to.
    ///
    /// Every branch is a decision: a folder of `$ZOT_HOME/extensions` with a plain name
    /// is a global install; any folder below a project's `.zot/extensions` — as written
    /// (however `.zot` or `extensions` is linked) or as really placed, whatever its name —
    /// is that project's; anything else is known by its real path.
    pub fn of(path: &Path, home: &ZotHome) -> Identity {
        let path = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
        let (Some(parent), Some(name)) = (path.parent(), path.file_name()) else {
            return Identity::Path { path };
        };
        let real_parent = real(parent);
        let plain = name.to_str().filter(|n| validate_name(n).is_ok());
        if let Some(dir_name) = plain.filter(|_| real_parent == real(&home.extensions_dir())) {
            return Identity::Global {
                dir_name: dir_name.to_string(),
            };
        }
        let project = project_of(parent)
            .map(real)
            .or_else(|| project_of(&real_parent).map(Path::to_path_buf));
        match project {
            Some(project) => Identity::project(project, name),
            None => Identity::Path {
                path: real_parent.join(name),
            },
        }
    }

    /// The extension in the folder `folder` of `project`'s `.zot/extensions` (`project`
    /// a real path), whatever the folder is named.
    pub fn project(project: PathBuf, folder: &OsStr) -> Identity {
        Identity::Project {
            project,
            dir_name: folder_key(folder),
        }
    }

    /// The relative path below `$ZOT_HOME/grants` (plus `.json`) and `$ZOT_HOME/data`:
    /// `<dir_name>` for a global install (as before identities), `@project/<project
    /// key>/<dir_name>`, `@path/<key>`. No extension name starts with `@`, so no global
    /// install can reach another identity's files.
    pub fn key(&self) -> PathBuf {
        match self {
            Identity::Global { dir_name } => PathBuf::from(dir_name),
            Identity::Project { project, dir_name } => Path::new("@project")
                .join(project_key(project))
                .join(dir_name),
            Identity::Path { path } => Path::new("@path").join(path_key(path)),
        }
    }

    /// In words: `the global install weather`, `the project /p's extension weather`,
    /// `the extension at /x/weather`.
    pub fn describe(&self) -> String {
        match self {
            Identity::Global { dir_name } => format!("the global install {dir_name}"),
            Identity::Project { project, dir_name } => {
                format!("{}'s project extension {dir_name}", project.display())
            }
            Identity::Path { path } => format!("the extension at {}", path.display()),
        }
    }
}

/// The key of a project (a real path): its folder's name and 16 hex digits of the
/// SHA-256 of its path, e.g. `myrepo-3f2a9c0d1e2b4a5f`.
pub fn project_key(project: &Path) -> String {
    path_key(project)
}

/// How a project's extension folder is named in its trust record and identity key: its
/// name when it is UTF-8 and does not start with `@` (a single path component: a folder
/// name holds no `/` and is never `.` or `..`), else `@` and 16 hex digits of the
/// SHA-256 of its bytes (so the two forms cannot meet).
pub fn folder_key(folder: &OsStr) -> String {
    match folder.to_str() {
        Some(name) if !name.starts_with('@') => name.to_string(),
        Some(_) | None => format!("@{}", hex16(folder.as_bytes())),
    }
}

/// 16 hex digits of the SHA-256 of `bytes`.
fn hex16(bytes: &[u8]) -> String {
    Sha256::digest(bytes)[..8]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// `<slug>-<16 hex of sha256(path)>`: readable, and unique per path.
fn path_key(path: &Path) -> String {
    let hex = hex16(path.as_os_str().as_bytes());
    let slug: String = path
        .file_name()
        .map(|n| n.to_string_lossy())
        .unwrap_or_default()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '_'
            }
        })
        .take(40)
        .collect();
    let slug = slug.trim_start_matches('.');
    if slug.is_empty() {
        hex
    } else {
        format!("{slug}-{hex}")
    }
}

/// Where an identity's own files live in `$ZOT_HOME`.
impl ZotHome {
    /// One extension's private data folder: `$ZOT_HOME/data/<its identity's key>`
    /// (`data/<name>` for a global install).
    pub fn data_dir(&self, identity: &Identity) -> PathBuf {
        self.root().join("data").join(identity.key())
    }

    /// What the last confined start of an extension applied:
    /// `$ZOT_HOME/confined/<its identity's key>.json`.
    pub fn confined_record_path(&self, identity: &Identity) -> PathBuf {
        let mut path = self.root().join("confined").join(identity.key());
        path.as_mut_os_string().push(".json");
        path
    }

    /// One extension's grant: `$ZOT_HOME/grants/<its identity's key>.json`.
    pub fn grant_path(&self, identity: &Identity) -> PathBuf {
        let mut path = self.root().join("grants").join(identity.key());
        path.as_mut_os_string().push(".json");
        path
    }

    /// Whether one extension's guard fails closed: `$ZOT_HOME/guards/<its identity's
    /// key>.json` ([`crate::records::guard`]).
    pub fn guard_path(&self, identity: &Identity) -> PathBuf {
        let mut path = self.root().join("guards").join(identity.key());
        path.as_mut_os_string().push(".json");
        path
    }

    /// One install's record: `$ZOT_HOME/provenance/<its identity's key>.json`
    /// (`provenance/<name>.json` for a global install). A project's copies are recorded
    /// here too, never in the project, which anyone who can write to it could forge.
    pub fn provenance_path(&self, identity: &Identity) -> PathBuf {
        let mut path = self.root().join("provenance").join(identity.key());
        path.as_mut_os_string().push(".json");
        path
    }
}

/// The project whose `.zot/extensions` folder is `folder`, if it is one by its path.
fn project_of(folder: &Path) -> Option<&Path> {
    let zot = folder
        .parent()
        .filter(|_| folder.file_name().is_some_and(|n| n == "extensions"))?;
    zot.parent()
        .filter(|_| zot.file_name().is_some_and(|n| n == ".zot"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identity_follows_the_place_not_the_name() {
        let root = real(&std::env::temp_dir()).join(format!("zot-id-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let home = ZotHome::new(root.join("home"));
        let project = root.join("proj");
        for d in [
            home.extensions_dir().join("weather"),
            project.join(".zot/extensions/weather"),
            root.join("dev/weather"),
        ] {
            std::fs::create_dir_all(d).unwrap();
        }
        std::os::unix::fs::symlink(&project, root.join("link-to-proj")).unwrap();

        let global = Identity::of(&home.extensions_dir().join("weather"), &home);
        let local = Identity::of(&project.join(".zot/extensions/weather"), &home);
        let via_link = Identity::of(&root.join("link-to-proj/.zot/extensions/weather"), &home);
        let dev = Identity::of(&root.join("dev/weather"), &home);
        let bare = Identity::of(&root.join("dev/weather.wasm"), &home);
        assert_eq!(
            global,
            Identity::Global {
                dir_name: "weather".into()
            }
        );
        assert_eq!(global.key(), PathBuf::from("weather"));
        assert_eq!(
            local,
            Identity::Project {
                project: project.clone(),
                dir_name: "weather".into()
            }
        );
        assert_eq!(
            via_link, local,
            "a project reached through a link is itself"
        );
        let keys = [&global, &local, &dev, &bare].map(Identity::key);
        for (i, a) in keys.iter().enumerate() {
            for b in &keys[i + 1..] {
                assert_ne!(a, b);
            }
        }
        assert!(local.key().starts_with("@project"), "{:?}", local.key());
        assert!(dev.key().starts_with("@path"), "{:?}", dev.key());
        let odd = Identity::of(&home.extensions_dir().join("@project"), &home);
        assert!(matches!(odd, Identity::Path { .. }), "{odd:?}");
        std::fs::remove_dir_all(&root).unwrap();
    }
}
