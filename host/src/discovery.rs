//! Finding extensions: `--ext` paths, then `./.zot/extensions` (only those the user
//! trusts, see [`crate::records::trust`]), then `$ZOT_HOME/extensions`.

use crate::identity::Identity;
use crate::manifest::{Manifest, ManifestError, MANIFEST_FILE};
use crate::paths::{project_extensions_dir, real, ZotHome};
use crate::records::trust::{self, Fingerprint, ProjectExtension, Untrusted};
use serde::Serialize;
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Where an extension was found. The order of the variants is the load order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    /// Given with `--ext PATH`.
    Explicit,
    /// `./.zot/extensions/<name>`.
    Project,
    /// `$ZOT_HOME/extensions/<name>`.
    Global,
}

impl Source {
    /// `explicit`, `project` or `global`.
    pub fn as_str(self) -> &'static str {
        match self {
            Source::Explicit => "explicit",
            Source::Project => "project",
            Source::Global => "global",
        }
    }
}

/// One extension directory found during discovery.
#[derive(Debug, Clone)]
pub struct Found {
    /// The extension's directory (the manifest's folder).
    pub dir: PathBuf,
    pub source: Source,
    /// Where it is installed: what its grant and data dir belong to.
    pub identity: Identity,
    /// The manifest, or why it could not be used.
    pub manifest: Result<Manifest, ManifestError>,
    /// The hashes of its files it was admitted on (a project extension's, found the
    /// same as the ones the user trusted): what its program is checked against at its
    /// start (`launcher`).
    pub admitted: Option<Arc<Fingerprint>>,
}

impl Found {
    /// The manifest's name, or the directory's name when the manifest is unusable.
    pub fn name(&self) -> String {
        match &self.manifest {
            Ok(m) => m.name.clone(),
            Err(_) => self
                .dir
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_else(|| self.dir.display().to_string()),
        }
    }
}

/// Where to look.
#[derive(Debug, Clone)]
pub struct SearchPath {
    /// `--ext` paths: an extension directory, its `extension.json`, or a bare component
    /// (any other file, e.g. `guard.wasm`: named and asking as its embedded manifest
    /// says, else named after the file and asking nothing).
    pub explicit: Vec<PathBuf>,
    /// The project directory whose `.zot/extensions` is searched.
    pub cwd: PathBuf,
    pub home: ZotHome,
    /// Also search the project-local and global folders (false: only `explicit`).
    pub installed: bool,
    /// With `installed`: search the project's `.zot/extensions` (false: `--no-project`).
    pub project: bool,
    /// With `installed`: search `$ZOT_HOME/extensions` (false: `--no-global`).
    pub global: bool,
    /// Run project-local extensions without the user's trust (an agent that asks for
    /// consent itself; what the published host does).
    pub trust_project: bool,
}

impl SearchPath {
    /// Whether extensions found at `source` are looked for: the one decision of what a
    /// load takes in (`--only`, `--no-project`, `--no-global`). What is not searched is
    /// not listed, not started, and hides nothing.
    pub fn searches(&self, source: Source) -> bool {
        match source {
            Source::Explicit => true,
            Source::Project => self.installed && self.project,
            Source::Global => self.installed && self.global,
        }
    }
}

/// Discovers extensions in load order: explicit paths as given, then project-local and
/// global folders each sorted by directory name. The first of a name wins; later ones
/// of the same name are returned in `shadowed`. A project-local extension the user has
/// not trusted (as it is now) is returned in `untrusted` and claims no name, so it hides
/// nothing (a repository cannot switch off a global extension by naming one like it).
pub fn discover(search: &SearchPath) -> Discovery {
    let mut candidates = Vec::new();
    for path in &search.explicit {
        let path = std::path::absolute(path).unwrap_or_else(|_| path.clone());
        if path.is_file() && path.file_name().is_some_and(|n| n != MANIFEST_FILE) {
            // A file that is not a manifest is a bare component (loading it says what it
            // is if it is not one); its folder is its extension directory.
            candidates.push(Candidate {
                dir: path.parent().map(Path::to_path_buf).unwrap_or_default(),
                source: Source::Explicit,
                bare: Some(path),
            });
            continue;
        }
        let dir = if path.file_name().is_some_and(|n| n == MANIFEST_FILE) {
            path.parent().map(Path::to_path_buf).unwrap_or_default()
        } else {
            path
        };
        candidates.push(Candidate {
            dir,
            source: Source::Explicit,
            bare: None,
        });
    }
    let global = search.home.extensions_dir();
    let project = project_extensions_dir(&search.cwd);
    // $ZOT_HOME inside the project (`ZOT_HOME=./.zot`): its folders are the user's
    // global installs, found once, as such.
    if search.searches(Source::Project) && real(&project) != real(&global) {
        candidates.extend(list_dir(&project).into_iter().map(|dir| Candidate {
            dir,
            source: Source::Project,
            bare: None,
        }));
    }
    if search.searches(Source::Global) {
        candidates.extend(list_dir(&global).into_iter().map(|dir| Candidate {
            dir,
            source: Source::Global,
            bare: None,
        }));
    }
    let mut seen = HashSet::new();
    let mut out = Discovery::default();
    let project = crate::paths::project_root(&search.cwd);
    for Candidate { dir, source, bare } in candidates {
        let mut found = Found {
            manifest: match bare.as_deref() {
                Some(wasm) => Manifest::bare_component(wasm),
                // A path given that leads nowhere is said so, not as an unreadable file.
                None if source == Source::Explicit && dir.symlink_metadata().is_err() => {
                    Err(crate::manifest::ManifestError {
                        path: dir.clone(),
                        kind: crate::manifest::ManifestErrorKind::NoSuchDirectory,
                    })
                }
                None => Manifest::read(&dir),
            },
            identity: identity(source, &project, bare.as_deref().unwrap_or(&dir), search),
            dir,
            source,
            admitted: None,
        };
        match admit(search, &project, &found) {
            Ok(files) => found.admitted = files.map(Arc::new),
            Err(why) => {
                out.untrusted.push((found, why));
                continue;
            }
        }
        // A broken manifest claims no name: it is reported, and cannot hide a good one.
        if found.manifest.is_err() || seen.insert(found.name()) {
            out.found.push(found);
        } else {
            out.shadowed.push(found);
        }
    }
    out
}

