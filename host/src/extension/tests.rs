//! The protocol core against an in-memory extension the test plays.

use super::*;
use crate::caps::registrations::{REGISTRATIONS, REGISTRATION_BYTES};
use crate::transport::memory::{pair, Peer};
use serde_json::json;

/// A hub with no tools; with `true`, it calls the extension the moment it is ready:
/// from the `ready` callback itself, before any other task (the one-way queue's pump)
/// runs.
struct NoHub(Timeouts, bool);

impl Hub for NoHub {
    fn register(&self, _: &Extension, _: Registration) {}
    fn ready(&self, ext: &Extension) {
        if !self.1 {
            return;
        }
        let call = ext.call_tool("x", json!({}), Duration::from_secs(5), None);
        let mut call = std::pin::pin!(call);
        let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
        // Its first poll sends the `tool_call`; the answer is not waited for.
        assert!(call.as_mut().poll(&mut cx).is_pending());
    }
    fn exited(&self, _: &Extension) {}
    fn call_tool(
        &self,
        _: &Extension,
        name: String,
        _: Value,
    ) -> Pin<Box<dyn Future<Output = Result<ToolResult, CallError>> + Send>> {
        Box::pin(async move { Err(CallError::NotFound(format!("tool named {name:?}"))) })
    }
    fn timeouts(&self) -> &Timeouts {
        &self.0
    }
}

/// Starts the extension `t` on `conn`, telling `notes`.
fn start_t(conn: Connection, notes: EventQueue) -> Extension {
    let log = ExtLog::open(&std::env::temp_dir().join("zot-unit-ext.log"));
    Extension::start(
        "t".into(),
        0,
        log,
        conn,
        HelloAck::default(),
        Arc::new(NoHub(Timeouts::default(), false)),
        notes,
    )
}

