//! The host core fed any script by one extension over the in-memory transport: no panic,
//! every call ends, the registrations stay within their caps, the shutdown ends
//! (`zot_host::fuzzing::core`; the script's lines are its frames, `!`, `exit` and the
//! id placeholders as it says).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|script: &[u8]| zot_host::fuzzing::core(script));
