//! What an extension says: the connection's read loop, each line decoded and acted on
//! (the handshake, registrations within the caps, subscriptions, replies to pending
//! requests, notifications for the application, calls of other extensions' tools), ready
//! by frame or by silence, and the exit.

use super::pending::{Answered, Kind, Progressed};
use super::*;
use zot_protocol::{Hello, Submit, ToolCall};

impl Extension {
    /// The connection's main loop: decode and handle frames until the transport closes.
    pub(super) async fn run(
        self,
        mut inbound: crate::transport::Lines,
        mut exit: oneshot::Receiver<ExitReason>,
        hello_ack: HelloAck,
        hub: Arc<dyn Hub>,
    ) {
        let mut hello_ack = Some(hello_ack);
        let silence = tokio::time::sleep(Duration::MAX);
        tokio::pin!(silence);
        // Only a starting extension can become ready by falling silent.
        let mut starting = true;
        loop {
            let item = tokio::select! {
                biased;
                item = inbound.recv() => item,
                () = &mut silence, if starting && hello_ack.is_none() => {
                    self.become_ready(ReadyBy::Silence, &hub);
                    starting = false;
                    continue;
                }
            };
            let Some(item) = item else { break };
            let line = matches!(item, Inbound::Line(..));
            self.take(item, &mut hello_ack, &hub).await;
            if line && starting {
                starting = self.phase() == Phase::Starting;
                if starting {
                    silence
                        .as_mut()
                        .reset(tokio::time::Instant::now() + READY_SILENCE);
                }
            }
        }
        let exit = match tokio::time::timeout(EXIT_AFTER_EOF, &mut exit).await {
            Ok(Ok(exit)) => exit,
            _ => {
                self.inner
                    .log
                    .warn("closed its output but kept running: killing it");
                self.inner.control.kill();
                let then = tokio::time::timeout(Duration::from_secs(5), exit).await;
                ExitReason::ClosedOutput(then.ok().and_then(Result::ok).map(Box::new))
            }
        };
        self.close(exit, &hub);
    }

    /// Acts on one unit read from the extension, whoever read it.
    pub(super) async fn take(
        &self,
        item: Inbound,
        hello_ack: &mut Option<HelloAck>,
        hub: &Arc<dyn Hub>,
    ) {
        match item {
            Inbound::Line(bytes, _room) => self.handle_line(&bytes, hello_ack, hub).await,
            Inbound::Oversize { len, .. } => self.violation(format!(
                "skipped a {len}-byte line: longer than the frame size limit"
            )),
        }
    }

    /// Marks it gone: pending calls fail now, registrations go, the app is told.
    fn close(&self, exit: ExitReason, hub: &Arc<dyn Hub>) {
        let inner = &*self.inner;
        inner.log.info(&format!("extension gone: {exit}"));
        let (events, notes, stopped) = {
            let mut st = inner.status.lock().unwrap();
            st.exit = Some(exit.clone());
            (st.events_dropped, st.notes_dropped, st.stopped)
        };
        if events > 0 {
            inner.log.warn(&format!(
                "{events} events for it were dropped in total (its queue was full)"
            ));
        }
        if notes > 0 {
            inner.log.warn(&format!(
                "{notes} of its notifications were dropped in total (the application did not read them)"
            ));
        }
        inner.closed.store(true, Ordering::SeqCst);
        inner.pending.fail_all();
        hub.exited(self);
        inner.notes.push_own(HostEvent::ExtensionExited {
            extension: inner.name.clone(),
            reason: exit.to_string(),
            code: exit.code(),
            signal: exit.signal(),
            stopped,
        });
        inner.phase.send_replace(Phase::Exited);
        inner.one_way.wake();
    }

