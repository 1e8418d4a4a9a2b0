//! `zot:extension@0.1.0`: the generated bindings, and the `host` functions it imports.

use super::super::{guest_log, GuestData};
use wasmtime::component::{Component, HasSelf, Linker};
use wasmtime::Store;

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
        if self.guest_output {
            guest_log(&self.log, &level, &message);
        }
        Ok(())
    }
}

impl super::Bindings for Extension {
    const WIT: &'static str = "0.1.0";

    fn link(linker: &mut Linker<GuestData>) -> wasmtime::Result<()> {
        Extension::add_to_linker::<GuestData, HasSelf<GuestData>>(linker, |d| d)
    }

    async fn instantiate(
        store: &mut Store<GuestData>,
        component: &Component,
        linker: &Linker<GuestData>,
    ) -> wasmtime::Result<Self> {
        Extension::instantiate_async(store, component, linker).await
    }

    async fn start(&self, store: &mut Store<GuestData>) -> wasmtime::Result<()> {
        self.zot_extension_guest().call_start(store).await
    }

    async fn handle(&self, store: &mut Store<GuestData>, frame: &str) -> wasmtime::Result<()> {
        self.zot_extension_guest().call_handle(store, frame).await
    }
}
