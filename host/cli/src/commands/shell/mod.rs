//! `zot ext shell`: an interactive session over the host library (docs/shell.md).
//!
//! `verbs` parses a line into a [`verbs::Verb`], `render` turns results and events into
//! lines, `editor` is the line editor (completion, history, printing above the prompt).
//! This module runs the session: one loop reading lines (from the editor, a script or
//! piped stdin), running each verb against the [`Host`] while printing the host's events
//! as they arrive, and cancelling the running verb on SIGINT.

mod args;
mod dev;
mod editor;
mod exec;
mod interactive;
mod manage;
mod verbs;

pub(crate) use dev::{run as dev, DevArgs};

use crate::output::error::{CliError, Context as _};
use crate::output::render::{self, Level};
use crate::output::terminal::{Prompt, Term};
use serde_json::{json, Map, Value};
use std::collections::{HashMap, VecDeque};
use std::io::{BufRead, IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::signal::unix::{signal, Signal, SignalKind};
use tokio::sync::mpsc;
use tokio::time::Instant;
use verbs::Verb;
use zot_host::terminal_text::multi_line;
use zot_host::{ExtState, Host, HostEvent, LoadReport};
use zot_protocol::{Event, PanelKey};

/// After a verb, in a script, events are printed until none came for this long...
const QUIET: Duration = Duration::from_millis(150);
/// ... or this long passed.
const SETTLE_CAP: Duration = Duration::from_secs(2);
/// How long a script waits for components still compiling at start.
const COMPILE_WAIT: Duration = Duration::from_secs(180);
/// When a prompt changed while the editor reads, the read is interrupted, again after
/// this long if it has not ended...
const INTERRUPT_AGAIN: Duration = Duration::from_millis(100);
/// ... at most this many times (then the old prompt stays until the line is entered).
const INTERRUPTS: u32 = 10;

const EXAMPLES: &str = "\
Verbs (`help` in the shell): /name args, call <tool> [json], intercept <event> …,
emit <event> [json], turn [tool [json]], list, tools, commands, logs <name> [n], key, focus, close,
reload, grant, revoke, trust, sleep, wait reload, help, quit.

A script (--script FILE, or verbs piped on stdin) prints a plain transcript: each line as
`> line`, then its output; events as they happen. Every verb runs even if one fails; the
exit status is then 1. SIGINT during a verb cancels it (a tool gets tool_cancel) and the
script goes on.

Examples:
  zot ext shell --ext ./my-ext                  an interactive session with ./my-ext loaded
  zot ext shell --ext ./my-ext --only           ./my-ext alone: no installed extension
  zot ext shell --ext ./w.wasm --allow-env KEY  w.wasm may read $KEY, for this session only
  zot ext shell --ext ./my-ext --script s.txt   run the verbs of s.txt, print a transcript
  printf 'tools\\ncall echo {\"a\":1}\\n' | zot ext shell --ext ./my-ext
  zot ext shell --cwd ~/src/app --save /tmp/imgs   the project's extensions; images saved";

#[derive(clap::Args)]
#[command(after_help = EXAMPLES)]
pub(crate) struct ShellArgs {
    #[command(flatten)]
    host: crate::flags::host::HostArgs,
    #[command(flatten)]
    grants: crate::flags::load::RunGrantArgs,
    /// Run the verbs of FILE (one a line, `#` comments) and print a plain transcript
    /// instead of reading from the terminal.
    #[arg(long, value_name = "FILE", value_hint = clap::ValueHint::FilePath)]
    script: Option<PathBuf>,
    /// Write the images of tool results into DIR (as <tool>-<n>.<ext>).
    #[arg(long, value_name = "DIR", value_hint = clap::ValueHint::DirPath)]
    save: Option<PathBuf>,
}

/// Where lines come from.
enum Input {
    /// A script file, read at start.
    Script(VecDeque<String>),
    /// Piped stdin, read by a thread as lines arrive.
    Piped(mpsc::Receiver<String>),
    /// The terminal, through the line editor.
    Terminal(editor::Editor),
}

/// Something from outside the host shown in the session, as host events are: above
/// the prompt, or in a script's transcript (`zot ext dev`'s watcher sends them).
pub(crate) enum Extra {
    /// A line to show.
    Line(Level, String),
    /// The host was reloaded: no panel is open any more.
    Reloaded,
    /// A build after a change failed: nothing was reloaded.
    BuildFailed,
}

/// What `zot ext dev`'s watcher did after changes, for `wait reload`: how many reloads
/// and failed builds so far, whether the last was a reload, and how many a `wait reload`
/// has taken.
#[derive(Clone, Default)]
struct Watched {
    settled: u64,
    reloaded: bool,
    waited: u64,
}

/// A task started with the session's host (`zot ext dev`'s watcher): it sends what to
/// show. When the session ends, before the extensions stop, it is told to (the oneshot)
/// and given [`WATCH_STOP`] to end.
pub(crate) type Watch = Box<
    dyn FnOnce(
        Host,
        mpsc::UnboundedSender<Extra>,
        tokio::sync::oneshot::Receiver<()>,
    ) -> tokio::task::JoinHandle<()>,
>;

/// How long a watcher is given to end, once told to.
const WATCH_STOP: Duration = Duration::from_secs(1);

/// A running watcher: its task, and how to tell it to stop.
struct Watching {
    task: tokio::task::JoinHandle<()>,
    stop: tokio::sync::oneshot::Sender<()>,
}

/// Runs the shell; exits 0, or 1 if a verb of a script failed.
pub(crate) fn run(args: ShellArgs) -> Result<ExitCode, CliError> {
    run_with(args, "shell", None)
}

/// Runs the shell with `watch` beside it (`zot ext dev`); `what` names the command in
/// error messages.
fn run_with(
    args: ShellArgs,
    what: &'static str,
    watch: Option<Watch>,
) -> Result<ExitCode, CliError> {
    let mut config = args.host.config().context(what)?;
    args.grants.apply(&mut config);
    let script = match &args.script {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .map_err(|e| format!("--script {}: {e}", path.display()))
                .context(what)?;
            Some(text.lines().map(str::to_string).collect::<VecDeque<_>>())
        }
        None => None,
    };
    let interactive = script.is_none() && std::io::stdin().is_terminal();
    let colour = std::io::stdout().is_terminal()
        && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
    let runtime = tokio::runtime::Runtime::new()
        .map_err(|e| format!("cannot start the async runtime: {e}"))
        .context(what)?;
    let code = runtime.block_on(async move {
        let sigint = match signal(SignalKind::interrupt()) {
            Ok(s) => s,
            Err(e) => return Err(format!("cannot catch SIGINT: {e}")),
        };
        let history = config.home.root().join("shell_history");
        let (host, notes) = Host::new(config);
        let (extra_tx, extra) = mpsc::unbounded_channel();
        let watcher = watch.map(|watch| {
            let (stop, stopped) = tokio::sync::oneshot::channel();
            Watching {
                task: watch(host.clone(), extra_tx, stopped),
                stop,
            }
        });
        let mut out = Out {
            colour,
            printer: None,
            reading: false,
            held: None,
        };
        let input = match script {
            Some(lines) => Input::Script(lines),
            None if interactive => {
                let (editor, printer) = editor::start(host.clone(), history)?;
                out.printer = Some(printer);
                Input::Terminal(editor)
            }
            None => Input::Piped(piped_stdin()),
        };
        let mut shell = Shell {
            ctx: Ctx {
                host,
                save: args.save,
                saved: Arc::new(AtomicUsize::new(0)),
                turns: Arc::new(AtomicUsize::new(0)),
                interactive,
                panel: None,
                watched: Watched::default(),
                provided: HashMap::new(),
            },
            notes,
            extra,
            watcher,
            sigint,
            out,
            failed: false,
            noted: Default::default(),
        };
        Ok(shell.session(input).await)
    });
    // The stdin reader may sit in a blocking read: do not wait for it.
    runtime.shutdown_background();
    let code = code.context(what)?;
    Ok(ExitCode::from(u8::try_from(code).unwrap_or(1)))
}

