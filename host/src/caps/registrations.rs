//! The caps on one extension's registrations, in count and in bytes: kept by the core for
//! each extension, and by the MCP adapter for the server it speaks to, so that it holds
//! only what the core takes. It imports neither, so both layers can use it.

use std::collections::HashMap;

/// How many commands and tools one extension may register, together.
pub const REGISTRATIONS: usize = 1000;
/// How many bytes (as JSON: names, descriptions, schemas) one extension's registrations
/// may hold, together. A registration over either cap is refused and logged.
pub const REGISTRATION_BYTES: usize = 4 * 1024 * 1024;

/// What one extension's registrations hold, against [`REGISTRATIONS`] and
/// [`REGISTRATION_BYTES`]. The core keeps one per extension; the MCP adapter keeps its
/// own copy, so that it holds only what the core takes.
#[derive(Default)]
pub(crate) struct Registered {
    sizes: HashMap<(&'static str, String), usize>,
    bytes: usize,
}

impl Registered {
    /// Records a `kind` registration (`"command"`, `"tool"`) of `name`, `size` bytes as
    /// JSON, if it fits the caps (one that replaces a registration of the same kind and
    /// name counts instead of it); if not, the line to log.
    pub(crate) fn admit(
        &mut self,
        kind: &'static str,
        name: &str,
        size: usize,
    ) -> Result<(), String> {
        let key = (kind, name.to_string());
        let replaced = self.sizes.get(&key).copied();
        let count = self.sizes.len() + usize::from(replaced.is_none());
        let bytes = self.bytes - replaced.unwrap_or(0) + size;
        if count <= REGISTRATIONS && bytes <= REGISTRATION_BYTES {
            self.sizes.insert(key, size);
            self.bytes = bytes;
            return Ok(());
        }
        Err(format!(
            "refused {kind} {name:?}: registrations are capped at {REGISTRATIONS} commands and \
             tools and {} MiB per extension (it is {size} bytes; {} bytes in use)",
            REGISTRATION_BYTES >> 20,
            self.bytes
        ))
    }
}
