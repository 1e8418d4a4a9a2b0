//! `hello`: one slash command per command action, and a panel that answers keys.
//!
//! | command | action |
//! |---|---|
//! | `/hello [name]` | `prompt`: asks the model to greet `name` (or you) |
//! | `/hello-insert [name]` | `insert`: puts a greeting in the editor |
//! | `/hello-display` | `display`: a note naming the host and model |
//! | `/hello-panel` | `open_panel`: a panel echoing each key; `q` closes it |
//! | `/hello-submit text` | `noop`, after queueing `text` as a prompt (`submit`) |
//! | `/hello-noop` | `noop`, after an `info` note |
//! | `/hello-error` | an error |

use zot_ext::{Ctx, Extension, Level, Panel, PanelKey, Response};

const PANEL: &str = "hello";

fn main() {
    Extension::new("hello", env!("CARGO_PKG_VERSION"))
        .command("hello", "Ask the model to greet someone", |_, args| {
            Response::prompt(format!("Greet {} in one short sentence.", who(args)))
        })
        .command("hello-insert", "Put a greeting in the editor", |_, args| {
            Response::insert(format!("Hello, {}!", who(args)))
        })
        .command("hello-display", "Show a note about the host", |ctx, _| {
            let host = ctx.host();
            Response::display(format!(
                "Hello from zot {} (model {:?} of {:?}).",
                host.zot_version, host.model, host.provider
            ))
        })
        .command("hello-panel", "Open a panel that echoes keys", |_, _| {
            Response::open_panel(panel(&["Press any key; q closes."]))
        })
        .command("hello-submit", "Queue a prompt", |ctx, args| {
            if args.is_empty() {
                return Response::error("usage: /hello-submit <text>");
            }
            ctx.submit(args);
            Response::noop()
        })
        .command("hello-noop", "Do nothing, with a note", |ctx, _| {
            ctx.notify(Level::Info, "hello: nothing to do");
            Response::noop()
        })
        .command("hello-error", "Always fails", |_, _| {
            Response::error("hello: this command always fails")
        })
        .on_panel_key(on_key)
        .on_panel_close(|ctx, id| ctx.log(format!("panel {id} closed")))
        .run();
}

fn who(args: &str) -> &str {
    if args.is_empty() {
        "me"
    } else {
        args
    }
}

fn panel(lines: &[&str]) -> Panel {
    Panel::new(PANEL, "Hello")
        .lines(lines.iter().copied())
        .footer("q: close")
}

fn on_key(ctx: &mut Ctx, key: &PanelKey) {
    if key.panel_id != PANEL {
        return;
    }
    if key.key == "q" || key.key == "escape" {
        ctx.close_panel(PANEL);
    } else {
        let line = format!("You pressed {:?} (text {:?}).", key.key, key.text);
        ctx.render_panel(panel(&[&line]));
    }
}
