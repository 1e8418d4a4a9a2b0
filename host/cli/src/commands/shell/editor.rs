//! The line editor (rustyline) on a thread of its own: the session asks for a line, the
//! thread reads it with editing, history (`$ZOT_HOME/shell_history`) and tab completion
//! of verbs, slash commands, tool, event and extension names (a second TAB lists the
//! matches, as bash's does); events are printed above the prompt through its external
//! printer meanwhile. The session may [`Editor::interrupt`] a read whose prompt no
//! longer says the truth (a panel closed): the line typed so far comes back with
//! [`Read::Aborted`], to be asked again under the new prompt.

use super::verbs;
use crate::output::render;
use rustyline::completion::{Completer, Pair};
use rustyline::error::ReadlineError;
use rustyline::highlight::Highlighter;
use rustyline::hint::Hinter;
use rustyline::history::DefaultHistory;
use rustyline::validate::Validator;
use rustyline::{CompletionType, Context, ExternalPrinter};
use std::os::unix::thread::JoinHandleExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use tokio::sync::mpsc;
use zot_host::Host;

/// How many lines the history keeps.
const HISTORY: usize = 1000;

/// A line read, or why none was.
pub(crate) enum Read {
    Line(String),
    /// ctrl-c at the prompt.
    Interrupted,
    /// ctrl-d, or the terminal is gone.
    Eof,
    Failed(String),
    /// The read was interrupted ([`Editor::interrupt`]): the line as it was, split at
    /// the cursor.
    Aborted(Typed),
}

/// A line being edited: the text left of the cursor and the text right of it.
pub(crate) type Typed = (String, String);

/// A request for one line: its number, the prompt and the text the line starts with.
struct Ask {
    id: u64,
    prompt: String,
    initial: Typed,
}

/// The session's handle on the editor thread.
pub(crate) struct Editor {
    asks: std::sync::mpsc::Sender<Ask>,
    reads: mpsc::Receiver<Read>,
    /// The number of the last ask.
    asked: u64,
    /// The number of the ask to interrupt (shared with the editor thread).
    abort: Arc<AtomicU64>,
    /// The editor thread: never joined, so its id stays valid for `pthread_kill`.
    thread: std::thread::JoinHandle<()>,
}

impl Editor {
    /// Starts reading a line (answered by [`Editor::read`]).
    pub(crate) fn ask(&mut self, prompt: &str, initial: Typed) {
        self.asked += 1;
        let _ = self.asks.send(Ask {
            id: self.asked,
            prompt: prompt.to_string(),
            initial,
        });
    }

    /// The line asked for.
    pub(crate) async fn read(&mut self) -> Read {
        self.reads.recv().await.unwrap_or(Read::Eof)
    }

    /// Interrupts the last ask: its read ends with [`Read::Aborted`]. rustyline reads
    /// the terminal in a blocking call that only a signal ends: SIGINT to the editor
    /// thread, which rustyline's handler (installed while it reads) turns into the end
    /// of the read. A signal that comes when rustyline is not reading goes to the
    /// session's own SIGINT handler (a stale SIGINT, dropped before the next verb), so
    /// the caller repeats this until the read ends, a bounded number of times; an ask
    /// not yet begun is not read at all.
    pub(crate) fn interrupt(&self) {
        self.abort.store(self.asked, Ordering::SeqCst);
        if self.thread.is_finished() {
            return;
        }
        // SAFETY: the thread's handle is held and never joined or detached, so its
        // pthread id is valid (a thread that ended and was not joined only answers
        // ESRCH); SIGINT always has a handler in this process (the session's, or
        // rustyline's while it reads), so it never ends the process.
        unsafe {
            libc::pthread_kill(self.thread.as_pthread_t(), libc::SIGINT);
        }
    }
}

/// Completion from the host's current registrations; the line as last edited.
struct Helper {
    host: Host,
    /// The line and the cursor as the editor last showed them (rustyline asks for a
    /// hint at each change): what an interrupted read gives back.
    typed: AtPrompt,
}

impl Completer for Helper {
    type Candidate = Pair;

    fn complete(
        &self,
        line: &str,
        pos: usize,
        _ctx: &Context<'_>,
    ) -> rustyline::Result<(usize, Vec<Pair>)> {
        let tools: Vec<String> = self.host.tools().into_iter().map(|(_, t)| t.name).collect();
        let commands: Vec<String> = self
            .host
            .commands()
            .into_iter()
            .map(|(_, c)| c.name)
            .collect();
        let extensions: Vec<String> = self.host.extensions().into_iter().map(|e| e.name).collect();
        let (start, candidates) = verbs::complete(&line[..pos], &tools, &commands, &extensions);
        // A name that would need escaping on the terminal is not offered: what the
        // list shows would not be what is inserted.
        let pairs = candidates
            .into_iter()
            .filter(|c| render::clean(c) == *c)
            .map(|c| Pair {
                display: c.trim_end().to_string(),
                replacement: c,
            })
            .collect();
        Ok((start, pairs))
    }
}