    fn become_ready(&self, by: ReadyBy, hub: &Arc<dyn Hub>) {
        if self.phase() != Phase::Starting {
            return;
        }
        {
            let mut st = self.inner.status.lock().unwrap();
            st.ready_after = Some(self.inner.spawned.elapsed());
            st.ready_by = Some(by);
        }
        self.inner.phase.send_replace(Phase::Ready);
        hub.ready(self);
    }

    /// Records a protocol violation in the log, and the first [`VIOLATIONS_KEPT`] in the
    /// status.
    fn violation(&self, message: String) {
        self.inner.log.warn(&message);
        let mut st = self.inner.status.lock().unwrap();
        if st.violations.len() < VIOLATIONS_KEPT {
            st.violations.push(message);
        }
    }

    /// Whether `registration` fits this extension's caps (`caps::registrations`); one that
    /// replaces a registration of the same kind and name counts instead of it. Records
    /// it if so; logs the refusal if not.
    pub(super) fn admit_registration(&self, registration: &Registration) -> bool {
        let (kind, name, size) = match registration {
            Registration::Command(reg) => ("command", &reg.name, json_len(reg)),
            Registration::Tool(reg) => ("tool", &reg.name, json_len(reg)),
        };
        let admitted = self
            .inner
            .registered
            .lock()
            .unwrap()
            .admit(kind, name, size);
        let Err(refused) = admitted else {
            return true;
        };
        self.inner.status.lock().unwrap().registrations_refused += 1;
        self.inner.log.warn(&refused);
        false
    }

    /// Acts on one line the extension wrote.
    async fn handle_line(
        &self,
        bytes: &[u8],
        hello_ack: &mut Option<HelloAck>,
        hub: &Arc<dyn Hub>,
    ) {
        let Some(frame) = self.decode(bytes) else {
            return;
        };
        if hello_ack.is_some() && !matches!(frame, ExtFrame::Hello(_)) {
            self.violation(format!(
                "sent {:?} before hello (hello must be the first frame)",
                frame.type_name()
            ));
        }
        match frame {
            ExtFrame::Hello(hello) => self.on_hello(hello, hello_ack),
            ExtFrame::RegisterCommand(reg) => self.on_register(Registration::Command(reg), hub),
            ExtFrame::RegisterTool(reg) if !reg.schema.is_object() => self.violation(format!(
                "refused tool {:?}: its schema is not a JSON object",
                reg.name
            )),
            ExtFrame::RegisterTool(reg) => self.on_register(Registration::Tool(reg), hub),
            ExtFrame::Subscribe(sub) => self.subscribe(sub),
            ExtFrame::Ready(_) => self.become_ready(ReadyBy::Frame, hub),
            ExtFrame::CommandResponse(r) => {
                let id = r.id.clone();
                self.reply(Kind::Command, &id, ExtFrame::CommandResponse(r));
            }
            ExtFrame::ToolResult(r) => {
                let id = r.id.clone();
                self.reply(Kind::Tool, &id, ExtFrame::ToolResult(r));
            }
            ExtFrame::EventInterceptResponse(r) => {
                let id = r.id.clone();
                self.reply(Kind::Intercept, &id, ExtFrame::EventInterceptResponse(r));
            }
            ExtFrame::Notify(frame) => {
                self.tell_app(HostEvent::Notify {
                    extension: self.inner.name.clone(),
                    frame,
                })
                .await
            }
            ExtFrame::OpenPanel(frame) => {
                self.tell_app(HostEvent::OpenPanel {
                    extension: self.inner.name.clone(),
                    frame,
                })
                .await
            }
            ExtFrame::PanelRender(frame) => {
                self.tell_app(HostEvent::PanelRender {
                    extension: self.inner.name.clone(),
                    frame,
                })
                .await
            }
            ExtFrame::PanelClose(frame) => {
                self.tell_app(HostEvent::PanelClose {
                    extension: self.inner.name.clone(),
                    frame,
                })
                .await
            }
            ExtFrame::ClearNotes(frame) => {
                self.tell_app(HostEvent::ClearNotes {
                    extension: self.inner.name.clone(),
                    frame,
                })
                .await
            }
            ExtFrame::Submit(frame) => self.on_submit(frame).await,
            ExtFrame::SubmitSlash(frame) => self.on_submit_slash(frame).await,
            ExtFrame::ShutdownAck(_) => self.inner.log.info("acknowledged shutdown"),
            ExtFrame::CallTool(call) => self.on_call_tool(call, hub),
            ExtFrame::ToolProgress(frame) => self.on_progress(frame),
        }
    }

