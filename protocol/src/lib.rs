//! The zot extension protocol, version 1: frame types for both directions and a
//! size-capped line codec. No async runtime: the host and the guest SDK share it.
//!
//! Every frame is one JSON object per line with a string `type`. Fields this crate
//! does not know are kept in each frame's `extra` map and written back out, so
//! frames pass through the host unchanged.

mod codec;
mod frame;
#[cfg(any(test, fuzzing))]
pub mod fuzzing;

pub use codec::{encode, leading_id, Encoded, Line, LineDecoder, DEFAULT_MAX_FRAME};
pub use frame::*;

/// The protocol version the host announces in `hello_ack`.
pub const PROTOCOL_VERSION: u32 = 1;

/// Lifecycle events an extension may subscribe to.
pub const EVENTS: &[&str] = &[
    "session_start",
    "turn_start",
    "turn_end",
    "tool_call",
    "assistant_message",
];

/// Events an extension may intercept (`subscribe.intercept`).
pub const INTERCEPTABLE: &[&str] = &["tool_call", "turn_start", "assistant_message"];
