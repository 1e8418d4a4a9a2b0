//! The test guest as a classic stdio extension: frames are lines on stdin and stdout.
//! Built for wasm32-wasip2 it is a WASI command component; built natively, an ordinary
//! subprocess extension running the very same [`Scenario`] (with `--plain`,
//! [`Scenario::plain`]).

use scenario::Scenario;
use std::io::{BufRead, Write};

fn send(frame: String) {
    let mut out = std::io::stdout().lock();
    let sent = out
        .write_all(frame.as_bytes())
        .and_then(|()| out.write_all(b"\n"))
        .and_then(|()| out.flush());
    if sent.is_err() {
        // The host closed our stdout: nothing left to do.
        std::process::exit(0);
    }
}

fn main() {
    eprintln!("command started");
    // `--plain` (natively: a component gets no arguments): no subscriptions.
    let mut scenario = if std::env::args().any(|a| a == "--plain") {
        Scenario::plain()
    } else {
        Scenario::new()
    };
    scenario.start(&mut send);

    let mut stdin = std::io::stdin().lock();
    let mut line = Vec::new();
    while !scenario.is_shut_down() {
        line.clear();
        match stdin.read_until(b'\n', &mut line) {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        while matches!(line.last(), Some(b'\n' | b'\r')) {
            line.pop();
        }
        match std::str::from_utf8(&line) {
            Ok(frame) if !frame.trim().is_empty() => scenario.handle(frame, &mut send),
            Ok(_) => {}
            Err(e) => eprintln!("command: skipping a line that is not UTF-8: {e}"),
        }
    }
}
