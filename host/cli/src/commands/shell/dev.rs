//! `zot ext dev <dir>`: a shell session (this module's parent) with the extension at
//! `<dir>` loaded, plus a watcher: told of a change by inotify ([`changes`]), it rebuilds
//! a Rust crate (`cargo build --release`) or an npm package (`npm run build`,
//! `build:wasm`), reloads the host and shows the lines the extension writes to stderr
//! (read from its log) as they come (docs/shell.md).

mod changes;

use super::{Extra, Level, ShellArgs, Watch};
use crate::output::error::{self, CliError, Context as _};
use crate::output::render;
use changes::{changed, Changes, Notified, Told, Tree};
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::process::{ExitCode, Stdio};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::sync::mpsc::UnboundedSender;
use tokio::sync::oneshot;
use zot_host::manage::manifest::MANIFEST_FILE;
use zot_host::Host;

/// How often the log is read (and, without inotify, the folder walked); also how long a
/// change must be followed by quiet before it is acted on.
const POLL: Duration = Duration::from_millis(300);

const EXAMPLES: &str = "\
After a change to a file of the folder (told by inotify; not target/, .git/,
node_modules/, dist/, __pycache__/ or editor swap files) and 300 ms of quiet: a
folder with a Cargo.toml is rebuilt (`cargo build --release`, with --wasm `--target
wasm32-wasip2`; the binary or component is put where the manifest runs it from, also
when CARGO_TARGET_DIR builds it elsewhere), a folder with a package.json runs its `build` script (with --wasm its
`build:wasm`, as `zot ext new --lang typescript --wasm` writes it); a failed build
leaves the running extension as it was. Then the host reloads and says
`reloaded <name> after a change to <file>`. What the extension writes to stderr is
shown as it comes. The verbs are the shell's (`help`); in a script, `wait reload` waits
for the next reload (or failed build) after a change.

Examples:
  zot ext dev ./my-ext                      edit ./my-ext; every change reloads it
  zot ext dev ./my-rust-ext --wasm          rebuild the component on change, reload it
  zot ext dev ./my-ts-ext --wasm            npm run build:wasm on change, reload it
  zot ext dev ./my-ext --script s.txt       the verbs of s.txt; `wait reload` waits for a reload";

#[derive(clap::Args)]
#[command(after_help = EXAMPLES)]
pub(crate) struct DevArgs {
    /// The extension's folder (with its extension.json; a Cargo.toml makes it a Rust
    /// crate, a package.json with a `build` script an npm package, built before it
    /// starts and after each change).
    #[arg(value_hint = clap::ValueHint::DirPath)]
    dir: PathBuf,
    /// Build a component: `cargo build --release --target wasm32-wasip2` for a Rust
    /// crate, `npm run build:wasm` for an npm package.
    #[arg(long)]
    wasm: bool,
    #[command(flatten)]
    shell: ShellArgs,
}

/// Runs `zot ext dev`: like `zot ext shell`, with the watcher.
pub(crate) fn run(mut args: DevArgs) -> Result<ExitCode, CliError> {
    let dir = std::path::absolute(&args.dir)
        .map_err(|e| format!("{}: {e}", args.dir.display()))
        .context("dev")?;
    let name = manifest_name(&dir).context("dev")?;
    // A failed build is said, and what is there starts.
    let failed = |why: String| error::report(&CliError::new(why).within("dev".into()));
    let builder = Builder::of(&dir, args.wasm).context("dev")?;
    if builder.is_some() {
        same_kind(&dir, args.wasm).context("dev")?;
    }
    if let Some(builder) = builder {
        // Built before it starts, its output on stderr; a failure starts what is there.
        esay!("building {name}: {}", builder.line());
        match builder.command(&dir).stderr(Stdio::inherit()).output() {
            Ok(out) if out.status.success() => match builder {
                Builder::Cargo { .. } => {
                    let built = built_artifact(&String::from_utf8_lossy(&out.stdout));
                    match built.map(|a| place(&dir, &a)) {
                        Some(Err(e)) => failed(e),
                        Some(Ok(Some(to))) => esay!("built {}", to.display()),
                        _ => {}
                    }
                }
                Builder::Npm { .. } => {
                    for line in String::from_utf8_lossy(&out.stdout).lines() {
                        esay!("  {}", render::clean(line));
                    }
                }
            },
            Ok(out) => failed(format!(
                "the build of {name} failed ({}): starting what is there",
                out.status
            )),
            Err(e) => failed(format!(
                "cannot run {} ({e}): starting what is there",
                builder.tool()
            )),
        }
    }
    args.shell.host.ext_first(dir.clone());
    let watch: Watch = Box::new(move |host, tx, stop| {
        let home = host.config().home.clone();
        let log = home.log_path(&name);
        let offset = std::fs::metadata(&log).map_or(0, |m| m.len());
        let tree = Arc::new(Tree::new(dir.clone(), home.root().to_path_buf()));
        let changes = match Notified::start(&tree) {
            Ok(notified) => Changes::Notified(notified),
            Err(e) => {
                let _ = tx.send(Extra::Line(Level::Warn, polling(&e)));
                Changes::Polled(tree.files())
            }
        };
        let watcher = Watcher {
            dir,
            tree,
            name,
            builder,
            host,
            tx,
            log,
            offset,
            changes,
            stop,
        };
        tokio::spawn(watcher.run())
    });
    super::run_with(args.shell, "dev", Some(watch))
}

