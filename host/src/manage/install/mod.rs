//! Managing installed extensions: install, update, remove, enable/disable, list.
//!
//! An install is staged in a fresh folder inside the extensions directory (same
//! filesystem), opened without following links ([`SafeDir`]: a `.zot` or
//! `.zot/extensions` that is a link is refused): fetched (`fetch`), checked (symlinks
//! stay inside, `extension.json` is valid and names a program or component that is
//! there), then renamed to `<extensions>/<manifest name>` within that folder's handle and
//! recorded under `$ZOT_HOME` ([`provenance`]). A failure removes the staging folder; one
//! left by a killed process is removed by the next install.

pub mod build;
mod error;
mod fetch;
mod list;
pub mod signature;
pub mod update;

use crate::records::provenance;
pub use crate::records::provenance::{Provenance, SourceKind};
pub use error::InstallError;
#[cfg(any(test, fuzzing))]
pub(crate) use fetch::copy_dir;
pub use fetch::{Progress, Quiet};
pub use list::{list, Listed, Listing, Origin, State};

use crate::discovery::{discover, Found, SearchPath, Source};
use crate::identity::Identity;
use crate::manifest::{self, Manifest, TransportKind, MANIFEST_FILE};
use crate::paths::{project_extensions_dir, ZotHome};
use crate::util::safe_write::SafeDir;
use cap_std::fs::Dir;
use serde::Serialize;
use serde_json::Value;
use std::fs;
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

/// Where an install comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InstallSource {
    /// A local directory holding `extension.json`, copied recursively.
    Dir(PathBuf),
    /// A git URL, cloned (shallowly when it can be).
    Git(String),
    /// A single WebAssembly component; its manifest is written from its `hello`.
    Wasm(PathBuf),
}

impl InstallSource {
    /// Classifies a command-line argument. `https://`, `git@`, `ssh://` and `file://` are
    /// git URLs, as is anything ending in `.git` and a bare repository (a folder with
    /// `HEAD`, `objects/` and `refs/`, where users keep code on a server), unless it is a
    /// directory holding `extension.json`; a file ending in `.wasm` is a component;
    /// everything else is a directory.
    pub fn parse(arg: &str) -> InstallSource {
        const GIT_PREFIXES: [&str; 4] = ["https://", "git@", "ssh://", "file://"];
        let dir = Path::new(arg);
        let is_extension_dir = dir.join(MANIFEST_FILE).is_file();
        let bare_repo =
            dir.join("HEAD").is_file() && dir.join("objects").is_dir() && dir.join("refs").is_dir();
        if GIT_PREFIXES.iter().any(|p| arg.starts_with(p))
            || (arg.ends_with(".git") || bare_repo) && !is_extension_dir
        {
            InstallSource::Git(arg.to_string())
        } else if arg.ends_with(".wasm") && !Path::new(arg).is_dir() {
            InstallSource::Wasm(PathBuf::from(arg))
        } else {
            InstallSource::Dir(PathBuf::from(arg))
        }
    }
}

/// What to install, from where, into which extensions directory.
#[derive(Debug, Clone)]
pub struct Request {
    pub source: InstallSource,
    /// `--ref`: a branch, tag or commit of a git source.
    pub git_ref: Option<String>,
    /// `--path`: the extension's folder inside the source (a monorepo).
    pub path: Option<String>,
    /// `--name`: install under this name instead of the manifest's.
    pub name: Option<String>,
    /// `--wasm`: build a component of a source whose program is not built
    /// ([`build::plan`]).
    pub wasm: bool,
    /// The extensions directory: `$ZOT_HOME/extensions` or `./.zot/extensions`.
    pub root: PathBuf,
    /// For the compilation cache and the log of a probed component.
    pub home: ZotHome,
    /// How a probed component is compiled.
    pub compiler: crate::component::compile::Compiler,
    /// `--require-signature`: keys any of which must have signed it (with those the
    /// settings name for the source: [`signature::required`]).
    pub signers: Vec<signature::Signer>,
}

