//! The CLI's terminal, in one place: printing to stdout (a closed pipe ends the program
//! quietly, as ripgrep does), the current directory (and `--cwd`), yes/no questions
//! through a [`Prompt`] (the terminal's [`Term`], or the shell's), and progress.

use std::io::{self, IsTerminal, Write};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use zot_host::manage::install::Progress;
use zot_host::terminal_text::one_line;

/// Writes `text` and a newline to stdout (`say!` and JSON output). When stdout is a
/// closed pipe (`zot ext list | head -1`), the program ends at once with status 0, as
/// ripgrep does: the reader took what it wanted, which is no failure (a `pipefail`
/// script goes on). SIGPIPE stays ignored process-wide (Rust's default): the host
/// writes to extensions' pipes, and a dead extension must not end it.
pub(crate) fn print_line(text: &str) {
    if let Err(e) = write_line(&mut io::stdout().lock(), text) {
        quit_on_closed_pipe(&e);
    }
}

/// Writes `bytes` to stdout as they are (a page, a script), ending quietly on a closed
/// pipe as [`print_line`] does.
pub(crate) fn print_bytes(bytes: &[u8]) {
    let mut out = io::stdout().lock();
    if let Err(e) = out.write_all(bytes).and_then(|()| out.flush()) {
        quit_on_closed_pipe(&e);
    }
}

/// Writes `text` and a newline to `out` and flushes it.
fn write_line(out: &mut impl Write, text: &str) -> io::Result<()> {
    writeln!(out, "{text}")?;
    out.flush()
}

/// Ends the program with status 0 when `e` says stdout's reader is gone; any other
/// error is left as it is (nothing else to say it on but stderr, and that is no
/// reason to stop).
fn quit_on_closed_pipe(e: &io::Error) {
    if closed_pipe(e) {
        std::process::exit(0);
    }
}

/// Whether a write failed because the reading end of the pipe is closed.
fn closed_pipe(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::BrokenPipe
}

/// Writes `text` and a newline to stderr; a stderr that cannot be written is ignored.
pub(crate) fn eprint_line(text: &str) {
    let _ = writeln!(io::stderr().lock(), "{text}");
}

/// The current directory.
pub(crate) fn cwd() -> Result<PathBuf, String> {
    std::env::current_dir().map_err(|e| format!("cannot read the current directory: {e}"))
}

/// The project directory of `--cwd DIR` (made absolute), else the current directory.
pub(crate) fn cwd_or(flag: Option<PathBuf>) -> Result<PathBuf, String> {
    match flag {
        Some(dir) => std::path::absolute(&dir).map_err(|e| format!("--cwd {}: {e}", dir.display())),
        None => cwd(),
    }
}

/// Where a flow that talks to the user (install, grant, trust, remove) shows its lines
/// and asks: the terminal ([`Term`]), or the shell that runs the flow in-process.
pub(crate) trait Prompt {
    /// Shows text for people (stdout on the terminal); it is made terminal-safe.
    fn say(&mut self, text: &str);
    /// Whether a question can be asked at all (someone at a terminal).
    fn can_ask(&self) -> bool;
    /// Asks `question`: whether the answer was yes.
    fn confirm(&mut self, question: &str) -> Result<bool, String>;

    /// Shows lines as a list (`  - line`).
    fn list(&mut self, lines: &[String]) {
        for line in lines {
            self.say(&format!("  - {line}"));
        }
    }
}

/// A prompt that says nothing and consents to nothing: for a command whose `--json`
/// prints its own.
pub(crate) struct Quiet;

impl Prompt for Quiet {
    fn say(&mut self, _: &str) {}

    fn can_ask(&self) -> bool {
        false
    }

    fn confirm(&mut self, _: &str) -> Result<bool, String> {
        Ok(false)
    }
}

/// The process's own terminal: stdout, stderr, and questions on stdin.
pub(crate) struct Term;

impl Prompt for Term {
    fn say(&mut self, text: &str) {
        say!("{text}");
    }

    fn can_ask(&self) -> bool {
        io::stdin().is_terminal()
    }

    fn confirm(&mut self, question: &str) -> Result<bool, String> {
        confirm(question)
    }
}

/// Asks `question` through `prompt`; `yes` answers it. When it cannot be asked and
/// `yes` was not given, refuses and says how to proceed.
pub(crate) fn ask(prompt: &mut dyn Prompt, question: &str, yes: bool) -> Result<(), String> {
    if yes {
        return Ok(());
    }
    if !prompt.can_ask() {
        return Err(format!(
            "stdin is not a terminal, so \"{question}\" cannot be asked: pass --yes to \
             consent; nothing was changed"
        ));
    }
    if prompt.confirm(question)? {
        Ok(())
    } else {
        Err("not confirmed; nothing was changed".into())
    }
}

