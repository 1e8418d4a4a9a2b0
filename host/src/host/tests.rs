//! The core on in-memory connections: dispatch, shadowing, the interception chain,
//! reload and shutdown, with scripted extensions instead of processes.

use super::*;
use crate::extension::Phase;
use crate::launcher::{self, LaunchFuture};
use crate::paths::ZotHome;
use crate::transport::memory::Peer;
use serde_json::json;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Mutex;
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver, UnboundedSender};
use tokio::time::Instant;

/// What a scripted extension registers, and how it answers interceptions.
#[derive(Clone, Default)]
struct Script {
    tools: Vec<&'static str>,
    intercept: Vec<&'static str>,
    /// Its `event_intercept_response` fields.
    verdict: Value,
    /// Goes on after `shutdown` (until it is killed).
    ignores_shutdown: bool,
    /// How long its launch takes (a component compiling).
    launch_takes: Duration,
    /// Exits (status 1) on its own at this point of every run.
    exits: Option<ExitsAt>,
}

/// Where a crashing script exits by itself.
#[derive(Clone, Copy, PartialEq)]
enum ExitsAt {
    /// Right after its hello: it never gets ready.
    Hello,
    /// Right after `ready`.
    Ready,
}

/// Starts every extension as its [`Script`] on an in-memory pair
/// ([`launcher::Scripted`]), after the script's launch time; records each launch.
struct Scripts {
    scripted: launcher::Scripted,
    launch_takes: HashMap<String, Duration>,
    launches: Mutex<Vec<String>>,
}

impl Launcher for Scripts {
    fn launch<'a>(&'a self, request: launcher::Request<'a>) -> LaunchFuture<'a> {
        let name = request.manifest.name.clone();
        self.launches.lock().unwrap().push(name.clone());
        let takes = self.launch_takes.get(&name).copied().unwrap_or_default();
        Box::pin(async move {
            tokio::time::sleep(takes).await;
            self.scripted.launch(request).await
        })
    }
}

