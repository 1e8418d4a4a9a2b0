//! Completion and man pages (issue 17): installed extension names complete after every
//! command that takes one, an extension's tools after `call NAME` and its commands after
//! `invoke NAME` once zot has seen them (completion never starts an extension),
//! directories and `.wasm` files where a path goes; `zot man --dir` writes a page for every command any page names. Every test
//! drives the real `zot` binary, and one the real bash.

use crate::common::*;
use std::path::Path;
use std::process::{Command, Output, Stdio};

/// What zot offers for the last word of `words` (`["zot", "ext", "info", "g"]`), as fish
/// asks it (one candidate a line, a tab before its description): the values only.
fn complete(home: &Path, cwd: &Path, words: &[&str]) -> Vec<String> {
    let out = Command::new(env!("CARGO_BIN_EXE_zot"))
        .arg("--")
        .args(words)
        .env("ZOT_COMPLETE", "fish")
        .env("ZOT_HOME", home)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .output()
        .expect("zot runs");
    assert!(out.status.success(), "{words:?}: {}", text(&out));
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| l.split('\t').next().unwrap_or_default().to_string())
        .collect()
}

/// What zot offers for the last word of `words`, flags left out.
fn values(home: &Path, cwd: &Path, words: &[&str]) -> Vec<String> {
    let mut got = complete(home, cwd, words);
    got.retain(|c| !c.starts_with('-'));
    got
}

/// A home with the global extensions `guard` and `glow` (Python test extensions) and a
/// project, not trusted, holding `gpx`; returns the builder and a subfolder of the project.
fn setup(tag: &str) -> (TempDir, std::path::PathBuf, std::path::PathBuf) {
    let scratch = TempDir::new(tag);
    let mut b = HostBuilder::in_dir(scratch.path());
    b.global(
        "guard",
        &py_manifest(
            "guard",
            &["--tools", "forecast,fetch", "--commands", "note,nag"],
        ),
    );
    b.global("glow", &py_manifest("glow", &[]));
    b.project("gpx", &py_manifest("gpx", &["--tools", "gadget"]));
    let (home, cwd) = (b.home(), b.cwd());
    let sub = cwd.join("src");
    std::fs::create_dir_all(&sub).unwrap();
    drop(b);
    (scratch, home, sub)
}

#[test]
fn installed_names_complete_after_every_command_that_takes_one() {
    let (_scratch, home, sub) = setup("compl-names");
    for verb in [
        "info", "remove", "rm", "verify", "enable", "disable", "logs", "update", "grant", "revoke",
        "check", "call", "invoke",
    ] {
        let got = complete(&home, &sub, &["zot", "ext", verb, "g"]);
        for name in ["guard", "glow", "gpx"] {
            assert!(got.contains(&name.to_string()), "{verb}: {got:?}");
        }
        let got = complete(&home, &sub, &["zot", "ext", verb, "gu"]);
        assert!(!got.contains(&"glow".to_string()), "{verb}: {got:?}");
    }
    // Nothing was started to find them.
    assert!(!home.join("logs").exists(), "an extension was started");
}

