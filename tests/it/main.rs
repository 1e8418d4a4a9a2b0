//! The integration tests: one binary (as ripgrep has it), so `tests/it/common` and the
//! dependencies are compiled and linked once. Each module was a test binary of its own and
//! drives real processes (the `zot` binary, Python and Node extensions, components built
//! from `tests/guests/`). They share one process and run on parallel threads: a test
//! passes its environment and working directory to the commands it starts and never
//! changes the process's own.
//!
//! A module per feature (`trust`, `install`, `shell`, `mcp`, `wasm`, `confine`, `sidecar`,
//! `cli`, `sdk`, `library`, `supply`), each a folder of its concerns; `common` is what they share.
//! One feature: `cargo test -p zot-cli --test it shell::`.

mod common;

mod cli;
#[cfg(target_os = "linux")]
mod confine;
mod install;
mod library;
mod mcp;
mod sdk;
mod shell;
mod sidecar;
mod supply;
mod trust;
mod wasm;
