//! The toolchain a build runs: found on the user's `PATH`, asked its version, and the
//! folders it must read when confined. A missing one is named, with how to get it.

use super::super::InstallError;
use std::path::{Path, PathBuf};
use std::process::Command;

/// A toolchain found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Toolchain {
    /// The command as a step runs it: its path as found on `PATH`.
    pub command: String,
    /// Its own words for its version (`go version go1.27.3 linux/amd64`), or the path
    /// it resolves to when it has none.
    pub version: String,
    /// What the confined build must read of it (`GOROOT`), beside the system folders.
    pub reads: Vec<PathBuf>,
    /// The folder it was found in, first on the build's `PATH`.
    pub bin_dir: PathBuf,
}

impl Toolchain {
    /// Go: `go` on `PATH`, its `GOROOT` read-only. It is asked outside the source (no
    /// `go.mod` there can make it fetch another toolchain: `GOTOOLCHAIN=local`).
    pub fn go() -> Result<Toolchain, InstallError> {
        let found = on_path("go").ok_or(InstallError::NoToolchain {
            tool: "go",
            get: "install Go 1.21 or later (https://go.dev/dl/) and put its `bin` on PATH",
        })?;
        let ask = |args: &[&str]| {
            let out = Command::new(&found)
                .args(args)
                .current_dir("/")
                .env("GOTOOLCHAIN", "local")
                .env("GOENV", "off")
                .output()
                .ok()
                .filter(|o| o.status.success())?;
            Some(String::from_utf8_lossy(&out.stdout).trim().to_string())
        };
        let version = ask(&["version"]).ok_or(InstallError::NoToolchain {
            tool: "go",
            get: "`go version` fails: reinstall Go (https://go.dev/dl/)",
        })?;
        let root = ask(&["env", "GOROOT"]).map(PathBuf::from);
        let reads = root.into_iter().filter_map(|r| r.canonicalize().ok());
        Ok(Toolchain {
            command: found.display().to_string(),
            bin_dir: parent(&found),
            version,
            reads: reads.chain(resolved(&found)).collect(),
        })
    }

    /// The manifest's `build` program: a path in the source (`./build.sh`: the source's
    /// copy is read anyway), or a command on `PATH`, whose file is read-only.
    pub fn for_program(program: &str) -> Result<Toolchain, InstallError> {
        if program.contains('/') {
            return Ok(Toolchain {
                command: program.to_string(),
                version: program.to_string(),
                reads: Vec::new(),
                bin_dir: PathBuf::from("/usr/bin"),
            });
        }
        let found = on_path(program).ok_or(InstallError::NoToolchain {
            tool: "the manifest's build program",
            get: "install the program its \"build\" names and put it on PATH",
        })?;
        let file = resolved(&found);
        Ok(Toolchain {
            command: found.display().to_string(),
            version: file.as_deref().unwrap_or(&found).display().to_string(),
            reads: file.into_iter().collect(),
            bin_dir: parent(&found),
        })
    }
}

/// `name` on the user's `PATH`: the first executable file of that name.
fn on_path(name: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .filter(|dir| dir.is_absolute())
        .map(|dir| dir.join(name))
        .find(|p| {
            p.metadata()
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}

/// The file `path` resolves to.
fn resolved(path: &Path) -> Option<PathBuf> {
    path.canonicalize().ok()
}

fn parent(path: &Path) -> PathBuf {
    path.parent().map(Path::to_path_buf).unwrap_or_default()
}
