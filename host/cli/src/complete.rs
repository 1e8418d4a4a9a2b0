//! Shell completion. `zot completions SHELL` prints clap_complete's standalone script
//! (commands, flags, paths); with `--dynamic`, a script that asks zot itself for the
//! candidates at each TAB (`ZOT_COMPLETE=SHELL zot -- <words>`: clap_complete's dynamic
//! engine over the definition `--help` shows), so the names of installed extensions, an
//! extension's tools and commands, directories and `.wasm` files complete.
//!
//! Completing never starts an extension. Tool and command names come from what `check`,
//! `call` and `invoke` saw an extension register (remembered under
//! `$ZOT_HOME/completion`); every name offered is a plain word (no shell or terminal
//! syntax), every description one escaped line.

use clap::{CommandFactory, ValueEnum};
use clap_complete::engine::{CompletionCandidate, PathCompleter, ValueCompleter};
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use zot_host::manage::identity::Identity;
use zot_host::manage::manifest::{validate_name, Manifest, MANIFEST_FILE};
use zot_host::manage::paths::{project_extensions_dir, ZotHome};

/// The environment variable that makes a run of zot a completion request.
pub(crate) const VAR: &str = "ZOT_COMPLETE";

/// At most this many tools, and as many commands, are remembered per extension, and
/// offered.
const MAX_NAMES: usize = 512;

/// A remembered file larger than this is not read.
const MAX_MEMORY_FILE: u64 = 128 * 1024;

/// At most this many folders are looked at per extensions directory.
const MAX_FOLDERS: usize = 1000;

/// Answers a completion request (`ZOT_COMPLETE` set) and exits; returns when this run is
/// not one.
pub(crate) fn answer_if_asked() {
    clap_complete::CompleteEnv::with_factory(crate::app::Cli::command)
        .var(VAR)
        .complete();
}

/// `zot completions SHELL`: the standalone script, or with `dynamic` the one that asks
/// zot at each TAB.
pub(crate) fn script(shell: clap_complete::Shell, dynamic: bool) -> Result<Vec<u8>, String> {
    let mut script = Vec::new();
    if !dynamic {
        clap_complete::generate(shell, &mut crate::app::Cli::command(), "zot", &mut script);
        return Ok(script);
    }
    let name = shell
        .to_possible_value()
        .map(|v| v.get_name().to_string())
        .unwrap_or_default();
    let shells = clap_complete::env::Shells::builtins();
    let Some(adapter) = shells.completer(&name) else {
        return Err(format!(
            "no dynamic completion for {name}; try without --dynamic"
        ));
    };
    adapter
        .write_registration(VAR, "zot", "zot", &completer(), &mut script)
        .map_err(|e| e.to_string())?;
    Ok(script)
}

/// The program the script runs, as `CompleteEnv` names it: this program as it was
/// called, made absolute when it was called by a relative path (`./target/debug/zot`).
fn completer() -> String {
    let called = PathBuf::from(std::env::args_os().next().unwrap_or_else(|| "zot".into()));
    let path = match crate::output::terminal::cwd() {
        Ok(cwd) if called.components().count() > 1 => cwd.join(called),
        _ => called,
    };
    path.to_string_lossy().into_owned()
}

/// A name offered to the shell: a plain word, so the shell inserts it as it is.
fn plain(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 128
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | ':' | '@'))
}

/// A description for people, on one escaped line of at most 80 characters.
fn help(text: &str) -> Option<clap::builder::StyledStr> {
    let line = zot_host::terminal_text::one_line(text.lines().next().unwrap_or_default())
        .chars()
        .take(80)
        .collect::<String>();
    (!line.is_empty()).then(|| line.into())
}