impl Hinter for Helper {
    type Hint = String;

    /// Gives no hint; notes the line, for an interrupted read.
    fn hint(&self, line: &str, pos: usize, _ctx: &Context<'_>) -> Option<String> {
        if let Ok(mut typed) = self.typed.lock() {
            typed.0.clear();
            typed.0.push_str(line);
            typed.1 = pos;
        }
        None
    }
}
impl Highlighter for Helper {}
impl Validator for Helper {}
impl rustyline::Helper for Helper {}

/// Where to send text to print above the prompt. A thread of its own prints it: the
/// editor's printer may block until the editor reads again, which must never hold up
/// the session (it is what makes the editor read again).
pub(crate) type Printer = std::sync::mpsc::Sender<String>;

/// The line editor with its completion and history, what is typed at the prompt (for an
/// interrupted read to give back), and a printer that writes above the prompt.
fn open(host: Host, history: &Path) -> Result<(LineEditor, AtPrompt, Printer), String> {
    let failed = |e: ReadlineError| format!("cannot start the line editor: {e}");
    let config = rustyline::Config::builder()
        .max_history_size(HISTORY)
        .map(|b| {
            b.history_ignore_space(true)
                .auto_add_history(false)
                .completion_type(CompletionType::List)
                .build()
        });
    let mut editor = config.and_then(LineEditor::with_config).map_err(failed)?;
    let typed = Arc::new(Mutex::new((String::new(), 0)));
    editor.set_helper(Some(Helper {
        host,
        typed: typed.clone(),
    }));
    let _ = editor.load_history(history);
    let mut p = editor.create_external_printer().map_err(failed)?;
    let (tx, rx) = std::sync::mpsc::channel::<String>();
    std::thread::spawn(move || {
        while let Ok(text) = rx.recv() {
            if p.print(text).is_err() {
                return;
            }
        }
    });
    Ok((editor, typed, tx))
}

/// The rustyline editor the shell reads lines with.
type LineEditor = rustyline::Editor<Helper, DefaultHistory>;

/// What is typed at the prompt, and where the cursor is.
type AtPrompt = Arc<Mutex<(String, usize)>>;

/// Starts the editor thread; gives its handle and the printer for events. The process
/// must already catch SIGINT (the session does, before it starts the editor):
/// [`Editor::interrupt`] sends it.
pub(crate) fn start(host: Host, history: PathBuf) -> Result<(Editor, Printer), String> {
    let (asks, ask_rx) = std::sync::mpsc::channel::<Ask>();
    let (read_tx, reads) = mpsc::channel(1);
    let (ready_tx, ready_rx) = std::sync::mpsc::channel();
    let abort = Arc::new(AtomicU64::new(0));
    let aborted = abort.clone();
    let thread = std::thread::spawn(move || {
        let (mut editor, typed) = match open(host, &history) {
            Ok((editor, typed, printer)) => match ready_tx.send(Ok(printer)) {
                Ok(()) => (editor, typed),
                Err(_) => return,
            },
            Err(e) => {
                let _ = ready_tx.send(Err(e));
                return;
            }
        };
        while let Ok(ask) = ask_rx.recv() {
            if let Ok(mut typed) = typed.lock() {
                *typed = (
                    format!("{}{}", ask.initial.0, ask.initial.1),
                    ask.initial.0.len(),
                );
            }
            // Interrupted before it began: nothing was read.
            if aborted.load(Ordering::SeqCst) == ask.id {
                if read_tx.blocking_send(Read::Aborted(ask.initial)).is_err() {
                    return;
                }
                continue;
            }
            let initial = (ask.initial.0.as_str(), ask.initial.1.as_str());
            let read = match editor.readline_with_initial(&ask.prompt, initial) {
                Ok(line) => {
                    if !line.trim().is_empty() {
                        let _ = editor.add_history_entry(line.as_str());
                        let _ = editor.append_history(&history);
                    }
                    Read::Line(line)
                }
                Err(ReadlineError::Interrupted) if aborted.load(Ordering::SeqCst) == ask.id => {
                    let (line, pos) = typed.lock().map(|t| t.clone()).unwrap_or_default();
                    let pos = if line.is_char_boundary(pos) {
                        pos
                    } else {
                        line.len()
                    };
                    let (left, right) = line.split_at(pos);
                    Read::Aborted((left.to_string(), right.to_string()))
                }
                Err(ReadlineError::Interrupted) => Read::Interrupted,
                Err(ReadlineError::Eof) => Read::Eof,
                Err(e) => Read::Failed(e.to_string()),
            };
            if read_tx.blocking_send(read).is_err() {
                return;
            }
        }
    });
    let printer = ready_rx
        .recv()
        .map_err(|_| "the line editor stopped".to_string())??;
    Ok((
        Editor {
            asks,
            reads,
            asked: 0,
            abort,
            thread,
        },
        printer,
    ))
}
