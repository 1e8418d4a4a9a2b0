//! How the shell shows things: pure functions from results and events to lines of text.

use serde_json::Value;
use zot_host::{ExtensionInfo, HostEvent, InterceptStep, Verdict};
use zot_protocol::{CommandResponse, RegisterTool, ToolResult};

/// The longest text block shown in full; longer ones are cut (with their size said).
pub(crate) const SHOWN_TEXT: usize = 4000;

/// How a line is coloured on a terminal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Level {
    Plain,
    Info,
    Warn,
    Error,
    Success,
    Dim,
}

impl Level {
    /// A notification level as extensions send it (`info`, `warn`/`warning`, `error`,
    /// `success`; anything else is plain).
    pub(crate) fn of(level: &str) -> Level {
        match level {
            "info" => Level::Info,
            "warn" | "warning" => Level::Warn,
            "error" => Level::Error,
            "success" => Level::Success,
            "debug" => Level::Dim,
            _ => Level::Plain,
        }
    }
}

/// `text` in the colour of `level` (each line), or as it is when `colour` is off.
pub(crate) fn paint(level: Level, text: &str, colour: bool) -> String {
    let code = match level {
        Level::Plain => return text.to_string(),
        Level::Info => "36",
        Level::Warn => "33",
        Level::Error => "31",
        Level::Success => "32",
        Level::Dim => "2",
    };
    if !colour {
        return text.to_string();
    }
    text.lines()
        .map(|l| format!("\x1b[{code}m{l}\x1b[0m"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// One line of outside text, every character that could drive the terminal or disguise
/// text shown as an escape ([`zot_host::terminal_text::one_line`]).
pub(crate) fn clean(text: &str) -> String {
    zot_host::terminal_text::one_line(text).into_owned()
}

/// Outside text of one or more lines (a start error and its `hint:` line), each line
/// made safe as by [`clean`], the lines after the first indented under it: no line of it
/// starts a record of its own.
pub(crate) fn hanging(text: &str) -> String {
    text.lines().map(clean).collect::<Vec<_>>().join("\n  ")
}

/// Multi-line `text` (a body: its tabs kept), each line indented by `indent`, cut at
/// [`SHOWN_TEXT`].
fn indented(text: &str, indent: &str) -> Vec<String> {
    let (shown, cut) = if text.len() > SHOWN_TEXT {
        let mut end = SHOWN_TEXT;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        (&text[..end], Some(text.len()))
    } else {
        (text, None)
    };
    let mut lines: Vec<String> = shown
        .split('\n')
        .map(|l| format!("{indent}{}", zot_host::terminal_text::multi_line(l)))
        .collect();
    if let Some(n) = cut {
        lines.push(format!("{indent}… ({n} bytes in all)"));
    }
    lines
}

/// The bytes a base64 text stands for (padding and whitespace not counted).
pub(crate) fn base64_len(data: &str) -> usize {
    let n = data
        .bytes()
        .filter(|b| !b.is_ascii_whitespace() && *b != b'=')
        .count();
    n * 3 / 4
}

/// Decodes standard or URL-safe base64, padded or not, ignoring whitespace.
pub(crate) fn base64_decode(text: &str) -> Option<Vec<u8>> {
    let mut bytes = Vec::with_capacity(text.len() / 4 * 3 + 3);
    let (mut acc, mut bits, mut padded) = (0u32, 0u32, false);
    for c in text.bytes() {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' | b'-' => 62,
            b'/' | b'_' => 63,
            b'=' => {
                padded = true;
                continue;
            }
            b' ' | b'\n' | b'\r' | b'\t' => continue,
            _ => return None,
        };
        if padded {
            return None;
        }
        acc = (acc << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            bytes.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    // One character left over is not a byte.
    (bits < 6).then_some(bytes)
}

/// The file extension for an image's MIME type.
pub(crate) fn image_ext(mime: &str) -> String {
    let sub = mime.split_once('/').map_or(mime, |(_, sub)| sub);
    let sub = sub.split([';', '+']).next().unwrap_or_default().trim();
    match sub {
        "jpeg" => "jpg".into(),
        "svg" => "svg".into(),
        s if !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') => {
            s.to_ascii_lowercase()
        }
        _ => "bin".into(),
    }
}

/// A tool's result: a header, each content block, `structured_content` and any other
/// field. `saved[i]` is where image block `i` was written (`--save`), if it was.
pub(crate) fn tool_result(
    tool: &str,
    extension: &str,
    result: &ToolResult,
    saved: &[Option<String>],
) -> Vec<String> {
    let mut out = vec![format!(
        "{tool} ({extension}): {}",
        if result.is_error { "is_error" } else { "ok" }
    )];
    if result.content.is_empty() {
        out.push("  (no content)".into());
    }
    for (i, block) in result.content.iter().enumerate() {
        let kind = block.get("type").and_then(Value::as_str).unwrap_or("?");
        match kind {
            "text" => {
                let text = block.get("text").and_then(Value::as_str).unwrap_or("");
                out.push("  text:".into());
                out.extend(indented(text, "    "));
            }
            "image" => {
                let mime = block
                    .get("mime_type")
                    .and_then(Value::as_str)
                    .unwrap_or("?");
                let data = block.get("data").and_then(Value::as_str).unwrap_or("");
                let mut line = format!("  image: {} ({} bytes)", clean(mime), base64_len(data));
                if let Some(Some(path)) = saved.get(i) {
                    line.push_str(&format!(", saved to {path}"));
                }
                out.push(line);
            }
            other => {
                out.push(format!("  {} block:", clean(other)));
                out.extend(indented(&block.to_string(), "    "));
            }
        }
    }
    for (key, value) in &result.extra {
        out.push(format!("  {}:", clean(key)));
        let text = serde_json::to_string_pretty(value).unwrap_or_default();
        out.extend(indented(&text, "    "));
    }
    out
}

/// A command's response, by its action.
pub(crate) fn command_response(name: &str, extension: &str, r: &CommandResponse) -> Vec<String> {
    let mut out = vec![format!("/{name} ({extension}): {}", clean(&r.action))];
    let field = |out: &mut Vec<String>, label: &str, text: &Option<String>| {
        if let Some(text) = text {
            out.push(format!("  {label}:"));
            out.extend(indented(text, "    "));
        }
    };
    field(
        &mut out,
        "prompt (the text that would be submitted)",
        &r.prompt,
    );
    field(&mut out, "insert (into the input line)", &r.insert);
    field(&mut out, "display", &r.display);
    if let Some(panel) = &r.open_panel {
        out.push(format!("  open_panel {}:", clean(&panel.id)));
        out.extend(
            panel_box(&panel.title, &panel.lines, &panel.footer)
                .into_iter()
                .map(|l| format!("  {l}")),
        );
    }
    field(&mut out, "error", &r.error);
    out
}

/// A panel drawn in a box: the title in the top border, the footer under a rule.
pub(crate) fn panel_box(title: &str, lines: &[String], footer: &str) -> Vec<String> {
    let title = clean(title);
    let lines: Vec<String> = lines.iter().map(|l| clean(l)).collect();
    let footer = clean(footer);
    let width = |s: &str| s.chars().count();
    let inner = lines
        .iter()
        .map(|l| width(l))
        .chain([width(&footer), width(&title) + 2, 10])
        .max()
        .unwrap_or(10);
    let row = |s: &str| format!("│ {s}{} │", " ".repeat(inner - width(s)));
    let mut out = Vec::new();
    let top = if title.is_empty() {
        "─".repeat(inner + 2)
    } else {
        format!("─ {title} {}", "─".repeat(inner - width(&title) - 1))
    };
    out.push(format!("┌{top}┐"));
    out.extend(lines.iter().map(|l| row(l)));
    if !footer.is_empty() {
        out.push(format!("├{}┤", "─".repeat(inner + 2)));
        out.push(row(&footer));
    }
    out.push(format!("└{}┘", "─".repeat(inner + 2)));
    out
}

/// One verdict in words.
fn verdict_words(v: &Verdict) -> String {
    let mut s = if v.block {
        match &v.reason {
            Some(r) => format!("block: {}", clean(r)),
            None => "block".to_string(),
        }
    } else {
        "allow".to_string()
    };
    if let Some(args) = &v.modified_args {
        s.push_str(&format!(", modified_args {args}"));
    }
    if let Some(text) = &v.replace_text {
        s.push_str(&format!(", replace_text {:?}", clean(text)));
    }
    s
}

/// Each interceptor's answer in order, then the chain's verdict.
pub(crate) fn intercept_steps(event: &str, steps: &[InterceptStep], v: &Verdict) -> Vec<String> {
    let mut out = vec![format!("intercept {event}:")];
    if steps.is_empty() {
        out.push("  no interceptor".into());
    }
    for (i, step) in steps.iter().enumerate() {
        let answer = match &step.answer {
            Some(a) => verdict_words(a),
            None => "no answer in time: allow".to_string(),
        };
        out.push(format!("  {}. {}: {answer}", i + 1, step.extension));
    }
    out.push(format!("  verdict: {}", verdict_words(v)));
    out
}

/// An event from the host, as it appears above the prompt.
pub(crate) fn event(e: &HostEvent) -> (Level, Vec<String>) {
    match e {
        HostEvent::Notify { extension, frame } => (
            Level::of(&frame.level),
            indented(&frame.message, "")
                .into_iter()
                .enumerate()
                .map(|(i, l)| {
                    if i == 0 {
                        format!("[{extension}] {}: {l}", clean(&frame.level))
                    } else {
                        format!("  {l}")
                    }
                })
                .collect(),
        ),
        HostEvent::OpenPanel { extension, frame } => {
            let p = &frame.panel;
            let mut out = vec![format!("[{extension}] open_panel {}:", clean(&p.id))];
            out.extend(panel_box(&p.title, &p.lines, &p.footer));
            (Level::Plain, out)
        }
        HostEvent::PanelRender { extension, frame } => {
            let mut out = vec![format!(
                "[{extension}] panel_render {}:",
                clean(&frame.panel_id)
            )];
            out.extend(panel_box(&frame.title, &frame.lines, &frame.footer));
            (Level::Plain, out)
        }
        HostEvent::PanelClose { extension, frame } => (
            Level::Dim,
            vec![format!(
                "[{extension}] panel_close {}",
                clean(&frame.panel_id)
            )],
        ),
        HostEvent::ClearNotes { extension, .. } => {
            (Level::Dim, vec![format!("[{extension}] clear_notes")])
        }
        HostEvent::Submit { extension, frame } => (
            Level::Info,
            vec![format!("[{extension}] submit: {}", clean(&frame.text))],
        ),
        HostEvent::SubmitSlash { extension, frame } => (
            Level::Info,
            vec![format!(
                "[{extension}] submit_slash: {}",
                clean(&frame.text)
            )],
        ),
        HostEvent::ExtensionExited {
            extension, reason, ..
        } => (
            Level::Error,
            vec![format!("[{extension}] exited: {}", clean(reason))],
        ),
        HostEvent::ExtensionRestarted {
            extension,
            attempt,
            delay_ms,
            after,
        } => (
            Level::Warn,
            vec![format!(
                "[{extension}] started again (restart {attempt}, after {delay_ms} ms) after: {}",
                clean(after)
            )],
        ),
        HostEvent::RegistryChanged { extension } => (
            Level::Dim,
            vec![format!("[{extension}] registrations changed")],
        ),
        HostEvent::NotificationsDropped { count } => (
            Level::Warn,
            vec![format!("{count} notifications dropped (not read in time)")],
        ),
    }
}

/// A string field of a serialized value.
fn field(v: &Value, key: &str) -> String {
    match v.get(key) {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Null) | None => String::new(),
        Some(other) => other.to_string(),
    }
}

/// `list`: one line per extension, then its tools and commands, and why it is not
/// running if it is not.
pub(crate) fn extensions(list: &[ExtensionInfo]) -> Vec<String> {
    if list.is_empty() {
        return vec!["no extension".into()];
    }
    let mut out = Vec::new();
    for info in list {
        let v = serde_json::to_value(info).unwrap_or_default();
        out.push(format!(
            "{} {} [{}, {}] {}",
            clean(&info.name),
            field(&v, "version"),
            field(&v, "source"),
            field(&v, "transport"),
            field(&v, "state"),
        ));
        let names = |key: &str| {
            v.get(key)
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(Value::as_str)
                        .map(clean)
                        .collect::<Vec<_>>()
                        .join(", ")
                })
                .unwrap_or_default()
        };
        for key in ["tools", "commands", "shadowed", "events", "intercept"] {
            let n = names(key);
            if !n.is_empty() {
                out.push(format!("  {key}: {n}"));
            }
        }
        let error = field(&v, "error");
        if !error.is_empty() {
            out.push(format!("  why: {}", clean(&error)));
        }
        if let Some(cmd) = v.pointer("/untrusted/command").and_then(Value::as_str) {
            out.push(format!("  to trust it: `trust` here, or {cmd}"));
        }
    }
    out
}