/// Reads stdin lines on a thread, as they arrive.
fn piped_stdin() -> mpsc::Receiver<String> {
    let (tx, rx) = mpsc::channel(64);
    std::thread::spawn(move || {
        for line in std::io::stdin().lock().lines() {
            let Ok(line) = line else { return };
            if tx.blocking_send(line).is_err() {
                return;
            }
        }
    });
    rx
}

/// Where output goes: stdout, or above the prompt while the editor reads a line.
struct Out {
    colour: bool,
    printer: Option<editor::Printer>,
    /// The editor is reading a line: print through it, above the prompt.
    reading: bool,
    /// `Some`: what is shown waits here (while a read whose prompt changed ends, so
    /// the event that changed it appears below the old prompt, above the new one).
    held: Option<Vec<String>>,
}

impl Out {
    fn show(&mut self, level: Level, lines: &[String]) {
        if lines.is_empty() {
            return;
        }
        // Every line is shown with `terminal_text` before it is painted: the colours are
        // the only escape sequences that reach the terminal.
        let shown: Vec<_> = lines.iter().map(|l| multi_line(l)).collect();
        let text = render::paint(level, &shown.join("\n"), self.colour);
        match &mut self.held {
            Some(held) => held.push(text),
            None => self.write(text),
        }
    }

