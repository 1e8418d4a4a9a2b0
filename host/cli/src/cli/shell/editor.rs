//! The line editor (rustyline) on a thread of its own: the session asks for a line, the
//! thread reads it with editing, history (`$ZOT_HOME/shell_history`) and tab completion
//! of verbs, slash commands, tool, event and extension names; events are printed above
//! the prompt through its external printer meanwhile.

use super::verbs;
use rustyline::completion::{Completer, Pair};
use rustyline::error::ReadlineError;
use rustyline::highlight::Highlighter;
use rustyline::hint::Hinter;
use rustyline::history::DefaultHistory;
use rustyline::validate::Validator;
use rustyline::{Context, ExternalPrinter};
use std::path::PathBuf;
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
}

/// A request for one line: the prompt and the text the line starts with.
struct Ask {
    prompt: String,
    initial: String,
}

/// The session's handle on the editor thread.
pub(crate) struct Editor {
    asks: std::sync::mpsc::Sender<Ask>,
    reads: mpsc::Receiver<Read>,
}

impl Editor {
    /// Starts reading a line (answered by [`Editor::read`]).
    pub(crate) fn ask(&mut self, prompt: &str, initial: &str) {
        let _ = self.asks.send(Ask {
            prompt: prompt.to_string(),
            initial: initial.to_string(),
        });
    }

    /// The line asked for.
    pub(crate) async fn read(&mut self) -> Read {
        self.reads.recv().await.unwrap_or(Read::Eof)
    }
}

/// Completion from the host's current registrations.
struct Helper {
    host: Host,
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
        let pairs = candidates
            .into_iter()
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
}
impl Highlighter for Helper {}
impl Validator for Helper {}
impl rustyline::Helper for Helper {}

/// Where to send text to print above the prompt. A thread of its own prints it: the
/// editor's printer may block until the editor reads again, which must never hold up
/// the session (it is what makes the editor read again).
pub(crate) type Printer = std::sync::mpsc::Sender<String>;

/// Starts the editor thread; gives its handle and the printer for events.
pub(crate) fn start(host: Host, history: PathBuf) -> Result<(Editor, Printer), String> {
    let (asks, ask_rx) = std::sync::mpsc::channel::<Ask>();
    let (read_tx, reads) = mpsc::channel(1);
    let (ready_tx, ready_rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let config = rustyline::Config::builder()
            .max_history_size(HISTORY)
            .map(|b| b.history_ignore_space(true).auto_add_history(false).build());
        let editor = config.and_then(rustyline::Editor::<Helper, DefaultHistory>::with_config);
        let mut editor = match editor {
            Ok(e) => e,
            Err(e) => {
                let _ = ready_tx.send(Err(format!("cannot start the line editor: {e}")));
                return;
            }
        };
        editor.set_helper(Some(Helper { host }));
        let _ = editor.load_history(&history);
        match editor.create_external_printer() {
            Ok(mut p) => {
                let (tx, rx) = std::sync::mpsc::channel::<String>();
                std::thread::spawn(move || {
                    while let Ok(text) = rx.recv() {
                        if p.print(text).is_err() {
                            return;
                        }
                    }
                });
                if ready_tx.send(Ok(tx)).is_err() {
                    return;
                }
            }
            Err(e) => {
                let _ = ready_tx.send(Err(format!("cannot start the line editor: {e}")));
                return;
            }
        }
        while let Ok(ask) = ask_rx.recv() {
            let read = match editor.readline_with_initial(&ask.prompt, (&ask.initial, "")) {
                Ok(line) => {
                    if !line.trim().is_empty() {
                        let _ = editor.add_history_entry(line.as_str());
                        let _ = editor.append_history(&history);
                    }
                    Read::Line(line)
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
    Ok((Editor { asks, reads }, printer))
}
