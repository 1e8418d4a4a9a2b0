//! What the CLI prints and how: [`terminal`] (stdout and stderr, the current directory,
//! progress, questions through a `Prompt`), [`error`] (`CliError`, the one printer of
//! `zot: <what>: <why>`), [`render`] (results, events and registrations as lines, pure),
//! [`report`] (the load report, in a session and on stderr), [`json`] (JSON answers),
//! [`install`] (how an install is described), [`log_tail`] (an extension's log lines from this run), [`outbox`]
//! and [`std_streams`] (stdout and stdin of `zot host` and `zot mcp`, bounded).

pub(crate) mod error;
pub(crate) mod install;
pub(crate) mod json;
pub(crate) mod log_tail;
pub(crate) mod outbox;
pub(crate) mod render;
pub(crate) mod report;
pub(crate) mod std_streams;
pub(crate) mod terminal;
