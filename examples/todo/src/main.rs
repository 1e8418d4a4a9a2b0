//! `todo`: a todo list that lasts, kept in `todos.json` in the extension's data
//! directory.
//!
//! - The `todo` tool lets the model `add`, `done`, `undo`, `remove` and `list` items.
//! - `/todo` opens a panel: `up`/`k` and `down`/`j` move, `space`/`x`/`enter` toggles,
//!   `d` removes, `q`/`escape` closes. `/todo <text>` adds an item first.
//!
//! Every change is written to a temporary file and renamed over the list, so a crash
//! never leaves half a list.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::cell::RefCell;
use std::path::Path;
use std::rc::Rc;
use zot_ext::{Ctx, Extension, Panel, PanelKey, Response, ToolOutput};

const FILE: &str = "todos.json";
const PANEL: &str = "todo";

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
struct Item {
    text: String,
    done: bool,
}

/// What the `todo` tool does.
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Action {
    Add,
    Done,
    Undo,
    Remove,
    List,
}

/// The `todo` tool's arguments.
#[derive(Debug, Deserialize, JsonSchema)]
struct Args {
    /// `add` (needs `text`), `done`, `undo`, `remove` (need `index`) or `list`.
    action: Action,
    /// The item to add.
    text: Option<String>,
    /// The item's number as `list` shows it, from 1.
    index: Option<usize>,
}

fn main() {
    // The panel's cursor, shared by the command and the key handler.
    let cursor = Rc::new(RefCell::new(0usize));
    let on_key_cursor = cursor.clone();
    Extension::new("todo", env!("CARGO_PKG_VERSION"))
        .tool_typed(
            "todo",
            "Keep the user's todo list: add, done, undo, remove or list items.",
            |ctx, args: Args| tool(ctx.data_dir(), args),
        )
        .command(
            "todo",
            "Show the todo list (/todo <text> adds an item)",
            move |ctx, args| {
                let mut items = load(ctx.data_dir())?;
                if !args.is_empty() {
                    items.push(Item {
                        text: args.into(),
                        done: false,
                    });
                    save(ctx.data_dir(), &items)?;
                }
                *cursor.borrow_mut() = 0;
                Ok::<_, String>(Response::open_panel(panel(&items, 0)))
            },
        )
        .on_panel_key(move |ctx, key| on_key(ctx, key, &mut on_key_cursor.borrow_mut()))
        .run();
}

fn tool(dir: &Path, args: Args) -> Result<ToolOutput, String> {
    let mut items = load(dir)?;
    let pick = |items: &[Item]| match args.index {
        Some(n) if (1..=items.len()).contains(&n) => Ok(n - 1),
        Some(n) => Err(format!(
            "todo: there is no item {n} (the list has {})",
            items.len()
        )),
        None => Err("todo: this action needs `index`".to_string()),
    };
    let said = match args.action {
        Action::Add => {
            let text = args.text.as_deref().map(str::trim).unwrap_or_default();
            if text.is_empty() {
                return Err("todo: `add` needs `text`".into());
            }
            items.push(Item {
                text: text.into(),
                done: false,
            });
            format!("added item {}: {text}", items.len())
        }
        Action::Done | Action::Undo => {
            let i = pick(&items)?;
            items[i].done = matches!(args.action, Action::Done);
            format!(
                "item {} is {}",
                i + 1,
                if items[i].done { "done" } else { "open" }
            )
        }
        Action::Remove => {
            let i = pick(&items)?;
            let item = items.remove(i);
            format!("removed item {}: {}", i + 1, item.text)
        }
        Action::List => return Ok(ToolOutput::text(listing(&items))),
    };
    save(dir, &items)?;
    Ok(ToolOutput::text(format!("{said}\n{}", listing(&items))))
}

fn on_key(ctx: &mut Ctx, key: &PanelKey, cursor: &mut usize) {
    if key.panel_id != PANEL {
        return;
    }
    let dir = ctx.data_dir().to_path_buf();
    let mut items = match load(&dir) {
        Ok(items) => items,
        Err(e) => return ctx.log(e),
    };
    let k = if key.key.is_empty() {
        key.text.as_str()
    } else {
        key.key.as_str()
    };
    match k {
        "q" | "escape" | "esc" => return ctx.close_panel(PANEL),
        "up" | "k" => *cursor = cursor.saturating_sub(1),
        "down" | "j" => *cursor += 1,
        "space" | " " | "x" | "enter" => {
            if let Some(item) = items.get_mut(*cursor) {
                item.done = !item.done;
            }
        }
        "d" | "delete" if *cursor < items.len() => {
            items.remove(*cursor);
        }
        _ => return,
    }
    *cursor = (*cursor).min(items.len().saturating_sub(1));
    if let Err(e) = save(&dir, &items) {
        ctx.log(e);
    }
    ctx.render_panel(panel(&items, *cursor));
}

fn panel(items: &[Item], cursor: usize) -> Panel {
    let lines: Vec<String> = if items.is_empty() {
        vec!["Nothing to do.".into()]
    } else {
        items
            .iter()
            .enumerate()
            .map(|(i, item)| {
                let mark = if item.done { "x" } else { " " };
                let here = if i == cursor { ">" } else { " " };
                format!("{here} [{mark}] {}", item.text)
            })
            .collect()
    };
    let open = items.iter().filter(|i| !i.done).count();
    Panel::new(PANEL, format!("Todo ({open} open)"))
        .lines(lines)
        .footer("j/k move · space toggle · d remove · q close")
}

fn listing(items: &[Item]) -> String {
    if items.is_empty() {
        return "The todo list is empty.".into();
    }
    items
        .iter()
        .enumerate()
        .map(|(i, item)| {
            format!(
                "{}. [{}] {}",
                i + 1,
                if item.done { "x" } else { " " },
                item.text
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn load(dir: &Path) -> Result<Vec<Item>, String> {
    match std::fs::read(dir.join(FILE)) {
        Ok(bytes) => {
            serde_json::from_slice(&bytes).map_err(|e| format!("todo: {FILE} is damaged: {e}"))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(e) => Err(format!("todo: cannot read {FILE}: {e}")),
    }
}

/// Writes the list to a temporary file and renames it into place.
fn save(dir: &Path, items: &[Item]) -> Result<(), String> {
    let tmp = dir.join(format!("{FILE}.tmp"));
    let json = serde_json::to_vec_pretty(items).expect("items serialize");
    std::fs::write(&tmp, json)
        .and_then(|()| std::fs::rename(&tmp, dir.join(FILE)))
        .map_err(|e| format!("todo: cannot save {FILE}: {e}"))
}
