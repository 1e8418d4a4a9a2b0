//! One verb run against the host: a command, a tool call (its arguments checked against
//! the schema first), the interception chain, an event, a turn, a panel key, a listing.

use super::manage::{manage_grant, trust_and_reload};
use super::*;

/// Runs one verb against the host.
pub(super) async fn exec(
    ctx: Ctx,
    verb: Verb,
    lines: mpsc::UnboundedSender<(Level, String)>,
) -> Outcome {
    let mut o = Outcome::new(lines);
    let host = &ctx.host;
    match verb {
        Verb::Command { name, args } => invoke(&ctx, &name, &args, &mut o).await,
        Verb::Call {
            tool,
            args,
            validate,
        } => {
            let args = args.unwrap_or_else(|| json!({}));
            let validate = validate && ctx.host.config().validate_arguments;
            if !validate || fits_schema(&ctx, &tool, &args, &mut o) {
                call(&ctx, &tool, args, &mut o).await;
            }
        }
        Verb::Intercept { event, fields } => {
            let (steps, verdict) = host.intercept_steps(make_event(&event, fields)).await;
            o.all(
                if verdict.block {
                    Level::Warn
                } else {
                    Level::Plain
                },
                render::intercept_steps(&event, &steps, &verdict),
            );
        }
        Verb::Emit { event, fields } => {
            let n = host.emit(&make_event(&event, fields));
            o.say(
                Level::Plain,
                format!("emit {event}: queued for {n} subscriber(s)"),
            );
        }
        Verb::Turn { tool, args } => turn(&ctx, tool, args, &mut o).await,
        Verb::List => o.all(Level::Plain, render::extensions(&host.extensions())),
        Verb::Tools => o.all(Level::Plain, render::tools(&host.tools())),
        Verb::Commands => list_commands(host, &mut o),
        Verb::Logs { name, lines } => show_log(host, &name, lines, &mut o).await,
        Verb::Key { key, text } => send_key(&ctx, key, text, &mut o),
        Verb::Focus => o.fail("focus needs a terminal: in a script, send keys with `key`"),
        Verb::Close => close_panel(&ctx, &mut o),
        Verb::Reload => {
            let report = host.reload().await;
            for (level, line) in crate::output::report::lines(&report) {
                o.say(level, line);
            }
            o.panel = Some(None);
        }
        Verb::Grant(words) => manage_grant(&ctx, "grant", words, &mut o),
        Verb::Revoke(words) => manage_grant(&ctx, "revoke", words, &mut o),
        Verb::Trust(words) => {
            trust_and_reload(&ctx, words, &mut o).await;
        }
        Verb::Help => o.all(
            Level::Plain,
            render::HELP.lines().map(str::to_string).collect(),
        ),
        Verb::Sleep(ms) => tokio::time::sleep(Duration::from_millis(ms)).await,
        // The session waits itself: it reads the watcher's notes (`Shell::wait_reload`).
        Verb::WaitReload(_) => {}
        Verb::Quit => o.quit = true,
    }
    o
}

/// `/name args`: the command's response, and the panel it opens.
async fn invoke(ctx: &Ctx, name: &str, args: &str, o: &mut Outcome) {
    match ctx.host.invoke_command(name, args).await {
        Ok((ext, response)) => {
            let failed = response.error.is_some();
            o.all(
                if failed { Level::Error } else { Level::Plain },
                render::command_response(name, &ext, &response),
            );
            if let Some(panel) = &response.open_panel {
                o.panel = Some(Some((ext.clone(), panel.id.clone())));
                if ctx.interactive {
                    o.say(Level::Dim, "`focus` sends keys to it, `close` closes it");
                }
            }
        }
        Err(e) => {
            o.fail(&e);
            gone_hint(ctx, &e, o);
        }
    }
}

/// `commands`: every slash command and the extension that provides it.
fn list_commands(host: &Host, o: &mut Outcome) {
    let commands = host.commands();
    if commands.is_empty() {
        o.say(Level::Plain, "no command");
    }
    for (ext, c) in commands {
        o.say(
            Level::Plain,
            format!(
                "/{} ({ext}): {}",
                render::clean(&c.name),
                render::clean(&c.description)
            ),
        );
    }
}

