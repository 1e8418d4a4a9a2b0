//! A classic extension's confinement as `info` and `check` show it, and the hint after
//! a confined extension failed.

use std::path::Path;
use zot_host::manage::confine::ConfineView;
use zot_host::manage::identity::Identity;
use zot_host::manage::manifest::Manifest;
use zot_host::terminal_text::shell_word;
use zot_host::ZotHome;

/// The confinement of the classic extension in `dir`; `None` for a component or a
/// manifest that cannot be read.
pub(crate) fn of(home: &ZotHome, dir: &Path) -> Option<ConfineView> {
    let m = Manifest::read(dir).ok()?;
    ConfineView::on_disk(home, &Identity::of(dir, home), &m, dir)
}

/// After the extension the user named `target` (a name or a folder, as given) failed to
/// start or answer: when it runs confined, what confinement withholds and how to give
/// it more, as a `hint:`; `None` when it is not confined.
pub(crate) fn failure_hint(target: &str, view: &ConfineView) -> Option<String> {
    if !view.confined || view.stale {
        return None;
    }
    let target = shell_word(target);
    let network = view
        .rules
        .iter()
        .find_map(|r| r.rule.strip_prefix("network: "))
        .unwrap_or("no IP sockets");
    Some(format!(
        "hint: it runs confined, which may be why: network: {network}; files: written only \
         in its data dir, read only in its own and the program folders; environment: \
         PATH, HOME (its data dir), TMPDIR, the locale and what was granted, none of \
         yours. `zot ext grant {target}` shows what its manifest asks and grants it \
         (`-p`); `zot ext unconfine {target}` runs it with your full user permissions"
    ))
}

/// The `confined`, `as of` and `rules` rows of `info` (and `check`): whether it is
/// confined, for these files, and each rule with whether it is enforced, as its last
/// confined start applied them (or this kernel would). `target` is the extension as the
/// user named it (a name or a folder), for the commands the rows suggest.
pub(crate) fn rows(target: &str, view: &ConfineView) -> Vec<(&'static str, String)> {
    let name = shell_word(target);
    let abi = match view.landlock_abi {
        Some(abi) => format!("Landlock ABI {abi} here"),
        None => "confinement needs Linux".to_string(),
    };
    let confined = match (view.confined, view.stale) {
        (false, _) => {
            format!("no: it runs with your full user permissions (`zot ext confine {name}`; {abi})")
        }
        (true, true) => format!(
            "yes, but for other files: it does not start until `zot ext confine {name}` ({abi})"
        ),
        (true, false) => format!("yes ({abi})"),
    };
    let mut rows = vec![("confined", confined)];
    if view.confined && !view.stale {
        rows.push((
            "as of",
            match &view.applied_at {
                Some(at) => format!("its last start, {at}: what it applied"),
                None => "not started confined yet: what this kernel would apply".to_string(),
            },
        ));
    }
    for (i, rule) in view.rules.iter().enumerate() {
        let k = if i == 0 { "rules" } else { "" };
        rows.push(match &rule.why {
            None => (k, format!("enforced      {}", rule.rule)),
            Some(why) => (k, format!("NOT enforced  {} ({why})", rule.rule)),
        });
    }
    rows
}
