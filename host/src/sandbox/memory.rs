//! How much linear memory a component asks for and may have.

use super::{Grant, SandboxError};
use crate::manifest::{Limits, MAX_MEMORY_MB};

/// Memory a component gets unless its manifest asks (and the user grants) more.
pub const DEFAULT_MEMORY_MB: u64 = 64;

/// The memory `limits` ask for, in MiB (the default when they name none).
pub fn asked_mb(limits: &Limits) -> u64 {
    limits.memory_mb.unwrap_or(DEFAULT_MEMORY_MB)
}

/// The most memory `grant` allows, in MiB (never less than the default).
pub fn granted_mb(grant: &Grant) -> u64 {
    grant
        .memory_mb
        .unwrap_or(DEFAULT_MEMORY_MB)
        .max(DEFAULT_MEMORY_MB)
}

/// Parses a memory size the user grants: MiB, 1 to [`MAX_MEMORY_MB`].
pub fn parse_mb(mb: &str) -> Result<u64, SandboxError> {
    mb.parse()
        .ok()
        .filter(|mb| (1..=MAX_MEMORY_MB).contains(mb))
        .ok_or_else(|| SandboxError::BadMemory(mb.to_string()))
}
