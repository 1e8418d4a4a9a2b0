//! Install, confine and update keep it confined; confining by default; required confinement.

use super::*;
use serde_json::{json, Value};
use std::net::TcpListener;

/// `install --confine` records the decision with what it asks, consented to; `info`
/// and `list --json` report it; a component cannot be confined; an update of a confined
/// extension asks again and moves the confinement to the new files.
#[test]
fn install_confine_and_update_keep_it_confined() {
    let abi = landlock_abi();
    let world = World::new("confine-install", "hostile-py");
    let source = world.ext.to_str().unwrap();
    let out = world.zot(&["install", source, "--confine", "--yes"]);
    assert_ok(&out);
    let said = stdout(&out);
    assert!(
        said.contains("to run confined (Landlock and seccomp)"),
        "{said}"
    );
    assert!(
        said.contains("use up to 1024 MiB of data memory (RLIMIT_DATA)"),
        "{said}"
    );
    assert!(said.contains("It runs confined."), "{said}");
    assert!(fenced(&probe_target(&world, "hostile").unwrap()));

    let info = stdout(&world.zot(&["info", "hostile"]));
    assert!(
        info.contains(&format!("confined     yes (Landlock ABI {abi} here)")),
        "{info}"
    );
    assert!(
        info.contains("enforced      files: read only the program folders"),
        "{info}"
    );
    let json: Value =
        serde_json::from_slice(&world.zot(&["info", "hostile", "--json"]).stdout).unwrap();
    assert_eq!(json["confinement"]["confined"], true, "{json}");
    assert_eq!(json["confinement"]["by_default"], false, "{json}");
    let list: Value = serde_json::from_slice(&world.zot(&["list", "--json"]).stdout).unwrap();
    let row = &list[0];
    assert_eq!(row["name"], "hostile", "{list}");
    assert_eq!(row["confinement"]["confined"], true, "{list}");

    // An update changes its files: asked again (no terminal, no --yes: refused, nothing
    // changed), then moved to the new files with the user's yes.
    std::fs::write(world.ext.join("NEWS"), "a change\n").unwrap();
    let refused = world.zot(&["update", "hostile"]);
    assert!(!refused.status.success(), "{}", text(&refused));
    assert!(
        text(&refused).contains("Update hostile and run the new files confined?"),
        "{}",
        text(&refused)
    );
    assert!(!world.home.join("extensions/hostile/NEWS").exists());
    let out = world.zot(&["update", "hostile", "--yes"]);
    assert_ok(&out);
    assert!(
        stdout(&out).contains("confined yes: the new files run confined"),
        "{}",
        text(&out)
    );
    assert!(world.home.join("extensions/hostile/NEWS").exists());
    assert!(
        fenced(&probe_target(&world, "hostile").unwrap()),
        "still confined, and started"
    );

    let wasm = write_manifest(
        &world.root.join("comp"),
        &json!({"name": "comp", "wasm": zot_test_guests::REACTOR}),
    );
    let out = world.zot(&["install", wasm.to_str().unwrap(), "--confine", "--yes"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        text(&out).contains("--confine: comp is a component"),
        "{}",
        text(&out)
    );
}

/// `confine --default` confines every classic extension the user did not unconfine;
/// `unconfine NAME` exempts it as its files are (a change confines it again); a
/// settings file that cannot be read refuses the start rather than run it unconfined.
#[test]
fn confining_by_default_spares_only_what_the_user_unconfined_as_it_is() {
    landlock_abi();
    let world = World::new("confine-default", "hostile-py");
    let out = world.zot(&["confine", "--default"]);
    assert_ok(&out);
    assert!(
        stdout(&out).contains("Every classic extension runs confined"),
        "{}",
        text(&out)
    );
    let source = world.ext.to_str().unwrap();
    let out = world.zot(&["install", source, "--yes"]);
    assert_ok(&out);
    assert!(
        stdout(&out).contains("It runs confined (by default)."),
        "{}",
        text(&out)
    );
    assert!(fenced(&probe_target(&world, "hostile").unwrap()));
    let json: Value =
        serde_json::from_slice(&world.zot(&["info", "hostile", "--json"]).stdout).unwrap();
    assert_eq!(json["confinement"]["by_default"], true, "{json}");

    let out = world.zot(&["unconfine", "hostile"]);
    assert_ok(&out);
    assert!(
        stdout(&out).contains("confining by default does not apply to it"),
        "{}",
        text(&out)
    );
    assert!(
        !fenced(&probe_target(&world, "hostile").unwrap()),
        "exempted"
    );
    // The exemption was for those files.
    change(&world.home.join("extensions/hostile/main.py"));
    assert!(
        fenced(&probe_target(&world, "hostile").unwrap()),
        "changed: confined again"
    );

    std::fs::write(world.home.join("settings.json"), "{").unwrap();
    let refused = probe_target(&world, "hostile").unwrap_err();
    assert!(
        refused.contains("not started unconfined: the settings cannot be read"),
        "{refused}"
    );
    std::fs::remove_file(world.home.join("settings.json")).unwrap();
    let out = world.zot(&["confine", "--default"]);
    assert_ok(&out);
    let out = world.zot(&["unconfine", "--default"]);
    assert_ok(&out);
    assert!(
        stdout(&out).contains("no longer confined by default"),
        "{}",
        text(&out)
    );
    assert!(!fenced(&probe_target(&world, "hostile").unwrap()));
}

/// `--require-confinement`: it does not start where this kernel cannot enforce one of
/// its rules, naming the rule; where every rule is enforced, it starts.
#[test]
fn required_confinement_does_not_start_where_a_rule_is_not_enforced() {
    let abi = landlock_abi();
    let world = World::new("confine-require", "hostile-py");
    let out = world.zot(&[
        "confine",
        world.ext.to_str().unwrap(),
        "--require-confinement",
    ]);
    assert_ok(&out);
    let answer = world.probe();
    if abi >= 9 {
        assert!(
            fenced(&answer.unwrap()),
            "every rule is enforced on ABI {abi}"
        );
    } else {
        let refused = answer.unwrap_err();
        println!("{refused}");
        assert!(
            refused.contains(&format!(
                "confinement is required, and this kernel cannot enforce: no connection to \
                 UNIX socket files outside its data and temp dirs (needs Landlock ABI 9, this \
                 kernel has {abi})"
            )),
            "{refused}"
        );
    }
    // Confined again without the flag: it starts.
    world.confine();
    assert!(fenced(&world.probe().unwrap()));
}

/// Issue 36: a confined extension that fails because of what confinement withholds (here
/// the network) gets a hint naming confinement, what it withholds and how to grant or
/// unconfine it — with the extension named as the user named it; unconfined, the same
/// failure has no such hint.
#[test]
fn a_confined_extension_that_fails_is_told_what_confinement_withholds() {
    let scratch = TempDir::new("confine-hint");
    let (home, cwd) = (scratch.path().join("home"), scratch.path().join("cwd"));
    std::fs::create_dir_all(&cwd).unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    // Connects at its tool call, unguarded: a refused socket ends it.
    let script = format!(
        r#"import json, socket, sys
def emit(o):
    sys.stdout.write(json.dumps(o) + "\n"); sys.stdout.flush()
emit({{"type": "hello", "name": "netty", "version": "1.0.0", "capabilities": ["tools"]}})
emit({{"type": "register_tool", "name": "fetch", "description": "d", "schema": {{"type": "object"}}}})
emit({{"type": "ready"}})
for line in sys.stdin:
    msg = json.loads(line)
    if msg["type"] == "tool_call":
        socket.create_connection(("127.0.0.1", {port})).close()
        emit({{"type": "tool_result", "id": msg["id"], "content": [{{"type": "text", "text": "fetched"}}]}})
    elif msg["type"] == "shutdown":
        break
"#
    );
    let ext = write_manifest(
        &scratch.path().join("netty"),
        &json!({"name": "netty", "version": "1.0.0", "exec": "python3", "args": ["-c", script]}),
    );
    let target = ext.to_str().unwrap();
    let call = || zot(&home, &cwd, &["call", target, "fetch"]);
    let out = call();
    assert_ok(&out);
    assert!(!stderr(&out).contains("runs confined"), "{}", stderr(&out));
    // `check` suggests confining it by the name given, a folder here.
    let out = zot(&home, &cwd, &["check", target]);
    assert!(
        stdout(&out).contains(&format!("(`zot ext confine {target}`;")),
        "{}",
        stdout(&out)
    );

    assert_ok(&zot(&home, &cwd, &["confine", target]));
    let out = call();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("exited"), "{err}");
    assert!(
        err.contains("hint: it runs confined, which may be why: network: no IP sockets"),
        "{err}"
    );
    for said in [
        format!("`zot ext grant {target}` shows what its manifest asks"),
        format!("`zot ext unconfine {target}` runs it with your full user permissions"),
    ] {
        assert!(err.contains(&said), "{said} in {err}");
    }
}
