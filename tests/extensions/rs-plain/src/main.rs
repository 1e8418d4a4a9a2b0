//! rs-plain: a zot extension in Rust with the standard library only. One tool, `rs_count`,
//! counts its calls in a file of the data dir `hello_ack` names (`/data` in the sandbox)
//! and says `call <n>`. Frames are read line by line and answered in turn.

use std::io::{BufRead, Write};

/// The string value of `"key":"…"` in the compact JSON line `line` (no escapes in it).
fn field<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    let start = line.find(&format!("\"{key}\":\""))? + key.len() + 4;
    let len = line[start..].find('"')?;
    Some(&line[start..start + len])
}

fn count(data_dir: &str) -> String {
    let path = std::path::Path::new(data_dir).join("count");
    let n = std::fs::read_to_string(&path)
        .ok()
        .and_then(|s| s.trim().parse::<u64>().ok())
        .unwrap_or(0)
        + 1;
    match std::fs::write(&path, n.to_string()) {
        Ok(()) => format!("call {n}"),
        Err(e) => format!("cannot write: {e}"),
    }
}

fn main() {
    let mut out = std::io::stdout().lock();
    let hello = concat!(
        r#"{"type":"hello","name":"rs-plain","version":"1.0.0","capabilities":["tools"]}"#,
        "\n",
        r#"{"type":"register_tool","name":"rs_count","description":"Count the calls","schema":{"type":"object"}}"#,
        "\n",
        r#"{"type":"ready"}"#,
        "\n"
    );
    out.write_all(hello.as_bytes()).unwrap();
    out.flush().unwrap();
    let mut data_dir = String::new();
    for line in std::io::stdin().lock().lines() {
        let Ok(line) = line else { break };
        match field(&line, "type") {
            Some("hello_ack") => data_dir = field(&line, "data_dir").unwrap_or("").to_string(),
            Some("tool_call") => {
                let id = field(&line, "id").unwrap_or("");
                let text = count(&data_dir);
                let reply = format!(
                    r#"{{"type":"tool_result","id":"{id}","content":[{{"type":"text","text":"{text}"}}]}}"#
                );
                writeln!(out, "{reply}").unwrap();
                out.flush().unwrap();
            }
            Some("shutdown") => {
                writeln!(out, r#"{{"type":"shutdown_ack"}}"#).unwrap();
                return;
            }
            _ => {}
        }
    }
}
