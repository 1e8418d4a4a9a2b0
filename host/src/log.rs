//! One extension's log file: the subprocess's stderr and the host's diagnostics about
//! that extension, appended to `$ZOT_HOME/logs/ext-<name>.log`.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// How much of an offending line a diagnostic quotes.
const PREVIEW: usize = 160;

/// An append-only log shared by the host and the extension's stderr.
#[derive(Clone, Debug)]
pub struct ExtLog {
    path: PathBuf,
    file: Option<Arc<Mutex<File>>>,
}

impl ExtLog {
    /// Opens (creating folders and the file as needed) `path` for appending. A log that
    /// cannot be opened degrades to tracing output only.
    pub fn open(path: &Path) -> ExtLog {
        let file = path
            .parent()
            .map_or(Ok(()), std::fs::create_dir_all)
            .and_then(|()| OpenOptions::new().create(true).append(true).open(path));
        let file = match file {
            Ok(f) => Some(Arc::new(Mutex::new(f))),
            Err(e) => {
                tracing::warn!("cannot open log {}: {e}", path.display());
                None
            }
        };
        ExtLog {
            path: path.to_path_buf(),
            file,
        }
    }

    /// A log on this process's stderr (for `zot ext run`, whose diagnostics go there).
    pub fn stderr() -> ExtLog {
        use std::os::fd::AsFd;
        let file = std::io::stderr()
            .as_fd()
            .try_clone_to_owned()
            .ok()
            .map(|fd| Arc::new(Mutex::new(File::from(fd))));
        ExtLog {
            path: PathBuf::from("/dev/stderr"),
            file,
        }
    }

    /// The log's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// A handle for a subprocess's stderr, appending to the same file.
    pub fn stderr_handle(&self) -> Option<File> {
        self.file.as_ref()?.lock().ok()?.try_clone().ok()
    }

    /// Writes one host diagnostic line: `<time> [zot] <level>: <message>`.
    pub fn write(&self, level: &str, message: &str) {
        self.line("zot", level, message);
    }

    /// Writes one line a sandboxed guest logged: `<time> [guest] <level>: <message>`.
    pub fn guest(&self, level: &str, message: &str) {
        self.line("guest", level, message);
    }

    fn line(&self, source: &str, level: &str, message: &str) {
        let line = format!(
            "{} [{source}] {level}: {message}\n",
            humantime::format_rfc3339_millis(std::time::SystemTime::now())
        );
        if let Some(Ok(mut f)) = self.file.as_ref().map(|f| f.lock()) {
            let _ = f.write_all(line.as_bytes());
        }
    }

    /// `write("info", …)`.
    pub fn info(&self, message: &str) {
        self.write("info", message);
    }

    /// `write("warn", …)`.
    pub fn warn(&self, message: &str) {
        self.write("warn", message);
    }
}

/// The start of `bytes` as text, for quoting a bad line in a diagnostic.
pub fn preview(bytes: &[u8]) -> String {
    let cut = &bytes[..bytes.len().min(PREVIEW)];
    let mut s = String::from_utf8_lossy(cut).into_owned();
    if bytes.len() > PREVIEW {
        s.push_str(&format!("… ({} bytes)", bytes.len()));
    }
    s
}
