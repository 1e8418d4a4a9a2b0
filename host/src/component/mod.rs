//! The component layer: what a WebAssembly component is and how it is made ready to run,
//! before any transport runs it. The process-wide engine and its epoch ticker
//! ([`engine`]), one pass over a component's bytes ([`inspect`]: what the file is, its
//! exports and [`World`], its embedded manifest, its measures against the caps), the
//! compile in a child process under limits ([`compile`]) and the compilation cache
//! ([`cache`]). Every failure is a [`ComponentError`].
//!
//! Nothing here knows the transports, the launcher or install: they depend on this layer,
//! never the other way round.

pub mod cache;
mod code;
pub mod compile;
mod engine;
pub mod entry;
mod error;
mod filetype;
pub mod inspect;
pub mod wit;

pub use code::{Code, MODULE_HEADER};
pub use engine::{compile_engine, engine};
pub use error::{CompileLimit, ComponentError};
pub use inspect::inspect;
pub use wit::{Kind, World};
