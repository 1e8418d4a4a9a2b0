//! Paths of the test guests built by this crate's build script from `tests/guests` (its
//! own cargo workspace) into `<target>/wasm-guests`:
//!
//! * [`REACTOR`]: `reactor.wasm`, a component of the `zot:extension/extension@0.1.0` world
//! * [`COMMAND`]: `command.wasm`, a WASI command component speaking frames on stdin/stdout
//! * [`COMMAND_P1`]: the same command guest built for `wasm32-wasip1`, a WASI preview-1
//!   core module (no `wasi:http`: its `http_*` tools say so)
//! * [`FUTURE`]: `future.wasm`, a reactor of `zot:extension@0.2.0` (refused by the host)
//! * [`COMMAND_NATIVE`]: the same `command` source built for the host, a classic stdio
//!   extension (to compare transcripts with the component)
//! * [`TEST_EXT`]: `zot-test-ext`, the Rust stdio extension of the tests (every frame
//!   type, faults on request)
//!
//! * [`SDK_PROBE`], [`SDK_PROBE_NATIVE`]: `tests/guests/sdk-probe`, a `zot-ext` extension
//!   for the SDK's own tests, as a component and natively
//! * [`SILENT`]: a component that never says hello
//! * [`MCP_SERVER`]: `mcp-server.wasm`, an MCP stdio server (hand-written JSON-RPC, not
//!   the zot protocol) as a WASI command component: `echo`, `read`, `write`, `env`, and
//!   `hoard` and `flood`, which play a hostile server
//! * [`EXAMPLES`]: every Rust example of `examples/`, native and as a component
//!
//! The reactor, the command and its native build run the `scenario` crate
//! (tests/guests/scenario/src/lib.rs documents the behaviour). The paths are absolute.

/// One Rust example, built both ways from the same source.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Example {
    /// Its name: the directory under `examples/`, the binary and the manifest's `name`.
    pub name: &'static str,
    /// The native executable (a classic stdio extension).
    pub native: &'static str,
    /// The WASI command component.
    pub wasm: &'static str,
}

/// The example named `name`.
///
/// # Panics
/// If there is no such example.
pub fn example(name: &str) -> Example {
    *EXAMPLES
        .iter()
        .find(|e| e.name == name)
        .unwrap_or_else(|| panic!("no example {name:?}"))
}

include!(concat!(env!("OUT_DIR"), "/guests.rs"));
