//! A classic extension started as a subprocess: confined or not (`crate::confine`), run
//! from a sealed copy of the bytes its trust or confinement was checked against, and
//! why it did not start, with the next step when there is an obvious one.

use super::{Launched, Request, SeenPaths, StartError, UNSEEN};
use crate::manifest::{Manifest, TransportKind};
use crate::records::confinement::Confinement;
use crate::records::trust::Fingerprint;
use crate::transport::stdio::{self, StdioSpec};
use std::path::{Path, PathBuf};

/// A subprocess; its data dir is its identity's (`$ZOT_HOME/data/<name>` for a global
/// install).
pub(super) fn start(request: &Request<'_>, program: PathBuf) -> Result<Launched, StartError> {
    let Request {
        manifest: m,
        dir,
        identity,
        context,
        log,
        run_grant: _,
        admitted: _,
    } = request;
    let data_dir = context.home.data_dir(identity);
    if let Err(e) = std::fs::create_dir_all(&data_dir) {
        log.warn(&format!(
            "cannot create data dir {}: {e}",
            data_dir.display()
        ));
    }
    #[cfg(target_os = "linux")]
    let decided = crate::records::confinement::decide(context.home, identity, m, dir);
    #[cfg(target_os = "linux")]
    let sealed = sealed_copy(request, &program, &decided)?;
    #[cfg(target_os = "linux")]
    let confine = confined(request, decided, &program, &data_dir)?;
    #[cfg(not(target_os = "linux"))]
    match crate::records::confinement::decide(context.home, identity, m, dir) {
        Confinement::Unconfined { .. } => {}
        Confinement::Refused(why) => return Err(StartError::Confine(why)),
        Confinement::Confined { .. } => {
            return Err(StartError::Confine(
                "it is confined, and confinement needs Linux".into(),
            ))
        }
    }
    // A confined extension is told the project dir only where it may read it.
    #[cfg(target_os = "linux")]
    let cwd = match &confine {
        Some(confined) => confined
            .project
            .as_ref()
            .map_or_else(|| UNSEEN.to_string(), |p| p.display().to_string()),
        None => context.cwd.display().to_string(),
    };
    #[cfg(not(target_os = "linux"))]
    let cwd = context.cwd.display().to_string();
    #[cfg(target_os = "linux")]
    let applied = confine
        .as_ref()
        .map(|c| (c.prepared.abi(), c.prepared.report().to_vec()));
    let spec = StdioSpec {
        program: program.clone(),
        args: m.program_args().to_vec(),
        env: m.mcp.iter().flat_map(|mcp| mcp.env.clone()).collect(),
        dir: dir.to_path_buf(),
        stderr: Some((*log).clone()),
        max_frame: context.max_frame,
        #[cfg(target_os = "linux")]
        confine,
        #[cfg(target_os = "linux")]
        sealed,
    };
    #[cfg(target_os = "linux")]
    let from = match spec.sealed {
        Some(_) => ", run from a sealed copy of the bytes checked",
        None => "",
    };
    #[cfg(not(target_os = "linux"))]
    let from = "";
    let connection = stdio::spawn(spec).map_err(|cause| StartError::Spawn {
        hint: spawn_hint(m, dir, &program, &cause),
        program: program.clone(),
        cause,
    })?;
    log.info(&format!("started {} (stdio{from})", program.display()));
    #[cfg(target_os = "linux")]
    if let Some((abi, rules)) = applied {
        if let Err(e) = crate::confine::view::record_applied(context.home, identity, abi, &rules) {
            log.warn(&format!("cannot record the rules it was started with: {e}"));
        }
    }
    Ok(Launched {
        connection,
        transport: TransportKind::Stdio,
        sandbox: None,
        paths: SeenPaths {
            extension_dir: dir.display().to_string(),
            cwd,
            data_dir: data_dir.display().to_string(),
        },
    })
}

/// The confinement it runs in (`None`: unconfined), prepared by `crate::confine::start`
/// and its disk quota checked once before it starts.
#[cfg(target_os = "linux")]
fn confined(
    request: &Request<'_>,
    decided: Confinement,
    program: &Path,
    data_dir: &Path,
) -> Result<Option<crate::confine::Confined>, StartError> {
    let start = crate::confine::start::Start {
        home: request.context.home,
        identity: request.identity,
        manifest: request.manifest,
        dir: request.dir,
        cwd: request.context.cwd,
        run_grant: request.run_grant,
        log: request.log,
        program,
        data_dir,
    };
    let confined = crate::confine::start::prepare(&start, decided).map_err(StartError::Confine)?;
    if let Some(disk) = confined.as_ref().and_then(|c| c.disk.as_ref()) {
        stdio::check_disk_at_start(disk).map_err(StartError::Confine)?;
    }
    Ok(confined)
}