/// `tools`: each tool, its extension, description and schema.
pub(crate) fn tools(list: &[(String, RegisterTool)]) -> Vec<String> {
    if list.is_empty() {
        return vec!["no tool".into()];
    }
    let mut out = Vec::new();
    for (ext, tool) in list {
        out.push(format!(
            "{} ({ext}): {}",
            clean(&tool.name),
            clean(&tool.description)
        ));
        out.push(format!("  schema: {}", tool.schema));
        for (key, value) in &tool.extra {
            out.push(format!("  {}: {value}", clean(key)));
        }
    }
    out
}

/// Help: every verb in a line.
pub(crate) const HELP: &str = "\
/name args                      invoke an extension command; shows its response by action
call <tool> [json]              call a tool (no json: interactively, its fields are listed,
                                optional ones too, and a prompt is pre-filled with them; an
                                optional field left empty is not sent; in a script, {});
                                the arguments are checked against the tool's schema first
call --no-validate <tool> [json] call it with the arguments as they are
intercept tool_call <tool> [json] | intercept turn_start [step] | intercept assistant_message <text>
                                run the interception chain; shows each interceptor's verdict
emit <event> [json]             queue an event (session_start, turn_start, tool_call,
                                assistant_message, turn_end) with its fields for subscribers
turn [tool [json]]              a scripted fake turn: session_start, turn_start, the tool call
                                through interception, assistant_message, turn_end
