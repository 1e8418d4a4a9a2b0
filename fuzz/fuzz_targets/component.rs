//! A component's bytes: the caps pass (and the `zot:manifest` section reader) never
//! panics, and measures within every cap when it passes
//! (`zot_host::fuzzing::component`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|bytes: &[u8]| zot_host::fuzzing::component(bytes));
