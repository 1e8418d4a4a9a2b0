//! One shell line as a typed verb: a pure parser (no host, no I/O).

use serde_json::{Map, Value};

/// The events `emit` and `intercept` know by name (others are accepted as given).
pub(crate) const EVENTS: &[&str] = &[
    "session_start",
    "turn_start",
    "tool_call",
    "assistant_message",
    "turn_end",
];

/// The events extensions intercept.
pub(crate) const INTERCEPTED: &[&str] = &["tool_call", "turn_start", "assistant_message"];

/// Every verb, for `help` and completion (slash commands are `/name`).
pub(crate) const VERBS: &[&str] = &[
    "call",
    "intercept",
    "emit",
    "turn",
    "list",
    "tools",
    "commands",
    "logs",
    "key",
    "focus",
    "close",
    "reload",
    "grant",
    "revoke",
    "trust",
    "sleep",
    "wait",
    "help",
    "quit",
];

/// One line of the shell, parsed.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Verb {
    /// `/name args`: invoke an extension command.
    Command {
        name: String,
        args: String,
    },
    /// `call [--no-validate] <tool> [json]`: `args` is `None` when no JSON was given;
    /// `validate` is whether they are checked against the tool's schema first.
    Call {
        tool: String,
        args: Option<Value>,
        validate: bool,
    },
    /// `intercept <event> …`: run the interception chain.
    Intercept {
        event: String,
        fields: Map<String, Value>,
    },
    /// `emit <event> [json]`.
    Emit {
        event: String,
        fields: Map<String, Value>,
    },
    /// `turn [tool [json]]`: a scripted fake turn.
    Turn {
        tool: Option<String>,
        args: Value,
    },
    List,
    Tools,
    Commands,
    /// `logs <name> [lines]`.
    Logs {
        name: String,
        lines: usize,
    },
    /// `key <key> [text]`: a key to the most recently opened panel.
    Key {
        key: String,
        text: String,
    },
    /// `focus`: on a terminal, lines typed go to the open panel as keys.
    Focus,
    /// `close`: close the most recently opened panel.
    Close,
    Reload,
    /// `grant …`, `revoke …`, `trust …`: the words after the verb, passed to `zot ext`.
    Grant(Vec<String>),
    Revoke(Vec<String>),
    Trust(Vec<String>),
    /// `sleep <ms>`: wait, showing events meanwhile (a script leaves time to something).
    Sleep(u64),
    /// `wait reload [seconds]`: in `zot ext dev`, wait for the watcher's next reload (or
    /// failed build), at most this long.
    WaitReload(u64),
    Help,
    Quit,
}

/// How long `wait reload` waits by default, in seconds (a Rust crate's rebuild).
pub(crate) const RELOAD_WAIT_SECS: u64 = 300;

/// The default number of log lines `logs` shows.
pub(crate) const LOG_LINES: usize = 20;

