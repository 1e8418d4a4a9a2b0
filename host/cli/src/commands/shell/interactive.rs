//! The session on a terminal: the line editor's prompt (asked again when an event changes
//! it), the offer to trust a project's extensions, and focus on an extension's panel.

use super::*;

/// What [`Shell::ask`] got.
pub(super) enum Answer {
    Line(String),
    /// ctrl-c.
    Interrupted,
    /// ctrl-d, the terminal is gone, or the editor failed (said).
    Eof,
    /// What the prompt asked for is gone (the focused panel closed).
    Gone,
}

/// How focus on a panel ended.
pub(super) enum Focused {
    /// By `esc`, ctrl-c, or the panel closing.
    Left,
    /// The panel closed as this line was typed: it is for the shell.
    Shell(String),
    /// End of input.
    Eof,
}

impl Shell {
    /// Interactively: shows the project's extensions as `zot ext trust` does (the
    /// full-permission warning, each command line), then asks whether to trust them now.
    pub(super) async fn offer_trust(&mut self, editor: &mut editor::Editor) {
        let config = self.ctx.host.config();
        let (home, cwd) = (config.home.clone(), config.cwd.clone());
        let review = match crate::records::trust::review_project(&home, Some(cwd), &mut Term) {
            Ok(Some(review)) => review,
            Ok(None) => return,
            Err(e) => {
                self.out.line(Level::Error, format!("error: {e}"));
                return;
            }
        };
        let question = "Trust the project's extensions listed above? [y/N] ";
        let answer = self.ask(editor, &|_| Some(question.to_string()), "").await;
        let yes = match answer {
            Answer::Line(line) => matches!(line.trim(), "y" | "yes" | "Y"),
            Answer::Interrupted | Answer::Eof | Answer::Gone => false,
        };
        if !yes {
            self.out.line(
                Level::Dim,
                "not trusted; `trust` reviews them later".to_string(),
            );
            return;
        }
        if let Err(e) = crate::records::trust::trust_reviewed(&home, &review, &mut Term) {
            self.out
                .line(Level::Error, format!("error: {}", e.message()));
            return;
        }
        self.out
            .line(Level::Dim, "reloading to start what was trusted");
        self.run_verb(Verb::Reload).await;
    }

    /// Reads one line from the editor, printing events above the prompt meanwhile.
    /// `prompt` says the prompt from the session's state: when an event changes it, the
    /// read is interrupted and asked again under the new prompt with the line as it
    /// was; when it says `None` (what it prompts for is gone), [`Answer::Gone`].
    pub(super) async fn ask(
        &mut self,
        editor: &mut editor::Editor,
        prompt: &dyn Fn(&Ctx) -> Option<String>,
        initial: &str,
    ) -> Answer {
        let Some(mut shown) = prompt(&self.ctx) else {
            return Answer::Gone;
        };
        let mut typed = (initial.to_string(), String::new());
        loop {
            editor.ask(&shown, typed);
            self.out.reading = true;
            // While the prompt is stale: when to interrupt again, and how many times more.
            let mut again: Option<(Instant, u32)> = None;
            let waiting = |again: Option<(Instant, u32)>| again.is_some_and(|(_, n)| n > 0);
            let read = loop {
                let at = again.map_or_else(Instant::now, |(at, _)| at);
                tokio::select! {
                    read = editor.read() => break read,
                    note = next_note(&mut self.notes, &mut self.extra) => {
                        self.out.hold();
                        on_note(&mut self.out, &mut self.ctx, note);
                        if again.is_none() && prompt(&self.ctx).as_ref() != Some(&shown) {
                            editor.interrupt();
                            again = Some((Instant::now() + INTERRUPT_AGAIN, INTERRUPTS - 1));
                        }
                        if !waiting(again) {
                            self.out.release();
                        }
                    }
                    _ = tokio::time::sleep_until(at), if waiting(again) => {
                        editor.interrupt();
                        again = again.map(|(_, n)| (Instant::now() + INTERRUPT_AGAIN, n - 1));
                        if !waiting(again) {
                            // The read goes on under the old prompt: show what came.
                            self.out.release();
                        }
                    }
                }
            };
            self.out.reading = false;
            self.out.release();
            match read {
                editor::Read::Line(line) => return Answer::Line(line),
                editor::Read::Interrupted => return Answer::Interrupted,
                editor::Read::Eof => return Answer::Eof,
                editor::Read::Failed(e) => {
                    self.out.line(Level::Error, format!("error: {e}"));
                    return Answer::Eof;
                }
                editor::Read::Aborted(was) => match prompt(&self.ctx) {
                    Some(now) => {
                        shown = now;
                        typed = was;
                    }
                    None => return Answer::Gone,
                },
            }
        }
    }

