//! Reactor components: `start()` once, then one `handle(frame)` call per frame; the guest
//! sends frames back through the imported `host.send`.
//!
//! The loop is written once, against [`Bindings`]; each `zot:extension` version's
//! bindings live in a module of their own, listed in [`VERSIONS`].

mod v0_1_0;

use super::{add_wasi_to_linker, exit_for, instantiate_or_stop, Deadline, Guest, GuestData};
use crate::component::wit::SPOKEN;
use crate::transport::{ExitReason, Outbound};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use tokio::sync::mpsc;
use wasmtime::component::{Component, Linker};
use wasmtime::Store;

/// The bindings of every `zot:extension` version this host speaks, in the order of
/// [`SPOKEN`] (the list the component layer tells worlds by; checked when this compiles).
static VERSIONS: [Version; SPOKEN.len()] = BINDINGS;
const BINDINGS: [Version; SPOKEN.len()] = [Version::of::<v0_1_0::Extension>()];

const _: () = {
    let mut i = 0;
    while i < SPOKEN.len() {
        assert!(
            same(BINDINGS[i].wit, SPOKEN[i]),
            "VERSIONS must follow component::wit::SPOKEN"
        );
        i += 1;
    }
};

/// Whether `a` and `b` are the same text (usable in a constant).
const fn same(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// What the loop needs from one version's generated bindings.
trait Bindings: Sized + Send + Sync + 'static {
    /// The WIT package version, e.g. `0.1.0`.
    const WIT: &'static str;
    /// Adds the `host` interface the guest imports.
    fn link(linker: &mut Linker<GuestData>) -> wasmtime::Result<()>;
    fn instantiate(
        store: &mut Store<GuestData>,
        component: &Component,
        linker: &Linker<GuestData>,
    ) -> impl Future<Output = wasmtime::Result<Self>> + Send;
    /// Calls the guest's `start`.
    fn start(
        &self,
        store: &mut Store<GuestData>,
    ) -> impl Future<Output = wasmtime::Result<()>> + Send;
    /// Calls the guest's `handle` with one frame's JSON text.
    fn handle(
        &self,
        store: &mut Store<GuestData>,
        frame: &str,
    ) -> impl Future<Output = wasmtime::Result<()>> + Send;
}

type Running = Pin<Box<dyn Future<Output = ExitReason> + Send>>;

/// A version this host speaks: its number, and the loop run with its bindings.
pub(super) struct Version {
    wit: &'static str,
    run: fn(Guest, mpsc::Receiver<Outbound>) -> Running,
}

impl Version {
    const fn of<B: Bindings>() -> Version {
        fn boxed<B: Bindings>(guest: Guest, frames: mpsc::Receiver<Outbound>) -> Running {
            Box::pin(run::<B>(guest, frames))
        }
        Version {
            wit: B::WIT,
            run: boxed::<B>,
        }
    }

    /// Runs a reactor of this version until its input closes, it traps, or the host
    /// stops it.
    pub(super) async fn run(&self, guest: Guest, frames: mpsc::Receiver<Outbound>) -> ExitReason {
        (self.run)(guest, frames).await
    }
}

/// The bindings of the spoken version `wit` (one of [`SPOKEN`], as
/// [`crate::component::wit::world_of`] gives it).
pub(super) fn version(wit: &str) -> &'static Version {
    VERSIONS
        .iter()
        .find(|v| v.wit == wit)
        .expect("a binding for every spoken version")
}

async fn run<B: Bindings>(guest: Guest, mut frames: mpsc::Receiver<Outbound>) -> ExitReason {
    let stop = guest.stop.clone();
    let deadline = Arc::new(Deadline::default());
    let (mut store, code, log) = guest.store(deadline.clone());
    let crate::component::Code::Component(component) = code else {
        return ExitReason::LinkFailed("a core module is no reactor".into());
    };
    let mut linker = Linker::<GuestData>::new(store.engine());
    if let Err(e) = add_wasi_to_linker(&mut linker).and_then(|()| B::link(&mut linker)) {
        return ExitReason::LinkFailed(format!("{e:#}"));
    }
    let started = instantiate_or_stop(&mut store, &deadline, &stop, async |store| {
        B::instantiate(store, &component, &linker).await
    });
    let bindings = match started.await {
        Ok(bindings) => bindings,
        Err(exit) => return exit,
    };
    tokio::select! {
        r = bindings.start(&mut store) => {
            if let Err(e) = r {
                return exit_for(&store, &e);
            }
        }
        () = stop.kill.notified() => return stop.reason(),
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
                () = stop.kill.notified() => return stop.reason(),
            }
        };
        let Some(frame) = frame else {
            return ExitReason::InputClosed;
        };
        let text = frame.line.into_json();
        deadline.set(frame.budget);
        // A refused growth that the guest survived earlier says nothing about this call.
        store.data_mut().limiter.memory_refused = false;
        tokio::select! {
            r = bindings.handle(&mut store, &text) => {
                if let Err(e) = r {
                    return exit_for(&store, &e);
                }
            }
            () = stop.kill.notified() => return stop.reason(),
        }
        deadline.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_spoken_version_has_its_bindings() {
        for wit in SPOKEN {
            assert_eq!(version(wit).wit, *wit);
        }
    }
}
