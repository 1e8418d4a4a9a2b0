//! A component of a `zot:extension` version the host does not speak. It exports
//! `zot:extension/guest@0.2.0`; the host must refuse it with a message naming both versions.

wit_bindgen::generate!({
    inline: "
        package zot:extension@0.2.0;
        interface host { send: func(frame: string); }
        interface guest { start: func(); handle: func(frame: string); }
        world extension { import host; export guest; }
    ",
    world: "extension",
});

struct Future;

impl exports::zot::extension::guest::Guest for Future {
    fn start() {
        zot::extension::host::send(r#"{"type":"hello","name":"future","version":"0.2.0"}"#);
    }

    fn handle(_frame: String) {}
}

export!(Future);