#[test]
fn the_bash_script_of_zot_completions_dynamic_completes_names() {
    let (_scratch, home, sub) = setup("compl-bash");
    let bin = Path::new(env!("CARGO_BIN_EXE_zot"));
    let script = "source <(zot completions bash --dynamic)
COMP_WORDS=(zot ext info g); COMP_CWORD=3; COMP_TYPE=9
_clap_complete_zot zot g info
printf '%s\\n' \"${COMPREPLY[@]}\"";
    let path = format!(
        "{}:{}",
        bin.parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = Command::new("bash")
        .args(["-c", script])
        .env("PATH", path)
        .env("ZOT_HOME", &home)
        .current_dir(&sub)
        .stdin(Stdio::null())
        .output()
        .expect("bash runs");
    let got = String::from_utf8_lossy(&out.stdout);
    let got: Vec<&str> = got.lines().collect();
    assert!(
        got.contains(&"guard") && got.contains(&"glow") && got.contains(&"gpx"),
        "{got:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn every_shell_gets_a_dynamic_script_and_the_standalone_one_is_as_before() {
    let scratch = TempDir::new("compl-scripts");
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let args = ["completions", shell, "--dynamic"];
        let out = zot_top(scratch.path(), scratch.path(), &args);
        assert!(out.status.success(), "{shell}: {}", text(&out));
        let script = String::from_utf8_lossy(&out.stdout);
        assert!(script.contains("ZOT_COMPLETE"), "{shell}: {script}");
        let out = zot_top(scratch.path(), scratch.path(), &["completions", shell]);
        assert!(out.status.success(), "{shell}: {}", text(&out));
        let script = String::from_utf8_lossy(&out.stdout);
        assert!(
            !script.contains("ZOT_COMPLETE") && script.contains("install"),
            "{shell}: {script}"
        );
    }
}

#[test]
fn tools_and_commands_complete_once_zot_has_seen_them_and_completion_never_starts_one() {
    let (_scratch, home, sub) = setup("compl-tools");
    // Never run: nothing is known, and completing does not start it to find out.
    assert!(values(&home, &sub, &["zot", "ext", "call", "guard", ""]).is_empty());
    assert!(
        !home.join("logs").exists(),
        "completion started an extension"
    );
    // `call` without a tool lists them, and zot remembers them.
    let out = zot(&home, &sub, &["call", "guard"]);
    assert!(text(&out).contains("forecast"), "{}", text(&out));
    let got = values(&home, &sub, &["zot", "ext", "call", "guard", ""]);
    assert_eq!(got, ["fetch", "forecast"]);
    let got = complete(&home, &sub, &["zot", "ext", "call", "guard", "fo"]);
    assert_eq!(got, ["forecast"]);
    // And its commands after `invoke`, with the `/` when it is typed.
    let got = values(&home, &sub, &["zot", "ext", "invoke", "guard", "n"]);
    assert_eq!(got, ["nag", "note"]);
    let got = values(&home, &sub, &["zot", "ext", "invoke", "guard", "/no"]);
    assert_eq!(got, ["/note"]);
    // Flags before the extension are skipped, with their values.
    let got = complete(
        &home,
        &sub,
        &[
            "zot", "ext", "call", "--wait", "5s", "--json", "guard", "fe",
        ],
    );
    assert_eq!(got, ["fetch"]);
    // By its folder too: the same install.
    let dir = home.join("extensions/guard");
    let got = values(
        &home,
        &sub,
        &["zot", "ext", "call", dir.to_str().unwrap(), ""],
    );
    assert_eq!(got, ["fetch", "forecast"]);
    // The project's untrusted extension is never started: no tools, no log.
    assert!(values(&home, &sub, &["zot", "ext", "call", "gpx", ""]).is_empty());
    assert!(!home.join("logs/gpx.log").exists(), "gpx was started");
}

#[test]
fn a_remembered_tool_that_is_not_a_plain_word_is_not_offered() {
    let (_scratch, home, sub) = setup("compl-hostile");
    let memory = home.join("completion");
    std::fs::create_dir_all(&memory).unwrap();
    std::fs::write(
        memory.join("guard.json"),
        r#"{"tools": ["ok", "$(touch pwned)", "a b", "x;y", "\u001b[2J", "fine.too"]}"#,
    )
    .unwrap();
    let got = values(&home, &sub, &["zot", "ext", "call", "guard", ""]);
    assert_eq!(got, ["fine.too", "ok"]);
    // A manifest's description reaches the terminal escaped, on one line.
    let desc = home.join("extensions/glow/extension.json");
    let mut m: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&desc).unwrap()).unwrap();
    m["description"] = "evil\u{1b}]0;title\u{7}\nsecond".into();
    std::fs::write(&desc, m.to_string()).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_zot"))
        .args(["--", "zot", "ext", "info", "gl"])
        .env("ZOT_COMPLETE", "fish")
        .env("ZOT_HOME", &home)
        .current_dir(&sub)
        .output()
        .unwrap();
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(shown.starts_with("glow\tglobal: evil"), "{shown:?}");
    assert!(
        !shown.contains('\u{1b}') && !shown.contains('\u{7}'),
        "{shown:?}"
    );
    assert_eq!(shown.lines().count(), 1, "{shown:?}");
}

#[test]
fn paths_complete_where_a_path_goes() {
    let scratch = TempDir::new("compl-paths");
    let cwd = scratch.path();
    std::fs::create_dir_all(cwd.join("weather")).unwrap();
    std::fs::write(cwd.join("wasm-guard.wasm"), b"\0asm").unwrap();
    std::fs::write(cwd.join("wordlist.txt"), b"x").unwrap();
    let home = cwd.join("home");
    // An extension to load: directories and components, not other files.
    for words in [
        &["zot", "host", "--ext", "w"][..],
        &["zot", "ext", "install", "w"],
        &["zot", "ext", "check", "w"],
        &["zot", "ext", "run", "w"],
    ] {
        let got = complete(&home, cwd, words);
        assert!(
            got.contains(&"weather/".to_string()) && got.contains(&"wasm-guard.wasm".to_string()),
            "{words:?}: {got:?}"
        );
        assert!(
            !got.contains(&"wordlist.txt".to_string()),
            "{words:?}: {got:?}"
        );
    }
    // A directory: directories only.
    for words in [
        &["zot", "host", "--cwd", "w"][..],
        &["zot", "ext", "shell", "--cwd", "w"],
        &["zot", "ext", "new", "x", "--dir", "w"],
        &["zot", "man", "--dir", "w"],
    ] {
        let got = complete(&home, cwd, words);
        assert_eq!(got, ["weather/"], "{words:?}");
    }
}

