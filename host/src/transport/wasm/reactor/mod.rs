//! Reactor components: `start()` once, then one `handle(frame)` call per frame; the guest
//! sends frames back through the imported `host.send`.
//!
//! The loop is written once, against [`Bindings`]; each `zot:extension` version's
//! bindings live in a module of their own, listed in [`VERSIONS`].

mod v0_1_0;

use super::{add_wasi_to_linker, exit_for, Deadline, Guest, GuestData};
use crate::budget::Budget;
use crate::transport::{ExitReason, Outbound};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use tokio::sync::mpsc;
use wasmtime::component::{Component, Linker};
use wasmtime::Store;

/// Every `zot:extension` version this host speaks, oldest first.
const VERSIONS: &[Version] = &[Version::of::<v0_1_0::Extension>()];

/// The newest version this host speaks.
pub(super) const NEWEST: &str = VERSIONS[VERSIONS.len() - 1].wit;

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

    /// The export a reactor of this version has.
    fn export(&self) -> String {
        format!("zot:extension/guest@{}", self.wit)
    }

    /// Runs a reactor of this version until its input closes, it traps, or the host
    /// stops it.
    pub(super) async fn run(&self, guest: Guest, frames: mpsc::Receiver<Outbound>) -> ExitReason {
        (self.run)(guest, frames).await
    }
}

/// The version a component with these exports was built for (the newest it exports);
/// `None` if it exports no `zot:extension/guest`; an error naming the versions this
/// host speaks if it exports only others.
pub(super) fn version_of(exports: &[String]) -> Result<Option<&'static Version>, String> {
    if let Some(version) = VERSIONS
        .iter()
        .rev()
        .find(|v| exports.contains(&v.export()))
    {
        return Ok(Some(version));
    }
    match exports
        .iter()
        .find(|e| e.starts_with("zot:extension/guest@"))
    {
        Some(other) => Err(format!(
            "the component was built for {other}, but this host speaks {}: \
             rebuild it against wit/zot-extension-{NEWEST}, or update zot",
            VERSIONS
                .iter()
                .map(|v| format!("zot:extension@{}", v.wit))
                .collect::<Vec<_>>()
                .join(" or ")
        )),
        None => Ok(None),
    }
}

/// The guest exports of every version this host speaks, for messages.
pub(super) fn exports() -> String {
    VERSIONS
        .iter()
        .map(Version::export)
        .collect::<Vec<_>>()
        .join(", ")
}

async fn run<B: Bindings>(guest: Guest, mut frames: mpsc::Receiver<Outbound>) -> ExitReason {
    let stop = guest.stop.clone();
    let deadline = Arc::new(Deadline::default());
    let (mut store, component, log) = guest.store(deadline.clone());
    let mut linker = Linker::<GuestData>::new(store.engine());
    if let Err(e) = add_wasi_to_linker(&mut linker).and_then(|()| B::link(&mut linker)) {
        return ExitReason::LinkFailed(format!("{e:#}"));
    }
    deadline.set(Budget::START);
    let bindings = tokio::select! {
        r = B::instantiate(&mut store, &component, &linker) => match r {
            Ok(b) => b,
            Err(e) => return exit_for(&store, &e),
        },
        () = stop.kill.notified() => return stop.reason(),
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

    fn names(names: &[&str]) -> Vec<String> {
        names.iter().map(|n| n.to_string()).collect()
    }

    #[test]
    fn every_listed_version_is_picked_by_its_export() {
        for version in VERSIONS {
            let found = version_of(&names(&["wasi:cli/run@0.2.0", &version.export()]));
            assert_eq!(found.map(|v| v.map(|v| v.wit)), Ok(Some(version.wit)));
        }
        assert_eq!(
            version_of(&names(&["wasi:cli/run@0.2.0"])).map(|v| v.is_some()),
            Ok(false)
        );
    }

    #[test]
    fn another_version_is_refused_naming_the_spoken_ones() {
        let error = version_of(&names(&["zot:extension/guest@9.9.9"]))
            .map(|_| ())
            .unwrap_err();
        assert!(
            error.contains("built for zot:extension/guest@9.9.9"),
            "{error}"
        );
        for version in VERSIONS {
            assert!(
                error.contains(&format!("zot:extension@{}", version.wit)),
                "{error}"
            );
        }
        assert!(
            error.contains(&format!("wit/zot-extension-{NEWEST}")),
            "{error}"
        );
    }
}
