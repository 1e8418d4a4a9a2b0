//! `grant`, `revoke` and `trust` run in-process, as `zot ext` runs them, with the
//! session's `$ZOT_HOME`, project and prompt.

use super::*;

/// The flows the shell runs in-process (`grant`, `revoke`, `trust`) talk to the user
/// through this: on the terminal, the terminal itself (a question answered on stdin while
/// the editor is not reading); in a script, their lines go to the transcript, indented,
/// and no question can be asked (`--yes` answers).
enum ShellPrompt {
    Terminal(Term),
    Transcript(mpsc::UnboundedSender<(Level, String)>),
}

impl ShellPrompt {
    fn for_verb(ctx: &Ctx, o: &Outcome) -> Self {
        if ctx.interactive {
            ShellPrompt::Terminal(Term)
        } else {
            ShellPrompt::Transcript(o.lines.clone())
        }
    }
}

impl Prompt for ShellPrompt {
    fn say(&mut self, text: &str) {
        match self {
            ShellPrompt::Terminal(term) => term.say(text),
            ShellPrompt::Transcript(lines) => {
                for line in text.split('\n') {
                    let _ = lines.send((Level::Plain, format!("  {}", render::clean(line))));
                }
            }
        }
    }

    fn can_ask(&self) -> bool {
        match self {
            ShellPrompt::Terminal(term) => term.can_ask(),
            ShellPrompt::Transcript(_) => false,
        }
    }

    fn confirm(&mut self, question: &str) -> Result<bool, String> {
        match self {
            ShellPrompt::Terminal(term) => term.confirm(question),
            ShellPrompt::Transcript(_) => Err(format!("{question:?} cannot be asked in a script")),
        }
    }
}

/// The words of `grant`, `revoke` or `trust` parsed as `zot ext <verb>` parses them; a
/// mistake (or `--help`) is said in the transcript, and `None` returned.
fn parse_words<A: clap::Args + clap::FromArgMatches>(
    verb: &'static str,
    words: Vec<String>,
    o: &mut Outcome,
) -> Option<A> {
    let cmd = A::augment_args(
        clap::Command::new(verb)
            .bin_name(format!("zot ext {verb}"))
            .no_binary_name(true),
    );
    let parsed = cmd
        .try_get_matches_from(words)
        .and_then(|m| A::from_arg_matches(&m));
    match parsed {
        Ok(args) => Some(args),
        Err(e) => {
            let level = if e.use_stderr() {
                o.failed = true;
                Level::Error
            } else {
                Level::Plain
            };
            for line in e.render().to_string().trim_end().lines() {
                o.say(level, format!("  {}", render::clean(line)));
            }
            None
        }
    }
}

/// Runs `zot ext grant` or `revoke` in-process, with this shell's `$ZOT_HOME`, in its
/// project folder, through its prompt.
pub(super) fn manage_grant(ctx: &Ctx, verb: &'static str, mut words: Vec<String>, o: &mut Outcome) {
    let config = ctx.host.config();
    // A loaded extension's name stands for its folder (an --ext one is not installed).
    if let Some(first) = words.first_mut() {
        if let Some(e) = ctx.host.extensions().into_iter().find(|e| &e.name == first) {
            *first = e.dir.display().to_string();
        }
    }
    let (home, cwd) = (&config.home, &config.cwd);
    let mut prompt = ShellPrompt::for_verb(ctx, o);
    let done = match verb {
        "grant" => parse_words(verb, words, o)
            .map(|args| crate::records::grant::grant_in(home, cwd, args, &mut prompt)),
        _ => parse_words(verb, words, o)
            .map(|args| crate::records::grant::revoke_in(home, cwd, args, &mut prompt)),
    };
    if let Some(Err(e)) = done {
        o.fail(e.message());
    }
}

/// `zot ext trust <project> …` in-process, then a reload when it trusted something.
pub(super) async fn trust_and_reload(ctx: &Ctx, words: Vec<String>, o: &mut Outcome) {
    let config = ctx.host.config();
    let mut args = vec![config.cwd.display().to_string()];
    args.extend(words);
    if let Some(args) = parse_words("trust", args, o) {
        let mut prompt = ShellPrompt::for_verb(ctx, o);
        // On the terminal it may wait for an answer: the session waits with it.
        let trusted = tokio::task::block_in_place(|| {
            crate::records::trust::trust_with(&config.home, args, &mut prompt)
        });
        if let Err(e) = trusted {
            o.fail(e.message());
        }
    }
    let untrusted = ctx
        .host
        .extensions()
        .iter()
        .any(|e| e.state == ExtState::Untrusted);
    if !o.failed && untrusted {
        o.say(Level::Dim, "reloading to start what was trusted");
        let report = ctx.host.reload().await;
        for (level, line) in crate::output::report::lines(&report) {
            o.say(level, line);
        }
        o.panel = Some(None);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// In a script, what `grant`/`trust` say is in the transcript, each line indented
    /// (an empty line too), as when they ran as a child process.
    #[test]
    fn a_flow_run_in_a_script_says_its_lines_indented_in_the_transcript() {
        let (tx, mut rx) = mpsc::unbounded_channel();
        let mut prompt = ShellPrompt::Transcript(tx);
        prompt.say("guest asks for:");
        prompt.list(&["read the project".to_string()]);
        prompt.say("");
        prompt.say("a\nb\x1b[2J");
        assert!(!prompt.can_ask());
        drop(prompt);
        let mut lines = Vec::new();
        while let Ok((_, line)) = rx.try_recv() {
            lines.push(line);
        }
        assert_eq!(
            lines,
            [
                "  guest asks for:",
                "    - read the project",
                "  ",
                "  a",
                "  b\\x1b[2J"
            ]
        );
    }

    /// The words of `grant` are parsed as `zot ext grant` parses them; a mistake fails
    /// the verb and is said, `--help` is shown and fails nothing.
    #[test]
    fn the_words_of_grant_are_parsed_as_zot_ext_grant_parses_them() {
        let words = |w: &[&str]| w.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let (tx, mut rx) = mpsc::unbounded_channel();
        let mut o = Outcome::new(tx);
        let ok = parse_words::<crate::records::grant::GrantArgs>(
            "grant",
            words(&["w", "--all"]),
            &mut o,
        );
        assert!(ok.is_some() && !o.failed);
        let bad = parse_words::<crate::records::grant::GrantArgs>(
            "grant",
            words(&["w", "--nope"]),
            &mut o,
        );
        assert!(bad.is_none() && o.failed);
        let said: Vec<String> = std::iter::from_fn(|| rx.try_recv().ok().map(|(_, l)| l)).collect();
        assert!(said.iter().any(|l| l.contains("--nope")), "{said:?}");
        assert!(said.iter().any(|l| l.contains("zot ext grant")), "{said:?}");
        let mut o = Outcome::new(mpsc::unbounded_channel().0);
        let help =
            parse_words::<crate::records::grant::GrantArgs>("grant", words(&["--help"]), &mut o);
        assert!(help.is_none() && !o.failed);
    }
}
