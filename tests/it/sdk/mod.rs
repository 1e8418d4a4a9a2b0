//! The SDKs and examples an extension author starts from: the Rust SDK, the Rust
//! examples three ways, the TypeScript SDK, the Python component, the Go example.

mod examples;
mod go;
mod python_component;
mod rust;
mod typescript;
