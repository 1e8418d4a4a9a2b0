//! A request line of `zot host`: a request of the type it names, with its id, or why
//! not; an agent event only as the extension event of its name
//! (`host/cli/src/commands/sidecar/request.rs`, `check`).
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "../../host/cli/src/commands/sidecar/request.rs"]
#[allow(dead_code)]
mod request;

fuzz_target!(|line: &[u8]| request::check(line));