impl Request {
    /// The request that fetches `record`'s source again (for `zot ext update`).
    pub fn again(
        record: &Provenance,
        root: PathBuf,
        home: ZotHome,
        compiler: crate::component::compile::Compiler,
    ) -> Request {
        let source = match record.kind {
            SourceKind::Dir => InstallSource::Dir(PathBuf::from(&record.source)),
            SourceKind::Git => InstallSource::Git(record.source.clone()),
            SourceKind::Wasm => InstallSource::Wasm(PathBuf::from(&record.source)),
        };
        Request {
            source,
            git_ref: record.git_ref.clone(),
            path: record.path.clone(),
            name: record.rename.clone(),
            wasm: record
                .build
                .as_ref()
                .is_some_and(|b| b.target == build::Target::Wasm),
            root,
            home,
            compiler,
            // The key its installed version was signed with, if it was.
            signers: record
                .signature
                .iter()
                .map(|s| signature::Signer {
                    key: s.key.clone(),
                    from: signature::SignerFrom::Recorded,
                })
                .collect(),
        }
    }
}

/// What [`Staged::commit`] put where.
#[derive(Debug, Clone)]
pub struct Installed {
    pub manifest: Manifest,
    /// `<root>/<name>`.
    pub dir: PathBuf,
}

/// An extension fetched and checked in a staging folder inside the extensions directory,
/// not installed yet: [`Staged::commit`] moves it into place; dropping it removes every
/// trace.
pub struct Staged {
    /// Removed on drop, with whatever is still in it.
    staging: Staging,
    tree: PathBuf,
    root: PathBuf,
    home: ZotHome,
    /// Its manifest (with `--name` applied).
    pub manifest: Manifest,
    /// What will be recorded once it is installed.
    pub record: Provenance,
    /// With `--name`: the name the extension gives itself (its manifest's before the
    /// rename, or a bare component's hello), when that is another one. Its hello may
    /// still give it; the host uses the manifest's.
    pub renamed_from: Option<String>,
    /// What must be built before it can be installed ([`Staged::run_build`]), with the
    /// user's consent.
    pub build: Option<build::Plan>,
    /// With `--path` and a build: the whole source it runs in.
    whole: Option<build::Whole>,
}

/// Compiles the component `wasm` into the cache within `compiler`'s limits, once the
/// user consented: one that cannot be compiled is not installed, and its first start is
/// quick.
pub async fn compile(
    home: &ZotHome,
    compiler: &crate::component::compile::Compiler,
    wasm: &Path,
    progress: &dyn Progress,
) -> Result<(), InstallError> {
    // Named as the source names it: where it was staged is zot's business.
    let name = wasm.file_name().unwrap_or(wasm.as_os_str());
    progress.begin(&format!("compiling {}", Path::new(name).display()));
    let loaded = match crate::component::engine() {
        Ok(engine) => {
            crate::component::cache::load(engine, wasm, &home.cache_dir(), compiler, None).await
        }
        Err(e) => Err(e),
    };
    progress.end();
    loaded.map(drop).map_err(InstallError::NotCompiled)
}