/// The names of the installed extensions seen from the current directory, the project's
/// (trusted or not: only read, never run) and the global ones, that start with `current`,
/// in order of name.
pub(crate) fn names(current: &OsStr) -> Vec<CompletionCandidate> {
    let current = current.to_string_lossy();
    let (Ok(home), Ok(cwd)) = (ZotHome::from_env(), crate::output::terminal::cwd()) else {
        return Vec::new();
    };
    let roots = [
        (project_extensions_dir(&cwd), "project"),
        (home.extensions_dir(), "global"),
    ];
    // By name; the first seen (the project's) describes it.
    let mut found = std::collections::BTreeMap::new();
    for (root, scope) in roots {
        let Ok(entries) = std::fs::read_dir(&root) else {
            continue;
        };
        for entry in entries.flatten().take(MAX_FOLDERS) {
            let dir = entry.path();
            // What `resolve` matches: the manifest's name, else the folder's (a broken
            // install).
            let (name, about) = match Manifest::read(&dir) {
                Ok(m) if m.description.is_empty() => (m.name, scope.to_string()),
                Ok(m) => (m.name, format!("{scope}: {}", m.description)),
                Err(_) => match entry.file_name().into_string() {
                    Ok(folder) if dir.is_dir() => (folder, format!("{scope}: no usable manifest")),
                    _ => continue,
                },
            };
            if validate_name(&name).is_err() || !plain(&name) || !name.starts_with(&*current) {
                continue;
            }
            found.entry(name).or_insert(about);
        }
    }
    found
        .into_iter()
        .map(|(name, about)| CompletionCandidate::new(name).help(help(&about)))
        .collect()
}

/// What `check`, `call` and `invoke` load: an installed extension's name, a directory,
/// an `extension.json` or a `.wasm` file.
pub(crate) fn targets(current: &OsStr) -> Vec<CompletionCandidate> {
    let mut out = names(current);
    out.extend(extension_paths().complete(current));
    out
}

/// Directories, `extension.json` files and `.wasm` files.
pub(crate) fn extension_paths() -> PathCompleter {
    PathCompleter::any().filter(|p| {
        p.is_dir()
            || p.extension().is_some_and(|e| e == "wasm")
            || p.file_name().is_some_and(|n| n == MANIFEST_FILE)
    })
}

/// The tools of the extension named before the cursor (`zot ext call TARGET <TAB>`), as
/// `check`, `call` or `invoke` last saw it register them; none if zot has not run it.
pub(crate) fn tools(current: &OsStr) -> Vec<CompletionCandidate> {
    let current = current.to_string_lossy();
    let tools = registered("call").tools;
    let matching = tools.into_iter().filter(|t| t.starts_with(&*current));
    matching.map(CompletionCandidate::new).collect()
}

/// The slash commands of the extension named before the cursor (`zot ext invoke TARGET
/// <TAB>`), as [`tools`] finds its tools; with a leading `/` when the word has one.
pub(crate) fn commands(current: &OsStr) -> Vec<CompletionCandidate> {
    let current = current.to_string_lossy();
    let (slash, name) = match current.strip_prefix('/') {
        Some(name) => ("/", name),
        None => ("", &*current),
    };
    let commands = registered("invoke").commands;
    let matching = commands.into_iter().filter(|c| c.starts_with(name));
    matching
        .map(|c| CompletionCandidate::new(format!("{slash}{c}")))
        .collect()
}

/// What the extension named after `zot ext <verb>` registered when zot last ran it.
fn registered(verb: &str) -> Registered {
    let Some(target) = target_word(&["ext", verb]) else {
        return Registered::default();
    };
    let Ok(home) = ZotHome::from_env() else {
        return Registered::default();
    };
    match target_dir(&home, &target) {
        Some(dir) => remembered(&home, &dir),
        None => Registered::default(),
    }
}

/// The first positional word after the subcommand path `path` in the words being
/// completed (`zot -- zot ext call TARGET …`), skipping flags and their values.
fn target_word(path: &[&str]) -> Option<String> {
    let args: Vec<String> = std::env::args_os()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let start = args.iter().position(|a| a == "--")? + 2;
    let words = args.get(start..)?;
    let mut cmd = crate::app::Cli::command();
    cmd.build();
    let mut cmd = &cmd;
    let mut rest = words.iter();
    for want in path {
        let word = rest.find(|w| !w.starts_with('-'))?;
        let sub = cmd.find_subcommand(word)?;
        if sub.get_name() != *want {
            return None;
        }
        cmd = sub;
    }
    let takes_value = |flag: &str| {
        cmd.get_arguments().any(|a| {
            let named = match flag.strip_prefix("--") {
                Some(long) => a.get_long() == Some(long),
                None => flag.len() == 2 && a.get_short().is_some_and(|s| flag.ends_with(s)),
            };
            named && a.get_num_args().is_some_and(|n| n.takes_values())
        })
    };
    let mut escaped = false;
    while let Some(word) = rest.next() {
        if escaped || !word.starts_with('-') || word == "-" {
            return Some(word.clone());
        }
        if word == "--" {
            escaped = true;
        } else if !word.contains('=') && takes_value(word) {
            rest.next();
        }
    }
    None
}

