//! Project trust and identity (issue 3/5): a repository's own extensions
//! (`.zot/extensions`) do not run until the user trusts them as they are; grants and data
//! belong to where an extension is installed, never to its name; a grant given to
//! another build of a component is not applied; `remove` leaves nothing to inherit.
//! Every test drives the real `zot` binary and real extensions.

use crate::common::*;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::Output;
use zot_test_guests::COMMAND;

#[track_caller]
fn ok(out: Output) -> String {
    assert!(out.status.success(), "failed: {}", text(&out));
    text(&out)
}

/// The project's real path, as trust names it.
fn real(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).unwrap()
}

/// The row of `name` (and `source`) in `zot ext list --json`.
fn listed(home: &Path, cwd: &Path, name: &str, source: &str) -> Value {
    let out = zot(home, cwd, &["list", "--json"]);
    let rows: Value = serde_json::from_slice(&out.stdout).expect("list --json is JSON");
    rows.as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == name && r["source"] == source)
        .cloned()
        .unwrap_or_else(|| panic!("no {source} {name} in {rows}"))
}

/// A host laid out in `root` (kept between hosts), with `setup` applied; the marker
/// extension writes to `root/started.txt`.
fn host_in(root: &Path, setup: impl FnOnce(&mut HostBuilder)) -> (Host, Value) {
    let mut b = HostBuilder::in_dir(root);
    b.env(
        "ZOT_TEST_MARKER",
        root.join("started.txt").to_str().unwrap(),
    );
    setup(&mut b);
    let host = b.start();
    let ready = host.ready_event();
    (host, ready)
}

/// A classic extension committed in a repository that writes a marker file when it
/// starts: never started until trusted, started once trusted, untrusted again (and not
/// started) after one of its files changes, and after `untrust`. `--trust-project` and
/// `--ext` start it without a trust record.
#[test]
fn a_project_extension_runs_only_while_the_user_trusts_it_as_it_is() {
    let scratch = TempDir::new("trust-classic");
    let root = scratch.path();
    let home = root.join("home");
    let cwd = root.join("cwd");
    let marker = root.join("started.txt");
    // What a cloned repository could hold: a script that does something, then runs.
    let dir = {
        let mut b = HostBuilder::in_dir(root);
        b.project(
            "marker",
            &json!({"name": "marker", "version": "1.0.0", "exec": "sh", "args": ["run.sh"]}),
        )
    };
    let script = format!(
        "echo started >> \"$ZOT_TEST_MARKER\"\nexec python3 '{}' --name marker --tools marker_tool\n",
        py_ext().display()
    );
    std::fs::write(dir.join("run.sh"), &script).unwrap();
    let command = format!("zot ext trust '{}'", real(&cwd).display());

    // Untrusted: listed with the command, never started.
    let (host, ready) = host_in(root, |_| {});
    println!("host_ready: {ready}");
    assert_eq!(ready["extensions"], json!([]), "{ready}");
    let untrusted = &ready["untrusted"][0];
    assert_eq!(untrusted["extension"], "marker", "{ready}");
    assert_eq!(untrusted["why"], "new", "{ready}");
    assert_eq!(untrusted["command"], command.as_str(), "{ready}");
    let entry = host.entry("marker");
    assert_eq!(entry["state"], "untrusted", "{entry}");
    assert_eq!(entry["untrusted"]["command"], command.as_str(), "{entry}");
    assert!(
        entry["error"].as_str().unwrap().contains(&command),
        "{entry}"
    );
    assert!(
        host.stderr_tail().contains(&command),
        "{}",
        host.stderr_tail()
    );
    host.shutdown();
    assert!(!marker.exists(), "an untrusted extension was started");

    let row = listed(&home, &cwd, "marker", "project");
    assert_eq!(row["state"], "untrusted", "{row}");
    assert_eq!(row["untrusted"]["command"], command.as_str(), "{row}");
    let table = ok(zot(&home, &cwd, &["list"]));
    assert!(
        table.contains("untrusted") && table.contains(&command),
        "{table}"
    );
    let check = zot(&home, &cwd, &["check", "marker", "--json"]);
    assert_eq!(check.status.code(), Some(1), "{}", text(&check));
    let report: Value = serde_json::from_slice(&check.stdout).unwrap();
    assert_eq!(report["untrusted"]["command"], command.as_str(), "{report}");
    assert!(!marker.exists(), "check started an untrusted extension");

    // Trust needs consent: without a terminal and without --yes, nothing is recorded.
    let refused = zot(&home, &cwd, &["trust"]);
    assert_eq!(refused.status.code(), Some(1), "{}", text(&refused));
    assert!(text(&refused).contains("--yes"), "{}", text(&refused));
    assert!(
        !home.join("trust").exists()
            || std::fs::read_dir(home.join("trust"))
                .unwrap()
                .next()
                .is_none()
    );

    // Trusted: what it is and does is shown, then it runs.
    let shown = ok(zot(&home, &cwd, &["trust", "--yes"]));
    println!("{shown}");
    assert!(shown.contains("marker"), "{shown}");
    assert!(shown.contains("full user permissions"), "{shown}");
    assert!(shown.contains("sh run.sh"), "{shown}");
    let (host, ready) = host_in(root, |_| {});
    assert_eq!(ready["extensions"], json!(["marker"]), "{ready}");
    assert_eq!(ready["untrusted"], json!([]), "{ready}");
    host.shutdown();
    assert!(marker.exists(), "a trusted extension did not start");
    assert!(ok(zot(&home, &cwd, &["trust", "--yes"])).contains("nothing changed"));

    // One changed file: untrusted again, not started.
    std::fs::remove_file(&marker).unwrap();
    std::fs::write(
        dir.join("run.sh"),
        format!("# changed after it was trusted\n{script}"),
    )
    .unwrap();
    let (host, ready) = host_in(root, |_| {});
    assert_eq!(ready["extensions"], json!([]), "{ready}");
    assert_eq!(ready["untrusted"][0]["why"], "changed", "{ready}");
    assert_eq!(ready["untrusted"][0]["files"], json!(["run.sh"]), "{ready}");
    host.shutdown();
    assert!(!marker.exists(), "a changed extension was started");

    // Trusted again, then untrusted.
    ok(zot(&home, &cwd, &["trust", "--yes"]));
    ok(zot(&home, &cwd, &["untrust"]));
    let (host, ready) = host_in(root, |_| {});
    assert_eq!(ready["untrusted"][0]["why"], "new", "{ready}");
    host.shutdown();
    assert!(!marker.exists(), "an untrusted extension was started");

    // The compatible mode, and naming it with --ext, start it without a record.
    let (host, ready) = host_in(root, |b| {
        b.arg("--trust-project");
    });
    assert_eq!(ready["extensions"], json!(["marker"]), "{ready}");
    host.shutdown();
    assert!(marker.exists());
    std::fs::remove_file(&marker).unwrap();
    let (host, ready) = host_in(root, |b| {
        b.ext_path(&dir);
    });
    assert_eq!(ready["extensions"], json!(["marker"]), "{ready}");
    host.shutdown();
    assert!(marker.exists());
}

