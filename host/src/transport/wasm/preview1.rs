//! WASI preview-1 command modules (`GOOS=wasip1`, wasi-sdk, `wasm32-wasip1`): run as a
//! command component is, frames over the same virtual stdin and stdout, under the same
//! policy, with `wasmtime-wasi`'s preview-1 implementation in place of preview 2.
//! Preview 1 has no network.

use super::{exit_for, instantiate_or_stop, Deadline, GuestData, Stop};
use crate::log::ExtLog;
use crate::transport::ExitReason;
use wasmtime::{Linker, Module, Store};

/// Instantiates `module` and calls its `_start` until it returns, it exits, it traps,
/// or the host stops it.
pub(super) async fn run(
    store: &mut Store<GuestData>,
    module: &Module,
    deadline: &Deadline,
    stop: &Stop,
    log: &ExtLog,
) -> ExitReason {
    let mut linker = Linker::<GuestData>::new(store.engine());
    let linked = wasmtime_wasi::p1::add_to_linker_async(&mut linker, |d| {
        d.p1.as_mut()
            .expect("a preview-1 guest's store holds its context")
    });
    let quota = linked
        .and_then(|_| super::preview1_quota::add_to_linker(&mut linker))
        .and_then(|_| super::preview1_stdin::add_to_linker(&mut linker));
    if let Err(e) = quota {
        return ExitReason::LinkFailed(format!("{e:#}"));
    }
    let started = instantiate_or_stop(store, deadline, stop, async |store| {
        let instance = linker.instantiate_async(&mut *store, module).await?;
        let Some(memory) = instance.get_memory(&mut *store, "memory") else {
            return Err(wasmtime::Error::msg(
                "a preview-1 module exports its memory",
            ));
        };
        super::preview1_quota::connect(store, memory).await?;
        instance.get_typed_func::<(), ()>(&mut *store, "_start")
    });
    let start = match started.await {
        Ok(start) => start,
        Err(exit) => return exit,
    };
    log.info("module started (WASI preview 1)");
    tokio::select! {
        r = start.call_async(&mut *store, ()) => match r {
            Ok(()) => ExitReason::Exited(0),
            Err(e) => exit_for(store, &e),
        },
        () = stop.kill.notified() => stop.reason(),
    }
}