/// `logs NAME [N]`: the last `lines` lines of an extension's log.
async fn show_log(host: &Host, name: &str, lines: usize, o: &mut Outcome) {
    let path = host
        .extensions()
        .into_iter()
        .find(|e| e.name == name)
        .map(|e| e.log)
        .unwrap_or_else(|| host.config().home.log_path(name));
    match tokio::fs::read(&path).await {
        Ok(bytes) => {
            let text = String::from_utf8_lossy(&bytes);
            let all: Vec<&str> = text.lines().collect();
            o.say(
                Level::Dim,
                format!("{} (last {} lines):", path.display(), lines.min(all.len())),
            );
            for l in &all[all.len().saturating_sub(lines)..] {
                o.say(Level::Plain, format!("  {}", render::clean(l)));
            }
        }
        Err(e) => o.fail(format!("logs {name}: {}: {e}", path.display())),
    }
}

/// `key KEY [TEXT]`: one key to the open panel.
fn send_key(ctx: &Ctx, key: String, text: String, o: &mut Outcome) {
    let Some((ext, id)) = &ctx.panel else {
        return o.fail("no panel is open");
    };
    let frame = PanelKey {
        panel_id: id.clone(),
        key: key.clone(),
        text,
        extra: Map::new(),
    };
    match ctx.host.panel_key(ext, frame) {
        Ok(()) => o.say(Level::Dim, format!("key {key} sent to panel {id} ({ext})")),
        Err(e) => {
            o.fail(&e);
            gone_hint(ctx, &e, o);
        }
    }
}

/// `close`: closes the open panel.
fn close_panel(ctx: &Ctx, o: &mut Outcome) {
    let Some((ext, id)) = &ctx.panel else {
        return o.fail("no panel is open");
    };
    match ctx.host.panel_close(ext, id.clone()) {
        Ok(()) => {
            o.say(Level::Dim, format!("panel {id} ({ext}) closed"));
            o.panel = Some(None);
        }
        Err(e) => {
            o.fail(&e);
            gone_hint(ctx, &e, o);
        }
    }
}

/// An event named `event` with `fields`.
fn make_event(event: &str, fields: Map<String, Value>) -> Event {
    Event {
        id: None,
        event: event.to_string(),
        fields,
    }
}

/// Whether `args` may be sent to `tool`: they fit its schema, or it has none that can be
/// used (said as a warning), or there is no such tool (the call says so). Each problem is
/// an error line naming its field.
fn fits_schema(ctx: &Ctx, tool: &str, args: &Value, o: &mut Outcome) -> bool {
    use zot_host::schema::Checked;
    match ctx.host.check_arguments(tool, args) {
        None | Some(Checked::Valid) => true,
        Some(Checked::Unchecked(why)) => {
            o.say(
                Level::Warn,
                format!(
                    "warning: {}: {}; the arguments are sent unchecked",
                    render::clean(tool),
                    render::clean(&why)
                ),
            );
            true
        }
        Some(Checked::Invalid(problems)) => {
            for problem in problems {
                o.fail(format!(
                    "{}: {}",
                    render::clean(tool),
                    render::clean(&problem.message)
                ));
            }
            o.say(
                Level::Dim,
                "hint: make the arguments fit the tool's schema, or `call --no-validate` sends them as they are",
            );
            false
        }
    }
}

/// Calls a tool and shows its result, saving its images with `--save`. The text of its
/// first text block, or the error.
async fn call(ctx: &Ctx, tool: &str, args: Value, o: &mut Outcome) -> String {
    // Checked by `fits_schema` unless the user said not to.
    match ctx.host.call_tool_unchecked(tool, args, None).await {
        Ok((ext, result)) => {
            let saved: Vec<Option<String>> = result
                .content
                .iter()
                .map(|block| save_image(ctx, tool, block, o))
                .collect();
            o.all(
                if result.is_error {
                    Level::Warn
                } else {
                    Level::Plain
                },
                render::tool_result(tool, &ext, &result, &saved),
            );
            result
                .content
                .iter()
                .find_map(|b| b.get("text").and_then(Value::as_str))
                .unwrap_or("")
                .to_string()
        }
        Err(e) => {
            let text = e.to_string();
            o.fail(&text);
            gone_hint(ctx, &e, o);
            text
        }
    }
}

