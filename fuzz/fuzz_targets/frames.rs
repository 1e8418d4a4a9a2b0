//! A line from an extension or from the host: decoded as serde's tagged enum reads it,
//! re-encoded to the same frame; the `id` of its head, never another's
//! (`zot_protocol::fuzzing::frames`, `leading_ids`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|line: &[u8]| {
    zot_protocol::fuzzing::frames(line);
    zot_protocol::fuzzing::leading_ids(line);
});
