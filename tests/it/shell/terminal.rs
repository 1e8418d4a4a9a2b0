//! `zot ext shell` on a terminal, where a new user tripped (issue 17): a panel the
//! extension closes gives the keyboard back to the shell at once; the offer to trust a
//! project's extensions shows the review before it asks; TAB lists the matches; the
//! argument prompt of `call` lists every field, optional ones too.
//!
//! Each test drives the real `zot` binary on a pseudo-terminal (expectrl) with real
//! Python extensions (`tests/extensions/panel-py`, `tests/extensions/py-ext`).

use crate::common::*;
use expectrl::{Eof, Expect, Regex};
use std::path::PathBuf;
use std::process::Command;

/// This module's helpers on a scratch [`crate::common::Layout`].
struct ShellFriction;
type Layout = crate::common::Layout<ShellFriction>;

impl Layout {
    /// The panel test extension (`picker`: command `pick`, tool `forecast`).
    fn picker(&self) -> PathBuf {
        write_manifest(
            &self.root().join("exts/picker"),
            &serde_json::json!({"name": "picker", "version": "0.1.0",
                "exec": workspace().join("tests/extensions/panel-py/ext.py").to_str().unwrap()}),
        )
    }

    /// An explicit Python extension (`py-ext`) named `name`.
    fn py(&self, name: &str) -> PathBuf {
        write_manifest(
            &self.root().join("exts").join(name),
            &py_manifest(name, &[]),
        )
    }

    /// `zot ext shell` on a pseudo-terminal with `--ext` each of `exts`.
    fn shell(&self, exts: &[PathBuf]) -> Pty {
        std::fs::create_dir_all(self.cwd()).unwrap();
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_zot"));
        cmd.args(["ext", "shell", "--zot-home"])
            .arg(self.home())
            .arg("--cwd")
            .arg(self.cwd())
            .current_dir(self.cwd())
            .env("ZOT_HOME", self.home())
            .env("NO_COLOR", "1");
        for ext in exts {
            cmd.arg("--ext").arg(ext);
        }
        Pty::spawn(cmd, self.home())
    }
}

/// What the terminal showed before `needle`, as text.
fn before(p: &mut Pty, needle: &str) -> String {
    let found = p
        .expect(needle)
        .unwrap_or_else(|e| panic!("{needle:?} never came: {e}"));
    String::from_utf8_lossy(found.before()).into_owned()
}

fn quit(mut p: Pty) {
    p.send("quit\r").unwrap();
    p.expect(Eof).unwrap();
}

#[test]
fn in_focus_a_panel_closed_by_its_extension_gives_the_keyboard_back_to_the_shell() {
    let _serial = serial();
    let l = Layout::new("shell-focus-close");
    let mut p = l.shell(&[l.picker()]);
    p.expect("loaded: picker").unwrap();
    p.expect("zot> ").unwrap();
    p.send("/pick\r").unwrap();
    p.expect("┌─ Pick").unwrap();
    p.expect("zot [panel pick]> ").unwrap();
    p.send("focus\r").unwrap();
    p.expect("[panel pick] keys> ").unwrap();
    // `q` makes the extension close its panel a moment later, while the shell waits
    // for the next line of keys.
    p.send("q\r").unwrap();
    p.expect("info: closing pick").unwrap();
    p.expect("[picker] panel_close pick").unwrap();
    // The shell's own prompt comes back as soon as the close arrives, with no line typed.
    let shown = before(&mut p, "zot> ");
    assert!(
        shown.contains("left the panel"),
        "focus is left when the panel closes: {shown:?}"
    );
    assert!(!shown.contains("keys> "), "no prompt for keys: {shown:?}");
    // The next line is a verb for the shell, not keys for the closed panel.
    p.send("call nope\r").unwrap();
    p.expect("error: no tool named \"nope\"").unwrap();
    p.expect("zot> ").unwrap();
    quit(p);
}

#[test]
fn the_prompt_drops_the_panel_as_soon_as_the_extension_closes_it() {
    let _serial = serial();
    let l = Layout::new("shell-prompt-close");
    let mut p = l.shell(&[l.picker()]);
    p.expect("loaded: picker").unwrap();
    p.expect("zot> ").unwrap();
    // The extension closes this panel by itself a second after opening it.
    p.send("/pick later\r").unwrap();
    p.expect("┌─ Pick").unwrap();
    p.expect("zot [panel pick]> ").unwrap();
    // What is typed meanwhile stays on the line through the change of prompt.
    p.send("tools").unwrap();
    p.expect("[picker] panel_close pick").unwrap();
    let shown = before(&mut p, "zot> tools");
    assert!(!shown.contains("[panel"), "the prompt changed: {shown:?}");
    p.send("\r").unwrap();
    p.expect("forecast (picker)").unwrap();
    p.expect("zot> ").unwrap();
    quit(p);
}

