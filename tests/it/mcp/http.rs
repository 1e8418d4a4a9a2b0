//! `zot mcp --http` against real clients: the token, `Origin` and `Host` checks, sessions
//! and connections capped, notifications to every session, SIGTERM.

use super::server::*;
use crate::common::*;
use serde_json::{json, Value};
use std::ffi::OsString;
use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

impl Project {
    /// Runs the client with `steps` against `zot mcp --http` at `server`.
    fn drive_http(&self, steps: Value, server: &HttpServer) -> Value {
        let target = ["--http", &server.url, TOKEN].map(OsString::from);
        self.run_client(steps, target.to_vec())
    }
}

/// The bearer token the HTTP tests give `--token-file`.
const TOKEN: &str = "t0ken-of-the-test";

/// `zot mcp --http 127.0.0.1:0 --token-file F` running, and where it listens.
pub(super) struct HttpServer {
    child: Child,
    /// `http://127.0.0.1:PORT/mcp`, as it printed.
    url: String,
    /// `127.0.0.1:PORT`.
    pub(super) authority: String,
    /// The `Host` requests name: the authority, unless a test changes it.
    host: String,
}

impl HttpServer {
    /// Starts it (the token file holds [`TOKEN`] amid blanks, which are trimmed) and
    /// waits for the URL it prints on stderr.
    fn start(p: &Project) -> HttpServer {
        HttpServer::start_at(p, "127.0.0.1:0", &[])
    }