/// A repository cannot switch off a global extension by committing one of its name: the
/// untrusted copy hides nothing, and the global one loads.
#[test]
fn an_untrusted_project_extension_shadows_nothing() {
    let scratch = TempDir::new("trust-shadow");
    let root = scratch.path();
    let (host, ready) = host_in(root, |b| {
        b.global("guard", &py_manifest("guard", &["--tools", "from_global"]));
        b.project("guard", &py_manifest("guard", &["--tools", "from_project"]));
    });
    assert_eq!(ready["extensions"], json!(["guard"]), "{ready}");
    assert_eq!(ready["untrusted"][0]["extension"], "guard", "{ready}");
    let entry = host.entry("guard");
    assert_eq!(entry["source"], "global", "{entry}");
    assert_eq!(entry["tools"], json!(["from_global"]), "{entry}");
    host.shutdown();
    // A name means the copy that loads: the global one, while the project's is untrusted.
    let (home, cwd) = (root.join("home"), root.join("cwd"));
    let info = |extra: &[&str]| {
        let mut args = vec!["info", "guard", "--json"];
        args.extend(extra);
        let v: Value = serde_json::from_str(&ok(zot(&home, &cwd, &args))).unwrap();
        v["scope"].clone()
    };
    assert_eq!(info(&[]), "global");
    assert_eq!(info(&["--project"]), "project");
    ok(zot(&home, &cwd, &["trust", "--yes"]));
    assert_eq!(info(&[]), "project");
}

