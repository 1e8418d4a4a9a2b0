//! MCP both ways: `zot mcp` against real clients (the official SDKs, other clients),
//! MCP servers run as extensions, and peers that do not play fair.

mod bounds;
mod clients;
mod conformance;
mod extensions;
mod http;
mod server;
