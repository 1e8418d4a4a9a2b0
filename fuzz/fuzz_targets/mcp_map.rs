//! The MCP ↔ zot mapping, both ways: what an MCP server lists and answers, in zot's words
//! (`zot_host::fuzzing::mcp_from_server`), and what `zot mcp` serves of a registered tool
//! and a result (`host/cli/src/commands/mcp/map.rs`, `check`).
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "../../host/cli/src/commands/mcp/map.rs"]
#[allow(dead_code)]
mod map;

fuzz_target!(|input: (&[u8], &[u8])| {
    let (tool, answer) = input;
    zot_host::fuzzing::mcp_from_server(tool, answer);
    map::check(tool, answer);
});
