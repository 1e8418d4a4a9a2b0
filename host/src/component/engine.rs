//! The process-wide wasmtime engine and its epoch ticker: the clock that per-frame
//! deadlines ([`crate::budget`]) are checked against.

use super::ComponentError;
use std::sync::OnceLock;
use std::time::Duration;
use wasmtime::{Config, Engine};

/// How often the epoch ticks: the granularity of deadlines, and how often a running
/// guest yields to other tasks.
const TICK: Duration = Duration::from_millis(10);

/// An engine configured as [`engine`]'s, without its ticker: what a compile needs (its
/// artifacts load in [`engine`]).
///
/// The WebAssembly GC proposal is off. Its heap types (structs, arrays, `externref`)
/// need wasmtime's `gc` feature, which zot leaves out; what the proposal would still
/// allow without them, function types open to subtypes, made wasmtime 47.0.0–48.0.8
/// built without `gc` abort the whole process on an indirect call or cast checked
/// against such a type (RUSTSEC-2026-0570). With the proposal off, a module that
/// declares one is refused when it is validated, before any code of it exists.
pub fn compile_engine() -> Result<Engine, ComponentError> {
    let mut config = Config::new();
    config.wasm_component_model(true);
    config.wasm_gc(false);
    config.epoch_interruption(true);
    Engine::new(&config)
        .map_err(|e| ComponentError::Io(format!("cannot set up the WebAssembly engine: {e:#}")))
}

/// The process-wide engine: async, epoch interruption, ticking every `TICK`. Made on
/// first use; if that fails (no thread for the ticker), the error is that start's and
/// the next start tries again.
pub fn engine() -> Result<&'static Engine, ComponentError> {
    static ENGINE: OnceLock<Engine> = OnceLock::new();
    if let Some(engine) = ENGINE.get() {
        return Ok(engine);
    }
    let engine = compile_engine()?;
    let ticker = engine.weak();
    std::thread::Builder::new()
        .name("zot-epoch".into())
        .spawn(move || loop {
            std::thread::sleep(TICK);
            match ticker.upgrade() {
                Some(engine) => engine.increment_epoch(),
                None => return,
            }
        })
        .map_err(|e| {
            ComponentError::Io(format!("cannot start the WebAssembly deadline thread: {e}"))
        })?;
    // Made twice at once, the second is dropped and its ticker ends.
    Ok(ENGINE.get_or_init(|| engine))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::component::code::Code;

    /// The engine itself refuses a type open to subtypes (the trigger of
    /// RUSTSEC-2026-0570), so nothing compiled without the pass before it runs one.
    #[test]
    fn the_engine_refuses_a_type_open_to_subtypes() {
        use wasm_encoder::{CompositeInnerType, CompositeType, FuncType, SubType, TypeSection};
        let mut types = TypeSection::new();
        types.ty().subtype(&SubType {
            is_final: false,
            supertype_idx: None,
            composite_type: CompositeType {
                inner: CompositeInnerType::Func(FuncType::new([], [])),
                shared: false,
                descriptor: None,
                describes: None,
            },
        });
        let mut module = wasm_encoder::Module::new();
        module.section(&types);
        let engine = compile_engine().unwrap();
        let Err(refused) = Code::compile(&engine, &module.finish()) else {
            panic!("compiled")
        };
        assert!(
            refused.to_string().contains("gc proposal must be enabled"),
            "{refused}"
        );
    }
}
