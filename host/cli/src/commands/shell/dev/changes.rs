//! What `zot ext dev` watches (the files of the extension's folder but build output,
//! version control, dependencies, caches, editor files and `$ZOT_HOME`, the extension's
//! data and log, when it is inside) and how it hears of a change: inotify (the `notify`
//! crate), one watch per folder so an ignored folder costs nothing; a walk of the folder
//! at every poll only when inotify cannot start or fails.

use notify::{EventKind, RecursiveMode, Watcher as _};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

/// Folders not watched: build output, version control, dependencies, caches.
const IGNORED_DIRS: &[&str] = &["target", ".git", "node_modules", "dist", "__pycache__"];

/// The watched files (relative paths) with their sizes and modification times.
pub(super) type Files = BTreeMap<PathBuf, (u64, Option<SystemTime>)>;

/// The extension's folder, as watched.
pub(super) struct Tree {
    root: PathBuf,
    /// Not the user's files: `$ZOT_HOME` (data, logs) when it is inside `root`.
    skip: PathBuf,
}

impl Tree {
    pub(super) fn new(root: PathBuf, skip: PathBuf) -> Tree {
        Tree { root, skip }
    }

    /// `path` relative to the folder, unless a change there is none of the user's.
    fn user_file(&self, path: &Path) -> Option<PathBuf> {
        let rel = path.strip_prefix(&self.root).ok()?;
        let ignored = path.starts_with(&self.skip)
            || rel
                .components()
                .any(|c| IGNORED_DIRS.iter().any(|d| c.as_os_str() == *d))
            || rel
                .file_name()
                .is_some_and(|n| editor_file(&n.to_string_lossy()));
        (!ignored).then(|| rel.to_path_buf())
    }

    /// Every entry of the folder but ignored ones, its path and whether it is a folder.
    fn walk(&self, mut visit: impl FnMut(&std::fs::DirEntry, PathBuf, bool)) {
        let mut todo = vec![self.root.clone()];
        while let Some(at) = todo.pop() {
            let Ok(entries) = std::fs::read_dir(&at) else {
                continue;
            };
            for entry in entries.flatten() {
                let path = entry.path();
                let (Ok(kind), Some(rel)) = (entry.file_type(), self.user_file(&path)) else {
                    continue;
                };
                if kind.is_dir() {
                    todo.push(path);
                }
                visit(&entry, rel, kind.is_dir());
            }
        }
    }

    /// The files, with their sizes and modification times.
    pub(super) fn files(&self) -> Files {
        let mut files = Files::new();
        self.walk(|entry, rel, dir| {
            if !dir {
                let meta = entry.metadata().ok();
                let stamp = (
                    meta.as_ref().map_or(0, |m| m.len()),
                    meta.and_then(|m| m.modified().ok()),
                );
                files.insert(rel, stamp);
            }
        });
        files
    }

    /// The folder and each folder in it.
    fn folders(&self) -> BTreeSet<PathBuf> {
        let mut folders = BTreeSet::from([self.root.clone()]);
        self.walk(|entry, _, dir| {
            if dir {
                folders.insert(entry.path());
            }
        });
        folders
    }
}

/// An editor's swap, backup or lock file (vim, emacs, …).
fn editor_file(name: &str) -> bool {
    name.ends_with('~')
        || name.starts_with(".#")
        || (name.starts_with('#') && name.ends_with('#'))
        || [".swp", ".swo", ".swx", ".tmp"]
            .iter()
            .any(|ext| name.ends_with(ext))
        || name == "4913"
        || name == ".DS_Store"
}

/// The first file that differs between two walks (added, changed or removed).
pub(super) fn changed(before: &Files, after: &Files) -> Option<PathBuf> {
    after
        .iter()
        .find(|(path, stamp)| before.get(*path) != Some(stamp))
        .map(|(path, _)| path.clone())
        .or_else(|| before.keys().find(|p| !after.contains_key(*p)).cloned())
}

/// How a change is heard of.
pub(super) enum Changes {
    /// inotify.
    Notified(Notified),
    /// A walk at every poll, and what the last one found.
    Polled(Files),
}

/// inotify watching each folder of the tree, and the files as the last walk found them:
/// what inotify tells wakes a walk, and a change is what the walk finds changed (as
/// polling finds it), not an event that changed nothing (a file opened for writing and
/// closed, its attributes touched).
pub(super) struct Notified {
    watcher: notify::RecommendedWatcher,
    folders: BTreeSet<PathBuf>,
    pub(super) told: Arc<Told>,
    pub(super) files: Files,
}