async fn started(queue: usize) -> (Extension, Peer, mpsc::Receiver<HostEvent>) {
    let (conn, mut peer) = pair(queue);
    let (notes, notes_rx) = EventQueue::channel();
    let ext = start_t(conn, notes);
    peer.print(r#"{"type":"hello","name":"t","version":"1"}"#)
        .await;
    assert_eq!(peer.next().await["type"], "hello_ack");
    (ext, peer, notes_rx)
}

/// `hello_ack` is the first frame an extension reads, even when the host calls it the
/// moment `ready` follows `hello`.
#[tokio::test]
async fn hello_ack_comes_before_a_call_made_the_moment_it_is_ready() {
    let (conn, mut peer) = pair(16);
    let (notes, _notes_rx) = EventQueue::channel();
    let log = ExtLog::open(&std::env::temp_dir().join("zot-unit-ext.log"));
    let hub = Arc::new(NoHub(Timeouts::default(), true));
    let _ext = Extension::start("t".into(), 0, log, conn, HelloAck::default(), hub, notes);
    peer.print(r#"{"type":"hello","name":"t","version":"1"}"#)
        .await;
    peer.print(r#"{"type":"ready"}"#).await;
    assert_eq!(peer.next().await["type"], "hello_ack");
    assert_eq!(peer.next().await["type"], "tool_call");
}

#[tokio::test]
async fn pending_calls_fail_the_moment_the_extension_exits() {
    let (ext, mut peer, _notes) = started(16).await;
    let call = tokio::spawn({
        let ext = ext.clone();
        async move {
            ext.call_tool("x", json!({}), Duration::from_secs(60), None)
                .await
        }
    });
    assert_eq!(peer.next().await["type"], "tool_call");
    let started = Instant::now();
    peer.exit(3);
    let err = call.await.unwrap().unwrap_err();
    assert!(
        matches!(err, CallError::Exited { ref reason, .. } if reason == "exited with status 3")
    );
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "waited for the timeout"
    );
    assert_eq!(ext.phase(), Phase::Exited);
}

#[tokio::test]
async fn a_timed_out_tool_call_is_cancelled_and_its_late_answer_ignored() {
    let (ext, mut peer, _notes) = started(16).await;
    let err = ext
        .call_tool("x", json!({}), Duration::from_millis(20), None)
        .await
        .unwrap_err();
    assert!(matches!(err, CallError::Timeout { .. }));
    let call = peer.next().await;
    let cancel = peer.next().await;
    assert_eq!(cancel, json!({"type": "tool_cancel", "id": call["id"]}));
    peer.print(&format!(
        r#"{{"type":"tool_result","id":{},"content":[]}}"#,
        call["id"]
    ))
    .await;
    // The connection is still fine: the next call gets a fresh id and its answer.
    let next = tokio::spawn({
        let ext = ext.clone();
        async move {
            ext.call_tool("x", json!({}), Duration::from_secs(5), None)
                .await
        }
    });
    let call2 = peer.next().await;
    assert_ne!(call2["id"], call["id"]);
    peer.print(&format!(
        r#"{{"type":"tool_result","id":{},"content":[]}}"#,
        call2["id"]
    ))
    .await;
    assert!(next.await.unwrap().is_ok());
}

/// The budget rule on every send path (on tokio's paused clock): a request's frame
/// carries its timeout and the cancel grace, and the caller's wait ends at the
/// timeout itself; its `tool_cancel`, an event and a one-way frame carry the one-way
/// budget; `shutdown` its grace.
#[tokio::test(start_paused = true)]
async fn every_frame_carries_the_budget_of_the_budget_rule() {
    use crate::budget::{Budget, CANCEL_GRACE};
    let (ext, mut peer, _notes) = started(16).await;
    let timeout = Duration::from_millis(200);
    let asked = tokio::time::Instant::now();
    let err = ext
        .call_tool("x", json!({}), timeout, None)
        .await
        .unwrap_err();
    assert!(matches!(err, CallError::Timeout { .. }));
    assert_eq!(
        asked.elapsed(),
        timeout,
        "the caller waits the timeout, not the grace"
    );
    let call = peer.frames.recv().await.unwrap();
    assert_eq!(call.budget.duration(), timeout + CANCEL_GRACE);
    let cancel = peer.frames.recv().await.unwrap();
    assert!(cancel.line.json().contains("tool_cancel"));
    assert_eq!(cancel.budget, Budget::ONE_WAY);
    ext.deliver_event(&turn(1));
    assert_eq!(peer.frames.recv().await.unwrap().budget, Budget::ONE_WAY);
    ext.send(&key("a")).unwrap();
    assert_eq!(peer.frames.recv().await.unwrap().budget, Budget::ONE_WAY);
    let grace = Duration::from_millis(300);
    let stopping = tokio::spawn({
        let ext = ext.clone();
        async move { ext.shutdown(grace, grace).await }
    });
    let shutdown = peer.frames.recv().await.unwrap();
    assert!(shutdown.line.json().contains("shutdown"));
    assert_eq!(shutdown.budget.duration(), grace);
    peer.exit(0);
    stopping.await.unwrap();
}

#[tokio::test]
async fn a_tool_call_whose_caller_gives_up_is_cancelled() {
    let (ext, mut peer, _notes) = started(16).await;
    let call = tokio::spawn({
        let ext = ext.clone();
        async move {
            ext.call_tool("x", json!({}), Duration::from_secs(60), None)
                .await
        }
    });
    let sent = peer.next().await;
    call.abort();
    let cancel = peer.next().await;
    assert_eq!(cancel, json!({"type": "tool_cancel", "id": sent["id"]}));
}

#[tokio::test]
async fn an_oversize_hello_is_not_kept_whole() {
    let (conn, mut peer) = pair(16);
    let (notes, _notes) = EventQueue::channel();
    let ext = start_t(conn, notes);
    let pad = "p".repeat(HELLO_BYTES);
    peer.print(&format!(
        r#"{{"type":"hello","name":"t","version":"1","pad":"{pad}"}}"#
    ))
    .await;
    assert_eq!(peer.next().await["type"], "hello_ack");
    let hello = ext.status().hello.unwrap();
    assert_eq!((hello.name.as_str(), hello.version.as_str()), ("t", "1"));
    assert!(hello.extra.is_empty());
}

/// A second `hello` gets no `hello_ack` and changes nothing; a `tool_result` for a
/// pending command's id answers nothing. Both are violations, and the command still
/// takes its own answer.
#[tokio::test]
async fn a_second_hello_and_a_reply_of_the_wrong_kind_are_violations() {
    let (ext, mut peer, _notes) = started(16).await;
    peer.print(r#"{"type":"hello","name":"other","version":"2"}"#)
        .await;
    let command = tokio::spawn({
        let ext = ext.clone();
        async move { ext.invoke_command("c", "", Duration::from_secs(60)).await }
    });
    let invoked = peer.next().await;
    assert_eq!(invoked["type"], "command_invoked", "{invoked}");
    let id = &invoked["id"];
    peer.print(&format!(
        r#"{{"type":"tool_result","id":{id},"content":[]}}"#
    ))
    .await;
    peer.print(&format!(
        r#"{{"type":"command_response","id":{id},"action":"display","display":"mine"}}"#
    ))
    .await;
    let response = command.await.unwrap().unwrap();
    assert_eq!(response.display.as_deref(), Some("mine"));
    // A hello_ack would be queued before this event: the event comes first.
    ext.deliver_event(&turn(1));
    assert_eq!(peer.next().await["type"], "event");
    let status = ext.status();
    let hello = status.hello.unwrap();
    assert_eq!((hello.name.as_str(), hello.version.as_str()), ("t", "1"));
    assert_eq!(
        status.violations,
        [
            "sent hello twice; ignored the second".to_string(),
            format!("tool_result for id {id}, which is not that kind of request"),
        ]
    );
}

#[tokio::test]
async fn silence_after_hello_counts_as_ready() {
    let (ext, _peer, _notes) = started(16).await;
    let phase = ext
        .wait_ready(tokio::time::Instant::now() + Duration::from_secs(3))
        .await;
    assert_eq!(phase, Phase::Ready);
    assert_eq!(ext.status().ready_by, Some(ReadyBy::Silence));
}

impl Extension {
    fn deliver_event(&self, event: &Event) {
        let frame = HostFrame::Event(event.clone());
        self.deliver_encoded(&frame, encode(&frame));
    }
}

fn turn(step: usize) -> Event {
    Event {
        id: None,
        event: "turn_start".into(),
        fields: json!({"step": step}).as_object().unwrap().clone(),
    }
}

fn key(text: &str) -> HostFrame {
    HostFrame::PanelKey(zot_protocol::PanelKey {
        panel_id: "p".into(),
        key: "char".into(),
        text: text.into(),
        extra: Default::default(),
    })
}

#[tokio::test]
async fn one_way_frames_arrive_in_the_order_sent() {
    let (ext, mut peer, _notes) = started(4).await;
    for i in 0..50 {
        if i % 3 == 0 {
            ext.send(&key(&i.to_string())).unwrap();
        } else {
            ext.deliver_event(&turn(i));
        }
    }
    for i in 0..50 {
        let frame = peer.next().await;
        if i % 3 == 0 {
            assert_eq!(frame["text"], i.to_string(), "{frame}");
        } else {
            assert_eq!(frame["step"], i, "{frame}");
        }
    }
}

#[tokio::test(start_paused = true)]
async fn a_full_queue_makes_room_for_a_panel_frame_by_dropping_an_event() {
    // Nobody reads: the pump holds one frame, the queue fills up behind it.
    let (ext, _peer, _notes) = started(1).await;
    for step in 0..EVENT_QUEUE {
        ext.deliver_event(&turn(step));
    }
    // Let the pump take what it can (the clock is paused: the sleep ends once every
    // task waits), then fill the queue to the brim.
    tokio::time::sleep(Duration::from_millis(20)).await;
    for step in 0..EVENT_QUEUE {
        ext.deliver_event(&turn(step));
    }
    let before = ext.status().events_dropped;
    ext.send(&key("k")).expect("an event makes room");
    assert_eq!(ext.status().events_dropped, before + 1);
    // Full of panel frames alone: the next one is refused, not queued.
    let refused = (0..=EVENT_QUEUE)
        .map(|_| ext.send(&key("k")))
        .find_map(Result::err);
    assert!(
        matches!(refused, Some(CallError::QueueFull { .. })),
        "{refused:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn the_one_way_queue_is_bounded_in_bytes() {
    // Nobody reads: the transport's budget and then the queue's fill with 1 MiB events.
    let (ext, _peer, _notes) = started(EVENT_QUEUE).await;
    let big = |step: usize| Event {
        id: None,
        event: "turn_start".into(),
        fields: json!({"step": step, "pad": "x".repeat(1 << 20)})
            .as_object()
            .unwrap()
            .clone(),
    };
    for step in 0..100 {
        ext.deliver_event(&big(step));
        tokio::task::yield_now().await;
    }
    tokio::time::sleep(Duration::from_millis(50)).await;
    let held = ext.inner.one_way.bytes();
    assert!(held <= EVENT_QUEUE_BYTES, "{held} bytes queued");
    let dropped = ext.status().events_dropped;
    assert!((55..=75).contains(&dropped), "dropped {dropped}");
    // An event larger than the whole queue is dropped; a panel frame refused.
    let before = ext.status().events_dropped;
    ext.deliver_event(&Event {
        id: None,
        event: "turn_start".into(),
        fields: json!({"pad": "x".repeat(EVENT_QUEUE_BYTES)})
            .as_object()
            .unwrap()
            .clone(),
    });
    assert_eq!(ext.status().events_dropped, before + 1);
    let refused = ext.send(&key(&"k".repeat(EVENT_QUEUE_BYTES)));
    assert!(
        matches!(refused, Err(CallError::QueueFull { .. })),
        "{refused:?}"
    );
}

#[tokio::test]
async fn registrations_over_the_caps_are_refused_and_a_replacement_counts_once() {
    let (ext, _peer, _notes) = started(16).await;
    let tool = |name: &str, size: usize| {
        Registration::Tool(RegisterTool {
            name: name.into(),
            description: "d".repeat(size),
            schema: json!({"type": "object"}),
            extra: Default::default(),
        })
    };
    let third = REGISTRATION_BYTES / 3;
    assert!(ext.admit_registration(&tool("a", third)));
    assert!(ext.admit_registration(&tool("b", third)));
    // Replacing "b" with a same-size one fits; a third one of that size does not.
    assert!(ext.admit_registration(&tool("b", third)));
    assert!(!ext.admit_registration(&tool("c", third)));
    assert!(ext.admit_registration(&tool("c", 10)));
    assert_eq!(ext.status().registrations_refused, 1);
    for i in 3..REGISTRATIONS {
        assert!(ext.admit_registration(&tool(&format!("t{i}"), 1)), "{i}");
    }
    assert!(!ext.admit_registration(&tool("one-too-many", 1)));
    assert!(
        ext.admit_registration(&tool("a", 1)),
        "a replacement is no new name"
    );
}

#[tokio::test(start_paused = true)]
async fn an_event_flood_leaves_room_for_a_call() {
    // A transport queue as the real ones, which nobody reads: the events fill what
    // they may of it, and a call still finds room (it waits for its answer, which
    // never comes, instead of being refused).
    let (ext, _peer, _notes) = started(OUTBOUND_QUEUE).await;
    for step in 0..(2 * EVENT_QUEUE) {
        ext.deliver_event(&turn(step));
    }
    tokio::time::sleep(Duration::from_millis(50)).await;
    let err = ext
        .call_tool("x", json!({}), Duration::from_millis(100), None)
        .await
        .unwrap_err();
    assert!(matches!(err, CallError::Timeout { .. }), "{err}");
}

#[tokio::test(start_paused = true)]
async fn a_full_event_queue_drops_the_oldest_and_counts() {
    // An outbound queue of 1 that nobody reads: the pump holds one event, the
    // queue fills up behind it.
    let (ext, _peer, _notes) = started(1).await;
    for step in 0..(EVENT_QUEUE + 10) {
        ext.deliver_event(&Event {
            id: None,
            event: "turn_start".into(),
            fields: json!({"step": step}).as_object().unwrap().clone(),
        });
    }
    tokio::time::sleep(Duration::from_millis(50)).await;
    let dropped = ext.status().events_dropped;
    assert!((9..=11).contains(&dropped), "dropped {dropped}");
}