/// A repository's untrusted folders cost one summary line a load in one log, whatever
/// their number: 200 of them, and one named like a global extension, write nothing into
/// that extension's log (before: a log file each, and a line in the global one's).
#[test]
fn untrusted_folders_cost_one_summary_line_and_nothing_in_an_extensions_log() {
    let scratch = TempDir::new("trust-logs");
    let root = scratch.path();
    let (host, ready) = host_in(root, |b| {
        b.global("guard", &py_manifest("guard", &[]));
        b.project("guard", &py_manifest("guard", &[]));
        for i in 0..200 {
            let name = format!("u{i:03}");
            b.project(&name, &py_manifest(&name, &[]));
        }
    });
    assert_eq!(ready["extensions"], json!(["guard"]), "{ready}");
    assert_eq!(ready["untrusted"].as_array().map(Vec::len), Some(201));
    host.shutdown();
    let logs = root.join("home/logs");
    let mut files: Vec<String> = std::fs::read_dir(&logs)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    files.sort();
    assert_eq!(files, ["ext-guard.log", "untrusted.log"]);
    let guard = std::fs::read_to_string(logs.join("ext-guard.log")).unwrap();
    assert!(!guard.contains("untrusted"), "{guard}");
    let summary = std::fs::read_to_string(logs.join("untrusted.log")).unwrap();
    assert_eq!(summary.lines().count(), 1, "{summary}");
    assert!(summary.len() < 4096, "{} bytes: {summary}", summary.len());
    assert!(
        summary.contains("201 untrusted project extension(s) not started: guard (")
            && summary.contains("and 191 more; `zot ext trust "),
        "{summary}"
    );
}

/// What the component reads of [`SECRET_VAR`] (its `env` tool).
fn secret(host: &Host) -> String {
    first_text(&host.call_tool("env", json!({"name": SECRET_VAR})))
}

/// The component and the environment variable a weather-like extension is granted.
const SECRET_VAR: &str = "ZOT_TRUST_TEST_SECRET";

fn weather(server: &LocalServer) -> Value {
    json!({
        "name": "weather", "version": "1.0.0", "wasm": COMMAND,
        "permissions": {"env": [SECRET_VAR], "http": [format!("http://127.0.0.1:{}", server.port)]},
    })
}

/// A project component named like a granted global one gets nothing of it: no env, no
/// HTTP, and a data dir of its own. The global one, alone, has all three (so the test
/// sees the difference).
#[test]
fn a_project_component_named_like_a_granted_global_one_gets_none_of_its_grant() {
    let server = LocalServer::text("forecast", 8);
    let scratch = TempDir::new("trust-identity");
    let root = scratch.path();
    let (home, cwd) = (root.join("home"), root.join("cwd"));
    let url = format!("http://127.0.0.1:{}/", server.port);
    let global = {
        let mut b = HostBuilder::in_dir(root);
        b.global("weather", &weather(&server))
    };
    ok(zot(
        &home,
        &cwd,
        &["grant", global.to_str().unwrap(), "--all"],
    ));
    let global_data = home.join("data/weather");
    std::fs::create_dir_all(&global_data).unwrap();
    std::fs::write(global_data.join("secret.txt"), "global data").unwrap();

    let start = |root: &Path| {
        host_in(root, |b| {
            b.env(SECRET_VAR, "s3cret");
        })
    };
    // The global component alone: granted.
    let (host, _) = start(root);
    assert_eq!(secret(&host), "s3cret");
    let got = host.call_tool("http_get", json!({"url": url}));
    assert_eq!(got["is_error"], false, "{got}");
    let read = host.call_tool("fs_read", json!({"path": "/data/secret.txt"}));
    assert_eq!(first_text(&read), "global data");
    host.shutdown();
    let hits = server.hits();

    // A repository's component of the same name, trusted to run: none of it.
    let local = {
        let mut b = HostBuilder::in_dir(root);
        b.project("weather", &weather(&server))
    };
    ok(zot(&home, &cwd, &["trust", "--yes"]));
    let (host, _) = start(root);
    let entry = host.entry("weather");
    assert_eq!(entry["source"], "project", "{entry}");
    assert_eq!(entry["sandbox"]["granted"], Value::Null, "{entry}");
    let env = host.call_tool("env", json!({"name": SECRET_VAR}));
    assert_eq!(env["is_error"], true, "{env}");
    let http = host.call_tool("http_get", json!({"url": url}));
    assert_eq!(http["is_error"], true, "{http}");
    let read = host.call_tool("fs_read", json!({"path": "/data/secret.txt"}));
    assert_eq!(
        read["is_error"], true,
        "the global data dir was visible: {read}"
    );
    let wrote = host.call_tool(
        "fs_write",
        json!({"path": "/data/mine.txt", "text": "local"}),
    );
    assert_eq!(wrote["is_error"], false, "{wrote}");
    host.shutdown();
    assert_eq!(
        server.hits(),
        hits,
        "the project component reached the server"
    );
    assert!(!global_data.join("mine.txt").exists());
    let own: Vec<PathBuf> = walk(&home.join("data"))
        .into_iter()
        .filter(|p| p.ends_with("mine.txt"))
        .collect();
    assert_eq!(own.len(), 1, "{own:?}");
    assert!(
        own[0].starts_with(home.join("data/@project")),
        "not a data dir of its own: {}",
        own[0].display()
    );
    // Granting the project copy by name grants that copy, not the global one.
    ok(zot(
        &home,
        &cwd,
        &["grant", "weather", "-p", &format!("env:{SECRET_VAR}")],
    ));
    let (host, _) = start(root);
    assert_eq!(secret(&host), "s3cret");
    let http = host.call_tool("http_get", json!({"url": url}));
    assert_eq!(http["is_error"], true, "{http}");
    host.shutdown();
    assert!(local.is_dir());
}

