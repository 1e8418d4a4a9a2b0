//! The `zot host` sidecar: its contract, compatibility with published extensions and
//! every frame, faults, and memory bounded by what it holds.

mod contract;
mod faults;
mod memory;
mod protocol_compat;
mod restarts;