    /// Hands a `tool_progress` to its call's caller, cut to [`PROGRESS_BYTES`]; one for
    /// a call that is not pending is ignored (it may have just ended), one the caller
    /// has no room for is dropped and counted.
    fn on_progress(&self, mut frame: ToolProgress) {
        if json_len(&frame) > PROGRESS_BYTES {
            frame.extra.clear();
            if let Some(text) = frame.text.as_mut() {
                crate::util::cut(text, PROGRESS_TEXT);
            }
        }
        if self.inner.pending.progress(frame) != Progressed::Dropped {
            return;
        }
        let n = {
            let mut st = self.inner.status.lock().unwrap();
            st.progress_dropped += 1;
            st.progress_dropped
        };
        if n.is_power_of_two() {
            self.inner.log.warn(&format!(
                "tool_progress dropped: the caller is not reading it ({n} dropped so far)"
            ));
        }
    }

    /// The frame of `bytes`; `None` (logged) for a frame of an unknown type, skipped as
    /// the protocol says, or a line that is no frame (a violation).
    fn decode(&self, bytes: &[u8]) -> Option<ExtFrame> {
        match ExtFrame::decode(bytes) {
            Ok(frame) => Some(frame),
            Err(zot_protocol::DecodeError::UnknownType(t)) => {
                self.inner
                    .log
                    .warn(&format!("skipped a frame of unknown type {t:?}"));
                None
            }
            Err(e) => {
                self.violation(format!("skipped a line: {e}: {}", preview(bytes)));
                None
            }
        }
    }

    /// `hello`: kept (only the start of an oversize one), answered with `hello_ack`; a
    /// second one is a violation.
    fn on_hello(&self, mut hello: Hello, hello_ack: &mut Option<HelloAck>) {
        let Some(ack) = hello_ack.take() else {
            self.violation("sent hello twice; ignored the second".into());
            return;
        };
        let size = json_len(&hello);
        if size > HELLO_BYTES {
            let short = |s: &str| s.chars().take(256).collect::<String>();
            hello = Hello {
                name: short(&hello.name),
                version: short(&hello.version),
                ..Default::default()
            };
            self.inner.log.warn(&format!(
                "hello is {size} bytes, over {} KiB: kept only the start of its name \
                 and version",
                HELLO_BYTES >> 10
            ));
        }
        if hello.name != self.inner.name {
            self.inner.log.warn(&format!(
                "hello names {:?} but the manifest says {:?}: using {:?}",
                hello.name, self.inner.name, self.inner.name
            ));
        }
        {
            let mut st = self.inner.status.lock().unwrap();
            st.hello_after = Some(self.inner.spawned.elapsed());
            st.hello = Some(hello);
        }
        // Straight to the transport, as a request goes: queued behind the one-way frames
        // it would be overtaken by a call made the moment `ready` follows, and the
        // extension would meet the call before its data dir.
        let ack = self.inner.outbound(&HostFrame::HelloAck(ack), None);
        if let Err(e) = self.inner.outbound.try_send(ack) {
            self.inner
                .log
                .warn(&format!("could not send hello_ack: {e}"));
        }
    }

    /// A command or tool, registered if it fits the caps.
    fn on_register(&self, registration: Registration, hub: &Arc<dyn Hub>) {
        if self.admit_registration(&registration) {
            hub.register(self, registration);
        }
    }

