//! Scripted sessions: the same requests against different builds of one extension, and
//! their transcripts compared.

use super::*;
use serde_json::{json, Value};

/// One request of a script: type, fields, how many events it causes, and a subset of
/// `data` it must answer with (`null`: no check).
pub struct Step {
    pub ty: &'static str,
    pub fields: Value,
    pub events: usize,
    pub expect: Value,
}

/// The `intercept` request of a bash tool call `id` running `command`.
pub fn bash_call(id: &str, command: &str) -> Value {
    json!({"event": "tool_call", "tool_id": id, "tool_name": "bash",
           "tool_args": {"command": command}})
}

/// `session_start` emitted, delivered to one extension, which answers with one event.
pub fn session_start_step() -> Step {
    step(
        "emit",
        json!({"event": {"event": "session_start"}}),
        1,
        json!({"delivered": 1}),
    )
}

pub fn step(ty: &'static str, fields: Value, events: usize, expect: Value) -> Step {
    Step {
        ty,
        fields,
        events,
        expect,
    }
}

/// Every key of `expect` has the same value in `data`.
pub fn assert_subset(what: &str, data: &Value, expect: &Value) {
    if let Some(obj) = expect.as_object() {
        for (k, v) in obj {
            assert_eq!(&data[k], v, "{what}: field {k} of {data}");
        }
    }
}

/// Runs `steps` (each must succeed at the host level and answer its `expect`), waiting
/// for each step's events; `check` sees them. Then pings the host: every event it wrote
/// before the answer is read by then, and one it should not have written is a stray.
/// Returns the transcript: one line per response and per event (without `_seq`).
pub fn run_steps(
    host: &Host,
    label: &str,
    steps: Vec<Step>,
    check: impl Fn(&str, &Step, &[Value]),
) -> Vec<String> {
    let mut lines = Vec::new();
    for (i, s) in steps.into_iter().enumerate() {
        let r = host.request(s.ty, s.fields.clone());
        let what = format!("{label} step {i} {} {}", s.ty, s.fields);
        assert_eq!(r["success"], true, "{what}: {r}{}", host.diagnostics());
        let data = r.get("data").cloned().unwrap_or(Value::Null);
        assert_subset(&what, &data, &s.expect);
        lines.push(format!("#{i} {} {} -> {data}", s.ty, s.fields));
        let mut events = Vec::new();
        for n in 0..s.events {
            let mut ev = host.wait_event(&format!("event {n} of {what}"), EVENT_TIMEOUT, |_| true);
            ev.as_object_mut().unwrap().remove("_seq");
            events.push(ev);
        }
        check(&what, &s, &events);
        for ev in events {
            lines.push(format!("    {ev}"));
        }
    }
    // Nothing else arrived before the marker.
    assert_eq!(host.ok("ping", json!({}))["pong"], true);
    for mut ev in host.events(|_| true) {
        ev.as_object_mut().unwrap().remove("_seq");
        lines.push(format!("    unexpected {ev}"));
    }
    lines
}

/// Panics, showing where and all of them, unless every transcript equals the first.
/// Every labelled transcript is the same as the first.
#[track_caller]
pub fn assert_all_same<'a>(transcripts: impl IntoIterator<Item = (&'a str, &'a [String])>) {
    let all: Vec<(&str, &[String])> = transcripts.into_iter().collect();
    let (first, others) = all.split_first().expect("a transcript");
    assert_same_transcripts(*first, others);
}

pub fn assert_same_transcripts(first: (&str, &[String]), others: &[(&str, &[String])]) {
    let show = |label: &str, t: &[String]| format!("--- {label}:\n{}\n", t.join("\n"));
    let (base_label, base) = first;
    let mut report = String::new();
    for (label, other) in others {
        if *other != base {
            let at = base
                .iter()
                .zip(other.iter())
                .position(|(a, b)| a != b)
                .unwrap_or(base.len().min(other.len()));
            report.push_str(&format!(
                "{label} differs from {base_label} at line {at}:\n  {base_label}: {}\n  {label}: {}\n",
                base.get(at).map_or("<end>", String::as_str),
                other.get(at).map_or("<end>", String::as_str)
            ));
        }
    }
    if !report.is_empty() {
        let all: String = std::iter::once(first)
            .chain(others.iter().copied())
            .map(|(l, t)| show(l, t))
            .collect();
        panic!("transcripts differ:\n{report}{all}");
    }
    println!(
        "{}",
        show(&format!("transcript (all {})", others.len() + 1), base)
    );
}
