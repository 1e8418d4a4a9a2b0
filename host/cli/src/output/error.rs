//! The CLI's one error path: a command that fails returns a [`CliError`] (what it was
//! doing, why it failed, what to do, its exit status), built with [`Context::context`]
//! on any error; [`report`] prints it as `zot: <what>: <why>` and `hint: …`, the only
//! place that writes those lines.

use std::fmt::Display;
use std::process::ExitCode;

/// Why a command failed, said in one place by [`report`].
#[derive(Debug)]
pub(crate) struct CliError {
    /// What was being done (`install ./x`); empty when `why` says it all.
    what: String,
    why: String,
    hint: Option<String>,
    /// The exit status (1 unless the command documents another).
    code: u8,
}

impl CliError {
    /// An error that says it all, exit status 1.
    pub(crate) fn new(why: impl Into<String>) -> Self {
        CliError {
            what: String::new(),
            why: why.into(),
            hint: None,
            code: 1,
        }
    }

    /// The same with exit status `code`.
    pub(crate) fn with_code(mut self, code: u8) -> Self {
        self.code = code;
        self
    }

    /// The same with a `hint: …` line: what to do.
    pub(crate) fn with_hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }

    /// `<what>: <why>` and the hint on its own line (without the `zot: ` prefix, as the
    /// shell shows it).
    pub(crate) fn message(&self) -> String {
        let mut text = match self.what.as_str() {
            "" => self.why.clone(),
            what => format!("{what}: {}", self.why),
        };
        if let Some(hint) = &self.hint {
            text += &format!("\nhint: {hint}");
        }
        text
    }

    /// Its exit status.
    pub(crate) fn exit_code(&self) -> ExitCode {
        ExitCode::from(self.code)
    }

    /// The same, done within `what` (said before any `what` it had).
    pub(crate) fn within(mut self, what: String) -> Self {
        self.what = match self.what.as_str() {
            "" => what,
            inner => format!("{what}: {inner}"),
        };
        self
    }
}

impl From<String> for CliError {
    fn from(why: String) -> Self {
        CliError::new(why)
    }
}

impl From<std::io::Error> for CliError {
    fn from(e: std::io::Error) -> Self {
        CliError::new(e.to_string())
    }
}

impl From<&str> for CliError {
    fn from(why: &str) -> Self {
        CliError::new(why)
    }
}

/// Names what was being done when an error happened: `.context("install ./x")?`.
pub(crate) trait Context<T> {
    /// The error as a [`CliError`] whose `what` is `what` (before any it had).
    fn context(self, what: impl Display) -> Result<T, CliError>;
}

/// Any error with a text: a `String`, an `io::Error`, the library's errors.
impl<T, E: Display> Context<T> for Result<T, E> {
    fn context(self, what: impl Display) -> Result<T, CliError> {
        self.map_err(|e| CliError::new(e.to_string()).within(what.to_string()))
    }
}

impl<T> Context<T> for Result<T, CliError> {
    fn context(self, what: impl Display) -> Result<T, CliError> {
        self.map_err(|e| e.within(what.to_string()))
    }
}

/// What a command ends with: its exit status, or an error (printed by [`report`]).
pub(crate) trait Finish {
    /// The exit status, the error reported.
    fn finish(self) -> ExitCode;
}

impl Finish for Result<(), CliError> {
    fn finish(self) -> ExitCode {
        self.map(|()| ExitCode::SUCCESS).finish()
    }
}

impl Finish for Result<ExitCode, CliError> {
    fn finish(self) -> ExitCode {
        self.unwrap_or_else(|e| {
            report(&e);
            e.exit_code()
        })
    }
}

/// Prints `e` on stderr: `zot: <what>: <why>`, then `hint: …` when it has one.
pub(crate) fn report(e: &CliError) {
    esay!("zot: {}", e.message());
}

/// Prints a note that is no error on stderr: `zot: <text>`.
pub(crate) fn note(text: impl Display) {
    esay!("zot: {text}");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn context_names_what_was_done_before_why_outermost_first() {
        let inner: Result<(), String> = Err("no such file".into());
        let e = inner.context("read x").context("install ./x").unwrap_err();
        assert_eq!(e.message(), "install ./x: read x: no such file");
        assert_eq!(e.exit_code(), ExitCode::from(1));
    }

    #[test]
    fn an_error_without_context_is_its_why_and_a_hint_is_its_own_line() {
        let e = CliError::new("it is broken")
            .with_hint("fix it")
            .with_code(2);
        assert_eq!(e.message(), "it is broken\nhint: fix it");
        assert_eq!(e.exit_code(), ExitCode::from(2));
        let io: Result<(), std::io::Error> = Err(std::io::Error::other("disk full"));
        assert_eq!(io.context("man").unwrap_err().message(), "man: disk full");
    }
}
