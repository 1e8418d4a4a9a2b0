//! Protocol compatibility: published extensions and every frame type, driven through
//! `zot host` (docs/sidecar.md, PROTOCOL.md).

mod frames;
mod handshake;
mod published_host;
mod quick_start;

pub(super) use crate::common::*;

const QUICK_START_PROMPT: &str = "Greet me very briefly. Add one emoji.";