#[test]
fn the_offer_to_trust_shows_the_review_before_it_asks() {
    let _serial = serial();
    let l = Layout::new("shell-trust-review");
    write_manifest(
        &l.cwd().join(".zot/extensions/lint"),
        &py_manifest("lint", &[]),
    );
    let mut p = l.shell(&[]);
    let review = before(
        &mut p,
        "Trust the project's extensions listed above? [y/N] ",
    );
    // What `zot ext trust` shows: the full-permission warning and the command line.
    assert!(review.contains("untrusted: lint ("), "{review}");
    assert!(
        review.contains("runs as a program with your full user permissions"),
        "the warning comes before the question: {review}"
    );
    let program = py_ext();
    assert!(
        review.contains(&format!("{} --name lint", program.display())),
        "the command line comes before the question: {review}"
    );
    p.send("y\r").unwrap();
    let after = before(&mut p, "zot> ");
    assert!(after.contains("Trusted 1 extension(s)"), "{after}");
    assert!(after.contains("loaded: lint"), "{after}");
    assert!(
        !after.contains("full user permissions"),
        "the review is not shown again after the answer: {after}"
    );
    p.send("call echo {\"trusted\":1}\r").unwrap();
    p.expect("echo (lint): ok").unwrap();
    quit(p);
}

#[test]
fn declining_the_offer_to_trust_starts_nothing() {
    let _serial = serial();
    let l = Layout::new("shell-trust-no");
    write_manifest(
        &l.cwd().join(".zot/extensions/lint"),
        &py_manifest("lint", &[]),
    );
    let mut p = l.shell(&[]);
    p.expect("full user permissions").unwrap();
    p.expect("Trust the project's extensions listed above? [y/N] ")
        .unwrap();
    p.send("n\r").unwrap();
    p.expect("not trusted").unwrap();
    p.expect("zot> ").unwrap();
    p.send("call echo {}\r").unwrap();
    p.expect("error: no tool named \"echo\"").unwrap();
    quit(p);
}

#[test]
fn tab_lists_the_matches() {
    let _serial = serial();
    let l = Layout::new("shell-tab-list");
    let mut p = l.shell(&[l.py("py")]);
    p.expect("loaded: py").unwrap();
    p.expect("zot> ").unwrap();
    // Verbs: `c` is the start of three; a second TAB lists them, the line stays.
    p.send("c\t\t").unwrap();
    p.expect(Regex(r"call +close +commands")).unwrap();
    p.expect("zot> c").unwrap();
    // Tools after `call`: `h` is the start of `hang` and `huge`.
    p.send("\x15call h\t\t").unwrap();
    p.expect(Regex(r"hang +huge")).unwrap();
    p.expect("zot> call h").unwrap();
    // One match completes at the first TAB.
    p.send("a\t").unwrap();
    p.expect("zot> call hang ").unwrap();
    p.send("\x15").unwrap();
    quit(p);
}

#[test]
fn the_argument_prompt_lists_optional_fields_and_leaves_empty_ones_out() {
    let _serial = serial();
    let l = Layout::new("shell-arg-prompt");
    let mut p = l.shell(&[l.picker()]);
    p.expect("loaded: picker").unwrap();
    p.expect("zot> ").unwrap();
    p.send("call forecast\r").unwrap();
    let listing = before(&mut p, "forecast args> ");
    for line in [
        "city (string, required): the city to look up",
        "days (integer, optional): how many days ahead",
        "units (\"metric\" or \"imperial\", optional): the units of the answer",
    ] {
        assert!(listing.contains(line), "{line:?} in {listing:?}");
    }
    // Pre-filled with every field, required ones first; optional ones empty.
    p.expect(r#"{"city":"","days":null,"units":""}"#).unwrap();
    // Optional fields left empty are not sent.
    p.send("\x15{\"city\":\"Oslo\",\"days\":null,\"units\":\"\"}\r")
        .unwrap();
    p.expect("forecast (picker): ok").unwrap();
    let text = before(&mut p, "zot> ");
    assert!(text.contains(r#"{"city":"Oslo"}"#), "{text}");
    // A filled optional field is sent.
    p.send("call forecast\r").unwrap();
    p.expect("forecast args> ").unwrap();
    p.send("\x15{\"city\":\"Oslo\",\"days\":3,\"units\":\"\"}\r")
        .unwrap();
    p.expect("forecast (picker): ok").unwrap();
    p.expect(r#"{"city":"Oslo","days":3}"#).unwrap();
    quit(p);
}
