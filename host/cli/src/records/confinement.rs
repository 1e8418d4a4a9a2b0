//! A classic extension's confinement as `info` and `check` show it.

use zot_host::manage::confine::ConfineView;

/// The `confined`, `as of` and `rules` rows of `info` (and `check`): whether it is
/// confined, for these files, and each rule with whether it is enforced, as its last
/// confined start applied them (or this kernel would).
pub(crate) fn rows(name: &str, view: &ConfineView) -> Vec<(&'static str, String)> {
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