/// Every file below `dir`.
fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else {
            out.push(path);
        }
    }
    out
}

/// A grant given to one build of a component is not applied to another put in its place:
/// the new one runs with the defaults, and `host_ready`, the listing, `check` and `info`
/// say the grant is stale and how to review it; granting again applies to the new build.
#[test]
fn a_grant_given_to_another_build_is_not_applied() {
    let scratch = TempDir::new("trust-stale");
    let root = scratch.path();
    let (home, cwd) = (root.join("home"), root.join("cwd"));
    let dir = {
        let mut b = HostBuilder::in_dir(root);
        b.global(
            "stale",
            &json!({"name": "stale", "version": "1.0.0", "wasm": "ext.wasm",
                    "permissions": {"env": [SECRET_VAR]}}),
        )
    };
    std::fs::copy(COMMAND, dir.join("ext.wasm")).unwrap();
    ok(zot(&home, &cwd, &["grant", "stale", "--all"]));
    let start = || {
        host_in(root, |b| {
            b.env(SECRET_VAR, "s3cret");
        })
    };
    let (host, ready) = start();
    assert_eq!(ready["warnings"], json!([]), "{ready}");
    assert_eq!(secret(&host), "s3cret");
    host.shutdown();

    // Another build in its place (the reactor build of the same guest).
    std::fs::copy(zot_test_guests::REACTOR, dir.join("ext.wasm")).unwrap();
    let warning = "grant stale — `zot ext grant stale` to review";
    let (host, ready) = start();
    assert_eq!(
        ready["warnings"],
        json!([{"extension": "stale", "warning": warning}]),
        "{ready}"
    );
    let env = host.call_tool("env", json!({"name": SECRET_VAR}));
    assert_eq!(env["is_error"], true, "the stale grant was applied: {env}");
    let entry = host.entry("stale");
    assert_eq!(entry["sandbox"]["grant_stale"], true, "{entry}");
    assert_eq!(entry["sandbox"]["granted"], Value::Null, "{entry}");
    assert!(
        host.log("stale").contains("grant stale"),
        "{}",
        host.log("stale")
    );
    host.shutdown();

    let row = listed(&home, &cwd, "stale", "global");
    assert_eq!(row["sandbox"]["grant_stale"], true, "{row}");
    assert_eq!(row["warning"], warning, "{row}");
    assert!(ok(zot(&home, &cwd, &["list"])).contains(warning));
    let check = zot(&home, &cwd, &["check", "stale", "--json"]);
    let report: Value = serde_json::from_slice(&check.stdout).unwrap();
    assert!(
        report["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|w| w == warning),
        "{report}"
    );
    assert!(ok(zot(&home, &cwd, &["info", "stale"])).contains("not applied"));
    let shown = ok(zot(&home, &cwd, &["grant", "stale"]));
    assert!(shown.contains("another build"), "{shown}");

    // Reviewed and granted again: for this build.
    ok(zot(&home, &cwd, &["grant", "stale", "--all"]));
    let (host, ready) = start();
    assert_eq!(ready["warnings"], json!([]), "{ready}");
    assert_eq!(secret(&host), "s3cret");
    host.shutdown();
}

/// `remove` deletes the grant and the install record, and the data unless kept: a new
/// install of the name inherits none of them.
#[test]
fn remove_then_reinstall_inherits_no_grant_and_no_data() {
    let scratch = TempDir::new("trust-remove");
    let root = scratch.path();
    let (home, cwd) = (root.join("home"), root.join("cwd"));
    std::fs::create_dir_all(&cwd).unwrap();
    let source = |asks: Value| {
        let src = root.join("src");
        std::fs::create_dir_all(&src).unwrap();
        std::fs::copy(COMMAND, src.join("ext.wasm")).unwrap();
        write_manifest(
            &src,
            &json!({"name": "keeper", "version": "1.0.0", "wasm": "ext.wasm", "permissions": asks}),
        );
        src.to_str().unwrap().to_string()
    };
    let grant_file = home.join("grants/keeper.json");
    let data = home.join("data/keeper");
    let record = home.join("provenance/keeper.json");

    ok(zot(
        &home,
        &cwd,
        &["install", &source(json!({"env": [SECRET_VAR]})), "--yes"],
    ));
    let grant: Value = serde_json::from_slice(&std::fs::read(&grant_file).unwrap()).unwrap();
    assert_eq!(grant["permissions"]["env"], json!([SECRET_VAR]), "{grant}");
    assert!(record.is_file());
    std::fs::create_dir_all(&data).unwrap();
    std::fs::write(data.join("notes.txt"), "mine").unwrap();

    // Removed without a terminal: the data is kept, and it says where.
    let said = ok(zot(&home, &cwd, &["remove", "keeper", "--yes"]));
    assert!(said.contains("Kept its data"), "{said}");
    assert!(!grant_file.exists(), "the grant outlived the extension");
    assert!(
        !record.exists(),
        "the install record outlived the extension"
    );
    assert!(data.join("notes.txt").is_file());

    // A new install asks for less: it is granted that, not the old grant's env.
    ok(zot(&home, &cwd, &["install", &source(json!({})), "--yes"]));
    let grant: Value = serde_json::from_slice(&std::fs::read(&grant_file).unwrap()).unwrap();
    assert_eq!(grant["permissions"].get("env"), None, "inherited: {grant}");
    assert!(
        data.join("notes.txt").is_file(),
        "--keep-data is the default here"
    );

    // Purged: nothing left for the next install.
    let said = ok(zot(&home, &cwd, &["remove", "keeper", "--yes", "--purge"]));
    assert!(said.contains("Deleted its data"), "{said}");
    assert!(!data.exists());
    ok(zot(&home, &cwd, &["install", &source(json!({})), "--yes"]));
    let (host, _) = host_in(root, |_| {});
    let listing = host.call_tool("fs_list", json!({"path": "/data"}));
    assert_eq!(first_text(&listing), "[]", "{listing}");
    host.shutdown();
}

/// A repository whose `.zot` is a link into a project the user trusted gets none of that
/// trust: what runs in a folder is decided for that folder.
#[test]
fn trust_does_not_follow_a_link_into_a_trusted_project() {
    let scratch = TempDir::new("trust-linked");
    let root = scratch.path();
    let home = root.join("home");
    let trusted = root.join("trusted");
    write_manifest(
        &trusted.join(".zot/extensions/tool"),
        &py_manifest("tool", &["--tools", "tool_t"]),
    );
    ok(zot(&home, &trusted, &["trust", "--yes"]));
    let cwd = root.join("cwd");
    std::fs::create_dir_all(&cwd).unwrap();
    std::os::unix::fs::symlink(trusted.join(".zot"), cwd.join(".zot")).unwrap();
    let (host, ready) = host_in(root, |_| {});
    assert_eq!(ready["extensions"], json!([]), "{ready}");
    assert_eq!(ready["untrusted"][0]["extension"], "tool", "{ready}");
    assert_eq!(
        ready["untrusted"][0]["project"],
        real(&cwd).to_str().unwrap(),
        "{ready}"
    );
    host.shutdown();
    // Trusted there, it runs there.
    ok(zot(&home, &cwd, &["trust", "--yes"]));
    let (host, ready) = host_in(root, |_| {});
    assert_eq!(ready["extensions"], json!(["tool"]), "{ready}");
    host.shutdown();
}

/// Swaps `dir/prog` between the files `good` and `evil` (hard links made beside `dir`,
/// renamed over it: each swap is atomic) as fast as it can, until dropped.
struct Racer {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: Option<std::thread::JoinHandle<u64>>,
}

impl Racer {
    fn start(dir: &Path, good: &Path, evil: &Path) -> Racer {
        use std::sync::atomic::{AtomicBool, Ordering};
        let stop = std::sync::Arc::new(AtomicBool::new(false));
        let (prog, link) = (dir.join("prog"), dir.with_extension("swap"));
        let (good, evil) = (good.to_path_buf(), evil.to_path_buf());
        let thread = {
            let stop = stop.clone();
            std::thread::spawn(move || {
                let mut swaps = 0;
                while !stop.load(Ordering::Relaxed) {
                    for file in [&evil, &good] {
                        let _ = std::fs::remove_file(&link);
                        std::fs::hard_link(file, &link).unwrap();
                        std::fs::rename(&link, &prog).unwrap();
                        swaps += 1;
                    }
                }
                swaps
            })
        };
        Racer {
            stop,
            thread: Some(thread),
        }
    }

    /// Stops it with the good file in place; how many swaps it made.
    fn stop(mut self) -> u64 {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        self.thread.take().unwrap().join().unwrap()
    }
}

impl Drop for Racer {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
    }
}

