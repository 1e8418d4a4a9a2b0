//! The invariants of what the host reads from outside, checked on any input: by the fuzz
//! targets (`fuzz/`, built with `--cfg fuzzing`) and by the property tests of the normal
//! test suite, with the same code. Each check runs the host's own code as the host calls
//! it and panics when an invariant breaks.

use crate::caps::HostPattern;
use crate::component::inspect::{self, MAX_MEMORIES, MAX_TABLES};
use crate::manifest::{validate_name, Embedded, Manifest};
use crate::records::Permission;
use std::net::IpAddr;
use std::path::{Path, PathBuf};

/// An `extension.json`: one that validates names itself plainly and one program, and
/// reads back the same from its own JSON.
pub fn manifest(text: &[u8]) {
    let Ok(m) = Manifest::from_json(text) else {
        return;
    };
    validate_name(&m.name).expect("a valid manifest has a plain name");
    let programs = [m.exec.is_some(), m.wasm.is_some(), m.mcp.is_some()];
    assert_eq!(programs.iter().filter(|&&p| p).count(), 1, "{m:?}");
    let _ = m.typo_warnings();
    let again = serde_json::to_vec(&m).expect("a manifest encodes");
    assert_eq!(Manifest::from_json(&again).as_ref(), Ok(&m));
}

/// A component's bytes: the one pass that reads them never panics, measures within every
/// cap when it says so, and reads an embedded manifest only as a valid one.
pub fn component(bytes: &[u8]) {
    let found = inspect::inspect(bytes);
    let _ = found.world();
    if let Ok(m) = found.within_caps() {
        assert!(m.bytes == bytes.len() && m.bytes <= inspect::MAX_COMPONENT_BYTES);
        assert!(m.functions <= inspect::MAX_FUNCTIONS, "{m:?}");
        assert!(m.largest_body <= inspect::MAX_BODY_BYTES, "{m:?}");
        assert!(m.most_locals <= inspect::MAX_LOCALS, "{m:?}");
        assert!(m.deepest_nesting <= inspect::MAX_NESTING, "{m:?}");
        assert!(m.largest_br_table <= inspect::MAX_BR_TABLE, "{m:?}");
        assert!(
            m.tables <= MAX_TABLES && m.memories <= MAX_MEMORIES,
            "{m:?}"
        );
    }
    if let Ok(Some(embedded)) = Embedded::of(bytes) {
        if let Some(name) = &embedded.name {
            validate_name(name).expect("an embedded name is a plain name");
        }
    }
}

/// A permission as the user names it (`zot ext grant -p`): one that parses is written
/// back as a text that parses to it.
pub fn permission(text: &str) {
    let Ok(permission) = text.parse::<Permission>() else {
        return;
    };
    let again = permission.to_string();
    assert_eq!(
        again.parse::<Permission>().ok(),
        Some(permission),
        "{text:?}"
    );
}

/// A `permissions.http` entry and a request: an entry that parses is written back as
/// one that parses to it, and allows a request only to its scheme and port, and only to
/// its host (the same address) or, for `*.domain`, to a name under the domain — never
/// the domain itself, an address or a name that merely ends like it.
pub fn host_pattern(entry: &str, scheme: &str, host: &str, port: u16) {
    let Ok(pattern) = HostPattern::parse(entry) else {
        return;
    };
    let again = HostPattern::parse(&pattern.to_string()).expect("written back, it parses");
    assert_eq!(again, pattern, "{entry:?}");
    let host = host.to_ascii_lowercase();
    // The request asked, and one to the entry's own scheme and port.
    for (scheme, port) in [(scheme, port), (pattern.scheme, pattern.port_or_default())] {
        if pattern.allows(scheme, &host, port) {
            allowed_by(&pattern, scheme, &host, port, entry);
        }
    }
}

/// Panics unless `pattern` (`entry`) should allow a request to `scheme://host:port`.
fn allowed_by(pattern: &HostPattern, scheme: &str, host: &str, port: u16, entry: &str) {
    assert_eq!(scheme, pattern.scheme);
    assert_eq!(port, pattern.port_or_default());
    match pattern.host.strip_prefix("*.") {
        Some(domain) => {
            assert!(host.parse::<IpAddr>().is_err(), "{entry:?} allows {host:?}");
            let sub = host.strip_suffix(&format!(".{domain}"));
            assert!(
                sub.is_some_and(|s| !s.is_empty()),
                "{entry:?} allows {host:?}"
            );
        }
        None => match (pattern.literal_ip(), host.parse::<IpAddr>()) {
            (Some(a), Ok(b)) => assert_eq!(a, b),
            (None, Err(_)) => assert_eq!(host, pattern.host),
            _ => panic!("{entry:?} allows {host:?}"),
        },
    }
}