/// Parses one line: `Ok(None)` for a blank line or a `#` comment.
pub(crate) fn parse(line: &str) -> Result<Option<Verb>, String> {
    let line = line.trim();
    if line.is_empty() || line.starts_with('#') {
        return Ok(None);
    }
    if let Some(rest) = line.strip_prefix('/') {
        let (name, args) = split_word(rest);
        if name.is_empty() {
            return Err("a slash command needs a name: /name args".into());
        }
        return Ok(Some(Verb::Command {
            name: name.to_string(),
            args: args.to_string(),
        }));
    }
    let (verb, rest) = split_word(line);
    let none = |v: Verb| {
        if rest.is_empty() {
            Ok(Some(v))
        } else {
            Err(format!("{verb} takes no arguments"))
        }
    };
    match verb {
        "call" => parse_call(rest).map(Some),
        "intercept" => parse_intercept(rest).map(Some),
        "emit" => {
            let (event, json) = split_word(rest);
            if event.is_empty() {
                return Err("usage: emit <event> [json object of its fields]".into());
            }
            let fields = object_or_empty(json, "the event's fields")?;
            Ok(Some(Verb::Emit {
                event: event.to_string(),
                fields,
            }))
        }
        "turn" => {
            let (tool, json) = split_word(rest);
            let args = Value::Object(object_or_empty(json, "the tool's arguments")?);
            Ok(Some(Verb::Turn {
                tool: (!tool.is_empty()).then(|| tool.to_string()),
                args,
            }))
        }
        "list" => none(Verb::List),
        "tools" => none(Verb::Tools),
        "commands" => none(Verb::Commands),
        "logs" => parse_logs(rest).map(Some),
        "key" => {
            let (key, text) = split_word(rest);
            if key.is_empty() {
                return Err("usage: key <key> [text]  (e.g. key enter, key char x)".into());
            }
            Ok(Some(Verb::Key {
                key: key.to_string(),
                text: text.to_string(),
            }))
        }
        "close" => none(Verb::Close),
        "focus" => none(Verb::Focus),
        "reload" => none(Verb::Reload),
        "sleep" => match rest.parse() {
            Ok(ms) => Ok(Some(Verb::Sleep(ms))),
            Err(_) => Err("usage: sleep <milliseconds>".into()),
        },
        "wait" => {
            let usage = || "usage: wait reload [seconds]".to_string();
            let (what, secs) = split_word(rest);
            if what != "reload" {
                return Err(usage());
            }
            match secs.trim() {
                "" => Ok(Some(Verb::WaitReload(RELOAD_WAIT_SECS))),
                secs => secs
                    .parse()
                    .map(|s| Some(Verb::WaitReload(s)))
                    .map_err(|_| usage()),
            }
        }
        "grant" | "revoke" => {
            let words = words(rest);
            if words.is_empty() {
                return Err(format!(
                    "usage: {verb} <extension> [options of zot ext {verb}]"
                ));
            }
            Ok(Some(if verb == "grant" {
                Verb::Grant(words)
            } else {
                Verb::Revoke(words)
            }))
        }
        "trust" => Ok(Some(Verb::Trust(words(rest)))),
        "help" | "?" => Ok(Some(Verb::Help)),
        "quit" | "exit" => none(Verb::Quit),
        _ => Err(format!("unknown verb {verb:?}: `help` lists them")),
    }
}

/// `call [--no-validate] <tool> [json object]`.
fn parse_call(rest: &str) -> Result<Verb, String> {
    let (tool, json) = split_word(rest);
    let (validate, (tool, json)) = match tool {
        "--no-validate" => (false, split_word(json)),
        _ => (true, (tool, json)),
    };
    if tool.is_empty() {
        return Err("usage: call [--no-validate] <tool> [json object]".into());
    }
    let args = if json.is_empty() {
        None
    } else {
        Some(Value::Object(object(json, "the tool's arguments")?))
    };
    Ok(Verb::Call {
        tool: tool.to_string(),
        args,
        validate,
    })
}

/// `intercept <event> …`: a `tool_call`, `turn_start` or `assistant_message` in its own
/// words, any other event with a JSON object of its fields.
fn parse_intercept(rest: &str) -> Result<Verb, String> {
    let (event, rest) = split_word(rest);
    let fields = match event {
        "" => {
            return Err(
                "usage: intercept tool_call <tool> [json] | intercept turn_start [step] | \
             intercept assistant_message <text>"
                    .into(),
            )
        }
        "tool_call" => {
            let (tool, json) = split_word(rest);
            if tool.is_empty() {
                return Err("usage: intercept tool_call <tool> [json]".into());
            }
            let args = object_or_empty(json, "the tool's arguments")?;
            fields([
                ("tool_id", Value::from("shell-1")),
                ("tool_name", Value::from(tool)),
                ("tool_args", Value::Object(args)),
            ])
        }
        "turn_start" => {
            let step = if rest.is_empty() {
                1
            } else {
                rest.parse::<u64>()
                    .map_err(|_| format!("intercept turn_start: {rest:?} is not a step number"))?
            };
            fields([("step", Value::from(step))])
        }
        "assistant_message" => fields([("text", Value::from(rest))]),
        _ => object_or_empty(rest, "the event's fields")?,
    };
    Ok(Verb::Intercept {
        event: event.to_string(),
        fields,
    })
}

