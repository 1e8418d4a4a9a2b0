//! The helper processes the bench starts by running itself again with a marker argument:
//!
//! * `--relay PROGRAM [ARGS…]`: the two-hop floor's middle process. It starts PROGRAM and
//!   copies bytes both ways unchanged, like `cat` (stdin → its stdin, its stdout →
//!   stdout, one thread each, each read written and flushed at once): the least any
//!   process between a client and an extension costs.
//! * `--wasmtime-compile IN OUT`: what `wasmtime compile IN -o OUT` does, with zot's
//!   engine (the same flags): compiles the component, serialises it, writes the file.
//! * `--deaf`: an extension that says `hello`, subscribes to `turn_start`, says `ready`,
//!   and then never reads its stdin (the event fan-out's slow subscriber).

use std::ffi::OsString;
use std::io::{Read, Write};
use std::process::{Command, ExitCode, Stdio};

/// Plays the role this process was started for, if any; the exit code for `main`.
pub fn if_asked() -> Option<ExitCode> {
    let mut args = std::env::args_os().skip(1);
    match args.next()?.to_str()? {
        "--relay" => Some(relay(args.next().expect("--relay PROGRAM"), args.collect())),
        "--deaf" => Some(deaf()),
        "--wasmtime-compile" => {
            let input = args.next().expect("--wasmtime-compile IN OUT");
            Some(wasmtime_compile(input, args.next().expect("OUT")))
        }
        _ => None,
    }
}

fn relay(program: OsString, args: Vec<OsString>) -> ExitCode {
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut to_child = child.stdin.take().unwrap();
    let mut from_child = child.stdout.take().unwrap();
    // A buffer larger than stdin's own (8 KiB) reads past it, straight from the pipe.
    std::thread::spawn(move || copy(&mut std::io::stdin().lock(), &mut to_child));
    copy(&mut from_child, &mut std::io::stdout().lock());
    let _ = child.wait();
    ExitCode::SUCCESS
}

/// Copies until the end of `from` or an error, flushing after every read.
fn copy(from: &mut impl Read, to: &mut impl Write) {
    let mut buf = vec![0; 64 * 1024];
    while let Ok(n @ 1..) = from.read(&mut buf) {
        if to.write_all(&buf[..n]).and_then(|()| to.flush()).is_err() {
            return;
        }
    }
}

fn wasmtime_compile(input: OsString, out: OsString) -> ExitCode {
    let engine = zot_host::manage::component::engine().unwrap();
    let bytes = std::fs::read(input).unwrap();
    let artifact = wasmtime::component::Component::new(engine, &bytes)
        .unwrap()
        .serialize()
        .unwrap();
    std::fs::write(out, artifact).unwrap();
    ExitCode::SUCCESS
}

fn deaf() -> ExitCode {
    let frames = [
        r#"{"type":"hello","name":"deaf","version":"0.1.0","capabilities":["events"]}"#,
        r#"{"type":"subscribe","events":["turn_start"]}"#,
        r#"{"type":"ready"}"#,
    ];
    let mut out = std::io::stdout().lock();
    for frame in frames {
        writeln!(out, "{frame}").unwrap();
    }
    out.flush().unwrap();
    // Until the host stops it, or (should the bench die first) its parent is gone.
    let parent = std::os::unix::process::parent_id();
    while std::os::unix::process::parent_id() == parent {
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    ExitCode::SUCCESS
}