    /// `submit`: its text, trimmed, to the application; an empty one is dropped.
    async fn on_submit(&self, mut frame: Submit) {
        frame.text = frame.text.trim().to_string();
        if !frame.text.is_empty() {
            self.tell_app(HostEvent::Submit {
                extension: self.inner.name.clone(),
                frame,
            })
            .await
        }
    }

    /// `submit_slash`: a slash command, trimmed, to the application; anything else is a
    /// violation.
    async fn on_submit_slash(&self, mut frame: Submit) {
        frame.text = frame.text.trim().to_string();
        if frame.text.starts_with('/') {
            self.tell_app(HostEvent::SubmitSlash {
                extension: self.inner.name.clone(),
                frame,
            })
            .await
        } else {
            self.violation(format!(
                "submit_slash text must start with '/': {}",
                preview(frame.text.as_bytes())
            ));
        }
    }

    /// `call_tool`: another extension's tool, called for this one and answered with a
    /// `tool_result`; at most [`CALLS_IN_FLIGHT`] wait at once, the next is refused.
    fn on_call_tool(&self, call: ToolCall, hub: &Arc<dyn Hub>) {
        let ext = self.clone();
        let Ok(slot) = self.inner.calls.clone().try_acquire_owned() else {
            let busy = format!(
                "call_tool {:?} refused: {CALLS_IN_FLIGHT} of its calls are still waiting",
                call.name
            );
            self.inner.log.warn(&busy);
            let mut result = ToolResult::error(call.id, busy);
            result.name = Some(call.name);
            if let Err(e) = self.send(&HostFrame::ToolResult(result)) {
                self.inner
                    .log
                    .warn(&format!("could not answer call_tool: {e}"));
            }
            return;
        };
        let answer = hub.call_tool(self, call.name.clone(), call.args);
        tokio::spawn(async move {
            let _slot = slot;
            let mut result = answer
                .await
                .unwrap_or_else(|e| ToolResult::error(String::new(), e.to_string()));
            result.id = call.id;
            result.name = Some(call.name);
            if let Err(e) = ext.send(&HostFrame::ToolResult(result)) {
                ext.inner
                    .log
                    .warn(&format!("could not answer call_tool: {e}"));
            }
        });
    }

    fn subscribe(&self, sub: zot_protocol::Subscribe) {
        let mut ignored = Vec::new();
        {
            let mut st = self.inner.status.lock().unwrap();
            for e in sub.events {
                if EVENTS.contains(&e.as_str()) {
                    st.events.insert(e);
                } else {
                    ignored.push(format!("unknown event {e:?}"));
                }
            }
            for e in sub.intercept {
                if INTERCEPTABLE.contains(&e.as_str()) {
                    st.intercept.insert(e);
                } else {
                    ignored.push(format!("{e:?} cannot be intercepted"));
                }
            }
        }
        if !ignored.is_empty() {
            self.inner
                .log
                .warn(&format!("subscribe: ignored {}", ignored.join(", ")));
        }
    }

    fn reply(&self, kind: Kind, id: &str, frame: ExtFrame) {
        let name = frame.type_name();
        match self.inner.pending.answer(kind, id, frame) {
            Answered::Yes => {}
            Answered::WrongKind => self.violation(format!(
                "{name} for id {id:?}, which is not that kind of request"
            )),
            Answered::NotPending => self.inner.log.warn(&format!(
                "{name} for id {id:?}, which is not pending (late or unknown): ignored"
            )),
        }
    }

    /// Passes a notification to the application. When the application is not keeping
    /// up this waits for room (slowing only this extension), at most [`NOTE_WAIT`]; then
    /// the oldest notifications are dropped, and counted in the log of the extension
    /// each came from.
    async fn tell_app(&self, event: HostEvent) {
        let origin: Weak<dyn Origin> = self.inner.me.clone();
        self.inner.notes.push_from(event, origin, NOTE_WAIT).await;
    }
}
