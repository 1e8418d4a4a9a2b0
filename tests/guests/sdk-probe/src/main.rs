//! The SDK's probe: what the examples do not exercise, built natively and as a component.
//!
//! | tool | args | result |
//! |---|---|---|
//! | `wait` | `ms` | polls `Ctx::cancelled` until `ms` passed: `waited <ms> ms`; once cancelled it notifies `cancelled <id>` and its result is dropped |
//! | `panic` | — | panics |
//! | `host` | — | the `hello_ack` it got, as JSON |
//! | `env` | `name` | the environment variable `name`, or `unset` |
//!
//! Every `turn_end` event is answered with a `notify` `event turn_end <n>` (`n` = its
//! `stop` field), so a test sees events that arrived during a call handled after it.
//!
//! Its `extension.json` is embedded in the component (`zot_ext::embed_manifest!`): the
//! bare `sdk-probe.wasm` asks for `ZOT_SECTION_TEST`, HTTP to `api.example.com` and
//! 96 MiB of memory.

use std::time::{Duration, Instant};
use zot_ext::{json, Extension, Level, ToolOutput, Value};

zot_ext::embed_manifest!("extension.json");

fn main() {
    Extension::new("sdk-probe", "0.1.0")
        .tool(
            "wait",
            "Waits, polling for cancellation",
            json!({"type": "object", "properties": {"ms": {"type": "integer"}}}),
            |ctx, args| {
                let ms = args["ms"].as_u64().unwrap_or(0);
                let until = Instant::now() + Duration::from_millis(ms);
                while Instant::now() < until {
                    if ctx.cancelled() {
                        let id = ctx.call_id().unwrap_or_default().to_string();
                        ctx.notify(Level::Info, format!("cancelled {id}"));
                        return ToolOutput::text("cancelled");
                    }
                    std::thread::sleep(Duration::from_millis(10));
                }
                ToolOutput::text(format!("waited {ms} ms"))
            },
        )
        .tool(
            "panic",
            "Panics",
            json!({"type": "object"}),
            |_, _| -> ToolOutput { panic!("the probe panicked on purpose") },
        )
        .tool(
            "host",
            "The hello_ack",
            json!({"type": "object"}),
            |ctx, _| {
                let h = ctx.host();
                ToolOutput::text(
                    json!({"protocol_version": h.protocol_version, "zot_version": h.zot_version,
                       "provider": h.provider, "model": h.model, "cwd": h.cwd,
                       "data_dir": ctx.data_dir().to_string_lossy()})
                    .to_string(),
                )
            },
        )
        .tool(
            "env",
            "An environment variable",
            json!({"type": "object", "properties": {"name": {"type": "string"}}}),
            |_, args| {
                let name = args["name"].as_str().unwrap_or_default();
                ToolOutput::text(std::env::var(name).unwrap_or_else(|_| "unset".into()))
            },
        )
        .on("turn_end", |ctx, event| {
            let stop = event.get("stop").cloned().unwrap_or(Value::Null);
            ctx.notify(Level::Info, format!("event turn_end {stop}"));
        })
        .run();
}