/// Asks `question` on the terminal (stderr, answered on stdin): whether the answer was
/// yes.
pub(crate) fn confirm(question: &str) -> Result<bool, String> {
    eprint!("{} [y/N] ", one_line(question));
    let _ = io::stderr().flush();
    let mut answer = String::new();
    io::stdin()
        .read_line(&mut answer)
        .map_err(|e| format!("cannot read the answer: {e}"))?;
    Ok(matches!(
        answer.trim().to_ascii_lowercase().as_str(),
        "y" | "yes"
    ))
}

/// How long a step runs before, off a terminal, a line says it is running.
const SLOW_STEP: Duration = Duration::from_secs(1);

/// A slow step's progress on stderr: on a terminal, a spinner with the elapsed time while
/// it runs; elsewhere (a pipe, a log), a line once it has run [`SLOW_STEP`] and, if so,
/// one with its time when it ends. Either way a step says how long it took.
pub(crate) struct TermProgress {
    on: bool,
    running: Mutex<Option<(Arc<AtomicBool>, std::thread::JoinHandle<()>)>>,
}

impl TermProgress {
    pub(crate) fn new() -> Self {
        TermProgress {
            on: io::stderr().is_terminal(),
            running: Mutex::new(None),
        }
    }
}

/// Draws a spinner until `stop`, then the step's time.
fn spin(what: &str, stop: &AtomicBool) {
    let started = Instant::now();
    let frames = ['|', '/', '-', '\\'];
    let mut i = 0;
    while !stop.load(Ordering::SeqCst) {
        eprint!(
            "\r{} {what} {:.1}s",
            frames[i % 4],
            started.elapsed().as_secs_f64()
        );
        let _ = io::stderr().flush();
        i += 1;
        std::thread::sleep(Duration::from_millis(100));
    }
    // The line cleared by the sequence itself (the escaper is for outside text).
    eprint!("\r\x1b[2K");
    esay!("{what}: {:.1}s", started.elapsed().as_secs_f64());
}

/// Off a terminal: a line once the step has run [`SLOW_STEP`], then its time at its end;
/// nothing for a quicker step. Sleeps until then or until `end` wakes it.
fn say_if_slow(what: &str, stop: &AtomicBool) {
    let started = Instant::now();
    let slow = started + SLOW_STEP;
    while !stop.load(Ordering::SeqCst) {
        match slow.checked_duration_since(Instant::now()) {
            Some(left) if !left.is_zero() => std::thread::park_timeout(left),
            _ => break,
        }
    }
    if stop.load(Ordering::SeqCst) {
        return;
    }
    esay!("{what}…");
    while !stop.load(Ordering::SeqCst) {
        std::thread::park();
    }
    esay!("{what}: {:.1}s", started.elapsed().as_secs_f64());
}

impl Progress for TermProgress {
    fn begin(&self, what: &str) {
        let stop = Arc::new(AtomicBool::new(false));
        let (flag, what) = (stop.clone(), one_line(what).into_owned());
        let on = self.on;
        let thread = std::thread::spawn(move || match on {
            true => spin(&what, &flag),
            false => say_if_slow(&what, &flag),
        });
        *self.running.lock().unwrap() = Some((stop, thread));
    }

    /// A line of its own, above the spinner (which redraws below it).
    fn output(&self, line: &str) {
        if self.on {
            eprint!("\r\x1b[2K");
        }
        esay!("  {}", one_line(line));
    }

    fn end(&self) {
        if let Some((stop, thread)) = self.running.lock().unwrap().take() {
            stop.store(true, Ordering::SeqCst);
            thread.thread().unpark();
            let _ = thread.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `zot ext list | head -1`: the reader is gone. Rust ignores SIGPIPE (in the
    /// binary as in this test), so the write fails with EPIPE, which is what ends the
    /// program quietly instead of a panic.
    #[test]
    fn a_write_to_a_closed_pipe_is_recognised_as_a_closed_pipe() {
        let (reader, mut writer) = io::pipe().expect("a pipe");
        drop(reader);
        let e = write_line(&mut writer, "NAME  VERSION").expect_err("the reader is gone");
        assert!(closed_pipe(&e), "{e:?}");
        // An open pipe takes the line whole.
        let (mut reader, mut writer) = io::pipe().expect("a pipe");
        write_line(&mut writer, "a line").unwrap();
        drop(writer);
        let mut got = String::new();
        io::Read::read_to_string(&mut reader, &mut got).unwrap();
        assert_eq!(got, "a line\n");
    }

    /// A flow asks through its prompt: one that cannot ask refuses without `--yes`.
    #[test]
    fn a_question_that_cannot_be_asked_needs_yes() {
        struct NoOne;
        impl Prompt for NoOne {
            fn say(&mut self, _: &str) {}
            fn can_ask(&self) -> bool {
                false
            }
            fn confirm(&mut self, _: &str) -> Result<bool, String> {
                unreachable!("no one to ask")
            }
        }
        assert!(ask(&mut NoOne, "Install x?", true).is_ok());
        let e = ask(&mut NoOne, "Install x?", false).unwrap_err();
        assert!(e.contains("pass --yes"), "{e}");
    }
}