/// Fetches and checks `req`'s extension in a staging folder: the source copied (never
/// following a symlink out of it, `--path` included; `.git` left out) or cloned, or a component probed for
/// its `hello` and given a manifest; `--name` applied; the manifest validated and the
/// program or component it names present. Also removes what interrupted installs left.
/// Its file and git work blocks the thread it runs on; probing a component needs a tokio
/// runtime with time enabled.
pub async fn stage(req: &Request, progress: &dyn Progress) -> Result<Staged, InstallError> {
    let root = SafeDir::create(&req.root).map_err(InstallError::io("create", &req.root))?;
    sweep(&root);
    let staging = Staging::create(&root)?;
    let tree = staging.path.join("tree");
    // `--ref` with a local folder that is a git repository: clone it at that ref.
    let local_repo = match (&req.source, &req.git_ref) {
        (InstallSource::Dir(dir), Some(_)) if dir.join(".git").exists() => {
            Some(InstallSource::Git(
                std::path::absolute(dir)
                    .unwrap_or_else(|_| dir.clone())
                    .display()
                    .to_string(),
            ))
        }
        (_, _) => None,
    };
    let source = local_repo.as_ref().unwrap_or(&req.source);
    if req.git_ref.is_some() && !matches!(source, InstallSource::Git(_)) {
        return Err(InstallError::RefNeedsGit);
    }
    let sub = req.path.as_deref().map(fetch::sub_path).transpose()?;
    // The name the extension gives itself, when `--name` renames it.
    let mut own_name = None;
    // With `--path`, the whole source the folder is in: a build runs there.
    let (kind, source, commit, whole, signed) = match source {
        InstallSource::Dir(dir) => {
            let src = source_dir(dir)?;
            let keys = signature::required(&req.home, &src.display().to_string(), &req.signers)?;
            let (from, real) = fetch::open_sub(&src, sub.as_deref(), req.path.as_deref())?;
            let from_path = src.join(&real);
            if req
                .root
                .canonicalize()
                .is_ok_and(|r| r.starts_with(&from_path))
            {
                return Err(InstallError::SourceContainsRoot(from_path));
            }
            fetch::copy_dir(&from, &tree)?;
            let signed = signed_tree(&tree, &keys)?;
            let whole = sub.as_ref().map(|_| build::Whole::Copied {
                top: src.clone(),
                sub: real,
            });
            (
                SourceKind::Dir,
                src.display().to_string(),
                None,
                whole,
                signed,
            )
        }
        InstallSource::Git(url) => {
            let keys = signature::required(&req.home, url, &req.signers)?;
            let checkout = staging.path.join("checkout");
            let commit = fetch::clone(url, req.git_ref.as_deref(), &checkout, progress)?;
            let (from, real) = fetch::open_sub(&checkout, sub.as_deref(), req.path.as_deref())?;
            fetch::copy_dir(&from, &tree)?;
            let signed = signed_tree(&tree, &keys)?;
            let whole = sub.as_ref().map(|_| build::Whole::Cloned {
                top: checkout.clone(),
                sub: real,
            });
            (SourceKind::Git, url.clone(), Some(commit), whole, signed)
        }
        InstallSource::Wasm(file) => {
            if req.path.is_some() {
                return Err(InstallError::PathNeedsTree);
            }
            let file = file
                .canonicalize()
                .map_err(InstallError::io("read", file))?;
            let keys = signature::required(&req.home, &file.display().to_string(), &req.signers)?;
            let (name, signed) = stage_component(&file, &tree, req, &keys, progress).await?;
            own_name = Some(name);
            (
                SourceKind::Wasm,
                file.display().to_string(),
                None,
                None,
                signed,
            )
        }
    };
    if let Some(name) = &req.name {
        manifest::validate_name(name).map_err(InstallError::BadName)?;
        own_name = own_name.or_else(|| Manifest::read(&tree).ok().map(|m| m.name));
        manifest::set_field(&tree, "name", Value::String(name.clone()))
            .map_err(InstallError::NameNotApplied)?;
    }
    let manifest = read_manifest(&tree)?;
    let target = match req.wasm {
        true => build::Target::Wasm,
        false => build::Target::Native,
    };
    if req.wasm && kind == SourceKind::Wasm {
        return Err(InstallError::WasmNeedsSource);
    }
    // A component built for `--wasm` is named as the source names the extension.
    let source_name = own_name.as_deref().unwrap_or(&manifest.name);
    let plan = build::plan(&tree, &manifest, (target, source_name), whole.as_ref())?;
    // A build runs confined or not at all: said before it is shown or asked.
    if plan.is_some() && !cfg!(target_os = "linux") {
        return Err(InstallError::BuildNotConfinable);
    }
    let program = match manifest.launch(&tree) {
        _ if plan.is_some() => None,
        manifest::Launch::Wasm(path) => Some(path),
        manifest::Launch::Exec(path) if path.starts_with(&tree) => Some(path),
        manifest::Launch::Exec(_) => None, // on PATH, e.g. `python3`
        manifest::Launch::Remote(_) => None, // a remote MCP server: nothing runs here
    };
    if let Some(path) = program.filter(|p| !p.is_file()) {
        let shown = path.strip_prefix(&tree).unwrap_or(&path);
        return Err(InstallError::ProgramMissing(shown.to_path_buf()));
    }
    let files = provenance::hash_tree(&tree)?;
    let record = Provenance {
        name: manifest.name.clone(),
        kind,
        source,
        git_ref: req.git_ref.clone(),
        path: req.path.clone(),
        rename: req.name.clone(),
        commit,
        installed_at: humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string(),
        targets: provenance::link_targets(&tree, &files)?,
        files,
        build: None,
        signature: signed,
    };
    // The clone is kept only for a build in it.
    let whole = whole.filter(|_| plan.is_some());
    if !matches!(whole, Some(build::Whole::Cloned { .. })) {
        drop(fs::remove_dir_all(staging.path.join("checkout")));
    }
    Ok(Staged {
        staging,
        tree,
        root: req.root.clone(),
        home: req.home.clone(),
        renamed_from: own_name.filter(|own| req.name.as_ref().is_some_and(|n| n != own)),
        manifest,
        record,
        build: plan,
        whole,
    })
}