    pub(super) async fn interactive(&mut self, mut editor: editor::Editor) -> i32 {
        self.out.line(
            Level::Dim,
            "`help` lists the verbs; tab completes (twice: lists); ctrl-c cancels a call; ctrl-d or `quit` leaves",
        );
        // A line typed for a panel that closed meanwhile: the shell's.
        let mut pending = None;
        loop {
            let line = match pending.take() {
                Some(line) => line,
                None => match self.ask(&mut editor, &verb_prompt, "").await {
                    Answer::Line(line) => line,
                    // ctrl-c at the prompt: the line is dropped.
                    Answer::Interrupted | Answer::Gone => continue,
                    Answer::Eof => return 0,
                },
            };
            let verb = match verbs::parse(&line) {
                Ok(None) => continue,
                Ok(Some(v)) => v,
                Err(e) => {
                    self.out.line(Level::Error, format!("error: {e}"));
                    continue;
                }
            };
            let verb = match verb {
                // No such tool: no argument prompt (the next line is not its arguments);
                // the call says so.
                Verb::Call {
                    tool,
                    args: None,
                    validate,
                } if !self.has_tool(&tool) => Verb::Call {
                    tool,
                    args: Some(json!({})),
                    validate,
                },
                Verb::Call {
                    tool,
                    args: None,
                    validate,
                } => {
                    let schema = self
                        .ctx
                        .host
                        .tools()
                        .into_iter()
                        .find(|(_, t)| t.name == tool)
                        .map(|(_, t)| t.schema)
                        .unwrap_or(Value::Null);
                    let form = args::Form::of(&schema);
                    self.out.show(Level::Dim, &form.describe(&tool));
                    let prompt = format!("{} args> ", render::clean(&tool));
                    let text = match self
                        .ask(&mut editor, &|_| Some(prompt.clone()), &form.initial())
                        .await
                    {
                        Answer::Line(text) => text,
                        // ctrl-c at the argument prompt: no call.
                        Answer::Interrupted | Answer::Gone => continue,
                        Answer::Eof => return 0,
                    };
                    match form.args(&text) {
                        Ok(args) => Verb::Call {
                            tool,
                            args: Some(args),
                            validate,
                        },
                        Err(e) => {
                            self.out.line(Level::Error, format!("error: {e}"));
                            continue;
                        }
                    }
                }
                Verb::Focus => {
                    match self.focus(&mut editor).await {
                        Focused::Left => {}
                        Focused::Shell(line) => pending = Some(line),
                        Focused::Eof => return 0,
                    }
                    continue;
                }
                v => v,
            };
            if self.run_verb(verb).await {
                return 0;
            }
        }
    }

    /// Whether a tool of that name is active.
    pub(super) fn has_tool(&self, tool: &str) -> bool {
        self.ctx.host.tools().iter().any(|(_, t)| t.name == tool)
    }

    /// Focus on the open panel: each line typed is sent as keys (see
    /// [`verbs::focus_keys`]) until `esc`, ctrl-c, or the panel is no longer the open
    /// one (its extension closed it or exited, a reload, another panel opened): then the
    /// shell has the keyboard back at once, and a line typed for the panel after that is
    /// the shell's.
    pub(super) async fn focus(&mut self, editor: &mut editor::Editor) -> Focused {
        let Some(focused) = self.ctx.panel.clone() else {
            self.out.line(Level::Error, "error: no panel is open");
            return Focused::Left;
        };
        let (ext, id) = focused.clone();
        self.out.line(
            Level::Dim,
            "keys go to the panel: enter sends enter, a key name that key, text its characters; esc or ctrl-c leaves",
        );
        let keys_prompt = |ctx: &Ctx| {
            (ctx.panel.as_ref() == Some(&focused))
                .then(|| format!("[panel {}] keys> ", render::clean(&id)))
        };
        let gone = |out: &mut Out, ctx: &Ctx| {
            let why = match ctx.panel {
                None => "it closed",
                Some(_) => "another panel opened",
            };
            out.line(Level::Dim, format!("left the panel: {why}"));
        };
        loop {
            let line = match self.ask(editor, &keys_prompt, "").await {
                Answer::Line(line) => line,
                Answer::Interrupted => break,
                Answer::Eof => return Focused::Eof,
                Answer::Gone => {
                    gone(&mut self.out, &self.ctx);
                    return Focused::Left;
                }
            };
            if keys_prompt(&self.ctx).is_none() {
                gone(&mut self.out, &self.ctx);
                return Focused::Shell(line);
            }
            let keys = verbs::focus_keys(&line);
            let leave = keys.first().is_some_and(|(k, _)| k == "escape");
            for (key, text) in keys {
                let frame = PanelKey {
                    panel_id: id.clone(),
                    key,
                    text,
                    extra: Map::new(),
                };
                if let Err(e) = self.ctx.host.panel_key(&ext, frame) {
                    self.out.line(Level::Error, format!("error: {e}"));
                    return Focused::Left;
                }
            }
            if leave {
                break;
            }
        }
        self.out.line(Level::Dim, "left the panel");
        Focused::Left
    }
}