    /// Holds what is shown from now until [`Out::release`].
    fn hold(&mut self) {
        self.held.get_or_insert_with(Vec::new);
    }

    /// Shows what was held.
    fn release(&mut self) {
        for text in self.held.take().unwrap_or_default() {
            self.write(text);
        }
    }

    fn write(&mut self, text: String) {
        if self.reading {
            if let Some(printer) = &self.printer {
                // Outside raw mode the printer writes the text as it is: end the line.
                if printer.send(format!("{text}\n")).is_ok() {
                    return;
                }
            }
        }
        let mut stdout = std::io::stdout().lock();
        let _ = writeln!(stdout, "{text}");
        let _ = stdout.flush();
    }

    fn line(&mut self, level: Level, line: impl Into<String>) {
        self.show(level, &[line.into()]);
    }
}

/// What a verb needs; cloned into each verb's future.
#[derive(Clone)]
struct Ctx {
    host: Host,
    save: Option<PathBuf>,
    /// Images saved so far (numbers the files).
    saved: Arc<AtomicUsize>,
    /// Fake turns run so far (numbers their tool ids).
    turns: Arc<AtomicUsize>,
    interactive: bool,
    /// The most recently opened panel still open: (extension, panel id).
    panel: Option<(String, String)>,
    watched: Watched,
    /// The tools and commands each ready extension was last seen to provide: a
    /// `registry_changed` that leaves them as they were (every start and reload) is not
    /// shown.
    provided: HashMap<String, Provided>,
}

/// An extension's tools and commands, sorted.
#[derive(Clone, PartialEq)]
struct Provided {
    tools: Vec<String>,
    commands: Vec<String>,
}

impl Ctx {
    /// What each ready extension provides now.
    fn provided_now(&self) -> HashMap<String, Provided> {
        self.host
            .extensions()
            .into_iter()
            .filter(|e| e.state == ExtState::Ready)
            .map(|e| {
                let provided = Provided {
                    tools: e.tools,
                    commands: e.commands.iter().map(|c| format!("/{c}")).collect(),
                };
                (e.name, provided)
            })
            .collect()
    }

