//! The library's shape, checked by reading its source (std only, no crate of the
//! workspace): `docs/architecture.md` and `docs/security.md` name only what exists
//! ([`doc`]); the modules and the files of `host/src` import each other in no circle, the
//! lower layers never upward, and no subcommand of the `zot` command another
//! ([`imports`]); the root exports only what an embedder's view uses ([`exports`]).
//!
//! `cargo test -p zot-host --test architecture`.

mod doc;
mod exports;
mod imports;
