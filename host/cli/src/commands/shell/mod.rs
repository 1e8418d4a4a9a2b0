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
mod verbs;

pub(crate) use dev::{run as dev, DevArgs};

use crate::output::error::{CliError, Context as _};
use crate::output::render::{self, Level};
use crate::output::terminal::{Prompt, Term};
use serde_json::{json, Map, Value};
use std::collections::VecDeque;
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
reload, grant, revoke, trust, sleep, help, quit.

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
            },
            notes,
            extra,
            watcher,
            sigint,
            out,
            failed: false,
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
}

/// What [`Shell::ask`] got.
enum Answer {
    Line(String),
    /// ctrl-c.
    Interrupted,
    /// ctrl-d, the terminal is gone, or the editor failed (said).
    Eof,
    /// What the prompt asked for is gone (the focused panel closed).
    Gone,
}

/// How focus on a panel ended.
enum Focused {
    /// By `esc`, ctrl-c, or the panel closing.
    Left,
    /// The panel closed as this line was typed: it is for the shell.
    Shell(String),
    /// End of input.
    Eof,
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
        Note::Extra(Extra::Reloaded) => ctx.panel = None,
    }
}

/// Prints one host event, and follows the panels it opens and closes.
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
    let (level, lines) = render::event(e);
    let lines: Vec<String> = lines.into_iter().map(|l| format!("* {l}")).collect();
    out.show(level, &lines);
}

