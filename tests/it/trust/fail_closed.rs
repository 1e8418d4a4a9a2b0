//! Project trust fails closed (issue 16, point 1): whatever a repository puts under its
//! `.zot` — folder names that are not extension names, look-alike or `@` names, names
//! that are not UTF-8, a linked `.zot`, a linked `.zot/extensions`, a linked extension
//! folder — is a project extension: it starts only once trusted, hides no global
//! extension of its name, and is reported as untrusted by `zot host`, `list`, `check`,
//! `call`, `shell` and `trust`. Every test drives the real `zot` binary and real
//! extensions.

use crate::common::*;
use serde_json::{json, Value};
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::Duration;

/// What `host_ready` says was started: loaded, or still starting on a busy machine.
fn started(ready: &Value) -> Vec<String> {
    let mut names = str_list(&ready["extensions"]);
    names.extend(str_list(&ready["starting"]));
    names
}

/// The host's tool names once `tool` is among them (an extension may register after
/// `host_ready` on a busy machine).
fn tools_once_up(host: &Host, tool: &str) -> Vec<String> {
    let (tools, _, _) = host.ping_until(Duration::from_secs(30), |h| {
        let tools = h.ok("tools", json!({}))["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_string())
            .collect::<Vec<_>>();
        tools.iter().any(|t| t == tool).then_some(tools)
    });
    tools
}

/// How a repository lays out its extension `guard`.
#[derive(Debug, Clone, Copy)]
enum Layout {
    /// `.zot/extensions/my guard`: not an extension name.
    Space,
    /// `.zot/extensions/guаrd` with a Cyrillic `а`.
    LookAlike,
    /// `.zot/extensions/@guard`: the prefix of identity keys.
    At,
    /// `.zot/extensions/gu\xffard`: not UTF-8.
    NotUtf8,
    /// `.zot` is a link to a folder elsewhere.
    LinkedZot,
    /// `.zot/extensions` is a link to a folder not named `extensions`.
    LinkedExtensions,
    /// `.zot/extensions/guard` is a link to a folder elsewhere.
    LinkedFolder,
}

const LAYOUTS: [Layout; 7] = [
    Layout::Space,
    Layout::LookAlike,
    Layout::At,
    Layout::NotUtf8,
    Layout::LinkedZot,
    Layout::LinkedExtensions,
    Layout::LinkedFolder,
];

impl Layout {
    /// Makes the folder that holds the repository's `guard` in `root/cwd`, and returns it.
    fn lay_out(self, root: &Path) -> PathBuf {
        let cwd = root.join("cwd");
        let extensions = cwd.join(".zot/extensions");
        let elsewhere = root.join("elsewhere");
        let dir = match self {
            Layout::Space => extensions.join("my guard"),
            Layout::LookAlike => extensions.join("gu\u{430}rd"),
            Layout::At => extensions.join("@guard"),
            Layout::NotUtf8 => extensions.join(OsStr::from_bytes(b"gu\xffard")),
            Layout::LinkedZot => {
                std::fs::create_dir_all(elsewhere.join("dotzot/extensions")).unwrap();
                symlink(elsewhere.join("dotzot"), cwd.join(".zot")).unwrap();
                extensions.join("guard")
            }
            Layout::LinkedExtensions => {
                std::fs::create_dir_all(elsewhere.join("plugins")).unwrap();
                std::fs::create_dir_all(cwd.join(".zot")).unwrap();
                symlink(elsewhere.join("plugins"), &extensions).unwrap();
                extensions.join("guard")
            }
            Layout::LinkedFolder => {
                std::fs::create_dir_all(elsewhere.join("guard-src")).unwrap();
                std::fs::create_dir_all(&extensions).unwrap();
                symlink(elsewhere.join("guard-src"), extensions.join("guard")).unwrap();
                extensions.join("guard")
            }
        };
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }
}

/// A project whose repository holds a classic `guard` (in `layout`) that writes
/// `root/started.txt` when it starts, beside a global `guard` the user installed.
struct Project {
    _scratch: TempDir,
    root: PathBuf,
    home: PathBuf,
    cwd: PathBuf,
    marker: PathBuf,
}

impl Project {
    fn new(layout: Layout) -> Project {
        let scratch = TempDir::new("failclosed");
        let root = scratch.path().to_path_buf();
        let b = HostBuilder::in_dir(&root);
        let (home, cwd) = (b.home(), b.cwd());
        write_manifest(
            &home.join("extensions/guard"),
            &py_manifest("guard", &["--name", "guard", "--tools", "global_tool"]),
        );
        let marker = root.join("started.txt");
        let dir = layout.lay_out(&root);
        write_manifest(
            &dir,
            &json!({"name": "guard", "version": "6.6.6", "exec": "sh", "args": ["run.sh"]}),
        );
        std::fs::write(
            dir.join("run.sh"),
            format!(
                "echo started >> '{}'\nexec python3 '{}' --name guard --tools marker_tool\n",
                marker.display(),
                py_ext().display()
            ),
        )
        .unwrap();
        Project {
            _scratch: scratch,
            root,
            home,
            cwd,
            marker,
        }
    }

    fn zot(&self, args: &[&str]) -> Output {
        zot(&self.home, &self.cwd, args)
    }

    fn host(&self, setup: impl FnOnce(&mut HostBuilder)) -> (Host, Value) {
        let mut b = HostBuilder::in_dir(&self.root);
        setup(&mut b);
        let host = b.start();
        let ready = host.ready_event();
        (host, ready)
    }

    #[track_caller]
    fn assert_not_started(&self, layout: Layout, what: &str) {
        assert!(
            !self.marker.exists(),
            "{layout:?}: {what} started an untrusted project extension"
        );
    }
}

/// Untrusted in every layout: `zot host` starts the global `guard`, not the repository's,
/// and lists the repository's as untrusted; `list`, `check`, `call`, `shell` and `trust`
/// say it is untrusted and start nothing. Once trusted it runs (and wins the name), and
/// after a change it is untrusted again.
#[test]
fn whatever_a_repository_lays_out_starts_only_once_trusted() {
    for layout in LAYOUTS {
        let p = Project::new(layout);

        let (host, ready) = p.host(|_| {});
        assert_eq!(started(&ready), ["guard"], "{layout:?}: {ready}");
        let untrusted = ready["untrusted"].as_array().unwrap();
        assert_eq!(untrusted.len(), 1, "{layout:?}: {ready}");
        assert_eq!(untrusted[0]["extension"], "guard", "{layout:?}: {ready}");
        assert_eq!(untrusted[0]["why"], "new", "{layout:?}: {ready}");
        let tools = tools_once_up(&host, "global_tool");
        assert!(
            !tools.contains(&"marker_tool".to_string()),
            "{layout:?}: the global guard must answer: {tools:?}"
        );
        host.shutdown();
        p.assert_not_started(layout, "zot host");

        let list = p.zot(&["list", "--json"]);
        let rows: Value = serde_json::from_slice(&list.stdout).expect("list --json");
        let project_row = rows
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["name"] == "guard" && r["source"] == "project")
            .unwrap_or_else(|| panic!("{layout:?}: no project guard in {rows}"));
        assert_eq!(project_row["state"], "untrusted", "{layout:?}: {rows}");
        p.assert_not_started(layout, "zot ext list");

        let check = p.zot(&["check", "guard", "--project", "--json"]);
        assert_eq!(check.status.code(), Some(1), "{layout:?}: {}", text(&check));
        let report: Value = serde_json::from_slice(&check.stdout).unwrap();
        assert!(report["untrusted"]["command"].is_string(), "{report}");
        p.assert_not_started(layout, "zot ext check");

        let call = p.zot(&["call", "guard", "marker_tool", "--project"]);
        assert_eq!(call.status.code(), Some(2), "{layout:?}: {}", text(&call));
        assert!(text(&call).contains("zot ext trust"), "{}", text(&call));
        p.assert_not_started(layout, "zot ext call");

        let script = p.root.join("script.zot");
        std::fs::write(&script, "tools\n").unwrap();
        let shell = p.zot(&[
            "shell",
            "--cwd",
            p.cwd.to_str().unwrap(),
            "--script",
            script.to_str().unwrap(),
        ]);
        let shown = text(&shell);
        assert!(shown.contains("untrusted"), "{layout:?}: {shown}");
        assert!(!shown.contains("marker_tool"), "{layout:?}: {shown}");
        p.assert_not_started(layout, "zot ext shell");

        // `trust` shows it as not trusted yet and, without consent, records nothing.
        let refused = p.zot(&["trust"]);
        assert_eq!(
            refused.status.code(),
            Some(1),
            "{layout:?}: {}",
            text(&refused)
        );
        assert!(
            text(&refused).contains("not trusted yet"),
            "{layout:?}: {}",
            text(&refused)
        );
        assert!(
            text(&refused).contains("not what the program loads from elsewhere"),
            "the review says what trust does not cover: {}",
            text(&refused)
        );
        assert!(
            !text(&refused).contains("All are trusted"),
            "{}",
            text(&refused)
        );
        p.assert_not_started(layout, "zot ext trust");

        // Trusted, it runs and wins its name over the global one.
        let trusted = p.zot(&["trust", "--yes"]);
        assert!(trusted.status.success(), "{layout:?}: {}", text(&trusted));
        let (host, ready) = p.host(|_| {});
        assert_eq!(ready["untrusted"], json!([]), "{layout:?}: {ready}");
        tools_once_up(&host, "marker_tool");
        host.shutdown();
        assert!(p.marker.exists(), "{layout:?}: trusted, it must start");
        std::fs::remove_file(&p.marker).unwrap();

        // Changed: untrusted again.
        let run = std::fs::read_dir(p.cwd.join(".zot/extensions"))
            .unwrap()
            .map(|e| e.unwrap().path().join("run.sh"))
            .find(|p| p.exists())
            .unwrap();
        let body = std::fs::read_to_string(&run).unwrap();
        std::fs::write(&run, format!("# changed\n{body}")).unwrap();
        let (host, ready) = p.host(|_| {});
        assert_eq!(
            ready["untrusted"][0]["why"], "changed",
            "{layout:?}: {ready}"
        );
        host.shutdown();
        p.assert_not_started(layout, "zot host after a change");
    }
}