/// How the starts of a raced extension ended: run (as the bytes checked), not trusted
/// or confined as it was found, refused at its start as changed since, anything else.
#[derive(Default, Debug)]
struct Starts {
    ran: usize,
    not_admitted: usize,
    refused: usize,
    other: Vec<String>,
}

/// Starts `zot host` in `root` `times` times while [`Racer`] swaps the program of the
/// extension `racer` in `dir` for `/bin/true` (which never says `hello`); how each start
/// ended.
fn race_starts(root: &Path, dir: &Path, good: &Path, times: usize) -> Starts {
    let evil = root.join("evil");
    std::fs::copy("/bin/true", &evil).unwrap();
    let racer = Racer::start(dir, good, &evil);
    let mut starts = Starts::default();
    for _ in 0..times {
        let (host, ready) = host_in(root, |_| {});
        let error = ready["errors"][0]["error"].as_str().unwrap_or_default();
        if ready["untrusted"][0]["extension"] == "racer"
            || error.contains("it changed since it was confined")
        {
            starts.not_admitted += 1;
        } else if ready["extensions"] == json!(["racer"]) && error.is_empty() {
            starts.ran += 1;
            let log = host.log("racer");
            let start = log.lines().rfind(|l| l.contains("info: started ")).unwrap();
            assert!(
                start.ends_with("(stdio, run from a sealed copy of the bytes checked)"),
                "{log}"
            );
        } else if error.contains("changed since its files were checked") {
            starts.refused += 1;
        } else {
            starts.other.push(ready.to_string());
        }
        host.shutdown();
    }
    println!("{} swaps; {starts:?}", racer.stop());
    starts
}

