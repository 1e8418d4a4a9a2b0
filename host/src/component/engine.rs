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
pub fn compile_engine() -> Result<Engine, ComponentError> {
    let mut config = Config::new();
    config.wasm_component_model(true);
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
