//! The sandboxed transport: components and preview-1 modules in wasmtime, what a
//! hostile component can cost the host (containment), the `/data` quota, and the test
//! guests built.

mod containment;
mod guests_built;
mod quota;
mod transport;
