//! `extension.json`: one that validates has a plain name and one program, and reads back
//! the same (`zot_host::fuzzing::manifest`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|text: &[u8]| zot_host::fuzzing::manifest(text));
