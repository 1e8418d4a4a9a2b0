//! Reactor components: `start()` once, then one `handle(frame)` call per frame; the guest
//! sends frames back through the imported `host.send`.

use super::{
    add_wasi_to_linker, exit_for, guest_log, killed, Deadline, Guest, GuestData, START_BUDGET,
};
use crate::transport::{Exit, Outbound};
use std::sync::Arc;
use tokio::sync::mpsc;
use wasmtime::component::{HasSelf, Linker};

wasmtime::component::bindgen!({
    path: "../wit/zot-extension-0.1.0",
    world: "extension",
    imports: { default: async | trappable },
    exports: { default: async },
});

impl zot::extension::host::Host for GuestData {
    async fn send(&mut self, frame: String) -> wasmtime::Result<()> {
        self.frame_to_host(frame.into_bytes()).await
    }

    async fn log(&mut self, level: String, message: String) -> wasmtime::Result<()> {
        guest_log(&self.log, &level, &message);
        Ok(())
    }
}

/// Runs a reactor until its input closes, it traps, or the host stops it.
pub(super) async fn run(guest: Guest, mut frames: mpsc::Receiver<Outbound>) -> Exit {
    let stop = guest.stop.clone();
    let deadline = Arc::new(Deadline::default());
    let (mut store, component, log) = guest.store(deadline.clone());
    let mut linker = Linker::<GuestData>::new(store.engine());
    let linked = add_wasi_to_linker(&mut linker).and_then(|()| {
        Extension::add_to_linker::<GuestData, HasSelf<GuestData>>(&mut linker, |d| d)
    });
    if let Err(e) = linked {
        return failed(format!("cannot link the component: {e:#}"));
    }
    deadline.set(START_BUDGET);
    let bindings = tokio::select! {
        r = Extension::instantiate_async(&mut store, &component, &linker) => match r {
            Ok(b) => b,
            Err(e) => return exit_for(&store, &e),
        },
        () = stop.kill.notified() => return killed(),
    };
    let guest_api = bindings.zot_extension_guest();
    tokio::select! {
        r = guest_api.call_start(&mut store) => {
            if let Err(e) = r {
                return exit_for(&store, &e);
            }
        }
        () = stop.kill.notified() => return killed(),
    }
    deadline.clear();
    log.info("component started (reactor)");
    let mut closing = false;
    loop {
        let frame = if closing {
            frames.try_recv().ok()
        } else {
            tokio::select! {
                biased;
                f = frames.recv() => f,
                () = stop.close_input.notified() => {
                    closing = true;
                    continue;
                }
                () = stop.kill.notified() => return killed(),
            }
        };
        let Some(frame) = frame else {
            return Exit {
                reason: "stopped: its input was closed".into(),
                code: Some(0),
                signal: None,
            };
        };
        let text = frame.line.into_json();
        deadline.set(frame.budget);
        // A refused growth that the guest survived earlier says nothing about this call.
        store.data_mut().limiter.memory_refused = false;
        tokio::select! {
            r = guest_api.call_handle(&mut store, &text) => {
                if let Err(e) = r {
                    return exit_for(&store, &e);
                }
            }
            () = stop.kill.notified() => return killed(),
        }
        deadline.clear();
    }
}

fn failed(reason: String) -> Exit {
    Exit {
        reason,
        code: None,
        signal: None,
    }
}