/// The `name` of `<dir>/extension.json`.
fn manifest_name(dir: &Path) -> Result<String, String> {
    let path = dir.join(MANIFEST_FILE);
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let manifest: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    manifest
        .get("name")
        .and_then(serde_json::Value::as_str)
        .map(str::to_string)
        .ok_or_else(|| format!("{}: no \"name\"", path.display()))
}

/// Builds the kind of artifact the manifest runs, or refuses: a component with --wasm,
/// a program without; never one kind put where the other is run from.
fn same_kind(dir: &Path, wasm: bool) -> Result<(), String> {
    let Ok(m) = zot_host::manage::manifest::Manifest::read(dir) else {
        return Ok(()); // Loading it says what is wrong with it.
    };
    match (m.is_component(), wasm) {
        (true, false) => Err(format!(
            "the manifest runs a component ({}): add --wasm to build it",
            m.wasm.as_deref().unwrap_or("its \"mcp\" \"wasm\"")
        )),
        (false, true) => Err(
            "--wasm builds a component, and the manifest runs a program (\"exec\"): drop \
             --wasm, or name the component in \"wasm\""
                .into(),
        ),
        (true, true) | (false, false) => Ok(()),
    }
}

/// How the folder is built before it starts and after each change.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Builder {
    /// A Rust crate: `cargo build --release [--target wasm32-wasip2]`.
    Cargo { wasm: bool },
    /// An npm package's script: `build`, or `build:wasm` with --wasm.
    Npm { script: &'static str },
}

impl Builder {
    /// The builder of `dir`: a Cargo.toml, else a package.json with the script; none for
    /// a folder that needs no build. With --wasm a folder must have one.
    fn of(dir: &Path, wasm: bool) -> Result<Option<Builder>, String> {
        if dir.join("Cargo.toml").is_file() {
            return Ok(Some(Builder::Cargo { wasm }));
        }
        let package = dir.join("package.json");
        let script = if wasm { "build:wasm" } else { "build" };
        let has_script = match std::fs::read_to_string(&package) {
            Ok(text) => serde_json::from_str::<serde_json::Value>(&text)
                .map_err(|e| format!("{}: {e}", package.display()))?
                .get("scripts")
                .and_then(|s| s.get(script))
                .is_some_and(serde_json::Value::is_string),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => false,
            Err(e) => return Err(format!("{}: {e}", package.display())),
        };
        match (has_script, wasm) {
            (true, _) => Ok(Some(Builder::Npm { script })),
            (false, false) => Ok(None),
            (false, true) => Err(format!(
                "--wasm builds a component, and {} has no Cargo.toml nor a package.json with a \
                 \"build:wasm\" script (`zot ext new <name> --lang typescript --wasm` writes one)",
                dir.display()
            )),
        }
    }

    /// The command as shown.
    fn line(self) -> String {
        match self {
            Builder::Cargo { wasm: true } => "cargo build --release --target wasm32-wasip2".into(),
            Builder::Cargo { wasm: false } => "cargo build --release".into(),
            Builder::Npm { script } => format!("npm run {script}"),
        }
    }