    /// [`HttpServer::start`] at `addr`, with `flags`.
    pub(super) fn start_at(p: &Project, addr: &str, flags: &[&str]) -> HttpServer {
        let token_file = p.path("token");
        std::fs::write(&token_file, format!("\n  {TOKEN}  \n")).unwrap();
        let mut argv = p.zot_mcp(&["--http", addr, "--token-file"]);
        argv.push(token_file.into());
        argv.extend(flags.iter().map(OsString::from));
        let mut child = Command::new(&argv[0])
            .args(&argv[1..])
            .env("ZOT_HOME", p.path("home"))
            .current_dir(p.path("cwd"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let (lines, said) = mpsc::channel();
        let stderr = BufReader::new(child.stderr.take().unwrap());
        std::thread::spawn(move || {
            for line in stderr.lines().map_while(Result::ok) {
                let _ = lines.send(line);
            }
        });
        let deadline = Instant::now() + RUN_TIMEOUT;
        let url = loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match said.recv_timeout(left) {
                Ok(line) => {
                    assert!(
                        !line.contains("bearer token"),
                        "a file's token is not printed"
                    );
                    if let Some(url) = line.strip_prefix("zot mcp: serving MCP at ") {
                        break url.to_string();
                    }
                }
                Err(e) => panic!("zot mcp --http printed no URL: {e}"),
            }
        };
        let authority = url
            .trim_start_matches("http://")
            .trim_end_matches("/mcp")
            .to_string();
        HttpServer {
            child,
            url,
            host: authority.clone(),
            authority,
        }
    }

    /// One POST written by hand (`Connection: close`); its status and all it said,
    /// read until the connection closes or `until` was said.
    fn request(&self, headers: &[(&str, &str)], body: &Value, until: &str) -> (u16, String) {
        let mut stream = self.send("POST", headers, &body.to_string());
        let said = read_until(&mut stream, until);
        (http_status(&said), said)
    }

    /// Writes one request; the connection, to read the answer from.
    fn send(&self, method: &str, headers: &[(&str, &str)], body: &str) -> TcpStream {
        let mut stream = self.send_head(method, headers, body.len());
        stream.write_all(body.as_bytes()).unwrap();
        stream
    }

    /// Writes the head of a request whose body is `len` bytes, and no body; its
    /// `MCP-Protocol-Version` is 2025-11-25 unless `headers` give one.
    fn send_head(&self, method: &str, headers: &[(&str, &str)], len: usize) -> TcpStream {
        let mut head = format!(
            "{method} /mcp HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\n\
             Content-Length: {}\r\nConnection: close\r\n",
            self.host, len
        );
        if !headers
            .iter()
            .any(|(name, _)| name.eq_ignore_ascii_case("mcp-protocol-version"))
        {
            head.push_str("MCP-Protocol-Version: 2025-11-25\r\n");
        }
        for (name, value) in headers {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        let mut stream = self.connect();
        stream.write_all(format!("{head}\r\n").as_bytes()).unwrap();
        stream
    }

    /// A connection to it, whose reads time out after [`RUN_TIMEOUT`].
    fn connect(&self) -> TcpStream {
        let stream = TcpStream::connect(&self.authority).unwrap();
        stream.set_read_timeout(Some(RUN_TIMEOUT)).unwrap();
        stream
    }

    /// A session opened by hand (with the token, no `Origin`): its `Mcp-Session-Id`.
    fn session(&self) -> String {
        let auth = format!("Bearer {TOKEN}");
        let (status, said) = self.request(&[("Authorization", &auth)], &initialize(), "\"id\":1");
        assert_eq!(status, 200, "{said}");
        let id = session_id(&said).unwrap_or_else(|| panic!("no session id in {said}"));
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        let headers = [("Authorization", auth.as_str()), ("Mcp-Session-Id", &id)];
        let (status, said) = self.request(&headers, &initialized, "\r\n\r\n");
        assert_eq!(status, 202, "{said}");
        id
    }

    /// SIGTERM; its exit status, within the deadline.
    pub(super) fn terminate(mut self) -> std::process::ExitStatus {
        let pid = self.child.id().to_string();
        assert!(Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap()
            .success());
        exit_within(&mut self.child, RUN_TIMEOUT).expect("zot mcp --http ends on SIGTERM")
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The `Mcp-Session-Id` an HTTP answer gives, if any.
fn session_id(said: &str) -> Option<String> {
    said.lines().find_map(|l| {
        l.to_ascii_lowercase()
            .strip_prefix("mcp-session-id: ")
            .map(str::to_string)
    })
}

/// The status of an HTTP answer.
#[track_caller]
fn http_status(said: &str) -> u16 {
    said.split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no HTTP status in {said:?}"))
}

/// What `stream` says until it closes (or is reset) or says `until`.
fn read_until(stream: &mut TcpStream, until: &str) -> String {
    let mut said = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        let n = match stream.read(&mut chunk) {
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => 0,
            read => read.expect("the server answered in time"),
        };
        said.extend_from_slice(&chunk[..n]);
        if n == 0 || String::from_utf8_lossy(&said).contains(until) {
            return String::from_utf8_lossy(&said).into_owned();
        }
    }
}

/// A `tools/call` of `crash` (the extension exits mid-call were it run).
fn crash_call() -> Value {
    json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
           "params": {"name": "crash", "arguments": {}}})
}

/// The extension still answers: no `crash` ran (a call reaching it ends it).
fn still_answers(p: &Project, server: &HttpServer) {
    let run = p.drive_http(
        json!([{"op": "call", "name": "echo", "args": {"still": 1}}]),
        server,
    );
    assert_eq!(first(&run["steps"][0]), r#"{"still":1}"#, "{run:#}");
}

#[test]
fn http_a_client_lists_and_calls_tools_with_the_token() {
    let mut p = Project::new("mcp-http");
    p.ext("py", &py("py", &["--tools", "echo_py", "--commands", ""]));
    let server = HttpServer::start(&p);
    // Two clients, one after the other: a session each, the same host.
    for n in [1, 2] {
        let run = p.drive_http(
            json!([
                {"op": "init"},
                {"op": "tools"},
                {"op": "call", "name": "echo_py", "args": {"n": n}},
            ]),
            &server,
        );
        let s = &run["steps"];
        assert_eq!(s[0]["server"]["name"], "zot", "{run:#}");
        assert_eq!(names(&s[1], "tools"), ["echo_py"], "{run:#}");
        assert_eq!(first(&s[2]), format!(r#"{{"n":{n}}}"#), "{run:#}");
        assert_eq!(s[2]["isError"], false, "{run:#}");
    }
}

#[test]
fn http_a_foreign_origin_is_refused_and_no_tool_runs() {
    let mut p = Project::new("mcp-http-origin");
    p.ext("py", &py("py", &["--tools", "echo,crash"]));
    let server = HttpServer::start(&p);
    let auth = format!("Bearer {TOKEN}");
    let session = server.session();
    for origin in ["http://evil.example", "http://127.0.0.1:1", "null"] {
        let headers = [
            ("Authorization", auth.as_str()),
            ("Mcp-Session-Id", &session),
            ("Origin", origin),
        ];
        let (status, said) = server.request(&headers, &crash_call(), "\"id\":2");
        assert_eq!(status, 403, "{origin}: {said}");
    }
    // This server's own origin passes (a page it served could call).
    let own = format!("http://{}", server.authority);
    let headers = [
        ("Authorization", auth.as_str()),
        ("Mcp-Session-Id", &session),
        ("Origin", &own),
    ];
    let list = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list"});
    let (status, said) = server.request(&headers, &list, "\"id\":3");
    assert_eq!(status, 200, "{said}");
    still_answers(&p, &server);
}

#[test]
fn http_no_or_a_wrong_token_is_refused_and_no_tool_runs() {
    let mut p = Project::new("mcp-http-token");
    p.ext("py", &py("py", &["--tools", "echo,crash"]));
    let server = HttpServer::start(&p);
    let session = server.session();
    let wrong = format!("Bearer {TOKEN}x");
    let short = format!("Bearer {}", &TOKEN[1..]);
    let basic = format!("Basic {TOKEN}");
    for auth in [None, Some(wrong.as_str()), Some(&short), Some(&basic)] {
        let mut headers = vec![("Mcp-Session-Id", session.as_str())];
        headers.extend(auth.map(|a| ("Authorization", a)));
        let (status, said) = server.request(&headers, &crash_call(), "\"id\":2");
        assert_eq!(status, 401, "{auth:?}: {said}");
        assert!(
            said.to_ascii_lowercase()
                .contains("www-authenticate: bearer"),
            "{said}"
        );
    }
    still_answers(&p, &server);
}

#[test]
fn http_sigterm_ends_zot_mcp_with_0_and_stops_the_extensions() {
    let mut p = Project::new("mcp-http-term");
    let pid_file = p.path("pid");
    p.ext("py", &py("py", &["--touch", pid_file.to_str().unwrap()]));
    let server = HttpServer::start(&p);
    still_answers(&p, &server);
    let status = server.terminate();
    assert_eq!(status.code(), Some(0), "{status:?}");
    assert_shut_down(&p, &pid_file);
}

#[test]
fn http_notifications_reach_every_open_session() {
    let mut p = Project::new("mcp-http-notes");
    p.ext(
        "py",
        &py("py", &["--tools", "echo_ping", "--events", "tool_call"]),
    );
    let server = HttpServer::start(&p);
    // A session opened by hand, listening on its GET stream.
    let session = server.session();
    let auth = format!("Bearer {TOKEN}");
    let headers = [
        ("Authorization", auth.as_str()),
        ("Mcp-Session-Id", &session),
    ];
    let mut listening = server.send("GET", &headers, "");
    let head = read_until(&mut listening, "\r\n\r\n");
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    // Another client calls a tool: the subscriber's notify about it reaches both.
    let run = p.drive_http(
        json!([
            {"op": "call", "name": "echo_ping", "args": {}},
            {"op": "wait_log", "prefix": "event "},
        ]),
        &server,
    );
    assert!(
        run["steps"][1]["data"]
            .as_str()
            .unwrap()
            .contains("echo_ping"),
        "{run:#}"
    );
    let said = read_until(&mut listening, "echo_ping");
    assert!(said.contains("notifications/message"), "{said}");
}

/// Point 3 of MCP both ways: MCP servers loaded as extensions are served again by
/// `zot mcp`, beside zot extensions, behind the same guard.
#[test]
fn mcp_servers_loaded_as_extensions_are_served_again() {
    let mut p = Project::new("mcp-reserved");
    p.ext("guard", &py("guard", &["--mode", "guard"]));
    p.ext("py", &py("py", &["--tools", "echo_py", "--commands", ""]));
    p.ext(
        "everything",
        &super::extensions::official("everything", "everything", &["stdio"], "ev."),
    );
    let allowed = p.path("cwd");
    std::fs::write(p.path("outside.txt"), "secret").unwrap();
    let outside = p.path("outside.txt");
    p.ext(
        "fs",
        &super::extensions::official("fs", "filesystem", &[allowed.to_str().unwrap()], "fs."),
    );
    let run = p.drive(
        json!([
            {"op": "tools"},
            {"op": "call", "name": "ev.echo", "args": {"message": "through two hops"}},
            {"op": "call", "name": "ev.get-structured-content", "args": {"location": "Chicago"}},
            {"op": "call", "name": "ev.echo", "args": {"message": "guard:refuse"}},
            {"op": "call", "name": "echo_py", "args": {"x": 1}},
            {"op": "call", "name": "fs.read_text_file", "args": {"path": outside}},
        ]),
        &[],
    );
    let s = &run["steps"];
    let tools = names(&s[0], "tools");
    for tool in [
        "echo_py",
        "ev.echo",
        "ev.get-structured-content",
        "fs.read_text_file",
    ] {
        assert!(tools.contains(&tool.to_string()), "{tool} in {tools:?}");
    }
    let schema = s[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "ev.get-structured-content")
        .unwrap();
    assert_eq!(schema["outputSchema"]["type"], "object", "{schema}");
    assert_eq!(first(&s[1]), "Echo: through two hops", "{run:#}");
    assert!(s[2]["structuredContent"].is_object(), "{run:#}");
    // The guard refuses a call to an MCP server's tool as it would any other.
    assert_eq!(s[3]["isError"], true, "{run:#}");
    assert_eq!(first(&s[3]), "refused: asked to refuse", "{run:#}");
    assert_eq!(first(&s[4]), r#"{"x":1}"#, "{run:#}");
    // The filesystem server refuses a path outside its root: an error result.
    assert_eq!(s[5]["isError"], true, "{run:#}");
    assert!(first(&s[5]).contains("outside allowed"), "{run:#}");
}

/// Other machines only by a name allowed: without `--http-allow-host` a non-loopback
/// address is refused at start; with it, `Host` and `Origin` may name that name (and
/// loopback), and no other.
#[test]
fn http_serves_other_machines_only_by_the_names_allowed() {
    let mut p = Project::new("mcp-http-remote");
    p.ext("py", &py("py", &["--tools", "echo_py", "--commands", ""]));
    let token_file = p.path("token");
    std::fs::write(&token_file, TOKEN).unwrap();
    let mut refused = p.zot_mcp(&["--http", "0.0.0.0:0", "--token-file"]);
    refused.push(token_file.clone().into());
    let out = Command::new(&refused[0])
        .args(&refused[1..])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(text(&out).contains("--http-allow-host"), "{}", text(&out));

    let mut server = HttpServer::start_at(&p, "0.0.0.0:0", &["--http-allow-host", "zot.test"]);
    let port = server.authority.rsplit(':').next().unwrap().to_string();
    server.host = format!("zot.test:{port}");
    server.session();
    let auth = format!("Bearer {TOKEN}");
    let init = initialize();
    let origin = format!("http://zot.test:{port}");
    let ok = server.request(
        &[("Authorization", &auth), ("Origin", &origin)],
        &init,
        "\"id\":1",
    );
    assert_eq!(ok.0, 200, "{}", ok.1);
    for bad in ["http://evil.example", "https://zot.test.evil.example"] {
        let (status, said) = server.request(
            &[("Authorization", &auth), ("Origin", bad)],
            &init,
            "\r\n\r\n",
        );
        assert_eq!(status, 403, "{bad}: {said}");
    }
    server.host = format!("evil.example:{port}");
    let (status, said) = server.request(&[("Authorization", &auth)], &init, "\r\n\r\n");
    assert!(status == 403 || status == 400, "a foreign Host: {said}");
    assert!(server.terminate().success());
}

/// 64 connections at once: one more is closed unanswered, and once they close requests
/// are answered again. A body over `--max-frame-bytes` is answered 413.
#[test]
fn http_connections_are_capped_and_a_body_over_the_cap_is_413() {
    let mut p = Project::new("mcp-http-conns");
    p.ext("py", &py("py", &["--tools", "echo", "--commands", ""]));
    let server = HttpServer::start_at(&p, "127.0.0.1:0", &["--max-frame-bytes", "4096"]);
    let auth = format!("Bearer {TOKEN}");
    let headers = [("Authorization", auth.as_str())];
    // Each answer read until the server closes its connection, which holds one of the 64
    // places until then (on a loaded machine, past the next line of this test).
    let closed = "\0";
    let mut padded = initialize();
    padded["params"]["pad"] = json!("x".repeat(8192));
    let (status, said) = server.request(&headers, &padded, closed);
    assert_eq!(status, 413, "{said}");
    // Issue 37: a request of 2026-07-28 (no session) is held to the same caps.
    let (mut big, version) = stateless_list(2);
    big["params"]["pad"] = json!("x".repeat(8192));
    let modern = [headers[0], version[0], version[1]];
    let (status, said) = server.request(&modern, &big, closed);
    assert_eq!(status, 413, "{said}");
    // Requests whose body never comes hold 64 connections (no deadline runs on a body),
    // half of each generation.
    let held: Vec<TcpStream> = (0..64)
        .map(|i| match i % 2 {
            0 => server.send_head("POST", &headers, 100),
            _ => server.send_head("POST", &modern, 100),
        })
        .collect();
    let init = initialize().to_string();
    let list = stateless_list(3).0.to_string();
    for (asked, body) in [(&headers[..], &init), (&modern[..], &list)] {
        // Closed unanswered: writing its body may already fail.
        let mut refused = server.send_head("POST", asked, body.len());
        let _ = refused.write_all(body.as_bytes());
        assert_eq!(
            read_until(&mut refused, "\r\n\r\n"),
            "",
            "the 65th was answered"
        );
    }
    drop(held);
    for (asked, body) in [(&headers[..], &init), (&modern[..], &list)] {
        let deadline = Instant::now() + REQUEST_TIMEOUT;
        loop {
            let said = read_until(&mut server.send("POST", asked, body), "\r\n\r\n");
            if said.starts_with("HTTP/1.1 200") {
                break;
            }
            assert!(said.is_empty() && Instant::now() < deadline, "{said}");
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// A request of 2026-07-28, which has no sessions: `tools/list` with its revision in
/// `_meta` and its headers.
fn stateless_list(id: u64) -> (Value, [(&'static str, &'static str); 2]) {
    let body = json!({"jsonrpc": "2.0", "id": id, "method": "tools/list", "params": {"_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}}}});
    (
        body,
        [
            ("MCP-Protocol-Version", "2026-07-28"),
            ("Mcp-Method", "tools/list"),
        ],
    )
}

/// Issue 37: 32 sessions open, then one more: the session idle the longest is closed to
/// make room — its client told by 404 on its next request, as the spec says — and the
/// others are served; a request of 2026-07-28 is never refused for the sessions; with
/// the table full a foreign `Host` or `Origin` still gets 403, before the token is
/// looked at.
#[test]
fn http_a_full_session_table_closes_the_idlest_and_refuses_no_one() {
    let mut p = Project::new("mcp-http-sessions");
    p.ext("py", &py("py", &["--tools", "echo", "--commands", ""]));
    let server = HttpServer::start(&p);
    let sessions: Vec<String> = (0..32).map(|_| server.session()).collect();
    let auth = format!("Bearer {TOKEN}");
    let list = |session: &str, id: u64| {
        let body = json!({"jsonrpc": "2.0", "id": id, "method": "tools/list"});
        let headers = [
            ("Authorization", auth.as_str()),
            ("Mcp-Session-Id", session),
        ];
        server.request(&headers, &body, &format!("\"id\":{id}"))
    };
    // The first one is heard from again: the idlest is now the second.
    assert_eq!(list(&sessions[0], 2).0, 200);

    let (body, version) = stateless_list(3);
    let headers = [("Authorization", auth.as_str()), version[0], version[1]];
    let (status, said) = server.request(&headers, &body, "\"id\":3");
    assert_eq!(
        status, 200,
        "a stateless request with 32 sessions open: {said}"
    );
    assert!(said.contains("echo"), "{said}");

    let newest = server.session();
    let (status, said) = list(&sessions[1], 4);
    assert_eq!(status, 404, "the idlest session was closed: {said}");
    for (session, id) in [(&sessions[0], 5), (&sessions[31], 6), (&newest, 7)] {
        let (status, said) = list(session, id);
        assert_eq!(status, 200, "{said}");
    }

    // Foreign names are refused first, whatever else the request lacks.
    let origin = [("Origin", "http://evil.example")];
    let (status, said) = server.request(&origin, &initialize(), "\r\n\r\n");
    assert_eq!(status, 403, "{said}");
    let mut server = server;
    server.host = "evil.example".into();
    let (status, said) = server.request(&[], &initialize(), "\r\n\r\n");
    assert_eq!(status, 403, "{said}");
}

/// Issue 37: 40 clients in a row that never say goodbye (`DELETE`), as the official
/// SDK's `close()` does not, are all served; 40 `initialize`s at once all open a session,
/// and the table still holds 32 (the count is checked and a session made in one step).
#[test]
fn http_clients_that_never_delete_are_all_served_and_the_table_holds_32() {
    let mut p = Project::new("mcp-http-session-race");
    p.ext("py", &py("py", &["--tools", "echo", "--commands", ""]));
    let server = HttpServer::start(&p);
    for _ in 0..40 {
        server.session();
    }
    let auth = format!("Bearer {TOKEN}");
    let body = initialize().to_string();
    // Every head first, then every body at once, each by a thread of its own.
    let heads: Vec<TcpStream> = (0..40)
        .map(|_| server.send_head("POST", &[("Authorization", &auth)], body.len()))
        .collect();
    let at_once = std::sync::Barrier::new(heads.len());
    let answers: Vec<(u16, String)> = std::thread::scope(|s| {
        let asked: Vec<_> = heads
            .into_iter()
            .map(|mut stream| {
                let (at_once, body) = (&at_once, &body);
                s.spawn(move || {
                    at_once.wait();
                    stream.write_all(body.as_bytes()).unwrap();
                    let said = read_until(&mut stream, "\"id\":1");
                    (http_status(&said), said)
                })
            })
            .collect();
        asked.into_iter().map(|t| t.join().unwrap()).collect()
    });
    let statuses: Vec<u16> = answers.iter().map(|(s, _)| *s).collect();
    assert!(statuses.iter().all(|s| *s == 200), "{statuses:?}");
    let open = answers
        .iter()
        .filter(|(_, said)| {
            let id = session_id(said).unwrap();
            let body = json!({"jsonrpc": "2.0", "id": 9, "method": "ping"});
            let headers = [
                ("Authorization", auth.as_str()),
                ("Mcp-Session-Id", id.as_str()),
            ];
            server.request(&headers, &body, "\"id\":9").0 == 200
        })
        .count();
    assert_eq!(open, 32, "{statuses:?}");
}

/// A request whose head never ends, and a connection that never sends one, are cut off
/// 10 s after they began; other clients are served meanwhile.
#[test]
fn http_a_request_head_that_never_ends_is_cut_off_after_10_s() {
    let mut p = Project::new("mcp-http-slow");
    p.ext("py", &py("py", &["--tools", "echo", "--commands", ""]));
    let server = HttpServer::start(&p);
    let began = Instant::now();
    let head = format!("POST /mcp HTTP/1.1\r\nHost: {}\r\n", server.host);
    let (mut slow, mut idle) = (server.connect(), server.connect());
    slow.write_all(head.as_bytes()).unwrap();
    still_answers(&p, &server);
    for stream in [&mut slow, &mut idle] {
        let said = read_until(stream, "\r\n\r\n");
        let took = began.elapsed();
        println!("cut off after {took:?}, having said {said:?}");
        assert!(took >= Duration::from_secs(9), "cut off early: {took:?}");
        assert!(
            took < Duration::from_secs(60),
            "not cut off in time: {took:?}"
        );
        assert!(!said.contains("200"), "{said}");
    }
}
