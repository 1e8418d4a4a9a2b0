//! Why an extension's transport closed, as a value; its `Display` is the text logs,
//! `extension_exited.reason`, listings and `zot ext check` show.

use std::fmt;

/// Why an extension's transport closed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExitReason {
    /// It exited with this status (a subprocess, or a component's `wasi:cli/exit`).
    Exited(i32),
    /// A signal ended it.
    Signalled(i32),
    /// A subprocess ended in a way that is neither (the status as the OS words it).
    Ended(String),
    /// Waiting for the subprocess failed.
    LostTrack(String),
    /// A component trapped: wasmtime's words.
    Trap(String),
    /// A component ran past the deadline of the frame it was handling.
    DeadlineExceeded,
    /// A component was refused more memory and then failed.
    MemoryLimit,
    /// The host stopped a component.
    StoppedByHost,
    /// A component exceeded a host-side cap, named with its value (`disk quota (256
    /// MiB)`): it was stopped.
    LimitExceeded(String),
    /// A reactor ended because its input was closed (status 0).
    InputClosed,
    /// A reactor could not be linked: wasmtime's words.
    LinkFailed(String),
    /// It closed its output, kept running and was killed; how it then ended, if that
    /// was reported in time.
    ClosedOutput(Option<Box<ExitReason>>),
    /// A remote MCP server's connection ended, or never was (why, in words).
    Disconnected(String),
}

impl ExitReason {
    /// The exit code, if it exited normally.
    pub fn code(&self) -> Option<i32> {
        match self {
            ExitReason::Exited(code) => Some(*code),
            ExitReason::InputClosed => Some(0),
            ExitReason::ClosedOutput(Some(then)) => then.code(),
            _ => None,
        }
    }

    /// The signal that ended it, if any.
    pub fn signal(&self) -> Option<i32> {
        match self {
            ExitReason::Signalled(signal) => Some(*signal),
            ExitReason::ClosedOutput(Some(then)) => then.signal(),
            _ => None,
        }
    }
}

impl fmt::Display for ExitReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ExitReason::Exited(code) => write!(f, "exited with status {code}"),
            ExitReason::Signalled(signal) => write!(f, "killed by signal {signal}"),
            ExitReason::Ended(status) => write!(f, "ended: {status}"),
            ExitReason::LostTrack(why) => write!(f, "lost track of the process: {why}"),
            ExitReason::Trap(what) => write!(f, "trap: {what}"),
            ExitReason::DeadlineExceeded => f.write_str("deadline exceeded"),
            ExitReason::MemoryLimit => f.write_str("memory limit"),
            ExitReason::StoppedByHost => f.write_str("stopped by the host"),
            ExitReason::LimitExceeded(limit) => write!(f, "{limit} exceeded"),
            ExitReason::InputClosed => f.write_str("stopped: its input was closed"),
            ExitReason::LinkFailed(why) => write!(f, "cannot link the component: {why}"),
            ExitReason::ClosedOutput(None) => f.write_str("closed its output"),
            ExitReason::ClosedOutput(Some(then)) => write!(f, "closed its output; {then}"),
            ExitReason::Disconnected(why) => {
                write!(f, "the remote MCP server's connection ended: {why}")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::ExitReason::*;

    #[test]
    fn each_reason_reads_as_before_with_its_code_and_signal() {
        let cases = [
            (Exited(3), "exited with status 3", Some(3), None),
            (Signalled(9), "killed by signal 9", None, Some(9)),
            (Trap("unreachable".into()), "trap: unreachable", None, None),
            (DeadlineExceeded, "deadline exceeded", None, None),
            (MemoryLimit, "memory limit", None, None),
            (StoppedByHost, "stopped by the host", None, None),
            (
                LimitExceeded("disk quota (256 MiB)".into()),
                "disk quota (256 MiB) exceeded",
                None,
                None,
            ),
            (InputClosed, "stopped: its input was closed", Some(0), None),
            (ClosedOutput(None), "closed its output", None, None),
            (
                Disconnected("no answer".into()),
                "the remote MCP server's connection ended: no answer",
                None,
                None,
            ),
            (
                ClosedOutput(Some(Box::new(Signalled(9)))),
                "closed its output; killed by signal 9",
                None,
                Some(9),
            ),
        ];
        for (reason, text, code, signal) in cases {
            assert_eq!(
                (reason.to_string().as_str(), reason.code(), reason.signal()),
                (text, code, signal)
            );
        }
    }
}