/// Trust, then exec, without a window: a native program swapped for another while its
/// start is decided — the project trust checked, or its confinement's fingerprint — never
/// runs. It runs from a sealed copy of the bytes that were checked, or it is refused as
/// changed since; by its path it would have run `/bin/true` now and then (which the
/// host would report as gone before `hello`).
#[test]
fn a_program_swapped_while_its_start_is_decided_never_runs() {
    let _serial = serial();
    let manifest = json!({"name": "racer", "version": "1.0.0", "exec": "./prog",
                          "args": ["--name", "racer", "--tools", "echo_race"]});
    for confined in [false, true] {
        let scratch = TempDir::new("trust-race");
        let root = scratch.path();
        let (home, cwd) = (root.join("home"), root.join("cwd"));
        let good = root.join("good");
        std::fs::copy(rs_ext(), &good).unwrap();
        let dir = {
            let mut b = HostBuilder::in_dir(root);
            match confined {
                false => b.project("racer", &manifest),
                true => b.global("racer", &manifest),
            }
        };
        std::fs::hard_link(&good, dir.join("prog")).unwrap();
        match confined {
            false => {
                ok(zot(&home, &cwd, &["trust", "--yes"]));
            }
            true => confine_dir(&home, &cwd, &dir, "racer"),
        }
        let starts = race_starts(root, &dir, &good, 24);
        assert!(starts.other.is_empty(), "{starts:#?}");
        // Not swapped, it runs as checked.
        let (host, ready) = host_in(root, |_| {});
        assert_eq!(ready["extensions"], json!(["racer"]), "{ready}");
        assert_eq!(
            host.call_tool("echo_race", json!({"x": 1}))["is_error"],
            false
        );
        host.shutdown();
    }
}