/// After a call its extension failed: where to see why, and when the extension runs
/// confined, what that withholds and how to give it more.
fn gone_hint(ctx: &Ctx, e: &zot_host::CallError, o: &mut Outcome) {
    use zot_host::CallError::*;
    let extension = match e {
        NotRunning { extension, .. } => {
            o.say(
                Level::Dim,
                format!(
                    "hint: `logs {}` shows its log; fix it, then `reload`",
                    render::clean(extension)
                ),
            );
            extension
        }
        Timeout { extension, .. } | Exited { extension, .. } | QueueFull { extension, .. } => {
            extension
        }
        NotFound(_) | Invalid(_) | Arguments { .. } => return,
    };
    let Some(info) = ctx
        .host
        .extensions()
        .into_iter()
        .find(|i| &i.name == extension)
    else {
        return;
    };
    // `zot ext grant` and `unconfine` take an installed name, or the folder given.
    let target = match info.source {
        zot_host::Source::Explicit => info.dir.display().to_string(),
        zot_host::Source::Project | zot_host::Source::Global => info.name.clone(),
    };
    let home = &ctx.host.config().home;
    let confined = crate::records::confinement::of(home, &info.dir);
    if let Some(hint) =
        confined.and_then(|c| crate::records::confinement::failure_hint(&target, &c))
    {
        o.say(Level::Dim, render::clean(&hint));
    }
}

/// Writes an image block into the `--save` folder: where, if it did.
fn save_image(ctx: &Ctx, tool: &str, block: &Value, o: &mut Outcome) -> Option<String> {
    let dir = ctx.save.as_ref()?;
    if block.get("type").and_then(Value::as_str) != Some("image") {
        return None;
    }
    let mime = block.get("mime_type").and_then(Value::as_str).unwrap_or("");
    let data = block.get("data").and_then(Value::as_str).unwrap_or("");
    let Some(bytes) = render::base64_decode(data) else {
        o.fail(format!(
            "{tool}: an image whose data is not base64: not saved"
        ));
        return None;
    };
    let n = ctx.saved.fetch_add(1, Ordering::SeqCst) + 1;
    let name: String = tool
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    let path = dir.join(format!("{name}-{n}.{}", render::image_ext(mime)));
    match std::fs::create_dir_all(dir).and_then(|()| std::fs::write(&path, bytes)) {
        Ok(()) => Some(path.display().to_string()),
        Err(e) => {
            o.fail(format!("--save {}: {e}", path.display()));
            None
        }
    }
}

/// A scripted fake turn: session_start, turn_start (intercepted, then emitted), the tool
/// call through interception, the assistant message (intercepted, then emitted),
/// turn_end.
async fn turn(ctx: &Ctx, tool: Option<String>, args: Value, o: &mut Outcome) {
    let host = &ctx.host;
    let n = ctx.turns.fetch_add(1, Ordering::SeqCst) + 1;
    let fields = |v: Value| v.as_object().cloned().unwrap_or_default();
    let emit = |o: &mut Outcome, event: &str, f: Value| {
        let delivered = host.emit(&make_event(event, fields(f)));
        o.say(
            Level::Dim,
            format!("turn {n}: {event} queued for {delivered} subscriber(s)"),
        );
    };
    emit(o, "session_start", json!({}));
    let (steps, verdict) = host
        .intercept_steps(make_event("turn_start", fields(json!({"step": n}))))
        .await;
    o.all(
        Level::Plain,
        render::intercept_steps("turn_start", &steps, &verdict),
    );
    if verdict.block {
        o.say(Level::Warn, format!("turn {n}: blocked at turn_start"));
        emit(o, "turn_end", json!({"stop": "blocked"}));
        return;
    }
    emit(o, "turn_start", json!({"step": n}));
    let text = match tool {
        None => "nothing to do".to_string(),
        Some(tool) => {
            let tool_id = format!("turn-{n}");
            let call_event =
                |args: &Value| json!({"tool_id": tool_id, "tool_name": tool, "tool_args": args});
            let (steps, verdict) = host
                .intercept_steps(make_event("tool_call", fields(call_event(&args))))
                .await;
            o.all(
                Level::Plain,
                render::intercept_steps("tool_call", &steps, &verdict),
            );
            if verdict.block {
                let reason = verdict.reason.unwrap_or_default();
                o.say(Level::Warn, format!("turn {n}: {tool} blocked: {reason}"));
                format!("{tool} was blocked: {reason}")
            } else {
                let args = verdict.modified_args.unwrap_or(args);
                emit(o, "tool_call", call_event(&args));
                let result = call(ctx, &tool, args, o).await;
                format!("{tool} said: {result}")
            }
        }
    };
    let (steps, verdict) = host
        .intercept_steps(make_event(
            "assistant_message",
            fields(json!({"text": text})),
        ))
        .await;
    o.all(
        Level::Plain,
        render::intercept_steps("assistant_message", &steps, &verdict),
    );
    let text = verdict.replace_text.unwrap_or(text);
    o.say(Level::Plain, format!("assistant: {}", render::clean(&text)));
    emit(o, "assistant_message", json!({"text": text}));
    emit(o, "turn_end", json!({"stop": "end_turn"}));
}
