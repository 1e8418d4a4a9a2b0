//! The test guest as a reactor component of the `zot:extension/extension@0.1.0` world:
//! `guest.start` / `guest.handle` drive a [`Scenario`], whose frames go out through
//! `host.send`.

use scenario::Scenario;
use std::cell::RefCell;

wit_bindgen::generate!({
    path: "../../../wit/zot-extension-0.1.0",
    world: "extension",
});

use exports::zot::extension::guest::Guest;
use zot::extension::host;

thread_local! {
    // A component instance is single-threaded; `handle` is never re-entered.
    static SCENARIO: RefCell<Scenario> = RefCell::new(Scenario::new());
}

fn send(frame: String) {
    host::send(&frame);
}

struct Reactor;

impl Guest for Reactor {
    fn start() {
        host::log("info", "reactor started");
        SCENARIO.with(|s| s.borrow_mut().start(&mut send));
    }

    fn handle(frame: String) {
        SCENARIO.with(|s| s.borrow_mut().handle(&frame, &mut send));
    }
}

export!(Reactor);
