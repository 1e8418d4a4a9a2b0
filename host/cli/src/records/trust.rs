//! The user's say over a project's
//! own extensions (`DIR/.zot/extensions`), like `direnv allow`. Trust is recorded in
//! `$ZOT_HOME/trust`, bound to every file of each extension (see `zot_host::manage::records::trust`).

use crate::output::error::{CliError, Context as _};
use crate::output::terminal::{self, Prompt};
use std::path::{Path, PathBuf};
use zot_host::manage::discovery::{discover, Found, Source};
use zot_host::manage::identity::Identity;
use zot_host::manage::install::search_path;
use zot_host::manage::manifest::{Launch, Manifest};
use zot_host::manage::paths::project_root;
use zot_host::manage::records::trust::{self, ProjectExtension, Untrusted};
use zot_host::manage::sandbox::asked_words;
use zot_host::terminal_text::{self, one_line};
use zot_host::ZotHome;

#[derive(clap::Args)]
pub(crate) struct TrustArgs {
    /// The project directory (default: the current directory).
    #[arg(value_hint = clap::ValueHint::DirPath)]
    dir: Option<PathBuf>,
    /// Do not ask: trust what is shown (for scripts).
    #[arg(long, short)]
    yes: bool,
    /// Print the project's extensions and whether each is trusted as JSON, asking
    /// nothing: with --yes after trusting them, else as they are.
    #[arg(long)]
    json: bool,
}

/// The project directory given, or the current one, and the project it names.
pub(crate) fn project_of(dir: Option<PathBuf>) -> Result<(PathBuf, PathBuf), String> {
    let dir = match dir {
        Some(d) if d.is_dir() => d,
        Some(d) => return Err(format!("{} is not a directory", d.display())),
        None => terminal::cwd()?,
    };
    let project = project_root(&dir);
    Ok((dir, project))
}

/// Shows every extension of the project to `prompt` and, with its consent, trusts them
/// as they are (the shell runs it with its own prompt).
pub(crate) fn trust_with(
    home: &ZotHome,
    args: TrustArgs,
    prompt: &mut dyn Prompt,
) -> Result<(), CliError> {
    if args.json {
        return trust_json(home, args);
    }
    let Some(review) = review_project(home, args.dir, prompt)? else {
        return Ok(());
    };
    let question = format!(
        "Trust these {} extension(s) to run whenever zot starts in {}?",
        review.found.len(),
        review.project.display()
    );
    terminal::ask(prompt, &question, args.yes).context(review.what())?;
    trust_reviewed(home, &review, prompt)
}

/// `trust --json`: with `--yes` trusts every extension of the project (nothing asked),
/// then prints `{"project", "changed", "extensions": [{"name", "dir", "trusted",
/// "untrusted"}]}` (`untrusted`: why one is not trusted, as `list --json` has it; `null`
/// when it is).
fn trust_json(home: &ZotHome, args: TrustArgs) -> Result<(), CliError> {
    let (dir, project) = project_of(args.dir)?;
    let before = project_extensions(home, &dir);
    let changed = args.yes && before.iter().any(|(_, u)| u.is_some());
    if changed {
        let review = Review {
            project: project.clone(),
            found: before,
        };
        trust_reviewed(home, &review, &mut terminal::Quiet)?;
    }
    let extensions: Vec<serde_json::Value> = project_extensions(home, &dir)
        .iter()
        .map(|(f, u)| {
            serde_json::json!({"name": f.name(), "dir": f.dir, "trusted": u.is_none(),
                               "untrusted": u})
        })
        .collect();
    let out = serde_json::json!({"project": project, "changed": changed,
                                 "extensions": extensions});
    terminal::print_line(&serde_json::to_string_pretty(&out).unwrap_or_default());
    Ok(())
}

/// A project's extensions, as shown to the user who is asked to trust them.
pub(crate) struct Review {
    project: PathBuf,
    found: Vec<(Found, Option<Untrusted>)>,
}

impl Review {
    /// What its errors say was being done.
    fn what(&self) -> String {
        format!("trust {}", self.project.display())
    }
}

/// Shows every extension of the project of `dir` (default: the current directory): for
/// each, whether it is trusted, and what it may do once it runs (a component's asks; a
/// classic extension's command line, with the warning that it runs with the user's
/// permissions). `None` when there is nothing to trust (said so).
pub(crate) fn review_project(
    home: &ZotHome,
    dir: Option<PathBuf>,
    prompt: &mut dyn Prompt,
) -> Result<Option<Review>, String> {
    let (dir, project) = project_of(dir)?;
    let found = project_extensions(home, &dir);
    if found.is_empty() {
        prompt.say(&format!(
            "Nothing to trust: {} holds no extension.",
            zot_host::manage::paths::project_extensions_dir(&project).display()
        ));
        return Ok(None);
    }
    prompt.say(&format!("Extensions of the project {}:", project.display()));
    for (f, untrusted) in &found {
        show(prompt, f, untrusted.as_ref());
    }
    if found.iter().all(|(_, u)| u.is_none()) {
        prompt.say("All are trusted as they are; nothing changed.");
        return Ok(None);
    }
    Ok(Some(Review { project, found }))
}