/// `logs <extension> [lines]`.
fn parse_logs(rest: &str) -> Result<Verb, String> {
    let (name, n) = split_word(rest);
    if name.is_empty() {
        return Err("usage: logs <extension> [lines]".into());
    }
    let lines = if n.is_empty() {
        LOG_LINES
    } else {
        n.parse()
            .map_err(|_| format!("logs: {n:?} is not a number of lines"))?
    };
    Ok(Verb::Logs {
        name: name.to_string(),
        lines,
    })
}

/// The first word and the rest, both trimmed.
fn split_word(s: &str) -> (&str, &str) {
    let s = s.trim();
    match s.split_once(char::is_whitespace) {
        Some((first, rest)) => (first, rest.trim()),
        None => (s, ""),
    }
}

fn words(s: &str) -> Vec<String> {
    s.split_whitespace().map(str::to_string).collect()
}

fn fields<const N: usize>(items: [(&str, Value); N]) -> Map<String, Value> {
    items.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
}

/// `json` as a JSON object, or why not.
pub(crate) fn object(json: &str, what: &str) -> Result<Map<String, Value>, String> {
    match serde_json::from_str::<Value>(json) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(_) => Err(format!("{what} must be a JSON object, not {json}")),
        Err(e) => Err(format!("{what}: not JSON: {e}")),
    }
}

/// [`object`], where no text at all is no fields (`{}`).
fn object_or_empty(json: &str, what: &str) -> Result<Map<String, Value>, String> {
    match json {
        "" => Ok(Map::new()),
        _ => object(json, what),
    }
}

/// What to offer for tab completion of `line` (the text before the cursor): where the
/// word being completed starts, and the candidates (each ends with a space).
pub(crate) fn complete(
    line: &str,
    tools: &[String],
    commands: &[String],
    extensions: &[String],
) -> (usize, Vec<String>) {
    let start = line.rfind(char::is_whitespace).map_or(0, |i| {
        i + line[i..].chars().next().map_or(1, char::len_utf8)
    });
    let word = &line[start..];
    let before: Vec<&str> = line[..start].split_whitespace().collect();
    let pool: Vec<String> = match before.as_slice() {
        [] if word.starts_with('/') => commands.iter().map(|c| format!("/{c}")).collect(),
        [] => VERBS.iter().map(|v| v.to_string()).collect(),
        ["call"] | ["turn"] | ["intercept", "tool_call"] => tools.to_vec(),
        ["intercept"] => INTERCEPTED.iter().map(|s| s.to_string()).collect(),
        ["emit"] => EVENTS.iter().map(|s| s.to_string()).collect(),
        ["logs"] | ["grant"] | ["revoke"] => extensions.to_vec(),
        _ => Vec::new(),
    };
    let mut out: Vec<String> = pool
        .into_iter()
        .filter(|c| c.starts_with(word))
        .map(|c| format!("{c} "))
        .collect();
    out.sort();
    out.dedup();
    (start, out)
}

