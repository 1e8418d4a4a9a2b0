//! The per-frame deadline: how long, in wall-clock time, an extension's code may run on
//! one frame inside the host. Every frame the host sends carries a [`Budget`], set here
//! and only here ([`Budget::for_frame`]); the wasm transport enforces it on a component
//! (the epoch callback stops a guest whose deadline passed: `deadline exceeded`), a
//! subprocess is on its own (the caller's timeout still answers the caller).
//!
//! The deadline runs only while guest code runs: a component waiting for its next frame
//! (idle on input) runs none. It is not a CPU-time limit: time a guest spends waiting in
//! the middle of work (a timer, a socket) counts. Memory, the `/data` quota and the other
//! resource caps are separate (`crate::sandbox`).

use std::time::Duration;
use zot_protocol::HostFrame;

/// Deadlines, all configurable; the defaults are PROTOCOL.md's.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Timeouts {
    pub command: Duration,
    pub tool: Duration,
    pub intercept: Duration,
    /// The ready wait for all extensions together.
    pub ready: Duration,
    /// After `shutdown`, before SIGTERM.
    pub shutdown: Duration,
    /// After SIGTERM, before SIGKILL.
    pub terminate: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Timeouts {
            command: Duration::from_secs(30),
            tool: Duration::from_secs(60),
            intercept: Duration::from_secs(5),
            ready: Duration::from_secs(3),
            shutdown: Duration::from_secs(2),
            terminate: Duration::from_secs(1),
        }
    }
}

/// How long an extension may take to handle a one-way frame (event, hello_ack, …).
pub const ONE_WAY_BUDGET: Duration = Duration::from_secs(1);
/// How much longer than a request's timeout an extension that runs inside the host (a
/// component) may go on with that request's frame: time to read the `tool_cancel` sent
/// at the timeout and stop, instead of being stopped at the very moment it is told.
pub const CANCEL_GRACE: Duration = Duration::from_secs(1);
/// How long a component's `start` (or a command's start-up) may run.
pub const START_BUDGET: Duration = Duration::from_secs(10);

/// The wall-clock time guest code may run on one frame, from when it takes the frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Budget(Duration);

impl Budget {
    /// A one-way frame's: [`ONE_WAY_BUDGET`].
    pub const ONE_WAY: Budget = Budget(ONE_WAY_BUDGET);
    /// A component's start-up: [`START_BUDGET`].
    pub const START: Budget = Budget(START_BUDGET);
    /// None at all (tests of the enforcement).
    #[cfg(test)]
    pub(crate) const SPENT: Budget = Budget(Duration::ZERO);

    /// The budget of `frame`: a request's timeout (`call`, else its kind's in
    /// `timeouts`) and [`CANCEL_GRACE`]; `shutdown`'s grace (`call`, else
    /// `timeouts.shutdown`); [`ONE_WAY_BUDGET`] for every other frame.
    pub fn for_frame(frame: &HostFrame, timeouts: &Timeouts, call: Option<Duration>) -> Budget {
        let request = |default: Duration| Budget(call.unwrap_or(default) + CANCEL_GRACE);
        match frame {
            HostFrame::ToolCall(_) => request(timeouts.tool),
            HostFrame::CommandInvoked(_) => request(timeouts.command),
            HostFrame::EventIntercept(_) => request(timeouts.intercept),
            HostFrame::Shutdown(_) => Budget(call.unwrap_or(timeouts.shutdown)),
            _ => Budget::ONE_WAY,
        }
    }

    /// The time it allows.
    pub fn duration(self) -> Duration {
        self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use zot_protocol::{Empty, Event, ToolCall};

    fn tool_call() -> HostFrame {
        HostFrame::ToolCall(ToolCall {
            id: "1".into(),
            name: "t".into(),
            args: serde_json::json!({}),
            extra: Default::default(),
        })
    }

    #[test]
    fn a_request_gets_its_timeout_and_the_cancel_grace() {
        let t = Timeouts::default();
        let call = Some(Duration::from_millis(200));
        assert_eq!(
            Budget::for_frame(&tool_call(), &t, None).duration(),
            t.tool + CANCEL_GRACE
        );
        assert_eq!(
            Budget::for_frame(&tool_call(), &t, call).duration(),
            Duration::from_millis(1200)
        );
    }

    #[test]
    fn shutdown_gets_its_grace_and_every_other_frame_the_one_way_budget() {
        let t = Timeouts::default();
        let shutdown = HostFrame::Shutdown(Empty::default());
        assert_eq!(
            Budget::for_frame(&shutdown, &t, None).duration(),
            t.shutdown
        );
        let event = HostFrame::Event(Event {
            id: None,
            event: "e".into(),
            fields: Default::default(),
        });
        // A call timeout says nothing about a one-way frame.
        let long = Some(Duration::from_secs(600));
        assert_eq!(Budget::for_frame(&event, &t, long), Budget::ONE_WAY);
        assert_eq!(Budget::ONE_WAY.duration(), ONE_WAY_BUDGET);
    }
}