/// Trusts the extensions of a review as they are now (the user said yes to it).
pub(crate) fn trust_reviewed(
    home: &ZotHome,
    review: &Review,
    prompt: &mut dyn Prompt,
) -> Result<(), CliError> {
    let project = &review.project;
    let exts: Vec<ProjectExtension<'_>> = review
        .found
        .iter()
        .filter_map(|(f, _)| match &f.identity {
            Identity::Project { dir_name, .. } => Some(ProjectExtension {
                dir_name,
                dir: &f.dir,
                manifest: f.manifest.as_ref().ok(),
            }),
            // Discovery gives every project folder a project identity.
            Identity::Global { .. } | Identity::Path { .. } => None,
        })
        .collect();
    trust::trust(home, project, &exts, true).context(review.what())?;
    prompt.say(&format!(
        "Trusted {} extension(s) of {}. They start the next time zot starts there; any \
         change to their files needs trust again. `zot ext untrust '{}'` takes it back.",
        exts.len(),
        project.display(),
        project.display()
    ));
    Ok(())
}

/// The project-local extensions found from `dir`, each with why it is untrusted (`None`:
/// trusted as it is), in load order.
fn project_extensions(home: &ZotHome, dir: &Path) -> Vec<(Found, Option<Untrusted>)> {
    let found = discover(&search_path(dir, home));
    let trusted = found
        .found
        .into_iter()
        .chain(found.shadowed)
        .filter(|f| f.source == Source::Project)
        .map(|f| (f, None));
    let untrusted = found.untrusted.into_iter().map(|(f, u)| (f, Some(u)));
    let mut all: Vec<_> = trusted.chain(untrusted).collect();
    all.sort_by(|a, b| a.0.dir.cmp(&b.0.dir));
    all
}

/// One extension as `trust` shows it: name, folder, transport, state, what it may do or
/// the command it runs, each on its own line (shown with `terminal_text`).
fn show(prompt: &mut dyn Prompt, f: &Found, untrusted: Option<&Untrusted>) {
    let state = match untrusted {
        None => "trusted".to_string(),
        Some(u) => u.why.to_string(),
    };
    prompt.say("");
    prompt.say(&format!(
        "  {} ({}) — {}",
        one_line(&f.name()),
        one_line(&f.dir.to_string_lossy()),
        one_line(&state)
    ));
    match &f.manifest {
        Err(e) => prompt.say(&format!(
            "    its manifest cannot be used: {}",
            one_line(&e.to_string())
        )),
        Ok(m) => review(prompt, m, &f.dir),
    }
}

/// What the extension of manifest `m` in `dir` may do once it runs: what a component
/// asks, or a classic extension's command line with a warning.
pub(crate) fn review(prompt: &mut dyn Prompt, m: &Manifest, dir: &Path) {
    match m.launch(dir) {
        Launch::Wasm(_) => {
            prompt.say("    a sandboxed WebAssembly component; it asks to:");
            for line in asked_words(m) {
                prompt.say(&format!("      - {line}"));
            }
            prompt.say("    (a project component gets no grant of its own until `zot ext grant`)");
        }
        Launch::Remote(url) => {
            let server = m.mcp.as_ref();
            let origin = server.and_then(|s| s.origin()).unwrap_or_default();
            prompt.say(&format!(
                "    a remote MCP server at {url}: it runs nothing here; it may reach {origin} \
                 once granted (`zot ext grant`)"
            ));
            for (name, template) in server.map(|s| &s.headers).into_iter().flatten() {
                prompt.say(&format!("      - sends header {name}: {template}"));
            }
            prompt.say(
                "    (a ${file:…} a header reads is not part of what is trusted: a secret may \
                 change without asking again)",
            );
        }
        Launch::Exec(program) => {
            prompt.say(
                "    warning: a classic extension: it runs as a program with your full \
                 user permissions (every file you can read or write, the network, your \
                 environment):",
            );
            prompt.say(&format!("      {}", command_line(m, &program)));
            prompt.say(
                "    trust covers this folder and the files its manifest names, not what \
                 the program loads from elsewhere when it runs (imports, modules, \
                 downloads): review its code as you would any program's",
            );
        }
    }
}

/// `program arg…` exactly as it runs (after an MCP server's `K=v` variables), each word
/// quoted for a POSIX shell.
fn command_line(m: &Manifest, program: &Path) -> String {
    let words = m.command_words(&program.to_string_lossy());
    terminal_text::command_line(words.iter().map(String::as_str))
}
