//! The `zot-host` library as an embedding agent uses it: calls from one task reach every
//! extension in the order they were made; an agent's own tests play an extension in
//! memory (`test-support`).

use crate::common::*;
use serde_json::{json, Map, Value};
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;
use zot_host::launcher::Scripted;
use zot_host::transport::memory::Peer;
use zot_host::{
    terminal_text, CallError, CallOptions, ExtState, ExtensionInfo, Host, HostConfig, HostEvent,
    InterceptStep, LoadError, LoadReport, LoadWarning, Permission, ReadyBy, RestartInfo,
    RestartPolicy, RunGrant, SandboxView, Source, Status, Timeouts, TransportKind, Untrusted,
    UntrustedReport, Verdict, ZotHome,
};
use zot_protocol::{Event, PanelKey};

/// A host's configuration in `scratch` (its `home` the ZOT_HOME, itself the project)
/// loading only `exts`, with a ready wait long enough for Python on a loaded machine.
fn only(scratch: &TempDir, exts: Vec<std::path::PathBuf>) -> HostConfig {
    let mut config = HostConfig::new(
        ZotHome::new(scratch.path().join("home")),
        scratch.path().to_path_buf(),
    );
    config.explicit = exts;
    config.installed = false;
    config.timeouts.ready = READY_WAIT;
    config
}

