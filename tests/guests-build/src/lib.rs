//! Paths of the test guests built by this crate's build script from `tests/guests` (its
//! own cargo workspace) into `<target>/wasm-guests`:
//!
//! * [`REACTOR`]: `reactor.wasm`, a component of the `zot:extension/extension@0.1.0` world
//! * [`COMMAND`]: `command.wasm`, a WASI command component speaking frames on stdin/stdout
//! * [`COMMAND_NATIVE`]: the same `command` source built for the host, a classic stdio
//!   extension (to compare transcripts with the component)
//!
//! All three run the `scenario` crate (tests/guests/scenario/src/lib.rs documents the
//! behaviour). The paths are absolute.

include!(concat!(env!("OUT_DIR"), "/guests.rs"));
