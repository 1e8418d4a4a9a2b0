//! Compiled code of either kind the host runs: a component, or a WASI preview-1 core
//! module. Told apart by the header of the bytes (and of a cached artifact, by
//! wasmtime's own header), so the compile child, the cache and the transport handle
//! both the same way.

use super::ComponentError;
use std::path::Path;
use wasmtime::component::Component;
use wasmtime::{Engine, Module, Precompiled};

/// The first bytes of a core module: `\0asm`, version 1.
pub const MODULE_HEADER: [u8; 8] = *b"\0asm\x01\x00\x00\x00";

/// A compiled component or core module.
#[derive(Clone)]
pub enum Code {
    Component(Component),
    Module(Module),
}

impl Code {
    /// Compiles `bytes`: a core module if they start like one, else a component.
    pub fn compile(engine: &Engine, bytes: &[u8]) -> Result<Code, ComponentError> {
        let invalid = |e: wasmtime::Error| ComponentError::Invalid(format!("{e:#}"));
        if bytes.starts_with(&MODULE_HEADER) {
            Module::new(engine, bytes)
                .map(Code::Module)
                .map_err(invalid)
        } else {
            Component::new(engine, bytes)
                .map(Code::Component)
                .map_err(invalid)
        }
    }

    /// The artifact to cache.
    pub fn serialize(&self) -> wasmtime::Result<Vec<u8>> {
        match self {
            Code::Component(c) => c.serialize(),
            Code::Module(m) => m.serialize(),
        }
    }

    /// The code of the cached artifact in the file at `path`, of the kind its header
    /// says, mapped rather than read in.
    ///
    /// # Safety
    /// As [`Component::deserialize_file`]: the file must hold an artifact this host (or
    /// its compile child) serialised, and must not change while the code is in use.
    pub unsafe fn deserialize_file(engine: &Engine, path: &Path) -> wasmtime::Result<Code> {
        match Engine::detect_precompiled_file(path)? {
            Some(Precompiled::Module) => {
                unsafe { Module::deserialize_file(engine, path) }.map(Code::Module)
            }
            Some(Precompiled::Component) => {
                unsafe { Component::deserialize_file(engine, path) }.map(Code::Component)
            }
            None => Err(wasmtime::Error::msg("not a compiled artifact")),
        }
    }
}
