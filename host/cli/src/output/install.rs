//! How an install is described: its source in one line, a recorded commit shortened,
//! the command a classic extension runs.

use zot_host::manage::install::Staged;
use zot_host::manage::manifest::Manifest;
use zot_host::terminal_text::{self, one_line};

/// `name version from source (--ref REF, --path SUBDIR) at commit`, one line.
pub(crate) fn headline(staged: &Staged) -> String {
    one_line(&headline_text(staged)).into_owned()
}

fn headline_text(staged: &Staged) -> String {
    let m = &staged.manifest;
    let r = &staged.record;
    let mut line = m.name.clone();
    if !m.version.is_empty() {
        line += &format!(" {}", m.version);
    }
    line += &format!(" from {}", r.source);
    let options: Vec<String> = [("--ref", &r.git_ref), ("--path", &r.path)]
        .into_iter()
        .filter_map(|(flag, value)| Some(format!("{flag} {}", value.as_ref()?)))
        .collect();
    if !options.is_empty() {
        line += &format!(" ({})", options.join(", "));
    }
    if let Some(commit) = &r.commit {
        line += &format!(" at {}", short(commit));
    }
    line
}

/// The first 12 characters of `commit` (as recorded, so not necessarily hex).
pub(crate) fn short(commit: &str) -> &str {
    commit
        .char_indices()
        .nth(12)
        .map_or(commit, |(end, _)| &commit[..end])
}

/// The command line a classic extension's manifest runs (`exec` and `args`, or an MCP server's `env`, `command` and `args`) exactly as
/// written, each quoted for a POSIX shell.
pub(crate) fn runs(m: &Manifest) -> String {
    let words = m.command_words(m.command().unwrap_or_default());
    terminal_text::command_line(words.iter().map(String::as_str))
}

#[cfg(test)]
mod tests {
    /// A commit comes from the provenance file, which may have been edited by hand.
    #[test]
    fn a_recorded_commit_of_any_text_is_shortened_by_characters() {
        assert_eq!(super::short("0123456789abcdef"), "0123456789ab");
        assert_eq!(super::short("abc"), "abc");
        assert_eq!(super::short("ééééééééééééé"), "éééééééééééé");
        assert_eq!(super::short(""), "");
    }
}