    /// After a `registry_changed` of `extension`: what it provides now, in a line, when
    /// that differs from what it was seen to provide (nothing the first time it is seen
    /// ready, nor while it is not ready: the load report and its exit say that).
    fn provided_change(&mut self, extension: &str) -> Option<String> {
        let now = self.provided_now().remove(extension)?;
        let before = self.provided.insert(extension.to_string(), now.clone())?;
        let list = |names: &[String]| match names {
            [] => "none".to_string(),
            names => names
                .iter()
                .map(|n| render::clean(n))
                .collect::<Vec<_>>()
                .join(", "),
        };
        let mut changed = Vec::new();
        if now.tools != before.tools {
            changed.push(format!(
                "tools {} (were {})",
                list(&now.tools),
                list(&before.tools)
            ));
        }
        if now.commands != before.commands {
            changed.push(format!(
                "commands {} (were {})",
                list(&now.commands),
                list(&before.commands)
            ));
        }
        (!changed.is_empty()).then(|| format!("[{extension}] now provides {}", changed.join("; ")))
    }
}

/// What a verb did. Its lines are printed as it says them, among the events.
struct Outcome {
    lines: mpsc::UnboundedSender<(Level, String)>,
    failed: bool,
    /// `Some(new)`: the open panel changed.
    panel: Option<Option<(String, String)>>,
    quit: bool,
}

impl Outcome {
    fn new(lines: mpsc::UnboundedSender<(Level, String)>) -> Outcome {
        Outcome {
            lines,
            failed: false,
            panel: None,
            quit: false,
        }
    }

    fn say(&mut self, level: Level, line: impl Into<String>) {
        let _ = self.lines.send((level, line.into()));
    }

    fn all(&mut self, level: Level, lines: Vec<String>) {
        for line in lines {
            self.say(level, line);
        }
    }

    fn fail(&mut self, error: impl std::fmt::Display) {
        self.failed = true;
        self.say(Level::Error, format!("error: {error}"));
    }
}

struct Shell {
    ctx: Ctx,
    notes: mpsc::Receiver<HostEvent>,
    /// What a watcher sends (nothing in a plain shell).
    extra: mpsc::UnboundedReceiver<Extra>,
    watcher: Option<Watching>,
    sigint: Signal,
    out: Out,
    failed: bool,
    /// The withheld environment variables noted so far: each is said once a session.
    noted: std::collections::HashSet<String>,
}

/// The shell's prompt: it names the open panel.
fn verb_prompt(ctx: &Ctx) -> Option<String> {
    Some(match &ctx.panel {
        Some((_, id)) => format!("zot [panel {}]> ", render::clean(id)),
        None => "zot> ".to_string(),
    })
}

/// A host event or an [`Extra`]: what the session shows as it comes.
enum Note {
    Host(Box<HostEvent>),
    Extra(Extra),
}

/// The next note; pending forever once both channels are closed.
async fn next_note(
    notes: &mut mpsc::Receiver<HostEvent>,
    extra: &mut mpsc::UnboundedReceiver<Extra>,
) -> Note {
    tokio::select! {
        Some(e) = notes.recv() => Note::Host(Box::new(e)),
        Some(x) = extra.recv() => Note::Extra(x),
        else => std::future::pending().await,
    }
}

/// Shows a note.
fn on_note(out: &mut Out, ctx: &mut Ctx, note: Note) {
    match note {
        Note::Host(e) => on_event(out, ctx, &e),
        Note::Extra(Extra::Line(level, line)) => out.line(level, format!("* {line}")),
        Note::Extra(Extra::Reloaded) => {
            ctx.panel = None;
            ctx.watched.settled += 1;
            ctx.watched.reloaded = true;
        }
        Note::Extra(Extra::BuildFailed) => {
            ctx.watched.settled += 1;
            ctx.watched.reloaded = false;
        }
    }
}

/// Prints one host event, and follows the panels it opens and closes. What the host's
/// own start, reload and shutdown cause is not news: an extension it stopped that exited
/// cleanly, registrations that end as they were.
fn on_event(out: &mut Out, ctx: &mut Ctx, e: &HostEvent) {
    match e {
        HostEvent::OpenPanel { extension, frame } => {
            ctx.panel = Some((extension.clone(), frame.panel.id.clone()));
        }
        HostEvent::PanelClose { extension, frame }
            if ctx.panel.as_ref() == Some(&(extension.clone(), frame.panel_id.clone())) =>
        {
            ctx.panel = None;
        }
        HostEvent::ExtensionExited { extension, .. }
            if ctx.panel.as_ref().is_some_and(|(ext, _)| ext == extension) =>
        {
            ctx.panel = None;
        }
        _ => {}
    }
    match e {
        HostEvent::RegistryChanged { extension } => {
            if let Some(line) = ctx.provided_change(extension) {
                out.line(Level::Dim, format!("* {line}"));
            }
        }
        HostEvent::ExtensionExited {
            stopped: true,
            code: Some(0),
            ..
        } => {}
        e => {
            let (level, lines) = render::event(e);
            let lines: Vec<String> = lines.into_iter().map(|l| format!("* {l}")).collect();
            out.show(level, &lines);
        }
    }
}