impl Staged {
    /// Where it will be installed: `<root>/<name>`.
    pub fn dest(&self) -> PathBuf {
        self.root.join(&self.manifest.name)
    }

    /// The staged files (to read the component's hash, say).
    pub fn tree(&self) -> &Path {
        &self.tree
    }

    /// A classic extension whose program, in its folder, is not executable: it would not
    /// start. The warning, with the fix.
    pub fn not_executable(&self) -> Option<String> {
        use std::os::unix::fs::PermissionsExt;
        let manifest::Launch::Exec(program) = self.manifest.launch(&self.tree) else {
            return None;
        };
        let shown = program.strip_prefix(&self.tree).ok()?.display().to_string();
        let mode = program.symlink_metadata().ok()?.permissions().mode();
        let shown = crate::util::terminal_text::shell_word(&shown);
        (mode & 0o111 == 0).then(|| {
            format!(
                "{shown} is not executable: it will not start. `chmod +x {shown}` in the \
                 source (and commit it), or set \"exec\" to its interpreter (\"python3\") \
                 and put the script in \"args\""
            )
        })
    }

    /// The component file of a staged component, relative to its folder.
    pub fn component_file(&self) -> Option<PathBuf> {
        match self.manifest.launch(&self.tree) {
            manifest::Launch::Wasm(path) => {
                path.strip_prefix(&self.tree).ok().map(Path::to_path_buf)
            }
            manifest::Launch::Exec(_) | manifest::Launch::Remote(_) => None,
        }
    }

    /// Runs the build the user consented to ([`Staged::build`]'s plan), confined, in the
    /// staging copy; then checks what it made, makes the manifest run a component built
    /// for `--wasm`, and records the build and the hashes of every file now there. A
    /// failure leaves nothing behind once this is dropped.
    pub fn run_build(&mut self, progress: &dyn Progress) -> Result<(), InstallError> {
        let Some(plan) = self.build.take() else {
            return Ok(());
        };
        self.built(&plan, progress)?;
        let output = self.tree.join(&plan.output);
        let made = output.symlink_metadata().is_ok_and(|m| m.is_file());
        if !made {
            return Err(InstallError::BuiltNothing(plan.output.clone()));
        }
        if plan.target == build::Target::Wasm {
            read_component_file(&output)?;
        }
        if plan.runs_component_instead {
            manifest::run_component(&self.tree, &plan.output)
                .map_err(InstallError::InvalidManifest)?;
        }
        self.checked_again()?;
        self.manifest = read_manifest(&self.tree)?;
        let files = provenance::hash_tree(&self.tree)?;
        self.record.targets = provenance::link_targets(&self.tree, &files)?;
        let outputs = files
            .get(&plan.output)
            .map(|hash| (plan.output.clone(), hash.clone()))
            .into_iter()
            .collect();
        self.record.files = files;
        self.record.build = Some(build::Built {
            recipe: plan.recipe,
            target: plan.target,
            toolchain: plan.toolchain.version.clone(),
            steps: plan.steps.iter().map(build::Step::shown).collect(),
            outputs,
        });
        Ok(())
    }