/// One entry of an extension's folder as an install source holds it: at `path` (names
/// joined by `/`), a folder, a file, or a link whose text is `target`.
#[derive(Debug, Clone)]
pub enum Entry {
    Dir(String),
    File(String),
    Link(String, String),
}

/// The install copy of a folder made of `entries` (those that can be made: a name that
/// is not plain, or under a file, is left out): beside it a secret and nothing else. Every
/// link of a copy that succeeds leads inside the copy; the secret and the source are
/// untouched either way; nothing is written beside the copy.
pub fn install_tree(entries: &[Entry]) {
    let root = scratch("install");
    let (src, dst, outside) = (root.join("src"), root.join("dst"), root.join("outside"));
    std::fs::create_dir_all(&src).expect("scratch");
    std::fs::create_dir_all(&outside).expect("scratch");
    std::fs::write(outside.join("secret"), "secret").expect("scratch");
    for entry in entries {
        lay(&src, entry);
    }
    let before = listing(&root);
    let from = cap_std::fs::Dir::open_ambient_dir(&src, cap_std::ambient_authority())
        .expect("the source opens");
    let copied = crate::manage::install::copy_dir(&from, &dst);
    let after = listing(&root);
    let beside: Vec<_> = after
        .iter()
        .filter(|(p, _)| !p.starts_with("dst"))
        .collect();
    assert_eq!(beside, before.iter().collect::<Vec<_>>(), "{entries:?}");
    assert_eq!(
        std::fs::read_to_string(outside.join("secret"))
            .ok()
            .as_deref(),
        Some("secret")
    );
    if copied.is_ok() {
        let real_dst = dst.canonicalize().expect("the copy exists");
        for (path, _) in after.iter().filter(|(p, _)| p.starts_with("dst")) {
            let at = root.join(path);
            let meta = std::fs::symlink_metadata(&at).expect("listed");
            if meta.is_symlink() {
                let real = at.canonicalize().expect("a kept link resolves");
                assert!(
                    real.starts_with(&real_dst),
                    "{path:?} → {real:?}: {entries:?}"
                );
            }
        }
    }
    let _ = std::fs::remove_dir_all(&root);
}

/// Makes `entry` under `src`, if its path is plain names and its place can hold it.
fn lay(src: &Path, entry: &Entry) {
    let (Entry::Dir(path) | Entry::File(path) | Entry::Link(path, _)) = entry;
    let plain = |name: &str| !name.is_empty() && name != "." && name != ".." && name != ".git";
    if !path.split('/').all(plain) {
        return;
    }
    let at = src.join(path);
    let made = match entry {
        Entry::Dir(_) => std::fs::create_dir_all(&at),
        Entry::File(_) => std::fs::write(&at, "x"),
        Entry::Link(_, target) => std::os::unix::fs::symlink(target, &at),
    };
    let _ = made;
}

/// Every path under `root`, relative, sorted, links not followed; with each file's bytes.
fn listing(root: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut found = Vec::new();
    let mut todo = vec![PathBuf::new()];
    while let Some(rel) = todo.pop() {
        let Ok(read) = std::fs::read_dir(root.join(&rel)) else {
            continue;
        };
        for entry in read.flatten() {
            let path = rel.join(entry.file_name());
            let meta = entry.metadata().expect("listed");
            if meta.is_dir() {
                todo.push(path.clone());
            }
            let content = match meta.is_file() {
                true => std::fs::read(root.join(&path)).unwrap_or_default(),
                false => Vec::new(),
            };
            found.push((path, content));
        }
    }
    found.sort();
    found
}

