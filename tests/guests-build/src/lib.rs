//! Paths of the test guests built by this crate's build script from `tests/guests` (its
//! own cargo workspace) into `<target>/wasm-guests`:
//!
//! * [`REACTOR`]: `reactor.wasm`, a component of the `zot:extension/extension@0.1.0` world
//! * [`COMMAND`]: `command.wasm`, a WASI command component speaking frames on stdin/stdout
//! * [`FUTURE`]: `future.wasm`, a reactor of `zot:extension@0.2.0` (refused by the host)
//! * [`COMMAND_NATIVE`]: the same `command` source built for the host, a classic stdio
//!   extension (to compare transcripts with the component)
//! * [`TEST_EXT`]: `zot-test-ext`, the Rust stdio extension of the tests (every frame
//!   type, faults on request)
//!
//! The reactor, the command and its native build run the `scenario` crate
//! (tests/guests/scenario/src/lib.rs documents the behaviour). The paths are absolute.

include!(concat!(env!("OUT_DIR"), "/guests.rs"));