    /// Copies the tree the build left as a source is copied, and keeps the copy: every
    /// link inside it, no special file, no setuid, setgid or sticky bit. (No process of
    /// the build is left to change it meanwhile: each step's group was killed when the
    /// step ended, and none could leave it.)
    fn checked_again(&mut self) -> Result<(), InstallError> {
        let built = Dir::open_ambient_dir(&self.tree, cap_std::ambient_authority())
            .map_err(InstallError::io("open", &self.tree))?;
        let checked = self.staging.path.join("checked");
        fetch::copy_dir(&built, &checked)?;
        fs::remove_dir_all(&self.tree).map_err(InstallError::io("replace", &self.tree))?;
        fs::rename(&checked, &self.tree).map_err(InstallError::io("replace", &self.tree))
    }

    /// Runs `plan` confined in the staging folder, with the build's cache
    /// (`$ZOT_HOME/cache/build/<name>`) and its log (`$ZOT_HOME/logs/build-<name>.log`).
    #[cfg(target_os = "linux")]
    fn built(&self, plan: &build::Plan, progress: &dyn Progress) -> Result<(), InstallError> {
        let name = &self.manifest.name;
        let cache_root = self.home.cache_dir();
        let cache_path = cache_root.join("build").join(name);
        let cache = SafeDir::beneath(&cache_root, &Path::new("build").join(name), true)
            .map_err(InstallError::io("create", &cache_path))?;
        let handle =
            |dir: Dir| std::sync::Arc::new(std::os::fd::OwnedFd::from(dir.into_std_file()));
        let staging = self
            .staging
            .root
            .open_dir(&self.staging.name)
            .map_err(InstallError::io("open", &self.staging.path))?;
        let logs = self.home.logs_dir();
        fs::create_dir_all(&logs).map_err(InstallError::io("create", &logs))?;
        let dir = match (&self.whole, plan.in_whole) {
            (Some(build::Whole::Cloned { top, sub }), true) => top.join(sub),
            // The user's folder is copied (as an install copies), never built in.
            (Some(build::Whole::Copied { top, sub }), true) => {
                let copy = self.staging.path.join("source");
                let from = Dir::open_ambient_dir(top, cap_std::ambient_authority())
                    .map_err(InstallError::io("open", top))?;
                fetch::copy_dir(&from, &copy)?;
                copy.join(sub)
            }
            (None, _) | (Some(_), false) => self.tree.clone(),
        };
        let place = build::Place {
            tree: &self.tree,
            dir: &dir,
            staging: handle(staging),
            staging_path: &self.staging.path,
            cache: handle(cache.into_dir()),
            cache_path: &cache_path,
            log: &logs.join(format!("build-{name}.log")),
        };
        build::run(plan, &place, build::BUILD_TIMEOUT, progress)
    }

    /// No confinement, so no build.
    #[cfg(not(target_os = "linux"))]
    fn built(&self, _: &build::Plan, _: &dyn Progress) -> Result<(), InstallError> {
        Err(InstallError::BuildNotConfinable)
    }

    /// Moves the staged extension into place (within the extensions directory's handle)
    /// and records its provenance under `$ZOT_HOME`. An existing install of that name is
    /// refused unless `replace`, in which case the two are swapped in one atomic rename
    /// (Linux; elsewhere two renames, rolled back on failure) and the old one is deleted.
    pub fn commit(self, replace: bool) -> Result<Installed, InstallError> {
        let dest = self.dest();
        let name = &self.manifest.name;
        let root = &self.staging.root;
        let tree = Path::new(&self.staging.name).join("tree");
        if root.symlink_metadata(name).is_ok() {
            if !replace {
                return Err(InstallError::AlreadyInstalled {
                    name: name.clone(),
                    dest,
                });
            }
            exchange(root, &tree, name).map_err(InstallError::io("replace", &dest))?;
        } else {
            root.rename(&tree, root, name)
                .map_err(InstallError::io("move the extension to", &dest))?;
        }
        let id = Identity::of(&dest, &self.home);
        provenance::save(&self.home, &id, &self.record).map_err(|e| InstallError::NotRecorded {
            name: name.clone(),
            cause: Box::new(e.into()),
        })?;
        Ok(Installed {
            manifest: self.manifest,
            dir: dest,
        })
    }
}