/// Who an extension found at `path` is. Whatever is found in the project's
/// `.zot/extensions` — whatever its folder is named, however `.zot` or `extensions` is
/// linked — is that project's, by where it was found, not by where it really is.
fn identity(source: Source, project: &Path, path: &Path, search: &SearchPath) -> Identity {
    match source {
        Source::Explicit | Source::Global => Identity::of(path, &search.home),
        Source::Project => {
            Identity::project(project.to_path_buf(), path.file_name().unwrap_or_default())
        }
    }
}

/// The one decision whether a found extension may start. The only starts without the
/// user's trust of that very code are what the user named (`--ext`) and installed for
/// themselves (`$ZOT_HOME/extensions`); everything of a project starts only if trusted
/// as it is now (or, with `trust_project`, because the embedding agent asks the user
/// itself). Every case is spelled out: a new source or identity does not compile until
/// someone decides. Admitted on its trust, the hashes of its files found as trusted.
fn admit(
    search: &SearchPath,
    project: &Path,
    found: &Found,
) -> Result<Option<Fingerprint>, Untrusted> {
    match found.source {
        Source::Explicit => Ok(None),
        Source::Global => Ok(None),
        Source::Project if search.trust_project => Ok(None),
        Source::Project => match &found.identity {
            Identity::Project { dir_name, .. } => trust::check(
                &search.home,
                project,
                &ProjectExtension {
                    dir_name,
                    dir: &found.dir,
                    manifest: found.manifest.as_ref().ok(),
                },
            )
            .map(Some),
            // Discovery gives every project folder a project identity; were it ever
            // otherwise, nothing of a project starts untrusted.
            Identity::Global { .. } | Identity::Path { .. } => Err(Untrusted::unreadable(
                project,
                format!(
                    "{} is not known as a project extension",
                    found.dir.display()
                ),
            )),
        },
    }
}

/// A place to look for an extension: a directory, or a bare component file in it.
struct Candidate {
    dir: PathBuf,
    source: Source,
    bare: Option<PathBuf>,
}

/// The result of [`discover`].
#[derive(Debug, Default)]
pub struct Discovery {
    /// Extensions to consider, in load order, one per name.
    pub found: Vec<Found>,
    /// Later extensions whose name an earlier one already had.
    pub shadowed: Vec<Found>,
    /// Project-local extensions not started until the user trusts them, and why.
    pub untrusted: Vec<(Found, Untrusted)>,
}

/// Sub-directories of `root` that hold a manifest, sorted by name. Dot directories are
/// not extensions (installs are staged in them).
fn list_dir(root: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(root) else {
        return Vec::new();
    };
    let mut dirs: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
        .map(|e| e.path())
        .filter(|p| p.join(MANIFEST_FILE).is_file())
        .collect();
    dirs.sort();
    dirs
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, name: &str, body: &str) -> PathBuf {
        let d = dir.join(name);
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join(MANIFEST_FILE), body).unwrap();
        d
    }

    #[test]
    fn explicit_then_project_then_global_first_name_wins() {
        let tmp = zot_test_fixtures::fresh_dir("disc");
        let cwd = tmp.join("proj");
        let home = ZotHome::new(tmp.join("home"));
        let proj = project_extensions_dir(&cwd);
        write(&proj, "b", r#"{"name":"b","exec":"x"}"#);
        write(&proj, "a", r#"{"name":"shared","exec":"x"}"#);
        write(
            &home.extensions_dir(),
            "shared",
            r#"{"name":"shared","exec":"y"}"#,
        );
        write(&home.extensions_dir(), "broken", r#"{"exec":"y"}"#);
        let explicit = write(&tmp, "explicit", r#"{"name":"e","exec":"x"}"#);
        let mut search = SearchPath {
            explicit: vec![explicit.join(MANIFEST_FILE)],
            cwd,
            home,
            installed: true,
            project: true,
            global: true,
            trust_project: true,
        };
        let found = |d: &Discovery| -> Vec<(String, Source)> {
            d.found.iter().map(|f| (f.name(), f.source)).collect()
        };
        let d = discover(&search);
        assert_eq!(
            found(&d),
            [
                ("e".into(), Source::Explicit),
                ("shared".into(), Source::Project),
                ("b".into(), Source::Project),
                ("broken".into(), Source::Global),
            ]
        );
        assert!(d.found[3].manifest.is_err());
        assert_eq!(d.shadowed.len(), 1);
        assert_eq!(d.shadowed[0].source, Source::Global);

        // Untrusted, the project's extensions claim no name: the global `shared` loads.
        search.trust_project = false;
        let d = discover(&search);
        assert_eq!(
            found(&d),
            [
                ("e".into(), Source::Explicit),
                ("broken".into(), Source::Global),
                ("shared".into(), Source::Global),
            ]
        );
        let untrusted: Vec<_> = d.untrusted.iter().map(|(f, _)| f.name()).collect();
        assert_eq!(untrusted, ["shared", "b"]);
        assert!(d.shadowed.is_empty());
        std::fs::remove_dir_all(&tmp).unwrap();
    }
}