list                            the extensions, their state, tools and commands
tools                           every tool with its schema
commands                        every slash command
logs <extension> [lines]        the end of an extension's log (default 20 lines)
key <key> [text]                a key to the open panel (e.g. `key enter`, `key char x`)
focus                           on a terminal: each line typed goes to the open panel as keys
                                (empty: enter; a key name: that key; text: its characters);
                                `esc` or ctrl-c leaves, and so does the panel closing
close                           close the open panel
reload                          stop every extension and start them again
grant <extension> [options]     zot ext grant (e.g. `grant weather --all`)
revoke <extension>              zot ext revoke
trust [--yes]                   zot ext trust for the project (then `reload`)
sleep <ms>                      wait, showing events meanwhile
wait reload [seconds]           in `zot ext dev`: wait for the reload (or failed build) after a
                                change (default: at most 300 s)
help                            this
quit                            stop the extensions and leave (also ctrl-d)
ctrl-c cancels a running call (the extension gets tool_cancel); at the prompt it clears the line.
tab completes verbs, /commands, tool, event and extension names; a second tab lists the matches.";

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Map};
    use zot_protocol::{Notify, Panel};

    #[test]
    fn a_start_error_keeps_its_hint_on_a_line_of_its_own() {
        let shown = hanging("cannot start: Permission denied\nhint: chmod +x run.py\x1b[2J");
        assert_eq!(
            shown,
            format!(
                "cannot start: Permission denied\n  hint: chmod +x run.py{}",
                clean("\x1b[2J")
            )
        );
        assert!(!shown.contains('\x1b'), "{shown:?}");
    }

    #[test]
    fn tool_results_show_text_images_errors_and_structured_content() {
        let mut extra = Map::new();
        extra.insert("structured_content".into(), json!({"n": 1}));
        let r = ToolResult {
            id: "1".into(),
            name: None,
            content: vec![
                json!({"type":"text","text":"line 1\nline 2"}),
                json!({"type":"image","mime_type":"image/png","data":"AAAA"}),
            ],
            is_error: true,
            extra,
        };
        assert_eq!(
            tool_result("t", "py", &r, &[None, Some("/tmp/x.png".into())]),
            [
                "t (py): is_error",
                "  text:",
                "    line 1",
                "    line 2",
                "  image: image/png (3 bytes), saved to /tmp/x.png",
                "  structured_content:",
                "    {",
                "      \"n\": 1",
                "    }",
            ]
        );
        let long = "x".repeat(SHOWN_TEXT + 5);
        let r = ToolResult {
            id: "2".into(),
            name: None,
            content: vec![json!({"type":"text","text":long})],
            is_error: false,
            extra: Map::new(),
        };
        let lines = tool_result("t", "py", &r, &[]);
        assert_eq!(
            lines.last().unwrap(),
            &format!("    … ({} bytes in all)", SHOWN_TEXT + 5)
        );
    }

    #[test]
    fn base64_decodes() {
        assert_eq!(base64_decode("aGVsbG8=").unwrap(), b"hello");
        assert_eq!(base64_decode("aGVsbG8").unwrap(), b"hello");
        assert_eq!(base64_len("aGVsbG8="), 5);
        assert!(base64_decode("a*b").is_none());
    }

    #[test]
    fn panels_are_boxed_and_responses_shown_by_action() {
        assert_eq!(
            panel_box("Title", &["a".into(), "longer line".into()], "esc closes"),
            [
                "┌─ Title ─────┐",
                "│ a           │",
                "│ longer line │",
                "├─────────────┤",
                "│ esc closes  │",
                "└─────────────┘",
            ]
        );
        let r = CommandResponse {
            id: "1".into(),
            action: "prompt".into(),
            prompt: Some("say hi".into()),
            insert: None,
            display: None,
            open_panel: None,
            error: None,
            extra: Map::new(),
        };
        assert_eq!(
            command_response("c", "py", &r),
            [
                "/c (py): prompt",
                "  prompt (the text that would be submitted):",
                "    say hi"
            ]
        );
        let r = CommandResponse {
            action: "open_panel".into(),
            prompt: None,
            open_panel: Some(Panel {
                id: "p".into(),
                title: "T".into(),
                lines: vec!["x".into()],
                footer: String::new(),
                extra: Map::new(),
            }),
            ..r
        };
        let lines = command_response("c", "py", &r);
        assert_eq!(lines[1], "  open_panel p:");
        assert_eq!(lines[2], "  ┌─ T ────────┐");
    }

    #[test]
    fn verdicts_are_shown_in_order() {
        let verdict = |block: bool, reason: Option<&str>, args: Option<serde_json::Value>| {
            let mut v = Verdict::default();
            v.block = block;
            v.reason = reason.map(str::to_string);
            v.modified_args = args;
            v
        };
        let step = |extension: &str, answer: Option<Verdict>| {
            let mut s = InterceptStep::default();
            s.extension = extension.into();
            s.answer = answer;
            s
        };
        let steps = vec![
            step("a", Some(verdict(false, None, Some(json!({"x":1}))))),
            step("b", None),
            step("c", Some(verdict(true, Some("no"), None))),
        ];
        let v = verdict(true, Some("no"), None);
        assert_eq!(
            intercept_steps("tool_call", &steps, &v),
            [
                "intercept tool_call:",
                "  1. a: allow, modified_args {\"x\":1}",
                "  2. b: no answer in time: allow",
                "  3. c: block: no",
                "  verdict: block: no",
            ]
        );
    }

    #[test]
    fn events_are_coloured_by_level_and_cleaned() {
        let e = HostEvent::Notify {
            extension: "py".into(),
            frame: Notify {
                level: "warning".into(),
                message: "careful\x1b[2J".into(),
                extra: Map::new(),
            },
        };
        let (level, lines) = event(&e);
        assert_eq!(level, Level::Warn);
        assert_eq!(lines, ["[py] warning: careful\\x1b[2J"]);
        assert_eq!(paint(level, "x", true), "\x1b[33mx\x1b[0m");
        assert_eq!(paint(level, "x", false), "x");
        let e = HostEvent::ExtensionExited {
            extension: "py".into(),
            reason: "exited with status 3".into(),
            code: Some(3),
            signal: None,
            stopped: false,
        };
        assert_eq!(
            event(&e),
            (
                Level::Error,
                vec!["[py] exited: exited with status 3".into()]
            )
        );
    }

    #[test]
    fn base64_in_its_forms() {
        assert_eq!(base64_decode("aGVsbG8=").unwrap(), b"hello");
        assert_eq!(base64_decode("aGVs\nbG8").unwrap(), b"hello");
        assert_eq!(base64_decode("-_-_").unwrap(), [0xfb, 0xff, 0xbf]);
        assert_eq!(base64_decode("").unwrap(), b"");
        assert_eq!(base64_decode("a"), None);
        assert_eq!(base64_decode("aG!s"), None);
        assert_eq!(base64_decode("aG=s"), None);
    }

    #[test]
    fn image_extensions() {
        assert_eq!(image_ext("image/png"), "png");
        assert_eq!(image_ext("image/jpeg"), "jpg");
        assert_eq!(image_ext("image/svg+xml"), "svg");
        assert_eq!(image_ext("weird"), "weird");
        assert_eq!(image_ext("image/../x"), "bin");
    }
}