/// The scripted extension: hello, registrations, ready; answers tool calls with
/// `<name>:<tool>` (the tool `crash` exits instead), interceptions with its verdict, and
/// `shutdown` by exiting. Reports each frame the host sends to it as `(name, frame)`.
async fn play(
    name: String,
    script: Script,
    mut peer: Peer,
    seen: UnboundedSender<(String, Value)>,
) {
    let print = |v: Value| v.to_string();
    peer.print(&print(
        json!({"type": "hello", "name": name, "version": "1"}),
    ))
    .await;
    if script.exits == Some(ExitsAt::Hello) {
        return peer.exit(1);
    }
    for tool in &script.tools {
        peer.print(&print(json!({"type": "register_tool", "name": tool,
                                 "description": "d", "schema": {"type": "object"}})))
            .await;
    }
    peer.print(&print(json!({"type": "subscribe", "events": [],
                             "intercept": script.intercept})))
        .await;
    peer.print(r#"{"type":"ready"}"#).await;
    if script.exits == Some(ExitsAt::Ready) {
        return peer.exit(1);
    }
    while let Some(frame) = peer.recv().await {
        let _ = seen.send((name.clone(), frame.clone()));
        let id = frame["id"].clone();
        match frame["type"].as_str().unwrap_or_default() {
            "tool_call" if frame["name"] == "crash" => return peer.exit(3),
            "tool_call" => {
                let text = format!("{name}:{}", frame["name"].as_str().unwrap());
                peer.print(&print(json!({"type": "tool_result", "id": id,
                                         "content": [{"type": "text", "text": text}]})))
                    .await;
            }
            "event_intercept" => {
                let mut answer = script.verdict.clone();
                answer["type"] = json!("event_intercept_response");
                answer["id"] = id;
                peer.print(&print(answer)).await;
            }
            "shutdown" if !script.ignores_shutdown => return peer.exit(0),
            _ => {}
        }
    }
}

struct Fixture {
    host: Host,
    seen: UnboundedReceiver<(String, Value)>,
    notes: mpsc::Receiver<HostEvent>,
    launcher: Arc<Scripts>,
    _dir: Tmp,
}

/// A temporary directory, removed on drop.
struct Tmp(PathBuf);

impl Drop for Tmp {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A host over scripted extensions, given in load order; loaded, every one ready.
async fn loaded(extensions: &[(&str, Script)]) -> Fixture {
    let (f, report) = load_with(extensions, Duration::from_secs(3)).await;
    let names: Vec<&str> = extensions.iter().map(|(n, _)| *n).collect();
    assert_eq!(report.ready, names, "{report:?}");
    f
}

/// A host over scripted extensions, given in load order, with a ready wait of `ready`;
/// loaded, and the load's report.
async fn load_with(extensions: &[(&str, Script)], ready: Duration) -> (Fixture, LoadReport) {
    load_configured(extensions, ready, |_| {}).await
}

/// [`load_with`], the configuration changed by `edit` first (`home` made, empty).
async fn load_configured(
    extensions: &[(&str, Script)],
    ready: Duration,
    edit: impl FnOnce(&mut HostConfig),
) -> (Fixture, LoadReport) {
    static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let root = std::env::temp_dir().join(format!("zot-host-core-{}-{n}", std::process::id()));
    let mut config = HostConfig::new(ZotHome::new(root.join("home")), root.clone());
    config.installed = false;
    config.timeouts.shutdown = Duration::from_millis(200);
    config.timeouts.terminate = Duration::from_millis(200);
    config.timeouts.ready = ready;
    for (name, _) in extensions {
        let dir = root.join(name);
        std::fs::create_dir_all(&dir).unwrap();
        let manifest = json!({"name": name, "exec": "scripted"});
        std::fs::write(dir.join("extension.json"), manifest.to_string()).unwrap();
        config.explicit.push(dir);
    }
    std::fs::create_dir_all(config.home.root()).unwrap();
    edit(&mut config);
    let (seen_tx, seen) = unbounded_channel();
    let scripts: HashMap<String, Script> = extensions
        .iter()
        .map(|(n, s)| (n.to_string(), s.clone()))
        .collect();
    let launch_takes = scripts
        .iter()
        .map(|(n, s)| (n.clone(), s.launch_takes))
        .collect();
    let scripted = launcher::Scripted::new(move |name, peer| {
        let script = scripts.get(&name).cloned().unwrap_or_default();
        play(name, script, peer, seen_tx.clone())
    });
    let launcher = Arc::new(Scripts {
        scripted,
        launch_takes,
        launches: Mutex::new(Vec::new()),
    });
    let (host, notes) = Host::with_launcher(config, launcher.clone());
    let report = host.load().await;
    let f = Fixture {
        host,
        seen,
        notes,
        launcher,
        _dir: Tmp(root),
    };
    (f, report)
}

fn tools(names: &[&'static str]) -> Script {
    Script {
        tools: names.to_vec(),
        ..Script::default()
    }
}

fn interceptor(verdict: Value) -> Script {
    Script {
        intercept: vec!["tool_call"],
        verdict,
        ..Script::default()
    }
}

async fn call(host: &Host, tool: &str) -> Result<(String, String), CallError> {
    let (ext, result) = host.call_tool(tool, json!({}), None).await?;
    let text = result.content[0]["text"].as_str().unwrap().to_string();
    Ok((ext, text))
}

fn tool_call_event(args: Value) -> Event {
    Event {
        id: None,
        event: "tool_call".into(),
        fields: json!({"tool_id": "1", "tool_name": "bash", "tool_args": args})
            .as_object()
            .unwrap()
            .clone(),
    }
}

#[tokio::test]
async fn calls_go_to_the_owner_and_a_shadowed_tool_takes_over_when_it_exits() {
    let f = loaded(&[
        ("a", tools(&["t", "crash"])),
        ("b", tools(&["t", "only_b"])),
    ])
    .await;
    let owners: Vec<_> = f
        .host
        .tools()
        .into_iter()
        .map(|(ext, tool)| (tool.name, ext))
        .collect();
    assert!(owners.contains(&("t".into(), "a".into())), "{owners:?}");
    assert_eq!(
        call(&f.host, "t").await.unwrap(),
        ("a".into(), "a:t".into())
    );
    assert_eq!(
        call(&f.host, "only_b").await.unwrap(),
        ("b".into(), "b:only_b".into())
    );
    let listed = f.host.extensions();
    assert_eq!(listed[1].shadowed, ["t"], "b's t is shadowed by a's");
    assert!(matches!(
        call(&f.host, "nope").await,
        Err(CallError::NotFound(_))
    ));
    assert!(
        matches!(call(&f.host, "read").await, Err(CallError::NotFound(m)) if m.contains("built-in"))
    );

    // a exits mid-call: the call fails at once, and b's t takes over.
    assert!(matches!(
        call(&f.host, "crash").await,
        Err(CallError::Exited { .. })
    ));
    assert_eq!(
        call(&f.host, "t").await.unwrap(),
        ("b".into(), "b:t".into())
    );
    let a = &f.host.extensions()[0];
    assert_eq!(
        (a.state, a.error.as_deref()),
        (ExtState::Exited, Some("exited with status 3"))
    );
}

#[tokio::test]
async fn interceptors_run_in_load_order_rewrites_chain_and_the_first_block_wins() {
    let rewrite = interceptor(json!({"modified_args": {"command": "ls -l"}}));
    let allow = interceptor(json!({}));
    let mut f = loaded(&[("rewrite", rewrite.clone()), ("allow", allow)]).await;
    let verdict = f
        .host
        .intercept(tool_call_event(json!({"command": "ls"})))
        .await;
    assert_eq!(verdict.modified_args, Some(json!({"command": "ls -l"})));
    assert!(!verdict.block);
    // The second interceptor saw the first one's rewrite.
    let asked: Vec<(String, Value)> = std::iter::from_fn(|| f.seen.try_recv().ok())
        .filter(|(_, frame)| frame["type"] == "event_intercept")
        .collect();
    assert_eq!(asked.len(), 2, "{asked:?}");
    assert_eq!(asked[0].0, "rewrite");
    assert_eq!(asked[1].0, "allow");
    assert_eq!(asked[1].1["tool_args"], json!({"command": "ls -l"}));

    let block = interceptor(json!({"block": true, "reason": "no"}));
    let mut f = loaded(&[("block", block), ("rewrite", rewrite)]).await;
    let verdict = f
        .host
        .intercept(tool_call_event(json!({"command": "rm"})))
        .await;
    assert_eq!(
        verdict,
        Verdict {
            block: true,
            reason: Some("no".into()),
            ..Verdict::default()
        }
    );
    let asked: Vec<String> = std::iter::from_fn(|| f.seen.try_recv().ok())
        .filter(|(_, frame)| frame["type"] == "event_intercept")
        .map(|(name, _)| name)
        .collect();
    assert_eq!(asked, ["block"], "after a block nobody else is asked");
}

#[tokio::test]
async fn reload_stops_every_extension_then_starts_them_again() {
    let mut f = loaded(&[("a", tools(&["t"])), ("b", tools(&["u"]))]).await;
    let report = f.host.reload().await;
    assert_eq!(report.stopped, ["a", "b"]);
    assert_eq!(report.loaded, ["a", "b"]);
    assert_eq!(report.ready, ["a", "b"]);
    assert!(report.errors.is_empty(), "{report:?}");
    let shut: Vec<String> = std::iter::from_fn(|| f.seen.try_recv().ok())
        .filter(|(_, frame)| frame["type"] == "shutdown")
        .map(|(name, _)| name)
        .collect();
    assert_eq!(shut.len(), 2, "{shut:?}");
    assert_eq!(*f.launcher.launches.lock().unwrap(), ["a", "b", "a", "b"]);
    assert_eq!(
        call(&f.host, "u").await.unwrap(),
        ("b".into(), "b:u".into())
    );
}

#[tokio::test]
async fn shutdown_tells_every_extension_and_waits_until_all_are_gone() {
    let mut f = loaded(&[("a", tools(&["t"])), ("b", tools(&["u"]))]).await;
    f.host.shutdown().await;
    let mut shut: Vec<String> = std::iter::from_fn(|| f.seen.try_recv().ok())
        .filter(|(_, frame)| frame["type"] == "shutdown")
        .map(|(name, _)| name)
        .collect();
    shut.sort();
    assert_eq!(shut, ["a", "b"]);
    for e in f.host.extensions() {
        assert_eq!(e.state, ExtState::Exited, "{}", e.name);
    }
    assert!(f.host.tools().is_empty());
}

#[tokio::test]
async fn one_that_ignores_shutdown_is_terminated_after_the_grace_the_others_are_not() {
    let stubborn = Script {
        ignores_shutdown: true,
        ..tools(&["t"])
    };
    let mut f = loaded(&[("polite", tools(&["u"])), ("stubborn", stubborn)]).await;
    let started = std::time::Instant::now();
    f.host.shutdown().await;
    let took = started.elapsed();
    let told: Vec<String> = std::iter::from_fn(|| f.seen.try_recv().ok())
        .filter(|(_, frame)| frame["type"] == "shutdown")
        .map(|(name, _)| name)
        .collect();
    assert_eq!(told.len(), 2, "both were asked first: {told:?}");
    assert_eq!(f.host.status("polite").unwrap().forced, None);
    assert_eq!(f.host.status("stubborn").unwrap().forced, Some("SIGTERM"));
    // The grace (200 ms here) passed before SIGTERM, and both are gone.
    assert!(took >= Duration::from_millis(200), "{took:?}");
    for e in f.host.extensions() {
        assert_eq!(e.state, ExtState::Exited, "{}", e.name);
    }
}

/// A start slower than the ready wait (a component compiling) delays nothing: the load
/// returns at the ready wait with it `starting`, and its tools arrive later; a stop
/// meanwhile ends its start, and it never runs.
#[tokio::test(start_paused = true)]
async fn a_slow_start_does_not_hold_the_load_and_a_stop_ends_it() {
    let slow = Script {
        tools: vec!["late"],
        launch_takes: Duration::from_millis(1500),
        ..Script::default()
    };
    let (mut f, report) = load_with(
        &[("fast", tools(&["t"])), ("slow", slow.clone())],
        Duration::from_millis(200),
    )
    .await;
    assert_eq!(report.ready, ["fast"], "{report:?}");
    assert_eq!(report.starting, ["slow"], "{report:?}");
    let state = |host: &Host| {
        let infos = host.extensions();
        infos.iter().find(|e| e.name == "slow").unwrap().state
    };
    assert_eq!(state(&f.host), ExtState::Starting);
    assert_eq!(call(&f.host, "t").await.unwrap().1, "fast:t");
    // Its registrations arrive once it started.
    loop {
        match f.notes.recv().await {
            Some(HostEvent::RegistryChanged { extension }) if extension == "slow" => break,
            Some(_) => continue,
            None => panic!("no registry_changed for the slow extension"),
        }
    }
    assert_eq!(call(&f.host, "late").await.unwrap().1, "slow:late");
    assert_eq!(state(&f.host), ExtState::Ready);
    f.host.shutdown().await;

    // Stopped while starting: it is never started.
    let (f, report) = load_with(&[("slow", slow)], Duration::from_millis(100)).await;
    assert_eq!(report.starting, ["slow"], "{report:?}");
    f.host.shutdown().await;
    // Past the end of its launch (the clock is paused: this sleep ends once every task
    // waits, and then only at 1.8 s): had the stop not ended the start, it would run now.
    tokio::time::sleep(Duration::from_millis(1800)).await;
    assert_eq!(state(&f.host), ExtState::Error);
    assert!(f.host.tools().is_empty());
}

/// A restart policy with round numbers: 1 s doubling to 4 s, 3 restarts in 5 minutes,
/// forgotten after 60 s of running.
fn restart_policy(config: &mut HostConfig) {
    config.restart = RestartPolicy {
        initial: Duration::from_secs(1),
        max_delay: Duration::from_secs(4),
        max_restarts: 3,
        ..RestartPolicy::default()
    };
}

/// The next `extension_exited` or `extension_restarted`, with when it came.
async fn next_life_event(notes: &mut mpsc::Receiver<HostEvent>) -> (HostEvent, Instant) {
    loop {
        let note = tokio::time::timeout(Duration::from_secs(600), notes.recv())
            .await
            .expect("an event within 10 minutes")
            .expect("the host is there");
        if let HostEvent::ExtensionExited { .. } | HostEvent::ExtensionRestarted { .. } = note {
            return (note, Instant::now());
        }
    }
}

/// Whether the wait measured on the paused clock is the one told: told in whole ms,
/// timers fire on the next whole ms.
fn waited_as_told(waited: Duration, told: Duration) -> bool {
    waited >= told && waited <= told + Duration::from_millis(2)
}

/// Waits for `extension_restarted` after `extension_exited`: the restart's number and
/// wait as told, and the wait as measured on the (paused) clock.
async fn exited_then_restarted(
    notes: &mut mpsc::Receiver<HostEvent>,
    reason: &str,
) -> (u32, Duration, Duration) {
    let (exited, at) = next_life_event(notes).await;
    assert!(
        matches!(&exited, HostEvent::ExtensionExited { reason: r, stopped: false, .. } if r == reason),
        "{exited:?}"
    );
    let (restarted, then) = next_life_event(notes).await;
    let HostEvent::ExtensionRestarted {
        attempt,
        delay_ms,
        after,
        ..
    } = restarted
    else {
        panic!("{restarted:?}")
    };
    assert_eq!(after, reason);
    (attempt, Duration::from_millis(delay_ms), then - at)
}

/// An extension that exits mid-call: the call fails at once; it is started again after
/// a wait that doubles (half fixed, half by chance, as measured on a paused clock), its
/// tools come back; after the third restart in the window the next exit is final, and
/// `list` says so.
#[tokio::test(start_paused = true)]
async fn an_extension_that_exits_mid_call_is_started_again_with_backoff_then_given_up() {
    let (mut f, report) = load_configured(
        &[("a", tools(&["t", "crash"]))],
        Duration::from_secs(3),
        restart_policy,
    )
    .await;
    assert_eq!(report.ready, ["a"]);
    for (n, (least, most)) in [(1, (500, 1000)), (2, (1000, 2000)), (3, (2000, 4000))] {
        assert!(matches!(
            call(&f.host, "crash").await,
            Err(CallError::Exited { .. })
        ));
        let (attempt, told, waited) =
            exited_then_restarted(&mut f.notes, "exited with status 3").await;
        assert_eq!(attempt, n);
        let range = Duration::from_millis(least)..=Duration::from_millis(most);
        assert!(range.contains(&told), "restart {n}: told {told:?}");
        assert!(
            waited_as_told(waited, told),
            "restart {n}: {waited:?}, told {told:?}"
        );
        // Back: its tools answer once it is ready again.
        let deadline = Instant::now() + Duration::from_secs(3);
        let a = f.host.inner.running("a").expect("running again");
        assert_eq!(a.wait_ready(deadline).await, Phase::Ready);
        assert_eq!(call(&f.host, "t").await.unwrap().1, "a:t");
    }
    let listed = &f.host.extensions()[0];
    let restarts = listed.restarts.clone().unwrap();
    assert_eq!((restarts.count, restarts.given_up), (3, false));
    assert_eq!(restarts.last_exit.as_deref(), Some("exited with status 3"));

    // The fourth exit within five minutes is final.
    assert!(call(&f.host, "crash").await.is_err());
    let (exited, _) = next_life_event(&mut f.notes).await;
    assert!(matches!(exited, HostEvent::ExtensionExited { .. }));
    tokio::time::sleep(Duration::from_secs(60)).await;
    assert!(f.notes.try_recv().is_err(), "no restart");
    let listed = &f.host.extensions()[0];
    assert_eq!(listed.state, ExtState::Exited);
    assert_eq!(listed.restarts.as_ref().map(|r| r.given_up), Some(true));
    assert_eq!(f.launcher.launches.lock().unwrap().len(), 4);
    f.host.shutdown().await;
}

/// Crash loops at start (right after hello, never ready) and right after ready: each is
/// started again with a growing wait, then given up; the load reports the first exit.
#[tokio::test(start_paused = true)]
async fn crash_loops_at_start_and_after_ready_are_given_up() {
    for exits in [ExitsAt::Hello, ExitsAt::Ready] {
        let script = Script {
            tools: vec!["t"],
            exits: Some(exits),
            ..Script::default()
        };
        let (mut f, _) =
            load_configured(&[("loop", script)], Duration::from_secs(3), restart_policy).await;
        let mut told = Vec::new();
        for _ in 0..3 {
            let (attempt, delay, waited) =
                exited_then_restarted(&mut f.notes, "exited with status 1").await;
            assert!(waited_as_told(waited, delay), "{waited:?}, told {delay:?}");
            told.push((attempt, delay));
        }
        assert_eq!(told.iter().map(|t| t.0).collect::<Vec<_>>(), [1, 2, 3]);
        assert!(told[0].1 < told[2].1, "{told:?}");
        let (exited, _) = next_life_event(&mut f.notes).await;
        assert!(matches!(exited, HostEvent::ExtensionExited { .. }));
        tokio::time::sleep(Duration::from_secs(60)).await;
        let listed = &f.host.extensions()[0];
        assert_eq!(listed.restarts.as_ref().map(|r| r.given_up), Some(true));
        assert_eq!(f.launcher.launches.lock().unwrap().len(), 4);
        f.host.shutdown().await;
    }
}

/// A run longer than `stable` forgets the earlier restarts: the wait is the first one
/// again.
#[tokio::test(start_paused = true)]
async fn a_stable_run_resets_the_backoff() {
    let (mut f, _) = load_configured(
        &[("a", tools(&["t", "crash"]))],
        Duration::from_secs(3),
        restart_policy,
    )
    .await;
    for n in [1, 2] {
        let _ = call(&f.host, "crash").await;
        let (attempt, _, _) = exited_then_restarted(&mut f.notes, "exited with status 3").await;
        assert_eq!(attempt, n);
    }
    let deadline = Instant::now() + Duration::from_secs(3);
    f.host
        .inner
        .running("a")
        .unwrap()
        .wait_ready(deadline)
        .await;
    tokio::time::sleep(Duration::from_secs(61)).await;
    let _ = call(&f.host, "crash").await;
    let (attempt, told, _) = exited_then_restarted(&mut f.notes, "exited with status 3").await;
    assert_eq!(attempt, 1);
    assert!(told <= Duration::from_secs(1), "{told:?}");
    f.host.shutdown().await;
}

/// Restarts off (the user's choice for it in `settings.json`, or the embedder's
/// policy), and an extension the host stopped (a reload): never started again.
#[tokio::test(start_paused = true)]
async fn no_restart_when_off_or_when_the_host_stopped_it() {
    let off_for_a = |config: &mut HostConfig| {
        std::fs::write(config.home.settings_path(), r#"{"restart": {"a": false}}"#).unwrap();
    };
    let off = |config: &mut HostConfig| config.restart = RestartPolicy::off();
    let on_for_a = |config: &mut HostConfig| {
        config.restart = RestartPolicy::off();
        std::fs::write(config.home.settings_path(), r#"{"restart": {"a": true}}"#).unwrap();
    };
    for (edit, restarted) in [
        (&off_for_a as &dyn Fn(&mut HostConfig), false),
        (&off, false),
        (&on_for_a, true),
    ] {
        let (mut f, _) = load_configured(
            &[("a", tools(&["t", "crash"]))],
            Duration::from_secs(3),
            edit,
        )
        .await;
        let _ = call(&f.host, "crash").await;
        let (exited, _) = next_life_event(&mut f.notes).await;
        assert!(matches!(exited, HostEvent::ExtensionExited { .. }));
        tokio::time::sleep(Duration::from_secs(60)).await;
        let again = std::iter::from_fn(|| f.notes.try_recv().ok())
            .any(|n| matches!(n, HostEvent::ExtensionRestarted { .. }));
        assert_eq!(again, restarted);
        f.host.shutdown().await;
    }

    let mut f = loaded(&[("a", tools(&["t"]))]).await;
    f.host.reload().await;
    f.host.shutdown().await;
    tokio::time::sleep(Duration::from_secs(60)).await;
    let again = std::iter::from_fn(|| f.notes.try_recv().ok())
        .any(|n| matches!(n, HostEvent::ExtensionRestarted { .. }));
    assert!(!again, "a stop is no crash");
}
