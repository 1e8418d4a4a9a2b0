//! What travels between the agent and the extensions once they run: tool calls,
//! commands, events, the interception chain and panel input; and the [`Hub`] the
//! extensions' cores report to (registrations, ready, exit, a tool call of their own).

use super::report::{InterceptStep, Verdict};
use super::state::Inner;
use crate::budget::Timeouts;
use crate::events::HostEvent;
use crate::extension::{CallError, Extension, Hub, Phase, Registration};
use serde_json::{Map, Value};
use std::future::Future;
use std::pin::Pin;
use std::time::Duration;
use zot_protocol::{CommandResponse, Event, HostFrame, ToolResult};

impl Inner {
    /// Runs `/name args`; see [`Host::invoke_command`](super::Host::invoke_command).
    pub(super) async fn invoke_command(
        &self,
        name: &str,
        args: &str,
    ) -> Result<(String, CommandResponse), CallError> {
        // `/note` is how a user types the command `note`.
        let name = name.strip_prefix('/').unwrap_or(name);
        let ext = self.registry.lock().unwrap().command(name);
        let ext = ext.ok_or_else(|| CallError::NotFound(format!("command named {name:?}")))?;
        let response = ext
            .invoke_command(name, args, self.config.timeouts.command)
            .await?;
        Ok((ext.name().to_string(), response))
    }

    /// Calls the extension tool `name`; see [`Host::call_tool`](super::Host::call_tool).
    pub(super) async fn call_tool(
        &self,
        name: &str,
        args: Value,
        timeout: Option<Duration>,
    ) -> Result<(String, ToolResult), CallError> {
        let ext = {
            let registry = self.registry.lock().unwrap();
            if registry.is_builtin_tool(name) {
                return Err(CallError::NotFound(format!(
                    "extension tool named {name:?}: it is a built-in tool of the agent"
                )));
            }
            registry.tool(name)
        };
        let ext = ext.ok_or_else(|| CallError::NotFound(format!("tool named {name:?}")))?;
        let args = match args {
            Value::Null => Value::Object(Map::new()),
            Value::Object(args) => Value::Object(args),
            _ => {
                return Err(CallError::Invalid(format!(
                    "tool {name:?}: args must be a JSON object"
                )))
            }
        };
        let limit = self
            .entries
            .lock()
            .unwrap()
            .iter()
            .find(|e| e.name == ext.name())
            .and_then(|e| e.tool_timeout);
        let timeout = timeout.or(limit).unwrap_or(self.config.timeouts.tool);
        let result = ext.call_tool(name, args, timeout).await?;
        Ok((ext.name().to_string(), result))
    }

    /// Queues `event` for every subscriber; see [`Host::emit`](super::Host::emit).
    pub(super) fn emit(&self, event: &Event) -> usize {
        let subscribers: Vec<Extension> = self
            .running_all()
            .into_iter()
            .filter(|e| e.subscribes(&event.event))
            .collect();
        let frame = HostFrame::Event(event.clone());
        let line = zot_protocol::encode(&frame);
        for ext in &subscribers {
            ext.deliver_encoded(&frame, line.clone());
        }
        subscribers.len()
    }

    /// The interception chain; see [`Host::intercept_steps`](super::Host::intercept_steps).
    pub(super) async fn intercept_steps(&self, mut event: Event) -> (Vec<InterceptStep>, Verdict) {
        let mut verdict = Verdict::default();
        let mut steps = Vec::new();
        let interceptors: Vec<Extension> = self
            .running_all()
            .into_iter()
            .filter(|e| e.intercepts(&event.event))
            .collect();
        for ext in interceptors {
            let answer = ext
                .intercept(event.clone(), self.config.timeouts.intercept)
                .await;
            steps.push(InterceptStep {
                extension: ext.name().to_string(),
                answer: answer.as_ref().map(|a| Verdict {
                    block: a.block,
                    reason: a.reason.clone(),
                    modified_args: a.modified_args.clone(),
                    replace_text: a.replace_text.clone(),
                }),
            });
            let Some(answer) = answer else {
                continue;
            };
            if answer.block {
                let verdict = Verdict {
                    block: true,
                    reason: answer.reason,
                    ..Verdict::default()
                };
                return (steps, verdict);
            }
            if let Some(args) = answer.modified_args {
                if event.event == "tool_call" && args.is_object() {
                    event.fields.insert("tool_args".into(), args.clone());
                    verdict.modified_args = Some(args);
                } else {
                    ext.log().warn(
                        "ignored modified_args: only a JSON object for a tool_call can replace its args",
                    );
                }
            }
            if let Some(text) = answer.replace_text {
                if event.event == "assistant_message" {
                    event
                        .fields
                        .insert("text".into(), Value::String(text.clone()));
                    verdict.replace_text = Some(text);
                } else {
                    ext.log().warn(
                        "ignored replace_text: only an assistant_message has text to replace",
                    );
                }
            }
        }
        (steps, verdict)
    }

    /// Queues `frame` for the running extension named `extension`, in order with events.
    pub(super) fn send_to(&self, extension: &str, frame: &HostFrame) -> Result<(), CallError> {
        self.running(extension)
            .ok_or_else(|| CallError::NotFound(format!("running extension named {extension:?}")))?
            .send(frame)
    }

    /// Tells the embedder that what each of `extensions` provides changed.
    fn changed(&self, extensions: Vec<Extension>) {
        for ext in extensions {
            let event = HostEvent::RegistryChanged {
                extension: ext.name().to_string(),
            };
            self.notes.push_own(event);
        }
    }
}

impl Hub for Inner {
    fn timeouts(&self) -> &Timeouts {
        &self.config.timeouts
    }

    fn register(&self, ext: &Extension, registration: Registration) {
        let changed = {
            let mut registry = self.registry.lock().unwrap();
            match registration {
                Registration::Command(reg) => registry.claim_command(ext, reg),
                Registration::Tool(reg) => registry.claim_tool(ext, reg),
            }
        };
        // Initial registrations are announced once, when the extension is ready.
        let starting = ext.phase() == Phase::Starting;
        self.changed(
            changed
                .into_iter()
                .filter(|e| !(starting && e.is(ext)))
                .collect(),
        );
    }

    fn ready(&self, ext: &Extension) {
        let owned = self.registry.lock().unwrap().of(ext);
        if !(owned.commands.is_empty() && owned.tools.is_empty() && owned.shadowed.is_empty()) {
            self.changed(vec![ext.clone()]);
        }
    }

    fn exited(&self, ext: &Extension) {
        let changed = self.registry.lock().unwrap().remove(ext);
        self.changed(changed);
    }

    fn call_tool(
        &self,
        from: &Extension,
        name: String,
        args: Value,
    ) -> Pin<Box<dyn Future<Output = Result<ToolResult, CallError>> + Send>> {
        let me = self.me.clone();
        from.log().info(&format!("call_tool {name:?}"));
        Box::pin(async move {
            let inner = me
                .upgrade()
                .ok_or_else(|| CallError::NotFound("host: it is shutting down".into()))?;
            inner.call_tool(&name, args, None).await.map(|(_, r)| r)
        })
    }
}