impl Shell {
    async fn session(&mut self, mut input: Input) -> i32 {
        let report = self.ctx.host.load().await;
        self.show_report(&report);
        self.ctx.provided = self.ctx.provided_now();
        self.note_withheld();
        // A script whose extensions did not all load has failed, whatever its verbs do.
        if !report.errors.is_empty() && !matches!(input, Input::Terminal(_)) {
            self.failed = true;
        }
        if matches!(input, Input::Terminal(_)) {
            if !report.untrusted.is_empty() {
                if let Input::Terminal(editor) = &mut input {
                    self.offer_trust(editor).await;
                }
            }
        } else if !report.starting.is_empty() {
            self.wait_compiled().await;
        }
        let code = match input {
            Input::Terminal(editor) => self.interactive(editor).await,
            input => self.script(input).await,
        };
        if let Some(Watching { mut task, stop }) = self.watcher.take() {
            let _ = stop.send(());
            if tokio::time::timeout(WATCH_STOP, &mut task).await.is_err() {
                task.abort();
            }
        }
        self.drain();
        // What stopping the extensions causes is not shown.
        self.ctx.host.shutdown().await;
        code
    }

    /// Shows the notes already there.
    fn drain(&mut self) {
        while let Ok(e) = self.notes.try_recv() {
            on_event(&mut self.out, &mut self.ctx, &e);
        }
        while let Ok(x) = self.extra.try_recv() {
            on_note(&mut self.out, &mut self.ctx, Note::Extra(x));
        }
    }

    fn show_report(&mut self, report: &LoadReport) {
        for (level, line) in crate::output::report::lines(report) {
            self.out.line(level, line);
        }
    }

    /// A script waits for components still compiling, so its verbs find their tools.
    async fn wait_compiled(&mut self) {
        let deadline = Instant::now() + COMPILE_WAIT;
        loop {
            let starting = self
                .ctx
                .host
                .extensions()
                .iter()
                .any(|e| e.state == ExtState::Starting);
            if !starting || Instant::now() >= deadline {
                return;
            }
            tokio::select! {
                note = next_note(&mut self.notes, &mut self.extra) => on_note(&mut self.out, &mut self.ctx, note),
                _ = tokio::time::sleep(Duration::from_millis(100)) => {}
            }
        }
    }

    async fn script(&mut self, mut input: Input) -> i32 {
        loop {
            let line = match &mut input {
                Input::Script(lines) => lines.pop_front(),
                Input::Piped(rx) => loop {
                    tokio::select! {
                        line = rx.recv() => break line,
                        note = next_note(&mut self.notes, &mut self.extra) => on_note(&mut self.out, &mut self.ctx, note),
                        _ = self.sigint.recv() => {
                            self.out.line(Level::Warn, "interrupted");
                            return 130;
                        }
                    }
                },
                Input::Terminal(_) => unreachable!("a script has no editor"),
            };
            let Some(line) = line else { break };
            self.drain();
            let trimmed = line.trim();
            if trimmed.is_empty() {
                continue;
            }
            self.out.line(Level::Plain, format!("> {trimmed}"));
            let quit = match verbs::parse(trimmed) {
                Ok(None) => false,
                Ok(Some(verb)) => self.run_verb(verb).await,
                Err(e) => {
                    self.failed = true;
                    self.out.line(Level::Error, format!("error: {e}"));
                    false
                }
            };
            self.settle().await;
            if quit {
                break;
            }
        }
        i32::from(self.failed)
    }

