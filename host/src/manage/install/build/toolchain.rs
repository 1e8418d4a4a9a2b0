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

    /// Rust: `cargo` on `PATH` (usually rustup's proxy), asked outside the source;
    /// read-only its folder and rustup's home (`RUSTUP_HOME`, `~/.rustup`) — never the
    /// rest of `~/.cargo`, which holds registry credentials. For a component, the
    /// toolchain must have the `wasm32-wasip2` target.
    pub fn cargo(wasm: bool) -> Result<Toolchain, InstallError> {
        let found = on_path("cargo").ok_or(InstallError::NoToolchain {
            tool: "cargo",
            get: "install Rust with rustup (https://rustup.rs) and put `~/.cargo/bin` on PATH",
        })?;
        let rustup_home = rustup_home();
        let ask = |program: &Path, args: &[&str]| {
            let mut command = Command::new(program);
            command
                .args(args)
                .current_dir("/")
                .env("RUSTUP_AUTO_INSTALL", "0");
            let out = command.output().ok().filter(|o| o.status.success())?;
            Some(String::from_utf8_lossy(&out.stdout).trim().to_string())
        };
        let version = ask(&found, &["--version"]).ok_or(InstallError::NoToolchain {
            tool: "cargo",
            get: "`cargo --version` fails: install a toolchain (`rustup default stable`)",
        })?;
        let bin_dir = parent(&found);
        if wasm {
            let sysroot = ask(&bin_dir.join("rustc"), &["--print", "sysroot"]);
            let has_target = sysroot.is_some_and(|root| {
                Path::new(&root)
                    .join("lib/rustlib")
                    .join(super::WASM_TARGET)
                    .is_dir()
            });
            if !has_target {
                return Err(InstallError::NoToolchain {
                    tool: "Rust's wasm32-wasip2 target",
                    get: "`rustup target add wasm32-wasip2`",
                });
            }
        }
        let mut reads: Vec<PathBuf> = [Some(bin_dir.clone()), rustup_home]
            .into_iter()
            .flatten()
            .filter_map(|p| p.canonicalize().ok())
            .collect();
        reads.extend(resolved(&found));
        Ok(Toolchain {
            command: found.display().to_string(),
            version,
            reads,
            bin_dir,
        })
    }

    /// Node: `npm` and `node` on `PATH`, read-only the folders they are installed in
    /// (npm is a script `node` runs from its package).
    pub fn npm() -> Result<Toolchain, InstallError> {
        let missing = InstallError::NoToolchain {
            tool: "npm (Node.js)",
            get: "install Node.js 20 or later (https://nodejs.org), which brings npm, and put it on PATH",
        };
        let (Some(npm), Some(node)) = (on_path("npm"), on_path("node")) else {
            return Err(missing);
        };
        let ask = |args: &[&str]| {
            let out = Command::new(&node)
                .args(args)
                .current_dir("/")
                .output()
                .ok()
                .filter(|o| o.status.success())?;
            Some(String::from_utf8_lossy(&out.stdout).trim().to_string())
        };
        let version = ask(&["--version"]).ok_or(missing)?;
        // Each installed as `<prefix>/bin/x` (a link into `<prefix>/lib/node_modules`):
        // its prefix.
        let prefix = |found: &Path| {
            resolved(found)
                .and_then(|f| f.ancestors().nth(2).map(Path::to_path_buf))
                .or_else(|| found.parent().and_then(Path::parent).map(Path::to_path_buf))
        };
        let mut reads: Vec<PathBuf> = [prefix(&npm), prefix(&node)]
            .into_iter()
            .flatten()
            .collect();
        reads.extend([&npm, &node].into_iter().filter_map(|p| resolved(p)));
        reads.sort();
        reads.dedup();
        Ok(Toolchain {
            command: npm.display().to_string(),
            version: format!("node {version}"),
            reads,
            bin_dir: parent(&node),
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

/// rustup's home: `RUSTUP_HOME`, else `~/.rustup`, when it is there.
pub fn rustup_home() -> Option<PathBuf> {
    let home = std::env::var_os("RUSTUP_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".rustup")))?;
    home.is_dir().then_some(home)
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
