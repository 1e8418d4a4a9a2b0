//! What travels between the agent and the extensions once they run: tool calls,
//! commands, events, the interception chain and panel input; and the [`Hub`] the
//! extensions' cores report to (registrations, ready, exit, a tool call of their own).

use super::report::{InterceptStep, Verdict};
use super::state::{EntryState, Inner};
use crate::budget::Timeouts;
use crate::events::HostEvent;
use crate::extension::{CallError, Extension, Hub, Phase, Registration};
use crate::schema::Checked;
use serde_json::{Map, Value};
use std::future::Future;
use std::pin::Pin;
use std::time::Duration;
use tokio::sync::mpsc;
use zot_protocol::{CommandResponse, Event, HostFrame, ToolProgress, ToolResult};

impl Inner {
    /// Runs `/name args`; see [`Host::invoke_command`](super::Host::invoke_command).
    pub(super) async fn invoke_command(
        &self,
        name: &str,
        args: &str,
    ) -> Result<(String, CommandResponse), CallError> {
        // `/note` is how a user types the command `note`.
        let name = name.strip_prefix('/').unwrap_or(name);
        let (ext, departed) = {
            let registry = self.registry.lock().unwrap();
            let departed = registry.departed_command(name).map(String::from);
            (registry.command(name), departed)
        };
        let ext = ext.ok_or_else(|| {
            self.missing(
                format!("command \"/{name}\""),
                departed,
                format!("command named {name:?}"),
            )
        })?;
        let response = ext
            .invoke_command(name, args, self.config.timeouts.command)
            .await?;
        Ok((ext.name().to_string(), response))
    }

    /// Calls the extension tool `name`, its arguments checked against its schema first
    /// when `check`; see [`Host::call_tool`](super::Host::call_tool).
    pub(super) async fn call_tool(
        &self,
        name: &str,
        args: Value,
        timeout: Option<Duration>,
        check: bool,
        progress: Option<mpsc::Sender<ToolProgress>>,
    ) -> Result<(String, ToolResult), CallError> {
        let (ext, validator, departed) = {
            let registry = self.registry.lock().unwrap();
            if registry.is_builtin_tool(name) {
                return Err(CallError::NotFound(format!(
                    "extension tool named {name:?}: it is a built-in tool of the agent"
                )));
            }
            let departed = registry.departed_tool(name).map(String::from);
            let validator = check.then(|| registry.tool_validator(name)).flatten();
            (registry.tool(name), validator, departed)
        };
        let ext = ext.ok_or_else(|| {
            self.missing(
                format!("tool {name:?}"),
                departed,
                format!("tool named {name:?}"),
            )
        })?;
        let args = match args {
            Value::Null => Value::Object(Map::new()),
            Value::Object(args) => Value::Object(args),
            _ => {
                return Err(CallError::Invalid(format!(
                    "tool {name:?}: args must be a JSON object"
                )))
            }
        };
        if let Some(validator) = validator {
            match validator.check(&args) {
                Checked::Valid => {}
                Checked::Invalid(problems) => {
                    return Err(CallError::Arguments {
                        tool: name.to_string(),
                        problems,
                    })
                }
                Checked::Unchecked(why) => ext.log().warn(&format!(
                    "tool {name:?}: {why}; the arguments are sent unchecked"
                )),
            }
        }
        let limit = self
            .entries
            .lock()
            .unwrap()
            .iter()
            .find(|e| e.name == ext.name())
            .and_then(|e| e.tool_timeout);
        let timeout = timeout.or(limit).unwrap_or(self.config.timeouts.tool);
        let result = ext.call_tool(name, args, timeout, progress).await?;
        Ok((ext.name().to_string(), result))
    }

    /// Why `target`, which no extension provides now, cannot be called: the extension
    /// that provided it last (`departed`) is not running, or no longer registers it;
    /// else there is no `what`.
    fn missing(&self, target: String, departed: Option<String>, what: String) -> CallError {
        let Some(extension) = departed else {
            return CallError::NotFound(what);
        };
        let entries = self.entries.lock().unwrap();
        let state = match entries
            .iter()
            .find(|e| e.name == extension)
            .map(|e| &e.state)
        {
            None => "is no longer loaded".to_string(),
            Some(EntryState::Disabled) => "is disabled".to_string(),
            Some(EntryState::Error(why)) => format!("is not running: {why}"),
            Some(EntryState::Untrusted(u)) => format!("is not trusted: {}", u.message()),
            Some(EntryState::Starting) => {
                "is still starting (a component may be compiling)".to_string()
            }
            Some(EntryState::Running(ext)) => match ext.status().exit {
                Some(exit) => format!("is not running: {exit}"),
                None => {
                    return CallError::NotFound(format!(
                        "{what}: extension {extension:?} provided it, and no longer registers it"
                    ))
                }
            },
        };
        CallError::NotRunning {
            extension,
            target,
            state,
        }
    }

    /// `args` checked against the schema of the active tool `name` (`None`: no such
    /// tool); see [`Host::check_arguments`](super::Host::check_arguments).
    pub(super) fn check_arguments(&self, name: &str, args: &Value) -> Option<Checked> {
        let validator = self.registry.lock().unwrap().tool_validator(name)?;
        Some(validator.check(args))
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
        let tool_call = event.event == "tool_call";
        if let Some(why) = tool_call.then(|| self.guard_down()).flatten() {
            return (steps, blocked(why));
        }
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
                if tool_call && self.fails_closed(ext.name()) {
                    let why = match ext.status().exit {
                        Some(exit) => format!("it exited ({exit})"),
                        None => format!(
                            "it did not answer within {} ms",
                            self.config.timeouts.intercept.as_millis()
                        ),
                    };
                    let why = format!("guard {:?} fails closed: {why}", ext.name());
                    ext.log().warn(&format!("blocked a tool_call: {why}"));
                    return (steps, blocked(why));
                }
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

    /// The first guard that fails closed (in load order) and is not running, and why: a
    /// `tool_call` is blocked while one is down. One the user disabled is not a guard.
    fn guard_down(&self) -> Option<String> {
        let entries = self.entries.lock().unwrap();
        entries.iter().filter(|e| e.guard.blocks()).find_map(|e| {
            let down = match &e.state {
                EntryState::Disabled => return None,
                EntryState::Running(ext) => match (ext.status().exit, ext.phase()) {
                    (Some(exit), _) => format!("it is not running ({exit})"),
                    (None, Phase::Starting) => "it is still starting".to_string(),
                    (None, _) => return None,
                },
                EntryState::Starting => "it is still starting".to_string(),
                EntryState::Error(why) => format!("it is not running ({why})"),
                EntryState::Untrusted(u) => format!("it is not trusted ({})", u.message()),
            };
            Some(format!("guard {:?} fails closed: {down}", e.name))
        })
    }

    /// Whether the extension named `name` is a guard that fails closed.
    fn fails_closed(&self, name: &str) -> bool {
        let entries = self.entries.lock().unwrap();
        entries.iter().any(|e| e.name == name && e.guard.blocks())
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

/// A verdict that blocks, saying `why`.
fn blocked(why: String) -> Verdict {
    Verdict {
        block: true,
        reason: Some(why),
        ..Verdict::default()
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
        if let Some(me) = self.me.upgrade() {
            me.exited_by_itself(ext);
        }
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
            let check = inner.config.validate_arguments;
            inner
                .call_tool(&name, args, None, check, None)
                .await
                .map(|(_, r)| r)
        })
    }
}