#[test]
fn man_writes_a_page_for_every_command_a_page_names() {
    let scratch = TempDir::new("man-pages");
    let dir = scratch.path().join("man1");
    let out = zot_top(
        scratch.path(),
        scratch.path(),
        &["man", "--dir", dir.to_str().unwrap()],
    );
    assert!(out.status.success(), "{}", text(&out));
    let mut pages = std::collections::BTreeMap::new();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let roff = std::fs::read_to_string(&path).unwrap();
        assert!(
            roff.contains(".TH ") && roff.contains(".SH NAME"),
            "{}",
            path.display()
        );
        pages.insert(
            path.file_name().unwrap().to_str().unwrap().to_string(),
            roff,
        );
    }
    for name in [
        "zot.1",
        "zot-ext.1",
        "zot-host.1",
        "zot-ext-install.1",
        "zot-ext-call.1",
    ] {
        assert!(
            pages.contains_key(name),
            "{name} missing: {:?}",
            pages.keys()
        );
    }
    // Each page written is printed, one a line.
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).lines().count(),
        pages.len()
    );
    // A page names the pages above it.
    let install = &pages["zot-ext-install.1"];
    let see_also = install
        .split_once(".SH \"SEE ALSO\"\n")
        .expect("SEE ALSO")
        .1;
    assert!(
        see_also.starts_with("\\fBzot\\-ext\\fR(1), \\fBzot\\fR(1)"),
        "{see_also}"
    );
    // Every page named (`zot\-ext\-install(1)` in roff) is in the set.
    for (page, roff) in &pages {
        for (at, _) in roff.match_indices("(1)") {
            let start = roff[..at]
                .rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '\\'))
                .map_or(0, |i| i + 1);
            let named = roff[start..at]
                .replace("\\-", "-")
                .replace("\\fB", "")
                .replace("\\fR", "");
            if named.starts_with("zot") {
                assert!(
                    pages.contains_key(&format!("{named}.1")),
                    "{page} names {named}(1)"
                );
            }
        }
    }
    // No args: zot's own page, as before; words name a command's page (an alias too).
    let top = zot_top(scratch.path(), scratch.path(), &["man"]);
    assert_eq!(String::from_utf8_lossy(&top.stdout), pages["zot.1"]);
    for (words, page) in [
        (&["man", "ext", "install"][..], "zot-ext-install.1"),
        (&["man", "ext", "rm"], "zot-ext-remove.1"),
        (&["man", "host"], "zot-host.1"),
    ] {
        let out = zot_top(scratch.path(), scratch.path(), words);
        assert!(out.status.success(), "{words:?}: {}", text(&out));
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            pages[page],
            "{words:?}"
        );
    }
    let out = zot_top(scratch.path(), scratch.path(), &["man", "ext", "nope"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.starts_with("zot: man: zot ext has no command \"nope\""),
        "{err}"
    );
    assert!(err.contains("hint: `zot ext --help`"), "{err}");
}

/// `zot ext call` of the weather component, its service at `api` (granted), in `home`.
fn weather_at(home: &Path, cwd: &Path, dir: &Path, api: &str) -> Output {
    Command::new(env!("CARGO_BIN_EXE_zot"))
        .args(["ext", "call", dir.to_str().unwrap(), "weather"])
        .arg(r#"{"city": "Berlin"}"#)
        .env("ZOT_HOME", home)
        .env("WEATHER_API_URL", api)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .output()
        .expect("zot runs")
}

#[test]
fn a_sandboxed_http_failure_is_said_in_words() {
    let ex = zot_test_guests::example("weather");
    let scratch = TempDir::new("http-words");
    let b = HostBuilder::in_dir(scratch.path());
    let (home, cwd) = (b.home(), b.cwd());
    // A port nothing listens on, and a name that does not resolve: both granted.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let closed = format!("http://127.0.0.1:{port}");
    let manifest = workspace().join("examples/weather/wasm/extension.json");
    let mut m: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(manifest).unwrap()).unwrap();
    m["permissions"]["http"] = serde_json::json!([closed, "http://nosuch.invalid"]);
    let dir = scratch.path().join("weather");
    write_manifest(&dir, &m);
    std::fs::copy(ex.wasm, dir.join("weather.wasm")).unwrap();
    let out = zot(&home, &cwd, &["grant", dir.to_str().unwrap(), "--all"]);
    assert!(out.status.success(), "{}", text(&out));

    let refused = weather_at(&home, &cwd, &dir, &closed);
    let dns = weather_at(&home, &cwd, &dir, "http://nosuch.invalid");
    for (out, said) in [
        (&refused, format!("connection refused by 127.0.0.1:{port}")),
        (&dns, "DNS lookup failed for nosuch.invalid: ".to_string()),
    ] {
        assert_eq!(out.status.code(), Some(1), "{}", text(out));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(&said), "{said:?} not in {err}");
        for debug in ["ErrorCode", "Payload", "Some(", "Os {", " WARN "] {
            assert!(!err.contains(debug), "{debug:?} in {err}");
        }
    }
}