/// What inotify's thread told since it was last taken: one slot, so a burst of changes
/// holds no more than one.
#[derive(Default)]
pub(super) struct Told {
    seen: Mutex<Seen>,
    /// Woken at each change told.
    pub(super) wake: tokio::sync::Notify,
}

#[derive(Default)]
struct Seen {
    /// The first file changed.
    file: Option<PathBuf>,
    /// The first error inotify reported.
    error: Option<String>,
}

impl Told {
    fn tell(&self, event: notify::Result<notify::Event>, tree: &Tree) {
        let mut seen = self.seen.lock().unwrap();
        match event {
            // Reads (a program opening its own files) change nothing.
            Ok(e) if matches!(e.kind, EventKind::Access(_)) => return,
            // The kernel's queue overflowed: something changed, not said what.
            Ok(e) if e.need_rescan() => {
                seen.file.get_or_insert_with(|| PathBuf::from("."));
            }
            Ok(e) => match e.paths.iter().find_map(|p| tree.user_file(p)) {
                Some(file) => {
                    seen.file.get_or_insert(file);
                }
                None => return,
            },
            Err(e) => {
                seen.error.get_or_insert_with(|| e.to_string());
            }
        }
        drop(seen);
        self.wake.notify_one();
    }

    /// Forgets the files changed so far (not an error: the next take says it).
    pub(super) fn forget(&self) {
        self.seen.lock().unwrap().file = None;
    }

    /// The first file changed since the last take, or the error inotify reported.
    pub(super) fn take(&self) -> Result<Option<PathBuf>, String> {
        let mut seen = self.seen.lock().unwrap();
        match seen.error.take() {
            Some(e) => Err(e),
            None => Ok(seen.file.take()),
        }
    }
}

impl Notified {
    /// Watches every folder of `tree`.
    pub(super) fn start(tree: &Arc<Tree>) -> Result<Notified, String> {
        let told = Arc::new(Told::default());
        let (t, of) = (told.clone(), tree.clone());
        let watcher = notify::recommended_watcher(move |event| t.tell(event, &of))
            .map_err(|e| e.to_string())?;
        let mut notified = Notified {
            watcher,
            folders: BTreeSet::new(),
            told,
            files: tree.files(),
        };
        notified.rewatch(tree)?;
        Ok(notified)
    }

    /// Watches the folders made since the last look, forgets those removed.
    pub(super) fn rewatch(&mut self, tree: &Tree) -> Result<(), String> {
        let now = tree.folders();
        for gone in self.folders.difference(&now) {
            // Its watch went with it.
            let _ = self.watcher.unwatch(gone);
        }
        for new in now.difference(&self.folders) {
            self.watcher
                .watch(new, RecursiveMode::NonRecursive)
                .map_err(|e| format!("{}: {e}", new.display()))?;
        }
        self.folders = now;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(tag: &str) -> PathBuf {
        let dir = zot_test_fixtures::fresh_dir(&format!("dev-{tag}"));
        dir
    }

    #[test]
    fn walks_skip_build_output_editor_files_and_home_and_see_changes() {
        let dir = scratch("snap");
        for sub in ["src", "target/release", ".git", "__pycache__", "home/logs"] {
            std::fs::create_dir_all(dir.join(sub)).unwrap();
        }
        for file in [
            "main.py",
            "src/lib.rs",
            "target/release/x",
            ".git/HEAD",
            "__pycache__/m.pyc",
            ".main.py.swp",
            "main.py~",
            "home/logs/ext-x.log",
        ] {
            std::fs::write(dir.join(file), "a").unwrap();
        }
        let tree = Tree::new(dir.clone(), dir.join("home"));
        let before = tree.files();
        let names: Vec<String> = before.keys().map(|p| p.display().to_string()).collect();
        assert_eq!(names, ["main.py", "src/lib.rs"]);
        assert_eq!(
            tree.folders(),
            BTreeSet::from([dir.clone(), dir.join("src")])
        );
        std::fs::write(dir.join("src/lib.rs"), "ab").unwrap();
        let edited = tree.files();
        assert_eq!(changed(&before, &edited), Some(PathBuf::from("src/lib.rs")));
        std::fs::remove_file(dir.join("main.py")).unwrap();
        let after = tree.files();
        assert_eq!(changed(&edited, &after), Some(PathBuf::from("main.py")));
        assert_eq!(changed(&after, &after), None);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