impl Shell {
    async fn session(&mut self, mut input: Input) -> i32 {
        let report = self.ctx.host.load().await;
        self.show_report(&report);
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

    /// Interactively: shows the project's extensions as `zot ext trust` does (the
    /// full-permission warning, each command line), then asks whether to trust them now.
    async fn offer_trust(&mut self, editor: &mut editor::Editor) {
        let config = self.ctx.host.config();
        let (home, cwd) = (config.home.clone(), config.cwd.clone());
        let review = match crate::records::trust::review_project(&home, Some(cwd), &mut Term) {
            Ok(Some(review)) => review,
            Ok(None) => return,
            Err(e) => {
                self.out.line(Level::Error, format!("error: {e}"));
                return;
            }
        };
        let question = "Trust the project's extensions listed above? [y/N] ";
        let answer = self.ask(editor, &|_| Some(question.to_string()), "").await;
        let yes = match answer {
            Answer::Line(line) => matches!(line.trim(), "y" | "yes" | "Y"),
            Answer::Interrupted | Answer::Eof | Answer::Gone => false,
        };
        if !yes {
            self.out.line(
                Level::Dim,
                "not trusted; `trust` reviews them later".to_string(),
            );
            return;
        }
        if let Err(e) = crate::records::trust::trust_reviewed(&home, &review, &mut Term) {
            self.out
                .line(Level::Error, format!("error: {}", e.message()));
            return;
        }
        self.out
            .line(Level::Dim, "reloading to start what was trusted");
        self.run_verb(Verb::Reload).await;
    }

    /// Reads one line from the editor, printing events above the prompt meanwhile.
    /// `prompt` says the prompt from the session's state: when an event changes it, the
    /// read is interrupted and asked again under the new prompt with the line as it
    /// was; when it says `None` (what it prompts for is gone), [`Answer::Gone`].
    async fn ask(
        &mut self,
        editor: &mut editor::Editor,
        prompt: &dyn Fn(&Ctx) -> Option<String>,
        initial: &str,
    ) -> Answer {
        let Some(mut shown) = prompt(&self.ctx) else {
            return Answer::Gone;
        };
        let mut typed = (initial.to_string(), String::new());
        loop {
            editor.ask(&shown, typed);
            self.out.reading = true;
            // While the prompt is stale: when to interrupt again, and how many times more.
            let mut again: Option<(Instant, u32)> = None;
            let waiting = |again: Option<(Instant, u32)>| again.is_some_and(|(_, n)| n > 0);
            let read = loop {
                let at = again.map_or_else(Instant::now, |(at, _)| at);
                tokio::select! {
                    read = editor.read() => break read,
                    note = next_note(&mut self.notes, &mut self.extra) => {
                        self.out.hold();
                        on_note(&mut self.out, &mut self.ctx, note);
                        if again.is_none() && prompt(&self.ctx).as_ref() != Some(&shown) {
                            editor.interrupt();
                            again = Some((Instant::now() + INTERRUPT_AGAIN, INTERRUPTS - 1));
                        }
                        if !waiting(again) {
                            self.out.release();
                        }
                    }
                    _ = tokio::time::sleep_until(at), if waiting(again) => {
                        editor.interrupt();
                        again = again.map(|(_, n)| (Instant::now() + INTERRUPT_AGAIN, n - 1));
                        if !waiting(again) {
                            // The read goes on under the old prompt: show what came.
                            self.out.release();
                        }
                    }
                }
            };
            self.out.reading = false;
            self.out.release();
            match read {
                editor::Read::Line(line) => return Answer::Line(line),
                editor::Read::Interrupted => return Answer::Interrupted,
                editor::Read::Eof => return Answer::Eof,
                editor::Read::Failed(e) => {
                    self.out.line(Level::Error, format!("error: {e}"));
                    return Answer::Eof;
                }
                editor::Read::Aborted(was) => match prompt(&self.ctx) {
                    Some(now) => {
                        shown = now;
                        typed = was;
                    }
                    None => return Answer::Gone,
                },
            }
        }
    }

    async fn interactive(&mut self, mut editor: editor::Editor) -> i32 {
        self.out.line(
            Level::Dim,
            "`help` lists the verbs; tab completes (twice: lists); ctrl-c cancels a call; ctrl-d or `quit` leaves",
        );
        // A line typed for a panel that closed meanwhile: the shell's.
        let mut pending = None;
        loop {
            let line = match pending.take() {
                Some(line) => line,
                None => match self.ask(&mut editor, &verb_prompt, "").await {
                    Answer::Line(line) => line,
                    // ctrl-c at the prompt: the line is dropped.
                    Answer::Interrupted | Answer::Gone => continue,
                    Answer::Eof => return 0,
                },
            };
            let verb = match verbs::parse(&line) {
                Ok(None) => continue,
                Ok(Some(v)) => v,
                Err(e) => {
                    self.out.line(Level::Error, format!("error: {e}"));
                    continue;
                }
            };
            let verb = match verb {
                // No such tool: no argument prompt (the next line is not its arguments);
                // the call says so.
                Verb::Call {
                    tool,
                    args: None,
                    validate,
                } if !self.has_tool(&tool) => Verb::Call {
                    tool,
                    args: Some(json!({})),
                    validate,
                },
                Verb::Call {
                    tool,
                    args: None,
                    validate,
                } => {
                    let schema = self
                        .ctx
                        .host
                        .tools()
                        .into_iter()
                        .find(|(_, t)| t.name == tool)
                        .map(|(_, t)| t.schema)
                        .unwrap_or(Value::Null);
                    let form = args::Form::of(&schema);
                    self.out.show(Level::Dim, &form.describe(&tool));
                    let prompt = format!("{} args> ", render::clean(&tool));
                    let text = match self
                        .ask(&mut editor, &|_| Some(prompt.clone()), &form.initial())
                        .await
                    {
                        Answer::Line(text) => text,
                        // ctrl-c at the argument prompt: no call.
                        Answer::Interrupted | Answer::Gone => continue,
                        Answer::Eof => return 0,
                    };
                    match form.args(&text) {
                        Ok(args) => Verb::Call {
                            tool,
                            args: Some(args),
                            validate,
                        },
                        Err(e) => {
                            self.out.line(Level::Error, format!("error: {e}"));
                            continue;
                        }
                    }
                }
                Verb::Focus => {
                    match self.focus(&mut editor).await {
                        Focused::Left => {}
                        Focused::Shell(line) => pending = Some(line),
                        Focused::Eof => return 0,
                    }
                    continue;
                }
                v => v,
            };
            if self.run_verb(verb).await {
                return 0;
            }
        }
    }

    /// Whether a tool of that name is active.
    fn has_tool(&self, tool: &str) -> bool {
        self.ctx.host.tools().iter().any(|(_, t)| t.name == tool)
    }

    /// Focus on the open panel: each line typed is sent as keys (see
    /// [`verbs::focus_keys`]) until `esc`, ctrl-c, or the panel is no longer the open
    /// one (its extension closed it or exited, a reload, another panel opened): then the
    /// shell has the keyboard back at once, and a line typed for the panel after that is
    /// the shell's.
    async fn focus(&mut self, editor: &mut editor::Editor) -> Focused {
        let Some(focused) = self.ctx.panel.clone() else {
            self.out.line(Level::Error, "error: no panel is open");
            return Focused::Left;
        };
        let (ext, id) = focused.clone();
        self.out.line(
            Level::Dim,
            "keys go to the panel: enter sends enter, a key name that key, text its characters; esc or ctrl-c leaves",
        );
        let keys_prompt = |ctx: &Ctx| {
            (ctx.panel.as_ref() == Some(&focused))
                .then(|| format!("[panel {}] keys> ", render::clean(&id)))
        };
        let gone = |out: &mut Out, ctx: &Ctx| {
            let why = match ctx.panel {
                None => "it closed",
                Some(_) => "another panel opened",
            };
            out.line(Level::Dim, format!("left the panel: {why}"));
        };
        loop {
            let line = match self.ask(editor, &keys_prompt, "").await {
                Answer::Line(line) => line,
                Answer::Interrupted => break,
                Answer::Eof => return Focused::Eof,
                Answer::Gone => {
                    gone(&mut self.out, &self.ctx);
                    return Focused::Left;
                }
            };
            if keys_prompt(&self.ctx).is_none() {
                gone(&mut self.out, &self.ctx);
                return Focused::Shell(line);
            }
            let keys = verbs::focus_keys(&line);
            let leave = keys.first().is_some_and(|(k, _)| k == "escape");
            for (key, text) in keys {
                let frame = PanelKey {
                    panel_id: id.clone(),
                    key,
                    text,
                    extra: Map::new(),
                };
                if let Err(e) = self.ctx.host.panel_key(&ext, frame) {
                    self.out.line(Level::Error, format!("error: {e}"));
                    return Focused::Left;
                }
            }
            if leave {
                break;
            }
        }
        self.out.line(Level::Dim, "left the panel");
        Focused::Left
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

    /// Runs a verb, printing events meanwhile; SIGINT cancels it. Whether to quit.
    async fn run_verb(&mut self, verb: Verb) -> bool {
        // A SIGINT that came while nothing ran is not for this verb.
        while tokio::time::timeout(Duration::ZERO, self.sigint.recv())
            .await
            .is_ok()
        {}
        let (tx, mut lines) = mpsc::unbounded_channel();
        let run = exec(self.ctx.clone(), verb, tx);
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

    /// Prints a verb's outcome and applies it; whether to quit.
    fn finish(&mut self, outcome: Outcome) -> bool {
        if outcome.failed && !self.ctx.interactive {
            self.failed = true;
        }
        if let Some(panel) = outcome.panel {
            self.ctx.panel = panel;
        }
        outcome.quit
    }
}

/// Runs one verb against the host.
async fn exec(ctx: Ctx, verb: Verb, lines: mpsc::UnboundedSender<(Level, String)>) -> Outcome {
    let mut o = Outcome::new(lines);
    let host = &ctx.host;
    match verb {
        Verb::Command { name, args } => match host.invoke_command(&name, &args).await {
            Ok((ext, response)) => {
                let failed = response.error.is_some();
                o.all(
                    if failed { Level::Error } else { Level::Plain },
                    render::command_response(&name, &ext, &response),
                );
                if let Some(panel) = &response.open_panel {
                    o.panel = Some(Some((ext.clone(), panel.id.clone())));
                    if ctx.interactive {
                        o.say(Level::Dim, "`focus` sends keys to it, `close` closes it");
                    }
                }
            }
            Err(e) => o.fail(e),
        },
        Verb::Call {
            tool,
            args,
            validate,
        } => {
            let args = args.unwrap_or_else(|| json!({}));
            if !validate || fits_schema(&ctx, &tool, &args, &mut o) {
                call(&ctx, &tool, args, &mut o).await;
            }
        }
        Verb::Intercept { event, fields } => {
            let (steps, verdict) = host.intercept_steps(make_event(&event, fields)).await;
            o.all(
                if verdict.block {
                    Level::Warn
                } else {
                    Level::Plain
                },
                render::intercept_steps(&event, &steps, &verdict),
            );
        }
        Verb::Emit { event, fields } => {
            let n = host.emit(&make_event(&event, fields));
            o.say(
                Level::Plain,
                format!("emit {event}: queued for {n} subscriber(s)"),
            );
        }
        Verb::Turn { tool, args } => turn(&ctx, tool, args, &mut o).await,
        Verb::List => o.all(Level::Plain, render::extensions(&host.extensions())),
        Verb::Tools => o.all(Level::Plain, render::tools(&host.tools())),
        Verb::Commands => {
            let commands = host.commands();
            if commands.is_empty() {
                o.say(Level::Plain, "no command");
            }
            for (ext, c) in commands {
                o.say(
                    Level::Plain,
                    format!(
                        "/{} ({ext}): {}",
                        render::clean(&c.name),
                        render::clean(&c.description)
                    ),
                );
            }
        }
        Verb::Logs { name, lines } => {
            let path = host
                .extensions()
                .into_iter()
                .find(|e| e.name == name)
                .map(|e| e.log)
                .unwrap_or_else(|| host.config().home.log_path(&name));
            match tokio::fs::read(&path).await {
                Ok(bytes) => {
                    let text = String::from_utf8_lossy(&bytes);
                    let all: Vec<&str> = text.lines().collect();
                    o.say(
                        Level::Dim,
                        format!("{} (last {} lines):", path.display(), lines.min(all.len())),
                    );
                    for l in &all[all.len().saturating_sub(lines)..] {
                        o.say(Level::Plain, format!("  {}", render::clean(l)));
                    }
                }
                Err(e) => o.fail(format!("logs {name}: {}: {e}", path.display())),
            }
        }
        Verb::Key { key, text } => match &ctx.panel {
            None => o.fail("no panel is open"),
            Some((ext, id)) => {
                let frame = PanelKey {
                    panel_id: id.clone(),
                    key: key.clone(),
                    text,
                    extra: Map::new(),
                };
                match host.panel_key(ext, frame) {
                    Ok(()) => o.say(Level::Dim, format!("key {key} sent to panel {id} ({ext})")),
                    Err(e) => o.fail(e),
                }
            }
        },
        Verb::Focus => o.fail("focus needs a terminal: in a script, send keys with `key`"),
        Verb::Close => match &ctx.panel {
            None => o.fail("no panel is open"),
            Some((ext, id)) => match host.panel_close(ext, id.clone()) {
                Ok(()) => {
                    o.say(Level::Dim, format!("panel {id} ({ext}) closed"));
                    o.panel = Some(None);
                }
                Err(e) => o.fail(e),
            },
        },
        Verb::Reload => {
            let report = host.reload().await;
            for (level, line) in crate::output::report::lines(&report) {
                o.say(level, line);
            }
            o.panel = Some(None);
        }
        Verb::Grant(words) => manage_grant(&ctx, "grant", words, &mut o),
        Verb::Revoke(words) => manage_grant(&ctx, "revoke", words, &mut o),
        Verb::Trust(words) => {
            trust_and_reload(&ctx, words, &mut o).await;
        }
        Verb::Help => o.all(
            Level::Plain,
            render::HELP.lines().map(str::to_string).collect(),
        ),
        Verb::Sleep(ms) => tokio::time::sleep(Duration::from_millis(ms)).await,
        Verb::Quit => o.quit = true,
    }
    o
}

/// An event named `event` with `fields`.
fn make_event(event: &str, fields: Map<String, Value>) -> Event {
    Event {
        id: None,
        event: event.to_string(),
        fields,
    }
}

/// Whether `args` may be sent to `tool`: they fit its schema, or it has none that can be
/// used (said as a warning), or there is no such tool (the call says so). Each problem is
/// an error line naming its field.
fn fits_schema(ctx: &Ctx, tool: &str, args: &Value, o: &mut Outcome) -> bool {
    use crate::validate::{validate, Checked};
    let tools = ctx.host.tools();
    let Some((_, registered)) = tools.iter().find(|(_, t)| t.name == tool) else {
        return true;
    };
    match validate(&registered.schema, args) {
        Checked::Valid => true,
        Checked::Unchecked(why) => {
            o.say(
                Level::Warn,
                format!(
                    "warning: {}: {}; the arguments are sent unchecked",
                    render::clean(tool),
                    render::clean(&why)
                ),
            );
            true
        }
        Checked::Invalid(problems) => {
            for problem in problems {
                o.fail(format!(
                    "{}: {}",
                    render::clean(tool),
                    render::clean(&problem)
                ));
            }
            o.say(
                Level::Dim,
                "hint: make the arguments fit the tool's schema, or `call --no-validate` sends them as they are",
            );
            false
        }
    }
}

/// Calls a tool and shows its result, saving its images with `--save`. The text of its
/// first text block, or the error.
async fn call(ctx: &Ctx, tool: &str, args: Value, o: &mut Outcome) -> String {
    match ctx.host.call_tool(tool, args, None).await {
        Ok((ext, result)) => {
            let saved: Vec<Option<String>> = result
                .content
                .iter()
                .map(|block| save_image(ctx, tool, block, o))
                .collect();
            o.all(
                if result.is_error {
                    Level::Warn
                } else {
                    Level::Plain
                },
                render::tool_result(tool, &ext, &result, &saved),
            );
            result
                .content
                .iter()
                .find_map(|b| b.get("text").and_then(Value::as_str))
                .unwrap_or("")
                .to_string()
        }
        Err(e) => {
            let text = e.to_string();
            o.fail(&text);
            text
        }
    }
}

/// Writes an image block into the `--save` folder: where, if it did.
fn save_image(ctx: &Ctx, tool: &str, block: &Value, o: &mut Outcome) -> Option<String> {
    let dir = ctx.save.as_ref()?;
    if block.get("type").and_then(Value::as_str) != Some("image") {
        return None;
    }
    let mime = block.get("mime_type").and_then(Value::as_str).unwrap_or("");
    let data = block.get("data").and_then(Value::as_str).unwrap_or("");
    let Some(bytes) = render::base64_decode(data) else {
        o.fail(format!(
            "{tool}: an image whose data is not base64: not saved"
        ));
        return None;
    };
    let n = ctx.saved.fetch_add(1, Ordering::SeqCst) + 1;
    let name: String = tool
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    let path = dir.join(format!("{name}-{n}.{}", render::image_ext(mime)));
    match std::fs::create_dir_all(dir).and_then(|()| std::fs::write(&path, bytes)) {
        Ok(()) => Some(path.display().to_string()),
        Err(e) => {
            o.fail(format!("--save {}: {e}", path.display()));
            None
        }
    }
}

/// A scripted fake turn: session_start, turn_start (intercepted, then emitted), the tool
/// call through interception, the assistant message (intercepted, then emitted),
/// turn_end.
async fn turn(ctx: &Ctx, tool: Option<String>, args: Value, o: &mut Outcome) {
    let host = &ctx.host;
    let n = ctx.turns.fetch_add(1, Ordering::SeqCst) + 1;
    let fields = |v: Value| v.as_object().cloned().unwrap_or_default();
    let emit = |o: &mut Outcome, event: &str, f: Value| {
        let delivered = host.emit(&make_event(event, fields(f)));
        o.say(
            Level::Dim,
            format!("turn {n}: {event} queued for {delivered} subscriber(s)"),
        );
    };
    emit(o, "session_start", json!({}));
    let (steps, verdict) = host
        .intercept_steps(make_event("turn_start", fields(json!({"step": n}))))
        .await;
    o.all(
        Level::Plain,
        render::intercept_steps("turn_start", &steps, &verdict),
    );
    if verdict.block {
        o.say(Level::Warn, format!("turn {n}: blocked at turn_start"));
        emit(o, "turn_end", json!({"stop": "blocked"}));
        return;
    }
    emit(o, "turn_start", json!({"step": n}));
    let text = match tool {
        None => "nothing to do".to_string(),
        Some(tool) => {
            let tool_id = format!("turn-{n}");
            let call_event =
                |args: &Value| json!({"tool_id": tool_id, "tool_name": tool, "tool_args": args});
            let (steps, verdict) = host
                .intercept_steps(make_event("tool_call", fields(call_event(&args))))
                .await;
            o.all(
                Level::Plain,
                render::intercept_steps("tool_call", &steps, &verdict),
            );
            if verdict.block {
                let reason = verdict.reason.unwrap_or_default();
                o.say(Level::Warn, format!("turn {n}: {tool} blocked: {reason}"));
                format!("{tool} was blocked: {reason}")
            } else {
                let args = verdict.modified_args.unwrap_or(args);
                emit(o, "tool_call", call_event(&args));
                let result = call(ctx, &tool, args, o).await;
                format!("{tool} said: {result}")
            }
        }
    };
    let (steps, verdict) = host
        .intercept_steps(make_event(
            "assistant_message",
            fields(json!({"text": text})),
        ))
        .await;
    o.all(
        Level::Plain,
        render::intercept_steps("assistant_message", &steps, &verdict),
    );
    let text = verdict.replace_text.unwrap_or(text);
    o.say(Level::Plain, format!("assistant: {}", render::clean(&text)));
    emit(o, "assistant_message", json!({"text": text}));
    emit(o, "turn_end", json!({"stop": "end_turn"}));
}

/// The flows the shell runs in-process (`grant`, `revoke`, `trust`) talk to the user
/// through this: on the terminal, the terminal itself (a question answered on stdin while
/// the editor is not reading); in a script, their lines go to the transcript, indented,
/// and no question can be asked (`--yes` answers).
enum ShellPrompt {
    Terminal(Term),
    Transcript(mpsc::UnboundedSender<(Level, String)>),
}

impl ShellPrompt {
    fn for_verb(ctx: &Ctx, o: &Outcome) -> Self {
        if ctx.interactive {
            ShellPrompt::Terminal(Term)
        } else {
            ShellPrompt::Transcript(o.lines.clone())
        }
    }
}

impl Prompt for ShellPrompt {
    fn say(&mut self, text: &str) {
        match self {
            ShellPrompt::Terminal(term) => term.say(text),
            ShellPrompt::Transcript(lines) => {
                for line in text.split('\n') {
                    let _ = lines.send((Level::Plain, format!("  {}", render::clean(line))));
                }
            }
        }
    }

    fn can_ask(&self) -> bool {
        match self {
            ShellPrompt::Terminal(term) => term.can_ask(),
            ShellPrompt::Transcript(_) => false,
        }
    }

    fn confirm(&mut self, question: &str) -> Result<bool, String> {
        match self {
            ShellPrompt::Terminal(term) => term.confirm(question),
            ShellPrompt::Transcript(_) => Err(format!("{question:?} cannot be asked in a script")),
        }
    }
}

/// The words of `grant`, `revoke` or `trust` parsed as `zot ext <verb>` parses them; a
/// mistake (or `--help`) is said in the transcript, and `None` returned.
fn parse_words<A: clap::Args + clap::FromArgMatches>(
    verb: &'static str,
    words: Vec<String>,
    o: &mut Outcome,
) -> Option<A> {
    let cmd = A::augment_args(
        clap::Command::new(verb)
            .bin_name(format!("zot ext {verb}"))
            .no_binary_name(true),
    );
    let parsed = cmd
        .try_get_matches_from(words)
        .and_then(|m| A::from_arg_matches(&m));
    match parsed {
        Ok(args) => Some(args),
        Err(e) => {
            let level = if e.use_stderr() {
                o.failed = true;
                Level::Error
            } else {
                Level::Plain
            };
            for line in e.render().to_string().trim_end().lines() {
                o.say(level, format!("  {}", render::clean(line)));
            }
            None
        }
    }
}

/// Runs `zot ext grant` or `revoke` in-process, with this shell's `$ZOT_HOME`, in its
/// project folder, through its prompt.
fn manage_grant(ctx: &Ctx, verb: &'static str, mut words: Vec<String>, o: &mut Outcome) {
    let config = ctx.host.config();
    // A loaded extension's name stands for its folder (an --ext one is not installed).
    if let Some(first) = words.first_mut() {
        if let Some(e) = ctx.host.extensions().into_iter().find(|e| &e.name == first) {
            *first = e.dir.display().to_string();
        }
    }
    let (home, cwd) = (&config.home, &config.cwd);
    let mut prompt = ShellPrompt::for_verb(ctx, o);
    let done = match verb {
        "grant" => parse_words(verb, words, o)
            .map(|args| crate::records::grant::grant_in(home, cwd, args, &mut prompt)),
        _ => parse_words(verb, words, o)
            .map(|args| crate::records::grant::revoke_in(home, cwd, args, &mut prompt)),
    };
    if let Some(Err(e)) = done {
        o.fail(e.message());
    }
}

/// `zot ext trust <project> …` in-process, then a reload when it trusted something.
async fn trust_and_reload(ctx: &Ctx, words: Vec<String>, o: &mut Outcome) {
    let config = ctx.host.config();
    let mut args = vec![config.cwd.display().to_string()];
    args.extend(words);
    if let Some(args) = parse_words("trust", args, o) {
        let mut prompt = ShellPrompt::for_verb(ctx, o);
        // On the terminal it may wait for an answer: the session waits with it.
        let trusted = tokio::task::block_in_place(|| {
            crate::records::trust::trust_with(&config.home, args, &mut prompt)
        });
        if let Err(e) = trusted {
            o.fail(e.message());
        }
    }
    let untrusted = ctx
        .host
        .extensions()
        .iter()
        .any(|e| e.state == ExtState::Untrusted);
    if !o.failed && untrusted {
        o.say(Level::Dim, "reloading to start what was trusted");
        let report = ctx.host.reload().await;
        for (level, line) in crate::output::report::lines(&report) {
            o.say(level, line);
        }
        o.panel = Some(None);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// In a script, what `grant`/`trust` say is in the transcript, each line indented
    /// (an empty line too), as when they ran as a child process.
    #[test]
    fn a_flow_run_in_a_script_says_its_lines_indented_in_the_transcript() {
        let (tx, mut rx) = mpsc::unbounded_channel();
        let mut prompt = ShellPrompt::Transcript(tx);
        prompt.say("guest asks for:");
        prompt.list(&["read the project".to_string()]);
        prompt.say("");
        prompt.say("a\nb\x1b[2J");
        assert!(!prompt.can_ask());
        drop(prompt);
        let mut lines = Vec::new();
        while let Ok((_, line)) = rx.try_recv() {
            lines.push(line);
        }
        assert_eq!(
            lines,
            [
                "  guest asks for:",
                "    - read the project",
                "  ",
                "  a",
                "  b\\x1b[2J"
            ]
        );
    }

    /// The words of `grant` are parsed as `zot ext grant` parses them; a mistake fails
    /// the verb and is said, `--help` is shown and fails nothing.
    #[test]
    fn the_words_of_grant_are_parsed_as_zot_ext_grant_parses_them() {
        let words = |w: &[&str]| w.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let (tx, mut rx) = mpsc::unbounded_channel();
        let mut o = Outcome::new(tx);
        let ok = parse_words::<crate::records::grant::GrantArgs>(
            "grant",
            words(&["w", "--all"]),
            &mut o,
        );
        assert!(ok.is_some() && !o.failed);
        let bad = parse_words::<crate::records::grant::GrantArgs>(
            "grant",
            words(&["w", "--nope"]),
            &mut o,
        );
        assert!(bad.is_none() && o.failed);
        let said: Vec<String> = std::iter::from_fn(|| rx.try_recv().ok().map(|(_, l)| l)).collect();
        assert!(said.iter().any(|l| l.contains("--nope")), "{said:?}");
        assert!(said.iter().any(|l| l.contains("zot ext grant")), "{said:?}");
        let mut o = Outcome::new(mpsc::unbounded_channel().0);
        let help =
            parse_words::<crate::records::grant::GrantArgs>("grant", words(&["--help"]), &mut o);
        assert!(help.is_none() && !o.failed);
    }
}