/// A fresh folder for one check, removed by its caller.
fn scratch(what: &str) -> PathBuf {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("zot-{what}-{}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// What an MCP server lists and answers (its JSON), in the zot protocol's words: a tool
/// keeps its name after the prefix and has an object schema; an answer keeps its call's
/// id, its error flag and one block per block, each a text, an image, audio or an
/// embedded resource, a text block's text, a medium's data and a resource's uri, text or
/// blob exactly.
pub fn mcp_from_server(tool: &[u8], answer: &[u8]) {
    use crate::transport::mcp::map;
    if let Ok(tool) = serde_json::from_slice::<rmcp::model::Tool>(tool) {
        let registered = map::register(&tool, "p_");
        assert_eq!(registered.name, format!("p_{}", tool.name));
        assert!(registered.schema.is_object());
    }
    let Ok(answer) = serde_json::from_slice::<rmcp::model::CallToolResult>(answer) else {
        return;
    };
    let mcp = serde_json::to_value(&answer.content).expect("content encodes");
    let result = map::result("7".into(), Ok(answer.clone())).expect("an answer maps");
    assert_eq!(result.id, "7");
    assert_eq!(result.is_error, answer.is_error.unwrap_or(false));
    assert_eq!(result.content.len(), answer.content.len());
    for (zot, mcp) in result.content.iter().zip(mcp.as_array().expect("a list")) {
        match zot["type"].as_str() {
            Some("text") if mcp["type"] == "text" => assert_eq!(zot["text"], mcp["text"]),
            Some("text") => assert!(zot["text"].is_string()),
            Some("image" | "audio") => assert_eq!(zot["data"], mcp["data"]),
            Some("resource") => {
                let (z, m) = (&zot["resource"], &mcp["resource"]);
                assert_eq!(z["uri"], m["uri"]);
                assert!(
                    z["text"] == m["text"] && z["blob"] == m["blob"],
                    "{zot} of {mcp}"
                );
            }
            _ => panic!("{zot} is neither a text, an image, audio nor a resource"),
        }
    }
}

/// The core fed `script` by one extension over the in-memory transport, while the agent
/// calls every tool and command it registers, intercepts and emits: nothing panics,
/// every call ends (answered, failed or timed out), the registrations stay within their
/// caps and the shutdown ends. The script is one line per step: `!` waits until the
/// host is quiet (10 ms without a frame), `exit` ends the extension; in any other line, printed,
/// `$ID`, `$TOOL`, `$COMMAND` and `$INTERCEPT` stand for the id of the last frame the
/// host sent, of its last `tool_call`, `command_invoked` and `event_intercept`. Runs on a
/// paused clock: a deadline passes as soon as nothing else can happen.
#[cfg(any(test, feature = "test-support"))]
pub fn core(script: &[u8]) {
    use crate::launcher::Scripted;
    use crate::{Host, HostConfig, ZotHome};
    use serde_json::json;
    use std::sync::Arc;
    use std::time::Duration;

    let dir = scratch("core");
    std::fs::create_dir_all(dir.join("ext")).expect("scratch");
    let manifest = r#"{"name": "fuzzed", "exec": "fuzzed"}"#;
    std::fs::write(dir.join("ext/extension.json"), manifest).expect("scratch");
    let script: Arc<Vec<Vec<u8>>> =
        Arc::new(script.split(|&b| b == b'\n').map(<[u8]>::to_vec).collect());
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()
        .expect("a runtime");
    runtime.block_on(async {
        let mut config = HostConfig::new(ZotHome::new(dir.join("home")), dir.clone());
        config.explicit = vec![dir.join("ext")];
        config.installed = false;
        let play = Scripted::new(move |_, peer| play(script.clone(), peer));
        let (host, mut notes) = Host::with_launcher(config, Arc::new(play));
        tokio::spawn(async move { while notes.recv().await.is_some() {} });
        let agent = async {
            host.load().await;
            let tools = host.tools();
            assert!(tools.len() <= crate::caps::registrations::REGISTRATIONS);
            let mut calls = tokio::task::JoinSet::new();
            for (_, tool) in tools.into_iter().take(4) {
                let name = tool.name;
                let host = host.clone();
                calls.spawn(async move {
                    let _ = host
                        .call_tool(&name, json!({}), Some(Duration::from_secs(1)))
                        .await;
                });
            }
            for (_, command) in host.commands().into_iter().take(4) {
                let name = command.name;
                let host = host.clone();
                calls.spawn(async move {
                    let _ = host.invoke_command(&name, "").await;
                });
            }
            let event = |name: &str| zot_protocol::Event {
                id: None,
                event: name.into(),
                fields: json!({"tool_name": "bash", "tool_args": {}})
                    .as_object()
                    .cloned()
                    .unwrap_or_default(),
            };
            host.emit(&event("turn_start"));
            let _ = host.intercept(event("tool_call")).await;
            while calls.join_next().await.is_some() {}
        };
        tokio::time::timeout(Duration::from_secs(600), agent)
            .await
            .expect("every call ends");
        tokio::time::timeout(Duration::from_secs(60), host.shutdown())
            .await
            .expect("the shutdown ends");
    });
    let _ = std::fs::remove_dir_all(&dir);
}

/// Plays the extension of [`core`]: `script`, then silence until the shutdown.
#[cfg(any(test, feature = "test-support"))]
async fn play(script: std::sync::Arc<Vec<Vec<u8>>>, mut peer: crate::transport::memory::Peer) {
    use crate::transport::Inbound;
    let mut ids = Ids::default();
    for line in script.iter() {
        while let Ok(frame) = peer.frames.try_recv() {
            ids.note(frame);
        }
        match line.as_slice() {
            b"!" => {
                let quiet = std::time::Duration::from_millis(10);
                while let Ok(Some(frame)) = tokio::time::timeout(quiet, peer.frames.recv()).await {
                    ids.note(frame);
                }
            }
            b"exit" => return peer.exit(1),
            _ => {
                if peer
                    .lines
                    .send(Inbound::Line(ids.fill(line), None))
                    .await
                    .is_err()
                {
                    return;
                }
            }
        }
    }
    while let Some(frame) = peer.frames.recv().await {
        if ids.note(frame) == Noted::Shutdown {
            return peer.exit(0);
        }
    }
}

/// The ids of the last frames the host sent to [`play`], by the placeholder that stands
/// for them: `$ID` any frame's, `$TOOL` a `tool_call`'s, `$COMMAND` a
/// `command_invoked`'s, `$INTERCEPT` an `event_intercept`'s.
#[cfg(any(test, feature = "test-support"))]
#[derive(Default)]
struct Ids(std::collections::BTreeMap<&'static str, String>);

#[cfg(any(test, feature = "test-support"))]
#[derive(PartialEq)]
enum Noted {
    Shutdown,
    Other,
}

#[cfg(any(test, feature = "test-support"))]
impl Ids {
    const KINDS: [(&'static str, &'static str); 3] = [
        ("tool_call", "$TOOL"),
        ("command_invoked", "$COMMAND"),
        ("event_intercept", "$INTERCEPT"),
    ];

    fn note(&mut self, frame: crate::transport::Outbound) -> Noted {
        let frame: serde_json::Value = serde_json::from_str(frame.line.json()).unwrap_or_default();
        if frame["type"] == "shutdown" {
            return Noted::Shutdown;
        }
        let Some(id) = frame["id"].as_str() else {
            return Noted::Other;
        };
        self.0.insert("$ID", id.to_string());
        for (kind, placeholder) in Ids::KINDS {
            if frame["type"] == kind {
                self.0.insert(placeholder, id.to_string());
            }
        }
        Noted::Other
    }

    /// `line` with each placeholder replaced by its id (or nothing, before there is one).
    fn fill(&self, line: &[u8]) -> Vec<u8> {
        if !line.contains(&b'$') {
            return line.to_vec();
        }
        let mut text = String::from_utf8_lossy(line).into_owned();
        for placeholder in ["$TOOL", "$COMMAND", "$INTERCEPT", "$ID"] {
            let id = self.0.get(placeholder).map_or("", String::as_str);
            text = text.replace(placeholder, id);
        }
        text.into_bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::{json, Value};

    /// Text made of `pieces` and a few arbitrary characters.
    fn text_of(pieces: &'static [&'static str]) -> impl Strategy<Value = String> {
        let piece = prop_oneof![
            4 => prop::sample::select(pieces).prop_map(str::to_string),
            1 => any::<char>().prop_map(String::from),
        ];
        prop::collection::vec(piece, 0..8).prop_map(|p| p.concat())
    }

    fn json_value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            prop::sample::select(&[0i64, 1, 64, 65_536, -1, 1 << 40][..]).prop_map(Value::from),
            text_of(&["a", "x", "../", "*.", "example.com", ":443", "\u{1b}[2K"])
                .prop_map(Value::from),
        ];
        leaf.prop_recursive(3, 16, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::from),
                prop::collection::vec((key(), inner), 0..4)
                    .prop_map(|fields| Value::Object(fields.into_iter().collect())),
            ]
        })
    }

    fn key() -> impl Strategy<Value = String> {
        prop::sample::select(
            &[
                "name",
                "version",
                "exec",
                "wasm",
                "mcp",
                "args",
                "permissions",
                "limits",
                "enabled",
                "http",
                "env",
                "data_dir",
                "cwd",
                "memory_mb",
                "disk_mb",
                "command",
                "url",
                "type",
                "text",
                "data",
                "mimeType",
                "resource",
                "content",
                "isError",
                "structuredContent",
                "inputSchema",
                "description",
                "x",
            ][..],
        )
        .prop_map(str::to_string)
    }

    /// `base` with up to six fields set to arbitrary values, as JSON text.
    fn object(base: Value) -> impl Strategy<Value = Vec<u8>> {
        prop::collection::vec((key(), json_value()), 0..7).prop_map(move |fields| {
            let mut object = base.as_object().cloned().unwrap_or_default();
            object.extend(fields);
            serde_json::to_vec(&object).expect("encodes")
        })
    }

    /// An MCP content block of each kind, with arbitrary fields more.
    fn block() -> impl Strategy<Value = Value> {
        let kind =
            prop::sample::select(&["text", "image", "audio", "resource", "resource_link", "x"][..]);
        (kind, prop::collection::vec((key(), json_value()), 0..3)).prop_map(|(kind, fields)| {
            let mut block = json!({"type": kind, "text": "t", "data": "aGk=", "mimeType": "a/b",
                "uri": "file:///u", "name": "u", "resource": {"uri": "file:///r", "text": "r"}});
            block.as_object_mut().expect("an object").extend(fields);
            block
        })
    }

    fn entry() -> impl Strategy<Value = Entry> {
        let path = prop::collection::vec(prop::sample::select(&["a", "b", "..", "."][..]), 1..4)
            .prop_map(|names| names.join("/"));
        let target = text_of(&["a", "b", "..", "/", ".", "/etc", "outside", "secret", "dst"]);
        prop_oneof![
            path.clone().prop_map(Entry::Dir),
            path.clone().prop_map(Entry::File),
            (path, target).prop_map(|(p, t)| Entry::Link(p, t)),
        ]
    }

    /// An extension's usual start: a tool, a command, an interceptor, `ready`.
    const PROLOGUE: &str = concat!(
        r#"{"type":"hello","name":"fuzzed","version":"1"}"#,
        "\n",
        r#"{"type":"register_tool","name":"t","description":"d","schema":{"type":"object"}}"#,
        "\n",
        r#"{"type":"register_command","name":"c","description":"d"}"#,
        "\n",
        r#"{"type":"subscribe","events":["turn_start"],"intercept":["tool_call"]}"#,
        "\n",
        r#"{"type":"ready"}"#,
        "\n",
    );

    fn script() -> impl Strategy<Value = Vec<u8>> {
        let line = prop::sample::select(
            &[
                r#"{"type":"hello","name":"fuzzed","version":"1"}"#,
                r#"{"type":"hello","name":"other"}"#,
                r#"{"type":"register_tool","name":"t","description":"d","schema":{"type":"object"}}"#,
                r#"{"type":"register_tool","name":"u","description":"d","schema":3}"#,
                r#"{"type":"register_command","name":"c","description":"d"}"#,
                r#"{"type":"subscribe","events":["turn_start"],"intercept":["tool_call"]}"#,
                r#"{"type":"ready"}"#,
                r#"{"type":"tool_result","id":"$ID","content":[{"type":"text","text":"r"}]}"#,
                r#"{"type":"tool_result","id":"$ID","content":7}"#,
                r#"{"type":"command_response","id":"$ID","action":"prompt","prompt":"p"}"#,
                r#"{"type":"event_intercept_response","id":"$ID","block":true,"reason":"no"}"#,
                r#"{"type":"call_tool","id":"own","name":"t","args":{}}"#,
                r#"{"type":"notify","message":"m","level":"info"}"#,
                r#"{"type":"open_panel","id":"p","title":"T","lines":["a"]}"#,
                r#"{"type":"shutdown_ack"}"#,
                r#"{"type":"nope"}"#,
                r#"{"id":"$ID""#,
                "not json",
                "!",
                // Waits, then answers what came.
                concat!(
                    "!\n",
                    r#"{"type":"tool_result","id":"$TOOL","content":[{"type":"text","text":"r"}]}"#
                ),
                concat!(
                    "!\n",
                    r#"{"type":"command_response","id":"$COMMAND","action":"prompt","prompt":"p"}"#
                ),
                concat!(
                    "!\n",
                    r#"{"type":"event_intercept_response","id":"$INTERCEPT","block":false}"#
                ),
                "exit",
            ][..],
        );
        // Most scripts start as an extension does, so that there is something to call.
        let start = prop::sample::select(&[PROLOGUE, PROLOGUE, ""][..]);
        (start, prop::collection::vec(line, 0..16))
            .prop_map(|(start, lines)| format!("{start}{}", lines.join("\n")).into_bytes())
    }

    /// Host names and addresses, some alike.
    const NAMES: &[&str] = &[
        "example.com",
        "EXAMPLE.com",
        "xample.com",
        "com",
        "127.0.0.1",
        "127.000.0.1",
        "::1",
        "[::1]",
        "0:0:0:0:0:0:0:1",
        "a-b.c",
        "",
    ];

    /// A component's, a core module's, and none.
    const HEADERS: &[&[u8]] = &[b"\0asm\x0d\x00\x01\x00", b"\0asm\x01\x00\x00\x00", b""];

    proptest! {
        #[test]
        fn a_manifest_that_validates_is_plain_and_reads_back(
            text in object(json!({"name": "ok", "exec": "run"})),
        ) {
            manifest(&text);
        }

        #[test]
        fn a_component_is_read_within_its_caps_or_refused(
            body in prop::collection::vec(any::<u8>(), 0..64),
            header in prop::sample::select(HEADERS),
        ) {
            component(&[header, &body].concat());
        }

        #[test]
        fn a_permission_reads_back_as_itself(text in text_of(&[
            "data_dir", "cwd", ":read", "env:", "http:", "memory:", "disk:", "resources:",
            "http_requests:", "field_kib:", "1", "0", "64", "*.example.com", ":443", "[::1]",
        ])) {
            permission(&text);
        }


        #[test]
        fn an_mcp_servers_tools_and_answers_keep_their_shape(
            tool in object(json!({"name": "t", "inputSchema": {"type": "object"}})),
            blocks in prop::collection::vec(block(), 0..4),
            is_error in any::<Option<bool>>(),
        ) {
            let answer = json!({"content": blocks, "isError": is_error});
            mcp_from_server(&tool, answer.to_string().as_bytes());
        }
    }

    proptest! {
        // Cheap, and the pairs that matter are a few in thousands.
        #![proptest_config(ProptestConfig::with_cases(20_000))]

        #[test]
        fn a_host_pattern_allows_only_its_own(
            entry in (
                prop::sample::select(&["", "http://", "https://", "ftp://"][..]),
                prop::sample::select(&["", "*."][..]),
                prop::sample::select(NAMES),
                prop::sample::select(&["", ":8080", ":443", ":80", ":x"][..]),
            ).prop_map(|(scheme, wild, name, port)| format!("{scheme}{wild}{name}{port}")),
            scheme in prop::sample::select(&["http", "https"][..]),
            host in (
                prop::sample::select(&["", "a.", ".", "evil", "a.b.", "A."][..]),
                prop::sample::select(NAMES),
            ).prop_map(|(sub, name)| format!("{sub}{name}")),
            port in prop::sample::select(&[80u16, 443, 8080, 0][..]),
        ) {
            host_pattern(&entry, scheme, &host, port);
        }
    }

    proptest! {
        #[test]
        fn an_installed_tree_never_leads_out_of_its_copy(entries in prop::collection::vec(entry(), 0..8)) {
            install_tree(&entries);
        }

        #[test]
        fn the_core_ends_every_call_whatever_an_extension_sends(script in script()) {
            core(&script);
        }
    }
}