/// The folder `target` names, found as `check` finds it but without trusting or running
/// anything: a directory, an `extension.json`'s folder, or an installed extension's name.
fn target_dir(home: &ZotHome, target: &str) -> Option<PathBuf> {
    let path = Path::new(target);
    if path.is_dir() {
        return Some(path.to_path_buf());
    }
    if path.file_name().is_some_and(|n| n == MANIFEST_FILE) && path.is_file() {
        let parent = path.parent().filter(|d| !d.as_os_str().is_empty());
        return Some(parent.unwrap_or(Path::new(".")).to_path_buf());
    }
    let cwd = crate::output::terminal::cwd().ok()?;
    crate::flags::scope::resolve(home, &cwd, target, None)
        .ok()
        .map(|(dir, _)| dir)
}

/// Where the names the extension in `dir` registered are remembered: `$ZOT_HOME/completion/<its
/// identity's key>.json`; none for a folder inside `$ZOT_HOME` that is not an install (a
/// bare component's staging folder, gone after its run).
fn memory_file(home: &ZotHome, dir: &Path) -> Option<PathBuf> {
    let identity = Identity::of(dir, home);
    match &identity {
        Identity::Global { .. } | Identity::Project { .. } => {}
        Identity::Path { path } if path.starts_with(zot_host::manage::paths::real(home.root())) => {
            return None
        }
        Identity::Path { .. } => {}
    }
    let mut file = home.root().join("completion").join(identity.key());
    file.as_mut_os_string().push(".json");
    Some(file)
}

/// The names an extension registered, as remembered for completion.
#[derive(serde::Serialize, serde::Deserialize, Default, PartialEq, Debug)]
pub(crate) struct Registered {
    #[serde(default)]
    pub(crate) tools: Vec<String>,
    #[serde(default)]
    pub(crate) commands: Vec<String>,
}

impl Registered {
    /// Plain names only (see [`plain`]), at most [`MAX_NAMES`] of each, in order.
    fn cleaned(self) -> Registered {
        let clean = |names: Vec<String>| {
            let set: std::collections::BTreeSet<String> = names
                .into_iter()
                .filter(|n| plain(n))
                .take(MAX_NAMES)
                .collect();
            set.into_iter().collect()
        };
        Registered {
            tools: clean(self.tools),
            commands: clean(self.commands),
        }
    }
}

/// Remembers what the extension in `dir` registered, for completion (best effort: a
/// failure to write only loses completion). Nothing registered (a failed start) changes
/// nothing.
pub(crate) fn remember(home: &ZotHome, dir: &Path, names: Registered) {
    let names = names.cleaned();
    let nothing = names.tools.is_empty() && names.commands.is_empty();
    let Some(file) = memory_file(home, dir).filter(|_| !nothing) else {
        return;
    };
    if remembered(home, dir) == names {
        return;
    }
    if let Ok(bytes) = serde_json::to_vec(&names) {
        let _ = zot_host::manage::paths::write_atomic(&file, &bytes);
    }
}

/// What is remembered for the extension in `dir`: plain names only, at most
/// [`MAX_NAMES`] of each, from a file of at most [`MAX_MEMORY_FILE`] bytes.
fn remembered(home: &ZotHome, dir: &Path) -> Registered {
    let Some(file) = memory_file(home, dir) else {
        return Registered::default();
    };
    let small = std::fs::metadata(&file).is_ok_and(|m| m.is_file() && m.len() <= MAX_MEMORY_FILE);
    small
        .then(|| std::fs::read(&file).ok())
        .flatten()
        .and_then(|bytes| serde_json::from_slice::<Registered>(&bytes).ok())
        .unwrap_or_default()
        .cleaned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_plain_words_are_offered() {
        assert!(plain("forecast"));
        assert!(plain("git.status"));
        for bad in ["", "a b", "a;rm", "$(x)", "\u{1b}[2J", "a\nb", "`x`", "é"] {
            assert!(!plain(bad), "{bad:?}");
        }
    }

    #[test]
    fn descriptions_are_one_escaped_line() {
        let h = help("evil\u{1b}[2Jtext\nsecond line").unwrap().to_string();
        assert!(!h.contains('\u{1b}') && !h.contains('\n'), "{h:?}");
        assert!(h.contains("text"));
    }
}