/// `--ext PATH` and `$ZOT_HOME`'s own extensions are the only starts without trust:
/// naming a repository's folder starts it; a `.zot/extensions` that is a link to
/// `$ZOT_HOME/extensions` is found once, as the user's own global installs.
#[test]
fn only_what_the_user_named_or_installed_starts_unasked() {
    let p = Project::new(Layout::Space);
    let dir = p.cwd.join(".zot/extensions/my guard");
    let (host, ready) = p.host(|b| {
        b.ext_path(&dir);
    });
    assert_eq!(started(&ready), ["guard"], "{ready}");
    tools_once_up(&host, "marker_tool");
    host.shutdown();
    assert!(p.marker.exists(), "named with --ext, it starts");

    let scratch = TempDir::new("failclosed-home");
    let b = HostBuilder::in_dir(scratch.path());
    write_manifest(
        &b.home().join("extensions/mine"),
        &py_manifest("mine", &["--name", "mine"]),
    );
    std::fs::create_dir_all(b.cwd().join(".zot")).unwrap();
    symlink(b.home().join("extensions"), b.cwd().join(".zot/extensions")).unwrap();
    let host = b.start();
    let ready = host.ready_event();
    assert_eq!(started(&ready), ["mine"], "{ready}");
    assert_eq!(ready["untrusted"], json!([]), "{ready}");
    assert_eq!(host.entry("mine")["source"], "global");
    host.shutdown();
}