    /// The program it runs.
    fn tool(self) -> &'static str {
        match self {
            Builder::Cargo { .. } => "cargo",
            Builder::Npm { .. } => "npm",
        }
    }

    /// The build command in `dir`, stdout piped: cargo's diagnostics rendered on stderr
    /// and the artifacts it built as JSON lines on stdout (read by [`built_artifact`]);
    /// npm's script output.
    fn command(self, dir: &Path) -> std::process::Command {
        let mut cmd = std::process::Command::new(self.tool());
        match self {
            Builder::Cargo { wasm } => {
                cmd.args([
                    "build",
                    "--release",
                    "--message-format=json-render-diagnostics",
                ]);
                if wasm {
                    cmd.args(["--target", "wasm32-wasip2"]);
                }
            }
            Builder::Npm { script } => {
                cmd.args(["run", script]);
            }
        }
        cmd.current_dir(dir)
            .stdin(Stdio::null())
            .stdout(Stdio::piped());
        cmd
    }
}

/// The last binary (or component) cargo's JSON messages say it built.
fn built_artifact(messages: &str) -> Option<PathBuf> {
    messages
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|m| m["reason"] == "compiler-artifact")
        .filter_map(|m| m["executable"].as_str().map(PathBuf::from))
        .next_back()
}

/// Puts the build's `artifact` where the manifest in `dir` runs it from (the program or
/// the component), when that is elsewhere — a `CARGO_TARGET_DIR` builds outside the
/// crate. Copied beside it, then renamed over it, so a running program is not written
/// to. `Ok(None)` when nothing had to move.
fn place(dir: &Path, artifact: &Path) -> Result<Option<PathBuf>, String> {
    let m = zot_host::manage::manifest::Manifest::read(dir).map_err(|e| e.to_string())?;
    let to = match m.launch(dir) {
        zot_host::manage::manifest::Launch::Exec(to)
        | zot_host::manage::manifest::Launch::Wasm(to) => to,
        // A remote MCP server: nothing built to place.
        zot_host::manage::manifest::Launch::Remote(_) => return Ok(None),
    };
    let same = std::fs::canonicalize(&to)
        .ok()
        .zip(std::fs::canonicalize(artifact).ok())
        .is_some_and(|(a, b)| a == b);
    // Only a plain path inside the folder, its folders opened without following a link
    // and the file replaced, never written through (see `zot_host::manage::safe_write`).
    let parts: Option<Vec<&str>> = match to.strip_prefix(dir) {
        Ok(rel) => rel
            .components()
            .map(|c| match c {
                std::path::Component::Normal(part) => part.to_str(),
                _ => None,
            })
            .collect(),
        Err(_) => None,
    };
    let Some((file, folders)) = parts.as_deref().and_then(<[&str]>::split_last) else {
        return Ok(None);
    };
    if same {
        return Ok(None);
    }
    // Never a program over a component, nor the other way round.
    let component = artifact.extension().is_some_and(|e| e == "wasm");
    if component != m.is_component() {
        return Err(format!(
            "{} is not the kind of file the manifest runs at {}: not put there",
            artifact.display(),
            to.display()
        ));
    }
    let copy = || -> std::io::Result<()> {
        let mut here = zot_host::manage::safe_write::SafeDir::open(dir)?;
        for folder in folders {
            here = here.create_sub(folder)?;
        }
        here.copy_from(file, artifact)
    };
    copy().map_err(|e| format!("cannot put {} at {}: {e}", artifact.display(), to.display()))?;
    Ok(Some(to))
}

/// What the session says when inotify cannot watch the folder.
fn polling(why: &str) -> String {
    format!(
        "inotify cannot watch the folder ({}): walking it every {} ms instead",
        render::clean(why),
        POLL.as_millis()
    )
}

/// The `[stderr]` lines of log text (the text after the marker); `rest` is what follows
/// the last complete line.
fn stderr_lines(text: &str) -> (Vec<&str>, &str) {
    let (complete, rest) = match text.rfind('\n') {
        Some(i) => (&text[..i], &text[i + 1..]),
        None => ("", text),
    };
    let lines = complete
        .lines()
        .filter_map(|l| l.split_once(" [stderr] ").map(|(_, s)| s))
        .collect();
    (lines, rest)
}

struct Watcher {
    dir: PathBuf,
    tree: Arc<Tree>,
    name: String,
    builder: Option<Builder>,
    host: Host,
    tx: UnboundedSender<Extra>,
    /// The extension's log, and how far it was read.
    log: PathBuf,
    offset: u64,
    changes: Changes,
    /// The session ended.
    stop: oneshot::Receiver<()>,
}

/// Until `told` is woken; never without it.
async fn woken(told: Option<&Told>) {
    match told {
        Some(told) => told.wake.notified().await,
        None => std::future::pending().await,
    }
}