/// How long `load` waits for the Python extensions to say `ready`.
const READY_WAIT: Duration = Duration::from_secs(30);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_and_panel_keys_from_one_task_arrive_in_the_order_sent() {
    let scratch = TempDir::new("library-order");
    let ext = write_manifest(
        &scratch.path().join("exts/ordered"),
        &py_manifest("ordered", &["--events", "turn_start"]),
    );
    // The ready wait is long enough for Python on a loaded CI machine: the subject
    // here is order, not start time (the wait ends at `ready`).
    let config = only(&scratch, vec![ext]);
    let (host, mut notes) = Host::new(config);
    let report = host.load().await;
    assert_eq!(report.ready, ["ordered"], "{report:?}");

    // The hello_ack travels in the same queue and may still wait there after `ready`: a
    // first event, echoed, shows everything before it went through, so the queue is
    // empty when the test fills it.
    let warm = Event {
        id: None,
        event: "turn_start".into(),
        fields: json!({"step": "warm"}).as_object().unwrap().clone(),
    };
    assert_eq!(host.emit(&warm), 1);
    loop {
        let note = tokio::time::timeout(EVENT_TIMEOUT, notes.recv())
            .await
            .expect("the first event is echoed")
            .expect("the host is alive");
        if let HostEvent::Notify { frame, .. } = note {
            if frame.message.contains("\"warm\"") {
                break;
            }
        }
    }

    // As many as the extension's queue holds: sent in one go, none waits for room.
    let mut expected = Vec::new();
    for i in 0..zot_host::EVENT_QUEUE as u64 {
        if i % 4 == 3 {
            let key = PanelKey {
                panel_id: "p".into(),
                key: "char".into(),
                text: i.to_string(),
                extra: Map::new(),
            };
            host.panel_key("ordered", key).unwrap();
            expected.push(format!("panel_key {i}"));
        } else {
            let fields = json!({"step": i}).as_object().unwrap().clone();
            let event = Event {
                id: None,
                event: "turn_start".into(),
                fields,
            };
            assert_eq!(host.emit(&event), 1);
            expected.push(format!("event {i}"));
        }
    }
    let mut got = Vec::new();
    while got.len() < expected.len() {
        let note = tokio::time::timeout(EVENT_TIMEOUT, notes.recv())
            .await
            .unwrap_or_else(|_| panic!("only {} of {} arrived", got.len(), expected.len()))
            .expect("the host is alive");
        let HostEvent::Notify { frame, .. } = note else {
            continue;
        };
        let Some((kind, json)) = frame.message.split_once(' ') else {
            continue;
        };
        let frame: Value = match serde_json::from_str(json) {
            Ok(v) => v,
            Err(_) => continue, // "started pid=…"
        };
        match kind {
            "panel_key" => got.push(format!("panel_key {}", frame["text"].as_str().unwrap())),
            "event" => got.push(format!("event {}", frame["step"])),
            _ => {}
        }
    }
    assert_eq!(got, expected);
    host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn intercept_steps_tell_each_interceptors_answer_in_order() {
    let scratch = TempDir::new("library-steps");
    let guard = write_manifest(
        &scratch.path().join("exts/guard"),
        &py_manifest("guard", &["--mode", "guard"]),
    );
    let second = write_manifest(
        &scratch.path().join("exts/second"),
        &py_manifest("second", &["--mode", "guard"]),
    );
    // The ready wait is long enough for Python on a loaded CI machine: the subject
    // here is order, not start time (the wait ends at `ready`).
    let config = only(&scratch, vec![guard, second]);
    let (host, _notes) = Host::new(config);
    let report = host.load().await;
    assert_eq!(report.ready.len(), 2, "{report:?}");
    let event = |name: &str, fields: Value| Event {
        id: None,
        event: name.into(),
        fields: fields.as_object().unwrap().clone(),
    };

    // Both rewrite: each is asked with the args as the one before left them.
    let (steps, verdict) = host
        .intercept_steps(event(
            "tool_call",
            json!({"tool_id":"1","tool_name":"rewrite_me","tool_args":{"a":1}}),
        ))
        .await;
    let names: Vec<&str> = steps.iter().map(|s| s.extension.as_str()).collect();
    assert_eq!(names, ["guard", "second"]);
    let answer = steps[0].answer.as_ref().unwrap();
    assert_eq!(answer.modified_args, Some(json!({"a":1,"rewritten":true})));
    assert_eq!(
        verdict.modified_args,
        Some(json!({"a":1,"rewritten":true})),
        "{verdict:?}"
    );

    // The first block ends the chain: the second is not asked.
    let (steps, verdict) = host
        .intercept_steps(event(
            "tool_call",
            json!({"tool_id":"2","tool_name":"bash","tool_args":{"command":"rm -rf /"}}),
        ))
        .await;
    assert_eq!(steps.len(), 1, "{steps:?}");
    assert!(steps[0].answer.as_ref().unwrap().block);
    assert!(verdict.block);
    assert_eq!(
        host.intercept(event("turn_start", json!({"step":1}))).await,
        zot_host::Verdict::default()
    );
    host.shutdown().await;
}

/// `fut`, which must finish well within [`EVENT_TIMEOUT`].
async fn soon<T>(what: &str, fut: impl Future<Output = T>) -> T {
    tokio::time::timeout(EVENT_TIMEOUT, fut)
        .await
        .unwrap_or_else(|_| panic!("{what}: nothing within {EVENT_TIMEOUT:?}"))
}

/// An agent tests itself without processes: with `test-support`, the extension is a peer
/// the test plays on an in-memory connection, and every step below is a frame that
/// connection carries.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_plays_an_extension_in_memory() {
    let scratch = TempDir::new("library-memory");
    // Discovered as always; its program does not exist, so only the scripted launcher
    // can start it.
    let ext = write_manifest(
        &scratch.path().join("exts/scripted"),
        &json!({"name": "scripted", "exec": "./no-such-program"}),
    );
    let mut config = HostConfig::new(
        ZotHome::new(scratch.path().join("home")),
        scratch.path().to_path_buf(),
    );
    config.explicit = vec![ext];
    config.installed = false;
    // The test takes each started peer and plays it itself.
    let (peers_tx, mut peers) = tokio::sync::mpsc::unbounded_channel::<(String, Peer)>();
    let launcher = Scripted::new(move |name, peer| {
        let _ = peers_tx.send((name, peer));
        async {}
    });
    let (host, mut events) = Host::with_launcher(config, Arc::new(launcher));
    let load = tokio::spawn({
        let host = host.clone();
        async move { host.load().await }
    });

    let (name, mut peer) = soon("a start", peers.recv()).await.unwrap();
    assert_eq!(name, "scripted");
    peer.print(r#"{"type":"hello","name":"scripted","version":"1"}"#)
        .await;
    let ack = soon("hello_ack", peer.next()).await;
    assert_eq!(
        (&ack["type"], &ack["protocol_version"]),
        (&json!("hello_ack"), &json!(1))
    );
    peer.print(
        r#"{"type":"register_tool","name":"shout","description":"Shouts.","schema":{"type":"object","required":["text"],"properties":{"text":{"type":"string"}}}}"#,
    )
    .await;
    peer.print(r#"{"type":"ready"}"#).await;
    let report = soon("the load", load).await.unwrap();
    assert_eq!(report.ready, ["scripted"], "{report:?}");
    let tools: Vec<String> = host.tools().into_iter().map(|(_, t)| t.name).collect();
    assert_eq!(tools, ["shout"]);

    // Arguments that do not fit the tool's schema are refused before the peer sees
    // them, each problem naming its field (the next frame it reads is the call below).
    let refused = host.call_tool("shout", json!({"text": 3}), None).await;
    let Err(CallError::Arguments { tool, problems }) = refused else {
        panic!("{refused:?}");
    };
    assert_eq!(
        (tool.as_str(), problems[0].field.as_deref()),
        ("shout", Some("text"))
    );
    assert_eq!(
        host.check_arguments("shout", &json!({"text": "hi"})),
        Some(zot_host::schema::Checked::Valid)
    );

    // A tool call reaches the peer, and its result the agent.
    let call = tokio::spawn({
        let host = host.clone();
        async move { host.call_tool("shout", json!({"text": "hi"}), None).await }
    });
    let frame = soon("tool_call", peer.next()).await;
    assert_eq!(frame["type"], "tool_call", "{frame}");
    assert_eq!(
        (&frame["name"], &frame["args"]),
        (&json!("shout"), &json!({"text": "hi"}))
    );
    let result = json!({"type": "tool_result", "id": frame["id"],
                        "content": [{"type": "text", "text": "HI"}]});
    peer.print(&result.to_string()).await;
    let (owner, result) = soon("the tool's result", call).await.unwrap().unwrap();
    assert_eq!(owner, "scripted");
    assert_eq!(result.content, [json!({"type": "text", "text": "HI"})]);

    // Issue 37: a call made with `CallOptions::progress` gets the tool's `tool_progress`
    // as it comes, before the result; one for another id is not its.
    let (progress, mut progressed) = tokio::sync::mpsc::channel(8);
    let call = tokio::spawn({
        let host = host.clone();
        let options = CallOptions::default()
            .timeout(Some(Duration::from_secs(30)))
            .progress(progress);
        async move {
            host.call_tool_with("shout", json!({"text": "yo"}), options)
                .await
        }
    });
    let frame = soon("tool_call", peer.next()).await;
    let id = frame["id"].as_str().unwrap().to_string();
    for line in [
        json!({"type": "tool_progress", "id": "not-pending", "progress": 9}),
        json!({"type": "tool_progress", "id": id, "progress": 1, "total": 2, "text": "half"}),
        json!({"type": "tool_result", "id": id, "content": [{"type": "text", "text": "YO"}]}),
    ] {
        peer.print(&line.to_string()).await;
    }
    let said = soon("the progress", progressed.recv()).await.unwrap();
    assert_eq!(
        (
            said.id.as_str(),
            said.progress,
            said.total,
            said.text.as_deref()
        ),
        (id.as_str(), Some(1.0), Some(2.0), Some("half"))
    );
    let (_, result) = soon("the tool's result", call).await.unwrap().unwrap();
    assert_eq!(result.content, [json!({"type": "text", "text": "YO"})]);
    assert!(
        progressed.recv().await.is_none(),
        "nothing else, and closed with the call"
    );

    // The tool registered again with another schema: calls are checked against the new
    // one (a tool's schema is compiled once per registration, not once for good).
    peer.print(
        r#"{"type":"register_tool","name":"shout","description":"Shouts.","schema":{"type":"object","required":["text","loud"],"properties":{"text":{"type":"string"},"loud":{"type":"boolean"}}}}"#,
    )
    .await;
    let re_registered = async {
        while host.check_arguments("shout", &json!({"text": "hi"}))
            == Some(zot_host::schema::Checked::Valid)
        {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    };
    soon("the new schema", re_registered).await;
    let refused = host.call_tool("shout", json!({"text": "hi"}), None).await;
    let Err(CallError::Arguments { problems, .. }) = refused else {
        panic!("{refused:?}");
    };
    assert!(problems[0].message.contains("\"loud\""), "{problems:?}");

    // The peer exits: the host reports it, and its tool is gone.
    peer.exit(7);
    loop {
        match soon("extension_exited", events.recv()).await {
            Some(HostEvent::ExtensionExited {
                extension, code, ..
            }) => {
                assert_eq!((extension.as_str(), code), ("scripted", Some(7)));
                break;
            }
            Some(_) => continue,
            None => panic!("the host's events ended"),
        }
    }
    assert_eq!(host.extensions()[0].state, ExtState::Exited);
    assert!(host.tools().is_empty());
    host.shutdown().await;
}

/// What an embedding agent reads back, through the names the crate root exports: the
/// load report (ready, errors, warnings, untrusted), the listing (source, transport,
/// state, sandbox), a status, a call's error, the interception chain, a grant for one
/// run, and outside text made safe for a terminal.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_embedder_reads_every_report_through_the_root_exports() {
    let scratch = TempDir::new("library-exports");
    let project = scratch.path().join("project");
    // The project's own extension, not trusted: reported, never started.
    write_manifest(
        &project.join(".zot/extensions/local"),
        &py_manifest("local", &[]),
    );
    let exts = scratch.path().join("exts");
    let echo = write_manifest(&exts.join("echo"), &py_manifest("echo-ext", &[]));
    let shadowed = write_manifest(&exts.join("echo-again"), &py_manifest("echo-ext", &[]));
    let guard = write_manifest(
        &exts.join("guard"),
        &py_manifest("guard", &["--mode", "guard"]),
    );
    let broken = write_manifest(
        &exts.join("broken"),
        &json!({"name": "broken", "version": "1.0.0", "exec": "./missing"}),
    );
    let guest = write_manifest(
        &exts.join("guest"),
        &json!({"name": "guest", "version": "1.0.0", "wasm": zot_test_guests::REACTOR}),
    );
    let mut config = HostConfig::new(ZotHome::new(scratch.path().join("home")), project);
    config.explicit = vec![echo, shadowed, guard, broken, guest];
    // The project's extensions, not the user's global ones.
    config.installed = true;
    config.global = false;
    // The test's own component: compiled here, without a child's limits.
    config.compiler = zot_host::compile::Compiler::in_process();
    let mut timeouts = Timeouts::default();
    timeouts.ready = READY_WAIT;
    config.timeouts = timeouts;
    let mut run_grant = RunGrant::default();
    run_grant.add("cwd".parse::<Permission>().unwrap()).unwrap();
    config.run_grant = run_grant;
    let (host, _notes): (Host, _) = Host::new(config);

    let report: LoadReport = host.load().await;
    let mut ready = report.ready.clone();
    ready.sort();
    assert_eq!(ready, ["echo-ext", "guard", "guest"], "{report:?}");
    let errors: &[LoadError] = &report.errors;
    assert_eq!(errors.len(), 1, "{report:?}");
    assert_eq!(errors[0].extension, "broken");
    assert!(errors[0].error.contains("missing"), "{}", errors[0].error);
    let warnings: &[LoadWarning] = &report.warnings;
    assert!(
        warnings.iter().any(|w| w.extension == "echo-ext"),
        "the second copy of echo-ext is shadowed: {report:?}"
    );
    let untrusted: &[UntrustedReport] = &report.untrusted;
    assert_eq!(untrusted.len(), 1, "{report:?}");
    let why: &Untrusted = &untrusted[0].untrusted;
    assert!(why.message().contains("zot ext trust"), "{}", why.message());

    let listing: Vec<ExtensionInfo> = host.extensions();
    let info = |name: &str| listing.iter().find(|i| i.name == name).unwrap();
    assert_eq!(info("echo-ext").source, Source::Explicit);
    assert_eq!(info("echo-ext").transport, TransportKind::Stdio);
    assert_eq!(info("echo-ext").state, ExtState::Ready);
    assert_eq!(info("broken").state, ExtState::Error);
    assert_eq!(info("local").state, ExtState::Untrusted);
    let sandbox: &SandboxView = info("guest")
        .sandbox
        .as_ref()
        .expect("a component's sandbox");
    assert_eq!(info("guest").transport, TransportKind::Wasm);
    let running = sandbox.running.as_ref().expect("what it runs with");
    assert_eq!(running.run_grant, ["cwd"], "{sandbox:?}");

    let status: Status = host.status("echo-ext").unwrap();
    assert_eq!(status.ready_by, Some(ReadyBy::Frame), "{status:?}");
    let missing = host.call_tool("no_such_tool", json!({}), None).await;
    assert!(
        matches!(missing, Err(CallError::NotFound(_))),
        "{missing:?}"
    );

    let event = Event {
        id: None,
        event: "tool_call".into(),
        fields: json!({"tool_id": "1", "tool_name": "bash", "tool_args": {"command": "rm -rf /"}})
            .as_object()
            .unwrap()
            .clone(),
    };
    let (steps, verdict): (Vec<InterceptStep>, Verdict) = host.intercept_steps(event).await;
    assert_eq!(steps.len(), 1, "{steps:?}");
    assert_eq!(steps[0].extension, "guard");
    assert!(verdict.block, "{verdict:?}");

    // What an extension says is shown to a person only made safe.
    assert_eq!(terminal_text::one_line("red\x1b[31m"), "red\\x1b[31m");
    host.shutdown().await;
}

/// An embedder's restart policy: a crashed extension is started again after the wait it
/// chose, told as `extension_restarted`, and `extensions()` counts it (`RestartInfo`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_embedder_chooses_how_a_crashed_extension_is_started_again() {
    let scratch = TempDir::new("library-restart");
    let exts = scratch.path().join("exts");
    let crashy = write_manifest(&exts.join("crashy"), &py_manifest("crashy", &[]));
    let mut config = only(&scratch, vec![crashy]);
    let mut policy = RestartPolicy::default();
    policy.initial = Duration::from_millis(100);
    policy.max_restarts = 1;
    config.restart = policy;
    let (host, mut notes) = Host::new(config);
    assert_eq!(host.load().await.ready, ["crashy"]);
    let crashed = host.call_tool("crash", json!({}), None).await;
    assert!(
        matches!(crashed, Err(CallError::Exited { .. })),
        "{crashed:?}"
    );
    let delay_ms = soon("extension_restarted", async {
        loop {
            match notes.recv().await {
                Some(HostEvent::ExtensionRestarted { delay_ms, .. }) => break delay_ms,
                Some(_) => continue,
                None => panic!("no more events"),
            }
        }
    })
    .await;
    assert!((50..=100).contains(&delay_ms), "{delay_ms}");
    let restarts = |host: &Host| host.extensions()[0].restarts.clone().unwrap_or_default();
    soon("ready again", async {
        while host.extensions()[0].state != ExtState::Ready {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    // One restart allowed: the second crash is final.
    let _ = host.call_tool("crash", json!({}), None).await;
    soon("given up", async {
        while !restarts(&host).given_up {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    let info: RestartInfo = host.extensions()[0].restarts.clone().unwrap();
    assert_eq!((info.count, info.given_up), (1, true), "{info:?}");
    host.shutdown().await;
}

/// The `chain` call `i` of the extension of [`CHAINED_LINES`], its progress before its
/// result, and a call of the tool registered before that result; before call `silent_at`,
/// a call that gets no answer, which times out at its own timeout.
async fn chain(host: &Host, i: usize, silent_at: usize) {
    let wait = Some(Duration::from_secs(60));
    if i == silent_at {
        let quick = Duration::from_millis(5);
        let silent = host.call_tool("silent", json!({}), Some(quick)).await;
        assert!(
            matches!(&silent, Err(CallError::Timeout { after, .. }) if *after == quick),
            "{silent:?}"
        );
    }
    let (progress, mut got) = tokio::sync::mpsc::channel(8);
    let options = CallOptions::default().timeout(wait).progress(progress);
    let (_, result) = host
        .call_tool_with("chain", json!({"i": i}), options)
        .await
        .unwrap();
    assert_eq!(result.content[0]["text"], format!("chain {i}"));
    let step = got.try_recv().map(|p| p.text);
    assert_eq!(step, Ok(Some(format!("step {i}"))), "call {i}'s progress");
    let late = format!("late{i}");
    let (_, result) = host
        .call_tool(&late, json!({}), wait)
        .await
        .unwrap_or_else(|e| panic!("{late} was not registered first: {e}"));
    assert_eq!(result.content[0]["text"], late);
}

/// The messages of the first `count` notifications among `notes`, fewer if none comes
/// for [`EVENT_TIMEOUT`].
async fn notifications(
    mut notes: tokio::sync::mpsc::Receiver<HostEvent>,
    count: usize,
) -> Vec<String> {
    let mut messages = Vec::new();
    while messages.len() < count {
        let note = tokio::time::timeout(EVENT_TIMEOUT, notes.recv()).await;
        match note {
            Ok(Some(HostEvent::Notify { frame, .. })) => messages.push(frame.message),
            Ok(Some(_)) => {}
            Ok(None) | Err(_) => break,
        }
    }
    messages
}

/// What the extension of `a_synchronous_caller_that_reads_the_pipe_itself_…` writes: with
/// each `chain` call's result, in one write, a notification, the call's progress and a
/// new tool before it, and a notification after it.
const CHAINED_LINES: &str = r#"
import json, sys
def send(*frames):
    sys.stdout.write("".join(json.dumps(f) + "\n" for f in frames))
    sys.stdout.flush()
send({"type": "hello", "name": "lines", "version": "1"},
     {"type": "register_tool", "name": "chain", "description": "d", "schema": {"type": "object"}},
     {"type": "register_tool", "name": "silent", "description": "d", "schema": {"type": "object"}},
     {"type": "ready"})
for line in sys.stdin:
    f = json.loads(line)
    if f.get("type") != "tool_call":
        continue
    if f["name"] == "silent":
        continue
    if f["name"] != "chain":
        send({"type": "tool_result", "id": f["id"], "content": [{"type": "text", "text": f["name"]}]})
        continue
    i = f["args"]["i"]
    send({"type": "notify", "level": "info", "message": f"before {i}"},
         {"type": "tool_progress", "id": f["id"], "progress": 1, "text": f"step {i}"},
         {"type": "register_tool", "name": f"late{i}", "description": "d", "schema": {"type": "object"}},
         {"type": "tool_result", "id": f["id"], "content": [{"type": "text", "text": f"chain {i}"}]},
         {"type": "notify", "level": "info", "message": f"after {i}"})
"#;

/// A synchronous caller reads the extension's pipe itself while it waits
/// (`extension/waiting.rs`), and handles every line as the reader would, in order: its
/// progress before its result (after it, no call would be there to take it), a tool
/// registered before the result callable at once, and the notifications before and after
/// it reaching the application in the order written, the last included (what the caller
/// read and left, the reader handles, without a line more to wake it). A call that gets
/// no answer times out at its own timeout, shorter than the caller's turn, and the calls
/// after it are answered.
#[test]
fn a_synchronous_caller_that_reads_the_pipe_itself_handles_every_line_in_order() {
    let scratch = TempDir::new("library-caller-reads");
    let ext = write_manifest(
        &scratch.path().join("exts/lines"),
        &inline_py("lines", CHAINED_LINES),
    );
    let config = only(&scratch, vec![ext]);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let (host, notes) = rt.block_on(async { Host::new(config) });
    let messages = rt.spawn(notifications(notes, 2 * CALLS));
    const CALLS: usize = 50;
    let handle = rt.handle().clone();
    let caller = std::thread::spawn(move || {
        assert_eq!(handle.block_on(host.load()).ready, ["lines"]);
        for i in 0..CALLS {
            handle.block_on(chain(&host, i, CALLS / 2));
        }
        host
    });
    let host = caller.join().expect("the synchronous caller");
    let messages = rt.block_on(messages).unwrap();
    let expected: Vec<String> = (0..CALLS)
        .flat_map(|i| [format!("before {i}"), format!("after {i}")])
        .collect();
    assert_eq!(messages, expected);
    rt.block_on(host.shutdown());
}

/// This thread limited to its first CPU (Linux), and so are the processes it starts.
fn to_one_cpu() {
    // SAFETY: sched_{get,set}affinity on this thread with sets of their own size; a
    // zeroed cpu_set_t is the empty set and CPU_SET is given a CPU below its size.
    unsafe {
        let mut all: libc::cpu_set_t = std::mem::zeroed();
        assert_eq!(libc::sched_getaffinity(0, size_of_val(&all), &mut all), 0);
        let first = (0..libc::CPU_SETSIZE as usize).find(|&c| libc::CPU_ISSET(c, &all));
        let mut one: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(first.expect("a CPU"), &mut one);
        assert_eq!(libc::sched_setaffinity(0, size_of_val(&one), &one), 0);
    }
}

/// On one CPU a caller takes its reply from the pipe itself right after its call is
/// written, when it is there (`extension/waiting.rs`, `glances`), from a task and from
/// `block_on` of a current-thread runtime; here its thread runs at the lowest priority
/// (after the extension started), so that the extension its call wakes answers before
/// the write returns. Every line is still handled as the reader would, in order:
/// progress before the result, a tool registered before it callable at once, the
/// notifications before and after it in the order written, the last included (what the
/// caller read and left). A call with no answer times out at its own timeout. And the
/// runtime's other tasks run while a task's calls are answered at once (it yields when
/// its budget is spent).
#[test]
fn on_one_cpu_a_caller_takes_its_reply_itself_and_handles_every_line_in_order() {
    const CALLS: usize = 20;
    const QUICK: usize = 1000;
    let scratch = TempDir::new("library-one-cpu");
    let ext = write_manifest(
        &scratch.path().join("exts/lines"),
        &inline_py("lines", CHAINED_LINES),
    );
    let config = only(&scratch, vec![ext]);
    let caller = std::thread::spawn(move || {
        to_one_cpu();
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let (host, notes) = rt.block_on(async { Host::new(config) });
        let messages = rt.spawn(notifications(notes, 4 * CALLS + 2));
        assert_eq!(rt.block_on(host.load()).ready, ["lines"]);
        // SAFETY: setpriority of this thread (its id), to a lower priority.
        unsafe {
            let me = libc::syscall(libc::SYS_gettid) as libc::id_t;
            assert_eq!(libc::setpriority(libc::PRIO_PROCESS, me, 19), 0);
        }
        let ticks = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let ticker = rt.spawn({
            let ticks = ticks.clone();
            async move {
                loop {
                    ticks.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    tokio::task::yield_now().await;
                }
            }
        });
        let from_task = host.clone();
        let ticked = rt
            .block_on(rt.spawn(async move {
                for i in 0..CALLS {
                    chain(&from_task, i, CALLS / 2).await;
                }
                let before = ticks.load(std::sync::atomic::Ordering::Relaxed);
                for _ in 0..QUICK {
                    let call = from_task.call_tool("late0", json!({}), None).await;
                    assert_eq!(call.unwrap().1.content[0]["text"], "late0");
                }
                ticks.load(std::sync::atomic::Ordering::Relaxed) - before
            }))
            .unwrap();
        // A task yields once its budget (128) is spent, if not before.
        assert!(ticked >= QUICK / 128, "the other task ran {ticked} times");
        for i in CALLS..2 * CALLS {
            rt.block_on(chain(&host, i, CALLS / 2));
        }
        // Its last notification comes after the result: the caller leaves it.
        let last = rt.block_on(host.call_tool("chain", json!({"i": 2 * CALLS}), None));
        assert_eq!(
            last.unwrap().1.content[0]["text"],
            format!("chain {}", 2 * CALLS)
        );
        ticker.abort();
        (rt, host, messages)
    });
    let (rt, host, messages) = caller.join().expect("the caller on one CPU");
    let messages = rt.block_on(messages).unwrap();
    let expected: Vec<String> = (0..=2 * CALLS)
        .flat_map(|i| [format!("before {i}"), format!("after {i}")])
        .collect();
    assert_eq!(messages, expected);
    rt.block_on(host.shutdown());
}

/// Synchronous code calls through `Handle::block_on` from a thread of its own (the
/// library reads the extension's pipe itself there, for up to 10 ms): a quick answer, one
/// that comes after that (a 30 ms sleep: the pipe is handed back and the reply handed
/// over), an extension's error and an exit mid-call all come back as they do to a task,
/// and the exit at once, not at the call's timeout.
#[test]
fn a_synchronous_caller_gets_every_answer_from_block_on() {
    let scratch = TempDir::new("library-blocking");
    let ext = write_manifest(&scratch.path().join("exts/sync"), &py_manifest("sync", &[]));
    let mut config = only(&scratch, vec![ext]);
    config.restart.enabled = false;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let host = rt.block_on(async {
        let (host, mut notes) = Host::new(config);
        tokio::spawn(async move { while notes.recv().await.is_some() {} });
        host
    });
    let handle = rt.handle().clone();
    let caller = std::thread::spawn(move || {
        assert_eq!(handle.block_on(host.load()).ready, ["sync"]);
        let call = |tool: &str, args: Value| {
            handle.block_on(host.call_tool(tool, args, Some(Duration::from_secs(60))))
        };
        for i in 0..200 {
            let (owner, result) = call("echo", json!({"i": i})).unwrap();
            let text = result.content[0]["text"].as_str().unwrap();
            assert_eq!(
                (owner.as_str(), text),
                ("sync", format!("{{\"i\":{i}}}").as_str())
            );
        }
        let (_, slept) = call("sleep", json!({"ms": 30})).unwrap();
        assert_eq!(slept.content[0]["text"], "slept 30");
        let (_, failed) = call("fail", json!({})).unwrap();
        assert!(failed.is_error, "{failed:?}");
        let started = std::time::Instant::now();
        let crashed = call("crash", json!({}));
        assert!(
            matches!(crashed, Err(CallError::Exited { .. })),
            "{crashed:?}"
        );
        handle.block_on(host.shutdown());
        started.elapsed()
    });
    let took = caller.join().expect("the synchronous caller");
    assert!(
        took < Duration::from_secs(60),
        "the exit waited for the timeout: {took:?}"
    );
}