/// The keys one line typed in focus mode stands for: an empty line is `enter`; a key
/// name (`enter`, `escape`/`esc`, `tab`, `backspace`, `up`, `down`, `left`, `right`,
/// `home`, `end`, `pageup`, `pagedown`, `delete`) is that key; any other text is one
/// `char` key per character. As (key, text) pairs.
pub(crate) fn focus_keys(line: &str) -> Vec<(String, String)> {
    const NAMED: &[&str] = &[
        "enter",
        "escape",
        "tab",
        "backspace",
        "up",
        "down",
        "left",
        "right",
        "home",
        "end",
        "pageup",
        "pagedown",
        "delete",
    ];
    let word = line.trim();
    if word.is_empty() {
        return vec![("enter".into(), String::new())];
    }
    let word = if word == "esc" { "escape" } else { word };
    if NAMED.contains(&word) {
        return vec![(word.to_string(), String::new())];
    }
    line.chars()
        .map(|c| ("char".to_string(), c.to_string()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ok(line: &str) -> Verb {
        parse(line).unwrap().unwrap()
    }

    #[test]
    fn lines_parse_to_verbs() {
        assert_eq!(parse("  ").unwrap(), None);
        assert_eq!(parse("# a comment").unwrap(), None);
        assert_eq!(
            ok("/py-echo hello  world"),
            Verb::Command {
                name: "py-echo".into(),
                args: "hello  world".into()
            }
        );
        assert_eq!(
            ok("call echo"),
            Verb::Call {
                tool: "echo".into(),
                args: None,
                validate: true
            }
        );
        assert_eq!(
            ok(r#"call echo {"a": [1, 2]}"#),
            Verb::Call {
                tool: "echo".into(),
                args: Some(json!({"a": [1, 2]})),
                validate: true
            }
        );
        assert_eq!(
            ok(r#"call --no-validate echo {"a": 1}"#),
            Verb::Call {
                tool: "echo".into(),
                args: Some(json!({"a": 1})),
                validate: false
            }
        );
        let Verb::Intercept { event, fields } = ok(r#"intercept tool_call bash {"command":"ls"}"#)
        else {
            panic!()
        };
        assert_eq!(event, "tool_call");
        assert_eq!(
            Value::Object(fields),
            json!({"tool_id":"shell-1","tool_name":"bash","tool_args":{"command":"ls"}})
        );
        let Verb::Intercept { fields, .. } = ok("intercept turn_start") else {
            panic!()
        };
        assert_eq!(Value::Object(fields), json!({"step": 1}));
        let Verb::Intercept { fields, .. } = ok("intercept assistant_message a secret plan") else {
            panic!()
        };
        assert_eq!(Value::Object(fields), json!({"text": "a secret plan"}));
        assert_eq!(
            ok(r#"emit turn_end {"stop":"end_turn"}"#),
            Verb::Emit {
                event: "turn_end".into(),
                fields: json!({"stop":"end_turn"}).as_object().unwrap().clone()
            }
        );
        assert_eq!(
            ok("turn"),
            Verb::Turn {
                tool: None,
                args: json!({})
            }
        );
        assert_eq!(
            ok(r#"turn echo {"x":1}"#),
            Verb::Turn {
                tool: Some("echo".into()),
                args: json!({"x":1})
            }
        );
        assert_eq!(
            ok("logs py"),
            Verb::Logs {
                name: "py".into(),
                lines: LOG_LINES
            }
        );
        assert_eq!(
            ok("logs py 5"),
            Verb::Logs {
                name: "py".into(),
                lines: 5
            }
        );
        assert_eq!(
            ok("key char x"),
            Verb::Key {
                key: "char".into(),
                text: "x".into()
            }
        );
        assert_eq!(
            ok("grant w --all"),
            Verb::Grant(vec!["w".into(), "--all".into()])
        );
        assert_eq!(ok("revoke w"), Verb::Revoke(vec!["w".into()]));
        assert_eq!(ok("trust"), Verb::Trust(vec![]));
        assert_eq!(ok("sleep 300"), Verb::Sleep(300));
        assert_eq!(ok("wait reload"), Verb::WaitReload(RELOAD_WAIT_SECS));
        assert_eq!(ok("wait reload 20"), Verb::WaitReload(20));
        for bad in ["wait", "wait ready", "wait reload soon"] {
            assert_eq!(
                parse(bad),
                Err("usage: wait reload [seconds]".to_string()),
                "{bad}"
            );
        }
        for (line, verb) in [
            ("list", Verb::List),
            ("tools", Verb::Tools),
            ("commands", Verb::Commands),
            ("close", Verb::Close),
            ("focus", Verb::Focus),
            ("reload", Verb::Reload),
            ("help", Verb::Help),
            ("quit", Verb::Quit),
            ("exit", Verb::Quit),
        ] {
            assert_eq!(ok(line), verb);
        }
    }

    #[test]
    fn no_json_is_no_fields_and_bad_json_says_whose() {
        let fields = |line: &str| match parse(line).unwrap().unwrap() {
            Verb::Intercept { fields, .. } | Verb::Emit { fields, .. } => Value::Object(fields),
            other => panic!("{other:?}"),
        };
        assert_eq!(fields("emit session_start"), json!({}));
        assert_eq!(fields("intercept turn_end"), json!({}));
        assert_eq!(fields(r#"intercept turn_end {"a":1}"#), json!({"a": 1}));
        assert_eq!(
            fields("intercept tool_call bash"),
            json!({"tool_id":"shell-1","tool_name":"bash","tool_args":{}})
        );
        let err = |line: &str| parse(line).unwrap_err();
        assert_eq!(
            err("emit e [1]"),
            "the event's fields must be a JSON object, not [1]"
        );
        assert!(err("intercept e {bad").starts_with("the event's fields: not JSON"));
        assert!(err("turn echo {bad").starts_with("the tool's arguments: not JSON"));
        assert!(err("intercept tool_call x 1").starts_with("the tool's arguments must be"));
    }

    #[test]
    fn bad_lines_say_why() {
        let err = |line: &str| parse(line).unwrap_err();
        assert_eq!(
            err("teleport"),
            "unknown verb \"teleport\": `help` lists them"
        );
        assert!(err("call").starts_with("usage: call"));
        assert!(err("call echo {bad").starts_with("the tool's arguments: not JSON"));
        assert_eq!(
            err("call echo [1]"),
            "the tool's arguments must be a JSON object, not [1]"
        );
        assert!(err("intercept turn_start x").contains("not a step number"));
        assert_eq!(err("list all"), "list takes no arguments");
        assert!(err("logs").starts_with("usage: logs"));
        assert!(err("/").starts_with("a slash command needs a name"));
        assert!(err("grant").starts_with("usage: grant"));
        assert!(err("sleep").starts_with("usage: sleep"));
        assert!(err("sleep soon").starts_with("usage: sleep"));
    }

    #[test]
    fn focus_lines_are_keys() {
        let k = |k: &str, t: &str| (k.to_string(), t.to_string());
        assert_eq!(focus_keys(""), [k("enter", "")]);
        assert_eq!(focus_keys("esc"), [k("escape", "")]);
        assert_eq!(focus_keys(" down "), [k("down", "")]);
        assert_eq!(focus_keys("hi"), [k("char", "h"), k("char", "i")]);
    }

    #[test]
    fn completion_offers_verbs_commands_tools_and_events() {
        let tools = vec!["echo".to_string(), "sleep".into(), "spin".into()];
        let commands = vec!["py-echo".to_string(), "guest-cmd".into()];
        let exts = vec!["py".to_string(), "guest".into()];
        let c = |line: &str| complete(line, &tools, &commands, &exts);
        assert_eq!(c("ca"), (0, vec!["call ".to_string()]));
        assert_eq!(c("call ec"), (5, vec!["echo ".to_string()]));
        assert_eq!(c("call s"), (5, vec!["sleep ".to_string(), "spin ".into()]));
        assert_eq!(c("/py"), (0, vec!["/py-echo ".to_string()]));
        assert_eq!(
            c("intercept t"),
            (10, vec!["tool_call ".to_string(), "turn_start ".into()])
        );
        assert_eq!(c("intercept tool_call sp"), (20, vec!["spin ".to_string()]));
        assert_eq!(c("emit turn_e"), (5, vec!["turn_end ".to_string()]));
        assert_eq!(c("logs g"), (5, vec!["guest ".to_string()]));
        assert_eq!(c("call echo {"), (10, vec![]));
        assert_eq!(c("t").1, vec!["tools ", "trust ", "turn "]);
    }
}