    /// Prints the events a verb caused: until none came for [`QUIET`], at most
    /// [`SETTLE_CAP`].
    async fn settle(&mut self) {
        let cap = Instant::now() + SETTLE_CAP;
        loop {
            let until = (Instant::now() + QUIET).min(cap);
            let next = next_note(&mut self.notes, &mut self.extra);
            match tokio::time::timeout_at(until, next).await {
                Ok(note) => on_note(&mut self.out, &mut self.ctx, note),
                Err(_) => return,
            }
        }
    }

    /// `wait reload`: waits for the watcher's next reload or failed build (one that came
    /// since the last `wait reload` counts, so a change made just before is not missed),
    /// at most `secs`, showing events meanwhile.
    async fn wait_reload(&mut self, secs: u64) {
        let failed = |shell: &mut Shell, why: String| {
            shell.out.line(Level::Error, format!("error: {why}"));
            if !shell.ctx.interactive {
                shell.failed = true;
            }
        };
        if self.watcher.is_none() {
            let why = "`wait reload` is for `zot ext dev`: nothing here reloads by itself";
            return failed(self, why.into());
        }
        let deadline = tokio::time::Instant::now() + Duration::from_secs(secs);
        while self.ctx.watched.settled == self.ctx.watched.waited {
            tokio::select! {
                note = next_note(&mut self.notes, &mut self.extra) => on_note(&mut self.out, &mut self.ctx, note),
                _ = tokio::time::sleep_until(deadline) => {
                    return failed(self, format!("no reload within {secs} s"));
                }
                _ = self.sigint.recv() => {
                    self.out.line(Level::Warn, "cancelled (ctrl-c)");
                    return;
                }
            }
        }
        self.ctx.watched.waited = self.ctx.watched.settled;
        if !self.ctx.watched.reloaded {
            failed(self, "the build failed: nothing was reloaded".into());
        }
    }

    /// Runs a verb, printing events meanwhile; SIGINT cancels it. Whether to quit.
    async fn run_verb(&mut self, verb: Verb) -> bool {
        if let Verb::WaitReload(secs) = verb {
            self.wait_reload(secs).await;
            return false;
        }
        // A SIGINT that came while nothing ran is not for this verb.
        while tokio::time::timeout(Duration::ZERO, self.sigint.recv())
            .await
            .is_ok()
        {}
        let (tx, mut lines) = mpsc::unbounded_channel();
        let run = exec::exec(self.ctx.clone(), verb, tx);
        tokio::pin!(run);
        let outcome = loop {
            tokio::select! {
                biased;
                Some((level, line)) = lines.recv() => self.out.line(level, line),
                note = next_note(&mut self.notes, &mut self.extra) => on_note(&mut self.out, &mut self.ctx, note),
                _ = self.sigint.recv() => break None,
                outcome = &mut run => break Some(outcome),
            }
        };
        while let Ok((level, line)) = lines.try_recv() {
            self.out.line(level, line);
        }
        match outcome {
            Some(outcome) => self.finish(outcome),
            None => {
                self.out.line(
                    Level::Warn,
                    "cancelled (ctrl-c): a running tool call was sent tool_cancel",
                );
                false
            }
        }
    }

    /// Notes, once a session, each environment variable a component asked for and runs
    /// without (after the load, and after a verb: a reload or a grant may change them).
    fn note_withheld(&mut self) {
        for (key, line) in crate::output::report::withheld_env(&self.ctx.host.extensions()) {
            if self.noted.insert(key) {
                self.out.line(Level::Warn, line);
            }
        }
    }

    /// Prints a verb's outcome and applies it; whether to quit.
    fn finish(&mut self, outcome: Outcome) -> bool {
        self.note_withheld();
        if outcome.failed && !self.ctx.interactive {
            self.failed = true;
        }
        if let Some(panel) = outcome.panel {
            self.ctx.panel = panel;
        }
        outcome.quit
    }
}
