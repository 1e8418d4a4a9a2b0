//! `guard`: an audit trail of the session and a veto on dangerous shell commands.
//!
//! - Every lifecycle event is appended to `audit.log` in the extension's data directory,
//!   one JSON object per line (`{"event": …, …its fields}`), and so is every verdict.
//! - Every `bash` tool call is checked before it runs: `rm` with both `-r` and `-f`,
//!   `sudo`, `dd` writing to an absolute path (`of=/…`), `mkfs`, the classic fork bomb and
//!   `chmod -R 777` are blocked with a reason the model sees. Everything else, and every
//!   other tool, is allowed with its arguments untouched.
//! - `/guard` shows how many events were audited and calls blocked.

use serde_json::{json, Map, Value};
use std::fs::OpenOptions;
use std::io::Write;
use zot_ext::{Ctx, Extension, Response, Verdict, EVENTS};

const AUDIT: &str = "audit.log";

fn main() {
    let mut ext = Extension::new("guard", env!("CARGO_PKG_VERSION"));
    for event in EVENTS {
        ext = ext.on(event, |ctx, event| {
            let mut line = Map::new();
            line.insert("event".into(), json!(event.name));
            line.extend(event.fields.clone());
            audit(ctx, Value::Object(line));
        });
    }
    ext.intercept_tool_call(|ctx, call| {
        let verdict = match (call.tool_name.as_str(), call.arg("command")) {
            ("bash", Some(command)) => match danger(command) {
                Some(why) => Verdict::block(format!("guard: refused to run {why}")),
                None => Verdict::Allow,
            },
            _ => Verdict::Allow,
        };
        let (decision, reason) = match &verdict {
            Verdict::Block(reason) => ("block", Some(reason.as_str())),
            _ => ("allow", None),
        };
        audit(
            ctx,
            json!({"verdict": decision, "tool_id": call.tool_id, "tool_name": call.tool_name,
                   "reason": reason}),
        );
        verdict
    })
    .command("guard", "Show what the guard has audited", |ctx, _| {
        let log = std::fs::read_to_string(ctx.data_dir().join(AUDIT)).unwrap_or_default();
        let lines: Vec<Value> = log
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect();
        let events = lines.iter().filter(|l| l.get("event").is_some()).count();
        let blocked = lines.iter().filter(|l| l["verdict"] == "block").count();
        Response::display(format!(
            "guard: {events} events audited, {blocked} tool calls blocked"
        ))
    })
    .run();
}

/// Appends one line to the audit log; a failure is logged, never fatal.
fn audit(ctx: &mut Ctx, line: Value) {
    let path = ctx.data_dir().join(AUDIT);
    let written = OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .and_then(|mut file| writeln!(file, "{line}"));
    if let Err(e) = written {
        ctx.log(format!("guard: cannot write {}: {e}", path.display()));
    }
}

/// Why `command` is dangerous, or `None`.
fn danger(command: &str) -> Option<&'static str> {
    let squeezed: String = command.chars().filter(|c| !c.is_whitespace()).collect();
    if squeezed.contains(":(){:|:&};:") {
        return Some("a fork bomb");
    }
    // Each simple command separately: `ls; sudo x` is as bad as `sudo x`.
    for words in simple_commands(command) {
        let Some(program) = words.first().map(|w| w.rsplit('/').next().unwrap_or(w)) else {
            continue;
        };
        let args = &words[1..];
        let flag = |short: char, long: &str| {
            args.iter().any(|a| {
                *a == long || (a.starts_with('-') && !a.starts_with("--") && a.contains(short))
            })
        };
        match program {
            "sudo" | "doas" => return Some("a command as root (sudo)"),
            "rm" if (flag('r', "--recursive") || flag('R', "--recursive"))
                && flag('f', "--force") =>
            {
                return Some("rm -rf")
            }
            "dd" if args.iter().any(|a| a.starts_with("of=/")) => {
                return Some("dd writing to an absolute path")
            }
            p if p == "mkfs" || p.starts_with("mkfs.") => return Some("mkfs"),
            "chmod" if flag('R', "--recursive") && args.contains(&"777") => {
                return Some("chmod -R 777")
            }
            _ => {}
        }
    }
    None
}

/// The words of each simple command in `command`, split at `;`, `&`, `|` and newlines.
fn simple_commands(command: &str) -> Vec<Vec<&str>> {
    command
        .split([';', '&', '|', '\n', '(', ')'])
        .map(|part| part.split_whitespace().collect::<Vec<_>>())
        .filter(|words| !words.is_empty())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::danger;

    #[test]
    fn dangerous_commands_are_refused() {
        for command in [
            "rm -rf /",
            "rm -fr ~",
            "rm -r -f build",
            "rm --recursive --force x",
            "/bin/rm -Rf x",
            "ls && sudo reboot",
            "sudo -i",
            "dd if=/dev/zero of=/dev/sda bs=1M",
            "mkfs.ext4 /dev/sdb1",
            "mkfs -t ext4 /dev/sdb1",
            ":(){ :|:& };:",
            "chmod -R 777 /",
            "cd / ; chmod 777 -R .",
        ] {
            assert!(danger(command).is_some(), "{command} should be refused");
        }
    }

    #[test]
    fn ordinary_commands_pass() {
        for command in [
            "ls -la",
            "rm -r build",
            "rm -f file.txt",
            "cargo build --release",
            "dd if=in.img of=out.img",
            "chmod 644 README.md",
            "chmod -R 755 dist",
            "echo pseudo",
            "git commit -m 'fix'",
        ] {
            assert_eq!(danger(command), None, "{command} should pass");
        }
    }
}