impl Watcher {
    fn say(&self, level: Level, line: impl Into<String>) {
        let _ = self.tx.send(Extra::Line(level, line.into()));
    }

    /// Waits [`POLL`], or less when inotify tells of a change, then shows the new stderr
    /// lines: whether a change was told; `None` when the session ended.
    async fn pause(&mut self) -> Option<bool> {
        let told = match &self.changes {
            Changes::Notified(n) => Some(n.told.clone()),
            Changes::Polled(_) => None,
        };
        let told = tokio::select! {
            _ = tokio::time::sleep(POLL) => Some(false),
            () = woken(told.as_deref()) => Some(true),
            _ = &mut self.stop => None,
        };
        // Also when the session ends: its last lines are shown.
        self.tail();
        told
    }

    /// The first file changed, once [`POLL`] passed without another change; `None` when
    /// the session ended.
    async fn change(&mut self) -> Option<PathBuf> {
        loop {
            let file = match &self.changes {
                Changes::Notified(_) => self.told().await?,
                Changes::Polled(_) => self.walked().await?,
            };
            if file.is_some() {
                return file;
            }
        }
    }

    /// What inotify told, after the first change and quiet, as a walk then finds it
    /// changed; the folders made meanwhile watched too. An error of inotify turns to
    /// walking, and is a change (one may have gone untold).
    async fn told(&mut self) -> Option<Option<PathBuf>> {
        while !self.pause().await? {}
        while self.pause().await? {}
        let Changes::Notified(n) = &mut self.changes else {
            return Some(None);
        };
        let told = n
            .told
            .take()
            .and_then(|file| n.rewatch(&self.tree).map(|()| file));
        match told {
            Ok(Some(_)) => {
                let now = self.tree.files();
                let file = changed(&n.files, &now);
                n.files = now;
                Some(file)
            }
            Ok(None) => Some(None),
            Err(e) => {
                self.say(Level::Warn, polling(&e));
                self.changes = Changes::Polled(self.tree.files());
                Some(Some(PathBuf::from(".")))
            }
        }
    }

    /// What a walk finds changed, after walks find no further change.
    async fn walked(&mut self) -> Option<Option<PathBuf>> {
        self.pause().await?;
        let now = self.tree.files();
        let Changes::Polled(files) = &self.changes else {
            return Some(None);
        };
        let Some(file) = changed(files, &now) else {
            return Some(None);
        };
        let mut last = now;
        loop {
            self.pause().await?;
            let now = self.tree.files();
            if now == last {
                break;
            }
            last = now;
        }
        self.changes = Changes::Polled(last);
        Some(Some(file))
    }

    /// Forgets the changes made so far (a build's: Cargo.lock), once they have settled.
    async fn forget(&mut self) -> Option<()> {
        match &self.changes {
            Changes::Notified(n) => {
                let told = n.told.clone();
                while self.pause().await? {}
                told.forget();
                if let Changes::Notified(n) = &mut self.changes {
                    n.files = self.tree.files();
                }
            }
            Changes::Polled(_) => self.changes = Changes::Polled(self.tree.files()),
        }
        Some(())
    }

    async fn run(mut self) {
        while let Some(file) = self.change().await {
            let file = file.display().to_string();
            if let Some(builder) = self.builder {
                let built = self.build(builder, &file).await;
                // The build may write files (Cargo.lock): not a change of the user's.
                if self.forget().await.is_none() {
                    return;
                }
                if !built {
                    let _ = self.tx.send(Extra::BuildFailed);
                    continue;
                }
            }
            let report = self.host.reload().await;
            let _ = self.tx.send(Extra::Reloaded);
            self.tail();
            self.say(
                Level::Plain,
                format!("reloaded {} after a change to {file}", self.name),
            );
            for (level, line) in crate::output::report::lines(&report) {
                if !matches!(level, Level::Plain | Level::Dim) || line.starts_with("still") {
                    self.say(level, line);
                }
            }
        }
    }

    /// Shows the `[stderr]` lines the log got since it was last read.
    fn tail(&mut self) {
        let Ok(mut file) = std::fs::File::open(&self.log) else {
            return;
        };
        let len = file.metadata().map_or(0, |m| m.len());
        if len < self.offset {
            // Truncated or replaced: from its start.
            self.offset = 0;
        }
        if len == self.offset || file.seek(SeekFrom::Start(self.offset)).is_err() {
            return;
        }
        let mut bytes = Vec::new();
        if file
            .take(len - self.offset)
            .read_to_end(&mut bytes)
            .is_err()
        {
            return;
        }
        let text = String::from_utf8_lossy(&bytes);
        let (lines, rest) = stderr_lines(&text);
        for line in lines {
            self.say(
                Level::Dim,
                format!("{} stderr: {}", self.name, render::clean(line)),
            );
        }
        self.offset += (bytes.len() - rest.len()) as u64;
    }