/// The sealed copy a native program whose start is bound to its files' hashes (its
/// project trust, its confinement: `decided`) runs from, checked against each
/// (`crate::transport::sealed`); `None` when bound to none, run by `PATH`, or not native (a
/// script's interpreter opens it by path: docs/security.md). Changed since a check, it
/// does not start.
#[cfg(target_os = "linux")]
fn sealed_copy(
    request: &Request<'_>,
    program: &Path,
    decided: &Confinement,
) -> Result<Option<crate::transport::sealed::Sealed>, StartError> {
    use crate::transport::sealed::{seal, Sealing};
    let confined = match decided {
        Confinement::Confined { files, .. } => Some(files),
        Confinement::Unconfined { .. } | Confinement::Refused(_) => None,
    };
    let bound: Vec<&Fingerprint> = request.admitted.into_iter().chain(confined).collect();
    let on_path = !program.is_absolute() && program.components().count() == 1;
    if bound.is_empty() || on_path {
        return Ok(None);
    }
    match seal(program) {
        Ok(Sealing::Sealed(copy)) => {
            for files in bound {
                copy.check(files, request.dir)
                    .map_err(StartError::Changed)?;
            }
            Ok(Some(copy))
        }
        Ok(Sealing::NotNative) => Ok(None),
        Ok(Sealing::Unavailable(why)) => {
            request.log.warn(&format!(
                "run by its path, not from a copy of the bytes checked: {why}"
            ));
            Ok(None)
        }
        Err(cause) => Err(StartError::Spawn {
            hint: spawn_hint(request.manifest, request.dir, program, &cause),
            program: program.to_path_buf(),
            cause,
        }),
    }
}

/// The next step when the program of `m` (in `dir`, resolved to `program`) could not be
/// spawned with `cause`, if there is an obvious one.
fn spawn_hint(m: &Manifest, dir: &Path, program: &Path, cause: &std::io::Error) -> Option<String> {
    use std::io::ErrorKind;
    let exec = m.command().unwrap_or_default();
    let (field, args) = match m.mcp {
        Some(_) => ("mcp.command", "mcp.args"),
        None => ("exec", "args"),
    };
    let file = if program.is_absolute() || program.components().count() > 1 {
        program.to_path_buf()
    } else {
        dir.join(program)
    };
    let bare = program.components().count() == 1 && !program.is_absolute();
    match cause.kind() {
        ErrorKind::NotFound if bare && file.is_file() => Some(format!(
            "a bare `{field}` is looked up on PATH, not in the extension's folder: write \"./{exec}\" to run the file there"
        )),
        ErrorKind::NotFound if file.is_file() => Some(match first_line(&file) {
            Some(line) if line.starts_with("#!") => format!(
                "its first line, `{line}`, names an interpreter that is not installed"
            ),
            Some(_) | None => format!("{} cannot be run as it is", file.display()),
        }),
        ErrorKind::NotFound if dir.join("Cargo.toml").is_file() => Some(format!(
            "no {} yet: build it first (`cargo build --release` in {})",
            file.display(),
            dir.display()
        )),
        ErrorKind::NotFound if bare => Some(format!(
            "no program named {exec:?} on PATH: install it, or name it by its path in `{field}`"
        )),
        ErrorKind::NotFound => Some(format!(
            "no file {}: check `{field}` in {}",
            file.display(),
            dir.join(crate::manifest::MANIFEST_FILE).display()
        )),
        ErrorKind::PermissionDenied if file.is_file() => Some(format!(
            "it is not executable: `chmod +x {}`, or set `{field}` to its interpreter and put the script in `{args}`",
            file.display()
        )),
        _ if cause.raw_os_error() == Some(libc::ENOEXEC) => Some(format!(
            "it is neither a program nor a script with a `#!` line: add one (e.g. \
             `#!/usr/bin/env python3`), or set `{field}` to its interpreter and put the script \
             in `{args}`"
        )),
        _ => None,
    }
}

/// The first line of the regular file at `path` (of at most 1 MiB), if it can be read.
fn first_line(path: &Path) -> Option<String> {
    let bytes = crate::util::tree::read_regular(path, 1 << 20).ok()?;
    let text = String::from_utf8_lossy(&bytes[..bytes.len().min(256)]).into_owned();
    Some(
        text.lines()
            .next()
            .unwrap_or_default()
            .trim_end()
            .to_string(),
    )
}
