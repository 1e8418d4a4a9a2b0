//! The integration tests: one binary (as ripgrep has it), so `tests/it/common` and the
//! dependencies are compiled and linked once. Each module was a test binary of its own and
//! drives real processes (the `zot` binary, Python and Node extensions, components built
//! from `tests/guests/`). They share one process and run on parallel threads: a test
//! passes its environment and working directory to the commands it starts and never
//! changes the process's own.
//!
//! One module: `cargo test -p zot-cli --test it shell::`.

mod common;

mod call_friction;
mod cli_call;
mod cli_check;
mod cli_ext;
mod cli_new;
mod completion;
#[cfg(target_os = "linux")]
mod confine;
mod containment;
mod dev;
mod example_component;
mod examples;
mod failclosed;
mod faults;
mod friction;
mod go_ext;
mod guests_built;
mod library;
mod load_flags;
mod logs;
mod mcp;
mod mcp_bounds;
mod mcp_clients;
mod mcp_servers;
mod memory;
mod protocol_compat;
mod quota;
mod records;
mod sanitize;
mod sdk;
mod shell;
mod shell_friction;
mod sidecar;
mod tree_compile;
mod trust;
mod ts_sdk;
mod wasm;