/// Swaps `new` and `old`, both in `dir`, atomically: afterwards `old` holds the new tree
/// and `new` the old one (which goes with the staging folder).
#[cfg(target_os = "linux")]
fn exchange(dir: &Dir, new: &Path, old: &str) -> std::io::Result<()> {
    use std::ffi::CString;
    use std::os::fd::{AsFd, AsRawFd};
    use std::os::unix::ffi::OsStrExt;
    let c = |p: &Path| CString::new(p.as_os_str().as_bytes()).map_err(std::io::Error::other);
    let (a, b) = (c(new)?, c(Path::new(old))?);
    let fd = dir.as_fd().as_raw_fd();
    // SAFETY: a valid directory fd and two valid NUL-terminated paths; renameat2 reads
    // them only.
    let rc = unsafe { libc::renameat2(fd, a.as_ptr(), fd, b.as_ptr(), libc::RENAME_EXCHANGE) };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// Two renames where the platform has no atomic exchange, undone on failure.
#[cfg(not(target_os = "linux"))]
fn exchange(dir: &Dir, new: &Path, old: &str) -> std::io::Result<()> {
    let aside = new.with_file_name("replaced");
    dir.rename(old, dir, &aside)?;
    if let Err(e) = dir.rename(new, dir, old) {
        let _ = dir.rename(&aside, dir, old);
        return Err(e);
    }
    dir.rename(&aside, dir, new)
}

/// The canonical path of a directory source, or why it is not one.
fn source_dir(dir: &Path) -> Result<PathBuf, InstallError> {
    let src = dir
        .canonicalize()
        .map_err(|cause| InstallError::SourceNotFound {
            path: dir.to_path_buf(),
            cause,
        })?;
    if !src.is_dir() {
        return Err(InstallError::SourceNotADirectory(dir.to_path_buf()));
    }
    Ok(src)
}

/// The bytes of the component file `file`, or why it is not one this host runs (read
/// before anything is asked or shown about it).
pub fn read_component_file(file: &Path) -> Result<Vec<u8>, InstallError> {
    let bytes = crate::component::cache::read_component(file)
        .map_err(|e| InstallError::io("read", file)(e.cause))?;
    crate::component::inspect(&bytes)
        .world()
        .map_err(InstallError::Component)?;
    Ok(bytes)
}

/// The signature of the component file `file`, when one is required of it (by `given`,
/// or by the settings for its path): checked before anything is asked, shown or
/// staged. Staging checks the bytes it installs again.
pub fn signed_component(
    home: &ZotHome,
    file: &Path,
    given: &[signature::Signer],
) -> Result<Option<provenance::Signed>, InstallError> {
    let real = file
        .canonicalize()
        .map_err(InstallError::io("read", file))?;
    let keys = signature::required(home, &real.display().to_string(), given)?;
    if keys.is_empty() {
        return Ok(None);
    }
    let bytes = read_component_file(&real)?;
    Ok(Some(signature::check_file(&bytes, &real, &keys)?))
}

/// Stages a bare component: checks its signature when `keys` require one, runs it with
/// nothing granted to read its `hello`, then writes it as `<name>.wasm` beside a
/// manifest naming it and asking what its embedded manifest asks (nothing without one).
/// Returns the name its hello gave, and the signature checked.
async fn stage_component(
    file: &Path,
    tree: &Path,
    req: &Request,
    keys: &[signature::Signer],
    progress: &dyn Progress,
) -> Result<(String, Option<provenance::Signed>), InstallError> {
    let bytes = read_component_file(file)?;
    let err = InstallError::StageComponent;
    let signed = match keys {
        [] => None,
        keys => Some(signature::check_file(&bytes, file, keys)?),
    };
    // Signed, what is run to read its hello is the bytes checked, copied where the
    // file's owner cannot change them.
    let probed = match signed {
        Some(_) => {
            let copy = tree.with_file_name("probed.wasm");
            fs::write(&copy, &bytes).map_err(err)?;
            copy
        }
        None => file.to_path_buf(),
    };
    let embedded = manifest::Embedded::of(&bytes)
        .map_err(InstallError::BadEmbedded)?
        .unwrap_or_default();
    progress.begin(&format!(
        "starting {} with no permissions to read its hello",
        file.display()
    ));
    let log = crate::log::ExtLog::open(&req.home.logs_dir().join("install.log"));
    let hello =
        crate::transport::wasm::probe_hello(&probed, &req.home.cache_dir(), &req.compiler, log)
            .await;
    progress.end();
    let (own_name, version) = hello.map_err(InstallError::Refused)?;
    let name = req.name.clone().unwrap_or_else(|| own_name.clone());
    if let Err(reason) = manifest::validate_name(&name) {
        return Err(InstallError::BadHelloName { name, reason });
    }
    fs::create_dir(tree).map_err(err)?;
    let wasm = format!("{name}.wasm");
    fs::write(tree.join(&wasm), &bytes).map_err(err)?;
    let file_name = file.file_name().unwrap_or_default().to_string_lossy();
    let mut manifest = serde_json::json!({
        "name": name,
        "version": version,
        "description": format!("{file_name}, installed as a component"),
        "wasm": wasm,
    });
    if embedded != manifest::Embedded::default() {
        manifest["permissions"] = serde_json::to_value(&embedded.permissions).expect("serialises");
        manifest["limits"] = serde_json::to_value(&embedded.limits).expect("serialises");
    }
    let mut text = serde_json::to_vec_pretty(&manifest).expect("JSON serialises");
    text.push(b'\n');
    fs::write(tree.join(MANIFEST_FILE), text).map_err(err)?;
    Ok((own_name, signed))
}

/// The signature of the fetched `tree`, checked when `keys` require one.
fn signed_tree(
    tree: &Path,
    keys: &[signature::Signer],
) -> Result<Option<provenance::Signed>, InstallError> {
    match keys {
        [] => Ok(None),
        keys => Ok(Some(signature::check_tree(tree, keys)?)),
    }
}

/// Staging folders are `.tmp-install-<pid>-<n>`.
const STAGING_PREFIX: &str = ".tmp-install-";

/// A staging folder, created (exclusively) in the extensions directory's handle and
/// removed with everything in it on drop.
struct Staging {
    /// The extensions directory.
    root: Dir,
    /// The staging folder's name in it.
    name: String,
    /// Its path.
    path: PathBuf,
}

impl Staging {
    fn create(root: &SafeDir) -> Result<Staging, InstallError> {
        static COUNTER: AtomicUsize = AtomicUsize::new(0);
        let handle = root
            .dir()
            .try_clone()
            .map_err(InstallError::io("open", root.path()))?;
        loop {
            let n = COUNTER.fetch_add(1, Ordering::Relaxed);
            let name = format!("{STAGING_PREFIX}{}-{n}", std::process::id());
            let path = root.path().join(&name);
            match handle.create_dir(&name) {
                Ok(()) => {
                    return Ok(Staging {
                        root: handle,
                        name,
                        path,
                    })
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(InstallError::io("create", path)(e)),
            }
        }
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        let _ = self.root.remove_dir_all(&self.name);
    }
}

/// Removes the staging folders of installs whose process is gone (killed mid-install)
/// from the extensions directory `root`, unless it is reached through a link.
pub fn sweep_stale(root: &Path) {
    if let Ok(root) = SafeDir::open(root) {
        sweep(&root);
    }
}

fn sweep(root: &SafeDir) {
    let Ok(entries) = root.dir().entries() else {
        return;
    };
    for entry in entries.filter_map(Result::ok) {
        let name = entry.file_name();
        let Some(rest) = name.to_str().and_then(|n| n.strip_prefix(STAGING_PREFIX)) else {
            continue;
        };
        let pid = rest.split('-').next().and_then(|p| p.parse::<u32>().ok());
        if pid.is_some_and(|pid| !process_alive(pid)) {
            let _ = root.dir().remove_dir_all(&name);
        }
    }
}

#[cfg(unix)]
fn process_alive(pid: u32) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return false;
    };
    // SAFETY: signal 0 only checks that the process exists.
    let rc = unsafe { libc::kill(pid, 0) };
    rc == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

#[cfg(not(unix))]
fn process_alive(_pid: u32) -> bool {
    true
}

fn read_manifest(tree: &Path) -> Result<Manifest, InstallError> {
    if !tree.join(MANIFEST_FILE).is_file() {
        return Err(InstallError::NoManifest(None));
    }
    Manifest::read(tree).map_err(InstallError::InvalidManifest)
}

/// Whether `name` is one plain path component, so it cannot address another folder.
fn is_plain_name(name: &str) -> bool {
    let mut parts = Path::new(name).components();
    matches!(parts.next(), Some(Component::Normal(_))) && parts.next().is_none()
}

fn plain_name(name: &str) -> Result<(), InstallError> {
    if is_plain_name(name) {
        Ok(())
    } else {
        Err(InstallError::NotAName(name.to_string()))
    }
}

/// Deletes an installed extension's directory (a symlinked install loses only the link)
/// within its extensions directory opened without following links (so a `.zot` or
/// `.zot/extensions` that is a link is refused), its install record, and the records of
/// the user's consent to it (its grant, a project's trust in it).
pub fn remove(home: &ZotHome, dir: &Path) -> Result<(), InstallError> {
    let err = InstallError::io("delete", dir);
    let (Some(parent), Some(name)) = (dir.parent(), dir.file_name()) else {
        return Err(err(std::io::Error::other(
            "not an installed extension's folder",
        )));
    };
    let id = Identity::of(dir, home);
    let root = SafeDir::open(parent).map_err(&err)?;
    if root.dir().symlink_metadata(name).map_err(&err)?.is_dir() {
        root.dir().remove_dir_all(name).map_err(&err)?;
    } else {
        root.dir().remove_file(name).map_err(err)?;
    }
    provenance::forget(home, &id)?;
    crate::records::consent::forget(home, &id).map_err(InstallError::NotForgotten)
}

/// Every extension installed for `cwd` (project-local, then global), one per name.
pub fn installed(cwd: &Path, home: &ZotHome) -> Vec<Found> {
    discover(&search_path(cwd, home)).found
}

/// `$ZOT_HOME/logs/ext-<name>.log`, once `name` is known not to address another folder.
pub fn log_path(home: &ZotHome, name: &str) -> Result<PathBuf, InstallError> {
    plain_name(name)?;
    Ok(home.log_path(name))
}

/// Where installed extensions are looked for from `cwd`: the project's folder, then the
/// global one (no `--ext` paths).
pub fn search_path(cwd: &Path, home: &ZotHome) -> SearchPath {
    SearchPath {
        explicit: Vec::new(),
        cwd: cwd.to_path_buf(),
        home: home.clone(),
        installed: true,
        project: true,
        global: true,
        trust_project: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp(tag: &str) -> PathBuf {
        let dir = zot_test_fixtures::fresh_dir(&format!("install-{tag}"));
        dir
    }

    #[test]
    fn classifies_sources() {
        for url in [
            "https://github.com/a/b",
            "git@github.com:a/b.git",
            "ssh://host/repo",
            "file:///tmp/repo",
            "../repo.git",
        ] {
            assert_eq!(InstallSource::parse(url), InstallSource::Git(url.into()));
        }
        assert_eq!(
            InstallSource::parse("./hello-py"),
            InstallSource::Dir("./hello-py".into())
        );
        assert_eq!(
            InstallSource::parse("guard.wasm"),
            InstallSource::Wasm("guard.wasm".into())
        );
    }

    #[test]
    fn plain_names_only() {
        assert!(is_plain_name("hello-py"));
        for bad in ["", ".", "..", "../x", "a/b", "/abs"] {
            assert!(!is_plain_name(bad), "{bad}");
        }
    }

    #[test]
    fn staging_is_removed_on_drop() {
        let root = temp("staging");
        let path = {
            let staging = Staging::create(&SafeDir::create(&root).unwrap()).unwrap();
            fs::write(staging.path.join("f"), "x").unwrap();
            staging.path.clone()
        };
        assert!(!path.exists());
        fs::remove_dir_all(&root).unwrap();
    }
}