    /// Rebuilds, its output shown as it comes; whether it succeeded.
    async fn build(&self, builder: Builder, file: &str) -> bool {
        self.say(
            Level::Dim,
            format!("{file} changed: building {}: {}", self.name, builder.line()),
        );
        let mut cmd = tokio::process::Command::from(builder.command(&self.dir));
        cmd.stderr(Stdio::piped()).kill_on_drop(true);
        let failed = |why: String| {
            self.say(
                Level::Error,
                format!(
                    "the build of {} failed ({why}): it keeps running as it was",
                    self.name
                ),
            );
            false
        };
        let mut child = match cmd.spawn() {
            Ok(child) => child,
            Err(e) => return failed(format!("cannot run {}: {e}", builder.tool())),
        };
        // cargo's stdout is its JSON messages, read whole; npm's is shown as it comes.
        let tx = self.tx.clone();
        let stdout = child.stdout.take().map(|out| {
            tokio::spawn(async move {
                let mut text = String::new();
                if let Builder::Npm { .. } = builder {
                    let mut lines = BufReader::new(out).lines();
                    while let Ok(Some(line)) = lines.next_line().await {
                        let _ = tx.send(Extra::Line(
                            Level::Dim,
                            format!("  {}", render::clean(&line)),
                        ));
                    }
                } else {
                    let mut out = out;
                    let _ = tokio::io::AsyncReadExt::read_to_string(&mut out, &mut text).await;
                }
                text
            })
        });
        if let Some(stderr) = child.stderr.take() {
            let mut lines = BufReader::new(stderr).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                self.say(Level::Dim, format!("  {}", render::clean(&line)));
            }
        }
        let messages = match stdout {
            Some(task) => task.await.unwrap_or_default(),
            None => String::new(),
        };
        match child.wait().await {
            Ok(s) if s.success() => match builder {
                Builder::Cargo { .. } => {
                    match built_artifact(&messages).map(|a| place(&self.dir, &a)) {
                        Some(Err(e)) => failed(e),
                        _ => true,
                    }
                }
                Builder::Npm { .. } => true,
            },
            Ok(s) => failed(s.to_string()),
            Err(e) => failed(e.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_builder_is_cargo_or_an_npm_script_and_wasm_needs_one() {
        let dir = zot_test_fixtures::fresh_dir("dev-builder");
        assert_eq!(Builder::of(&dir, false), Ok(None));
        let err = Builder::of(&dir, true).unwrap_err();
        assert!(
            err.contains("has no Cargo.toml nor a package.json"),
            "{err}"
        );
        let package = dir.join("package.json");
        std::fs::write(&package, r#"{"scripts": {"start": "node ."}}"#).unwrap();
        assert_eq!(Builder::of(&dir, false), Ok(None));
        assert!(Builder::of(&dir, true).is_err());
        std::fs::write(
            &package,
            r#"{"scripts": {"build": "tsc", "build:wasm": "x"}}"#,
        )
        .unwrap();
        assert_eq!(
            Builder::of(&dir, false),
            Ok(Some(Builder::Npm { script: "build" }))
        );
        assert_eq!(
            Builder::of(&dir, true),
            Ok(Some(Builder::Npm {
                script: "build:wasm"
            }))
        );
        assert_eq!(
            Builder::of(&dir, true).unwrap().unwrap().line(),
            "npm run build:wasm"
        );
        std::fs::write(&package, "{not json").unwrap();
        assert!(Builder::of(&dir, false)
            .unwrap_err()
            .contains("package.json"));
        std::fs::write(dir.join("Cargo.toml"), "").unwrap();
        assert_eq!(
            Builder::of(&dir, true),
            Ok(Some(Builder::Cargo { wasm: true }))
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn stderr_lines_are_read_from_complete_log_lines() {
        let text = "t0 [zot] started\nt1 [stderr] hello there\nt2 [stderr] half";
        let (lines, rest) = stderr_lines(text);
        assert_eq!(lines, ["hello there"]);
        assert_eq!(rest, "t2 [stderr] half");
    }
}
