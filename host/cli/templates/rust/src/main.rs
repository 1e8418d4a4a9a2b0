//! `{{name}}`: a zot extension built with the `zot-ext` SDK.
//!
//! - `/{{name}} [text]`: a slash command that shows the text typed after it;
//! - `{{name}}_echo`: a tool the model can call with `{"text": "..."}`;
//! - an interceptor of `tool_call` that blocks a `bash` command deleting the whole disk
//!   (`rm -rf /`) and allows everything else.
//!
//! The same source builds as a native stdio extension (`cargo build --release`) and as a
//! sandboxed WebAssembly component (`cargo build --release --target wasm32-wasip2`).
//! `Extension::run` sends `hello`, the registrations, `subscribe` and `ready`, answers
//! each request with its handler, and `shutdown` with `shutdown_ack`.
//!
//! Never print to stdout (`println!`): it carries the frames. `eprintln!` and `ctx.log`
//! go to the extension's log (`zot ext logs {{name}}`).

use zot_ext::{json, Ctx, Extension, Response, ToolCallEvent, ToolOutput, Value, Verdict};

fn main() {
    Extension::new("{{name}}", env!("CARGO_PKG_VERSION"))
        .command("{{name}}", "Show the text after /{{name}}", |_ctx, args| {
            if args.is_empty() {
                Response::display("{{name}}: no arguments")
            } else {
                Response::display(format!("{{name}} got: {args}"))
            }
        })
        .tool(
            "{{name}}_echo",
            "Echo a text back.",
            json!({
                "type": "object",
                "properties": {
                    "text": {"type": "string", "description": "The text to echo back."}
                },
                "required": ["text"]
            }),
            |_ctx, args: Value| match args.get("text").and_then(Value::as_str) {
                Some(text) => ToolOutput::text(format!("echo: {text}")),
                None => ToolOutput::error("missing the string argument \"text\""),
            },
        )
        .intercept_tool_call(guard)
        .run();
}

/// The interceptor: asked before every tool call runs. Blocks one obviously dangerous
/// case, allows everything else unchanged.
fn guard(_ctx: &mut Ctx, call: &ToolCallEvent) -> Verdict {
    match (call.tool_name.as_str(), call.arg("command")) {
        ("bash", Some(command)) if dangerous(command) => {
            Verdict::block("{{name}}: refused to delete the whole disk (rm -rf /)")
        }
        _ => Verdict::Allow,
    }
}

/// True for an `rm` with a flag holding both `r` and `f` whose target is `/` or `/*`.
fn dangerous(command: &str) -> bool {
    let words: Vec<&str> = command.split_whitespace().collect();
    let rf = |w: &str| w.starts_with('-') && w.contains('f') && w.to_lowercase().contains('r');
    words.contains(&"rm")
        && words.iter().any(|w| *w == "/" || *w == "/*")
        && words.iter().any(|w| rf(w))
}
